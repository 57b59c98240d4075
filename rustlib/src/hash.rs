//! BLAKE3 hashing (`cb3_blake3_*`): an incremental hasher object with the
//! three BLAKE3 modes (hash, keyed hash, key derivation), extendable output
//! with a seek position, memory-mapped file input and optional
//! multi-threading, plus one-shot functions. Everything is the `blake3`
//! crate's; this module adds the lock and the thread pools (the C ABI is
//! `ffi::hash`).
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
//! that cannot be built leaves the hasher single-threaded. The hasher itself
//! moves to the child on its first use there, unless another thread was
//! inside a call with it at the fork: its state is then torn and its lock
//! never released, so it fails with `CB3_RESULT_FORKED` instead of blocking
//! forever.

#[cfg(unix)]
use std::ffi::CString;
use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::Read;
#[cfg(unix)]
use std::os::fd::FromRawFd;
#[cfg(not(unix))]
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use crate::ffi::errors::{cb3_result, Cb3Result};
use crate::ffi::object::{self, process_id};
use crate::parallel::{scrub_workers, shared_pool, LazyPool, AUTO_POOL};

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

/// The interrupt callback of `cb3_blake3_update_file`: returns 0 to go on,
/// anything else to stop.
pub type cb3_interrupt = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_int>;

/// `errno` reported for a path that contains a NUL byte (EINVAL).
pub(crate) const EINVAL: i32 = 22;

/// Files of at least this many bytes are memory-mapped (regular files only),
/// as the blake3 crate's `update_mmap` does; shorter ones are read.
pub(crate) const MMAP_MIN: u64 = 16 * 1024;
/// Bytes read at once from a file that is not mapped (FIFOs, devices, short
/// files), and hashed at once from a mapped one (between interrupt checks).
pub(crate) const READ_CHUNK: usize = 64 * 1024;
pub(crate) const MAPPED_PIECE: usize = 64 * 1024 * 1024;
/// How often a long file read calls its interrupt callback (and at once
/// after a read interrupted by a signal).
pub(crate) const INTERRUPT_EVERY: Duration = Duration::from_millis(20);
/// How long a forked child waits for a hasher that is busy before deciding
/// that a thread of its parent held it at the fork.
pub(crate) const ADOPT_WAIT: Duration = Duration::from_millis(100);

/// How a hasher may use threads.
#[derive(Clone)]
pub(crate) enum Threads {
    Single,
    Auto,
    /// A pool of its own (shared with copies of the hasher).
    Pool(Arc<LazyPool>),
}

impl Threads {
    pub(crate) fn new(max_threads: usize) -> Self {
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
    pub(crate) hasher: Mutex<blake3::Hasher>,
    pub(crate) threads: Threads,
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

/// A live hasher and the process that owns it.
pub struct HasherRef<'a> {
    pub(crate) hasher: &'a cb3_blake3,
    pub(crate) owner: &'a AtomicU32,
}

impl cb3_blake3 {
    pub(crate) fn new(hasher: blake3::Hasher, max_threads: usize) -> Self {
        cb3_blake3 { hasher: Mutex::new(hasher), threads: Threads::new(max_threads) }
    }

    /// Updates from Rust (the tests); C goes through `cb3_blake3_update`.
    pub fn update(&self, input: &[u8]) {
        let mut state = object::lock(&self.hasher);
        self.update_locked(&mut state, input);
    }

