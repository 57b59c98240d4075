//! Thread pools for work on one large input, shared by the AEAD
//! (`cb3_aead_new_with_threads`) and BLAKE3 hashers (`cb3_blake3_*`).
//!
//! AEAD: the ChaCha keystream is seekable, so a message splits into segments
//! (multiples of the 64-byte block) that threads XOR independently, and
//! BLAKE3 is a tree hash, so the MAC's `update_rayon` hashes subtrees in
//! parallel. The bytes never depend on the thread count.
//!
//! Pools: `max_threads` is capped at the usable cores, and objects with the
//! same capped count share one pool, which ends with its last user
//! (`shared_pool`): a process never holds more than one pool per count from
//! 2 to the number of cores, plus the AUTO pool of multi-threaded hashers.
//!
//! Fork safety: a child process made by `fork()` has none of its parent's
//! pool threads, so a rayon pool inherited from the parent (rayon's global
//! pool included) would wait forever for them. Every pool here remembers the
//! process that built it, and a child builds its own on first use (the
//! stale one is leaked, its threads existing only in the parent). A pool
//! that cannot be built leaves the work on the calling thread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// AEAD messages shorter than this stay on the calling thread: below it,
/// waking the pool costs more than the split saves.
pub(crate) const PARALLEL_MIN: usize = 1 << 20;

/// The cores this process may use (its CPU affinity and cgroup quota, as
/// `std::thread::available_parallelism` reports them; 1 if unknown),
/// measured once: no pool ever has more threads than this.
pub fn usable_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A rayon pool built on first use and rebuilt in a forked child.
pub struct LazyPool {
    /// Number of threads; 0 for rayon's default (one per logical core, or
    /// `RAYON_NUM_THREADS`).
    threads: usize,
    /// The pool and the process id that built it.
    slot: Mutex<Option<(u32, Arc<ThreadPool>)>>,
}

impl LazyPool {
    pub const fn new(threads: usize) -> Self {
        LazyPool { threads, slot: Mutex::new(None) }
    }

    /// This process's pool, or None if it cannot be built.
    pub fn get(&self) -> Option<Arc<ThreadPool>> {
        let pid = std::process::id();
        let mut slot = self.slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((owner, pool)) = &*slot {
            if *owner == pid {
                return Some(Arc::clone(pool));
            }
        }
        if let Some((_, stale)) = slot.take() {
            // Built by the parent: its threads are not in this process.
            std::mem::forget(stale);
        }
        let mut builder = ThreadPoolBuilder::new().thread_name(|i| format!("cb3-worker-{i}"));
        if self.threads > 0 {
            builder = builder.num_threads(self.threads.min(usable_cores()));
        }
        let pool = Arc::new(builder.build().ok()?);
        *slot = Some((pid, Arc::clone(&pool)));
        Some(pool)
    }
}

impl Drop for LazyPool {
    fn drop(&mut self) {
        let slot = self.slot.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((owner, pool)) = slot.take() {
            if owner == std::process::id() {
                // Dropping the last handle ends the pool's threads.
                drop(pool);
            } else {
                std::mem::forget(pool); // a parent's pool: no threads here to stop
            }
        }
    }
}

/// The process-wide pool for "every core" (max_threads 0 / AUTO).
pub static AUTO_POOL: LazyPool = LazyPool::new(0);

/// The pool for a `max_threads` setting, shared by every object with the
/// same effective count: None for 1 (the calling thread), else a pool of
/// `max_threads` threads, 0 meaning and larger counts capped at
/// [`usable_cores`]. The caller keeps the returned handle for as long as it
/// may use the pool; the pool (and its threads) ends with its last handle,
/// so at most one pool per count from 2 to the number of usable cores exists
/// at any time, and none once no object uses threads.
pub fn shared_pool(max_threads: usize) -> Option<Arc<LazyPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Weak<LazyPool>>>> = OnceLock::new();
    let cores = usable_cores();
    let count = if max_threads == 0 { cores } else { max_threads.min(cores) };
    if count <= 1 {
        return None;
    }
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    pools.retain(|_, pool| pool.strong_count() > 0);
    if let Some(pool) = pools.get(&count).and_then(Weak::upgrade) {
        return Some(pool);
    }
    let pool = Arc::new(LazyPool::new(count));
    pools.insert(count, Arc::downgrade(&pool));
    Some(pool)
}

/// Runs `work(threads)` for an input of `len` bytes: on `pool` with
/// `threads` = its size when the input is at least `PARALLEL_MIN`, else (or
/// if no pool can be built) on the calling thread with `threads` = 1. After
/// work on the pool, every pool thread wipes the stack below its idle
/// frame, where the work's frames held key material (`crate::wipe`).
pub fn install<R: Send>(pool: Option<&LazyPool>, len: usize, work: impl FnOnce(usize) -> R + Send) -> R {
    match pool.filter(|_| len >= PARALLEL_MIN).and_then(LazyPool::get) {
        Some(pool) => {
            let threads = pool.current_num_threads();
            let result = pool.install(|| work(threads));
            scrub_workers(&pool);
            result
        }
        None => work(1),
    }
}

/// Wipes the stacks of `pool`'s threads below their idle frames.
pub fn scrub_workers(pool: &ThreadPool) {
    pool.broadcast(|_| crate::wipe::scrub_stack_deep());
}

/// The segment length for splitting `len` bytes over `threads`: a multiple of
/// the 64-byte ChaCha block, so every segment starts on a block boundary.
pub fn segment_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).div_ceil(64).max(1) * 64
}
