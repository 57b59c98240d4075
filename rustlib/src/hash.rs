//! The C ABI of BLAKE3 hashing: the `cb3_blake3_*` functions.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use cb3_core::hash::{hash_file, open_file, FileError, Hasher, Interrupt, Mode, EINVAL};
use cb3_core::wipe::scrub_stack;
use zeroize::Zeroize;

use crate::buffers::{disjoint, fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, ffi_boundary_with_key, Cb3Result};
use crate::object::{self, process_id, Object};

/// The default BLAKE3 output size in bytes (any length can be requested).
pub const CB3_BLAKE3_OUT_LEN: usize = 32;
const _: () = assert!(CB3_BLAKE3_OUT_LEN == cb3_core::hash::OUT_LEN);

/// The BLAKE3 key size in bytes (keyed mode).
pub const CB3_BLAKE3_KEY_LEN: usize = 32;
const _: () = assert!(CB3_BLAKE3_KEY_LEN == cb3_core::hash::KEY_LEN);

/// The BLAKE3 block size in bytes.
pub const CB3_BLAKE3_BLOCK_LEN: usize = 64;
const _: () = assert!(CB3_BLAKE3_BLOCK_LEN == cb3_core::hash::BLOCK_LEN);

/// `max_threads` value that lets the library choose the number of threads
/// (a shared pool of rayon's default size: one thread per logical core, or
/// `RAYON_NUM_THREADS`).
pub const CB3_BLAKE3_AUTO: usize = 0;
const _: () = assert!(CB3_BLAKE3_AUTO == cb3_core::hash::AUTO);

/// Inputs shorter than this many bytes are hashed on the calling thread even
/// when the hasher may use several: below about 128 KiB `update_rayon` is
/// slower than `update` (the `blake3` crate's own guidance).
pub const CB3_BLAKE3_PARALLEL_MIN: usize = 128 * 1024;
const _: () = assert!(CB3_BLAKE3_PARALLEL_MIN == cb3_core::hash::HASH_PARALLEL_MIN);

/// The interrupt callback of `cb3_blake3_update_file`: returns 0 to go on,
/// anything else to stop.
pub type cb3_interrupt = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_int>;

/// How long a forked child waits for a hasher that is busy before deciding
/// that a thread of its parent held it at the fork.
pub const ADOPT_WAIT: Duration = Duration::from_millis(100);

/// An incremental BLAKE3 hasher. Opaque to C; create with `cb3_blake3_new`,
/// `cb3_blake3_new_keyed`, `cb3_blake3_new_derive_key` or `cb3_blake3_copy`,
/// release with `cb3_blake3_free`. Every call takes the hasher's lock, so one
/// hasher may be shared between threads (concurrent updates are serialised,
/// in an unspecified order).
pub struct cb3_blake3 {
    hasher: Mutex<Hasher>,
}

// Unwinding out of a call (caught by `ffi_boundary`) leaves a hasher that is
// still a valid value: its state sits behind a Mutex whose poisoning is
// ignored, and rayon's pool, which is not marked unwind-safe only because it
// holds callbacks, stays usable (rayon re-raises job panics in the caller).
impl std::panic::RefUnwindSafe for cb3_blake3 {}

/// A live hasher and the process that owns it.
struct HasherRef<'a> {
    hasher: &'a cb3_blake3,
    owner: &'a AtomicU32,
}

