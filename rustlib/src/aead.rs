//! ChaCha20-BLAKE3, the committing AEAD of the `chacha20-blake3` crate, and
//! its C ABI (`cb3_aead_*`).
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

use std::ptr;

use std::sync::atomic::{AtomicBool, Ordering};

use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use chacha20::ChaCha20Legacy;
use chacha20_blake3::ChaCha20Blake3;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::buffers::{disjoint, fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, Cb3Result};
use crate::parallel;

/// Key size of ChaCha20-BLAKE3 in bytes: `key_len` must equal it.
pub const CB3_KEY_SIZE: usize = 32;
/// Nonce size of ChaCha20-BLAKE3 in bytes: `nonce_len` must equal it.
/// Random nonces are safe (a collision is expected only after about 2^96
/// messages under one key).
pub const CB3_NONCE_SIZE: usize = 24;
/// Tag size of ChaCha20-BLAKE3 in bytes: a ciphertext is this much longer
/// than its plaintext; input `tag_len` must equal it, output tag buffers must
/// hold at least this much.
pub const CB3_TAG_SIZE: usize = 32;

/// Bytes per fused copy + XOR step: a multiple of the ChaCha block (64 B),
/// small enough to stay in L1/L2 between the copy and the XOR.
const PIECE: usize = 64 * 1024;

/// The per-message keys derived from (key, nonce). Wiped on drop.
#[derive(Zeroize, ZeroizeOnDrop)]
struct MessageKeys {
    enc_key: [u8; 32],
    auth_key: [u8; 32],
    enc_nonce: [u8; 8],
}

impl MessageKeys {
    /// Not inlined, so that its frame and its callees' lie below the caller's
    /// and `scrub_stack` reaches them.
    #[inline(never)]
    fn derive(key: &[u8; 32], nonce: &[u8; 24]) -> Self {
        let mut out = Zeroizing::new([0u8; 72]);
        blake3::Hasher::new_keyed(key)
            .update(nonce)
            .finalize_xof()
            .fill(&mut out[..]);
        let mut keys = MessageKeys { enc_key: [0; 32], auth_key: [0; 32], enc_nonce: [0; 8] };
        keys.enc_key.copy_from_slice(&out[..32]);
        keys.auth_key.copy_from_slice(&out[32..64]);
        keys.enc_nonce.copy_from_slice(&out[64..]);
        keys
    }

    fn keystream(&self) -> ChaCha20Legacy {
        ChaCha20Legacy::new(&self.enc_key.into(), &self.enc_nonce.into())
    }

    /// The MAC state after the associated data and its length.
    fn mac(&self, aad: &[u8]) -> blake3::Hasher {
        let mut mac = blake3::Hasher::new_keyed(&self.auth_key);
        mac.update(aad);
        mac.update(&(aad.len() as u64).to_le_bytes());
        mac
    }
}

/// Zeroes the `SCRUB_BYTES` of stack below the caller's frame: the dead
/// frames of the call it just made that used the cipher key.
///
/// Keying BLAKE3 with the cipher key (the per-message KDF, ours and the
/// chacha20-blake3 crate's) leaves copies of the key in those frames: blake3's
/// `Hasher` and `OutputReader` hold the key as their chaining value and do
/// not wipe themselves on drop, the crate does not wipe them, and blake3's
/// internals and moves leave more temporaries that no destructor reaches.
/// They stayed until later calls happened to overwrite them (measured with
/// tests/test_secrets.py: 1 to 8 copies of the key were still in the process
/// after the cipher or stream was freed; on the multi-threaded path the
/// calling thread only waits for the pool, so none were overwritten). One
/// memset of 4 KiB covers those frames (the deepest copy was found 2 KiB
/// down); `black_box` keeps it from being removed as a dead store. Cost:
/// about 40 ns per call.
#[inline(never)]
fn scrub_stack() {
    let mut area = [0u8; SCRUB_BYTES];
    // SAFETY: `area` is a local array of SCRUB_BYTES bytes.
    unsafe { std::ptr::write_bytes(area.as_mut_ptr(), 0, SCRUB_BYTES) };
    std::hint::black_box(&mut area);
}
const SCRUB_BYTES: usize = 4096;