    pub(crate) fn update_locked(&self, state: &mut blake3::Hasher, input: &[u8]) {
        if input.len() < CB3_BLAKE3_PARALLEL_MIN {
            state.update(input);
        } else {
            self.threads.run(
                state,
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

impl HasherRef<'_> {
    /// The hasher's state, locked. In a process other than its owner's (a
    /// `fork()` child) the hasher moves to this process if its lock is free;
    /// a lock that stays busy was held by a thread of the parent at the fork
    /// (it will never be released, and the state may be half-updated):
    /// `CB3_RESULT_FORKED` then, rather than blocking forever.
    pub(crate) fn lock(&self) -> Cb3Result<MutexGuard<'_, blake3::Hasher>> {
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

pub(crate) enum FileError {
    Io(std::io::Error),
    Stop,
}

impl From<std::io::Error> for FileError {
    fn from(error: std::io::Error) -> Self {
        FileError::Io(error)
    }
}

pub(crate) struct Interrupt {
    pub(crate) callback: cb3_interrupt,
    pub(crate) arg: *mut c_void,
    pub(crate) last: Instant,
}

impl Interrupt {
    /// Calls the callback if `now` (after EINTR) or INTERRUPT_EVERY has passed.
    fn check(&mut self, now: bool) -> Result<(), FileError> {
        let Some(callback) = self.callback else {
            return Ok(());
        };
        if !now && self.last.elapsed() < INTERRUPT_EVERY {
            return Ok(());
        }
        // SAFETY: the caller's callback, called as documented.
        let stop = unsafe { callback(self.arg) } != 0;
        self.last = Instant::now();
        if stop {
            Err(FileError::Stop)
        } else {
            Ok(())
        }
    }
}

/// Opens `path` for reading. Unlike `File::open`, which retries on EINTR, a
/// signal during a blocking open (a FIFO without a writer) reaches the
/// interrupt callback.
#[cfg(unix)]
pub(crate) fn open_file(path: &[u8], interrupt: &mut Interrupt) -> Result<File, FileError> {
    let path = CString::new(path).map_err(|_| std::io::Error::from_raw_os_error(EINVAL))?;
    loop {
        // SAFETY: a NUL-terminated path; the descriptor is owned by the File.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd >= 0 {
            return Ok(unsafe { File::from_raw_fd(fd) });
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error.into());
        }
        interrupt.check(true)?;
    }
}

#[cfg(not(unix))]
pub(crate) fn open_file(path: &[u8], _interrupt: &mut Interrupt) -> Result<File, FileError> {
    let path = path_from_bytes(path).map_err(|_| std::io::Error::from_raw_os_error(EINVAL))?;
    Ok(File::open(path)?)
}

/// Hashes an open file into `state` (locked): mapped in pieces if it is a
/// regular file of at least MMAP_MIN bytes, else read in chunks, checking
/// `interrupt` in between.
pub(crate) fn hash_file(
    hasher: &cb3_blake3,
    state: &mut blake3::Hasher,
    file: &mut File,
    interrupt: &mut Interrupt,
) -> Result<(), FileError> {
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() >= MMAP_MIN && metadata.len() <= isize::MAX as u64 {
        // SAFETY: see the SIGBUS note of cb3_blake3_update_mmap; the length is
        // fixed now, so a file that grows is hashed up to this length.
        let mapped = unsafe { memmap2::MmapOptions::new().len(metadata.len() as usize).map(&*file) };
        if let Ok(mapped) = mapped {
            for piece in mapped.chunks(MAPPED_PIECE) {
                hasher.update_locked(state, piece);
                interrupt.check(false)?;
            }
            return Ok(());
        }
    }
    let mut buffer = vec![0u8; READ_CHUNK];
    let done = loop {
        match file.read(&mut buffer) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                hasher.update_locked(state, &buffer[..n]);
                if let Err(stop) = interrupt.check(false) {
                    break Err(stop);
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {
                if let Err(stop) = interrupt.check(true) {
                    break Err(stop);
                }
            }
            Err(error) => break Err(error.into()),
        }
    };
    buffer.zeroize();
    done
}

/// `direct::hash_tree` with its chaining values in this (not inlined)
/// frame, wiped.
#[inline(never)]
pub(crate) fn hash_tree_wiped(key: &[u32; 8], flags: u8, input: &[u8], out: &mut [u8]) {
    let mut tree = crate::blake3_compressions::Tree::new();
    crate::blake3_compressions::hash_tree(key, flags, &[], input, out, &mut tree);
    tree.wipe();
}

