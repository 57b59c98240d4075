//! The raw ChaCha stream cipher family (`cb3_chacha_*`, `cb3_hchacha20`):
//! ChaCha20/12/8 with the nonce length choosing the variant.
//!
//! | nonce    | variant                          | block counter               |
//! |----------|----------------------------------|-----------------------------|
//! | 8 bytes  | original (DJB) ChaCha            | 64-bit: 2^64 blocks         |
//! | 12 bytes | RFC 8439                         | 32-bit: 2^32 blocks         |
//! | 24 bytes | XChaCha (draft-irtf-cfrg-xchacha)| 32-bit: 2^32 blocks         |
//!
//! The counter never wraps: a call that would run past the last block fails
//! with `CB3_RESULT_COUNTER_OVERFLOW` and processes nothing.
//!
//! Engine: the RustCrypto `chacha20` crate's `ChaChaCore<R8|R12|R20, Ietf>`
//! (its AVX-512/AVX2/SSE2/NEON backends, picked at run time) for every
//! variant, since it is the one core the crate exposes for all three round
//! counts. The two other layouts map onto it exactly:
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
use std::sync::{Mutex, MutexGuard};

use chacha20::cipher::array::Array;
use chacha20::cipher::consts::U64;
use chacha20::cipher::inout::InOutBuf;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};
use chacha20::variants::Ietf;
use chacha20::{hchacha, ChaChaCore, Rounds, R12, R20, R8};
use zeroize::Zeroize;

use crate::buffers::{data_and_output, disjoint, fixed, store, Raw, Source};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, Cb3Result};
use crate::wipe::scrub_stack;
use crate::object::{self, Object};

/// The ChaCha block size in bytes: block `c` starts at keystream byte `64 * c`.
pub const CB3_CHACHA_BLOCK_SIZE: usize = 64;

const BLOCK: u128 = CB3_CHACHA_BLOCK_SIZE as u128;
const SEGMENT_BLOCKS: u128 = 1 << 32;

/// Keystream blocks generated at once for short calls and partial blocks.
/// The crate's AVX-512 backend makes 3 to 16 blocks with 512-bit vectors in
/// about the time of one, while its 1- and 2-block paths (128/256-bit
/// vectors) take 2 to 5 times longer than 4 blocks (measured: ~500 ns for one
/// block, ~140 ns for four, on an AMD EPYC with AVX-512). So one to four
/// blocks are generated as four and kept, and bulk runs never end in a 1- or
/// 2-block tail.
const CACHE_BLOCKS: usize = 4;
/// The backend's parallel width and its slow tail lengths (1 and 2 blocks).
const PAR_BLOCKS: usize = 16;
const SLOW_TAIL: usize = 3;
const _: () = assert!(CACHE_BLOCKS >= SLOW_TAIL && CACHE_BLOCKS < PAR_BLOCKS);

