//! The counter-nonce stream: ChaCha20-BLAKE3 messages under one key with
//! counter nonces, the same schedule as the Ruby gem `chacha20blake3`.
//!
//! Message `i` uses the nonce `nonce[0..16] || le64(le64(nonce[16..24]) + i mod 2^64)`,
//! so message 0 uses the given nonce unchanged. An operation advances the
//! index only when it succeeds (decryption: after the tag verifies). The
//! index stops at 2^64 - 1: from then on every operation fails with
//! `Error::StreamExhausted` instead of reusing a nonce.
//!
//! What a stream does not do: it does not detect that trailing messages were
//! dropped (there is no end-of-stream marker).

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::error::{Error, Result};

#[derive(Zeroize, ZeroizeOnDrop)]
struct StreamKey {
    key: [u8; 32],
    nonce: [u8; 24],
}

/// A sequence of ChaCha20-BLAKE3 messages under one key with counter nonces.
/// The key is wiped when it is dropped.
pub struct Stream {
    secret: StreamKey,
    /// The index of the next message.
    index: u64,
}

impl Stream {
    /// A stream whose next message has index `index`.
    pub fn new(key: &[u8; 32], nonce: &[u8; 24], index: u64) -> Self {
        Stream { secret: StreamKey { key: *key, nonce: *nonce }, index }
    }

    /// The index of the next message.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The nonce of message `index`.
    pub fn nonce_for(&self, index: u64) -> [u8; 24] {
        let mut nonce = self.secret.nonce;
        let base = u64::from_le_bytes(nonce[16..].try_into().expect("8 bytes"));
        nonce[16..].copy_from_slice(&base.wrapping_add(index).to_le_bytes());
        nonce
    }

    /// Runs `operation` with the key and the nonce of the current message and
    /// advances the index only if it succeeds.
    pub fn next<F>(&mut self, operation: F) -> Result<usize>
    where
        F: FnOnce(&[u8; 32], &[u8; 24]) -> Result<usize>,
    {
        if self.index == u64::MAX {
            return Err(Error::StreamExhausted);
        }
        let nonce = self.nonce_for(self.index);
        let written = operation(&self.secret.key, &nonce)?;
        self.index += 1;
        Ok(written)
    }
}
