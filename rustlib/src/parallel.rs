//! One large message on several cores, bit-identical to the one-thread path.
//!
//! The ChaCha keystream is seekable, so the message splits into segments
//! (multiples of the 64-byte block) that threads XOR independently; BLAKE3 is
//! a tree hash, so the MAC's `update_rayon` hashes subtrees in parallel. Both
//! run on a rayon pool of exactly `max_threads` threads, made once per size
//! and kept for the life of the process (as blake3-py and b3sum do).

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

fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Some(pool.clone());
    }
    let pool = Arc::new(
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cb3-worker-{i}"))
            .build()
            .ok()?,
    );
    pools.insert(threads, pool.clone());
    Some(pool)
}

/// Runs `work` on a pool of `threads` threads (directly when `threads` is 1,
/// or if no pool can be made: the result is the same, only slower).
pub fn install<R: Send>(threads: usize, work: impl FnOnce() -> R + Send) -> R {
    match (threads > 1).then(|| pool(threads)).flatten() {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// The segment length for splitting `len` bytes over `threads`: a multiple of
/// the 64-byte ChaCha block, so every segment starts on a block boundary.
pub fn segment_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).div_ceil(64).max(1) * 64
}
