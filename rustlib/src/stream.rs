//! The C ABI of the counter-nonce stream: the `cb3_stream_*` functions.

use std::ffi::c_uint;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use cb3_core::stream::Stream;

use crate::aead::{open_combined, output_from_mode, seal_combined};
use crate::buffers::{fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, ffi_boundary_with_key, Cb3Result};
use crate::object::{self, Object};

/// A sequence of ChaCha20-BLAKE3 messages under one key with counter nonces.
///
/// Opaque: create with `cb3_stream_new`, release with `cb3_stream_free`
/// (which wipes the key). Each call holds the stream's internal lock for the
/// whole operation, so a stream may be shared between threads: two calls
/// never use the same message index, and the order in which concurrent calls
/// take indices is the order in which they get the lock. A stream must not
/// be freed while another thread uses it, and works only in the process that
/// created it (`CB3_RESULT_FORKED` in a `fork()` child).
pub struct cb3_stream {
    stream: Mutex<Stream>,
    /// A copy of the stream's index, written under the lock, read without it
    /// (so that reading the index never waits, not even in a forked child).
    index_seen: AtomicU64,
}

impl cb3_stream {
    /// Runs `operation` with the current message's key and nonce under the
    /// lock, advancing the index only if it succeeds.
    fn next<F>(&self, operation: F) -> Cb3Result<usize>
    where
        F: FnOnce(&[u8; 32], &[u8; 24]) -> Cb3Result<usize>,
    {
        let mut stream = object::lock(&self.stream);
        let mut failure = None;
        let done = stream.next(|key, nonce| {
            operation(key, nonce).map_err(|code| {
                failure = Some(code);
                cb3_core::Error::InvalidArgument
            })
        });
        self.index_seen.store(stream.index(), Ordering::Relaxed);
        match (done, failure) {
            (Ok(written), _) => Ok(written),
            (Err(_), Some(code)) => Err(code),
            (Err(error), None) => Err(error.into()),
        }
    }
}

impl Object for cb3_stream {
    const MAGIC: u64 = u64::from_le_bytes(*b"cb3:strm");
    const NAME: &'static str = "cb3_stream";
    const FORK_BOUND: bool = true;
}

fn nonce_raw(nonce: &[u8; 24]) -> Raw {
    Raw { ptr: nonce.as_ptr(), len: nonce.len() }
}

/// Creates a stream: messages under one key with counter nonces, starting
/// at message index `message_index`.
///
/// Message `i` is encrypted exactly as `cb3_aead_encrypt` does with the
/// nonce `nonce[0..16] || le64(le64(nonce[16..24]) + i mod 2^64)`, so
/// message 0 uses `nonce` unchanged.
///
/// - `key`, `key_len`: exactly `CB3_KEY_SIZE` (32) bytes. Not NULL. Copied.
/// - `nonce`, `nonce_len`: the starting nonce, exactly `CB3_NONCE_SIZE` (24)
///   bytes. Not NULL. Copied.
/// - `message_index`: the index of the first message: 0 for a new stream; a
///   receiver that saved its position may resume there. At most
///   `UINT64_MAX - 1` (a stream at `UINT64_MAX - 1` has one message left).
///   Never run two senders with the same key, nonce and index.
/// - `stream_out`: receives the new object. Not NULL. Release the object
///   with `cb3_stream_free`.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_NULL_PARAMETER`: `key`, `nonce` or `stream_out` is NULL.
/// - `CB3_RESULT_INVALID_KEY_LENGTH`: `key_len != CB3_KEY_SIZE`.
/// - `CB3_RESULT_INVALID_NONCE_LENGTH`: `nonce_len != CB3_NONCE_SIZE`.
/// - `CB3_RESULT_INVALID_ARGUMENT`: `message_index == UINT64_MAX`.
///
/// On failure `*stream_out` is not written and nothing is allocated.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_new(
    key: *const u8,
    key_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    message_index: u64,
    stream_out: *mut *mut cb3_stream,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        // SAFETY (every raw pointer of an exported function): the C caller's
        // contract in cb3.h, each pointer valid for its length for the call.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        // SAFETY: as for the key.
        let nonce = unsafe { fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength) }?;
        if stream_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        if message_index == u64::MAX {
            return Err(cb3_result::InvalidArgument);
        }
        let stream = cb3_stream {
            stream: Mutex::new(Stream::new(key, nonce, message_index)),
            index_seen: AtomicU64::new(message_index),
        };
        // SAFETY: `stream_out` is not NULL and valid for a write (the contract).
        unsafe { object::give(stream, stream_out) }
    })
}

/// Wipes the key and nonce and frees a stream made by `cb3_stream_new`.
///
/// `stream` may be NULL (then nothing happens). After this call `stream`
/// must not be used again, by this thread or any other; freeing it while
/// another thread is still inside a call with it is undefined behaviour.
/// Freeing it in a `fork()` child is allowed (and wipes the child's copy).
///
/// Caller bugs are caught where possible: freeing a stream twice (or a
/// pointer that is not a live stream) prints a message to stderr and aborts
/// the process; any other call on a freed stream returns
/// `CB3_RESULT_INVALID_ARGUMENT` (unless the memory was meanwhile reused for
/// a new stream).
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_free(stream: *mut cb3_stream) {
    // SAFETY: the contract above: NULL or a pointer from cb3_stream_new that no other thread uses.
    ffi_boundary_or((), || unsafe { object::free(stream) })
}