impl HasherRef<'_> {
    /// The hasher, locked. In a process other than its owner's (a `fork()`
    /// child) the hasher moves to this process if its lock is free; a lock
    /// that stays busy was held by a thread of the parent at the fork (it
    /// will never be released, and the state may be half-updated):
    /// `CB3_RESULT_FORKED` then, rather than blocking forever.
    fn lock(&self) -> Cb3Result<MutexGuard<'_, Hasher>> {
        let here = process_id();
        if self.owner.load(Ordering::Acquire) == here {
            return Ok(object::lock(&self.hasher.hasher));
        }
        let start = Instant::now();
        loop {
            match self.hasher.hasher.try_lock() {
                Ok(guard) => {
                    self.owner.store(here, Ordering::Release);
                    return Ok(guard);
                }
                Err(TryLockError::Poisoned(poisoned)) => {
                    self.owner.store(here, Ordering::Release);
                    return Ok(poisoned.into_inner());
                }
                Err(TryLockError::WouldBlock) => {
                    // Another thread of this process may have just moved it here.
                    if self.owner.load(Ordering::Acquire) == here {
                        return Ok(object::lock(&self.hasher.hasher));
                    }
                    if start.elapsed() > ADOPT_WAIT {
                        return Err(cb3_result::Forked);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }
}

impl Object for cb3_blake3 {
    const MAGIC: u64 = u64::from_le_bytes(*b"cb3:blk3");
    const NAME: &'static str = "cb3_blake3";
}

/// The hasher at `ptr`: NULL or a freed hasher are errors (see `object.rs`).
///
/// # Safety
/// `ptr` is NULL or came from a `cb3_blake3` constructor.
unsafe fn hasher_ref<'a>(ptr: *const cb3_blake3) -> Cb3Result<HasherRef<'a>> {
    // SAFETY: the caller's guarantee is get_with_owner's.
    unsafe { object::get_with_owner(ptr) }.map(|(hasher, owner)| HasherRef { hasher, owner })
}

/// # Safety
/// `out` is NULL or valid for one write.
unsafe fn give_hasher(hasher: blake3::Hasher, max_threads: usize, hasher_out: *mut *mut cb3_blake3) -> Cb3Result<()> {
    // SAFETY: the caller's guarantee is give's.
    unsafe { object::give(cb3_blake3 { hasher: Mutex::new(Hasher::new(hasher, max_threads)) }, hasher_out) }
}

/// A UTF-8 context string as BLAKE3's key derivation requires.
///
/// # Safety
/// See `buffers`.
unsafe fn context_str<'a>(context: *const u8, context_len: usize) -> Cb3Result<&'a str> {
    let context = Raw::new(context, context_len)?;
    // SAFETY: the caller's guarantee: `context_len` readable bytes at `context`.
    std::str::from_utf8(unsafe { context.as_slice() }).map_err(|_| cb3_result::InvalidUtf8)
}

/// Creates a hasher for the default (unkeyed) BLAKE3 hash.
///
/// `max_threads` is 1 (hash on the calling thread), `CB3_BLAKE3_AUTO` (0: a
/// process-wide pool, one thread per logical core) or a larger maximum
/// number of threads (capped at the usable cores) for the pool that every
/// hasher and cipher of that count shares, ended with the last of them.
/// Pools are built on the
/// first input of at least `CB3_BLAKE3_PARALLEL_MIN` bytes, and again in a
/// child process after `fork()`. Smaller inputs are always hashed on the
/// calling thread; the digest does not depend on `max_threads`. On failure
/// `*hasher_out` is not written.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_new(max_threads: usize, hasher_out: *mut *mut cb3_blake3) -> cb3_result {
    // SAFETY: the C caller's contract: `hasher_out` is NULL or valid for a write.
    ffi_boundary(|| unsafe { give_hasher(blake3::Hasher::new(), max_threads, hasher_out) })
}

/// Creates a hasher for BLAKE3's keyed mode. `key` must be
/// `CB3_BLAKE3_KEY_LEN` (32) bytes, else `CB3_RESULT_INVALID_KEY_LENGTH`; it
/// is copied. `max_threads` as for `cb3_blake3_new`.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_new_keyed(
    key: *const u8,
    key_len: usize,
    max_threads: usize,
    hasher_out: *mut *mut cb3_blake3,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        // SAFETY (every raw pointer of an exported function): the C caller's
        // contract in cb3.h, each pointer valid for its length for the call.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        // SAFETY: the contract: `hasher_out` is NULL or valid for a write.
        unsafe { give_hasher(blake3::Hasher::new_keyed(key), max_threads, hasher_out) }
    })
}

