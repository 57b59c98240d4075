//! ChaCha20-BLAKE3, the committing AEAD of the `chacha20-blake3` crate, over
//! Rust slices (its C ABI, `cb3_aead_*`, is `ffi::aead`).
//!
//! The construction (exactly the crate's, checked byte for byte against it in
//! `tests/abi.rs`):
//!
//! ```text
//! enc_key || auth_key || enc_nonce = BLAKE3-keyed(key, nonce24), first 72 XOF bytes
//! ct  = plaintext XOR ChaCha20(enc_key, enc_nonce (8 B), 64-bit block counter from 0)
//! tag = BLAKE3-keyed(auth_key, aad || le64(|aad|) || ct || le64(|ct|))
//! ```
//!
//! Short messages go straight through the crate. For longer ones the crate's
//! in-place-only API would cost a full copy pass before its XOR and MAC passes
//! (and could not decrypt into a caller's buffer without writing to it before
//! the tag is checked), so the same steps run here over the same primitives:
//! copy and XOR fused piece by piece while the piece is in cache, and the MAC
//! in one call. Decryption always finishes the MAC over the ciphertext and
//! compares the tag (constant time) before it writes a single byte.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::ptr;
#[cfg(test)]
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use blake3::hazmat::{merge_subtrees_non_root, merge_subtrees_root, HasherExt, Mode};
use chacha20::cipher::array::Array;
use chacha20::cipher::consts::U64;
use chacha20::cipher::inout::InOutBuf;
use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherCore, StreamCipherSeek};
use chacha20::{ChaCha20Legacy, ChaCha20LegacyCore};
#[cfg(test)]
use chacha20_blake3::ChaCha20Blake3;
use zeroize::{Zeroize, Zeroizing};

use crate::buffer::PieceBuffer;
use crate::chacha20::{xor_keystream, Source};
use crate::error::{Error, Result};
use crate::parallel::{self, LazyPool, Workers};
use crate::wipe::{scrub_stack, scrub_stack_deep};

/// Key size of ChaCha20-BLAKE3 in bytes: `key_len` must equal it.
pub const KEY_SIZE: usize = 32;
/// Nonce size of ChaCha20-BLAKE3 in bytes: `nonce_len` must equal it.
/// Random nonces are safe (a collision is expected only after about 2^96
/// messages under one key).
pub const NONCE_SIZE: usize = 24;
/// Tag size of ChaCha20-BLAKE3 in bytes: a ciphertext is this much longer
/// than its plaintext; input `tag_len` must equal it, output tag buffers must
/// hold at least this much.
pub const TAG_SIZE: usize = 32;

/// Bytes per keystream step of the final pass of a staged decryption (which
/// XORs from the private copy into the output): from this CPU's L1d
/// (`pieces::Pieces::xor_piece`).
fn xor_piece_len() -> usize {
    #[cfg(test)]
    if let n @ 1.. = tests::XOR_PIECE_OVERRIDE.load(Ordering::Relaxed) {
        return n;
    }
    crate::pieces::tuning().1.xor_piece
}

/// Bytes per piece of the one pass over a message that `seal` makes: each
/// piece of the data is XORed into memory no one else can see (and into the
/// output) and MACed there while it is in L2 (from this CPU's L2 and maker:
/// `pieces::Pieces::seal_piece`). Pieces are aligned in the MAC input (which
/// starts with the associated data), so BLAKE3 hashes every piece but the
/// first 16 chunks at a time.
fn seal_piece_len() -> usize {
    piece_len(|pieces| pieces.seal_piece)
}

/// The same for `open`'s pass, which copies each piece of the ciphertext
/// into private memory and MACs it there (half this CPU's L2, at most
/// `seal_piece_len()`: `pieces::Pieces::open_piece`).
fn open_piece_len() -> usize {
    piece_len(|pieces| pieces.open_piece)
}

/// The piece size `size` picks from this CPU's, or the tests' override.
fn piece_len(size: fn(&crate::pieces::Pieces) -> usize) -> usize {
    #[cfg(test)]
    if let n @ 1.. = tests::PIECE_OVERRIDE.load(Ordering::Relaxed) {
        return n;
    }
    size(&crate::pieces::tuning().1)
}

/// A tag as `seal` returns it: 16-byte aligned, so that the copies of the
/// result from frame to frame are aligned 16-byte moves (the 33-byte
/// `Result<[u8; 32]>` was copied in overlapping unaligned pieces, and each
/// load straddling two stores stalled: ~3% of a 64-byte message).
#[repr(C, align(16))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Tag(pub [u8; 32]);

impl std::ops::Deref for Tag {
    type Target = [u8; 32];
    fn deref(&self) -> &[u8; 32] {
        &self.0
    }
}

/// Who can see the output buffer of a decryption while it runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Output {
    /// Memory only this call can see (just allocated, not yet shared): in
    /// one pass, each piece of the ciphertext is copied into the thread's
    /// private piece buffer, MACed there and decrypted from there into the
    /// output; on failure the output is wiped (all zeros) and the caller
    /// discards it.
    Private,
    /// The caller's memory, which others may read or write during the call:
    /// the ciphertext is staged in a private copy, and plaintext reaches the
    /// output only after the tag has verified; on failure it is untouched.
    Shared,
}

/// Messages whose MAC input (`aad || le64 || ct || le64`) is at most this
/// long take the direct path (`direct`): BLAKE3 by direct compressions,
/// every whole chunk of the MAC input in one wide call, the message staged
/// in private memory laid out as the MAC input. Longer ones take the
/// piecewise `Pass`. Both give identical bytes; `tests/abi.rs` checks every
/// length and associated-data length around it.
pub const DIRECT_MAX: usize = crate::blake3_compressions::MAX_INPUT;

/// Direct-path messages whose staged MAC input fits this many bytes stage it
/// on the stack (no thread-local buffer): one BLAKE3 chunk.
const STACK_STAGE: usize = crate::blake3_compressions::CHUNK_LEN;

/// Short messages (`short`) stage in a frame of this size instead.
const SHORT_STAGE: usize = 512;

/// Whether a direct-path message is short: at most
/// `chacha20::blocks::MAX_BLOCKS` blocks (no crate ChaCha frames) and staged
/// in `SHORT_STAGE` bytes, so its calls write less stack and `scrub_direct`
/// zeroes less (its share of a 64-byte message's time was 6%).
fn short(aad_len: usize, len: usize) -> bool {
    len <= crate::chacha20::blocks::MAX_BLOCKS * 64 && aad_len.saturating_add(len) <= SHORT_STAGE - 16
}

/// The per-message secrets (of both paths; the direct path also keeps its
/// MAC state and last keystream here), in one place so that one drop wipes
/// them all.
#[repr(C, align(64))]
struct Secrets {
    /// The KDF's output: enc_key || auth_key || enc_nonce, then 56 unused
    /// extended-output bytes.
    kdf: [u8; 128],
    /// The master key as words, if it was not aligned (`direct::key_words`).
    key: [u32; 8],
    /// The auth key as words, on a big-endian CPU.
    auth: [u32; 8],
    /// The MAC's chaining value (one-chunk MAC inputs).
    cv: [u32; 8],
    /// Keystream for the message's last partial kilobyte (more than
    /// `chacha20::blocks::MAX_BLOCKS` blocks), left uninitialized until then:
    /// zeroing its 1 KiB cost every short message ~5% of its time.
    keystream: MaybeUninit<[chacha20::cipher::Block<ChaCha20LegacyCore>; 16]>,
    /// Blocks of `keystream` written (the first `blocks` are initialized).
    blocks: usize,
}

/// Wiped when dropped: at the end of every call, also one that unwinds.
impl Drop for Secrets {
    fn drop(&mut self) {
        crate::wipe::wipe(&mut self.kdf);
        crate::wipe::wipe(&mut self.key);
        crate::wipe::wipe(&mut self.auth);
        crate::wipe::wipe(&mut self.cv);
        for block in self.keystream_blocks(self.blocks) {
            crate::wipe::wipe_bytes(block);
        }
    }
}

