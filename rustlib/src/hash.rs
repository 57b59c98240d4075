//! BLAKE3 hashing (`cb3_blake3_*`): an incremental hasher object with the
//! three BLAKE3 modes (hash, keyed hash, key derivation), extendable output
//! with a seek position, memory-mapped file input and optional
//! multi-threading, plus one-shot functions. Everything is the `blake3`
//! crate's; this module only adds the C ABI, the lock and the thread pools.
//!
//! Threads: a hasher made with `max_threads == 1` hashes on the calling
//! thread. With `CB3_BLAKE3_AUTO` (0) large inputs are hashed with
//! `Hasher::update_rayon` on a process-wide rayon pool of rayon's default
//! size (one thread per logical core, or `RAYON_NUM_THREADS`). With
//! `max_threads > 1` the hasher uses the pool of that many threads (capped at
//! the usable cores) that every hasher and cipher of the same count shares,
//! and which ends with the last of them (`parallel::shared_pool`). Pools are built on the first input large enough
//! to use them: inputs below [`CB3_BLAKE3_PARALLEL_MIN`] are hashed on the
//! calling thread in every mode (rayon only costs time there). The digest
//! never depends on the mode.
//!
//! Fork safety: a child process made by `fork()` has none of its parent's
//! pool threads, so a rayon pool inherited from the parent (rayon's global
//! pool included) would wait forever for them. Every pool here remembers the
//! process that built it, and a child builds its own on first use (the
//! stale one is leaked, its threads existing only in the parent). A pool
//! that cannot be built leaves the hasher single-threaded.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use zeroize::Zeroize;

use crate::buffers::{disjoint, fixed, give, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, Cb3Result};
use crate::parallel::{scrub_workers, shared_pool, LazyPool, AUTO_POOL};
use crate::wipe::scrub_stack;

/// The default BLAKE3 output size in bytes (any length can be requested).
pub const CB3_BLAKE3_OUT_LEN: usize = 32;
/// The BLAKE3 key size in bytes (keyed mode).
pub const CB3_BLAKE3_KEY_LEN: usize = 32;
/// The BLAKE3 block size in bytes.
pub const CB3_BLAKE3_BLOCK_LEN: usize = 64;
/// `max_threads` value that lets the library choose the number of threads
/// (a shared pool of rayon's default size: one thread per logical core, or
/// `RAYON_NUM_THREADS`).
pub const CB3_BLAKE3_AUTO: usize = 0;

/// Inputs shorter than this many bytes are hashed on the calling thread even
/// when the hasher may use several: below about 128 KiB `update_rayon` is
/// slower than `update` (the `blake3` crate's own guidance).
pub const CB3_BLAKE3_PARALLEL_MIN: usize = 128 * 1024;

/// `errno` reported for a path that contains a NUL byte (EINVAL).
const EINVAL: i32 = 22;

/// How a hasher may use threads.
enum Threads {
    Single,
    Auto,
    /// A pool of its own (shared with copies of the hasher).
    Pool(Arc<LazyPool>),
}

impl Threads {
    fn new(max_threads: usize) -> Self {
        match max_threads {
            CB3_BLAKE3_AUTO => Threads::Auto,
            1 => Threads::Single,
            // One pool per thread count, shared between hashers and ciphers
            // and capped at the usable cores (parallel::shared_pool).
            max => match shared_pool(max) {
                Some(pool) => Threads::Pool(pool),
                None => Threads::Single,
            },
        }
    }

    fn share(&self) -> Self {
        match self {
            Threads::Single => Threads::Single,
            Threads::Auto => Threads::Auto,
            Threads::Pool(pool) => Threads::Pool(Arc::clone(pool)),
        }
    }

    /// Runs `parallel` on `state` in the mode's pool, else (single-threaded,
    /// or no pool could be built) `single` on the calling thread.
    fn run<T: Send>(
        &self,
        state: &mut blake3::Hasher,
        single: impl FnOnce(&mut blake3::Hasher) -> T,
        parallel: impl FnOnce(&mut blake3::Hasher) -> T + Send,
    ) -> T {
        let pool = match self {
            Threads::Single => None,
            Threads::Auto => AUTO_POOL.get(),
            Threads::Pool(pool) => pool.get(),
        };
        match pool {
            Some(pool) => {
                let result = pool.install(|| parallel(state));
                // A keyed hasher's key (its chaining value) was in the workers' frames.
                scrub_workers(&pool);
                result
            }
            None => single(state),
        }
    }
}

/// An incremental BLAKE3 hasher. Opaque to C; create with `cb3_blake3_new`,
/// `cb3_blake3_new_keyed`, `cb3_blake3_new_derive_key` or `cb3_blake3_copy`,
/// release with `cb3_blake3_free`. Every call takes the hasher's lock, so one
/// hasher may be shared between threads (concurrent updates are serialised,
/// in an unspecified order).
pub struct cb3_blake3 {
    hasher: Mutex<blake3::Hasher>,
    threads: Threads,
}