/// Creates a hasher for BLAKE3's key derivation mode with the given context
/// string: `context_len` bytes of UTF-8, not NUL-terminated (invalid UTF-8 is
/// `CB3_RESULT_INVALID_UTF8`). The context should be hardcoded, globally
/// unique and application-specific; the key material is then fed with
/// `cb3_blake3_update`. `max_threads` as for `cb3_blake3_new`.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_new_derive_key(
    context: *const u8,
    context_len: usize,
    max_threads: usize,
    hasher_out: *mut *mut cb3_blake3,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        // SAFETY: the C caller's contract, each pointer valid for its length.
        let context = unsafe { context_str(context, context_len) }?;
        // SAFETY: the contract: `hasher_out` is NULL or valid for a write.
        unsafe { give_hasher(blake3::Hasher::new_derive_key(context), max_threads, hasher_out) }
    })
}

/// Creates an independent hasher with the same state, mode and thread
/// setting as `hasher` (a pool, if any, is shared). On failure `*copy_out`
/// is not written.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_copy(hasher: *const cb3_blake3, copy_out: *mut *mut cb3_blake3) -> cb3_result {
    ffi_boundary_with_key(|| {
        // SAFETY: the C caller's contract (a cb3_blake3 pointer or NULL).
        let hasher = unsafe { hasher_ref(hasher) }?;
        if copy_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let state = hasher.lock()?.clone();
        // SAFETY: `copy_out` is not NULL and valid for a write (the contract). The copy is built in the
        // call's argument, not in a local of this frame, which scrub_stack would not reach.
        unsafe { object::give(cb3_blake3 { hasher: Mutex::new(state) }, copy_out) }
    })
}

/// Frees a hasher made by a `cb3_blake3_new*` function or `cb3_blake3_copy`.
/// NULL is a no-op. Its state (the key of a keyed hasher, chaining values and
/// buffered input) is overwritten with zeros first; a thread pool it shares
/// with copies lives on until the last of them is freed. The pointer must not
/// be used afterwards (nor freed twice), and no other thread may be using the
/// hasher during or after the call. Freeing it twice, or freeing a pointer
/// that is not a live hasher, prints a message to stderr and aborts; other
/// calls on a freed hasher return `CB3_RESULT_INVALID_ARGUMENT` (see
/// `cb3_stream_free`).
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_free(hasher: *mut cb3_blake3) {
    // SAFETY: the contract above: NULL or a live hasher no other thread uses.
    ffi_boundary_or((), || unsafe { object::free(hasher) })
}

/// Adds `input` to the hasher. May be called any number of times; the
/// result is the same however the input is split.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_update(hasher: *const cb3_blake3, input: *const u8, input_len: usize) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_blake3 pointer or NULL).
        let hasher = unsafe { hasher_ref(hasher) }?;
        let input = Raw::new(input, input_len)?;
        // SAFETY: the contract: `input_len` readable bytes at `input`.
        hasher.lock()?.update(unsafe { input.as_slice() });
        scrub_stack(); // compressions start from the key words of a keyed hasher
        Ok(())
    })
}

/// Adds the contents of the file at `path` (`path_len` bytes, not
/// NUL-terminated; raw bytes on Unix, UTF-8 elsewhere) to the hasher,
/// memory-mapping it when it is a regular file of at least 16 KiB and
/// reading it otherwise; multi-threaded as the hasher's `max_threads` allows.
/// The same as `cb3_blake3_update_file` without an interrupt callback: on a
/// file without end (`/dev/zero`, a FIFO whose writer never closes) it
/// never returns.
///
/// On an I/O error returns `CB3_RESULT_IO_ERROR` and stores the `errno`
/// value in `*os_error` (if not NULL; 0 when the error had none; a NUL byte
/// in the path is `EINVAL`). `os_error` is an error detail, written only on
/// that failure. The hasher then holds any part of the file read before the
/// error, so reset it before reusing it. A file truncated by another process
/// while it is mapped can kill the process with SIGBUS, as with any mmap.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_update_mmap(
    hasher: *const cb3_blake3,
    path: *const u8,
    path_len: usize,
    os_error: *mut i32,
) -> cb3_result {
    // SAFETY: the caller's contract is cb3_blake3_update_file's (no callback).
    unsafe { cb3_blake3_update_file(hasher, path, path_len, None, std::ptr::null_mut(), os_error) }
}