fn finish_mac(mut mac: blake3::Hasher, ciphertext_len: usize) -> [u8; 32] {
    mac.update(&(ciphertext_len as u64).to_le_bytes());
    *mac.finalize().as_bytes()
}

/// Where the data of an operation comes from: already in the output buffer
/// (in place) or in a separate, non-overlapping input.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    InPlace,
    Separate(&'a [u8]),
}

/// Messages shorter than this go through the `chacha20-blake3` crate's own
/// `*_in_place_detached` (its scalar ChaCha path has the lowest fixed cost);
/// longer ones through the pipeline below (AVX-512/AVX2 ChaCha, no extra pass).
/// Both give identical bytes; `tests/abi.rs` checks every length around it.
pub(crate) const SMALL_MESSAGE: usize = 512;

fn reference(key: &[u8; 32]) -> ChaCha20Blake3 {
    ChaCha20Blake3::new(*key)
}

/// Copies `input` into `out` and XORs the keystream from byte `offset` of
/// the message on, piece by piece, so each piece is still in cache when it
/// is XORed (one pass, not copy + XOR).
fn xor_segment(keys: &MessageKeys, offset: usize, input: Option<&[u8]>, out: &mut [u8]) -> Cb3Result<()> {
    let mut stream = keys.keystream();
    stream.try_seek(offset as u64).map_err(|_| cb3_result::InvalidArgument)?;
    for (index, piece) in out.chunks_mut(PIECE).enumerate() {
        if let Some(input) = input {
            let start = index * PIECE;
            piece.copy_from_slice(&input[start..start + piece.len()]);
        }
        apply_keystream(&mut stream, piece)?;
    }
    Ok(())
}

/// The keystream unit the SIMD backends produce cheapest: four 64-byte
/// blocks. (One or two blocks cost the AVX-512 backend 2-5x a four-block run.)
const KEYSTREAM_RUN: usize = 256;

/// XORs the keystream into `data`, which must end the stream's use: a tail
/// shorter than a four-block run is XORed from one generated run.
fn apply_keystream(stream: &mut ChaCha20Legacy, data: &mut [u8]) -> Cb3Result<()> {
    // Only fails past 2^64 blocks, which no in-memory message reaches.
    let full = data.len() / KEYSTREAM_RUN * KEYSTREAM_RUN;
    let (head, tail) = data.split_at_mut(full);
    stream.try_apply_keystream(head).map_err(|_| cb3_result::InvalidArgument)?;
    if !tail.is_empty() {
        let mut run = Zeroizing::new([0u8; KEYSTREAM_RUN]);
        stream.try_apply_keystream(&mut run[..]).map_err(|_| cb3_result::InvalidArgument)?;
        tail.iter_mut().zip(run.iter()).for_each(|(byte, key)| *byte ^= key);
    }
    Ok(())
}

/// XORs the whole message into `out`, split over `threads` segments.
fn xor_into(keys: &MessageKeys, source: Source<'_>, out: &mut [u8], threads: usize) -> Cb3Result<()> {
    let input_at = |start: usize, len: usize| match source {
        Source::InPlace => None,
        Source::Separate(input) => Some(&input[start..start + len]),
    };
    if threads <= 1 {
        return xor_segment(keys, 0, input_at(0, out.len()), out);
    }
    let segment = parallel::segment_len(out.len(), threads);
    let failed = AtomicBool::new(false);
    rayon_core::scope(|scope| {
        for (index, part) in out.chunks_mut(segment).enumerate() {
            let (failed, input) = (&failed, input_at(index * segment, part.len()));
            scope.spawn(move |_| {
                if xor_segment(keys, index * segment, input, part).is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
            });
        }
    });
    if failed.load(Ordering::Relaxed) {
        return Err(cb3_result::InvalidArgument);
    }
    Ok(())
}