/// The index of the next message: the starting index plus the number of
/// messages encrypted (or successfully decrypted) so far. `UINT64_MAX` once
/// the stream is exhausted. Returns 0 if `stream` is NULL or not a live
/// stream. Never waits for the stream's lock: while another thread is
/// inside a call it gives the index before that call. In a `fork()` child it
/// gives the index at the fork.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_message_index(stream: *const cb3_stream) -> u64 {
    // SAFETY: the C caller's contract (a cb3_stream pointer, freed or not, or NULL).
    // (get_with_owner: this read is allowed in a fork() child too.)
    ffi_boundary_or(0, || unsafe { object::get_with_owner(stream) }.map_or(0, |(stream, _)| stream.index_seen.load(Ordering::Relaxed)))
}

/// Encrypts the next message: writes `ciphertext || tag` (exactly
/// `plaintext_len + CB3_TAG_SIZE` bytes) to `out` as `cb3_aead_encrypt`
/// does with this message's nonce, then advances the message index by one.
///
/// - `stream`: a stream from `cb3_stream_new`. Not NULL.
/// - `plaintext`, `plaintext_len`, `aad`, `aad_len`, `out`, `out_len`,
///   `out_n`: as for `cb3_aead_encrypt` (same NULL, size and overlap rules;
///   `out` may start exactly at `plaintext`; `out_n` may be NULL).
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_STREAM_EXHAUSTED`: the index reached `UINT64_MAX`; every
///   later call fails the same way rather than reuse a nonce.
/// - `CB3_RESULT_FORKED`: the stream was created in another process (this
///   is a `fork()` child): create a new stream with a fresh nonce here.
/// - `CB3_RESULT_NULL_PARAMETER`: `stream`, or a pointer that may not be
///   NULL, is NULL.
/// - `CB3_RESULT_INVALID_ARGUMENT`: `stream` is not a live stream (freed).
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `out_len < plaintext_len + CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `out` overlaps an input other than
///   exactly in place.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`.
///
/// On failure nothing is written (`out` and `*out_n` are left as they were)
/// and the message index does not move.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_encrypt(
    stream: *const cb3_stream,
    plaintext: *const u8,
    plaintext_len: usize,
    aad: *const u8,
    aad_len: usize,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_stream pointer or NULL).
        let stream = unsafe { object::get(stream) }?;
        let data = Raw::new(plaintext, plaintext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        // SAFETY: the C caller's contract: each buffer valid for its length;
        // seal_combined checks NULLs, sizes and overlaps.
        let written =
            stream.next(|key, nonce| unsafe { seal_combined(key, nonce_raw(nonce), data, aad, out, out_len, None) })?;
        // SAFETY: `out_n` is NULL or valid for a write (the contract).
        unsafe { store(out_n, written) };
        Ok(())
    })
}

/// Verifies and decrypts the next message (`ciphertext || tag`) into `out`
/// as `cb3_aead_decrypt` does with this message's nonce, then advances the
/// message index by one.
///
/// - `stream`: a stream from `cb3_stream_new`. Not NULL.
/// - `ciphertext`, `ciphertext_len`, `aad`, `aad_len`, `output_mode`, `out`,
///   `out_len`, `out_n`: as for `cb3_aead_decrypt` (same NULL, size and
///   overlap rules; `out` may start exactly at `ciphertext`; `out_n` may be
///   NULL; `output_mode` a `cb3_output_mode`).
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_DECRYPTION_FAILED`: the tag does not match this message's
///   nonce (a wrong, reordered, replayed or modified message), or
///   `ciphertext_len < CB3_TAG_SIZE`.
/// - `CB3_RESULT_STREAM_EXHAUSTED`: the index reached `UINT64_MAX`.
/// - `CB3_RESULT_FORKED`: the stream was created in another process (this
///   is a `fork()` child): create a new stream with a fresh nonce here.
/// - `CB3_RESULT_NULL_PARAMETER`: `stream`, or a pointer that may not be
///   NULL, is NULL.
/// - `CB3_RESULT_INVALID_ARGUMENT`: `stream` is not a live stream (freed).
/// - `CB3_RESULT_INSUFFICIENT_SIZE`: `out_len < ciphertext_len - CB3_TAG_SIZE`.
/// - `CB3_RESULT_OVERLAPPING_BUFFERS`: `out` overlaps an input other than
///   exactly in place.
/// - `CB3_RESULT_INVALID_ARGUMENT`: a length is above `PTRDIFF_MAX`, or
///   `output_mode` is not a `cb3_output_mode`.
/// - `CB3_RESULT_OUT_OF_MEMORY`: the private copy could not be allocated.
///
/// On failure the message index does not move, so the right message can
/// still be decrypted afterwards; with `CB3_OUTPUT_MODE_SHARED` nothing is
/// written (`out` and `*out_n` are left as they were), with
/// `CB3_OUTPUT_MODE_PRIVATE` `out` may have been wiped (see `cb3_output_mode`).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cb3_stream_decrypt(
    stream: *const cb3_stream,
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
        // SAFETY: the C caller's contract (a cb3_stream pointer or NULL).
        let stream = unsafe { object::get(stream) }?;
        let input = Raw::new(ciphertext, ciphertext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        // SAFETY: the C caller's contract: each buffer valid for its length;
        // open_combined checks NULLs, sizes and overlaps.
        let written = stream.next(|key, nonce| unsafe {
            open_combined(key, nonce_raw(nonce), input, aad, out, out_len, output, None)
        })?;
        // SAFETY: `out_n` is NULL or valid for a write (the contract).
        unsafe { store(out_n, written) };
        Ok(())
    })
}
