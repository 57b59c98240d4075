//! The raw ChaCha stream cipher family:
//! ChaCha20/12/8 with the nonce length choosing the variant.
//!
//! | nonce    | variant                          | block counter               |
//! |----------|----------------------------------|-----------------------------|
//! | 8 bytes  | original (DJB) ChaCha            | 64-bit: 2^64 blocks         |
//! | 12 bytes | RFC 8439                         | 32-bit: 2^32 blocks         |
//! | 24 bytes | XChaCha (draft-irtf-cfrg-xchacha)| 32-bit: 2^32 blocks         |
//!
//! The counter never wraps: a call that would run past the last block fails
//! with `Error::CounterOverflow` and processes nothing.
//!
//! Engine: the RustCrypto `chacha20` crate's `ChaChaCore<R8|R12|R20, Ietf>`
//! (its AVX-512/AVX2/SSE2/NEON backends, picked at run time) for every
//! variant, since it is the one core the crate exposes for all three round
//! counts; on CPUs with AVX2 or AVX-512, whole runs of 16 blocks go to
//! cb3's own kernels in `wide` instead (the same bytes, checked against this
//! core). `blocks` is cb3's own function for the AEAD's one to four blocks,
//! `xor` the XOR that every keystream pass ends in. The two other layouts map onto it exactly:
//!
//! * 8-byte nonce: the DJB state is `counter_lo, counter_hi, nonce[0..8]`,
//!   which is the IETF state with the 96-bit nonce `le32(counter_hi) || nonce`.
//!   Data is processed in runs that never cross a 2^32-block boundary, and
//!   the core is re-keyed with the next `counter_hi` at each boundary (once
//!   per 256 GiB of keystream).
//! * 24-byte nonce: the key becomes `HChaCha(key, nonce[0..16])` (with the
//!   same number of rounds, as libsodium and the crate's `XChaCha12/8` do)
//!   and the IETF nonce `0^4 || nonce[16..24]`.
//!
//! The crate's `StreamCipherCoreWrapper` is not used: it reserves the last
//! 32-bit counter value, while RFC 8439 (and pycryptodome) allow it, and it
//! has no 64-bit counter for 12 or 8 rounds. Positions are byte offsets in
//! the keystream counted from block 0: a cipher created with counter `c`
//! starts at position `64 * c`.

use std::cmp::min;

use chacha20::cipher::array::Array;
use chacha20::cipher::consts::U64;
use chacha20::cipher::inout::InOutBuf;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};
use chacha20::variants::Ietf;
use chacha20::{hchacha, ChaChaCore, Rounds, R12, R20, R8};
use zeroize::Zeroize;

pub mod blocks;
pub mod wide;
mod xor;

pub use xor::{xor_keystream, Source};
use crate::error::{Error, Result};

/// The ChaCha block size in bytes: block `c` starts at keystream byte `64 * c`.
pub const BLOCK_SIZE: usize = 64;

pub const BLOCK: u128 = BLOCK_SIZE as u128;
pub const SEGMENT_BLOCKS: u128 = 1 << 32;

/// Keystream blocks generated at once for short calls and partial blocks.
/// The crate's AVX-512 backend makes 3 to 16 blocks with 512-bit vectors in
/// about the time of one, while its 1- and 2-block paths (128/256-bit
/// vectors) are slower than 4 blocks. So one to four blocks are generated
/// as four and kept, and bulk runs never end in a 1- or 2-block tail.
pub const CACHE_BLOCKS: usize = 4;
/// The backend's parallel width and its slow tail lengths (1 and 2 blocks).
pub const PAR_BLOCKS: usize = 16;
pub const SLOW_TAIL: usize = 3;
const _: () = assert!(CACHE_BLOCKS >= SLOW_TAIL && CACHE_BLOCKS < PAR_BLOCKS);

/// The keystream of one variant and round count.
pub struct Keystream<R: Rounds> {
    /// The key the core runs with (the HChaCha subkey for XChaCha).
    key: [u8; 32],
    /// The IETF nonce words; with `wide`, bytes 0..4 hold the high counter
    /// word that the core is currently keyed with.
    nonce: [u8; 12],
    /// 64-bit block counter (8-byte nonce) rather than 32-bit.
    wide: bool,
    core: ChaChaCore<R, Ietf>,
    /// Absolute keystream byte position of the next byte.
    pub pos: u128,
    /// One past the last keystream byte: 64 * 2^32 or 64 * 2^64.
    end: u128,
    /// Keystream of blocks `cached_from .. cached_from + cached`, kept for
    /// short calls and partial blocks (see [`CACHE_BLOCKS`]).
    cache: [Array<u8, U64>; CACHE_BLOCKS],
    cached_from: u128,
    cached: usize,
}

