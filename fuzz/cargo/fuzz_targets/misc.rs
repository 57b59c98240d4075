//! The rest of the C ABI with fuzzer-chosen arguments: cb3_result_message
//! on any integer, cb3_version, cb3_simd_backend, and the constructors with wrong key
//! and nonce lengths and NULL pointers. Each must return what cb3.h
//! documents (and allocate nothing on failure: LeakSanitizer checks).
#![no_main]

mod common;

use std::ffi::CStr;

use cb3::aead::*;
use cb3::errors::{cb3_result, cb3_result_message};
use cb3::info::{cb3_simd_backend, cb3_version};
use cb3::stream::*;
use common::Control;
use libfuzzer_sys::fuzz_target;

fn text(ptr: *const std::ffi::c_char) -> String {
    assert!(!ptr.is_null());
    unsafe { CStr::from_ptr(ptr) }.to_str().expect("UTF-8").to_owned()
}

fuzz_target!(|data: &[u8]| {
    let mut c = Control::new(data);

    let code = c.u32();
    let message = text(cb3_result_message(code));
    let known = cb3_result::from_code(code).is_some();
    assert_eq!(message == "unknown cb3_result code", !known, "code {code}: {message}");
    assert!(!text(cb3_version()).is_empty());
    assert!(["avx512", "avx2", "sse4.1", "sse2", "neon", "portable"].contains(&text(cb3_simd_backend()).as_str()));

    // Constructors.
    let key: Vec<u8> = c.bytes(64).to_vec();
    let key_len = if c.u8() < 128 { 32.min(key.len()) } else { c.below(key.len() + 1) };
    let key_ptr = if c.u8() == 255 { std::ptr::null() } else { key.as_ptr() };
    let threads = c.below(4);
    let mut aead: *mut cb3_aead = std::ptr::null_mut();
    let null_out = c.u8() == 255;
    let out_ptr: *mut *mut cb3_aead = if null_out { std::ptr::null_mut() } else { &mut aead };
    let r = unsafe { cb3_aead_new_with_threads(key_ptr, key_len, threads, out_ptr) };
    let ok = !key_ptr.is_null() && key_len == 32 && !null_out;
    assert_eq!(r == cb3_result::Ok, ok, "cb3_aead_new_with_threads: {r:?}");
    if !ok {
        assert!(matches!(r, cb3_result::NullParameter | cb3_result::InvalidKeyLength) && aead.is_null());
    }
    unsafe { cb3_aead_free(aead) };

    let nonce = c.bytes(48).to_vec();
    let nonce_len = if c.u8() < 128 { 24.min(nonce.len()) } else { c.below(nonce.len() + 1) };
    let index = if c.u8() < 200 { c.u64() } else { u64::MAX };
    let mut stream: *mut cb3_stream = std::ptr::null_mut();
    let r = unsafe { cb3_stream_new(key_ptr, key_len, nonce.as_ptr(), nonce_len, index, &mut stream) };
    let ok = !key_ptr.is_null() && key_len == 32 && nonce_len == 24 && index != u64::MAX;
    assert_eq!(r == cb3_result::Ok, ok, "cb3_stream_new: {r:?}");
    assert_eq!(stream.is_null(), !ok);
    if ok {
        assert_eq!(unsafe { cb3_stream_message_index(stream) }, index);
    }
    unsafe { cb3_stream_free(stream) };
});
