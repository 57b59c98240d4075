//! The C ABI checked against the `chacha20-blake3` crate's own Rust API.

mod common;

use std::ptr;

use cb3::aead::*;
use cb3::cb3_result;
use cb3::stream::*;
use chacha20_blake3::ChaCha20Blake3;
use common::bytes;

const VECTORS: [(&str, &str, &str, &str, &str); 3] = [
    ("0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000000000000000000000000000", "", "",
     "4fbdd67d41f66924b4304f0fc1eaa87a8e90fc7c5304fe3078f0a1b6e6142c33"),
    ("0100000000000000000000000000000000000000000000000000000000000010", "100000000000000000000000000000000000000000000001", "4368614368613230", "424c414b4533",
     "48fecfaf8d9553bfe7121700da72362e77e09080ddd55101aaca18cdcf259953923150cb89e1fef2"),
    ("3eb02a239a2a66de159b9bb5486ccc10a6f63ddf5862ef076650513372353622", "768e9bda14afb5686cc34de26210f9ff6fa1dfadc64ee3f0",
     "b8f60975cd7057a003ac84df00d514624fe40cb7855c50dd6594f59b3a2580e5", "c8d69ca92da6c5fd22f1805179fcd36cb7a9d45848fa346ba7118c2f34d23a48",
     "444d593bb2dea9ecde9cd3839d166141de70481340ce30739b3f0f28b059d63232324ace49e8a19729ac5110a093fba10acaeed93099dea1a9c20463a278c3a7"),
];

struct Aead(*mut cb3_aead);
impl Aead {
    fn new(key: &[u8]) -> Self {
        let mut p = ptr::null_mut();
        assert_eq!(unsafe { cb3_aead_new(key.as_ptr(), key.len(), &mut p) }, cb3_result::Ok);
        Aead(p)
    }
    fn encrypt(&self, nonce: &[u8], pt: &[u8], aad: &[u8]) -> Result<Vec<u8>, cb3_result> {
        let mut out = vec![0u8; pt.len() + 32];
        let mut n = 0usize;
        let r = unsafe { cb3_aead_encrypt(self.0, nonce.as_ptr(), nonce.len(), pt.as_ptr(), pt.len(), aad.as_ptr(), aad.len(), out.as_mut_ptr(), out.len(), &mut n) };
        if r != cb3_result::Ok { return Err(r); }
        assert_eq!(n, out.len());
        Ok(out)
    }
    fn decrypt(&self, nonce: &[u8], ct: &[u8], aad: &[u8]) -> Result<Vec<u8>, cb3_result> {
        let mut out = vec![0xAAu8; ct.len().saturating_sub(32)];
        let mut n = usize::MAX;
        let r = unsafe { cb3_aead_decrypt(self.0, nonce.as_ptr(), nonce.len(), ct.as_ptr(), ct.len(), aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, out.as_mut_ptr(), out.len(), &mut n) };
        if r != cb3_result::Ok {
            assert!(out.iter().all(|&b| b == 0xAA), "output written on failure");
            assert_eq!(n, usize::MAX, "out_n written on failure");
            return Err(r);
        }
        assert_eq!(n, out.len());
        Ok(out)
    }
    /// `cb3_aead_decrypt` with `CB3_OUTPUT_MODE_PRIVATE`: the same result; on failure the output is zeroed.
    fn decrypt_private(&self, nonce: &[u8], ct: &[u8], aad: &[u8]) -> Result<Vec<u8>, cb3_result> {
        let mut out = vec![0xAAu8; ct.len().saturating_sub(32)];
        let mut n = usize::MAX;
        let r = unsafe { cb3_aead_decrypt(self.0, nonce.as_ptr(), nonce.len(), ct.as_ptr(), ct.len(), aad.as_ptr(), aad.len(), cb3_output_mode::Private as u32, out.as_mut_ptr(), out.len(), &mut n) };
        if r != cb3_result::Ok {
            // Messages whose MAC input is at most 64 KiB are verified in private memory first: out is never written.
            let wiped = if aad.len() + ct.len() - 32 + 16 <= 65536 { 0xAA } else { 0 };
            assert!(ct.len() < 32 || out.iter().all(|&b| b == wiped), "unverified plaintext left on failure");
            assert_eq!(n, usize::MAX, "out_n written on failure");
            return Err(r);
        }
        assert_eq!(n, out.len());
        Ok(out)
    }
}
impl Drop for Aead {
    fn drop(&mut self) { unsafe { cb3_aead_free(self.0) } }
}

