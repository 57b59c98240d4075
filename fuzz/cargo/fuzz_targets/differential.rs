//! Differential: cb3's C ABI against the chacha20-blake3 crate on random
//! keys, nonces, associated data and messages (0 B to 64 KB from the
//! input, and rarely expanded to 200 KB or past 1 MiB so that the piece
//! loop and the multi-threaded split run too), with 1, 2 or every-core
//! ciphers. Every entry point must produce the crate's bytes, and decrypt
//! exactly what the crate decrypts: op even encrypts the body, op odd
//! decrypts it as ciphertext || tag (a fuzzer-made forgery must fail in
//! both, a genuine message, such as a seed from the test vectors, must
//! succeed in both).
#![no_main]

mod common;

use cb3::aead::*;
use cb3::errors::cb3_result;
use cb3::stream::*;
use common::{crate_cipher, expand, nonce_for, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = parse(data);
    let body = expand(input.body, &mut input.control);
    let (key, nonce, aad) = (input.key, input.nonce, input.aad);
    let reference = crate_cipher(&key);
    let threads = [1usize, 2, 0][input.control.below(3)];
    let index = input.control.u64() % (u64::MAX - 1);
    let mut aead: *mut cb3_aead = std::ptr::null_mut();
    let mut stream: *mut cb3_stream = std::ptr::null_mut();
    unsafe {
        assert_eq!(cb3_aead_new_with_threads(key.as_ptr(), 32, threads, &mut aead), cb3_result::Ok);
        assert_eq!(cb3_stream_new(key.as_ptr(), 32, nonce.as_ptr(), 24, index, &mut stream), cb3_result::Ok);
    }
    let n = body.len();

    if input.op % 2 == 0 {
        let expected = reference.encrypt(&nonce, &body, aad);
        let (ct, tag) = expected.split_at(n);
        unsafe {
            // Combined, into a separate buffer.
            let mut out = vec![0u8; n + 32];
            let mut written = 0;
            let r = cb3_aead_encrypt(aead, nonce.as_ptr(), 24, body.as_ptr(), n, aad.as_ptr(), aad.len(), out.as_mut_ptr(), n + 32, &mut written);
            assert_eq!((r, written), (cb3_result::Ok, n + 32));
            assert!(out == expected, "cb3_aead_encrypt differs from the crate");
            if n >= 1 << 20 {
                // The multi-threaded split: one round trip is enough (and
                // keeps the fuzzer fast under ASan).
                let mut plain = vec![0u8; n];
                let r = cb3_aead_decrypt(aead, nonce.as_ptr(), 24, out.as_ptr(), n + 32, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, plain.as_mut_ptr(), n, std::ptr::null_mut());
                assert!(r == cb3_result::Ok && plain == body, "large round trip");
                cb3_aead_free(aead);
                cb3_stream_free(stream);
                return;
            }
            // Combined, in place.
            let mut buf = body.clone();
            buf.resize(n + 32, 0);
            let r = cb3_aead_encrypt(aead, nonce.as_ptr(), 24, buf.as_ptr(), n, aad.as_ptr(), aad.len(), buf.as_mut_ptr(), n + 32, std::ptr::null_mut());
            assert_eq!(r, cb3_result::Ok);
            assert!(buf == expected, "cb3_aead_encrypt in place differs from the crate");
            // Detached.
            let mut c = vec![0u8; n];
            let mut t = [0u8; 32];
            let r = cb3_aead_encrypt_detached(aead, nonce.as_ptr(), 24, body.as_ptr(), n, aad.as_ptr(), aad.len(), c.as_mut_ptr(), n, t.as_mut_ptr(), 32);
            assert_eq!(r, cb3_result::Ok);
            assert!(c == ct && t == tag, "cb3_aead_encrypt_detached differs from the crate");
            // In place, detached tag.
            let mut buf = body.clone();
            let mut t = [0u8; 32];
            let r = cb3_aead_encrypt_in_place(aead, nonce.as_ptr(), 24, buf.as_mut_ptr(), n, aad.as_ptr(), aad.len(), t.as_mut_ptr(), 32);
            assert_eq!(r, cb3_result::Ok);
            assert!(buf == ct && t == tag, "cb3_aead_encrypt_in_place differs from the crate");
            // Every decryption of it round-trips.
            let mut plain = vec![0u8; n];
            let r = cb3_aead_decrypt(aead, nonce.as_ptr(), 24, expected.as_ptr(), n + 32, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, plain.as_mut_ptr(), n, std::ptr::null_mut());
            assert_eq!(r, cb3_result::Ok);
            assert!(plain == body);
            let r = cb3_aead_decrypt_in_place(aead, nonce.as_ptr(), 24, buf.as_mut_ptr(), n, t.as_ptr(), 32, aad.as_ptr(), aad.len());
            assert_eq!(r, cb3_result::Ok);
            assert!(buf == body);
            // Stream message `index`.
            let mut out = vec![0u8; n + 32];
            let r = cb3_stream_encrypt(stream, body.as_ptr(), n, aad.as_ptr(), aad.len(), out.as_mut_ptr(), n + 32, std::ptr::null_mut());
            assert_eq!(r, cb3_result::Ok);
            assert!(out == reference.encrypt(&nonce_for(&nonce, index), &body, aad), "cb3_stream_encrypt differs");
        }
    } else {
        let expected = reference.decrypt(&nonce, &body, aad).ok();
        let stream_expected = reference.decrypt(&nonce_for(&nonce, index), &body, aad).ok();
        let body_len = n.saturating_sub(32);
        unsafe {
            let mut out = vec![0xA5u8; body_len];
            let r = cb3_aead_decrypt(aead, nonce.as_ptr(), 24, body.as_ptr(), n, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, out.as_mut_ptr(), body_len, std::ptr::null_mut());
            match &expected {
                Some(pt) => assert!(r == cb3_result::Ok && out == *pt, "cb3_aead_decrypt refused or differs"),
                None => assert!(r == cb3_result::DecryptionFailed && out.iter().all(|&b| b == 0xA5), "forgery: {r:?}"),
            }
            // In place.
            let mut buf = body.clone();
            let r = cb3_aead_decrypt(aead, nonce.as_ptr(), 24, buf.as_ptr(), n, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, buf.as_mut_ptr(), body_len, std::ptr::null_mut());
            match &expected {
                Some(pt) => assert!(r == cb3_result::Ok && buf[..body_len] == pt[..] && buf[body_len..] == body[body_len..]),
                None => assert!(r == cb3_result::DecryptionFailed && buf == body, "in-place forgery: {r:?}"),
            }
            if n >= 32 {
                let (ct, tag) = body.split_at(body_len);
                let mut out = vec![0xA5u8; body_len];
                let r = cb3_aead_decrypt_detached(aead, nonce.as_ptr(), 24, ct.as_ptr(), body_len, tag.as_ptr(), 32, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, out.as_mut_ptr(), body_len);
                assert_eq!(r == cb3_result::Ok, expected.is_some(), "cb3_aead_decrypt_detached: {r:?}");
                let mut buf = ct.to_vec();
                let r = cb3_aead_decrypt_in_place(aead, nonce.as_ptr(), 24, buf.as_mut_ptr(), body_len, tag.as_ptr(), 32, aad.as_ptr(), aad.len());
                match &expected {
                    Some(pt) => assert!(r == cb3_result::Ok && buf == *pt && out == *pt),
                    None => assert!(r == cb3_result::DecryptionFailed && buf == ct && out.iter().all(|&b| b == 0xA5)),
                }
            }
            let mut out = vec![0xA5u8; body_len];
            let r = cb3_stream_decrypt(stream, body.as_ptr(), n, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, out.as_mut_ptr(), body_len, std::ptr::null_mut());
            match &stream_expected {
                Some(pt) => assert!(r == cb3_result::Ok && out == *pt, "cb3_stream_decrypt refused or differs"),
                None => assert!(r == cb3_result::DecryptionFailed && out.iter().all(|&b| b == 0xA5), "stream forgery: {r:?}"),
            }
        }
    }
    unsafe {
        cb3_aead_free(aead);
        cb3_stream_free(stream);
    }
});
