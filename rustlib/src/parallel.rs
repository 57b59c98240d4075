//! One large message on several cores, bit-identical to the one-thread path.
//!
//! The ChaCha keystream is seekable, so the message splits into segments
//! (multiples of the 64-byte block) that threads XOR independently; BLAKE3 is
//! a tree hash, so the MAC's `update_rayon` hashes subtrees in parallel. Both
//! run on a rayon pool of exactly `max_threads` threads, made once per size
//! and kept for the life of the process (as blake3-py and b3sum do).
//!
//! Fork safety: a child made by `fork()` inherits the pool objects but none
//! of their threads, so work sent to an inherited pool would wait forever.
//! The pool cache therefore remembers the process id that built it; a
//! process that finds another process's cache leaks it (its threads, locks
//! and queues exist only in the parent: dropping it could block) and builds
//! its own pools. The cache lock is never held while a pool is being built,
//! so a fork from another thread cannot leave it locked for long.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

/// Messages shorter than this stay on the calling thread: below it, waking
/// the pool costs more than the split saves.
pub const PARALLEL_MIN: usize = 1 << 20;

/// The thread count `requested` means: 0 is every core.
pub fn resolve(requested: usize) -> usize {
    if requested == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        requested
    }
}

/// How many threads a message of `len` bytes gets: 1 below `PARALLEL_MIN`.
pub fn threads_for(max_threads: usize, len: usize) -> usize {
    if len < PARALLEL_MIN {
        1
    } else {
        resolve(max_threads)
    }
}

/// The pools of this process, by thread count.
struct Pools {
    pid: u32,
    by_threads: HashMap<usize, Arc<ThreadPool>>,
}

fn pools() -> std::sync::MutexGuard<'static, Pools> {
    static POOLS: OnceLock<Mutex<Pools>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(|| Mutex::new(Pools { pid: std::process::id(), by_threads: HashMap::new() }))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if pools.pid != pid {
        // A forked child: the parent's pools have no threads here.
        std::mem::forget(std::mem::take(&mut pools.by_threads));
        pools.pid = pid;
    }
    pools
}

fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    if let Some(pool) = pools().by_threads.get(&threads) {
        return Some(pool.clone());
    }
    // Built without the lock held (it spawns threads); if another thread
    // raced us, its pool wins and this one is dropped.
    let built = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cb3-worker-{i}"))
            .build()
            .ok()?,
    );
    Some(pools().by_threads.entry(threads).or_insert(built).clone())
}

/// Runs `work` on a pool of `threads` threads, passing it the number of
/// threads it may use: `threads`, or 1 (on the calling thread) when
/// `threads` is 1 or no pool can be made. The result is the same either way,
/// only slower; `work` must not use rayon when given 1 (it would start
/// rayon's global pool, which is not fork-safe).
pub fn install<R: Send>(threads: usize, work: impl FnOnce(usize) -> R + Send) -> R {
    match (threads > 1).then(|| pool(threads)).flatten() {
        Some(pool) => pool.install(|| work(threads)),
        None => work(1),
    }
}

/// The segment length for splitting `len` bytes over `threads`: a multiple of
/// the 64-byte ChaCha block, so every segment starts on a block boundary.
pub fn segment_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).div_ceil(64).max(1) * 64
}
