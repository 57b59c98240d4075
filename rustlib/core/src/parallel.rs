//! Thread pools for work on one large input, shared by the AEAD, the
//! chunked format's batches and the BLAKE3 hashers, and the one thread
//! budget (`thread_count`: the usable cores, affinity and cgroup quota).
//!
//! AEAD: the ChaCha keystream is seekable and BLAKE3 is a tree hash, so a
//! message splits into leaves (subtrees of the MAC input) that threads
//! encrypt and MAC independently; the calling thread takes leaves too, and
//! the pool's threads help (`Workers`). Hashers run BLAKE3's `update_rayon`
//! on the pool (`install`ed). The bytes never depend on the thread count.
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
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

use crate::error::{Error, Result};

/// AEAD messages shorter than this stay on the calling thread: below it,
/// waking the pool costs more than the split saves.
pub const PARALLEL_MIN: usize = 1 << 20;

/// The cores this process may use (its CPU affinity and cgroup quota, as
/// `std::thread::available_parallelism` reports them; 1 if unknown),
/// measured once: no pool ever has more threads than this.
pub fn usable_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The threads a pool for `max_threads` has: 0 means every usable core,
/// any other value is capped at them.
pub fn thread_count(max_threads: usize) -> usize {
    match max_threads {
        0 => usable_cores(),
        n => n.min(usable_cores()),
    }
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

/// Wipes the stacks of `pool`'s threads below their idle frames.
pub fn scrub_workers(pool: &ThreadPool) {
    pool.broadcast(|_| crate::wipe::scrub_stack_deep());
}

/// The segment length for splitting `len` bytes over `threads`: a multiple of
/// the 64-byte ChaCha block, so every segment starts on a block boundary.
pub fn segment_len(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1)).div_ceil(64).max(1) * 64
}

/// The threads one call may use (an AEAD message, a batch of chunks): the
/// calling thread, and `threads - 1` helpers from `pool` (none when `pool`
/// is None).
///
/// Why the caller works too, rather than handing the whole call to the pool
/// (`install`) and sleeping: every hand-over wakes a thread, and on a VM a
/// sleeping thread's virtual CPU may first have to be scheduled by the host,
/// so a hand-over can cost more than a leaf of work (docs/performance.md,
/// "Threads: the tree-parallel pass and the calling thread"). Here the caller starts at once, the helpers take
/// tasks whenever they wake, and a helper that wakes after the last task is
/// taken touches nothing.
pub struct Workers {
    pool: Option<Arc<ThreadPool>>,
    threads: usize,
}

/// A helper task's view of one `Workers::each` call. The caller's `task`
/// lives on the caller's stack: a helper may call it only while counted in
/// `state` (it enters by incrementing the count, unless `CLOSED` is set, and
/// leaves by decrementing it), and the caller returns only after setting
/// `CLOSED` and seeing the count at zero, so `task` outlives every use.
struct Shared {
    /// The next task index to take.
    next: AtomicUsize,
    count: usize,
    /// `CLOSED`, plus the number of helpers inside.
    state: AtomicUsize,
    /// A task failed or panicked: no thread takes another.
    failed: AtomicBool,
    /// The first task failure.
    failure: Mutex<Option<Error>>,
    /// A task panicked on a helper.
    panicked: AtomicBool,
    task: *const (dyn Fn(usize) -> Result<()> + Sync + 'static),
}

// SAFETY: `task` is Sync and is dereferenced only under the `state` protocol
// above; everything else is atomics and a mutex.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

const CLOSED: usize = 1 << (usize::BITS - 1);

impl Shared {
    /// Runs tasks until none is left or one has failed; keeps the first failure.
    fn take_all(&self, task: &(dyn Fn(usize) -> Result<()> + Sync)) {
        while !self.failed.load(Ordering::Relaxed) {
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.count {
                return;
            }
            if let Err(code) = task(index) {
                self.failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get_or_insert(code);
                self.failed.store(true, Ordering::Relaxed);
            }
        }
    }

    /// A helper's whole job: enter unless the call is closed, take tasks,
    /// leave; then wipe the stack its tasks used (key material).
    fn help(&self) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & CLOSED != 0 {
                return;
            }
            match self.state.compare_exchange_weak(state, state + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        // SAFETY: entered, and the call is not closed: the caller waits
        // for this helper to leave before `task` goes away.
        let task = unsafe { &*self.task };
        if catch_unwind(AssertUnwindSafe(|| self.take_all(task))).is_err() {
            self.panicked.store(true, Ordering::Relaxed);
            self.failed.store(true, Ordering::Relaxed);
        }
        self.state.fetch_sub(1, Ordering::Release);
        crate::wipe::scrub_stack_deep();
    }
}

impl Workers {
    /// The calling thread alone.
    pub const ONE: Workers = Workers { pool: None, threads: 1 };

    /// For an AEAD message of `len` bytes: `pool`'s threads from
    /// `PARALLEL_MIN` bytes on, else the calling thread alone.
    pub fn for_len(pool: Option<&LazyPool>, len: usize) -> Self {
        Workers::of(pool.filter(|_| len >= PARALLEL_MIN))
    }

    /// `pool`'s threads (if it is given and can be built), else the calling
    /// thread alone.
    pub fn of(pool: Option<&LazyPool>) -> Self {
        match pool.and_then(LazyPool::get) {
            Some(pool) => Workers { threads: pool.current_num_threads(), pool: Some(pool) },
            None => Workers::ONE,
        }
    }

    /// `threads` shares of the work, all run by the calling thread (tests:
    /// the same split as with a pool of that many threads).
    #[cfg(test)]
    pub fn split_only(threads: usize) -> Self {
        Workers { pool: None, threads }
    }

