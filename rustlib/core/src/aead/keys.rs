//! The message keys: the construction's key derivation, into `Secrets`,
//! which holds every secret of one call and wipes it when dropped, also
//! when the call unwinds.

use std::mem::MaybeUninit;
use std::ptr;

use chacha20::cipher::KeyIvInit;
use chacha20::ChaCha20LegacyCore;

/// The per-message secrets (of both paths; the direct path also keeps its
/// MAC state and last keystream here), in one place so that one drop wipes
/// them all.
#[repr(C, align(64))]
pub(super) struct Secrets {
    /// The KDF's output: enc_key || auth_key || enc_nonce, then 56 unused
    /// extended-output bytes.
    pub(super) kdf: [u8; 128],
    /// The master key as words, if it was not aligned
    /// (`blake3_compressions::key_words`).
    key: [u32; 8],
    /// The auth key as words, on a big-endian CPU.
    pub(super) auth: [u32; 8],
    /// The MAC's chaining value (one-chunk MAC inputs).
    pub(super) cv: [u32; 8],
    /// Keystream for the message's last partial kilobyte (more than
    /// `chacha20::blocks::MAX_BLOCKS` blocks), left uninitialized until then,
    /// so that short messages, which never use it, never zero its 1 KiB.
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
    /// literal (a constant) LLVM stores it with one `memset` of the whole
    /// struct, the uninitialized kilobyte included.
    pub(super) fn new() -> Self {
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
    pub(super) fn keystream_blocks(&mut self, count: usize) -> &mut [chacha20::cipher::Block<ChaCha20LegacyCore>] {
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
    pub(super) fn derived(key: &[u8; 32], nonce: &[u8; 24]) -> Self {
        let mut secrets = Secrets::new();
        secrets.derive(key, nonce);
        secrets
    }

    /// Derives the message keys: the crate's KDF, the first 72 bytes of
    /// BLAKE3-keyed(key, nonce).
    pub(super) fn derive(&mut self, key: &[u8; 32], nonce: &[u8; 24]) {
        let words = crate::blake3_compressions::key_words(key, &mut self.key);
        crate::blake3_compressions::keyed_xof_24(words, nonce, &mut self.kdf);
    }

    pub(super) fn auth_key(&self) -> &[u8; 32] {
        self.kdf[32..64].try_into().expect("32 bytes")
    }

    /// The encryption key and nonce (bytes 0..32 and 64..72 of the KDF output).
    fn enc_key_nonce(&self) -> (&[u8; 32], &[u8; 8]) {
        (self.kdf[..32].try_into().expect("32 bytes"), self.kdf[64..72].try_into().expect("8 bytes"))
    }

    /// The keystream cipher at block 0.
    pub(super) fn cipher(&self) -> ChaCha20LegacyCore {
        let (enc_key, enc_nonce) = self.enc_key_nonce();
        ChaCha20LegacyCore::new(enc_key.into(), enc_nonce.into())
    }

    /// `out = input XOR keystream` from block `counter` on, at most
    /// `chacha20::blocks::MAX_BLOCKS` blocks.
    pub(super) fn xor_blocks(&self, counter: u64, input: Option<&[u8]>, out: &mut [u8]) {
        let (enc_key, enc_nonce) = self.enc_key_nonce();
        crate::chacha20::blocks::xor(enc_key, enc_nonce, counter, input, out);
    }

    /// `out = input XOR keystream` from block `counter` on for the whole
    /// kilobytes at the front of `out` where `chacha20::wide` runs on this
    /// CPU, and `copy` the same if given; returns the bytes done (0
    /// elsewhere).
    pub(super) fn xor_wide(&self, counter: u64, input: Option<&[u8]>, out: &mut [u8], copy: Option<&mut [u8]>) -> usize {
        let (enc_key, enc_nonce) = self.enc_key_nonce();
        crate::chacha20::wide::xor_copying(enc_key, crate::chacha20::wide::Nonce::Djb(enc_nonce), counter, 10, input, out, copy)
    }
}
