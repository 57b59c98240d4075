//! BLAKE3 hashing: an incremental hasher with the three BLAKE3 modes (hash,
//! keyed hash, key derivation), file input (mapped in pieces, or read in
//! chunks, with an interrupt check between them) and optional
//! multi-threading, plus one-shot hashing. The hashing is the `blake3`
//! crate's; this module adds the thread pools, the wiping and the direct
//! one-shot path (`blake3_compressions`).
//!
//! Threads: a hasher made with `max_threads == 1` hashes on the calling
//! thread. With `AUTO` (0) large inputs are hashed with
//! `Hasher::update_rayon` on a process-wide rayon pool of rayon's default
//! size (one thread per logical core, or `RAYON_NUM_THREADS`). With
//! `max_threads > 1` the hasher uses the pool of that many threads (capped at
//! the usable cores) that every hasher and cipher of the same count shares,
//! and which ends with the last of them (`parallel::shared_pool`). Pools are built on the first input large enough
//! to use them: inputs below [`HASH_PARALLEL_MIN`] are hashed on the
//! calling thread in every mode (rayon only costs time there). The digest
//! never depends on the mode.
//!
//! Fork safety: a child process made by `fork()` has none of its parent's
//! pool threads, so a rayon pool inherited from the parent (rayon's global
//! pool included) would wait forever for them. Every pool here remembers the
//! process that built it, and a child builds its own on first use (the
//! stale one is leaked, its threads existing only in the parent). A pool
//! that cannot be built leaves the hasher single-threaded. (Whether a
//! hasher itself may be used in a child is its handle's rule, in the C ABI
//! crate.)

#[cfg(unix)]
use std::ffi::CString;
use std::fs::File;
use std::io::Read;
#[cfg(unix)]
use std::os::fd::FromRawFd;
#[cfg(not(unix))]
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zeroize::Zeroize;

use crate::error::Result;
use crate::parallel::{scrub_workers, shared_pool, LazyPool, AUTO_POOL};

/// The default BLAKE3 output size in bytes (any length can be requested).
pub const OUT_LEN: usize = 32;
/// The BLAKE3 key size in bytes (keyed mode).
pub const KEY_LEN: usize = 32;
/// The BLAKE3 block size in bytes.
pub const BLOCK_LEN: usize = 64;
/// `max_threads` value that lets the library choose the number of threads
/// (a shared pool of rayon's default size: one thread per logical core, or
/// `RAYON_NUM_THREADS`).
pub const AUTO: usize = 0;

/// Inputs shorter than this many bytes are hashed on the calling thread even
/// when the hasher may use several: below about 128 KiB `update_rayon` is
/// slower than `update` (the `blake3` crate's own guidance).
pub const HASH_PARALLEL_MIN: usize = 128 * 1024;


/// `errno` reported for a path that contains a NUL byte (EINVAL).
pub const EINVAL: i32 = 22;

/// Files of at least this many bytes are memory-mapped (regular files only),
/// as the blake3 crate's `update_mmap` does; shorter ones are read.
pub const MMAP_MIN: u64 = 16 * 1024;
/// Bytes read at once from a file that is not mapped (FIFOs, devices, short
/// files), and hashed at once from a mapped one (between interrupt checks).
pub const READ_CHUNK: usize = 64 * 1024;
pub const MAPPED_PIECE: usize = 64 * 1024 * 1024;
/// How often a long file read calls its interrupt callback (and at once
/// after a read interrupted by a signal).
pub const INTERRUPT_EVERY: Duration = Duration::from_millis(20);

/// How a hasher may use threads.
#[derive(Clone)]
pub enum Threads {
    Single,
    Auto,
    /// A pool of its own (shared with copies of the hasher).
    Pool(Arc<LazyPool>),
}

