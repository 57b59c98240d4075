//! What the opaque objects of the C ABI (`cb3_aead`, `cb3_stream`,
//! `cb3_blake3`, `cb3_chacha`) have in common:
//!
//! * **A tag checked on every call.** Each object is allocated behind a
//!   header holding a per-type magic number. Every function checks it before
//!   touching the object, and `cb3_*_free` replaces it (atomically) before
//!   releasing the memory. A call on a freed object, or on a pointer of the
//!   wrong type, therefore returns `CB3_RESULT_INVALID_ARGUMENT` instead of
//!   reading freed memory as an object; freeing an object twice (or freeing a
//!   pointer that is not a live object of that type) prints a message to
//!   stderr and aborts, instead of corrupting the heap. This is a best-effort
//!   net for caller bugs, not a guarantee: once the allocator has handed the
//!   memory of a freed object to a new object of the same type, a stale
//!   pointer reaches the new object.
//! * **The process that created it.** The header records the process id at
//!   creation. A stream or raw ChaCha object refuses to work in another
//!   process (a `fork()` child) with `CB3_RESULT_FORKED`: parent and child
//!   would otherwise both continue from the same message index or keystream
//!   position, reusing nonces. The check runs before any lock is taken, so a
//!   child never blocks on a lock that a parent's thread held at the fork.
//!   The process id is cached and refreshed by a `pthread_atfork` child
//!   handler, so the check is two atomic loads, not a system call. (A child
//!   made by a raw `clone`/`fork` system call that skips the atfork handlers is
//!   not recognised.)
//! * **Locks that let a waiting caller step aside.** [`lock`] takes an
//!   object's lock; when it is busy it calls the wait hooks set with
//!   `cb3_set_wait_hooks` around the blocking wait, so that a language
//!   binding can release its interpreter lock (Python's GIL) meanwhile.

use std::ffi::{c_uint, c_void};
use std::io::Write;
use std::mem::offset_of;
use std::ptr::{addr_of, addr_of_mut};
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use crate::errors::{cb3_result, Cb3Result};

/// A type of object made and freed through the C ABI.
pub trait Object {
    /// The tag of a live object of this type.
    const MAGIC: u64;
    /// The C name of the type, for messages (its free function is
    /// `<NAME>_free`).
    const NAME: &'static str;
    /// True for objects that carry a keystream position or a message
    /// counter: a copy in a `fork()` child would reuse keystream or nonces,
    /// so only the process that made one may use it (`CB3_RESULT_FORKED`).
    const FORK_BOUND: bool = false;
}

// (The other types implement it next to their definitions.)
impl Object for crate::aead::cb3_aead {
    const MAGIC: u64 = u64::from_le_bytes(*b"cb3:aead");
    const NAME: &'static str = "cb3_aead";
}

/// Written over the tag when an object is freed.
const FREED: u64 = u64::from_le_bytes(*b"cb3:free");

/// An object and its header, in one allocation. C sees a pointer to `value`.
#[repr(C)]
struct Tagged<T> {
    magic: AtomicU64,
    /// The process that created the object (see [`process_id`]).
    owner: AtomicU32,
    value: T,
}

/// The header of the object at `ptr` (which points at `Tagged::value`).
fn header<T>(ptr: *const T) -> *mut Tagged<T> {
    ptr.cast::<u8>().wrapping_sub(offset_of!(Tagged<T>, value)).cast::<Tagged<T>>().cast_mut()
}

/// Allocates `value` behind a live header and stores the pointer in `*out`.
///
/// # Safety
/// `out` is NULL or valid for one write.
pub unsafe fn give<T: Object>(value: T, out: *mut *mut T) -> Cb3Result<()> {
    if out.is_null() {
        return Err(cb3_result::NullParameter);
    }
    let tagged = Box::into_raw(Box::new(Tagged {
        magic: AtomicU64::new(T::MAGIC),
        owner: AtomicU32::new(process_id()),
        value,
    }));
    // SAFETY: `out` is not NULL and the caller guarantees it is valid for a
    // write; `tagged` is the live allocation just made.
    unsafe { out.write(addr_of_mut!((*tagged).value)) };
    Ok(())
}

/// The types of object the C ABI makes, for `cb3_object_size`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_object_kind {
    /// `cb3_aead`.
    Aead = 0,
    /// `cb3_stream`.
    Stream = 1,
    /// `cb3_blake3`.
    Blake3 = 2,
    /// `cb3_chacha`.
    Chacha = 3,
    /// `cb3_chunked`.
    Chunked = 4,
}

