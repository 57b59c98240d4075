//! The direct path: messages whose MAC input is at most `DIRECT_MAX` bytes.
//! The data is read once into private memory staged as the MAC input, MACed
//! there by direct compressions (every whole chunk in one wide call) and
//! XORed by cb3's own block function or the wide kernel; `seal` and `open`
//! then zero the stack these frames used (`scrub_direct`).

use std::mem::MaybeUninit;
use std::ops::Range;
use std::ptr;

use chacha20::cipher::array::Array;
use chacha20::cipher::consts::U64;
use chacha20::cipher::inout::InOutBuf;
use chacha20::cipher::StreamCipherCore;

use super::keys::Secrets;
use super::pass::with_scratch;
use super::Tag;
use crate::error::{Error, Result};
use crate::chacha20::{xor_keystream, Source};

/// Direct-path messages whose staged MAC input fits this many bytes stage it
/// on the stack (no thread-local buffer): one BLAKE3 chunk.
const STACK_STAGE: usize = crate::blake3_compressions::CHUNK_LEN;

/// Short messages (`short`) stage in a frame of this size instead.
const SHORT_STAGE: usize = 512;

/// Whether a direct-path message is short: at most
/// `chacha20::blocks::MAX_BLOCKS` blocks (no crate ChaCha frames) and staged
/// in `SHORT_STAGE` bytes, so its calls write less stack and `scrub_direct`
/// zeroes less.
fn short(aad_len: usize, len: usize) -> bool {
    len <= crate::chacha20::blocks::MAX_BLOCKS * 64 && aad_len.saturating_add(len) <= SHORT_STAGE - 16
}

/// The direct path's MAC and XOR over the message keys.
impl Secrets {
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
            // At least four blocks: fewer cost the crate's AVX-512 backend
            // more than four (`keystream::KEYSTREAM_RUN`).
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
pub(super) fn seal_direct(secrets: &mut Secrets, key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], source: Source<'_>, out: &mut [u8]) -> Result<Tag> {
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
pub(super) fn open_direct(secrets: &mut Secrets, key: &[u8; 32], nonce: &[u8; 24], aad: &[u8], tag: &[u8; 32], source: Source<'_>, out: &mut [u8]) -> Result<()> {
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
pub(super) fn scrub_direct(aad_len: usize, len: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aead::tests::bytes;
    use crate::aead::{open, seal, Output, DIRECT_MAX};

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
}