/// Feeds `data` to the MAC: in one call (BLAKE3 hashes 16 chunks in parallel
/// only when fed large aligned spans), on the pool's threads if `threads > 1`.
fn mac_update(mac: &mut blake3::Hasher, data: &[u8], threads: usize) {
    if threads > 1 {
        mac.update_rayon(data);
    } else {
        mac.update(data);
    }
}

/// One thread encrypts in pieces of this many bytes, XORing each piece and
/// feeding it to the MAC while it is still in L2: a large message then
/// crosses memory once (read the plaintext, write the ciphertext) instead of
/// being read back for the MAC. Large enough that BLAKE3 still hashes most of
/// each piece 16 chunks at a time despite the unaligned start (the MAC input
/// begins with the associated data).
const FUSED_PIECE: usize = 1024 * 1024;

fn seal_fused(keys: &MessageKeys, aad: &[u8], source: Source<'_>, out: &mut [u8]) -> Cb3Result<[u8; 32]> {
    let mut mac = keys.mac(aad);
    for (index, piece) in out.chunks_mut(FUSED_PIECE).enumerate() {
        let start = index * FUSED_PIECE;
        let input = match source {
            Source::InPlace => None,
            Source::Separate(input) => Some(&input[start..start + piece.len()]),
        };
        xor_segment(keys, start, input, piece)?;
        mac.update(piece);
    }
    Ok(finish_mac(mac, out.len()))
}

/// Encrypts into `out` (same length as the data) and returns the tag.
///
/// `max_threads` (0 = every core) applies to messages of at least
/// `parallel::PARALLEL_MIN` bytes; the output does not depend on it.
pub fn seal(
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    source: Source<'_>,
    out: &mut [u8],
    max_threads: usize,
) -> Cb3Result<[u8; 32]> {
    if out.len() < SMALL_MESSAGE {
        if let Source::Separate(input) = source {
            out.copy_from_slice(input);
        }
        let tag = reference(key).encrypt_in_place_detached(nonce, out, aad);
        scrub_stack();
        return Ok(tag);
    }
    let keys = MessageKeys::derive(key, nonce);
    scrub_stack();
    parallel::install(max_threads, out.len(), |threads| {
        if threads <= 1 {
            return seal_fused(&keys, aad, source, out);
        }
        xor_into(&keys, source, out, threads)?;
        let mut mac = keys.mac(aad);
        mac_update(&mut mac, out, threads);
        Ok(finish_mac(mac, out.len()))
    })
}

/// Verifies `tag` over the ciphertext, then (and only then) decrypts it into
/// `out`. On failure `out` is untouched.
pub fn open(
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    tag: &[u8; 32],
    source: Source<'_>,
    out: &mut [u8],
    max_threads: usize,
) -> Cb3Result<()> {
    if out.len() < SMALL_MESSAGE {
        // The crate decrypts in place; use a scratch copy so that `out` is
        // written only after the tag has verified.
        let mut scratch = [0u8; SMALL_MESSAGE];
        let buf = &mut scratch[..out.len()];
        match source {
            Source::InPlace => buf.copy_from_slice(out),
            Source::Separate(input) => buf.copy_from_slice(input),
        }
        let verified = reference(key).decrypt_in_place_detached(nonce, buf, tag, aad);
        scrub_stack();
        if verified.is_ok() {
            out.copy_from_slice(buf);
        }
        buf.zeroize();
        return verified.map_err(|_| cb3_result::DecryptionFailed);
    }
    let keys = MessageKeys::derive(key, nonce);
    scrub_stack();
    parallel::install(max_threads, out.len(), |threads| {
        let mut mac = keys.mac(aad);
        match source {
            Source::InPlace => mac_update(&mut mac, out, threads),
            Source::Separate(input) => mac_update(&mut mac, input, threads),
        };
        let expected = Zeroizing::new(finish_mac(mac, out.len()));
        if !constant_time_eq::constant_time_eq_32(&expected, tag) {
            return Err(cb3_result::DecryptionFailed);
        }
        xor_into(&keys, source, out, threads)
    })
}