#[test]
fn upstream_vectors() {
    for (key, nonce, pt, aad, expected) in VECTORS {
        let (key, nonce, pt, aad) = (hex::decode(key).unwrap(), hex::decode(nonce).unwrap(), hex::decode(pt).unwrap(), hex::decode(aad).unwrap());
        let aead = Aead::new(&key);
        let ct = aead.encrypt(&nonce, &pt, &aad).unwrap();
        assert_eq!(hex::encode(&ct), expected);
        assert_eq!(aead.decrypt(&nonce, &ct, &aad).unwrap(), pt);
    }
}

/// Every length around the ChaCha SIMD widths, the BLAKE3 chunk and the
/// fused piece size, against the crate's `encrypt`/`decrypt`.
#[test]
fn matches_crate_across_boundaries() {
    let mut lengths: Vec<usize> = (0..=300).collect();
    for edge in [512usize, 1023, 1024, 1025, 2048, 4096, 8192, 16384, 65536, 65536 * 2, 1 << 18, 1 << 20] {
        lengths.extend([edge - 1, edge, edge + 1]);
    }
    lengths.push(3 * 65536 + 777);
    for (i, &len) in lengths.iter().enumerate() {
        let key = bytes(i as u64, 32);
        let nonce = bytes(i as u64 + 1000, 24);
        let pt = bytes(i as u64 + 2000, len);
        let aad = bytes(i as u64 + 3000, i % 70);
        let reference = ChaCha20Blake3::new(key.clone().try_into().unwrap());
        let expected = reference.encrypt(nonce.as_slice().try_into().unwrap(), &pt, &aad);
        let aead = Aead::new(&key);
        let ct = aead.encrypt(&nonce, &pt, &aad).unwrap();
        assert_eq!(ct, expected, "length {len}");
        assert_eq!(aead.decrypt(&nonce, &ct, &aad).unwrap(), pt, "length {len}");
        assert_eq!(aead.decrypt_private(&nonce, &ct, &aad).unwrap(), pt, "length {len}");
        if len > 0 {
            let mut bad = ct.clone();
            bad[len - 1] ^= 1;
            assert_eq!(aead.decrypt_private(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed), "length {len}");
        }
    }
}