impl<R: Rounds> Drop for Keystream<R> {
    fn drop(&mut self) {
        // The core wipes its own state (the crate's zeroize feature).
        self.key.zeroize();
        self.nonce.zeroize();
        for block in &mut self.cache {
            block.as_mut_slice().zeroize();
        }
    }
}

impl<R: Rounds> Keystream<R> {
    pub fn new(key: &[u8; 32], nonce: &[u8], counter: u64) -> Result<Self> {
        let mut ietf_nonce = [0u8; 12];
        let (key, wide) = match nonce.len() {
            8 => {
                ietf_nonce[..4].copy_from_slice(&((counter >> 32) as u32).to_le_bytes());
                ietf_nonce[4..].copy_from_slice(nonce);
                (*key, true)
            }
            12 => {
                ietf_nonce.copy_from_slice(nonce);
                (*key, false)
            }
            24 => {
                let input: &[u8; 16] = nonce[..16].try_into().expect("16 bytes");
                let mut subkey = hchacha::<R>(key.into(), input.into());
                ietf_nonce[4..].copy_from_slice(&nonce[16..]);
                let key: [u8; 32] = subkey.as_slice().try_into().expect("32 bytes");
                subkey.as_mut_slice().zeroize();
                (key, false)
            }
            _ => return Err(Error::InvalidNonceLength),
        };
        let blocks: u128 = if wide { 1 << 64 } else { SEGMENT_BLOCKS };
        if u128::from(counter) >= blocks {
            return Err(Error::InvalidCounter);
        }
        let core = ChaChaCore::<R, Ietf>::new(&key.into(), &ietf_nonce.into());
        Ok(Keystream {
            key,
            nonce: ietf_nonce,
            wide,
            core,
            pos: u128::from(counter) * BLOCK,
            end: blocks * BLOCK,
            cache: Default::default(),
            cached_from: 0,
            cached: 0,
        })
    }

    /// Points the core at `block` (below the end), re-keying it when a wide
    /// counter moves to another 2^32-block segment.
    fn load(&mut self, block: u128) {
        if self.wide {
            let high = ((block >> 32) as u32).to_le_bytes();
            if self.nonce[..4] != high {
                self.nonce[..4].copy_from_slice(&high);
                self.core = ChaChaCore::<R, Ietf>::new(&self.key.into(), &self.nonce.into());
            }
        }
        self.core.set_block_pos(block as u32);
    }

    /// Moves to `position` (at most the end). Keystream is generated lazily
    /// by the next call.
    pub fn seek(&mut self, position: u128) -> Result<()> {
        if position > self.end {
            return Err(Error::InvalidPosition);
        }
        self.pos = position;
        Ok(())
    }

    /// Blocks left in the current 2^32-block segment (before a wide counter
    /// changes its high word, or a 32-bit counter ends).
    fn segment_left(block: u128) -> u128 {
        SEGMENT_BLOCKS - (block % SEGMENT_BLOCKS)
    }

