//! The counter-nonce stream (C ABI: `ffi::stream`): ChaCha20-BLAKE3 messages under one key with
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
//!
//! A stream works only in the process that created it: in a `fork()` child
//! every call fails with `CB3_RESULT_FORKED` (see `ffi/object.rs`), since parent
//! and child would otherwise encrypt under the same message nonces.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use zeroize::{Zeroize, ZeroizeOnDrop};



use crate::ffi::errors::{cb3_result, Cb3Result};
use crate::ffi::object::{self};

#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct StreamKey {
    pub(crate) key: [u8; 32],
    pub(crate) nonce: [u8; 24],
}

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
    pub(crate) secret: StreamKey,
    /// The index of the next message.
    pub(crate) index: Mutex<u64>,
    /// A copy of `index`, written under the lock, read without it (so that
    /// reading the index never waits, not even in a forked child).
    pub(crate) index_seen: AtomicU64,
}

impl cb3_stream {
    pub(crate) fn lock(&self) -> MutexGuard<'_, u64> {
        object::lock(&self.index)
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
    pub(crate) fn next<F>(&self, operation: F) -> Cb3Result<usize>
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
        self.index_seen.store(*index, Ordering::Relaxed);
        Ok(written)
    }
}