#[test]
fn detached_and_in_place_match_crate() {
    for len in [0usize, 1, 63, 64, 65, 127, 128, 129, 1000, 70000] {
        let key = bytes(len as u64, 32);
        let nonce = bytes(len as u64 + 1, 24);
        let aad = bytes(len as u64 + 2, 13);
        let pt = bytes(len as u64 + 3, len);
        let reference = ChaCha20Blake3::new(key.clone().try_into().unwrap());
        let mut expected_ct = pt.clone();
        let expected_tag = reference.encrypt_in_place_detached(nonce.as_slice().try_into().unwrap(), &mut expected_ct, &aad);
        let aead = Aead::new(&key);

        let mut ct = vec![0u8; len];
        let mut tag = [0u8; 32];
        let r = unsafe { cb3_aead_encrypt_detached(aead.0, nonce.as_ptr(), 24, pt.as_ptr(), len, aad.as_ptr(), aad.len(), ct.as_mut_ptr(), len, tag.as_mut_ptr(), 32) };
        assert_eq!(r, cb3_result::Ok);
        assert_eq!((&ct, tag), (&expected_ct, expected_tag));

        let mut buf = pt.clone();
        let mut tag2 = [0u8; 32];
        let r = unsafe { cb3_aead_encrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, aad.as_ptr(), aad.len(), tag2.as_mut_ptr(), 32) };
        assert_eq!(r, cb3_result::Ok);
        assert_eq!((&buf, tag2), (&expected_ct, expected_tag));

        let r = unsafe { cb3_aead_decrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, tag2.as_ptr(), 32, aad.as_ptr(), aad.len()) };
        assert_eq!(r, cb3_result::Ok);
        assert_eq!(buf, pt);

        let mut out = vec![0u8; len];
        let r = unsafe { cb3_aead_decrypt_detached(aead.0, nonce.as_ptr(), 24, ct.as_ptr(), len, tag.as_ptr(), 32, aad.as_ptr(), aad.len(), cb3_output_mode::Shared as u32, out.as_mut_ptr(), len) };
        assert_eq!(r, cb3_result::Ok);
        assert_eq!(out, pt);
    }
}

#[test]
fn every_tampering_fails_and_writes_nothing() {
    let key = bytes(1, 32);
    let nonce = bytes(2, 24);
    let aad = bytes(3, 20);
    let pt = bytes(4, 200);
    let aead = Aead::new(&key);
    let ct = aead.encrypt(&nonce, &pt, &aad).unwrap();
    for bit in (0..ct.len() * 8).step_by(7) {
        let mut bad = ct.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(aead.decrypt(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed));
    }
    let mut wrong_nonce = nonce.clone();
    wrong_nonce[23] ^= 1;
    assert_eq!(aead.decrypt(&wrong_nonce, &ct, &aad), Err(cb3_result::DecryptionFailed));
    assert_eq!(aead.decrypt(&nonce, &ct, b"other"), Err(cb3_result::DecryptionFailed));
    assert_eq!(Aead::new(&bytes(9, 32)).decrypt(&nonce, &ct, &aad), Err(cb3_result::DecryptionFailed));
    assert_eq!(aead.decrypt(&nonce, &ct[..31], &aad), Err(cb3_result::DecryptionFailed));
    assert_eq!(aead.decrypt(&nonce, &ct[..ct.len() - 1], &aad), Err(cb3_result::DecryptionFailed));

    // In place: a bad tag leaves the buffer as it was.
    let mut buf = ct[..200].to_vec();
    let mut tag = ct[200..].to_vec();
    tag[0] ^= 0x80;
    let r = unsafe { cb3_aead_decrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), 200, tag.as_ptr(), 32, aad.as_ptr(), aad.len()) };
    assert_eq!(r, cb3_result::DecryptionFailed);
    assert_eq!(buf, &ct[..200]);
}