impl Secrets {
    /// Zeroes every field but `keystream`, field by field: as one struct
    /// literal (a constant) LLVM stored it with one 1,256-byte `memset`,
    /// the uninitialized kilobyte included (~10 ns of a 64-byte message).
    fn new() -> Self {
        let mut secrets = MaybeUninit::<Secrets>::uninit();
        let at = secrets.as_mut_ptr();
        // SAFETY: `at` is valid for writes; every field but `keystream`
        // (itself a MaybeUninit) is initialized before `assume_init`.
        unsafe {
            ptr::addr_of_mut!((*at).kdf).write([0; 128]);
            ptr::addr_of_mut!((*at).key).write([0; 8]);
            ptr::addr_of_mut!((*at).auth).write([0; 8]);
            ptr::addr_of_mut!((*at).cv).write([0; 8]);
            ptr::addr_of_mut!((*at).blocks).write(0);
            secrets.assume_init()
        }
    }

    /// The first `count` blocks of `keystream`, zeroed first if they were
    /// not written yet (`blocks` grows to `count`).
    fn keystream_blocks(&mut self, count: usize) -> &mut [chacha20::cipher::Block<ChaCha20LegacyCore>] {
        let count = count.min(16);
        let first = self.keystream.as_mut_ptr() as *mut chacha20::cipher::Block<ChaCha20LegacyCore>;
        if count > self.blocks {
            // SAFETY: blocks `blocks..count` lie inside `keystream`; zero is a valid byte array.
            unsafe { ptr::write_bytes(first.add(self.blocks), 0, count - self.blocks) };
            self.blocks = count;
        }
        // SAFETY: the first `count` blocks are initialized (written or zeroed above).
        unsafe { std::slice::from_raw_parts_mut(first, count) }
    }

    /// New secrets for a long message. Not inlined, so that the frames of
    /// the derivation lie below the caller's and `scrub_stack` reaches them.
    #[inline(never)]
    fn derived(key: &[u8; 32], nonce: &[u8; 24]) -> Self {
        let mut secrets = Secrets::new();
        secrets.derive(key, nonce);
        secrets
    }

    /// Derives the message keys: the crate's KDF, the first 72 bytes of
    /// BLAKE3-keyed(key, nonce).
    fn derive(&mut self, key: &[u8; 32], nonce: &[u8; 24]) {
        let words = crate::blake3_compressions::key_words(key, &mut self.key);
        crate::blake3_compressions::keyed_xof_24(words, nonce, &mut self.kdf);
    }

    fn auth_key(&self) -> &[u8; 32] {
        self.kdf[32..64].try_into().expect("32 bytes")
    }

    /// The keystream from byte `offset` of the message on.
    fn keystream(&self, offset: usize) -> Result<MessageKeystream<'_>> {
        let mut stream = ChaCha20Legacy::from_core(self.cipher());
        stream.try_seek(offset as u64).map_err(|_| Error::Panic)?;
        let mut keystream = MessageKeystream {
            keys: self,
            stream,
            wide: crate::chacha20::wide::available(),
            pos: offset as u64,
            carry: [0; crate::chacha20::wide::UNIT_BYTES],
            carry_at: crate::chacha20::wide::UNIT_BYTES,
        };
        if keystream.wide && offset % 64 != 0 {
            // The rest of the unit from this block on, so that the kernel
            // starts on a block boundary.
            keystream.refill((offset / 64) as u64);
            keystream.carry_at = offset % 64;
        }
        Ok(keystream)
    }

    /// The encryption key and nonce (bytes 0..32 and 64..72 of the KDF output).
    fn enc_key_nonce(&self) -> (&[u8; 32], &[u8; 8]) {
        (self.kdf[..32].try_into().expect("32 bytes"), self.kdf[64..72].try_into().expect("8 bytes"))
    }

    /// The keystream cipher at block 0.
    fn cipher(&self) -> ChaCha20LegacyCore {
        let (enc_key, enc_nonce) = self.enc_key_nonce();
        ChaCha20LegacyCore::new(enc_key.into(), enc_nonce.into())
    }

    /// The tag of the staged MAC input `aad[..whole] || staged`.
    fn mac(&mut self, aad_whole: &[u8], staged: &[u8]) -> Tag {
        let auth: &[u8; 32] = self.kdf[32..64].try_into().expect("32 bytes");
        let words = crate::blake3_compressions::key_words(auth, &mut self.auth);
        let mut tag = Tag([0u8; 32]);
        if aad_whole.len() + staged.len() <= crate::blake3_compressions::CHUNK_LEN {
            crate::blake3_compressions::hash_chunk(words, crate::blake3_compressions::KEYED_HASH, staged, &mut tag.0, &mut self.cv);
        } else {
            mac_tree(words, aad_whole, staged, &mut tag.0);
        }
        tag
    }

    /// `out = input XOR keystream` (in place when `input` is None): up to
    /// `chacha20::blocks::MAX_BLOCKS` blocks by cb3's own block function,
    /// longer messages through the crate's backends (`xor_long`).
    fn xor(&mut self, input: Option<&[u8]>, out: &mut [u8]) {
        if out.len() <= crate::chacha20::blocks::MAX_BLOCKS * 64 {
            self.xor_blocks(0, input, out);
        } else {
            self.xor_long(input, out);
        }
    }

    /// `out = input XOR keystream` from block `counter` on, at most
    /// `chacha20::blocks::MAX_BLOCKS` blocks.
    fn xor_blocks(&self, counter: u64, input: Option<&[u8]>, out: &mut [u8]) {
        let (enc_key, enc_nonce) = self.enc_key_nonce();
        crate::chacha20::blocks::xor(enc_key, enc_nonce, counter, input, out);
    }

    /// `out = input XOR keystream` from block `counter` on for the whole
    /// kilobytes at the front of `out` where `chacha20::wide` runs on this
    /// CPU, and `copy` the same if given; returns the bytes done (0
    /// elsewhere).
    fn xor_wide(&self, counter: u64, input: Option<&[u8]>, out: &mut [u8], copy: Option<&mut [u8]>) -> usize {
        let (enc_key, enc_nonce) = self.enc_key_nonce();
        crate::chacha20::wide::xor_copying(enc_key, crate::chacha20::wide::Nonce::Djb(enc_nonce), counter, 10, input, out, copy)
    }

    /// `xor` for messages of more than `chacha20::blocks::MAX_BLOCKS` blocks:
    /// whole kilobytes by `chacha20::wide` or else the crate's 16-wide
    /// backend, the rest by `xor_blocks` or four or more blocks of the
    /// crate's. Not inlined: these frames stay out of the stack of short
    /// messages (scrubbed less deeply, `scrub_direct`).
    #[inline(never)]
    fn xor_long(&mut self, input: Option<&[u8]>, out: &mut [u8]) {
        let mut core = self.cipher();
        let whole = out.len() / 1024 * 1024;
        let (head, tail) = out.split_at_mut(whole);
        let (head_in, tail_in) = match input {
            Some(input) => (Some(&input[..whole]), Some(&input[whole..])),
            None => (None, None),
        };
        if self.xor_wide(0, head_in, head, None) < whole {
            let blocks = match head_in {
                Some(input) => InOutBuf::new(input, head).expect("same length"),
                None => InOutBuf::from(head),
            };
            core.apply_keystream_blocks_inout(blocks.into_chunks::<U64>().0);
        } else {
            core.set_block_pos((whole / 64) as u64);
        }
        if tail.len() <= crate::chacha20::blocks::MAX_BLOCKS * 64 {
            self.xor_blocks((whole / 64) as u64, tail_in, tail);
        } else {
            // At least four blocks: one costs the AVX-512 backend 3x four.
            let count = tail.len().div_ceil(64).max(4);
            let keystream = self.keystream_blocks(count);
            core.write_keystream_blocks(keystream);
            xor_keystream(tail, tail_in, Array::slice_as_flattened(keystream));
        }
    }
}

/// The MAC of a multi-chunk input. Not inlined: its 3 KiB of chaining
/// values stay out of the frames of one-chunk messages (which `seal`/`open`
/// scrub less deeply).
#[inline(never)]
fn mac_tree(words: &[u32; 8], aad_whole: &[u8], staged: &[u8], tag: &mut [u8; 32]) {
    let mut tree = crate::blake3_compressions::Tree::new();
    crate::blake3_compressions::hash_tree(words, crate::blake3_compressions::KEYED_HASH, aad_whole, staged, tag, &mut tree);
    tree.wipe();
}