/// A ChaCha20-BLAKE3 cipher: a copy of one 32-byte key.
///
/// Opaque: create with `cb3_aead_new`, release with `cb3_aead_free` (which
/// wipes the key). Immutable after creation, so one `cb3_aead` may be used
/// by any number of threads at once without locking, as long as none of
/// them frees it while others use it.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct cb3_aead {
    key: [u8; 32],
    /// Threads for one message of at least 1 MiB (0 = every core).
    max_threads: usize,
}

impl cb3_aead {
    pub fn new(key: [u8; 32], max_threads: usize) -> Self {
        cb3_aead { key, max_threads }
    }

    pub fn key(&self) -> &[u8; 32] {
        &self.key
    }
}

/// Resolves the data input and the output of an out-of-place call: either the
/// output starts exactly at the input (in place) or the two are disjoint.
/// Every other buffer in `others` must be disjoint from the output.
///
/// # Safety
/// See `buffers`: valid `(ptr, len)` pairs.
pub(crate) unsafe fn data_and_output<'a>(data: Raw, out: Raw, others: &[Raw]) -> Cb3Result<(Source<'a>, &'a mut [u8])> {
    disjoint(&out, others)?;
    if data.len > 0 && data.ptr == out.ptr {
        return Ok((Source::InPlace, out.as_mut_slice()));
    }
    disjoint(&out, &[data])?;
    Ok((Source::Separate(data.as_slice()), out.as_mut_slice()))
}

/// `ciphertext || tag` of `data` into `out`; returns the bytes written.
/// Shared by `cb3_aead_encrypt` and `cb3_stream_encrypt`.
///
/// # Safety
/// See `buffers`: valid `(ptr, len)` pairs.
pub(crate) unsafe fn seal_combined(
    key: &[u8; 32],
    nonce: Raw,
    data: Raw,
    aad: Raw,
    out: *mut u8,
    out_len: usize,
    max_threads: usize,
) -> Cb3Result<usize> {
    let nonce_bytes = fixed::<24>(nonce.ptr, nonce.len, cb3_result::InvalidNonceLength)?;
    let total = data.len.checked_add(CB3_TAG_SIZE).ok_or(cb3_result::InvalidArgument)?;
    if out.is_null() {
        return Err(cb3_result::NullParameter);
    }
    if out_len < total {
        return Err(cb3_result::InsufficientSize);
    }
    let body = Raw::new(out, data.len)?;
    let tag_out = Raw::new(out.wrapping_add(data.len), CB3_TAG_SIZE)?;
    disjoint(&tag_out, &[data, aad, nonce])?;
    let (source, body) = data_and_output(data, body, &[aad, nonce])?;
    let tag = seal(key, nonce_bytes, aad.as_slice(), source, body, max_threads)?;
    ptr::copy_nonoverlapping(tag.as_ptr(), tag_out.ptr as *mut u8, CB3_TAG_SIZE);
    Ok(total)
}