/// The keystream of one variant and round count.
struct Keystream<R: Rounds> {
    /// The key the core runs with (the HChaCha subkey for XChaCha).
    key: [u8; 32],
    /// The IETF nonce words; with `wide`, bytes 0..4 hold the high counter
    /// word that the core is currently keyed with.
    nonce: [u8; 12],
    /// 64-bit block counter (8-byte nonce) rather than 32-bit.
    wide: bool,
    core: ChaChaCore<R, Ietf>,
    /// Absolute keystream byte position of the next byte.
    pos: u128,
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
    fn new(key: &[u8; 32], nonce: &[u8], counter: u64) -> Cb3Result<Self> {
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
            _ => return Err(cb3_result::InvalidNonceLength),
        };
        let blocks: u128 = if wide { 1 << 64 } else { SEGMENT_BLOCKS };
        if u128::from(counter) >= blocks {
            return Err(cb3_result::InvalidCounter);
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
    fn seek(&mut self, position: u128) -> Cb3Result<()> {
        if position > self.end {
            return Err(cb3_result::InvalidPosition);
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
    fn apply(&mut self, source: Source<'_>, out: &mut [u8]) -> Cb3Result<()> {
        let n = out.len();
        if n as u128 > self.end - self.pos {
            return Err(cb3_result::CounterOverflow);
        }
        let mut done = 0;
        while done < n {
            let cache_start = self.cached_from * BLOCK;
            let cache_end = cache_start + self.cached as u128 * BLOCK;
            if (cache_start..cache_end).contains(&self.pos) {
                // Keystream already generated for this position.
                let at = (self.pos - cache_start) as usize;
                let (index, offset) = (at / CB3_CHACHA_BLOCK_SIZE, at % CB3_CHACHA_BLOCK_SIZE);
                let take = min(n - done, CB3_CHACHA_BLOCK_SIZE - offset);
                xor(&source, out, done, &self.cache[index][offset..offset + take]);
                done += take;
                self.pos += take as u128;
                continue;
            }
            let block = self.pos / BLOCK;
            let whole = ((n - done) / CB3_CHACHA_BLOCK_SIZE) as u128;
            let mut count = min(whole, Self::segment_left(block)) as usize;
            if count > PAR_BLOCKS && count % PAR_BLOCKS < SLOW_TAIL {
                count -= count % PAR_BLOCKS; // leave the 1-2 block tail to the cache
            }
            if self.pos % BLOCK == 0 && count >= CACHE_BLOCKS {
                // Whole blocks straight from the core, in one pass.
                let bytes = count * CB3_CHACHA_BLOCK_SIZE;
                self.load(block);
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
fn xor(source: &Source<'_>, out: &mut [u8], at: usize, ks: &[u8]) {
    let input = match source {
        Source::InPlace => None,
        Source::Separate(input) => Some(&input[at..at + ks.len()]),
    };
    crate::buffers::xor_keystream(&mut out[at..at + ks.len()], input, ks);
}

enum Engine {
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

/// A ChaCha keystream position under one key and nonce. Opaque to C; create
/// with `cb3_chacha_new`, release with `cb3_chacha_free`. Every call holds
/// the object's lock for its whole duration, so one object may be shared
/// between threads: each call then gets its own contiguous run of keystream,
/// in an unspecified order. It works only in the process that created it: in
/// a `fork()` child every call fails with `CB3_RESULT_FORKED`, since both
/// processes would otherwise go on with the same keystream.
pub struct cb3_chacha {
    engine: Mutex<Engine>,
}

impl Object for cb3_chacha {
    const MAGIC: u64 = u64::from_le_bytes(*b"cb3:chch");
    const NAME: &'static str = "cb3_chacha";
    const FORK_BOUND: bool = true;
}

impl cb3_chacha {
    fn lock(&self) -> MutexGuard<'_, Engine> {
        object::lock(&self.engine)
    }
}

/// Creates a ChaCha keystream from a 32-byte key, a nonce of 8, 12 or 24
/// bytes (which selects the variant: DJB with a 64-bit block counter, RFC
/// 8439, or XChaCha), the starting block `counter` and the number of
/// `rounds` (20, 12 or 8).
///
/// Errors: `CB3_RESULT_INVALID_KEY_LENGTH`, `CB3_RESULT_INVALID_NONCE_LENGTH`,
/// `CB3_RESULT_INVALID_ROUNDS` for other `rounds`, and
/// `CB3_RESULT_INVALID_COUNTER` for a `counter` of 2^32 or more with a 12- or
/// 24-byte nonce. On failure `*chacha_out` is not
/// written.
#[no_mangle]
pub unsafe extern "C" fn cb3_chacha_new(
    key: *const u8,
    key_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    counter: u64,
    rounds: u32,
    chacha_out: *mut *mut cb3_chacha,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY (every raw pointer of an exported function): the C caller's
        // contract in cb3.h, each pointer valid for its length for the call.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        if nonce.is_null() {
            return Err(cb3_result::NullParameter);
        }
        // SAFETY: the C caller's contract; not NULL.
        let nonce = unsafe { Raw::new(nonce, nonce_len)?.as_slice() };
        if chacha_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let engine = match rounds {
            20 => Engine::R20(Keystream::new(key, nonce, counter)?),
            12 => Engine::R12(Keystream::new(key, nonce, counter)?),
            8 => Engine::R8(Keystream::new(key, nonce, counter)?),
            _ => {
                if !matches!(nonce.len(), 8 | 12 | 24) {
                    return Err(cb3_result::InvalidNonceLength);
                }
                return Err(cb3_result::InvalidRounds);
            }
        };
        // SAFETY: `chacha_out` is not NULL and valid for a write (the contract).
        let made = unsafe { object::give(cb3_chacha { engine: Mutex::new(engine) }, chacha_out) };
        scrub_stack(); // the key was copied and moved through these frames
        made
    })
}

/// Frees a ChaCha object made by `cb3_chacha_new`. NULL is a no-op. The key
/// (for XChaCha, the HChaCha subkey), the nonce, the cipher core's state and
/// any buffered keystream are overwritten with zeros before the memory is
/// released. The pointer must not be used afterwards (nor freed twice), and
/// no other thread may be using the object during or after the call. It may
/// be freed in a `fork()` child (wiping the child's copy). Freeing it twice,
/// or freeing a pointer that is not a live ChaCha object, prints a message
/// to stderr and aborts; other calls on a freed object return
/// `CB3_RESULT_INVALID_ARGUMENT` (see `cb3_stream_free`).
#[no_mangle]
pub unsafe extern "C" fn cb3_chacha_free(chacha: *mut cb3_chacha) {
    // SAFETY: the contract above: NULL or a pointer from cb3_chacha_new that
    // no other thread uses.
    ffi_boundary_or((), || unsafe { object::free(chacha) })
}

/// XORs the next `input_len` keystream bytes with `input` into `out`
/// (exactly `input_len` bytes are written; `out_len` must be at least that,
/// else `CB3_RESULT_INSUFFICIENT_SIZE`) and advances the position.
/// Encryption and decryption are the same operation. `out` may start exactly
/// at `input` (in place); any other overlap is
/// `CB3_RESULT_OVERLAPPING_BUFFERS`. If the data would run past the last
/// block of the counter, returns `CB3_RESULT_COUNTER_OVERFLOW` and processes
/// nothing. On failure `out` and the position are unchanged.
#[no_mangle]
pub unsafe extern "C" fn cb3_chacha_apply(
    chacha: *const cb3_chacha,
    input: *const u8,
    input_len: usize,
    out: *mut u8,
    out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_chacha pointer or NULL).
        let chacha = unsafe { object::get(chacha) }?;
        let data = Raw::new(input, input_len)?;
        let out = Raw::output(out, out_len, input_len)?;
        // SAFETY: the C caller's contract: `input_len` readable and writable
        // bytes at `input` and `out`; data_and_output checks their overlap.
        let (source, out) = unsafe { data_and_output(data, out, &[]) }?;
        let done = dispatch!(&mut *chacha.lock(), ks => ks.apply(source, out));
        scrub_stack(); // the backends copy the key words of the state
        done
    })
}

/// Moves to keystream byte `position_high * 2^64 + position_low`, counted
/// from block 0 (not from the creation counter): block `c` starts at byte
/// `64 * c`. The position may be at most the end of the keystream (2^38 bytes
/// with a 12- or 24-byte nonce, 2^70 with an 8-byte one), else
/// `CB3_RESULT_INVALID_POSITION` and the position is unchanged.
#[no_mangle]
pub unsafe extern "C" fn cb3_chacha_seek(
    chacha: *const cb3_chacha,
    position_high: u64,
    position_low: u64,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_chacha pointer or NULL).
        let chacha = unsafe { object::get(chacha) }?;
        let position = (u128::from(position_high) << 64) | u128::from(position_low);
        dispatch!(&mut *chacha.lock(), ks => ks.seek(position))
    })
}

