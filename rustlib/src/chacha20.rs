//! The C ABI of the raw ChaCha ciphers: the `cb3_chacha_*` functions and `cb3_hchacha20`.

use std::sync::{Mutex, MutexGuard};

use cb3_core::chacha20::{hchacha20, Engine};
use crate::buffers::{data_and_output, disjoint, fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, ffi_boundary_with_key};
use crate::object::{self, Object};
use cb3_core::wipe::scrub_stack;

/// The ChaCha block size in bytes: block `c` starts at keystream byte `64 * c`.
pub const CB3_CHACHA_BLOCK_SIZE: usize = 64;
const _: () = assert!(CB3_CHACHA_BLOCK_SIZE == cb3_core::chacha20::BLOCK_SIZE);

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

impl cb3_chacha {
    fn lock(&self) -> MutexGuard<'_, Engine> {
        object::lock(&self.engine)
    }
}


impl Object for cb3_chacha {
    const MAGIC: u64 = u64::from_le_bytes(*b"cb3:chch");
    const NAME: &'static str = "cb3_chacha";
    const FORK_BOUND: bool = true;
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
    ffi_boundary_with_key(|| {
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
        if !matches!(rounds, 20 | 12 | 8) && !matches!(nonce.len(), 8 | 12 | 24) {
            return Err(cb3_result::InvalidNonceLength);
        }
        let engine = Engine::new(rounds, key, nonce, counter)?;
        // SAFETY: `chacha_out` is not NULL and valid for a write (the contract).
        unsafe { object::give(cb3_chacha { engine: Mutex::new(engine) }, chacha_out) }
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
        let done = chacha.lock().apply(source, out);
        scrub_stack(); // the backends copy the key words of the state
        Ok(done?)
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
        Ok(chacha.lock().seek(position)?)
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
        let position = engine.position();
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
    ffi_boundary_with_key(|| {
        let key_raw = Raw::new(key, key_len)?;
        let nonce_raw = Raw::new(nonce, nonce_len)?;
        // SAFETY: the C caller's contract, each pointer valid for its length.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        // SAFETY: as for the key.
        let nonce = unsafe { fixed::<16>(nonce, nonce_len, cb3_result::InvalidNonceLength) }?;
        let out = Raw::output(out, out_len, 32)?;
        disjoint(&out, &[key_raw, nonce_raw])?;
        // SAFETY: the contract: 32 writable bytes at `out` (out_len >= 32),
        // checked above not to overlap the inputs.
        hchacha20(key, nonce, unsafe { out.as_mut_slice() }.try_into().expect("32 bytes"));
        Ok(())
    })
}
