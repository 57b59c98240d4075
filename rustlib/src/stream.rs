//! `cb3_stream_*`: a sequence of ChaCha20-BLAKE3 messages under one key with
//! counter nonces, the same schedule as the Ruby gem `chacha20blake3`.
//!
//! Message `i` uses the nonce `nonce[0..16] || le64(le64(nonce[16..24]) + i mod 2^64)`,
//! so message 0 uses the given nonce unchanged. Each call holds the stream's
//! lock for the whole operation: two threads can never encrypt under the same
//! index. Decryption advances only after the tag verifies. The index stops at
//! 2^64 - 1: from then on every call fails with `CB3_RESULT_STREAM_EXHAUSTED`
//! instead of reusing a nonce.
//!
//! What a stream does not do: it does not detect that trailing messages were
//! dropped (there is no end-of-stream marker).

use std::sync::{Mutex, MutexGuard};

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::aead::{open_combined, seal_combined};
use crate::buffers::{fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, Cb3Result};

#[derive(Zeroize, ZeroizeOnDrop)]
struct StreamKey {
    key: [u8; 32],
    nonce: [u8; 24],
}

/// A message stream. Opaque to C; create with `cb3_stream_new`, release with
/// `cb3_stream_free`. Safe to share between threads (calls are serialised).
pub struct cb3_stream {
    secret: StreamKey,
    /// The index of the next message.
    index: Mutex<u64>,
}

impl cb3_stream {
    fn lock(&self) -> MutexGuard<'_, u64> {
        // A poisoned lock only means a panic elsewhere; the index is still valid.
        self.index.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The nonce of message `index`.
    pub fn nonce_for(&self, index: u64) -> [u8; 24] {
        let mut nonce = self.secret.nonce;
        let base = u64::from_le_bytes(nonce[16..].try_into().expect("8 bytes"));
        nonce[16..].copy_from_slice(&base.wrapping_add(index).to_le_bytes());
        nonce
    }

    /// Runs `operation` with the nonce of the current message and advances
    /// the index only if it succeeds.
    fn next<F>(&self, operation: F) -> Cb3Result<usize>
    where
        F: FnOnce(&[u8; 32], &[u8; 24]) -> Cb3Result<usize>,
    {
        let mut index = self.lock();
        if *index == u64::MAX {
            return Err(cb3_result::StreamExhausted);
        }
        let nonce = self.nonce_for(*index);
        let written = operation(&self.secret.key, &nonce)?;
        *index += 1;
        Ok(written)
    }
}

unsafe fn stream_ref<'a>(ptr: *const cb3_stream) -> Cb3Result<&'a cb3_stream> {
    ptr.as_ref().ok_or(cb3_result::NullParameter)
}

fn nonce_raw(nonce: &[u8; 24]) -> Raw {
    Raw { ptr: nonce.as_ptr(), len: nonce.len() }
}

/// Creates a stream from a 32-byte key and a 24-byte starting nonce, at
/// message index `message_index` (0 for a new stream; a receiver that saved
/// its position may resume there). Never resume two streams at the same index
/// with the same key and nonce. `message_index` must be below 2^64 - 1
/// (`CB3_RESULT_INVALID_ARGUMENT`). On failure `*stream_out` is not written.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_new(
    key: *const u8,
    key_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    message_index: u64,
    stream_out: *mut *mut cb3_stream,
) -> cb3_result {
    ffi_boundary(|| {
        let key = fixed::<32>(key, key_len, cb3_result::InvalidKeyLength)?;
        let nonce = fixed::<24>(nonce, nonce_len, cb3_result::InvalidNonceLength)?;
        if stream_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        if message_index == u64::MAX {
            return Err(cb3_result::InvalidArgument);
        }
        let stream = cb3_stream { secret: StreamKey { key: *key, nonce: *nonce }, index: Mutex::new(message_index) };
        *stream_out = Box::into_raw(Box::new(stream));
        Ok(())
    })
}

/// Wipes and frees a stream. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_free(stream: *mut cb3_stream) {
    ffi_boundary_or((), || {
        if !stream.is_null() {
            drop(Box::from_raw(stream));
        }
    })
}

/// The index of the next message (the number of messages encrypted or
/// successfully decrypted since index 0). 0 if `stream` is NULL.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_message_index(stream: *const cb3_stream) -> u64 {
    ffi_boundary_or(0, || stream.as_ref().map_or(0, |stream| *stream.lock()))
}

/// Encrypts the next message: writes `ciphertext || tag` to `out` exactly as
/// `cb3_aead_encrypt` does with this message's nonce, then advances the index.
/// Buffer rules are those of `cb3_aead_encrypt`. On failure nothing is written
/// and the index does not move.
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
        let stream = stream_ref(stream)?;
        let data = Raw::new(plaintext, plaintext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        let written = stream.next(|key, nonce| seal_combined(key, nonce_raw(nonce), data, aad, out, out_len))?;
        store(out_n, written);
        Ok(())
    })
}

/// Verifies and decrypts the next message (`ciphertext || tag`) into `out`
/// as `cb3_aead_decrypt` does with this message's nonce. The index advances
/// only when the tag verifies; a failure leaves `out` and the index unchanged,
/// so the right message can still be decrypted afterwards.
#[no_mangle]
pub unsafe extern "C" fn cb3_stream_decrypt(
    stream: *const cb3_stream,
    ciphertext: *const u8,
    ciphertext_len: usize,
    aad: *const u8,
    aad_len: usize,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    ffi_boundary(|| {
        let stream = stream_ref(stream)?;
        let input = Raw::new(ciphertext, ciphertext_len)?;
        let aad = Raw::new(aad, aad_len)?;
        let written = stream.next(|key, nonce| open_combined(key, nonce_raw(nonce), input, aad, out, out_len))?;
        store(out_n, written);
        Ok(())
    })
}