/// The MAC input staged as `aad[whole..] || le64(|aad|) || data ||
/// le64(|data|)` at `stage`, where `whole` is the whole chunks of `aad`
/// (hashed from `aad` itself); returns the range of `data` in it.
///
/// # Safety
/// `stage` has room for `aad.len() % CHUNK_LEN + 16 + data.len()` bytes and
/// overlaps neither input.
unsafe fn stage(stage: *mut u8, aad: &[u8], data: *const u8, data_len: usize) -> (usize, usize) {
    let rest = &aad[aad.len() / crate::blake3_compressions::CHUNK_LEN * crate::blake3_compressions::CHUNK_LEN..];
    let at = rest.len() + 8;
    // SAFETY: the caller's contract: `stage` has room for `rest.len() + 8 +
    // data_len + 8` bytes (every offset below stays inside), `data` is
    // readable for `data_len` bytes, and neither input overlaps `stage`.
    unsafe {
        ptr::copy_nonoverlapping(rest.as_ptr(), stage, rest.len());
        ptr::copy_nonoverlapping((aad.len() as u64).to_le_bytes().as_ptr(), stage.add(rest.len()), 8);
        ptr::copy_nonoverlapping(data, stage.add(at), data_len);
        ptr::copy_nonoverlapping((data_len as u64).to_le_bytes().as_ptr(), stage.add(at + data_len), 8);
    }
    (at, at + data_len + 8)
}

/// Runs `work` on a private staging buffer of `len` bytes: on the stack up
/// to `SHORT_STAGE` or `STACK_STAGE`, else this thread's piece buffer.
fn with_stage<R>(len: usize, work: impl FnOnce(*mut u8) -> Result<R>) -> Result<R> {
    if len <= SHORT_STAGE {
        return on_stack::<SHORT_STAGE, _>(work);
    }
    if len <= STACK_STAGE {
        return on_stack::<STACK_STAGE, _>(work);
    }
    with_scratch(len, |scratch| work(scratch.as_mut_ptr()))
}

/// Runs `work` on `N` uninitialized bytes of stack. Not inlined: each size
/// gets a frame of its own, so short messages' frames stay shallow.
#[inline(never)]
fn on_stack<const N: usize, R>(work: impl FnOnce(*mut u8) -> R) -> R {
    let mut buf = MaybeUninit::<[u8; N]>::uninit();
    work(buf.as_mut_ptr() as *mut u8)
}

/// Runs `work` on this thread's piece buffer, at least `len` (and `seal_piece_len()`)
/// bytes: kept between calls (allocating and zeroing a piece buffer per
/// call cost a few % at 1 MiB), or a new one if a piece function ever ran
/// a nested pass on this thread. In huge pages where the system has them
/// (`buffer::PieceBuffer`).
fn with_scratch<R>(len: usize, work: impl FnOnce(&mut [u8]) -> Result<R>) -> Result<R> {
    SCRATCH.with(|cell| {
        let mut owned = PieceBuffer::EMPTY;
        let mut borrowed = cell.try_borrow_mut();
        let scratch: &mut PieceBuffer = match borrowed.as_deref_mut() {
            Ok(kept) => kept,
            Err(_) => &mut owned,
        };
        // Slack behind the bytes asked for: blake3's AVX2 `hash_many` reads
        // 16 bytes past each chunk it hashes, and a piece may fill the
        // buffer up to `len` (see blake3_compressions.rs).
        let want = len.max(seal_piece_len()) + SCRATCH_SLACK;
        if scratch.len() < want {
            // The old bytes are only ever ciphertext and associated data.
            *scratch = PieceBuffer::EMPTY;
            *scratch = PieceBuffer::new(want).ok_or(Error::OutOfMemory)?;
        }
        work(scratch.as_mut_slice())
    })
}

/// The body of both direct paths: reads the data (from `source`) once
/// into private memory staged as the MAC input (`stage`), derives the
/// message keys into `secrets`, and runs `finish(secrets, whole chunks of
/// aad, staged MAC input, range of the data in it, out)`.
fn staged<R>(
    secrets: &mut Secrets,
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    source: Source<'_>,
    out: &mut [u8],
    finish: impl FnOnce(&mut Secrets, &[u8], &mut [u8], Range<usize>, &mut [u8]) -> Result<R>,
) -> Result<R> {
    let len = out.len();
    let whole = aad.len() / crate::blake3_compressions::CHUNK_LEN * crate::blake3_compressions::CHUNK_LEN;
    let staged_len = aad.len() - whole + 16 + len;
    with_stage(staged_len, |buf| {
        let from = match source {
            Source::InPlace => out.as_ptr(),
            Source::Separate(input) => input.as_ptr(),
        };
        // SAFETY: the buffer holds staged_len bytes, all written by `stage`.
        let staged = unsafe {
            stage(buf, aad, from, len);
            std::slice::from_raw_parts_mut(buf, staged_len)
        };
        let at = staged_len - 8 - len;
        secrets.derive(key, nonce);
        finish(secrets, &aad[..whole], staged, at..at + len, out)
    })
}

/// `seal` for a message whose MAC input is at most `DIRECT_MAX` bytes: the
/// data is read once into the staged MAC input, encrypted there, MACed,
/// and the ciphertext copied to `out`. Not inlined: `seal` wipes the stack
/// below its frame, where this one's lay.
#[inline(never)]
fn seal_direct(secrets: &mut Secrets, key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], source: Source<'_>, out: &mut [u8]) -> Result<Tag> {
    staged(secrets, key, nonce, aad, source, out, |secrets, aad_whole, staged, data, out| {
        secrets.xor(None, &mut staged[data.clone()]);
        let tag = secrets.mac(aad_whole, staged);
        out.copy_from_slice(&staged[data]);
        Ok(tag)
    })
}

/// `open` for a message whose MAC input is at most `DIRECT_MAX` bytes: the
/// ciphertext is read once into the staged MAC input, MACed there, and only
/// if the tag verifies decrypted from there into `out` (whoever can see
/// `out`: it is written once, with verified plaintext).
#[inline(never)]
fn open_direct(secrets: &mut Secrets, key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], tag: &[u8; 32], source: Source<'_>, out: &mut [u8]) -> Result<()> {
    staged(secrets, key, nonce, aad, source, out, |secrets, aad_whole, staged, data, out| {
        let expected = secrets.mac(aad_whole, staged);
        if !constant_time_eq::constant_time_eq_32(&expected, tag) {
            return Err(Error::DecryptionFailed);
        }
        secrets.xor(Some(&staged[data]), out);
        Ok(())
    })
}

/// Zeroes the stack below `seal`/`open`'s frame that the direct path's
/// frames and their callees (blake3's assembly, the ChaCha backend) used:
/// deeper for messages with more than one chunk of MAC input (the chaining
/// values of `mac_tree`, the thread-local staging), shallower for short
/// messages (`short`); the depths are measured per SIMD tier
/// (`wipe::DIRECT_SCRUB_BYTES`).
fn scrub_direct(aad_len: usize, len: usize) {
    use crate::wipe::{scrub_stack_bytes, DIRECT_SCRUB_BYTES as DEPTH};
    match (crate::cpu::avx512(), scrub_class(aad_len, len)) {
        (false, 0) => scrub_stack_bytes::<{ DEPTH[0][0] }>(),
        (false, 1) => scrub_stack_bytes::<{ DEPTH[0][1] }>(),
        (false, _) => scrub_stack_bytes::<{ DEPTH[0][2] }>(),
        (true, 0) => scrub_stack_bytes::<{ DEPTH[1][0] }>(),
        (true, 1) => scrub_stack_bytes::<{ DEPTH[1][1] }>(),
        (true, _) => scrub_stack_bytes::<{ DEPTH[1][2] }>(),
    }
}

/// 0: a short message, 1: one chunk of MAC input, 2: more.
fn scrub_class(aad_len: usize, len: usize) -> usize {
    if short(aad_len, len) {
        0
    } else if aad_len.saturating_add(len) <= crate::blake3_compressions::CHUNK_LEN - 16 {
        1
    } else {
        2
    }
}

/// How many bytes below the caller `scrub_direct(aad_len, len)` zeroes.
#[cfg(test)]
fn scrub_direct_depth(aad_len: usize, len: usize) -> usize {
    crate::wipe::DIRECT_SCRUB_BYTES[usize::from(crate::cpu::avx512())][scrub_class(aad_len, len)]
}

