//! What every object shares (src/object.rs): the tag checked on every call,
//! the owning process (fork), the wait hooks; and the interruptible file
//! reads of `cb3_blake3_update_file`.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cb3::aead::*;
use cb3::chacha20::*;
use cb3::cb3_result;
use cb3::hash::*;
use cb3::cb3_set_wait_hooks;
use cb3::stream::*;

const KEY: [u8; 32] = [7; 32];
const NONCE: [u8; 24] = [9; 24];

fn new_stream() -> *mut cb3_stream {
    let mut stream = ptr::null_mut();
    assert_eq!(unsafe { cb3_stream_new(KEY.as_ptr(), 32, NONCE.as_ptr(), 24, 0, &mut stream) }, cb3_result::Ok);
    stream
}

fn new_chacha() -> *mut cb3_chacha {
    let mut chacha = ptr::null_mut();
    assert_eq!(unsafe { cb3_chacha_new(KEY.as_ptr(), 32, NONCE.as_ptr(), 12, 0, 20, &mut chacha) }, cb3_result::Ok);
    chacha
}

fn new_hasher() -> *mut cb3_blake3 {
    let mut hasher = ptr::null_mut();
    assert_eq!(unsafe { cb3_blake3_new(1, &mut hasher) }, cb3_result::Ok);
    hasher
}

fn stream_encrypt(stream: *const cb3_stream) -> cb3_result {
    let mut out = [0u8; 33];
    unsafe { cb3_stream_encrypt(stream, b"x".as_ptr(), 1, ptr::null(), 0, out.as_mut_ptr(), 33, ptr::null_mut()) }
}

fn chacha_apply(chacha: *const cb3_chacha) -> cb3_result {
    let mut out = [0u8; 1];
    unsafe { cb3_chacha_apply(chacha, b"x".as_ptr(), 1, out.as_mut_ptr(), 1) }
}

fn hasher_update(hasher: *const cb3_blake3) -> cb3_result {
    unsafe { cb3_blake3_update(hasher, b"x".as_ptr(), 1) }
}

#[test]
fn calls_on_freed_objects_are_invalid_arguments() {
    // No allocation between a free and the calls: the allocator would hand
    // the freed block to the next object of the same size (the limit of a
    // tag: a stale pointer then reaches that new object).
    let stream = new_stream();
    unsafe { cb3_stream_free(stream) };
    assert_eq!(stream_encrypt(stream), cb3_result::InvalidArgument);
    assert_eq!(unsafe { cb3_stream_message_index(stream) }, 0);

    let chacha = new_chacha();
    unsafe { cb3_chacha_free(chacha) };
    assert_eq!(chacha_apply(chacha), cb3_result::InvalidArgument);
    assert_eq!(unsafe { cb3_chacha_seek(chacha, 0, 0) }, cb3_result::InvalidArgument);

    let hasher = new_hasher();
    unsafe { cb3_blake3_free(hasher) };
    assert_eq!(hasher_update(hasher), cb3_result::InvalidArgument);
    assert_eq!(unsafe { cb3_blake3_count(hasher) }, 0);

    let mut aead = ptr::null_mut();
    assert_eq!(unsafe { cb3_aead_new(KEY.as_ptr(), 32, &mut aead) }, cb3_result::Ok);
    unsafe { cb3_aead_free(aead) };
    let mut out = [0u8; 33];
    let r = unsafe {
        cb3_aead_encrypt(aead, NONCE.as_ptr(), 24, b"x".as_ptr(), 1, ptr::null(), 0, out.as_mut_ptr(), 33, ptr::null_mut())
    };
    assert_eq!(r, cb3_result::InvalidArgument);
}

#[test]
fn a_pointer_of_another_type_is_an_invalid_argument() {
    let stream = new_stream();
    let hasher = new_hasher();
    assert_eq!(chacha_apply(stream.cast()), cb3_result::InvalidArgument);
    assert_eq!(hasher_update(stream.cast()), cb3_result::InvalidArgument);
    assert_eq!(stream_encrypt(hasher.cast()), cb3_result::InvalidArgument);
    assert_eq!(stream_encrypt(stream), cb3_result::Ok);
    unsafe {
        cb3_stream_free(stream);
        cb3_blake3_free(hasher);
    }
}