// Unwinding out of a call (caught by `ffi_boundary`) leaves a hasher that is
// still a valid value: its state sits behind a Mutex whose poisoning is
// ignored, and rayon's pool, which is not marked unwind-safe only because it
// holds callbacks, stays usable (rayon re-raises job panics in the caller).
impl std::panic::RefUnwindSafe for cb3_blake3 {}

// `blake3::Hasher` implements `Zeroize` (the crate's `zeroize` feature) but
// does not wipe itself on drop: do it here, so that `cb3_blake3_free` (and
// dropping a copy) leaves no key, chaining values or buffered input behind.
impl Drop for cb3_blake3 {
    fn drop(&mut self) {
        let state = self.hasher.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.zeroize();
    }
}

impl cb3_blake3 {
    fn new(hasher: blake3::Hasher, max_threads: usize) -> Self {
        cb3_blake3 { hasher: Mutex::new(hasher), threads: Threads::new(max_threads) }
    }

    fn lock(&self) -> MutexGuard<'_, blake3::Hasher> {
        // A poisoned lock only means a panic elsewhere (already reported as
        // CB3_RESULT_PANIC); the hasher itself is still a valid value.
        self.hasher.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn update(&self, input: &[u8]) {
        let mut state = self.lock();
        if input.len() < CB3_BLAKE3_PARALLEL_MIN {
            state.update(input);
        } else {
            self.threads.run(
                &mut state,
                |state| {
                    state.update(input);
                },
                |state| {
                    state.update_rayon(input);
                },
            );
        }
    }
}

/// # Safety
/// `ptr` is NULL or came from a `cb3_blake3` constructor and was not freed.
unsafe fn hasher_ref<'a>(ptr: *const cb3_blake3) -> Cb3Result<&'a cb3_blake3> {
    ptr.as_ref().ok_or(cb3_result::NullParameter)
}

/// # Safety
/// `out` is NULL or valid for one write.
unsafe fn give_hasher(hasher: blake3::Hasher, max_threads: usize, hasher_out: *mut *mut cb3_blake3) -> Cb3Result<()> {
    give(cb3_blake3::new(hasher, max_threads), hasher_out)
}

/// A UTF-8 context string as BLAKE3's key derivation requires.
///
/// # Safety
/// See `buffers`.
unsafe fn context_str<'a>(context: *const u8, context_len: usize) -> Cb3Result<&'a str> {
    let context = Raw::new(context, context_len)?;
    std::str::from_utf8(context.as_slice()).map_err(|_| cb3_result::InvalidArgument)
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
    ffi_boundary(|| give_hasher(blake3::Hasher::new(), max_threads, hasher_out))
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
    ffi_boundary(|| {
        let key = fixed::<32>(key, key_len, cb3_result::InvalidKeyLength)?;
        let made = give_hasher(blake3::Hasher::new_keyed(key), max_threads, hasher_out);
        scrub_stack(); // the Hasher (holding the key) was moved through these frames
        made
    })
}

/// Creates a hasher for BLAKE3's key derivation mode with the given context
/// string: `context_len` bytes of UTF-8, not NUL-terminated (invalid UTF-8 is
/// `CB3_RESULT_INVALID_ARGUMENT`). The context should be hardcoded, globally
/// unique and application-specific; the key material is then fed with
/// `cb3_blake3_update`. `max_threads` as for `cb3_blake3_new`.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_new_derive_key(
    context: *const u8,
    context_len: usize,
    max_threads: usize,
    hasher_out: *mut *mut cb3_blake3,
) -> cb3_result {
    ffi_boundary(|| {
        let context = context_str(context, context_len)?;
        give_hasher(blake3::Hasher::new_derive_key(context), max_threads, hasher_out)
    })
}

/// Creates an independent hasher with the same state, mode and thread
/// setting as `hasher` (a pool, if any, is shared). On failure `*copy_out`
/// is not written.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_copy(hasher: *const cb3_blake3, copy_out: *mut *mut cb3_blake3) -> cb3_result {
    ffi_boundary(|| {
        let hasher = hasher_ref(hasher)?;
        if copy_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let state = hasher.lock().clone();
        give(cb3_blake3 { hasher: Mutex::new(state), threads: hasher.threads.share() }, copy_out)
    })
}

/// Frees a hasher made by a `cb3_blake3_new*` function or `cb3_blake3_copy`.
/// NULL is a no-op. Its state (the key of a keyed hasher, chaining values and
/// buffered input) is overwritten with zeros first; a thread pool it shares
/// with copies lives on until the last of them is freed. The pointer must not
/// be used afterwards (nor freed twice), and no other thread may be using the
/// hasher during or after the call.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_free(hasher: *mut cb3_blake3) {
    ffi_boundary_or((), || {
        if !hasher.is_null() {
            drop(Box::from_raw(hasher));
        }
    })
}