/// The bytes one object of `kind` (a `cb3_object_kind` value) takes in the
/// allocation that its `*_new` function makes, header included (a
/// `cb3_chunked` also holds its associated data, not counted here); 0 for a
/// value that is not a `cb3_object_kind`. For a binding whose objects a
/// garbage collector frees: the collector cannot see this memory, and may
/// wait too long to free the objects unless told (PyPy:
/// `__pypy__.add_memory_pressure`).
#[no_mangle]
pub extern "C" fn cb3_object_size(kind: c_uint) -> usize {
    use crate::{aead::cb3_aead, chacha20::cb3_chacha, chunked::cb3_chunked, hash::cb3_blake3, stream::cb3_stream};
    const KINDS: [(cb3_object_kind, usize); 5] = [
        (cb3_object_kind::Aead, size_of::<Tagged<cb3_aead>>()),
        (cb3_object_kind::Stream, size_of::<Tagged<cb3_stream>>()),
        (cb3_object_kind::Blake3, size_of::<Tagged<cb3_blake3>>()),
        (cb3_object_kind::Chacha, size_of::<Tagged<cb3_chacha>>()),
        (cb3_object_kind::Chunked, size_of::<Tagged<cb3_chunked>>()),
    ];
    KINDS.iter().find(|(known, _)| *known as c_uint == kind).map_or(0, |&(_, size)| size)
}

/// The header of `ptr` if it is a live object of type `T`: NULL is
/// `CB3_RESULT_NULL_PARAMETER`, anything else that does not carry `T`'s tag
/// (freed, another type, misaligned) `CB3_RESULT_INVALID_ARGUMENT`.
///
/// # Safety
/// `ptr` is NULL or points just past a readable header: it came from
/// [`give`] (freed or not), as the C API requires.
unsafe fn live_header<'a, T: Object>(ptr: *const T) -> Cb3Result<&'a Tagged<T>> {
    if ptr.is_null() {
        return Err(cb3_result::NullParameter);
    }
    let tagged = header(ptr);
    // SAFETY: the caller guarantees a readable header before `ptr` (freed
    // memory keeps its FREED tag, see `free`); the tag is atomic and read only
    // once the pointer is known to be aligned.
    if !tagged.is_aligned() || unsafe { (*addr_of!((*tagged).magic)).load(Ordering::Acquire) } != T::MAGIC {
        return Err(cb3_result::InvalidArgument);
    }
    // SAFETY: the tag says this is a live `Tagged<T>`, made by `give`.
    Ok(unsafe { &*tagged })
}

/// The live object at `ptr` (see [`live_header`] for the errors); a
/// `FORK_BOUND` one only in the process that created it, else
/// `CB3_RESULT_FORKED`.
///
/// # Safety
/// As for [`live_header`].
pub unsafe fn get<'a, T: Object>(ptr: *const T) -> Cb3Result<&'a T> {
    // SAFETY: the caller's guarantee is get_bound's.
    unsafe { get_bound(ptr, T::FORK_BOUND) }
}

/// As [`get`], bound to the process that created the object when `bound`
/// (whatever `T::FORK_BOUND` says): for a type bound for some operations
/// only (`cb3_chunked` seals only in its own process, opens anywhere).
///
/// # Safety
/// As for [`live_header`].
pub unsafe fn get_bound<'a, T: Object>(ptr: *const T, bound: bool) -> Cb3Result<&'a T> {
    // SAFETY: the caller's guarantee is live_header's.
    let tagged = unsafe { live_header(ptr) }?;
    if bound && tagged.owner.load(Ordering::Acquire) != process_id() {
        return Err(cb3_result::Forked);
    }
    Ok(&tagged.value)
}

/// The live object at `ptr` and the id of the process that owns it, which
/// the caller may move to this process (see `cb3_blake3`).
///
/// # Safety
/// As for [`live_header`].
pub unsafe fn get_with_owner<'a, T: Object>(ptr: *const T) -> Cb3Result<(&'a T, &'a AtomicU32)> {
    // SAFETY: the caller's guarantee is live_header's.
    unsafe { live_header(ptr) }.map(|tagged| (&tagged.value, &tagged.owner))
}