/// `out = input XOR keystream` from byte `offset` of the message on, in
/// pieces of `xor_piece_len()` bytes.
fn xor_segment(keys: &Secrets, offset: usize, input: &[u8], out: &mut [u8]) -> Result<()> {
    let mut stream = keys.keystream(offset)?;
    let step = xor_piece_len();
    let pieces = out.len().div_ceil(step);
    for (index, (piece, from)) in out.chunks_mut(step).zip(input.chunks(step)).enumerate() {
        xor_piece_from(&mut stream, from, piece, index + 1 == pieces, None)?;
    }
    Ok(())
}

/// The keystream unit the SIMD backends produce cheapest: four 64-byte
/// blocks. (One or two blocks cost the AVX-512 backend 2-5x a four-block run.)
const KEYSTREAM_RUN: usize = 256;

/// A message's keystream from some byte position on (`Secrets::keystream`):
/// by `chacha20::wide` where it runs on this CPU, else by the crate's cipher.
///
/// The kernel makes whole units from a block boundary on; the keystream of
/// the unit that a call ends inside is kept (`carry`) for the next call. So
/// a message cut into pieces anywhere (the pass cuts on the grid of the MAC
/// input, not of the keystream) costs the kernel what the whole message
/// costs it: no piece's edges go to the crate (whose AVX-512 backend takes
/// 2-5x as long per block for a few blocks).
struct MessageKeystream<'a> {
    keys: &'a Secrets,
    /// The crate's cipher, used where the kernel does not run (`wide` false).
    stream: ChaCha20Legacy,
    /// Whether the kernel runs on this CPU.
    wide: bool,
    /// Kernel only: the message byte the next call starts at.
    pos: u64,
    /// Kernel only: keystream bytes `carry[carry_at..]` come next.
    carry: [u8; crate::chacha20::wide::UNIT_BYTES],
    carry_at: usize,
}

impl Drop for MessageKeystream<'_> {
    fn drop(&mut self) {
        crate::wipe::wipe_bytes(&mut self.carry);
    }
}

impl MessageKeystream<'_> {
    /// `out = input XOR keystream` (`out ^= keystream` when `input` is
    /// None), advancing the position. Where the kernel runs and `copy` (as
    /// long as `out`) is given, the kernel stores the bytes it produces into
    /// `copy` too, from the same registers; returns the range of `copy` so
    /// written (the rest is the caller's to fill, `copy_unstored`).
    fn xor(&mut self, input: Option<&[u8]>, out: &mut [u8], copy: Option<&mut [u8]>) -> Result<Range<usize>> {
        if !self.wide {
            self.xor_crate(input, out)?;
            return Ok(0..0);
        }
        let len = out.len();
        // The keystream left over from the last unit: after it the position
        // is on a block boundary (a unit ends on one).
        let mut done = (self.carry.len() - self.carry_at).min(len);
        let carried = &self.carry[self.carry_at..self.carry_at + done];
        xor_keystream(&mut out[..done], input.map(|input| &input[..done]), carried);
        self.carry_at += done;
        let mut stored = 0..0;
        if done < len {
            let counter = (self.pos + done as u64) / 64;
            let copied = copy.is_some();
            let wide = self.keys.xor_wide(counter, input.map(|input| &input[done..]), &mut out[done..],
                                          copy.map(|copy| &mut copy[done..]));
            if copied {
                stored = done..done + wide;
            }
            done += wide;
            if done < len {
                // Less than a unit left: the next unit's keystream, the rest
                // of which the next call uses.
                self.refill(counter + (wide / 64) as u64);
                let tail = len - done;
                xor_keystream(&mut out[done..], input.map(|input| &input[done..]), &self.carry[..tail]);
                self.carry_at = tail;
            }
        }
        self.pos += len as u64;
        Ok(stored)
    }

    /// `carry` = the keystream unit from block `counter` on (zeros XOR
    /// keystream: no `memset` of `carry` first).
    fn refill(&mut self, counter: u64) {
        static ZEROS: [u8; crate::chacha20::wide::UNIT_BYTES] = [0; crate::chacha20::wide::UNIT_BYTES];
        let made = self.keys.xor_wide(counter, Some(&ZEROS), &mut self.carry, None);
        debug_assert_eq!(made, self.carry.len());
    }

    fn xor_crate(&mut self, input: Option<&[u8]>, out: &mut [u8]) -> Result<()> {
        // Only fails past 2^64 blocks, which no in-memory message reaches.
        match input {
            Some(input) => self.stream.try_apply_keystream_b2b(input, out),
            None => self.stream.try_apply_keystream(out),
        }
        .map_err(|_| Error::Panic)
    }
}

/// `out = input XOR keystream` for one piece (`last`: the stream is not
/// used again): one read of `input`, no copy pass before the XOR; `copy`, if
/// given, as in `MessageKeystream::xor` (returns the range it stored).
fn xor_piece_from(stream: &mut MessageKeystream<'_>, input: &[u8], out: &mut [u8], last: bool, copy: Option<&mut [u8]>) -> Result<Range<usize>> {
    if stream.wide {
        return stream.xor(Some(input), out, copy);
    }
    // The crate's backends: the last piece's partial run through a buffer
    // of whole runs (the cheapest unit of its SIMD backends).
    let full = if last { input.len() / KEYSTREAM_RUN * KEYSTREAM_RUN } else { input.len() };
    let stored = stream.xor(Some(&input[..full]), &mut out[..full], copy.map(|copy| &mut copy[..full]))?;
    if full < input.len() {
        let mut run = Zeroizing::new([0u8; KEYSTREAM_RUN]);
        stream.xor(None, &mut run[..], None)?;
        xor_keystream(&mut out[full..], Some(&input[full..]), &run[..]);
    }
    Ok(stored)
}

/// Completes `target` as a copy of `from` (same length) around the range
/// the kernel already stored into it.
fn copy_unstored(target: &mut [u8], from: &[u8], stored: Range<usize>) {
    target[..stored.start].copy_from_slice(&from[..stored.start]);
    target[stored.end..].copy_from_slice(&from[stored.end..]);
}

/// `out = input XOR keystream` for the whole message, in
/// `LEAVES_PER_THREAD` segments per thread of `workers` (the last pass of a
/// staged decryption).
fn xor_into(keys: &Secrets, input: &[u8], out: &mut [u8], workers: &Workers) -> Result<()> {
    if workers.threads() <= 1 {
        return xor_segment(keys, 0, input, out);
    }
    let len = out.len();
    let segment = parallel::segment_len(len, workers.threads() * LEAVES_PER_THREAD);
    let target = Span::of(out);
    let task = |index: usize| {
        let range = index * segment..((index + 1) * segment).min(len);
        // SAFETY: each segment is handled by one task only.
        let part = unsafe { target.get(range.clone()) };
        xor_segment(keys, range.start, &input[range], part)
    };
    workers.each(len.div_ceil(segment), &task).map_err(|_| Error::Panic)
}

/// A byte buffer that the pieces of one call write from several threads,
/// each piece to its own disjoint range.
#[derive(Clone, Copy)]
struct Span {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a Span is only used for disjoint ranges by the threads of one call
// (each piece of `process` is handled by exactly one thread).
unsafe impl Send for Span {}
unsafe impl Sync for Span {}

impl Span {
    fn of(bytes: &mut [u8]) -> Self {
        Span { ptr: bytes.as_mut_ptr(), len: bytes.len() }
    }

    /// # Safety
    /// `offset` is at most the span's length.
    unsafe fn at(&self, offset: usize) -> *mut u8 {
        // SAFETY: the caller's contract: `offset` is within the span.
        unsafe { self.ptr.add(offset) }
    }