/// `cb3_blake3_update_mmap` with an interrupt callback, for files that may
/// never end (`/dev/zero`, `/dev/urandom`, a FIFO, a terminal) or take long.
///
/// The file is opened, then a regular file of at least 16 KiB is mapped and
/// hashed in 64 MiB pieces; anything else is read in 64 KiB chunks (the
/// read buffer is wiped afterwards). `interrupt(interrupt_arg)` is called on
/// the calling thread between pieces or chunks, at most every 20 ms of
/// hashing, and at once when opening or reading the file was interrupted by
/// a signal (`EINTR`, e.g. a blocked FIFO); when it returns non-zero, the
/// function stops and returns `CB3_RESULT_INTERRUPTED`, the hasher keeping
/// the data hashed so far (reset it before reusing it). The callback runs
/// while the hasher's lock is held: it must not call cb3 functions on this
/// hasher. `interrupt` may be NULL (then nothing can stop the call).
/// Python's binding takes the GIL back in it and runs the signal handlers
/// (Ctrl-C raises `KeyboardInterrupt`).
///
/// Errors as `cb3_blake3_update_mmap`, plus `CB3_RESULT_INTERRUPTED`.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_update_file(
    hasher: *const cb3_blake3,
    path: *const u8,
    path_len: usize,
    interrupt: cb3_interrupt,
    interrupt_arg: *mut c_void,
    os_error: *mut i32,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_blake3 pointer or NULL).
        let hasher = unsafe { hasher_ref(hasher) }?;
        let path = Raw::new(path, path_len)?;
        // SAFETY: the contract: `path_len` readable bytes at `path`.
        let path = unsafe { path.as_slice() };
        if path.contains(&0) {
            // SAFETY: `os_error` is NULL or valid for a write (the contract).
            unsafe { store(os_error, EINVAL) };
            return Err(cb3_result::IoError);
        }
        // SAFETY: the caller's callback and its argument, called as documented.
        let mut ask = || interrupt.is_some_and(|callback| unsafe { callback(interrupt_arg) } != 0);
        let mut interrupt = Interrupt::new(Some(&mut ask));
        let mut state = hasher.lock()?;
        let done = open_file(path, &mut interrupt).and_then(|mut file| hash_file(&mut state, &mut file, &mut interrupt));
        done.map_err(|error| match error {
            FileError::Stop => cb3_result::Interrupted,
            FileError::Io(error) => {
                // SAFETY: `os_error` is NULL or valid for a write (the contract).
                unsafe { store(os_error, error.raw_os_error().unwrap_or(0)) };
                cb3_result::IoError
            }
        })
    })
}


/// Writes `out_len` bytes of the hasher's extendable output, starting at
/// output byte `seek`, to `out`. The hasher is not changed: more input may
/// follow and finalizing twice gives the same bytes. Shorter outputs are
/// prefixes of longer ones; 32 bytes is the standard digest.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_finalize(
    hasher: *const cb3_blake3,
    seek: u64,
    out: *mut u8,
    out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_blake3 pointer or NULL).
        let hasher = unsafe { hasher_ref(hasher) }?;
        let out = Raw::new(out, out_len)?;
        let mut reader = hasher.lock()?.state.finalize_xof();
        reader.set_position(seek);
        // SAFETY: the contract: `out_len` writable bytes at `out`, which nothing else reads or writes during the call.
        reader.fill(unsafe { out.as_mut_slice() });
        // The reader holds the root node's input: for a short keyed input,
        // the key itself.
        reader.zeroize();
        scrub_stack();
        Ok(())
    })
}