/// Frees the object at `ptr` (NULL: nothing). A pointer that is not a live
/// object of type `T` (freed already, or never one) aborts the process with
/// a message on stderr: freeing it would corrupt the heap.
///
/// # Safety
/// As for [`live_header`]; no other thread uses the object.
pub unsafe fn free<T: Object>(ptr: *mut T) {
    if ptr.is_null() {
        return;
    }
    let tagged = header(ptr);
    // SAFETY: as in `live_header`: a readable header, its atomic tag read
    // only when aligned; the exchange makes this the one call that frees it.
    let released = tagged.is_aligned()
        && unsafe { &*addr_of!((*tagged).magic) }
            .compare_exchange(T::MAGIC, FREED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
    if !released {
        let _ = writeln!(
            std::io::stderr(),
            "cb3: {}_free({:p}): not a live {} (freed twice, or never made by cb3): aborting",
            T::NAME,
            ptr,
            T::NAME
        );
        std::process::abort();
    }
    // SAFETY: `tagged` came from Box::into_raw in `give`, its tag was live
    // and is now FREED, and no other thread uses the object.
    drop(unsafe { Box::from_raw(tagged) });
}

/// Releases the memory of an object whose value the caller already dropped
/// in place (`std::ptr::drop_in_place(ptr)`), as `free` would: for tests
/// that inspect the memory between the two steps.
///
/// # Safety
/// `ptr` came from [`give`], its value was dropped, and it is used no more.
#[doc(hidden)]
pub unsafe fn dealloc_dropped<T>(ptr: *mut T) {
    // SAFETY: the allocation of `give` (a Box of Tagged<T>, this layout),
    // whose value the caller dropped and no longer uses.
    unsafe { std::alloc::dealloc(header(ptr).cast::<u8>(), std::alloc::Layout::new::<Tagged<T>>()) };
}

// ---- the current process ----

const UNSET: u8 = 0;
const REGISTERING: u8 = 1;
const READY: u8 = 2;

static PID_STATE: AtomicU8 = AtomicU8::new(UNSET);
static PID: AtomicU32 = AtomicU32::new(0);

/// Runs in the child after every `fork()` (registered with pthread_atfork).
extern "C" fn after_fork_in_child() {
    // getpid is async-signal-safe, as a child handler must be.
    PID.store(unsafe { libc::getpid() } as u32, Ordering::Relaxed);
    PID_STATE.store(READY, Ordering::Release);
}

/// The id of the calling process, cached: the atfork child handler updates
/// it in a forked child, so this is two atomic loads, not a system call.
pub fn process_id() -> u32 {
    if PID_STATE.load(Ordering::Acquire) == READY {
        return PID.load(Ordering::Relaxed);
    }
    process_id_slow()
}

#[cold]
fn process_id_slow() -> u32 {
    if PID_STATE.compare_exchange(UNSET, REGISTERING, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        PID.store(std::process::id(), Ordering::Relaxed);
        // SAFETY: registers a function that only stores two atomics.
        let registered = unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) } == 0;
        if registered {
            PID_STATE.store(READY, Ordering::Release);
        }
        // Unregistered, the state stays REGISTERING and every call asks the
        // kernel: slower, still right.
        return std::process::id();
    }
    // Another thread is registering: wait briefly for it. (In a child forked
    // while a parent's thread was registering, nobody will finish: then ask
    // the kernel every time, which is always right.)
    for _ in 0..100 {
        if PID_STATE.load(Ordering::Acquire) == READY {
            return PID.load(Ordering::Relaxed);
        }
        std::thread::yield_now();
    }
    std::process::id()
}

// ---- locks and wait hooks ----

/// Called before a cb3 function blocks on a busy object lock; its result is
/// passed to the matching `cb3_wait_end` call.
pub type cb3_wait_begin = Option<unsafe extern "C" fn() -> *mut c_void>;
/// Called after the blocking wait, with the value `cb3_wait_begin` returned.
pub type cb3_wait_end = Option<unsafe extern "C" fn(token: *mut c_void)>;

struct WaitHooks {
    begin: cb3_wait_begin,
    end: cb3_wait_end,
}

static WAIT_HOOKS: AtomicPtr<WaitHooks> = AtomicPtr::new(std::ptr::null_mut());

/// Sets the process-wide wait hooks, for language bindings with an
/// interpreter lock: when a call finds an object's lock held by another
/// thread, it calls `begin()` on the calling thread, blocks until the lock
/// is free, then calls `end(token)` with `begin`'s result, still holding the
/// object's lock. Python's binding releases the GIL in `begin` and takes it
/// back in `end`, so that a thread waiting for a shared hasher or stream does
/// not stall every other thread (including the one it waits for).
///
/// An uncontended lock calls neither. Both may be NULL (the default: just
/// block). The hooks must not call cb3 functions on the object being waited
/// for, nor unwind. Set them once, before threads use cb3 objects; a later
/// call replaces them for calls that start afterwards. Returns
/// `CB3_RESULT_OK`, or `CB3_RESULT_INVALID_ARGUMENT` if exactly one of them is
/// NULL.
#[no_mangle]
pub extern "C" fn cb3_set_wait_hooks(begin: cb3_wait_begin, end: cb3_wait_end) -> cb3_result {
    if begin.is_some() != end.is_some() {
        return cb3_result::InvalidArgument;
    }
    // Never freed: a call that loaded the old hooks may still use them. They
    // stay reachable from INSTALLED (so leak checkers do not report them).
    static INSTALLED: Mutex<Vec<Box<WaitHooks>>> = Mutex::new(Vec::new());
    let mut installed = INSTALLED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let hooks = Box::new(WaitHooks { begin, end });
    WAIT_HOOKS.store(&*hooks as *const WaitHooks as *mut WaitHooks, Ordering::Release);
    installed.push(hooks);
    cb3_result::Ok
}

/// Takes `mutex`, calling the wait hooks around a blocking wait. A poisoned
/// lock only means a panic elsewhere (already reported as
/// `CB3_RESULT_PANIC`): the value is still valid, so it is used.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => {
            // SAFETY: the pointer is NULL or a leaked, never freed WaitHooks.
            let hooks = unsafe { WAIT_HOOKS.load(Ordering::Acquire).as_ref() };
            let (begin, end) = hooks.map_or((None, None), |hooks| (hooks.begin, hooks.end));
            // SAFETY: the hooks are C functions with these signatures.
            let token = begin.map_or(std::ptr::null_mut(), |begin| unsafe { begin() });
            let guard = mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(end) = end {
                unsafe { end(token) };
            }
            guard
        }
    }
}
