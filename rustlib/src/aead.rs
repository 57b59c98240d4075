//! The C ABI of the AEAD: the `cb3_aead` object and its `cb3_aead_*` functions.

use std::ffi::c_uint;
use std::ptr;
use std::sync::Arc;

use zeroize::Zeroizing;

use cb3_core::aead::{open, seal, Output};
use cb3_core::chacha20::Source;

use crate::buffers::{data_and_output, disjoint, fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, ffi_boundary_with_key, Cb3Result};
use cb3_core::parallel::{self, LazyPool};

/// Key size of ChaCha20-BLAKE3 in bytes: `key_len` must equal it.
pub const CB3_KEY_SIZE: usize = 32;
const _: () = assert!(CB3_KEY_SIZE == cb3_core::aead::KEY_SIZE);

/// Nonce size of ChaCha20-BLAKE3 in bytes: `nonce_len` must equal it.
/// Random nonces are safe (a collision is expected only after about 2^96
/// messages under one key).
pub const CB3_NONCE_SIZE: usize = 24;
const _: () = assert!(CB3_NONCE_SIZE == cb3_core::aead::NONCE_SIZE);

/// Tag size of ChaCha20-BLAKE3 in bytes: a ciphertext is this much longer
/// than its plaintext; input `tag_len` must equal it, output tag buffers must
/// hold at least this much.
pub const CB3_TAG_SIZE: usize = 32;
const _: () = assert!(CB3_TAG_SIZE == cb3_core::aead::TAG_SIZE);

/// A ChaCha20-BLAKE3 cipher: a copy of one 32-byte key.
///
/// Opaque: create with `cb3_aead_new`, release with `cb3_aead_free` (which
/// wipes the key). Immutable after creation, so one `cb3_aead` may be used
/// by any number of threads at once without locking, as long as none of
/// them frees it while others use it.
pub struct cb3_aead {
    key: Zeroizing<[u8; 32]>,
    /// The pool for messages of at least 1 MiB (None: the calling thread),
    /// shared with every cipher of the same effective thread count.
    pool: Option<Arc<LazyPool>>,
}

impl cb3_aead {
    pub fn new(key: &[u8; 32], max_threads: usize) -> Self {
        cb3_aead { key: Zeroizing::new(*key), pool: parallel::shared_pool(max_threads) }
    }

    pub fn key(&self) -> &[u8; 32] {
        &self.key
    }

    pub fn pool(&self) -> Option<&LazyPool> {
        self.pool.as_deref()
    }
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
    pool: Option<&LazyPool>,
) -> Cb3Result<usize> {
    // SAFETY: the caller's contract: `nonce` is a valid pair.
    let nonce_bytes = unsafe { fixed::<24>(nonce.ptr, nonce.len, cb3_result::InvalidNonceLength) }?;
    let total = data.len.checked_add(CB3_TAG_SIZE).ok_or(cb3_result::InvalidArgument)?;
    Raw::output(out, out_len, total)?;
    let body = Raw::new(out, data.len)?;
    let tag_out = Raw::new(out.wrapping_add(data.len), CB3_TAG_SIZE)?;
    disjoint(&tag_out, &[data, aad, nonce])?;
    // SAFETY: the caller's contract: `out` is valid for `out_len >= total`
    // bytes, so for `body` and `tag_out`; `data` and `aad` are valid pairs.
    let (source, body) = unsafe { data_and_output(data, body, &[aad, nonce]) }?;
    // SAFETY: as above (`aad` a valid pair, not overlapping `body`).
    let tag = seal(key, nonce_bytes, unsafe { aad.as_slice() }, source, body, pool)?;
    // SAFETY: `tag_out` is CB3_TAG_SIZE writable bytes inside `out`,
    // disjoint from every input (checked above).
    unsafe { ptr::copy_nonoverlapping(tag.as_ptr(), tag_out.ptr as *mut u8, CB3_TAG_SIZE) };
    Ok(total)
}