/// Verifies and decrypts `ciphertext || tag` into `out`; returns the
/// plaintext length. Shared by `cb3_aead_decrypt` and `cb3_stream_decrypt`.
///
/// # Safety
/// See `buffers`: valid `(ptr, len)` pairs.
pub(crate) unsafe fn open_combined(
    key: &[u8; 32],
    nonce: Raw,
    input: Raw,
    aad: Raw,
    out: *mut u8,
    out_len: usize,
    max_threads: usize,
) -> Cb3Result<usize> {
    let nonce_bytes = fixed::<24>(nonce.ptr, nonce.len, cb3_result::InvalidNonceLength)?;
    if input.len < CB3_TAG_SIZE {
        return Err(cb3_result::DecryptionFailed);
    }
    let body_len = input.len - CB3_TAG_SIZE;
    if out.is_null() && body_len > 0 {
        return Err(cb3_result::NullParameter);
    }
    if out_len < body_len {
        return Err(cb3_result::InsufficientSize);
    }
    let data = Raw::new(input.ptr, body_len)?;
    let tag = Raw::new(input.ptr.wrapping_add(body_len), CB3_TAG_SIZE)?;
    let out = Raw::new(out, body_len)?;
    let (source, out) = data_and_output(data, out, &[tag, aad, nonce])?;
    open(key, nonce_bytes, aad.as_slice(), &*(tag.ptr as *const [u8; 32]), source, out, max_threads)?;
    Ok(body_len)
}

/// The cipher at `ptr`; NULL or a freed cipher are errors (`object.rs`).
///
/// # Safety
/// `ptr` is NULL or came from `cb3_aead_new`.
unsafe fn aead_ref<'a>(ptr: *const cb3_aead) -> Cb3Result<&'a cb3_aead> {
    crate::object::get(ptr)
}

/// Creates a cipher object holding a copy of `key`.
///
/// - `key`, `key_len`: the secret key, exactly `CB3_KEY_SIZE` (32) bytes.
///   Not NULL. It is copied: the caller may wipe its own copy afterwards.
/// - `aead_out`: receives the new object. Not NULL. Release the object
///   with `cb3_aead_free`.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_NULL_PARAMETER`: `key` or `aead_out` is NULL.
/// - `CB3_RESULT_INVALID_KEY_LENGTH`: `key_len != CB3_KEY_SIZE`.
///
/// On failure `*aead_out` is not written and nothing is allocated.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_new(key: *const u8, key_len: usize, aead_out: *mut *mut cb3_aead) -> cb3_result {
    cb3_aead_new_with_threads(key, key_len, 1, aead_out)
}

/// Like `cb3_aead_new`, for a cipher that splits each message of at least
/// 1 MiB across up to `max_threads` threads (0 = one per core; 1 = the
/// calling thread only, as `cb3_aead_new`). The ChaCha keystream is split at
/// 64-byte block boundaries and the BLAKE3 MAC is hashed as a tree, so the
/// output is byte-for-byte the same for every `max_threads`. The threads
/// belong to a pool per thread count that cb3 creates on first use and keeps
/// for the life of the process.
///
/// Returns what `cb3_aead_new` returns. On failure `*aead_out` is not
/// written and nothing is allocated.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_new_with_threads(
    key: *const u8,
    key_len: usize,
    max_threads: usize,
    aead_out: *mut *mut cb3_aead,
) -> cb3_result {
    ffi_boundary(|| {
        let key = fixed::<32>(key, key_len, cb3_result::InvalidKeyLength)?;
        crate::object::give(cb3_aead::new(*key, max_threads), aead_out)
    })
}

/// Wipes the key and frees a cipher made by `cb3_aead_new`.
///
/// `aead` may be NULL (then nothing happens). After this call `aead` must
/// not be used again, by this thread or any other; freeing it while another
/// thread is still inside a call with it is undefined behaviour. Freeing it
/// twice, or freeing a pointer that is not a live cipher, prints a message
/// to stderr and aborts; other calls on a freed cipher return
/// `CB3_RESULT_INVALID_ARGUMENT` (see `cb3_stream_free`).
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_free(aead: *mut cb3_aead) {
    ffi_boundary_or((), || crate::object::free(aead))
}