#[test]
fn argument_errors() {
    let aead = Aead::new(&[7u8; 32]);
    let mut p = ptr::null_mut();
    assert_eq!(unsafe { cb3_aead_new([0u8; 31].as_ptr(), 31, &mut p) }, cb3_result::InvalidKeyLength);
    assert_eq!(unsafe { cb3_aead_new([0u8; 33].as_ptr(), 33, &mut p) }, cb3_result::InvalidKeyLength);
    assert_eq!(unsafe { cb3_aead_new(ptr::null(), 32, &mut p) }, cb3_result::NullParameter);
    assert_eq!(unsafe { cb3_aead_new([0u8; 32].as_ptr(), 32, ptr::null_mut()) }, cb3_result::NullParameter);
    assert!(p.is_null());
    assert_eq!(aead.encrypt(&[0u8; 23], b"x", b""), Err(cb3_result::InvalidNonceLength));
    assert_eq!(aead.encrypt(&[0u8; 25], b"x", b""), Err(cb3_result::InvalidNonceLength));
    let mut out = [0u8; 40];
    let r = unsafe { cb3_aead_encrypt(aead.0, [0u8; 24].as_ptr(), 24, [1u8; 9].as_ptr(), 9, ptr::null(), 0, out.as_mut_ptr(), 40, ptr::null_mut()) };
    assert_eq!(r, cb3_result::InsufficientSize);
    assert_eq!(out, [0u8; 40]);
    let r = unsafe { cb3_aead_encrypt(aead.0, [0u8; 24].as_ptr(), 24, ptr::null(), 5, ptr::null(), 0, out.as_mut_ptr(), 40, ptr::null_mut()) };
    assert_eq!(r, cb3_result::NullParameter);
    let r = unsafe { cb3_aead_encrypt(ptr::null(), [0u8; 24].as_ptr(), 24, ptr::null(), 0, ptr::null(), 0, out.as_mut_ptr(), 40, ptr::null_mut()) };
    assert_eq!(r, cb3_result::NullParameter);
    // Partial overlap between output and input is refused; exact in place works.
    let mut buf = [5u8; 100];
    let base = buf.as_mut_ptr();
    let r = unsafe { cb3_aead_encrypt(aead.0, [0u8; 24].as_ptr(), 24, base.add(1), 10, ptr::null(), 0, base, 60, ptr::null_mut()) };
    assert_eq!(r, cb3_result::OverlappingBuffers);
    assert_eq!(buf, [5u8; 100]);
    let r = unsafe { cb3_aead_encrypt(aead.0, [0u8; 24].as_ptr(), 24, base, 10, base.add(50), 8, base, 42, ptr::null_mut()) };
    assert_eq!(r, cb3_result::Ok);
    let mut expected = [5u8; 10].to_vec();
    let reference = ChaCha20Blake3::new([7u8; 32]);
    let tag = reference.encrypt_in_place_detached(&[0u8; 24], &mut expected, &[5u8; 8]);
    assert_eq!(&buf[..10], &expected[..]);
    assert_eq!(&buf[10..42], &tag[..]);
    // Tag lengths.
    let mut out = [0u8; 4];
    let r = unsafe { cb3_aead_decrypt_detached(aead.0, [0u8; 24].as_ptr(), 24, [0u8; 4].as_ptr(), 4, [0u8; 31].as_ptr(), 31, ptr::null(), 0, cb3_output_mode::Shared as u32, out.as_mut_ptr(), 4) };
    assert_eq!(r, cb3_result::InvalidTagLength);
    // A fixed-size argument reports its own length error for any wrong
    // length, however large.
    let r = unsafe { cb3_aead_decrypt_detached(aead.0, [0u8; 24].as_ptr(), 24, [0u8; 4].as_ptr(), 4, [0u8; 32].as_ptr(), usize::MAX, ptr::null(), 0, cb3_output_mode::Shared as u32, out.as_mut_ptr(), 4) };
    assert_eq!(r, cb3_result::InvalidTagLength);
    let r = unsafe { cb3_aead_encrypt_in_place(aead.0, [0u8; 24].as_ptr(), usize::MAX, out.as_mut_ptr(), 4, ptr::null(), 0, [0u8; 32].as_mut_ptr(), 32) };
    assert_eq!(r, cb3_result::InvalidNonceLength);
    assert_eq!(aead.encrypt(&[0u8; 24][..0], b"x", b""), Err(cb3_result::InvalidNonceLength));
}