impl Threads {
    pub fn new(max_threads: usize) -> Self {
        match max_threads {
            AUTO => Threads::Auto,
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

/// An incremental BLAKE3 hasher and the threads it may use. The state
/// (key, chaining values, buffered input) is wiped when it is dropped.
#[derive(Clone)]
pub struct Hasher {
    pub state: blake3::Hasher,
    threads: Threads,
}

// `blake3::Hasher` implements `Zeroize` (the crate's `zeroize` feature) but
// does not wipe itself on drop: do it here, so that dropping a hasher (or a
// copy) leaves no key, chaining values or buffered input behind.
impl Drop for Hasher {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

impl Hasher {
    pub fn new(state: blake3::Hasher, max_threads: usize) -> Self {
        Hasher { state, threads: Threads::new(max_threads) }
    }

    /// Adds `input`: below [`HASH_PARALLEL_MIN`] on the calling thread, above
    /// it on the hasher's threads.
    pub fn update(&mut self, input: &[u8]) {
        if input.len() < HASH_PARALLEL_MIN {
            self.state.update(input);
        } else {
            self.threads.run(
                &mut self.state,
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

pub enum FileError {
    Io(std::io::Error),
    Stop,
}

impl From<std::io::Error> for FileError {
    fn from(error: std::io::Error) -> Self {
        FileError::Io(error)
    }
}

/// A long operation's way to ask its caller whether to stop: `stop()`
/// returning true ends the operation with `FileError::Stop`.
pub struct Interrupt<'a> {
    stop: Option<&'a mut dyn FnMut() -> bool>,
    last: Instant,
}

impl<'a> Interrupt<'a> {
    pub fn new(stop: Option<&'a mut dyn FnMut() -> bool>) -> Self {
        Interrupt { stop, last: Instant::now() }
    }

    /// Asks `stop` if `now` (after EINTR) or INTERRUPT_EVERY has passed.
    fn check(&mut self, now: bool) -> Result<(), FileError> {
        let Some(stop) = self.stop.as_mut() else {
            return Ok(());
        };
        if !now && self.last.elapsed() < INTERRUPT_EVERY {
            return Ok(());
        }
        let stop = stop();
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
pub fn open_file(path: &[u8], interrupt: &mut Interrupt) -> Result<File, FileError> {
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
pub fn open_file(path: &[u8], _interrupt: &mut Interrupt) -> Result<File, FileError> {
    let path = path_from_bytes(path).map_err(|_| std::io::Error::from_raw_os_error(EINVAL))?;
    Ok(File::open(path)?)
}

/// Hashes an open file into `state` (locked): mapped in pieces if it is a
/// regular file of at least MMAP_MIN bytes, else read in chunks, checking
/// `interrupt` in between.
pub fn hash_file(hasher: &mut Hasher, file: &mut File, interrupt: &mut Interrupt) -> Result<(), FileError> {
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() >= MMAP_MIN && metadata.len() <= isize::MAX as u64 {
        // SAFETY: a file truncated while it is mapped raises SIGBUS (the C ABI's
        // update_mmap documents it for callers); the length is
        // fixed now, so a file that grows is hashed up to this length.
        let mapped = unsafe { memmap2::MmapOptions::new().len(metadata.len() as usize).map(&*file) };
        if let Ok(mapped) = mapped {
            for piece in mapped.chunks(MAPPED_PIECE) {
                hasher.update(piece);
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
                hasher.update(&buffer[..n]);
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
pub fn hash_tree_wiped(key: &[u32; 8], flags: u8, input: &[u8], out: &mut [u8]) {
    let mut tree = crate::blake3_compressions::Tree::new();
    crate::blake3_compressions::hash_tree(key, flags, &[], input, out, &mut tree);
    tree.wipe();
}

/// The three BLAKE3 modes.
pub enum Mode<'a> {
    Hash,
    Keyed(&'a [u8; 32]),
    DeriveKey(&'a str),
}

/// One-shot BLAKE3 of `input` in `mode`, `out.len()` output bytes. Inputs
/// of at most `MAX_INPUT` bytes (hash and keyed hash) take direct
/// compressions: no hasher state to build and wipe, and every whole chunk
/// in one wide call; longer ones (and key derivation) a hasher. Every copy
/// of the key and the state is wiped, the stack below included.
pub fn one_shot(mode: Mode<'_>, input: &[u8], out: &mut [u8]) {
    use crate::blake3_compressions::{key_words, IV, KEYED_HASH, MAX_INPUT};
    let mut direct = |key: &[u32; 8], flags: u8| {
        if input.len() <= crate::blake3_compressions::CHUNK_LEN {
            let mut cv = [0u32; 8];
            crate::blake3_compressions::hash_chunk(key, flags, input, out, &mut cv);
            crate::wipe::wipe(&mut cv);
            crate::wipe::scrub_stack();
        } else {
            hash_tree_wiped(key, flags, input, out);
            crate::wipe::scrub_stack_wide();
        }
    };
    let mut hasher = match mode {
        Mode::Hash if input.len() <= MAX_INPUT => return direct(&IV, 0),
        Mode::Keyed(key) if input.len() <= MAX_INPUT => {
            let mut spare = [0u32; 8];
            direct(key_words(key, &mut spare), KEYED_HASH);
            crate::wipe::wipe(&mut spare);
            return;
        }
        Mode::Hash => blake3::Hasher::new(),
        Mode::Keyed(key) => blake3::Hasher::new_keyed(key),
        Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
    };
    hasher.update(input);
    let mut reader = hasher.finalize_xof();
    reader.fill(out);
    // A keyed hasher holds a copy of the key: wipe it (and the output state).
    reader.zeroize();
    hasher.zeroize();
    crate::wipe::scrub_stack();
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> Result<&Path> {
    std::str::from_utf8(bytes).map(Path::new).map_err(|_| crate::Error::InvalidUtf8)
}