/// Encrypts `plaintext` and writes `ciphertext || tag` to `out`: exactly
/// `plaintext_len + CB3_TAG_SIZE` bytes.
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
///   Never encrypt two messages under the same key and nonce; random
///   nonces are fine.
/// - `plaintext`, `plaintext_len`: the message. NULL only if `plaintext_len`
///   is 0.
/// - `aad`, `aad_len`: associated data, authenticated but not encrypted.
///   NULL only if `aad_len` is 0.
/// - `out`, `out_len`: the output buffer, `out_len` at least
///   `plaintext_len + CB3_TAG_SIZE`. Not NULL (the tag is always written).
///   `out` may start exactly at `plaintext` (in-place encryption, the buffer
///   having room for the tag); any other overlap with `nonce`, `plaintext`
///   or `aad` is refused.
/// - `out_n`: receives the number of bytes written. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_NULL_PARAMETER`: a pointer above that may not be NULL is.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `out_len < plaintext_len + CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `out` overlaps an input other than
///   exactly in place.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written: `out` and `*out_n` are left as they were.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_encrypt(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    plaintext: *const u8,
    plaintext_len: usize,
    aad: *const u8,
    aad_len: usize,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    ffi_boundary(|| {
        let aead = aead_ref(aead)?;
        fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        let nonce = Raw::new(nonce, nonce_len)?;
        let written = seal_combined(
            aead.key(),
            nonce,
            Raw::new(plaintext, plaintext_len)?,
            Raw::new(aad, aad_len)?,
            out,
            out_len,
            aead.max_threads,
        )?;
        store(out_n, written);
        Ok(())
    })
}

/// Verifies and decrypts `ciphertext || tag` (as written by
/// `cb3_aead_encrypt`) into `out`: exactly `ciphertext_len - CB3_TAG_SIZE`
/// bytes. The tag is checked (in constant time) over the whole input before
/// a single byte of `out` is written, so unverified plaintext is never
/// released.
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
/// - `ciphertext`, `ciphertext_len`: the ciphertext followed by its tag.
///   NULL only if `ciphertext_len` is 0 (which then fails to decrypt).
/// - `aad`, `aad_len`: the associated data given to the encryption. NULL
///   only if `aad_len` is 0.
/// - `out`, `out_len`: the output buffer, `out_len` at least
///   `ciphertext_len - CB3_TAG_SIZE`. NULL only if that is 0. `out` may
///   start exactly at `ciphertext` (in-place decryption); any other overlap
///   with `nonce`, `ciphertext` (including its tag) or `aad` is refused.
/// - `out_n`: receives the plaintext length. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_DECRYPTION_FAILED`: the tag does not match (wrong key,
///   nonce, associated data, or a modified ciphertext or tag), or
///   `ciphertext_len < CB3_TAG_SIZE`.
/// - `CB3_RESULT_NULL_PARAMETER`: a pointer above that may not be NULL is.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `out_len < ciphertext_len - CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `out` overlaps an input other than
///   exactly in place.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written: `out` and `*out_n` are left as they were
/// (in place, the buffer still holds the ciphertext).
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_decrypt(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    ciphertext: *const u8,
    ciphertext_len: usize,
    aad: *const u8,
    aad_len: usize,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    ffi_boundary(|| {
        let aead = aead_ref(aead)?;
        fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        let nonce = Raw::new(nonce, nonce_len)?;
        let written = open_combined(
            aead.key(),
            nonce,
            Raw::new(ciphertext, ciphertext_len)?,
            Raw::new(aad, aad_len)?,
            out,
            out_len,
            aead.max_threads,
        )?;
        store(out_n, written);
        Ok(())
    })
}

