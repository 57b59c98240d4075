//! Key material held by cb3 objects is wiped when they are freed: the
//! memory of a `cb3_aead` (its key) and of a `cb3_stream` (its `StreamKey`:
//! key and nonce) holds no trace of the secret once the object is dropped.
//!
//! `cb3_aead_free` is drop_in_place and then dealloc (of the object and its
//! tag, `object.rs`); these tests run the two steps apart so that the memory
//! can be read in between, while it is still allocated.

use std::mem::size_of;

use cb3::aead::{cb3_aead, cb3_aead_encrypt, cb3_aead_new, cb3_aead_new_with_threads};
use cb3::errors::cb3_result;
use cb3::stream::{cb3_stream, cb3_stream_encrypt, cb3_stream_new};

/// A secret no other code would produce.
fn secret(n: usize, tag: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(29) ^ tag).collect()
}

unsafe fn contains<T>(ptr: *const T, needle: &[u8]) -> bool {
    let bytes = std::slice::from_raw_parts(ptr as *const u8, size_of::<T>());
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// Drops the object in place, reports whether `needle` survived in its
/// memory, then frees the memory (as the matching *_free does).
unsafe fn survives_drop<T>(ptr: *mut T, needle: &[u8]) -> bool {
    std::ptr::drop_in_place(ptr);
    let found = contains(ptr, needle);
    cb3::dealloc_dropped(ptr);
    found
}

#[test]
fn aead_key_is_wiped_when_freed() {
    for threads in [None, Some(2)] {
        let key = secret(32, 0xA7);
        let mut aead: *mut cb3_aead = std::ptr::null_mut();
        let r = unsafe {
            match threads {
                None => cb3_aead_new(key.as_ptr(), 32, &mut aead),
                Some(n) => cb3_aead_new_with_threads(key.as_ptr(), 32, n, &mut aead),
            }
        };
        assert_eq!(r, cb3_result::Ok);
        // Use it, so that nothing is wiped only because it was never touched.
        let mut out = [0u8; 40];
        let r = unsafe { cb3_aead_encrypt(aead, [1u8; 24].as_ptr(), 24, b"12345678".as_ptr(), 8, std::ptr::null(), 0, out.as_mut_ptr(), 40, std::ptr::null_mut()) };
        assert_eq!(r, cb3_result::Ok);
        assert!(unsafe { contains(aead, &key) }, "the test must see the key while the cipher lives");
        assert!(!unsafe { survives_drop(aead, &key) }, "key left in a freed cb3_aead");
    }
}

#[test]
fn stream_key_and_nonce_are_wiped_when_freed() {
    let key = secret(32, 0x5C);
    let nonce = secret(24, 0x3E);
    let mut stream: *mut cb3_stream = std::ptr::null_mut();
    assert_eq!(unsafe { cb3_stream_new(key.as_ptr(), 32, nonce.as_ptr(), 24, 7, &mut stream) }, cb3_result::Ok);
    let mut out = [0u8; 40];
    let r = unsafe { cb3_stream_encrypt(stream, b"12345678".as_ptr(), 8, std::ptr::null(), 0, out.as_mut_ptr(), 40, std::ptr::null_mut()) };
    assert_eq!(r, cb3_result::Ok);
    assert!(unsafe { contains(stream, &key) && contains(stream, &nonce) });
    let nonce_prefix = &nonce[..16]; // the part of the nonce no message index changes
    unsafe {
        std::ptr::drop_in_place(stream);
        assert!(!contains(stream, &key), "key left in a freed cb3_stream");
        assert!(!contains(stream, nonce_prefix), "nonce left in a freed cb3_stream");
        cb3::dealloc_dropped(stream);
    }
}

#[test]
fn chacha_key_is_wiped_when_freed() {
    use cb3::chacha20::{cb3_chacha, cb3_chacha_apply, cb3_chacha_new};
    for (nonce_len, rounds) in [(8usize, 20u32), (12, 12), (24, 8)] {
        let key = secret(32, 0x6B ^ nonce_len as u8);
        let nonce = secret(nonce_len, 0x11);
        let mut chacha: *mut cb3_chacha = std::ptr::null_mut();
        assert_eq!(unsafe { cb3_chacha_new(key.as_ptr(), 32, nonce.as_ptr(), nonce_len, 0, rounds, &mut chacha) }, cb3_result::Ok);
        let mut buf = [0u8; 300];
        assert_eq!(unsafe { cb3_chacha_apply(chacha, buf.as_ptr(), 100, buf.as_mut_ptr(), 300) }, cb3_result::Ok);
        // XChaCha keeps the HChaCha subkey, not the key itself.
        if nonce_len != 24 {
            assert!(unsafe { contains(chacha, &key) }, "the test must see the key while the object lives");
        }
        assert!(!unsafe { survives_drop(chacha, &key) }, "key left in a freed cb3_chacha ({nonce_len}-byte nonce)");
    }
}

#[test]
fn keyed_hasher_key_is_wiped_when_freed() {
    use cb3::hash::{cb3_blake3, cb3_blake3_finalize, cb3_blake3_new_keyed, cb3_blake3_update};
    for max_threads in [1usize, 2] {
        let key = secret(32, 0x3D);
        let mut hasher: *mut cb3_blake3 = std::ptr::null_mut();
        assert_eq!(unsafe { cb3_blake3_new_keyed(key.as_ptr(), 32, max_threads, &mut hasher) }, cb3_result::Ok);
        assert!(unsafe { contains(hasher, &key) }, "the test must see the key while the hasher lives");
        let data = vec![7u8; 3000];
        let mut out = [0u8; 100];
        unsafe {
            assert_eq!(cb3_blake3_update(hasher, data.as_ptr(), data.len()), cb3_result::Ok);
            assert_eq!(cb3_blake3_finalize(hasher, 1 << 40, out.as_mut_ptr(), out.len()), cb3_result::Ok);
        }
        assert!(!unsafe { survives_drop(hasher, &key) }, "key left in a freed cb3_blake3");
    }
}

/// Every constructor that takes a key leaves no copy of it in the dead stack
/// frames below its caller: the frames of the panic-boundary closure and of
/// the unwinding machinery included, which a scrub from inside the closure
/// does not reach.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn constructors_leave_no_key_on_the_stack() {
    use cb3::chacha20::{cb3_chacha, cb3_chacha_free, cb3_chacha_new};
    use cb3::chunked::{cb3_chunked, cb3_chunked_free, cb3_chunked_header_encode, cb3_chunked_new};
    use cb3::hash::{cb3_blake3, cb3_blake3_free, cb3_blake3_new_keyed};
    use cb3::stream::cb3_stream_free;
    use cb3_core::wipe::probe;

    let key = secret(32, 0x3C);
    let nonce = [7u8; 24];
    let mut header = [0u8; 27];
    let r = unsafe { cb3_chunked_header_encode([9u8; 15].as_ptr(), 15, 65536, header.as_mut_ptr(), 27) };
    assert_eq!(r, cb3_result::Ok);
    let cases: Vec<(&str, Box<dyn Fn()>)> = vec![
        ("cb3_aead_new_with_threads", Box::new(|| {
            let mut aead: *mut cb3_aead = std::ptr::null_mut();
            assert_eq!(unsafe { cb3_aead_new_with_threads(key.as_ptr(), 32, 2, &mut aead) }, cb3_result::Ok);
            unsafe { cb3::aead::cb3_aead_free(aead) };
        })),
        ("cb3_stream_new", Box::new(|| {
            let mut stream: *mut cb3_stream = std::ptr::null_mut();
            assert_eq!(unsafe { cb3_stream_new(key.as_ptr(), 32, nonce.as_ptr(), 24, 0, &mut stream) }, cb3_result::Ok);
            unsafe { cb3_stream_free(stream) };
        })),
        ("cb3_chunked_new", Box::new(|| {
            let mut chunked: *mut cb3_chunked = std::ptr::null_mut();
            let r = unsafe { cb3_chunked_new(key.as_ptr(), 32, header.as_ptr(), 27, std::ptr::null(), 0, 2, &mut chunked) };
            assert_eq!(r, cb3_result::Ok);
            unsafe { cb3_chunked_free(chunked) };
        })),
        ("cb3_chacha_new", Box::new(|| {
            let mut chacha: *mut cb3_chacha = std::ptr::null_mut();
            assert_eq!(unsafe { cb3_chacha_new(key.as_ptr(), 32, nonce.as_ptr(), 24, 0, 20, &mut chacha) }, cb3_result::Ok);
            unsafe { cb3_chacha_free(chacha) };
        })),
        ("cb3_blake3_new_keyed", Box::new(|| {
            let mut hasher: *mut cb3_blake3 = std::ptr::null_mut();
            assert_eq!(unsafe { cb3_blake3_new_keyed(key.as_ptr(), 32, 1, &mut hasher) }, cb3_result::Ok);
            unsafe { cb3_blake3_free(hasher) };
        })),
    ];
    let mut left = Vec::new();
    for (name, make) in cases {
        let (stack, _) = probe::after(|| make());
        let depth = probe::deepest_copy(&stack, &key);
        if depth != 0 {
            left.push(format!("{name}: {depth} bytes below the caller"));
        }
    }
    assert!(left.is_empty(), "copies of the key left on the stack: {left:?}");
}