#[test]
fn result_messages_are_distinct() {
    use cb3::errors::cb3_result_message;
    let codes = [cb3_result::Ok, cb3_result::NullParameter, cb3_result::InvalidKeyLength, cb3_result::InvalidNonceLength,
        cb3_result::InvalidTagLength, cb3_result::InsufficientSize, cb3_result::OverlappingBuffers, cb3_result::DecryptionFailed,
        cb3_result::StreamExhausted, cb3_result::InvalidArgument, cb3_result::Panic, cb3_result::CounterOverflow,
        cb3_result::IoError, cb3_result::OutOfMemory, cb3_result::Forked, cb3_result::Interrupted,
        cb3_result::InvalidRounds, cb3_result::InvalidCounter, cb3_result::InvalidPosition, cb3_result::InvalidUtf8,
        cb3_result::InvalidHeader, cb3_result::LimitExceeded];
    let message = |code: u32| unsafe { std::ffi::CStr::from_ptr(cb3_result_message(code)) };
    let messages: std::collections::HashSet<_> = codes.iter().map(|&c| message(c as u32)).collect();
    assert_eq!(messages.len(), codes.len());
    // Codes that are not in the enum (C can pass any integer) get their own
    // text instead of undefined behaviour.
    for unknown in [1u32, 2999, 3021, 7000, u32::MAX] {
        assert_eq!(message(unknown).to_str().unwrap(), "unknown cb3_result code");
        assert!(!messages.contains(message(unknown)));
    }
}

struct Stream(*mut cb3_stream);
impl Stream {
    fn new(key: &[u8], nonce: &[u8], index: u64) -> Self {
        let mut p = ptr::null_mut();
        assert_eq!(unsafe { cb3_stream_new(key.as_ptr(), 32, nonce.as_ptr(), 24, index, &mut p) }, cb3_result::Ok);
        Stream(p)
    }
    fn encrypt(&self, pt: &[u8]) -> Result<Vec<u8>, cb3_result> {
        let mut out = vec![0u8; pt.len() + 32];
        let r = unsafe { cb3_stream_encrypt(self.0, pt.as_ptr(), pt.len(), ptr::null(), 0, out.as_mut_ptr(), out.len(), ptr::null_mut()) };
        if r == cb3_result::Ok { Ok(out) } else { Err(r) }
    }
    fn decrypt(&self, ct: &[u8]) -> Result<Vec<u8>, cb3_result> {
        let mut out = vec![0u8; ct.len() - 32];
        let r = unsafe { cb3_stream_decrypt(self.0, ct.as_ptr(), ct.len(), ptr::null(), 0, cb3_output_mode::Shared as u32, out.as_mut_ptr(), out.len(), ptr::null_mut()) };
        if r == cb3_result::Ok { Ok(out) } else { Err(r) }
    }
    fn index(&self) -> u64 { unsafe { cb3_stream_message_index(self.0) } }
}
impl Drop for Stream {
    fn drop(&mut self) { unsafe { cb3_stream_free(self.0) } }
}

#[test]
fn stream_nonce_schedule_matches_the_gem() {
    let key = bytes(5, 32);
    let mut nonce = bytes(6, 24);
    nonce[16..].copy_from_slice(&(u64::MAX - 1).to_le_bytes()); // wraps at message 2
    let reference = ChaCha20Blake3::new(key.clone().try_into().unwrap());
    let sender = Stream::new(&key, &nonce, 0);
    let receiver = Stream::new(&key, &nonce, 0);
    for i in 0u64..4 {
        let pt = bytes(i, 10 + i as usize);
        let ct = sender.encrypt(&pt).unwrap();
        let mut expected_nonce = nonce.clone();
        expected_nonce[16..].copy_from_slice(&(u64::MAX - 1).wrapping_add(i).to_le_bytes());
        assert_eq!(ct, reference.encrypt(expected_nonce.as_slice().try_into().unwrap(), &pt, b""));
        assert_eq!(receiver.decrypt(&ct).unwrap(), pt);
        assert_eq!((sender.index(), receiver.index()), (i + 1, i + 1));
    }
    // A failed decrypt does not advance.
    let a = sender.encrypt(b"a").unwrap();
    let b = sender.encrypt(b"b").unwrap();
    assert_eq!(receiver.decrypt(&b), Err(cb3_result::DecryptionFailed));
    assert_eq!(receiver.index(), 4);
    assert_eq!(receiver.decrypt(&a).unwrap(), b"a");
    assert_eq!(receiver.decrypt(&b).unwrap(), b"b");
}