    /// # Safety
    /// `range` lies within the span and no other reference to it is live.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self, range: Range<usize>) -> &mut [u8] {
        debug_assert!(range.start <= range.end && range.end <= self.len);
        if range.is_empty() {
            return &mut [];
        }
        // SAFETY: the caller's contract: `range` lies within the span (so
        // the bytes are valid) and nothing else refers to them meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

/// What one piece of the pass does: given the piece's range of the message,
/// the MAC and the keystream positioned at the piece, whether it is the last
/// piece of the stream, `prefix` and a private scratch buffer of at least
/// `prefix` + the piece's length, it reads the piece from the caller exactly
/// once and feeds the MAC only bytes no one else can change. The first
/// `prefix` bytes of the scratch buffer are MAC input just before the piece
/// (the tail of the associated data and its length, staged so that the first
/// piece, like every other, starts on the piece grid of the MAC input) that
/// the piece feeds to the MAC in the same `update`.
type PieceFn<'a> =
    dyn Fn(Range<usize>, &mut blake3::Hasher, &mut MessageKeystream<'_>, bool, usize, &mut [u8]) -> Result<()> + Sync + 'a;

/// Leaves (or segments) per thread when a message is split over threads:
/// several, so that a thread that starts late (a pool thread's wake-up can
/// take a millisecond on a VM, `parallel::Workers`) leaves its share to the
/// others instead of finishing last.
const LEAVES_PER_THREAD: usize = 8;

/// The shortest leaf a split message gets (shorter ones when a message is
/// split over threads: `LEAVES_PER_THREAD` would ask for less): a leaf is
/// cut into pieces of at most its length, and pieces below 128 KiB cost
/// more per byte (2 % at 64 KiB, "The seal piece, by maker" in
/// docs/design/performance.md). Not the piece length: with 1 MiB pieces
/// (AMD) a 1 MiB message would not split at all.
const LEAF_MIN: usize = 128 * 1024;

/// Bytes of `SCRATCH` behind the most any piece uses (see `with_scratch`):
/// up to 63 to start a piece where `Pass::line_offset` puts it, 64 behind it.
const SCRATCH_SLACK: usize = 128;

/// How far past `from` a private copy of bytes at `target` starts to lie
/// as far from a 64-byte line as they do (below 64).
fn line_offset(target: usize, from: usize) -> usize {
    target.wrapping_sub(from) % 64
}

thread_local! {
    /// Each thread's piece buffer for `seal` and the direct path's staging
    /// (`seal_piece_len()` bytes and `SCRATCH_SLACK`, in whole huge pages
    /// where the system has them; allocated on its first message with more than one
    /// chunk of MAC input and kept; it only ever holds ciphertext and
    /// associated data when a call returns).
    static SCRATCH: std::cell::RefCell<PieceBuffer> = const { std::cell::RefCell::new(PieceBuffer::EMPTY) };
}

/// One pass over a message: the MAC input `aad || le64(|aad|) || ct ||
/// le64(|ct|)` as a BLAKE3 tree (with the `hazmat` subtree functions), whose
/// leaves run on `workers` (`LEAVES_PER_THREAD` per thread, the caller's
/// included) when there are several, and are cut into pieces of `piece_len`
/// bytes, each handed to `piece`. Returns the tag; the
/// bytes equal one `blake3::Hasher::update` over the whole input (checked
/// against the crate at every length and split in tests/abi.rs).
struct Pass<'a> {
    keys: &'a Secrets,
    aad: &'a [u8],
    aad_len: [u8; 8],
    /// |aad| + 8: where the ciphertext starts in the MAC input.
    head: usize,
    ct_len: usize,
    ct_len_le: [u8; 8],
    /// Subtrees longer than this are split in two.
    leaf_max: usize,
    /// Bytes per piece (`seal_piece_len()` or `open_piece_len()`).
    piece_len: usize,
    /// The address of the output's first byte, where each piece's private
    /// bytes are to lie at the same offset from a 64-byte line as their
    /// place in the output (`seal`: the kernel then stores whole lines of
    /// both, `chacha20::wide`); None: anywhere.
    out_addr: Option<usize>,
    piece: &'a PieceFn<'a>,
}

impl<'a> Pass<'a> {
    #[allow(clippy::too_many_arguments)]
    fn run(keys: &'a Secrets, aad: &'a [u8], ct_len: usize, workers: &Workers, piece_len: usize, out_addr: Option<usize>, piece: &'a PieceFn<'a>) -> Result<[u8; 32]> {
        let head = aad.len() + 8;
        let total = head + ct_len + 8;
        let threads = workers.threads();
        let leaf_max = if threads > 1 { (total / (threads * LEAVES_PER_THREAD)).max(LEAF_MIN) } else { usize::MAX };
        let pass = Pass {
            keys,
            aad,
            aad_len: (aad.len() as u64).to_le_bytes(),
            head,
            ct_len,
            ct_len_le: (ct_len as u64).to_le_bytes(),
            leaf_max,
            piece_len,
            out_addr,
            piece,
        };
        if pass.split(total).is_none() {
            return pass.leaf(0, total, true);
        }
        let mut leaves = Vec::new();
        pass.plan(0, total, &mut leaves);
        // The leaves' chaining values, written in place by their tasks and
        // wiped in place at the end (they are keyed with the MAC key).
        let cvs: Vec<Mutex<[u8; 32]>> = leaves.iter().map(|_| Mutex::new([0; 32])).collect();
        let slot = |index: usize| cvs[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let task = |index: usize| {
            let (start, len) = leaves[index];
            let mut cv = pass.leaf(start, len, false)?;
            *slot(index) = cv;
            cv.zeroize();
            Ok(())
        };
        let mut next = 0..leaves.len();
        let tag = workers.each(leaves.len(), &task).and_then(|()| pass.merge(total, true, &mut || Ok(*slot(next.next().expect("a value per leaf")))));
        for index in 0..cvs.len() {
            slot(index).zeroize();
        }
        tag
    }

    /// Where a subtree of `len` bytes splits (its left subtree's length),
    /// or None if it is a leaf.
    fn split(&self, len: usize) -> Option<usize> {
        (len > self.leaf_max).then(|| blake3::hazmat::left_subtree_len(len as u64) as usize)
    }

    /// The leaves `(start, len)` of the subtree `[start, start + len)`, in order.
    fn plan(&self, start: usize, len: usize, leaves: &mut Vec<(usize, usize)>) {
        match self.split(len) {
            None => leaves.push((start, len)),
            Some(left) => {
                self.plan(start, left, leaves);
                self.plan(start + left, len - left, leaves);
            }
        }
    }

    /// The chaining value of a subtree of `len` bytes (the tag if `root`)
    /// from its leaves' chaining values, which `leaf` gives in order.
    fn merge(&self, len: usize, root: bool, leaf: &mut dyn FnMut() -> Result<[u8; 32]>) -> Result<[u8; 32]> {
        let Some(left) = self.split(len) else {
            return leaf();
        };
        let (l, r) = (self.merge(left, false, leaf), self.merge(len - left, false, leaf));
        let (mut l, mut r) = (l?, r?);
        let mode = Mode::KeyedHash(self.keys.auth_key());
        let out = if root { *merge_subtrees_root(&l, &r, mode).as_bytes() } else { merge_subtrees_non_root(&l, &r, mode) };
        l.zeroize();
        r.zeroize();
        Ok(out)
    }

    /// Feeds `mac` the bytes `[from, to)` of `head_bytes || tail`, a part of
    /// the MAC input that the caller does not share with a writer: the
    /// associated data (read once, here) and the two lengths.
    fn feed_fixed(mac: &mut blake3::Hasher, parts: [&[u8]; 2], from: usize, to: usize) {
        let first = parts[0].len();
        if from < first {
            mac.update(&parts[0][from..to.min(first)]);
        }
        if to > first {
            mac.update(&parts[1][from.max(first) - first..to - first]);
        }
    }

    /// Copies the bytes `[from, to)` of `parts[0] || parts[1]` (as in
    /// `feed_fixed`) to `out`, which is `to - from` long.
    fn copy_fixed(out: &mut [u8], parts: [&[u8]; 2], from: usize, to: usize) {
        let first = parts[0].len();
        let split = first.clamp(from, to) - from;
        if from < first {
            out[..split].copy_from_slice(&parts[0][from..to.min(first)]);
        }
        if to > first {
            out[split..].copy_from_slice(&parts[1][from.max(first) - first..to - first]);
        }
    }

    /// Where in `scratch` a piece whose ciphertext starts at `at` (behind
    /// `prefix` staged bytes) goes: 0, or with `out_addr` the first offset
    /// (below 64, within `SCRATCH_SLACK`) that puts the piece's ciphertext
    /// as far from a 64-byte line as its place in the output.
    fn line_offset(&self, scratch: &[u8], at: usize, prefix: usize) -> usize {
        self.out_addr.map_or(0, |out| line_offset(out + at, scratch.as_ptr() as usize + prefix))
    }

    fn leaf(&self, start: usize, len: usize, root: bool) -> Result<[u8; 32]> {
        let end = start + len;
        let ct_end = self.head + self.ct_len;
        let mut mac = blake3::Hasher::new_keyed(self.keys.auth_key());
        if start > 0 {
            mac.set_input_offset(start as u64);
        }
        let fixed = [self.aad, &self.aad_len[..]];
        let result = (|| {
            let (ct_start, ct_stop) = (start.max(self.head), end.min(ct_end));
            if ct_start < ct_stop {
                // The head (associated data and its length) in this leaf up
                // to the piece grid goes to the MAC here; the rest is staged
                // in front of the first piece, so that every `update` of
                // ciphertext starts on the grid (whole, wide subtrees; no
                // chunk-by-chunk ramp after the associated data).
                let piece = self.piece_len;
                let staged_from = if start < self.head { (self.head / piece * piece).max(start) } else { self.head };
                if start < staged_from {
                    Self::feed_fixed(&mut mac, fixed, start, staged_from);
                }
                let (first, stop) = (ct_start - self.head, ct_stop - self.head);
                let mut stream = self.keys.keystream(first)?;
                with_scratch(piece, |scratch| {
                    let mut prefix = self.head - staged_from;
                    let mut at = first;
                    let mut line = self.line_offset(scratch, at, prefix);
                    Self::copy_fixed(&mut scratch[line..line + prefix], fixed, staged_from, self.head);
                    while at < stop {
                        // The next piece boundary, aligned in the MAC input.
                        let next = (((at + self.head) / piece + 1) * piece - self.head).min(stop);
                        (self.piece)(at..next, &mut mac, &mut stream, next == stop, prefix, &mut scratch[line..])?;
                        prefix = 0;
                        at = next;
                        line = self.line_offset(scratch, at, 0);
                    }
                    Ok(())
                })?;
            } else if start < self.head {
                Self::feed_fixed(&mut mac, fixed, start, end.min(self.head));
            }
            if end > ct_end {
                Self::feed_fixed(&mut mac, [&[], &self.ct_len_le], start.max(ct_end) - ct_end, end - ct_end);
            }
            Ok(if root { *mac.finalize().as_bytes() } else { mac.finalize_non_root() })
        })();
        mac.zeroize();
        result
    }
}

/// Encrypts into `out` (same length as the data) and returns the tag.
///
/// Every byte of the data is read once and XORed into a private piece
/// buffer, where it is MACed; `out` gets the same ciphertext, stored from
/// the same registers (`chacha20::wide::xor_copying`) or copied from the
/// private buffer: the tag covers exactly the ciphertext written, whatever
/// anyone else writes into the input or `out` meanwhile. Messages of at least
/// `parallel::PARALLEL_MIN` bytes run on `pool`'s threads if it is given;
/// the output does not depend on it.
pub fn seal(
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    source: Source<'_>,
    out: &mut [u8],
    pool: Option<&LazyPool>,
) -> Result<Tag> {
    if aad.len().saturating_add(out.len()) <= DIRECT_MAX - 16 {
        let mut secrets = Secrets::new();
        let tag = seal_direct(&mut secrets, key, nonce, aad, source, out);
        scrub_direct(aad.len(), out.len());
        return tag;
    }
    let keys = Secrets::derived(key, nonce);
    scrub_stack();
    let tag = seal_with(&keys, aad, source, out, &Workers::for_len(pool, out.len())).map(Tag);
    scrub_stack_deep();
    tag
}

/// One piece of `seal`'s XOR: `input` (None: `target`'s own bytes, in
/// place) XORed into `private` and `target` alike, stored from the same
/// registers where the kernel runs, else copied from `private`.
fn xor_private_piece(stream: &mut MessageKeystream<'_>, input: Option<&[u8]>, private: &mut [u8], target: &mut [u8], last: bool) -> Result<()> {
    let stored = match input {
        None => xor_piece_from(stream, &*target, private, last, None)?,
        Some(input) => xor_piece_from(stream, input, private, last, Some(&mut *target))?,
    };
    copy_unstored(target, private, stored);
    Ok(())
}

/// `seal` after the key derivation, on `workers`.
fn seal_with(keys: &Secrets, aad: &[u8], source: Source<'_>, out: &mut [u8], workers: &Workers) -> Result<[u8; 32]> {
    let len = out.len();
    let out = Span::of(out);
    let piece = move |range: Range<usize>, mac: &mut blake3::Hasher, stream: &mut MessageKeystream<'_>, last: bool, prefix: usize, scratch: &mut [u8]| {
        let staged = &mut scratch[..prefix + range.len()];
        // SAFETY: each range is handled by one thread only.
        let target = unsafe { out.get(range.clone()) };
        // The one read of the piece: XORed straight into the private buffer,
        // which the MAC then reads. The output gets the same bytes: stored
        // from the same registers as the private ones where the kernel runs
        // (no second pass), else copied from the private buffer.
        xor_private_piece(stream, source.input(range), &mut staged[prefix..], target, last)?;
        mac.update(staged);
        Ok(())
    };
    Pass::run(keys, aad, len, workers, seal_piece_len(), Some(out.ptr as usize), &piece)
}

/// The XOR of `seal`'s one-thread pass without its MAC, for
/// `cb3_bench_reference` (the evidence rows of the per-call targets): the
/// same pieces of `seal_piece_len()` bytes, each XORed from `input` into
/// `out` and, with `private_copy`, into the thread's piece buffer at the
/// output's line offset as `seal` does (stored from the same registers where
/// the kernel runs, else copied). The two against each other give what the
/// private copy costs the pass.
pub fn seal_xor_pass(key: &[u8; 32], nonce: &[u8; 24], input: &[u8], out: &mut [u8], private_copy: bool) -> Result<()> {
    let keys = Secrets::derived(key, nonce);
    let piece = seal_piece_len();
    let pieces = out.len().div_ceil(piece);
    let done = with_scratch(piece, |scratch| {
        let mut stream = keys.keystream(0)?;
        for (index, (target, from)) in out.chunks_mut(piece).zip(input.chunks(piece)).enumerate() {
            let last = index + 1 == pieces;
            if !private_copy {
                xor_piece_from(&mut stream, from, target, last, None)?;
                continue;
            }
            let shift = line_offset(target.as_ptr() as usize, scratch.as_ptr() as usize);
            xor_private_piece(&mut stream, Some(from), &mut scratch[shift..shift + target.len()], target, last)?;
        }
        Ok(())
    });
    scrub_stack_deep();
    done
}

/// Verifies `tag` over the ciphertext and decrypts it into `out`, reading
/// every ciphertext byte once (see `Output` for where it goes first).
/// Returns `DecryptionFailed` on a mismatch; `out` is then untouched
/// (`Output::Shared`) or zeroed (`Output::Private`).
#[allow(clippy::too_many_arguments)]
pub fn open(
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    tag: &[u8; 32],
    source: Source<'_>,
    out: &mut [u8],
    output: Output,
    pool: Option<&LazyPool>,
) -> Result<()> {
    let tag = *tag; // read once
    if aad.len().saturating_add(out.len()) <= DIRECT_MAX - 16 {
        let mut secrets = Secrets::new();
        let result = open_direct(&mut secrets, key, nonce, aad, &tag, source, out);
        scrub_direct(aad.len(), out.len());
        return result;
    }
    let keys = Secrets::derived(key, nonce);
    scrub_stack();
    let result = open_with(&keys, aad, &tag, source, out, output, &Workers::for_len(pool, out.len()));
    scrub_stack_deep();
    result
}

/// `open` after the key derivation, on `workers`.
fn open_with(
    keys: &Secrets,
    aad: &[u8],
    tag: &[u8; 32],
    source: Source<'_>,
    out: &mut [u8],
    output: Output,
    workers: &Workers,
) -> Result<()> {
    let len = out.len();
    let verify = |expected: [u8; 32]| {
        let expected = Zeroizing::new(expected);
        if constant_time_eq::constant_time_eq_32(&expected, tag) {
            Ok(())
        } else {
            Err(Error::DecryptionFailed)
        }
    };
    match (output, source) {
        (Output::Private, Source::Separate(input)) => {
            let target = Span::of(out);
            let piece = move |range: Range<usize>, mac: &mut blake3::Hasher, stream: &mut MessageKeystream<'_>, last: bool, prefix: usize, scratch: &mut [u8]| {
                // The one read of the piece, into the private buffer; MACed
                // there, then decrypted from there into `out` (which nobody
                // else sees, and which is wiped if the tag fails).
                let staged = &mut scratch[..prefix + range.len()];
                staged[prefix..].copy_from_slice(&input[range.clone()]);
                mac.update(staged);
                // SAFETY: each range is handled by one thread only.
                let dst = unsafe { target.get(range) };
                xor_piece_from(stream, &staged[prefix..], dst, last, None).map(drop)
            };
            Pass::run(keys, aad, len, workers, open_piece_len(), None, &piece).and_then(verify).inspect_err(|_| crate::wipe::wipe_bytes(out))
        }
        _ => {
            // Staged: a private copy of the ciphertext, verified, then
            // decrypted from that copy into `out`.
            // (Not zeroed first: every byte is written before it is read.)
            let mut staging: Vec<u8> = Vec::new();
            staging.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
            let stage = Span { ptr: staging.as_mut_ptr(), len };
            let from = Span::of(out);
            let piece = move |range: Range<usize>, mac: &mut blake3::Hasher, _: &mut MessageKeystream<'_>, _: bool, prefix: usize, scratch: &mut [u8]| {
                let src = match source {
                    // SAFETY: each range is handled by one thread only.
                    Source::InPlace => unsafe { from.get(range.clone()) },
                    Source::Separate(input) => &input[range.clone()],
                };
                if prefix > 0 {
                    // The first piece: MACed behind the staged head in the
                    // private buffer, then copied into the staging copy.
                    let staged = &mut scratch[..prefix + range.len()];
                    staged[prefix..].copy_from_slice(src);
                    mac.update(staged);
                    // SAFETY: `range` lies within the capacity of `staging`,
                    // which no one else writes; the bytes are initialized here.
                    unsafe { ptr::copy_nonoverlapping(staged[prefix..].as_ptr(), stage.at(range.start), range.len()) };
                    return Ok(());
                }
                // SAFETY: `range` lies within the capacity of `staging`, and
                // its bytes are initialized by this copy before the slice
                // over them is formed.
                let dst = unsafe {
                    let at = stage.at(range.start);
                    ptr::copy_nonoverlapping(src.as_ptr(), at, range.len());
                    std::slice::from_raw_parts(at, range.len())
                };
                mac.update(dst);
                Ok(())
            };
            Pass::run(keys, aad, len, workers, open_piece_len(), None, &piece).and_then(verify)?;
            // SAFETY: the pass wrote every byte of 0..len (pieces cover the message).
            unsafe { staging.set_len(len) };
            xor_into(keys, &staging, out, workers)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(seed: usize, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(97) ^ (i >> 8)) as u8).collect()
    }