    /// How many threads the work is split for.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `task(i)` for every `i` in `0..count`, each once, on the calling
    /// thread and up to `threads - 1` helpers; returns when all have run, or
    /// after a task fails (tasks not yet started are skipped) with the first
    /// failure. A panic on the calling thread resumes after the helpers have
    /// left; a panic on a helper returns `Panic`.
    pub fn each(&self, count: usize, task: &(dyn Fn(usize) -> Result<()> + Sync)) -> Result<()> {
        let Some(pool) = self.pool.as_ref().filter(|_| count > 1 && self.threads > 1) else {
            return (0..count).try_for_each(task);
        };
        // SAFETY: only the lifetime is erased; `Shared` documents why the
        // pointer is never used after this call returns.
        let erased: *const (dyn Fn(usize) -> Result<()> + Sync + 'static) =
            unsafe { std::mem::transmute(task as *const (dyn Fn(usize) -> Result<()> + Sync + '_)) };
        let shared = Arc::new(Shared {
            next: AtomicUsize::new(0),
            count,
            state: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            panicked: AtomicBool::new(false),
            task: erased,
        });
        for _ in 1..self.threads.min(count) {
            let shared = Arc::clone(&shared);
            pool.spawn(move || shared.help());
        }
        let mine = catch_unwind(AssertUnwindSafe(|| shared.take_all(task)));
        // Every task is taken (or one failed): close, then wait for the
        // helpers inside (each finishing at most one task). Helpers that
        // arrive later leave at once.
        let mut spins = 0u32;
        let mut state = shared.state.fetch_or(CLOSED, Ordering::AcqRel) | CLOSED;
        while state != CLOSED {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            state = shared.state.load(Ordering::Acquire);
        }
        if let Err(payload) = mine {
            resume_unwind(payload);
        }
        if shared.panicked.load(Ordering::Relaxed) {
            return Err(Error::Panic);
        }
        let failure = *shared.failure.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        failure.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn two_threads() -> Workers {
        let pool = Arc::new(ThreadPoolBuilder::new().num_threads(2).thread_name(|i| format!("cb3-worker-{i}")).build().unwrap());
        Workers { pool: Some(pool), threads: 2 }
    }

    fn on_worker() -> bool {
        std::thread::current().name().is_some_and(|name| name.starts_with("cb3-worker-"))
    }

    /// Waits (up to 10 s) until `flag` is set: lets a helper wake on a
    /// loaded machine.
    fn wait_for(flag: &AtomicBool) {
        let start = Instant::now();
        while !flag.load(Ordering::Acquire) && start.elapsed() < Duration::from_secs(10) {
            std::thread::yield_now();
        }
    }

    #[test]
    fn each_runs_every_task_once() {
        for workers in [Workers::ONE, Workers::split_only(3), two_threads()] {
            for count in [0usize, 1, 2, 3, 17, 1000] {
                let runs: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
                let task = |index: usize| {
                    runs[index].fetch_add(1, Ordering::Relaxed);
                    Ok(())
                };
                assert_eq!(workers.each(count, &task), Ok(()));
                assert!(runs.iter().all(|runs| runs.load(Ordering::Relaxed) == 1), "{count} tasks, {} threads", workers.threads());
            }
        }
    }

    #[test]
    fn helpers_take_tasks() {
        // The caller's tasks wait for a helper to start one: both threads work.
        let workers = two_threads();
        let helped = AtomicBool::new(false);
        let task = |_: usize| {
            if on_worker() {
                helped.store(true, Ordering::Release);
            } else {
                wait_for(&helped);
            }
            Ok(())
        };
        assert_eq!(workers.each(8, &task), Ok(()));
        assert!(helped.load(Ordering::Acquire), "no helper took a task in 10 s");
    }

    #[test]
    fn a_helper_panic_is_an_error() {
        let workers = two_threads();
        let helped = AtomicBool::new(false);
        let task = |_: usize| {
            if on_worker() {
                helped.store(true, Ordering::Release);
                panic!("a task panics on a helper");
            }
            wait_for(&helped);
            Ok(())
        };
        assert_eq!(workers.each(8, &task), Err(Error::Panic));
        // The pool still works.
        assert_eq!(workers.each(8, &|_| Ok(())), Ok(()));
    }

    #[test]
    fn a_failure_is_returned_and_stops_the_rest() {
        for workers in [Workers::ONE, two_threads()] {
            let runs = AtomicUsize::new(0);
            let task = |index: usize| {
                runs.fetch_add(1, Ordering::Relaxed);
                if index == 0 {
                    return Err(Error::OutOfMemory);
                }
                std::thread::sleep(Duration::from_millis(1));
                Ok(())
            };
            assert_eq!(workers.each(1000, &task), Err(Error::OutOfMemory));
            // Task 0 fails at once; each thread finishes at most the task it had.
            assert!(runs.load(Ordering::Relaxed) <= 1 + workers.threads(), "{} tasks ran", runs.load(Ordering::Relaxed));
        }
    }

    #[test]
    fn a_caller_panic_resumes_after_the_helpers_leave() {
        let workers = two_threads();
        let inside = AtomicUsize::new(0);
        let task = |_: usize| {
            inside.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
            inside.fetch_sub(1, Ordering::SeqCst);
            if !on_worker() {
                panic!("a task panics on the caller");
            }
            Ok(())
        };
        let result = catch_unwind(AssertUnwindSafe(|| workers.each(64, &task)));
        assert!(result.is_err(), "the caller's panic resumes");
        // No helper is still running a task (`task` borrows this frame).
        assert_eq!(inside.load(Ordering::SeqCst), 0);
    }
}
