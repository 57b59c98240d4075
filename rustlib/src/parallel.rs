//! Thread pools for work on one large input, shared by the AEAD
//! (`cb3_aead_new_with_threads`) and BLAKE3 hashers (`cb3_blake3_*`).
//!
//! AEAD: the ChaCha keystream is seekable, so a message splits into segments
//! (multiples of the 64-byte block) that threads XOR independently, and
//! BLAKE3 is a tree hash, so the MAC's `update_rayon` hashes subtrees in
//! parallel. The bytes never depend on the thread count.
//!
//! Fork safety: a child process made by `fork()` has none of its parent's
//! pool threads, so a rayon pool inherited from the parent (rayon's global
//! pool included) would wait forever for them. Every pool here remembers the
//! process that built it, and a child builds its own on first use (the
//! stale one is leaked, its threads existing only in the parent). A pool
//! that cannot be built leaves the work on the calling thread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// AEAD messages shorter than this stay on the calling thread: below it,
/// waking the pool costs more than the split saves.
pub const PARALLEL_MIN: usize = 1 << 20;

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
            builder = builder.num_threads(self.threads);
        }
        let pool = Arc::new(builder.build().ok()?);
        *slot = Some((pid, Arc::clone(&pool)));
        Some(pool)
    }
}

/// The process-wide pool for "every core" (max_threads 0 / AUTO).
pub static AUTO_POOL: LazyPool = LazyPool::new(0);

/// The pool for a `max_threads` setting: none for 1, the AUTO pool for 0,
/// else one process-wide pool per thread count.
pub fn pool_for(max_threads: usize) -> Option<Arc<ThreadPool>> {
    static BY_COUNT: OnceLock<Mutex<HashMap<usize, Arc<LazyPool>>>> = OnceLock::new();
    match max_threads {
        1 => None,
        0 => AUTO_POOL.get(),
        count => {
            let lazy = {
                let mut pools = BY_COUNT.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
                Arc::clone(pools.entry(count).or_insert_with(|| Arc::new(LazyPool::new(count))))
            };
            lazy.get()
        }
    }
}

/// Runs `work(threads)` for an input of `len` bytes: on the pool for
/// `max_threads` with `threads` = its size when the input is at least
/// `PARALLEL_MIN`, else (or if no pool can be built) on the calling thread
/// with `threads` = 1.
pub fn install<R: Send>(max_threads: usize, len: usize, work: impl FnOnce(usize) -> R + Send) -> R {
    match (len >= PARALLEL_MIN).then(|| pool_for(max_threads)).flatten() {
        Some(pool) => {
            let threads = pool.current_num_threads();
            pool.install(|| work(threads))
        }
        None => work(1),
    }
}

/// The segment length for splitting `len` bytes over `threads`: a multiple of
/// the 64-byte ChaCha block, so every segment starts on a block boundary.
pub fn segment_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).div_ceil(64).max(1) * 64
}