/// Resets the hasher to its state right after creation (same mode, key or
/// context, and threads; input given at creation is not replayed).
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_reset(hasher: *const cb3_blake3) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY: the C caller's contract (a cb3_blake3 pointer or NULL).
        unsafe { hasher_ref(hasher) }?.lock()?.state.reset();
        Ok(())
    })
}

/// The number of input bytes hashed so far: every byte given to
/// `cb3_blake3_update` and `cb3_blake3_update_mmap` since creation or the last
/// `cb3_blake3_reset` (a copy starts with its original's count). Returns 0 if
/// `hasher` is NULL, not a live hasher, or unusable in this forked child
/// (see `CB3_RESULT_FORKED`); never fails.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_count(hasher: *const cb3_blake3) -> u64 {
    // SAFETY: the C caller's contract (a cb3_blake3 pointer or NULL).
    ffi_boundary_or(0, || unsafe { hasher_ref(hasher) }.and_then(|hasher| Ok(hasher.lock()?.state.count())).unwrap_or(0))
}

/// Checks the buffers of a one-shot function and runs it.
///
/// # Safety
/// See `buffers`.
unsafe fn one_shot(mode: Mode<'_>, input: Raw, others: &[Raw], out: *mut u8, out_len: usize) -> Cb3Result<()> {
    let out = Raw::new(out, out_len)?;
    disjoint(&out, &[input])?;
    disjoint(&out, others)?;
    // SAFETY: the caller's guarantee: each buffer valid for its length; `out` overlaps no input (checked above).
    let (input, out) = unsafe { (input.as_slice(), out.as_mut_slice()) };
    cb3_core::hash::one_shot(mode, input, out);
    Ok(())
}

/// One-shot BLAKE3 hash of `input`: writes `out_len` output bytes (32 for
/// the standard digest; any length, shorter outputs being prefixes of longer
/// ones) to `out`, which must not overlap `input`. Single-threaded.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_hash(input: *const u8, input_len: usize, out: *mut u8, out_len: usize) -> cb3_result {
    ffi_boundary(|| {
        let input = Raw::new(input, input_len)?;
        // SAFETY (both): the C caller's contract, each pointer valid for its length.
        unsafe { one_shot(Mode::Hash, input, &[], out, out_len) }
    })
}

/// One-shot keyed BLAKE3 (a MAC / PRF) of `input` under a 32-byte `key`
/// (else `CB3_RESULT_INVALID_KEY_LENGTH`): writes `out_len` bytes to `out`,
/// which must not overlap the inputs.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_keyed_hash(
    key: *const u8,
    key_len: usize,
    input: *const u8,
    input_len: usize,
    out: *mut u8,
    out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let key_raw = Raw::new(key, key_len)?;
        // SAFETY (every pointer here): the C caller's contract, each pointer valid for its length for the call.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        let input = Raw::new(input, input_len)?;
        // SAFETY: as above.
        unsafe { one_shot(Mode::Keyed(key), input, &[key_raw], out, out_len) }
    })
}

/// One-shot BLAKE3 key derivation: derives `out_len` bytes from
/// `key_material` under the UTF-8 `context` string (`context_len` bytes, not
/// NUL-terminated; invalid UTF-8 is `CB3_RESULT_INVALID_UTF8`). `out`
/// must not overlap the inputs.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_derive_key(
    context: *const u8,
    context_len: usize,
    key_material: *const u8,
    key_material_len: usize,
    out: *mut u8,
    out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        let context_raw = Raw::new(context, context_len)?;
        // SAFETY (both): the C caller's contract, each pointer valid for its length.
        let context = unsafe { context_str(context, context_len) }?;
        let material = Raw::new(key_material, key_material_len)?;
        unsafe { one_shot(Mode::DeriveKey(context), material, &[context_raw], out, out_len) }
    })
}