/// Stores the current keystream byte position (as `cb3_chacha_seek` takes
/// it) as `*position_high_out * 2^64 + *position_low_out`; the high half is
/// 0 below 2^64 and at most 64 (the end of a 64-bit keystream, 2^70).
/// Reading the position uses no keystream, so it also works in a `fork()`
/// child (giving the position at the fork), unless a thread of the parent
/// was inside a call with the object then (`CB3_RESULT_FORKED`).
#[no_mangle]
pub unsafe extern "C" fn cb3_chacha_position(
    chacha: *const cb3_chacha,
    position_high_out: *mut u64,
    position_low_out: *mut u64,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_chacha pointer or NULL).
        let (chacha, owner) = unsafe { object::get_with_owner(chacha) }?;
        if position_high_out.is_null() || position_low_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let engine = if owner.load(std::sync::atomic::Ordering::Acquire) == object::process_id() {
            chacha.lock()
        } else {
            // Never wait in a child: a lock held at the fork stays held.
            match chacha.engine.try_lock() {
                Ok(engine) => engine,
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return Err(cb3_result::Forked),
            }
        };
        let position = dispatch!(&*engine, ks => ks.pos);
        // SAFETY: the C caller's contract: each is NULL or valid for a write.
        unsafe {
            store(position_high_out, (position >> 64) as u64);
            store(position_low_out, position as u64);
        }
        Ok(())
    })
}

/// HChaCha20: derives a 32-byte subkey from a 32-byte `key` and a 16-byte
/// `nonce` (else `CB3_RESULT_INVALID_KEY_LENGTH` /
/// `CB3_RESULT_INVALID_NONCE_LENGTH`), as XChaCha20 does with the first 16
/// nonce bytes. `out_len` must be at least 32; exactly 32 bytes are written
/// to `out`, which must not overlap the inputs.
#[no_mangle]
pub unsafe extern "C" fn cb3_hchacha20(
    key: *const u8,
    key_len: usize,
    nonce: *const u8,
    nonce_len: usize,
    out: *mut u8,
    out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let key_raw = Raw::new(key, key_len)?;
        let nonce_raw = Raw::new(nonce, nonce_len)?;
        // SAFETY: the C caller's contract, each pointer valid for its length.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        // SAFETY: as for the key.
        let nonce = unsafe { fixed::<16>(nonce, nonce_len, cb3_result::InvalidNonceLength) }?;
        let out = Raw::output(out, out_len, 32)?;
        disjoint(&out, &[key_raw, nonce_raw])?;
        let mut subkey = hchacha::<R20>(key.into(), nonce.into());
        // SAFETY: the contract: 32 writable bytes at `out` (out_len >= 32),
        // checked above not to overlap the inputs.
        unsafe { out.as_mut_slice() }.copy_from_slice(&subkey);
        subkey.as_mut_slice().zeroize();
        scrub_stack();
        Ok(())
    })
}