/// Runs `child` in a forked child process; returns its exit status.
fn in_child(child: impl FnOnce() -> i32) -> i32 {
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = child();
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            break;
        }
        if Instant::now() > deadline {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("child hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(libc::WIFEXITED(status), "child died: status {status}");
    libc::WEXITSTATUS(status)
}

#[test]
fn streams_and_chacha_refuse_in_a_forked_child_hashers_move() {
    let stream = new_stream();
    let chacha = new_chacha();
    let hasher = new_hasher();
    assert_eq!(stream_encrypt(stream), cb3_result::Ok);
    assert_eq!(chacha_apply(chacha), cb3_result::Ok);
    let code = in_child(|| {
        let mut failures = 0;
        failures += (stream_encrypt(stream) != cb3_result::Forked) as i32;
        failures += (chacha_apply(chacha) != cb3_result::Forked) as i32;
        failures += (unsafe { cb3_stream_message_index(stream) } != 1) as i32;
        let (mut high, mut low) = (9u64, 9u64);
        failures += (unsafe { cb3_chacha_position(chacha, &mut high, &mut low) } != cb3_result::Ok) as i32;
        failures += (high != 0 || low != 1) as i32;
        failures += (hasher_update(hasher) != cb3_result::Ok) as i32; // idle: moves here
        // Objects made in the child work; freeing the parent's copies is allowed.
        let fresh = new_stream();
        failures += (stream_encrypt(fresh) != cb3_result::Ok) as i32;
        unsafe {
            cb3_stream_free(fresh);
            cb3_stream_free(stream);
            cb3_chacha_free(chacha);
            cb3_blake3_free(hasher);
        }
        failures
    });
    assert_eq!(code, 0);
    assert_eq!(stream_encrypt(stream), cb3_result::Ok);
    assert_eq!(chacha_apply(chacha), cb3_result::Ok);
    unsafe {
        cb3_stream_free(stream);
        cb3_chacha_free(chacha);
        cb3_blake3_free(hasher);
    }
}

static BEGINS: AtomicUsize = AtomicUsize::new(0);
static ENDS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_begin() -> *mut c_void {
    BEGINS.fetch_add(1, Ordering::SeqCst);
    ptr::dangling_mut::<u8>().cast()
}

unsafe extern "C" fn count_end(token: *mut c_void) {
    assert_eq!(token, ptr::dangling_mut::<u8>().cast());
    ENDS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn stop_after_a_while(arg: *mut c_void) -> c_int {
    let calls = &*(arg as *const AtomicUsize);
    (calls.fetch_add(1, Ordering::SeqCst) >= 3) as c_int
}

#[test]
fn wait_hooks_run_only_around_a_blocking_wait_and_update_file_is_interruptible() {
    assert_eq!(cb3_set_wait_hooks(Some(count_begin), None), cb3_result::InvalidArgument);
    assert_eq!(cb3_set_wait_hooks(Some(count_begin), Some(count_end)), cb3_result::Ok);
    let hasher = new_hasher() as usize;
    // Uncontended: no hook.
    assert_eq!(hasher_update(hasher as *const _), cb3_result::Ok);
    assert_eq!(BEGINS.load(Ordering::SeqCst), 0);
    // One thread hashes /dev/zero (holding the lock) until its interrupt
    // callback stops it, after 3 checks (>= 60 ms); the other waits.
    let started = Arc::new(Barrier::new(2));
    let reader = {
        let started = Arc::clone(&started);
        std::thread::spawn(move || {
            let calls = AtomicUsize::new(0);
            let path = b"/dev/zero";
            let mut os_error = 0;
            started.wait();
            let r = unsafe {
                cb3_blake3_update_file(
                    hasher as *const _,
                    path.as_ptr(),
                    path.len(),
                    Some(stop_after_a_while),
                    &calls as *const AtomicUsize as *mut c_void,
                    &mut os_error,
                )
            };
            (r, calls.load(Ordering::SeqCst))
        })
    };
    started.wait();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(hasher_update(hasher as *const _), cb3_result::Ok);
    let (r, calls) = reader.join().unwrap();
    assert_eq!((r, calls), (cb3_result::Interrupted, 4));
    assert_eq!((BEGINS.load(Ordering::SeqCst), ENDS.load(Ordering::SeqCst)), (1, 1));
    assert!(unsafe { cb3_blake3_count(hasher as *const _) } > 64 * 1024);
    assert_eq!(cb3_set_wait_hooks(None, None), cb3_result::Ok);
    unsafe { cb3_blake3_free(hasher as *mut _) };
}