/// Encrypts `plaintext` into `ciphertext_out` (exactly `plaintext_len`
/// bytes) and writes the tag to `tag_out` (exactly `CB3_TAG_SIZE` bytes).
/// The same bytes as `cb3_aead_encrypt`, in two buffers.
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
/// - `plaintext`, `plaintext_len`: the message. NULL only if `plaintext_len`
///   is 0.
/// - `aad`, `aad_len`: associated data. NULL only if `aad_len` is 0.
/// - `ciphertext_out`, `ciphertext_out_len`: at least `plaintext_len` bytes.
///   NULL only if `plaintext_len` is 0. May start exactly at `plaintext`
///   (in place); any other overlap with an input is refused.
/// - `tag_out`, `tag_out_len`: at least `CB3_TAG_SIZE` bytes. Not NULL.
///   Must not overlap any input or `ciphertext_out`.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_NULL_PARAMETER`: a pointer above that may not be NULL is.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `ciphertext_out_len < plaintext_len`
///   or `tag_out_len < CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: an output overlaps an input (other
///   than `ciphertext_out` exactly at `plaintext`) or the other output.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written: `ciphertext_out` and `tag_out` are left
/// as they were.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_encrypt_detached(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    plaintext: *const u8,
    plaintext_len: usize,
    aad: *const u8,
    aad_len: usize,
    ciphertext_out: *mut u8,
    ciphertext_out_len: usize,
    tag_out: *mut u8,
    tag_out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let aead = aead_ref(aead)?;
        let nonce = fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        let nonce_raw = Raw::new(nonce.as_ptr(), 24)?;
        let data = Raw::new(plaintext, plaintext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        if (ciphertext_out.is_null() && plaintext_len > 0) || tag_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        if ciphertext_out_len < plaintext_len || tag_out_len < CB3_TAG_SIZE {
            return Err(cb3_result::InsufficientSize);
        }
        let body = Raw::new(ciphertext_out, plaintext_len)?;
        let tag_raw = Raw::new(tag_out, CB3_TAG_SIZE)?;
        disjoint(&tag_raw, &[data, aad, nonce_raw, body])?;
        let (source, body) = data_and_output(data, body, &[aad, nonce_raw])?;
        let tag = seal(aead.key(), nonce, aad.as_slice(), source, body, aead.max_threads)?;
        ptr::copy_nonoverlapping(tag.as_ptr(), tag_out, CB3_TAG_SIZE);
        Ok(())
    })
}

/// Verifies `tag` over `ciphertext` and, only if it matches, decrypts it
/// into `plaintext_out` (exactly `ciphertext_len` bytes). The inverse of
/// `cb3_aead_encrypt_detached`.
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
/// - `ciphertext`, `ciphertext_len`: NULL only if `ciphertext_len` is 0.
/// - `tag`, `tag_len`: exactly `CB3_TAG_SIZE` (32) bytes. Not NULL.
/// - `aad`, `aad_len`: associated data. NULL only if `aad_len` is 0.
/// - `plaintext_out`, `plaintext_out_len`: at least `ciphertext_len` bytes.
///   NULL only if `ciphertext_len` is 0. May start exactly at `ciphertext`
///   (in place); any other overlap with an input is refused.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_DECRYPTION_FAILED`: the tag does not match.
/// - `CB3_RESULT_NULL_PARAMETER`: a pointer above that may not be NULL is.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INVALID_TAG_LENGTH`: `tag_len != CB3_TAG_SIZE`.
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `plaintext_out_len < ciphertext_len`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `plaintext_out` overlaps an input
///   other than exactly in place.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written: `plaintext_out` is left as it was.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_decrypt_detached(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    ciphertext: *const u8,
    ciphertext_len: usize,
    tag: *const u8,
    tag_len: usize,
    aad: *const u8,
    aad_len: usize,
    plaintext_out: *mut u8,
    plaintext_out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let aead = aead_ref(aead)?;
        let nonce = fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        let nonce_raw = Raw::new(nonce.as_ptr(), 24)?;
        let tag = fixed::<32>(tag, tag_len, cb3_result::InvalidTagLength)?;
        let tag_raw = Raw::new(tag.as_ptr(), 32)?;
        let data = Raw::new(ciphertext, ciphertext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        if plaintext_out.is_null() && ciphertext_len > 0 {
            return Err(cb3_result::NullParameter);
        }
        if plaintext_out_len < ciphertext_len {
            return Err(cb3_result::InsufficientSize);
        }
        let out = Raw::new(plaintext_out, ciphertext_len)?;
        let (source, out) = data_and_output(data, out, &[tag_raw, aad, nonce_raw])?;
        open(aead.key(), nonce, aad.as_slice(), tag, source, out, aead.max_threads)
    })
}