    /// How deep the one-chunk direct path (`seal_direct`/`open_direct`,
    /// which `seal`/`open` follow with `scrub_direct`) writes the stack below
    /// its caller's frame, and where copies of the message keys land: the
    /// scrub must reach every byte these calls write (their frames hold the
    /// keys, the ChaCha state and the MAC's chaining values), for every
    /// one-chunk length, both sources, and a failing open.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    fn the_scrub_reaches_every_frame_of_the_direct_path() {
        use crate::wipe::probe;
        let key = [0x3Cu8; 32];
        let nonce = [0x7Eu8; 24];
        let mut kdf = [0u8; 72];
        blake3::Hasher::new_keyed(&key).update(&nonce).finalize_xof().fill(&mut kdf);
        let (mut written, mut secrets_at) = ([0; 3], 0);
        let mut measure = |check: &str, (aad_len, len): (usize, usize), run: &mut dyn FnMut()| {
            let (stack, depth) = probe::after(run);
            assert!(depth <= scrub_direct_depth(aad_len, len), "{check}: {depth} bytes of stack written");
            let at = &mut written[scrub_class(aad_len, len)];
            *at = (*at).max(depth);
            secrets_at = secrets_at.max(probe::deepest_copy(&stack, &kdf));
        };
        for aad_len in [0, 13, 1000] {
            for len in [0, 1, 64, 100, 255, 256, 257, 511, 512, 1000, 1008 - aad_len, 1009 - aad_len, 5000, DIRECT_MAX - 16 - aad_len] {
                let (aad, data) = (bytes(5, aad_len), bytes(9, len));
                let (mut sealed, mut inplace, mut opened, mut tag) = (vec![0u8; len], data.clone(), vec![0u8; len], [0u8; 32]);
                let what = format!("{len} bytes, aad {aad_len}");
                let mac_input = (aad_len, len);
                // In the caller's frame, as `seal`/`open` hold it (it wipes itself).
                let mut secrets = Secrets::new();
                measure(&format!("seal {what}"), mac_input, &mut || {
                    tag = seal_direct(&mut secrets, &key, &nonce, &aad, Source::Separate(&data), &mut sealed).unwrap().0
                });
                measure(&format!("seal in place {what}"), mac_input, &mut || {
                    seal_direct(&mut secrets, &key, &nonce, &aad, Source::InPlace, &mut inplace).unwrap();
                });
                measure(&format!("open {what}"), mac_input, &mut || {
                    open_direct(&mut secrets, &key, &nonce, &aad, &tag, Source::Separate(&sealed), &mut opened).unwrap()
                });
                measure(&format!("failing open {what}"), mac_input, &mut || {
                    let failed = open_direct(&mut secrets, &key, &nonce, &aad, &[0; 32], Source::Separate(&sealed), &mut vec![0; len]);
                    assert_eq!(failed, Err(Error::DecryptionFailed));
                });
                assert!(opened == data && inplace == sealed, "{what}");
            }
        }
        let scrubs = [scrub_direct_depth(0, 0), scrub_direct_depth(0, 1000), scrub_direct_depth(0, DIRECT_MAX - 16)];
        eprintln!("direct path, [short, one chunk, more]: {written:?} bytes of stack written, scrubbed {scrubs:?}; key copies down to {secrets_at}");
        assert!(secrets_at > 0, "the probe must see the keys the calls leave");
        // And `seal`/`open`, which scrub after those calls, leave none.
        for len in [0, 64, 256, 1008, 4096, 5000] {
            let (data, mut out, mut tag) = (bytes(3, len), vec![0u8; len], [0u8; 32]);
            let (stack, _) = probe::after(|| tag = seal(&key, &nonce, b"", Source::Separate(&data), &mut out, None).unwrap().0);
            assert_eq!(probe::deepest_copy(&stack, &kdf), 0, "seal {len}: a key copy left");
            let (stack, _) = probe::after(|| open(&key, &nonce, b"", &tag, Source::InPlace, &mut out, Output::Shared, None).unwrap());
            assert_eq!(probe::deepest_copy(&stack, &kdf), 0, "open {len}: a key copy left");
            assert!(out == data);
        }
    }

    /// Piece sizes other CPUs derive (`pieces::pieces_for`) for the tests
    /// below (0: this CPU's). Other tests running meanwhile may see them: the
    /// bytes do not depend on them.
    pub(super) static PIECE_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    pub(super) static XOR_PIECE_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// The smallest and largest piece sizes `pieces::pieces_for` derives
    /// give the crate's bytes, for lengths and associated data around the
    /// pieces, one and three leaves, and both decryption outputs.
    #[test]
    fn every_piece_size_gives_the_same_bytes() {
        for (piece, xor_piece) in [(64 << 10, 16 << 10), (1 << 20, 256 << 10)] {
            PIECE_OVERRIDE.store(piece, Ordering::Relaxed);
            XOR_PIECE_OVERRIDE.store(xor_piece, Ordering::Relaxed);
            for (i, &len) in [piece - 1, piece + 1, 2 * piece + 5, 3 * piece + 777].iter().enumerate() {
                for aad_len in [0, 1017, piece - 5] {
                    let key: [u8; 32] = bytes(i + 7, 32).try_into().unwrap();
                    let nonce: [u8; 24] = bytes(i + 8, 24).try_into().unwrap();
                    let (pt, aad) = (bytes(i + 9, len), bytes(i + 10, aad_len));
                    let expected = ChaCha20Blake3::new(key).encrypt(&nonce, &pt, &aad);
                    let keys = Secrets::derived(&key, &nonce);
                    let tag: [u8; 32] = expected[len..].try_into().unwrap();
                    for threads in [1, 3] {
                        let what = format!("piece {piece}, length {len}, aad {aad_len}, {threads} threads");
                        let mut out = vec![0u8; len];
                        assert_eq!(seal_with(&keys, &aad, Source::Separate(&pt), &mut out, &Workers::split_only(threads)), Ok(tag), "{what}");
                        assert!(out == expected[..len], "{what}");
                        for output in [Output::Private, Output::Shared] {
                            let mut plain = vec![0xAA; len];
                            open_with(&keys, &aad, &tag, Source::Separate(&out), &mut plain, output, &Workers::split_only(threads)).unwrap();
                            assert!(plain == pt, "{what} {output:?}");
                        }
                    }
                }
            }
        }
        PIECE_OVERRIDE.store(0, Ordering::Relaxed);
        XOR_PIECE_OVERRIDE.store(0, Ordering::Relaxed);
    }

    /// The benchmark's XOR pass (`seal_xor_pass`, with and without the
    /// private copy) writes `seal`'s ciphertext: its rows time the same work.
    #[test]
    fn the_bench_xor_pass_writes_seals_ciphertext() {
        let (key, nonce) = ([9u8; 32], [8u8; 24]);
        let piece = seal_piece_len();
        for len in [0, 1, 100, 1024, 70_000, piece - 3, piece + 5, 2 * piece + 1000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let mut sealed = vec![0u8; len];
            seal(&key, &nonce, b"", Source::Separate(&data), &mut sealed, None).unwrap();
            for private_copy in [false, true] {
                let mut out = vec![0xEEu8; len];
                seal_xor_pass(&key, &nonce, &data, &mut out, private_copy).unwrap();
                assert!(out == sealed, "len {len}, private copy {private_copy}");
            }
        }
    }

    /// The message keystream cut into calls anywhere (the pass's pieces
    /// start where the MAC input's grid falls, not on blocks), from any
    /// starting offset, with and without an input and a copy: the crate's
    /// keystream, and a copy holding the same bytes wherever the kernel
    /// stored them.
    #[test]
    fn the_keystream_is_the_same_however_it_is_cut() {
        let keys = Secrets::derived(&[3; 32], &[4; 24]);
        let total = 9 * 1024 + 77;
        let mut reference = vec![0u8; total];
        keys.keystream(0).unwrap().xor_crate(None, &mut reference).unwrap();
        let input = bytes(11, total);
        let cuts: [&[usize]; 5] = [&[1, 63, 64, 65, 1023, 1024, 1025], &[1024, 3000, 17], &[4096, 5], &[100_000], &[7, 2041, 1, 1]];
        for start in [0, 1, 8, 63, 64, 1000, 1024, 1031, 2048 + 56] {
            for (round, pattern) in cuts.iter().enumerate() {
                let what = format!("from {start}, cuts {pattern:?}");
                let mut stream = keys.keystream(start).unwrap();
                let (mut out, mut copy) = (vec![0u8; total - start], vec![0xEEu8; total - start]);
                let mut at = 0;
                for &cut in pattern.iter().cycle() {
                    if at == out.len() {
                        break;
                    }
                    let end = (at + cut).min(out.len());
                    if round % 2 == 0 {
                        let stored = stream.xor(Some(&input[start + at..start + end]), &mut out[at..end], Some(&mut copy[at..end])).unwrap();
                        assert!(stored.end <= end - at, "{what}");
                        assert!(copy[at..end][stored.clone()] == out[at..end][stored.clone()], "{what}: the copy at {at}");
                    } else {
                        out[at..end].copy_from_slice(&input[start + at..start + end]);
                        assert_eq!(stream.xor(None, &mut out[at..end], None).unwrap(), 0..0, "{what}");
                    }
                    at = end;
                }
                let expected: Vec<u8> = input[start..].iter().zip(&reference[start..]).map(|(i, k)| i ^ k).collect();
                assert!(out == expected, "{what}");
            }
        }
    }

    /// `seal` from and into buffers at every offset from a 64-byte line
    /// (private pieces follow the output's, `Pass::line_offset`), in
    /// pieces of several sizes: the crate's bytes.
    #[test]
    fn every_output_line_offset_matches_the_crate() {
        let (key, nonce) = ([5u8; 32], [6u8; 24]);
        for piece in [64 << 10, 0] {
            PIECE_OVERRIDE.store(piece, Ordering::Relaxed);
            for (i, offset) in (0..64).step_by(3).chain([16, 32, 48]).enumerate() {
                let len = [DIRECT_MAX + 1, 200_000 + i, (1 << 20) + 3 * i][i % 3];
                let aad = bytes(i + 40, [0, 8, 1017][i % 3]);
                let pt = bytes(i + 20, len);
                let expected = ChaCha20Blake3::new(key).encrypt(&nonce, &pt, &aad);
                let keys = Secrets::derived(&key, &nonce);
                let mut backing = vec![0u8; len + 128];
                let start = (backing.as_ptr() as usize).wrapping_neg() % 64 + offset;
                let out = &mut backing[start..start + len];
                let what = format!("output {offset} past a line, length {len}, piece {piece}");
                assert_eq!(seal_with(&keys, &aad, Source::Separate(&pt), out, &Workers::ONE).map(|tag| tag.to_vec()), Ok(expected[len..].to_vec()), "{what}");
                assert!(out[..] == expected[..len], "{what}");
            }
        }
        PIECE_OVERRIDE.store(0, Ordering::Relaxed);
    }

    /// Pools are capped at the usable cores, so tests/abi.rs sees only this
    /// machine's split; here the one pass runs with many leaf counts (any
    /// thread count gives a valid BLAKE3 tree) and associated data lengths
    /// around the chunk and piece alignment, against the crate.
    #[test]
    fn every_split_matches_the_crate() {
        // Around both passes' piece boundaries (seal's and open's pieces).
        let (seal, open) = (seal_piece_len(), open_piece_len());
        let mut lengths = vec![512, 1500, open - 1, open + 1, seal - 1, seal + 1, 2 * seal + 5, (1 << 20) + 33, 3 * (1 << 20) + 777];
        lengths.sort();
        lengths.dedup(); // the pieces may be the same size
        for (i, &len) in lengths.iter().enumerate() {
            for aad_len in [0, 7, 1016, 1017, open - 8, seal - 5, 2 * seal + 1000] {
                let key: [u8; 32] = bytes(i, 32).try_into().unwrap();
                let nonce: [u8; 24] = bytes(i + 1, 24).try_into().unwrap();
                let (pt, aad) = (bytes(i + 2, len), bytes(i + 3, aad_len));
                let expected = ChaCha20Blake3::new(key).encrypt(&nonce, &pt, &aad);
                let keys = Secrets::derived(&key, &nonce);
                let tag: [u8; 32] = expected[len..].try_into().unwrap();
                for threads in [1, 2, 3, 5, 8, 64] {
                    let what = format!("length {len}, aad {aad_len}, {threads} threads");
                    let mut out = vec![0u8; len];
                    assert_eq!(seal_with(&keys, &aad, Source::Separate(&pt), &mut out, &Workers::split_only(threads)), Ok(tag), "{what}");
                    assert!(out == expected[..len], "{what}");
                    let mut buf = pt.clone();
                    assert_eq!(seal_with(&keys, &aad, Source::InPlace, &mut buf, &Workers::split_only(threads)), Ok(tag), "{what}");
                    assert!(buf == out, "{what}");
                    for output in [Output::Private, Output::Shared] {
                        let mut plain = vec![0xAA; len];
                        open_with(&keys, &aad, &tag, Source::Separate(&out), &mut plain, output, &Workers::split_only(threads)).unwrap();
                        assert!(plain == pt, "{what} {output:?}");
                        let mut bad = tag;
                        bad[5] ^= 1;
                        let mut plain = vec![0xAA; len];
                        let failed = open_with(&keys, &aad, &bad, Source::Separate(&out), &mut plain, output, &Workers::split_only(threads));
                        assert_eq!(failed, Err(Error::DecryptionFailed));
                        let left = if output == Output::Private { 0 } else { 0xAA };
                        assert!(plain.iter().all(|&b| b == left), "{what} {output:?}: output after failure");
                    }
                    let mut buf = out.clone();
                    open_with(&keys, &aad, &tag, Source::InPlace, &mut buf, Output::Shared, &Workers::split_only(threads)).unwrap();
                    assert!(buf == pt, "{what} in place");
                }
            }
        }
    }
}