#[test]
fn stream_exhaustion_is_sticky() {
    let stream = Stream::new(&[1u8; 32], &[2u8; 24], u64::MAX - 1);
    assert!(stream.encrypt(b"last").is_ok());
    assert_eq!(stream.index(), u64::MAX);
    assert_eq!(stream.encrypt(b"more"), Err(cb3_result::StreamExhausted));
    assert_eq!(stream.encrypt(b"more"), Err(cb3_result::StreamExhausted));
    assert_eq!(stream.index(), u64::MAX);
    let mut p = ptr::null_mut();
    assert_eq!(unsafe { cb3_stream_new([1u8; 32].as_ptr(), 32, [2u8; 24].as_ptr(), 24, u64::MAX, &mut p) }, cb3_result::InvalidArgument);
}

/// `max_threads` changes who computes, never the bytes: every split point
/// around the 1 MiB threshold and the 64-byte segment rounding.
#[test]
fn multithreaded_output_is_identical() {
    let one_mib = 1usize << 20;
    for (i, &len) in [one_mib - 1, one_mib, one_mib + 1, one_mib + 63, one_mib + 64, 2 * one_mib + 65, 3 * one_mib + 17]
        .iter()
        .enumerate()
    {
        let key = bytes(i as u64 + 70, 32);
        let nonce = bytes(i as u64 + 80, 24);
        let aad = bytes(i as u64 + 90, i * 7);
        let pt = bytes(i as u64 + 100, len);
        let expected = ChaCha20Blake3::new(key.clone().try_into().unwrap()).encrypt(nonce.as_slice().try_into().unwrap(), &pt, &aad);
        for threads in [0usize, 1, 2, 3, 4, 7] {
            let mut p = ptr::null_mut();
            assert_eq!(unsafe { cb3_aead_new_with_threads(key.as_ptr(), 32, threads, &mut p) }, cb3_result::Ok);
            let aead = Aead(p);
            let ct = aead.encrypt(&nonce, &pt, &aad).unwrap();
            assert!(ct == expected, "length {len}, {threads} threads");
            assert_eq!(aead.decrypt(&nonce, &ct, &aad).unwrap(), pt);
            assert_eq!(aead.decrypt_private(&nonce, &ct, &aad).unwrap(), pt);
            let mut bad = ct.clone();
            bad[len / 2] ^= 4;
            assert_eq!(aead.decrypt(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed));
            assert_eq!(aead.decrypt_private(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed));
            // In place, split over the same threads.
            let mut buf = pt.clone();
            let mut tag = [0u8; 32];
            let r = unsafe { cb3_aead_encrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, aad.as_ptr(), aad.len(), tag.as_mut_ptr(), 32) };
            assert_eq!(r, cb3_result::Ok);
            assert!(buf[..] == expected[..len] && tag[..] == expected[len..]);
        }
    }
    let mut p = ptr::null_mut();
    assert_eq!(unsafe { cb3_aead_new_with_threads([0u8; 31].as_ptr(), 31, 2, &mut p) }, cb3_result::InvalidKeyLength);
    assert!(p.is_null());
}