/// Encrypts `buf` in place (`buf_len` bytes, the ciphertext is as long as
/// the plaintext) and writes the tag to `tag_out` (exactly `CB3_TAG_SIZE`
/// bytes).
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
/// - `buf`, `buf_len`: the message, replaced by its ciphertext. NULL only if
///   `buf_len` is 0. Must not overlap `nonce` or `aad`.
/// - `aad`, `aad_len`: associated data. NULL only if `aad_len` is 0.
/// - `tag_out`, `tag_out_len`: at least `CB3_TAG_SIZE` bytes. Not NULL.
///   Must not overlap `buf`, `nonce` or `aad`.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_NULL_PARAMETER`: a pointer above that may not be NULL is.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `tag_out_len < CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `buf` or `tag_out` overlaps a buffer
///   it must not.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written: `buf` and `tag_out` are left as they were.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_encrypt_in_place(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    buf: *mut u8,
    buf_len: usize,
    aad: *const u8,
    aad_len: usize,
    tag_out: *mut u8,
    tag_out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let aead = aead_ref(aead)?;
        let nonce = fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        let nonce_raw = Raw::new(nonce.as_ptr(), 24)?;
        let buf = Raw::new(buf, buf_len)?;
        let aad = Raw::new(aad, aad_len)?;
        if tag_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        if tag_out_len < CB3_TAG_SIZE {
            return Err(cb3_result::InsufficientSize);
        }
        let tag_raw = Raw::new(tag_out, CB3_TAG_SIZE)?;
        disjoint(&tag_raw, &[buf, aad, nonce_raw])?;
        disjoint(&buf, &[aad, nonce_raw])?;
        let tag = seal(aead.key(), nonce, aad.as_slice(), Source::InPlace, buf.as_mut_slice(), aead.max_threads)?;
        ptr::copy_nonoverlapping(tag.as_ptr(), tag_out, CB3_TAG_SIZE);
        Ok(())
    })
}

/// Verifies `tag` over `buf` and, only if it matches, decrypts `buf` in
/// place. The inverse of `cb3_aead_encrypt_in_place`.
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
/// - `buf`, `buf_len`: the ciphertext, replaced by the plaintext. NULL only
///   if `buf_len` is 0. Must not overlap `nonce`, `tag` or `aad`.
/// - `tag`, `tag_len`: exactly `CB3_TAG_SIZE` (32) bytes. Not NULL.
/// - `aad`, `aad_len`: associated data. NULL only if `aad_len` is 0.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_DECRYPTION_FAILED`: the tag does not match.
/// - `CB3_RESULT_NULL_PARAMETER`: a pointer above that may not be NULL is.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INVALID_TAG_LENGTH`: `tag_len != CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `buf` overlaps `nonce`, `tag` or `aad`.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written: `buf` still holds the ciphertext.
#[no_mangle]
pub unsafe extern "C" fn cb3_aead_decrypt_in_place(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    buf: *mut u8,
    buf_len: usize,
    tag: *const u8,
    tag_len: usize,
    aad: *const u8,
    aad_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let aead = aead_ref(aead)?;
        let nonce = fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        let nonce_raw = Raw::new(nonce.as_ptr(), 24)?;
        let tag = fixed::<32>(tag, tag_len, cb3_result::InvalidTagLength)?;
        let tag_raw = Raw::new(tag.as_ptr(), 32)?;
        let buf = Raw::new(buf, buf_len)?;
        let aad = Raw::new(aad, aad_len)?;
        disjoint(&buf, &[tag_raw, aad, nonce_raw])?;
        open(aead.key(), nonce, aad.as_slice(), tag, Source::InPlace, buf.as_mut_slice(), aead.max_threads)
    })
}