/// Verifies and decrypts `ciphertext || tag` into `out`; returns the
/// plaintext length. Shared by `cb3_aead_decrypt` and `cb3_stream_decrypt`.
///
/// # Safety
/// See `buffers`: valid `(ptr, len)` pairs.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn open_combined(
    key: &[u8; 32],
    nonce: Raw,
    input: Raw,
    aad: Raw,
    out: *mut u8,
    out_len: usize,
    output: Output,
    pool: Option<&LazyPool>,
) -> Cb3Result<usize> {
    // SAFETY: the caller's contract: `nonce` is a valid pair.
    let nonce_bytes = unsafe { fixed::<24>(nonce.ptr, nonce.len, cb3_result::InvalidNonceLength) }?;
    if input.len < CB3_TAG_SIZE {
        return Err(cb3_result::DecryptionFailed);
    }
    let body_len = input.len - CB3_TAG_SIZE;
    let out = Raw::output(out, out_len, body_len)?;
    let data = Raw::new(input.ptr, body_len)?;
    let tag = Raw::new(input.ptr.wrapping_add(body_len), CB3_TAG_SIZE)?;
    // SAFETY: the caller's contract: `input` and `aad` are valid pairs and
    // `out` holds `out_len >= body_len` writable bytes.
    let (source, out) = unsafe { data_and_output(data, out, &[tag, aad, nonce]) }?;
    // SAFETY: `tag` is the last CB3_TAG_SIZE bytes of `input` (a valid pair),
    // disjoint from `out`; `open` copies it before anything else.
    let (aad, tag) = unsafe { (aad.as_slice(), &*(tag.ptr as *const [u8; 32])) };
    open(key, nonce_bytes, aad, tag, source, out, output, pool)?;
    Ok(body_len)
}

/// The cipher and the nonce that every exported AEAD call starts with,
/// checked in that order, and the nonce's `Raw` view for the overlap checks.
///
/// # Safety
/// `aead` is NULL or came from `cb3_aead_new`; `nonce` is NULL or valid for
/// `nonce_len` bytes.
unsafe fn cipher_and_nonce<'a>(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
) -> Cb3Result<(&'a cb3_aead, &'a [u8; 24], Raw)> {
    // SAFETY: the caller's contract.
    let aead = unsafe { crate::object::get(aead) }?;
    // SAFETY: the caller's contract.
    let nonce = unsafe { fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength) }?;
    Ok((aead, nonce, Raw::new(nonce.as_ptr(), 24)?))
}

/// A decryption's tag, exactly `CB3_TAG_SIZE` bytes, and its `Raw` view.
///
/// # Safety
/// `tag` is NULL or valid for `tag_len` bytes.
unsafe fn tag_arg<'a>(tag: *const u8, tag_len: usize) -> Cb3Result<(&'a [u8; 32], Raw)> {
    // SAFETY: the caller's contract.
    let tag = unsafe { fixed::<32>(tag, tag_len, cb3_result::InvalidTagLength) }?;
    Ok((tag, Raw::new(tag.as_ptr(), 32)?))
}

/// Who can see a decryption's output buffer while the call runs: the
/// `output_mode` argument of `cb3_aead_decrypt`, `cb3_aead_decrypt_detached` and
/// `cb3_stream_decrypt`. Any other value is refused with
/// `CB3_RESULT_INVALID_ARGUMENT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_output_mode {
    /// The caller's memory, which other threads or processes may read or
    /// write during the call. Every ciphertext byte is read once, into a
    /// private copy that is MACed and then decrypted into the output
    /// (messages whose MAC input `aad || 8 || ct || 8` is at most 64 KiB are
    /// staged on the stack or in a per-thread buffer, longer ones in a copy
    /// as long as the message, freed before returning): plaintext reaches
    /// the output only after the tag has verified, and what another thread
    /// or process writes into the ciphertext during the call either fails the
    /// tag or is not used. On failure the output is left as it was.
    Shared = 0,
    /// Memory that nothing else reads or writes during the call (the caller
    /// has just allocated it and not yet shared it), in one pass: each piece
    /// of the ciphertext is copied into a private piece buffer, MACed there
    /// and decrypted from there into the output, without the message-long
    /// copy. It writes unverified plaintext into the output, so on failure
    /// the output is wiped (all zeros, for messages whose MAC input is over
    /// 64 KiB; shorter ones are verified first and the output is left as it
    /// was) and the caller must discard it. The Python package uses it for
    /// the bytes objects it returns.
    Private = 1,
}

/// The engine's `Output` for a `cb3_output_mode` value from C. C may pass any
/// integer where an enum is expected, and a Rust enum holding an undeclared
/// value is undefined behaviour, so the mode arrives as an integer.
pub(crate) fn output_from_mode(code: c_uint) -> Cb3Result<Output> {
    match code {
        c if c == cb3_output_mode::Shared as c_uint => Ok(Output::Shared),
        c if c == cb3_output_mode::Private as c_uint => Ok(Output::Private),
        _ => Err(cb3_result::InvalidArgument),
    }
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
    // SAFETY: this function's contract is that one's.
    unsafe { cb3_aead_new_with_threads(key, key_len, 1, aead_out) }
}