/// The direct path stages `aad[whole chunks..] || le64 || data || le64` and
/// hashes whole chunks of the associated data from where it lies: every
/// associated-data length around the chunk edges, with messages around the
/// one-chunk, stack-staging and direct/piecewise cut-offs (64 KiB of MAC
/// input), against the crate, on every route.
#[test]
fn direct_path_matches_crate_for_every_layout() {
    let mut i = 0u64;
    for aad_len in [0usize, 1, 47, 48, 49, 1000, 1007, 1008, 1009, 1015, 1016, 1017, 2040, 3000, 65000, 65520, 65521, 70000] {
        for len in [0usize, 1, 63, 64, 65, 255, 256, 257, 959, 960, 961, 1007, 1008, 1009, 1024, 3000, 5000, 16384, 65519 - aad_len.min(65519), 65520 - aad_len.min(65520), 65521 - aad_len.min(65521), 70000] {
            i += 1;
            let key = bytes(i, 32);
            let nonce = bytes(i + 7, 24);
            let pt = bytes(i + 13, len);
            let aad = bytes(i + 17, aad_len);
            let reference = ChaCha20Blake3::new(key.clone().try_into().unwrap());
            let expected = reference.encrypt(nonce.as_slice().try_into().unwrap(), &pt, &aad);
            let aead = Aead::new(&key);
            let ct = aead.encrypt(&nonce, &pt, &aad).unwrap();
            assert!(ct == expected, "length {len}, aad {aad_len}");
            assert!(aead.decrypt(&nonce, &ct, &aad).unwrap() == pt, "length {len}, aad {aad_len}");
            assert!(aead.decrypt_private(&nonce, &ct, &aad).unwrap() == pt, "length {len}, aad {aad_len}");
            let mut bad = ct.clone();
            bad[(len + 31) / 2] ^= 0x10;
            assert_eq!(aead.decrypt(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed), "length {len}, aad {aad_len}");
            let mut buf = pt.clone();
            let mut tag = [0u8; 32];
            let r = unsafe { cb3_aead_encrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, aad.as_ptr(), aad.len(), tag.as_mut_ptr(), 32) };
            assert_eq!(r, cb3_result::Ok);
            assert!(buf[..] == expected[..len] && tag[..] == expected[len..], "in place, length {len}, aad {aad_len}");
            let r = unsafe { cb3_aead_decrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, tag.as_ptr(), 32, aad.as_ptr(), aad.len()) };
            assert_eq!(r, cb3_result::Ok);
            assert!(buf == pt, "in place, length {len}, aad {aad_len}");
        }
    }
}