    /// XORs the keystream into `out` (from `source`), advancing the position.
    pub fn apply(&mut self, source: Source<'_>, out: &mut [u8]) -> Result<()> {
        let n = out.len();
        if n as u128 > self.end - self.pos {
            return Err(Error::CounterOverflow);
        }
        let mut done = 0;
        while done < n {
            let cache_start = self.cached_from * BLOCK;
            let cache_end = cache_start + self.cached as u128 * BLOCK;
            if (cache_start..cache_end).contains(&self.pos) {
                // Keystream already generated for this position.
                let at = (self.pos - cache_start) as usize;
                let (index, offset) = (at / BLOCK_SIZE, at % BLOCK_SIZE);
                let take = min(n - done, BLOCK_SIZE - offset);
                xor(&source, out, done, &self.cache[index][offset..offset + take]);
                done += take;
                self.pos += take as u128;
                continue;
            }
            let block = self.pos / BLOCK;
            let whole = ((n - done) / BLOCK_SIZE) as u128;
            let mut count = min(whole, Self::segment_left(block)) as usize;
            if count > PAR_BLOCKS && count % PAR_BLOCKS < SLOW_TAIL {
                count -= count % PAR_BLOCKS; // leave the 1-2 block tail to the cache
            }
            if self.pos % BLOCK == 0 && count >= CACHE_BLOCKS {
                // Whole blocks straight from the core, in one pass (whole
                // runs of 16 by `wide` where it runs on this CPU).
                let bytes = count * BLOCK_SIZE;
                self.load(block);
                let input = source.input(done..done + bytes);
                let nonce = wide::Nonce::Ietf(&self.nonce);
                let units = wide::xor(&self.key, nonce, (block % SEGMENT_BLOCKS) as u64, R::COUNT, input, &mut out[done..done + bytes]);
                if units > 0 {
                    done += units;
                    self.pos += units as u128;
                    continue;
                }
                let (out_blocks, _) = Array::slice_as_chunks_mut(&mut out[done..done + bytes]);
                match source {
                    Source::InPlace => self.core.apply_keystream_blocks(out_blocks),
                    Source::Separate(input) => {
                        let (in_blocks, _) = Array::slice_as_chunks(&input[done..done + bytes]);
                        let blocks = InOutBuf::new(in_blocks, out_blocks).expect("equal lengths");
                        self.core.apply_keystream_blocks_inout(blocks);
                    }
                }
                done += bytes;
                self.pos += bytes as u128;
                continue;
            }
            // A partial block or a short run: generate CACHE_BLOCKS blocks
            // (never past the segment, whose next block needs another key).
            let blocks = min(CACHE_BLOCKS as u128, Self::segment_left(block)) as usize;
            self.load(block);
            self.core.write_keystream_blocks(&mut self.cache[..blocks]);
            self.cached_from = block;
            self.cached = blocks;
        }
        Ok(())
    }
}

/// `out[at..at + ks.len()] = data ^ ks`, the data coming from `source`.
pub fn xor(source: &Source<'_>, out: &mut [u8], at: usize, ks: &[u8]) {
    xor_keystream(&mut out[at..at + ks.len()], source.input(at..at + ks.len()), ks);
}

/// HChaCha20 of `key` and a 16-byte `nonce` into `out` (the XChaCha
/// subkey derivation); the intermediate copy is wiped.
pub fn hchacha20(key: &[u8; 32], nonce: &[u8; 16], out: &mut [u8; 32]) {
    let mut subkey = hchacha::<R20>(key.into(), nonce.into());
    out.copy_from_slice(&subkey);
    subkey.as_mut_slice().zeroize();
    crate::wipe::scrub_stack();
}

/// A keystream of any of the three round counts.
pub enum Engine {
    R8(Keystream<R8>),
    R12(Keystream<R12>),
    R20(Keystream<R20>),
}

macro_rules! dispatch {
    ($engine:expr, $ks:ident => $body:expr) => {
        match $engine {
            Engine::R8($ks) => $body,
            Engine::R12($ks) => $body,
            Engine::R20($ks) => $body,
        }
    };
}

impl Engine {
    /// A keystream with `rounds` (20, 12 or 8) at block `counter`.
    pub fn new(rounds: u32, key: &[u8; 32], nonce: &[u8], counter: u64) -> Result<Self> {
        Ok(match rounds {
            20 => Engine::R20(Keystream::new(key, nonce, counter)?),
            12 => Engine::R12(Keystream::new(key, nonce, counter)?),
            8 => Engine::R8(Keystream::new(key, nonce, counter)?),
            _ => return Err(Error::InvalidRounds),
        })
    }

    /// `out = data XOR keystream`, advancing the position (see `Keystream::apply`).
    pub fn apply(&mut self, source: Source<'_>, out: &mut [u8]) -> Result<()> {
        dispatch!(self, ks => ks.apply(source, out))
    }

    /// Moves to keystream byte `position`.
    pub fn seek(&mut self, position: u128) -> Result<()> {
        dispatch!(self, ks => ks.seek(position))
    }

    /// The keystream byte position of the next byte.
    pub fn position(&self) -> u128 {
        dispatch!(self, ks => ks.pos)
    }
}