/// Like `cb3_aead_new`, for a cipher that splits each message of at least
/// 1 MiB across up to `max_threads` threads (0 = one per core; 1 = the
/// calling thread only, as `cb3_aead_new`). The ChaCha keystream is split at
/// 64-byte block boundaries and the BLAKE3 MAC is hashed as a tree, so the
/// output is byte-for-byte the same for every `max_threads`. `max_threads`
/// is capped at the cores the process may use; the threads belong to a pool
/// per (capped) thread count, shared with every cipher and hasher of that
/// count, created on first use and ended when the last of them is freed.
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
    ffi_boundary_with_key(|| {
        // SAFETY: the C caller's contract: `key` is NULL or valid for `key_len` bytes.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        // SAFETY: the C caller's contract: `aead_out` is NULL or valid for a write.
        unsafe { crate::object::give(cb3_aead::new(key, max_threads), aead_out) }
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
    // SAFETY: the contract above: NULL or a pointer from cb3_aead_new that
    // no other thread uses any more.
    ffi_boundary_or((), || unsafe { crate::object::free(aead) })
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
        // SAFETY: the C caller's contract (see cipher_and_nonce).
        let (aead, _, nonce) = unsafe { cipher_and_nonce(aead, nonce, nonce_len) }?;
        let (plaintext, aad) = (Raw::new(plaintext, plaintext_len)?, Raw::new(aad, aad_len)?);
        // SAFETY: the C caller's contract: every pointer is valid for its
        // length (`out` for `out_len` writable bytes).
        let written = unsafe { seal_combined(aead.key(), nonce, plaintext, aad, out, out_len, aead.pool()) }?;
        // SAFETY: the C caller's contract: `out_n` is NULL or valid for a write.
        unsafe { store(out_n, written) };
        Ok(())
    })
}

