//! `cb3_stream_*` through the C ABI: a stream started at a fuzzer-chosen
//! index (near 0, or near the end of the counter) runs a fuzzer-chosen
//! sequence of encryptions and decryptions of genuine, replayed, reordered
//! and tampered messages, with output buffers of the right size or not.
//! A model tracks the index: each call must return what the contract says
//! (OK exactly when the chacha20-blake3 crate, with the nonce of the
//! model's index, agrees; CB3_RESULT_STREAM_EXHAUSTED forever at 2^64 - 1),
//! advance the index by one exactly on success, and write nothing on failure.
#![no_main]

mod common;

use cb3::errors::cb3_result;
use cb3::aead::cb3_output_mode;
use cb3::stream::*;
use common::{crate_cipher, nonce_for, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = parse(data);
    let c = &mut input.control;
    let (key, nonce) = (input.key, input.nonce);
    let cipher = crate_cipher(&key);

    let start = match c.u8() {
        0..=199 => c.below(4) as u64,
        200..=249 => u64::MAX - 1 - c.below(3) as u64,
        _ => u64::MAX,
    };
    let key_len = if c.u8() == 255 { c.below(64) } else { 32 };
    let nonce_len = if c.u8() == 255 { c.below(64) } else { 24 };
    let key_buf: Vec<u8> = key.iter().copied().cycle().take(key_len).collect();
    let nonce_buf: Vec<u8> = nonce.iter().copied().cycle().take(nonce_len).collect();
    let mut stream: *mut cb3_stream = std::ptr::null_mut();
    let r = unsafe { cb3_stream_new(key_buf.as_ptr(), key_len, nonce_buf.as_ptr(), nonce_len, start, &mut stream) };
    let mut failures = Vec::new();
    if key_len != 32 {
        failures.push(cb3_result::InvalidKeyLength);
    }
    if nonce_len != 24 {
        failures.push(cb3_result::InvalidNonceLength);
    }
    if start == u64::MAX {
        failures.push(cb3_result::InvalidArgument);
    }
    if !failures.is_empty() {
        assert!(failures.contains(&r), "cb3_stream_new returned {r:?}, expected one of {failures:?}");
        assert!(stream.is_null(), "a failed cb3_stream_new wrote *stream_out");
        return;
    }
    assert_eq!(r, cb3_result::Ok);

    let mut index = start;
    let steps = 1 + c.below(8);
    for _ in 0..steps {
        assert_eq!(unsafe { cb3_stream_message_index(stream) }, index);
        let pt_len = c.below(input.body.len() + 1);
        let pt = &input.body[..pt_len];
        let aad = input.aad;
        let encrypting = c.below(3) == 0;
        let input_bytes: Vec<u8> = if encrypting {
            pt.to_vec()
        } else {
            // A message sealed at an index near ours, maybe tampered with.
            let at = match c.u8() {
                0..=199 => index,
                200..=229 => index.wrapping_add(1),
                _ => index.wrapping_sub(1),
            };
            let mut sealed = cipher.encrypt(&nonce_for(&nonce, at), pt, aad);
            match c.u8() {
                0..=199 => {}
                200..=239 => {
                    let pos = c.below(sealed.len());
                    sealed[pos] ^= 1 << c.below(8);
                }
                240..=249 => sealed.truncate(c.below(sealed.len())),
                _ => sealed.push(c.u8()),
            }
            sealed
        };
        let required = if encrypting { input_bytes.len() + 32 } else { input_bytes.len().saturating_sub(32) };
        let out_len = match c.u8() {
            0..=229 => required,
            230..=242 => required.saturating_sub(1),
            _ => required + 1,
        };
        let mut out = vec![0xA5u8; out_len];
        let mut out_n = 0xDEADusize;

        let mut failures = Vec::new();
        let mut expected: Option<Vec<u8>> = None;
        if index == u64::MAX {
            failures.push(cb3_result::StreamExhausted);
        }
        if encrypting {
            if out_len < required {
                failures.push(cb3_result::InsufficientSize);
            }
            expected = Some(cipher.encrypt(&nonce_for(&nonce, index), &input_bytes, aad));
        } else if input_bytes.len() < 32 {
            failures.push(cb3_result::DecryptionFailed);
        } else {
            if out_len < required {
                failures.push(cb3_result::InsufficientSize);
            }
            match cipher.decrypt(&nonce_for(&nonce, index), &input_bytes, aad) {
                Ok(pt) => expected = Some(pt),
                Err(_) => failures.push(cb3_result::DecryptionFailed),
            }
        }

        let result = unsafe {
            if encrypting {
                cb3_stream_encrypt(stream, input_bytes.as_ptr(), input_bytes.len(), aad.as_ptr(), aad.len(), out.as_mut_ptr(), out_len, &mut out_n)
            } else {
                let mode = cb3_output_mode::Shared as u32;
                cb3_stream_decrypt(stream, input_bytes.as_ptr(), input_bytes.len(), aad.as_ptr(), aad.len(), mode, out.as_mut_ptr(), out_len, &mut out_n)
            }
        };
        assert_ne!(result, cb3_result::Panic);
        if failures.is_empty() {
            assert_eq!(result, cb3_result::Ok, "a valid stream call failed at index {index}");
            let expected = expected.unwrap();
            assert_eq!(out_n, expected.len());
            assert_eq!(&out[..expected.len()], &expected[..], "stream output differs from the crate's");
            assert!(out[expected.len()..].iter().all(|&b| b == 0xA5), "wrote past the output");
            index += 1;
        } else {
            assert!(failures.contains(&result), "stream call returned {result:?}, expected one of {failures:?}");
            assert!(out.iter().all(|&b| b == 0xA5) && out_n == 0xDEAD, "a failed stream call wrote its output");
        }
    }
    assert_eq!(unsafe { cb3_stream_message_index(stream) }, index);
    // NULL streams.
    let mut out = [0u8; 64];
    unsafe {
        assert_eq!(cb3_stream_message_index(std::ptr::null()), 0);
        let r = cb3_stream_encrypt(std::ptr::null(), out.as_ptr(), 0, std::ptr::null(), 0, out.as_mut_ptr(), 64, std::ptr::null_mut());
        assert_eq!(r, cb3_result::NullParameter);
        cb3_stream_free(std::ptr::null_mut());
        cb3_stream_free(stream);
    }
});