/// Adds `input` to the hasher. May be called any number of times; the
/// result is the same however the input is split.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_update(hasher: *const cb3_blake3, input: *const u8, input_len: usize) -> cb3_result {
    ffi_boundary(|| {
        let hasher = hasher_ref(hasher)?;
        let input = Raw::new(input, input_len)?;
        hasher.update(input.as_slice());
        scrub_stack(); // compressions start from the key words of a keyed hasher
        Ok(())
    })
}

/// Adds the contents of the file at `path` (`path_len` bytes, not
/// NUL-terminated; raw bytes on Unix, UTF-8 elsewhere) to the hasher,
/// memory-mapping it when it is a regular file of at least 16 KiB and
/// reading it otherwise; multi-threaded as the hasher's `max_threads` allows.
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
    ffi_boundary(|| {
        let hasher = hasher_ref(hasher)?;
        let path = Raw::new(path, path_len)?;
        let path = path.as_slice();
        if path.contains(&0) {
            store(os_error, EINVAL);
            return Err(cb3_result::IoError);
        }
        let path = path_from_bytes(path)?;
        let mut state = hasher.lock();
        let done = hasher.threads.run(
            &mut state,
            |state| state.update_mmap(path).map(|_| ()),
            |state| state.update_mmap_rayon(path).map(|_| ()),
        );
        done.map_err(|error| {
            store(os_error, error.raw_os_error().unwrap_or(0));
            cb3_result::IoError
        })
    })
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> Cb3Result<&Path> {
    use std::os::unix::ffi::OsStrExt;
    Ok(Path::new(std::ffi::OsStr::from_bytes(bytes)))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> Cb3Result<&Path> {
    std::str::from_utf8(bytes).map(Path::new).map_err(|_| cb3_result::InvalidArgument)
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
        let hasher = hasher_ref(hasher)?;
        let out = Raw::new(out, out_len)?;
        let mut reader = hasher.lock().finalize_xof();
        reader.set_position(seek);
        reader.fill(out.as_mut_slice());
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
        hasher_ref(hasher)?.lock().reset();
        Ok(())
    })
}

/// The number of input bytes hashed so far: every byte given to
/// `cb3_blake3_update` and `cb3_blake3_update_mmap` since creation or the last
/// `cb3_blake3_reset` (a copy starts with its original's count). Returns 0 if
/// `hasher` is NULL; never fails.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_count(hasher: *const cb3_blake3) -> u64 {
    ffi_boundary_or(0, || hasher.as_ref().map_or(0, |hasher| hasher.lock().count()))
}

/// Fills `out` from a finished hasher; shared by the one-shot functions.
///
/// # Safety
/// See `buffers`.
unsafe fn one_shot(mut hasher: blake3::Hasher, input: Raw, others: &[Raw], out: *mut u8, out_len: usize) -> Cb3Result<()> {
    let out = Raw::new(out, out_len)?;
    disjoint(&out, &[input])?;
    disjoint(&out, others)?;
    hasher.update(input.as_slice());
    let mut reader = hasher.finalize_xof();
    reader.fill(out.as_mut_slice());
    // A keyed hasher holds a copy of the key: wipe it (and the output state).
    reader.zeroize();
    hasher.zeroize();
    scrub_stack();
    Ok(())
}

/// One-shot BLAKE3 hash of `input`: writes `out_len` output bytes (32 for
/// the standard digest; any length, shorter outputs being prefixes of longer
/// ones) to `out`, which must not overlap `input`. Single-threaded.
#[no_mangle]
pub unsafe extern "C" fn cb3_blake3_hash(input: *const u8, input_len: usize, out: *mut u8, out_len: usize) -> cb3_result {
    ffi_boundary(|| one_shot(blake3::Hasher::new(), Raw::new(input, input_len)?, &[], out, out_len))
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
        let key = fixed::<32>(key, key_len, cb3_result::InvalidKeyLength)?;
        one_shot(blake3::Hasher::new_keyed(key), Raw::new(input, input_len)?, &[key_raw], out, out_len)
    })
}

/// One-shot BLAKE3 key derivation: derives `out_len` bytes from
/// `key_material` under the UTF-8 `context` string (`context_len` bytes, not
/// NUL-terminated; invalid UTF-8 is `CB3_RESULT_INVALID_ARGUMENT`). `out`
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
        let context = context_str(context, context_len)?;
        let material = Raw::new(key_material, key_material_len)?;
        one_shot(blake3::Hasher::new_derive_key(context), material, &[context_raw], out, out_len)
    })
}