/// Verifies and decrypts `ciphertext || tag` (as written by
/// `cb3_aead_encrypt`) into `out`: exactly `ciphertext_len - CB3_TAG_SIZE`
/// bytes. Unverified plaintext is never released. With `CB3_OUTPUT_MODE_SHARED`
/// the tag is checked (in constant time) over the whole input before a
/// single byte of `out` is written: every ciphertext byte is read once, into
/// a private copy that is MACed and then decrypted into `out` (messages
/// whose MAC input `aad || 8 || ct || 8` is at most 64 KiB are staged on the
/// stack or in a per-thread buffer, longer ones in a copy as long as the
/// message, freed before returning), so what another thread or process
/// writes into `ciphertext` during the call either fails the tag or is not
/// used. For a freshly allocated `out`, `CB3_OUTPUT_MODE_PRIVATE` skips the copy
/// and wipes `out` on failure (see `cb3_output_mode`).
///
/// - `aead`: a cipher from `cb3_aead_new`. Not NULL.
/// - `nonce`, `nonce_len`: exactly `CB3_NONCE_SIZE` (24) bytes. Not NULL.
/// - `ciphertext`, `ciphertext_len`: the ciphertext followed by its tag.
///   NULL only if `ciphertext_len` is 0 (which then fails to decrypt).
/// - `aad`, `aad_len`: the associated data given to the encryption. NULL
///   only if `aad_len` is 0.
/// - `output_mode`: a `cb3_output_mode` value, who can see `out` during the call:
///   `CB3_OUTPUT_MODE_SHARED` (any memory), or `CB3_OUTPUT_MODE_PRIVATE` (memory no
///   one else uses: one pass, and `out` is wiped on failure).
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
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`, or
///   `output_mode` is not a `cb3_output_mode`.
/// - `CB3_RESULT_OUT_OF_MEMORY`: the private copy could not be allocated.
///
/// On failure with `CB3_OUTPUT_MODE_SHARED` nothing is written: `out` and
/// `*out_n` are left as they were (in place, the buffer still holds the
/// ciphertext); with `CB3_OUTPUT_MODE_PRIVATE`, see `cb3_output_mode`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cb3_aead_decrypt(
    aead: *const cb3_aead,
    nonce: *const u8,
    nonce_len: usize,
    ciphertext: *const u8,
    ciphertext_len: usize,
    aad: *const u8,
    aad_len: usize,
    output_mode: c_uint,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    ffi_boundary(|| {
        let output = output_from_mode(output_mode)?;
        // SAFETY: the C caller's contract (see cipher_and_nonce).
        let (aead, _, nonce) = unsafe { cipher_and_nonce(aead, nonce, nonce_len) }?;
        let (ciphertext, aad) = (Raw::new(ciphertext, ciphertext_len)?, Raw::new(aad, aad_len)?);
        // SAFETY: the C caller's contract: every pointer is valid for its
        // length (`out` for `out_len` writable bytes).
        let written = unsafe { open_combined(aead.key(), nonce, ciphertext, aad, out, out_len, output, aead.pool()) }?;
        // SAFETY: the C caller's contract: `out_n` is NULL or valid for a write.
        unsafe { store(out_n, written) };
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
        // SAFETY: the C caller's contract (see cipher_and_nonce).
        let (aead, nonce, nonce_raw) = unsafe { cipher_and_nonce(aead, nonce, nonce_len) }?;
        let data = Raw::new(plaintext, plaintext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        let body = Raw::output(ciphertext_out, ciphertext_out_len, plaintext_len)?;
        let tag_raw = Raw::output(tag_out, tag_out_len, CB3_TAG_SIZE)?;
        disjoint(&tag_raw, &[data, aad, nonce_raw, body])?;
        // SAFETY: the C caller's contract: every pointer valid for its length.
        let (source, body) = unsafe { data_and_output(data, body, &[aad, nonce_raw]) }?;
        // SAFETY: as above; `aad` does not overlap `body` (checked).
        let tag = seal(aead.key(), nonce, unsafe { aad.as_slice() }, source, body, aead.pool())?;
        // SAFETY: `tag_out` holds at least CB3_TAG_SIZE writable bytes (checked
        // above) and overlaps nothing else.
        unsafe { ptr::copy_nonoverlapping(tag.as_ptr(), tag_out, CB3_TAG_SIZE) };
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
/// - `output_mode`: a `cb3_output_mode` value, who can see `plaintext_out` during the
///   call (see `cb3_aead_decrypt`).
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
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`, or
///   `output_mode` is not a `cb3_output_mode`.
/// - `CB3_RESULT_OUT_OF_MEMORY`: the private copy could not be allocated.
///
/// On failure with `CB3_OUTPUT_MODE_SHARED` nothing is written: `plaintext_out`
/// is left as it was; with `CB3_OUTPUT_MODE_PRIVATE`, see `cb3_output_mode`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
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
    output_mode: c_uint,
    plaintext_out: *mut u8,
    plaintext_out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let output = output_from_mode(output_mode)?;
        // SAFETY: the C caller's contract (see cipher_and_nonce).
        let (aead, nonce, nonce_raw) = unsafe { cipher_and_nonce(aead, nonce, nonce_len) }?;
        // SAFETY: the C caller's contract: `tag` valid for `tag_len` bytes.
        let (tag, tag_raw) = unsafe { tag_arg(tag, tag_len) }?;
        let data = Raw::new(ciphertext, ciphertext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        let out = Raw::output(plaintext_out, plaintext_out_len, ciphertext_len)?;
        // SAFETY: the C caller's contract: every pointer valid for its length.
        let (source, out) = unsafe { data_and_output(data, out, &[tag_raw, aad, nonce_raw]) }?;
        // SAFETY: as above; `aad` does not overlap `out` (checked).
        Ok(open(aead.key(), nonce, unsafe { aad.as_slice() }, tag, source, out, output, aead.pool())?)
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
        // SAFETY: the C caller's contract (see cipher_and_nonce).
        let (aead, nonce, nonce_raw) = unsafe { cipher_and_nonce(aead, nonce, nonce_len) }?;
        let buf = Raw::new(buf, buf_len)?;
        let aad = Raw::new(aad, aad_len)?;
        let tag_raw = Raw::output(tag_out, tag_out_len, CB3_TAG_SIZE)?;
        disjoint(&tag_raw, &[buf, aad, nonce_raw])?;
        disjoint(&buf, &[aad, nonce_raw])?;
        // SAFETY: the C caller's contract: `buf` and `aad` valid for their
        // lengths, and disjoint (checked above).
        let (aad, buf) = unsafe { (aad.as_slice(), buf.as_mut_slice()) };
        let tag = seal(aead.key(), nonce, aad, Source::InPlace, buf, aead.pool())?;
        // SAFETY: `tag_out` holds at least CB3_TAG_SIZE writable bytes (checked
        // above) and overlaps nothing else.
        unsafe { ptr::copy_nonoverlapping(tag.as_ptr(), tag_out, CB3_TAG_SIZE) };
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
        // SAFETY: the C caller's contract (see cipher_and_nonce).
        let (aead, nonce, nonce_raw) = unsafe { cipher_and_nonce(aead, nonce, nonce_len) }?;
        // SAFETY: the C caller's contract: `tag` valid for `tag_len` bytes.
        let (tag, tag_raw) = unsafe { tag_arg(tag, tag_len) }?;
        let buf = Raw::new(buf, buf_len)?;
        let aad = Raw::new(aad, aad_len)?;
        disjoint(&buf, &[tag_raw, aad, nonce_raw])?;
        // SAFETY: the C caller's contract: `buf` and `aad` valid for their
        // lengths, and disjoint (checked above).
        let (aad, buf) = unsafe { (aad.as_slice(), buf.as_mut_slice()) };
        Ok(open(aead.key(), nonce, aad, tag, Source::InPlace, buf, Output::Shared, aead.pool())?)
    })
}