/// The piecewise pass (MAC input over 64 KiB): pieces of 256 KiB aligned in
/// the MAC input `aad || le64 || ct || le64`, each read once with the XOR
/// straight into private memory. Message lengths that put the end of the
/// ciphertext, or of the whole MAC input, on, just before and just after a
/// piece edge (and a chunk edge 16 bytes off, where blake3's assembly reads
/// past a chunk), for associated data around chunk sizes; on one thread and
/// on two (leaf/segment edges of the subtrees), on every route.
#[test]
fn piecewise_path_matches_crate_at_piece_and_chunk_edges() {
    const PIECE: usize = 256 * 1024;
    let mut i = 0u64;
    for aad_len in [0usize, 1, 1015, 1016, 1017, 1024, 2047, 2048, PIECE - 8, PIECE + 1] {
        let head = aad_len as isize + 8;
        // Just past the direct path's 64 KiB of MAC input, then the edges.
        let mut lengths = vec![65536 - head - 8 + 1, 65536 + 1024 - head];
        for pieces in [1isize, 2, 4, 5] {
            let edge = pieces * PIECE as isize;
            for end in [edge - head, edge - head - 8] {
                for delta in [-17isize, -16, -1, 0, 1, 16, 17] {
                    lengths.push(end + delta);
                }
            }
        }
        for len in lengths.into_iter().filter(|&len| len > 0).map(|len| len as usize) {
            i += 1;
            let key = bytes(i + 500, 32);
            let nonce = bytes(i + 501, 24);
            let pt = bytes(i + 502, len);
            let aad = bytes(i + 503, aad_len);
            let expected = ChaCha20Blake3::new(key.clone().try_into().unwrap()).encrypt(nonce.as_slice().try_into().unwrap(), &pt, &aad);
            for threads in [1usize, 2] {
                let what = format!("length {len}, aad {aad_len}, {threads} threads");
                let mut p = ptr::null_mut();
                assert_eq!(unsafe { cb3_aead_new_with_threads(key.as_ptr(), 32, threads, &mut p) }, cb3_result::Ok);
                let aead = Aead(p);
                let ct = aead.encrypt(&nonce, &pt, &aad).unwrap();
                assert!(ct == expected, "{what}");
                assert!(aead.decrypt(&nonce, &ct, &aad).unwrap() == pt, "{what}");
                assert!(aead.decrypt_private(&nonce, &ct, &aad).unwrap() == pt, "{what}");
                let mut bad = ct.clone();
                bad[len - 1] ^= 0x80;
                assert_eq!(aead.decrypt(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed), "{what}");
                assert_eq!(aead.decrypt_private(&nonce, &bad, &aad), Err(cb3_result::DecryptionFailed), "{what}");
                let (mut body, mut tag) = (vec![0u8; len], [0u8; 32]);
                let r = unsafe { cb3_aead_encrypt_detached(aead.0, nonce.as_ptr(), 24, pt.as_ptr(), len, aad.as_ptr(), aad.len(), body.as_mut_ptr(), len, tag.as_mut_ptr(), 32) };
                assert_eq!(r, cb3_result::Ok);
                assert!(body[..] == expected[..len] && tag[..] == expected[len..], "detached, {what}");
                let mut buf = pt.clone();
                let r = unsafe { cb3_aead_encrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, aad.as_ptr(), aad.len(), tag.as_mut_ptr(), 32) };
                assert_eq!(r, cb3_result::Ok);
                assert!(buf[..] == expected[..len] && tag[..] == expected[len..], "in place, {what}");
                let r = unsafe { cb3_aead_decrypt_in_place(aead.0, nonce.as_ptr(), 24, buf.as_mut_ptr(), len, tag.as_ptr(), 32, aad.as_ptr(), aad.len()) };
                assert_eq!(r, cb3_result::Ok);
                assert!(buf == pt, "in place, {what}");
            }
        }
    }
}

/// A decryption's output mode arrives as an integer: anything but a
/// `cb3_output_mode` is refused before any work, and nothing is written.
#[test]
fn unknown_output_mode_is_refused() {
    let aead = Aead::new(&[7u8; 32]);
    let nonce = [9u8; 24];
    let ct = aead.encrypt(&nonce, b"message", b"aad").unwrap();
    let mut out = [0xAAu8; 7];
    let mut n = usize::MAX;
    for mode in [2u32, 3, u32::MAX] {
        let r = unsafe { cb3_aead_decrypt(aead.0, nonce.as_ptr(), 24, ct.as_ptr(), ct.len(), b"aad".as_ptr(), 3, mode, out.as_mut_ptr(), out.len(), &mut n) };
        assert_eq!(r, cb3_result::InvalidArgument);
        let r = unsafe { cb3_aead_decrypt_detached(aead.0, nonce.as_ptr(), 24, ct.as_ptr(), 7, ct[7..].as_ptr(), 32, b"aad".as_ptr(), 3, mode, out.as_mut_ptr(), out.len()) };
        assert_eq!(r, cb3_result::InvalidArgument);
        assert!(out.iter().all(|&b| b == 0xAA) && n == usize::MAX);
    }
    let mut stream = ptr::null_mut();
    assert_eq!(unsafe { cb3_stream_new([7u8; 32].as_ptr(), 32, nonce.as_ptr(), 24, 0, &mut stream) }, cb3_result::Ok);
    let r = unsafe { cb3_stream_decrypt(stream, ct.as_ptr(), ct.len(), ptr::null(), 0, 2, out.as_mut_ptr(), out.len(), &mut n) };
    assert_eq!(r, cb3_result::InvalidArgument);
    assert_eq!(unsafe { cb3_stream_message_index(stream) }, 0);
    unsafe { cb3_stream_free(stream) };
}
