//! The `cb3_chacha_*` C ABI checked against the `chacha20` crate's own
//! ciphers and against a plain scalar ChaCha written here from the spec
//! (RFC 8439 section 2.3), which also covers the layouts the crate has no
//! type for (8-byte nonce with 12 or 8 rounds).

mod common;

use std::ptr;

use cb3::cb3_result;
use cb3::chacha20::*;
use chacha20::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use chacha20::{ChaCha12, ChaCha20, ChaCha20Legacy, ChaCha8, XChaCha12, XChaCha20, XChaCha8};
use common::bytes;

// ---- a scalar reference ----

fn quarter(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(16);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(12);
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(8);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(7);
}

fn rounds(s: &mut [u32; 16], n: u32) {
    for _ in 0..n / 2 {
        quarter(s, 0, 4, 8, 12);
        quarter(s, 1, 5, 9, 13);
        quarter(s, 2, 6, 10, 14);
        quarter(s, 3, 7, 11, 15);
        quarter(s, 0, 5, 10, 15);
        quarter(s, 1, 6, 11, 12);
        quarter(s, 2, 7, 8, 13);
        quarter(s, 3, 4, 9, 14);
    }
}

fn words(input: &[u8]) -> impl Iterator<Item = u32> + '_ {
    input.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()))
}

fn initial(key: &[u8], tail: &[u32; 4]) -> [u32; 16] {
    let mut s = [0u32; 16];
    s[..4].copy_from_slice(&[0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]);
    for (dst, w) in s[4..12].iter_mut().zip(words(key)) {
        *dst = w;
    }
    s[12..].copy_from_slice(tail);
    s
}

fn block(key: &[u8], tail: [u32; 4], n: u32) -> [u8; 64] {
    let start = initial(key, &tail);
    let mut s = start;
    rounds(&mut s, n);
    let mut out = [0u8; 64];
    for i in 0..16 {
        out[4 * i..4 * i + 4].copy_from_slice(&s[i].wrapping_add(start[i]).to_le_bytes());
    }
    out
}

fn hchacha_ref(key: &[u8], input: &[u8], n: u32) -> Vec<u8> {
    let tail: Vec<u32> = words(input).collect();
    let mut s = initial(key, &tail.try_into().unwrap());
    rounds(&mut s, n);
    s[..4].iter().chain(&s[12..]).flat_map(|w| w.to_le_bytes()).collect()
}

/// Keystream bytes [start, start + len) of a variant, by the spec.
fn reference_keystream(key: &[u8], nonce: &[u8], n: u32, start: u128, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut b = start / 64;
    while out.len() < len + (start % 64) as usize {
        let tail = match nonce.len() {
            8 => {
                let n: Vec<u32> = words(nonce).collect();
                [b as u32, (b >> 32) as u32, n[0], n[1]]
            }
            12 => {
                let n: Vec<u32> = words(nonce).collect();
                [u32::try_from(b).unwrap(), n[0], n[1], n[2]]
            }
            24 => {
                let n: Vec<u32> = words(&nonce[16..]).collect();
                [u32::try_from(b).unwrap(), 0, n[0], n[1]]
            }
            _ => unreachable!(),
        };
        let block_key = if nonce.len() == 24 { hchacha_ref(key, &nonce[..16], n) } else { key.to_vec() };
        out.extend_from_slice(&block(&block_key, tail, n));
        b += 1;
    }
    out[(start % 64) as usize..][..len].to_vec()
}

// ---- the C ABI ----

struct Chacha(*mut cb3_chacha);

impl Chacha {
    fn new(key: &[u8], nonce: &[u8], counter: u64, rounds: u32) -> Result<Self, cb3_result> {
        let mut p = ptr::null_mut();
        let r = unsafe { cb3_chacha_new(key.as_ptr(), key.len(), nonce.as_ptr(), nonce.len(), counter, rounds, &mut p) };
        if r != cb3_result::Ok {
            assert!(p.is_null(), "output written on failure");
            return Err(r);
        }
        Ok(Chacha(p))
    }
    fn apply(&self, data: &[u8]) -> Result<Vec<u8>, cb3_result> {
        let mut out = vec![0xAAu8; data.len()];
        let r = unsafe { cb3_chacha_apply(self.0, data.as_ptr(), data.len(), out.as_mut_ptr(), out.len()) };
        if r != cb3_result::Ok {
            assert!(out.iter().all(|&b| b == 0xAA), "output written on failure");
            return Err(r);
        }
        Ok(out)
    }
    fn apply_in_place(&self, buf: &mut [u8]) -> cb3_result {
        unsafe { cb3_chacha_apply(self.0, buf.as_ptr(), buf.len(), buf.as_mut_ptr(), buf.len()) }
    }
    fn keystream(&self, len: usize) -> Vec<u8> {
        self.apply(&vec![0u8; len]).unwrap()
    }
    fn seek(&self, position: u128) -> cb3_result {
        unsafe { cb3_chacha_seek(self.0, (position >> 64) as u64, position as u64) }
    }
    fn position(&self) -> u128 {
        let (high, low) = self.raw_position();
        (u128::from(high) << 64) | u128::from(low)
    }
    /// The (high, low) halves cb3_chacha_position writes.
    fn raw_position(&self) -> (u64, u64) {
        let (mut high, mut low) = (7u64, 7u64);
        assert_eq!(unsafe { cb3_chacha_position(self.0, &mut high, &mut low) }, cb3_result::Ok);
        (high, low)
    }
}

impl Drop for Chacha {
    fn drop(&mut self) {
        unsafe { cb3_chacha_free(self.0) }
    }
}

/// The crate's cipher for the same parameters, where it has one.
fn crate_cipher(key: &[u8], nonce: &[u8], n: u32) -> Option<Box<dyn StreamCipherAndSeek>> {
    let k = key.try_into().unwrap();
    Some(match (nonce.len(), n) {
        (12, 20) => Box::new(ChaCha20::new(k, nonce.try_into().unwrap())),
        (12, 12) => Box::new(ChaCha12::new(k, nonce.try_into().unwrap())),
        (12, 8) => Box::new(ChaCha8::new(k, nonce.try_into().unwrap())),
        (24, 20) => Box::new(XChaCha20::new(k, nonce.try_into().unwrap())),
        (24, 12) => Box::new(XChaCha12::new(k, nonce.try_into().unwrap())),
        (24, 8) => Box::new(XChaCha8::new(k, nonce.try_into().unwrap())),
        (8, 20) => Box::new(ChaCha20Legacy::new(k, nonce.try_into().unwrap())),
        _ => return None,
    })
}

trait StreamCipherAndSeek {
    fn apply(&mut self, buf: &mut [u8]);
    fn seek_to(&mut self, pos: u64);
}

impl<T: StreamCipher + StreamCipherSeek> StreamCipherAndSeek for T {
    fn apply(&mut self, buf: &mut [u8]) {
        self.apply_keystream(buf)
    }
    fn seek_to(&mut self, pos: u64) {
        self.seek(pos)
    }
}

const NONCE_LENGTHS: [usize; 3] = [8, 12, 24];
const ROUNDS: [u32; 3] = [20, 12, 8];

#[test]
fn matches_crate_and_reference_in_pieces() {
    let sizes = [0usize, 1, 5, 63, 64, 65, 127, 128, 200, 255, 256, 257, 511, 512, 1000, 1024, 4096, 4097, 70000];
    for (i, &nonce_len) in NONCE_LENGTHS.iter().enumerate() {
        for &n in &ROUNDS {
            let seed = (i * 10 + n as usize) as u64;
            let key = bytes(seed, 32);
            let nonce = bytes(seed + 1, nonce_len);
            let data = bytes(seed + 2, 150_000);
            let total: usize = sizes.iter().sum();
            let reference: Vec<u8> = reference_keystream(&key, &nonce, n, 0, total);
            let cipher = Chacha::new(&key, &nonce, 0, n).unwrap();
            let mut at = 0;
            for &size in &sizes {
                let ct = cipher.apply(&data[at..at + size]).unwrap();
                let expected: Vec<u8> = data[at..at + size].iter().zip(&reference[at..]).map(|(d, k)| d ^ k).collect();
                assert_eq!(ct, expected, "nonce {nonce_len} rounds {n} piece {size} at {at}");
                at += size;
                assert_eq!(cipher.position(), at as u128);
            }
            if let Some(mut theirs) = crate_cipher(&key, &nonce, n) {
                let mut expected = data[..total].to_vec();
                theirs.apply(&mut expected);
                let ours = Chacha::new(&key, &nonce, 0, n).unwrap();
                let mut buf = data[..total].to_vec();
                assert_eq!(ours.apply_in_place(&mut buf), cb3_result::Ok);
                assert_eq!(buf, expected, "nonce {nonce_len} rounds {n} against the crate");
            }
        }
    }
}

#[test]
fn seek_and_counter() {
    for &nonce_len in &NONCE_LENGTHS {
        for &n in &ROUNDS {
            let key = bytes(n as u64 + 100, 32);
            let nonce = bytes(n as u64 + 200, nonce_len);
            for position in [0u128, 1, 63, 64, 65, 1000, 64 * 1000 + 17, (1 << 32) * 64 - 100] {
                let cipher = Chacha::new(&key, &nonce, 0, n).unwrap();
                assert_eq!(cipher.seek(position), cb3_result::Ok);
                assert_eq!(cipher.position(), position);
                let len = if position > (1 << 37) { 100 } else { 300 };
                assert_eq!(cipher.keystream(len), reference_keystream(&key, &nonce, n, position, len), "{nonce_len} {n} {position}");
                if let (Some(mut theirs), true) = (crate_cipher(&key, &nonce, n), position < (1 << 37)) {
                    theirs.seek_to(position as u64);
                    let mut expected = vec![0u8; len];
                    theirs.apply(&mut expected);
                    assert_eq!(reference_keystream(&key, &nonce, n, position, len), expected);
                }
            }
            for counter in [0u64, 1, 7, 1 << 20, (1 << 32) - 1] {
                let cipher = Chacha::new(&key, &nonce, counter, n).unwrap();
                assert_eq!(cipher.position(), u128::from(counter) * 64);
                assert_eq!(cipher.keystream(64), reference_keystream(&key, &nonce, n, u128::from(counter) * 64, 64));
            }
        }
    }
}

/// The 8-byte-nonce counter carries from the low to the high word; the
/// 12- and 24-byte ones stop after block 2^32 - 1 (which is usable).
#[test]
fn counter_limits() {
    let key = bytes(1, 32);
    for &n in &ROUNDS {
        // 64-bit counter: cross the 2^32-block boundary in one call and piecewise.
        let nonce = bytes(2, 8);
        let start = ((1u128 << 32) - 2) * 64 + 10;
        let expected = reference_keystream(&key, &nonce, n, start, 300);
        let cipher = Chacha::new(&key, &nonce, 0, n).unwrap();
        assert_eq!(cipher.seek(start), cb3_result::Ok);
        assert_eq!(cipher.keystream(300), expected);
        let cipher = Chacha::new(&key, &nonce, (1 << 32) - 2, n).unwrap();
        assert_eq!(cipher.keystream(10), reference_keystream(&key, &nonce, n, start - 10, 10));
        let mut got = Vec::new();
        for size in [54usize, 64, 1, 63, 118] {
            got.extend(cipher.keystream(size));
        }
        assert_eq!(got, expected);
        if n == 20 {
            let mut theirs = ChaCha20Legacy::new(key.as_slice().try_into().unwrap(), nonce.as_slice().try_into().unwrap());
            theirs.seek(start as u64);
            let mut ks = vec![0u8; 300];
            theirs.apply_keystream(&mut ks);
            assert_eq!(ks, expected);
        }
        // The very end of the 64-bit counter.
        let cipher = Chacha::new(&key, &nonce, u64::MAX, n).unwrap();
        assert_eq!(cipher.keystream(64), reference_keystream(&key, &nonce, n, u128::from(u64::MAX) * 64, 64));
        assert_eq!(cipher.position(), 64u128 << 64);
        assert_eq!(cipher.apply(b"x"), Err(cb3_result::CounterOverflow));
        assert_eq!(cipher.apply(b""), Ok(vec![]));
        assert_eq!(cipher.seek(64u128 << 64), cb3_result::Ok);

        for nonce_len in [12usize, 24] {
            let nonce = bytes(3, nonce_len);
            let last = ((1u128 << 32) - 1) * 64;
            let cipher = Chacha::new(&key, &nonce, 0, n).unwrap();
            assert_eq!(cipher.seek(last - 3), cb3_result::Ok);
            // Past the end: refused whole, nothing consumed.
            assert_eq!(cipher.apply(&[0u8; 68]), Err(cb3_result::CounterOverflow));
            assert_eq!(cipher.position(), last - 3);
            assert_eq!(cipher.keystream(67), reference_keystream(&key, &nonce, n, last - 3, 67));
            assert_eq!(cipher.position(), last + 64);
            assert_eq!(cipher.apply(b"x"), Err(cb3_result::CounterOverflow));
            let mut one = [0u8; 1];
            assert_eq!(cipher.apply_in_place(&mut one), cb3_result::CounterOverflow);
            assert_eq!(cipher.seek(last + 65), cb3_result::InvalidPosition);
            assert_eq!(cipher.position(), last + 64);
            // Counter 2^32 - 1 is the last block; 2^32 is refused.
            let cipher = Chacha::new(&key, &nonce, (1 << 32) - 1, n).unwrap();
            assert_eq!(cipher.keystream(64), reference_keystream(&key, &nonce, n, last, 64));
            assert_eq!(Chacha::new(&key, &nonce, 1 << 32, n).err(), Some(cb3_result::InvalidCounter));
        }
    }
}

/// The position is one 128-bit byte count split into two u64 halves
/// (high * 2^64 + low), at the edges: 2^64 exactly, the 2^70 end of an
/// 8-byte-nonce keystream and the 2^38 end of a 12- or 24-byte one; a
/// position past the end is refused and leaves the position unchanged.
#[test]
fn position_halves_at_the_edges() {
    let key = bytes(4, 32);
    let seek = |c: &Chacha, high: u64, low: u64| unsafe { cb3_chacha_seek(c.0, high, low) };
    let nonce = bytes(5, 8);
    let cipher = Chacha::new(&key, &nonce, 0, 20).unwrap();
    // 2^64 = (1, 0): block 2^58, whose keystream is the reference's.
    assert_eq!(seek(&cipher, 1, 0), cb3_result::Ok);
    assert_eq!(cipher.raw_position(), (1, 0));
    assert_eq!(cipher.keystream(70), reference_keystream(&key, &nonce, 20, 1u128 << 64, 70));
    assert_eq!(cipher.raw_position(), (1, 70));
    assert_eq!(seek(&cipher, 0, u64::MAX), cb3_result::Ok); // the byte before 2^64
    assert_eq!(cipher.keystream(2), reference_keystream(&key, &nonce, 20, (1u128 << 64) - 1, 2));
    assert_eq!(cipher.raw_position(), (1, 1));
    // The end, 2^70 = (64, 0), is reachable; every position past it is refused.
    assert_eq!(seek(&cipher, 63, u64::MAX), cb3_result::Ok);
    assert_eq!(cipher.keystream(1), reference_keystream(&key, &nonce, 20, (1u128 << 70) - 1, 1));
    assert_eq!(cipher.raw_position(), (64, 0));
    assert_eq!(seek(&cipher, 3, 9), cb3_result::Ok);
    for (high, low) in [(64, 1), (65, 0), (64, u64::MAX), (u64::MAX, 0), (u64::MAX, u64::MAX)] {
        assert_eq!(seek(&cipher, high, low), cb3_result::InvalidPosition, "({high}, {low})");
        assert_eq!(cipher.raw_position(), (3, 9), "a refused seek leaves the position");
    }
    assert_eq!(seek(&cipher, 64, 0), cb3_result::Ok);
    assert_eq!(cipher.raw_position(), (64, 0));
    assert_eq!(cipher.apply(b"x"), Err(cb3_result::CounterOverflow));

    for nonce_len in [12usize, 24] {
        let nonce = bytes(6, nonce_len);
        let cipher = Chacha::new(&key, &nonce, 0, 20).unwrap();
        assert_eq!(seek(&cipher, 0, 1 << 38), cb3_result::Ok);
        assert_eq!(cipher.raw_position(), (0, 1 << 38));
        assert_eq!(seek(&cipher, 0, 1000), cb3_result::Ok);
        for (high, low) in [(0, (1 << 38) + 1), (0, u64::MAX), (1, 0), (64, 0), (u64::MAX, u64::MAX)] {
            assert_eq!(seek(&cipher, high, low), cb3_result::InvalidPosition, "({high}, {low})");
            assert_eq!(cipher.raw_position(), (0, 1000), "a refused seek leaves the position");
        }
        assert_eq!(seek(&cipher, 0, (1 << 38) - 1), cb3_result::Ok);
        assert_eq!(cipher.keystream(1), reference_keystream(&key, &nonce, 20, (1 << 38) - 1, 1));
        assert_eq!(cipher.raw_position(), (0, 1 << 38));
        assert_eq!(cipher.apply(b"x"), Err(cb3_result::CounterOverflow));
    }
}

#[test]
fn rfc8439_vectors() {
    // Section 2.4.2: key 00..1f, nonce 000000000000004a00000000, counter 1.
    let key: Vec<u8> = (0u8..32).collect();
    let nonce = hex::decode("000000000000004a00000000").unwrap();
    let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
    let expected = "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0bf91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d807ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab77937365af90bbf74a35be6b40b8eedf2785e42874d";
    let cipher = Chacha::new(&key, &nonce, 1, 20).unwrap();
    assert_eq!(hex::encode(cipher.apply(plaintext).unwrap()), expected);
    // Section 2.3.2: the block function with counter 1, nonce 000000090000004a00000000.
    let nonce = hex::decode("000000090000004a00000000").unwrap();
    let cipher = Chacha::new(&key, &nonce, 1, 20).unwrap();
    assert_eq!(
        hex::encode(cipher.keystream(64)),
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4ed2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
    );
    // Appendix A.1 test vector 1: all-zero key and nonce, counter 0.
    let cipher = Chacha::new(&[0u8; 32], &[0u8; 12], 0, 20).unwrap();
    assert_eq!(
        hex::encode(cipher.keystream(64)),
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
    );
}

#[test]
fn hchacha20_vector() {
    // draft-irtf-cfrg-xchacha section 2.2.1.
    let key: Vec<u8> = (0u8..32).collect();
    let input = hex::decode("000000090000004a0000000031415927").unwrap();
    let mut out = [0u8; 32];
    let r = unsafe { cb3_hchacha20(key.as_ptr(), 32, input.as_ptr(), 16, out.as_mut_ptr(), 32) };
    assert_eq!(r, cb3_result::Ok);
    assert_eq!(hex::encode(out), "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc");
    assert_eq!(out.to_vec(), hchacha_ref(&key, &input, 20));
    let r = unsafe { cb3_hchacha20(key.as_ptr(), 32, input.as_ptr(), 12, out.as_mut_ptr(), 32) };
    assert_eq!(r, cb3_result::InvalidNonceLength);
    let r = unsafe { cb3_hchacha20(key.as_ptr(), 31, input.as_ptr(), 16, out.as_mut_ptr(), 32) };
    assert_eq!(r, cb3_result::InvalidKeyLength);
    let r = unsafe { cb3_hchacha20(key.as_ptr(), 32, input.as_ptr(), 16, out.as_mut_ptr(), 31) };
    assert_eq!(r, cb3_result::InsufficientSize);
    let mut buf = [0u8; 48];
    let r = unsafe { cb3_hchacha20(buf.as_ptr(), 32, buf.as_ptr().add(32), 16, buf.as_mut_ptr().add(16), 32) };
    assert_eq!(r, cb3_result::OverlappingBuffers);
}

#[test]
fn errors() {
    let key = [7u8; 32];
    for nonce_len in [0usize, 7, 9, 11, 13, 16, 23, 25, 32] {
        assert_eq!(Chacha::new(&key, &vec![0u8; nonce_len], 0, 20).err(), Some(cb3_result::InvalidNonceLength));
    }
    for key_len in [0usize, 16, 31, 33] {
        assert_eq!(Chacha::new(&vec![0u8; key_len], &[0u8; 12], 0, 20).err(), Some(cb3_result::InvalidKeyLength));
    }
    for rounds in [0u32, 1, 10, 16, 21, 24] {
        assert_eq!(Chacha::new(&key, &[0u8; 12], 0, rounds).err(), Some(cb3_result::InvalidRounds));
    }
    let mut p = ptr::null_mut();
    assert_eq!(unsafe { cb3_chacha_new(key.as_ptr(), 32, ptr::null(), 0, 0, 20, &mut p) }, cb3_result::NullParameter);
    assert_eq!(unsafe { cb3_chacha_new(key.as_ptr(), 32, key.as_ptr(), 12, 0, 20, ptr::null_mut()) }, cb3_result::NullParameter);

    let cipher = Chacha::new(&key, &[1u8; 12], 0, 20).unwrap();
    let data = bytes(5, 100);
    let mut out = vec![0xAAu8; 100];
    // Too small an output; overlapping (but not identical) buffers; NULL.
    let r = unsafe { cb3_chacha_apply(cipher.0, data.as_ptr(), 100, out.as_mut_ptr(), 99) };
    assert_eq!(r, cb3_result::InsufficientSize);
    let mut buf = bytes(6, 200);
    let r = unsafe { cb3_chacha_apply(cipher.0, buf.as_ptr(), 100, buf.as_mut_ptr().add(1), 100) };
    assert_eq!(r, cb3_result::OverlappingBuffers);
    let r = unsafe { cb3_chacha_apply(cipher.0, data.as_ptr(), 100, ptr::null_mut(), 100) };
    assert_eq!(r, cb3_result::NullParameter);
    assert_eq!(cipher.position(), 0, "failed calls do not move the position");
    // A larger output buffer is fine: exactly input_len bytes are written.
    let r = unsafe { cb3_chacha_apply(cipher.0, data.as_ptr(), 50, out.as_mut_ptr(), 100) };
    assert_eq!(r, cb3_result::Ok);
    assert!(out[50..].iter().all(|&b| b == 0xAA));
    assert_eq!(unsafe { cb3_chacha_seek(cipher.0, u64::MAX, u64::MAX) }, cb3_result::InvalidPosition);
    assert_eq!(unsafe { cb3_chacha_seek(ptr::null(), 0, 0) }, cb3_result::NullParameter);
    let (mut high, mut low) = (5u64, 6u64);
    assert_eq!(unsafe { cb3_chacha_position(cipher.0, &mut high, ptr::null_mut()) }, cb3_result::NullParameter);
    assert_eq!(unsafe { cb3_chacha_position(cipher.0, ptr::null_mut(), &mut low) }, cb3_result::NullParameter);
    assert_eq!(unsafe { cb3_chacha_position(ptr::null(), &mut high, &mut low) }, cb3_result::NullParameter);
    assert_eq!((high, low), (5, 6), "outputs are written only on success");
    unsafe { cb3_chacha_free(ptr::null_mut()) };
}

#[test]
fn shared_between_threads() {
    // Four threads each take 64 * 1000 keystream bytes from one object: the
    // runs are disjoint and together cover the start of the keystream.
    let key = bytes(9, 32);
    let nonce = bytes(10, 24);
    let cipher = Chacha::new(&key, &nonce, 0, 20).unwrap();
    let address = cipher.0 as usize;
    let runs: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(move || {
                    let mut out = vec![0u8; 64 * 1000];
                    let zeros = vec![0u8; out.len()];
                    let r = unsafe { cb3_chacha_apply(address as *const cb3_chacha, zeros.as_ptr(), zeros.len(), out.as_mut_ptr(), out.len()) };
                    assert_eq!(r, cb3_result::Ok);
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let whole = reference_keystream(&key, &nonce, 20, 0, 4 * 64 * 1000);
    let mut pieces: Vec<&[u8]> = whole.chunks(64 * 1000).collect();
    for run in &runs {
        let at = pieces.iter().position(|p| *p == run.as_slice()).expect("each run is one aligned piece");
        pieces.remove(at);
    }
    assert!(pieces.is_empty());
}

/// Short reads, seeks back into keystream generated earlier, and runs that
/// end in 1- or 2-block tails, against the reference.
#[test]
fn random_seeks_and_sizes() {
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    for &nonce_len in &NONCE_LENGTHS {
        for &n in &ROUNDS {
            let key = bytes(n as u64 * 7 + nonce_len as u64, 32);
            let nonce = bytes(n as u64 * 11 + nonce_len as u64, nonce_len);
            let span = 64 * 40;
            let reference = reference_keystream(&key, &nonce, n, 0, span + 4096);
            let cipher = Chacha::new(&key, &nonce, 0, n).unwrap();
            for _ in 0..300 {
                if next(3) == 0 {
                    assert_eq!(cipher.seek(u128::from(next(span as u64))), cb3_result::Ok);
                }
                let at = cipher.position() as usize;
                let len = match next(4) {
                    0 => next(70) as usize,
                    1 => 64 * next(40) as usize,
                    2 => 64 * (16 + next(3) as usize) + next(64) as usize,
                    _ => next(300) as usize,
                };
                let len = len.min(reference.len() - at);
                let data = bytes(at as u64, len);
                let expected: Vec<u8> = data.iter().zip(&reference[at..]).map(|(d, k)| d ^ k).collect();
                if next(2) == 0 {
                    assert_eq!(cipher.apply(&data).unwrap(), expected, "{nonce_len} {n} at {at} len {len}");
                } else {
                    let mut buf = data.clone();
                    assert_eq!(cipher.apply_in_place(&mut buf), cb3_result::Ok);
                    assert_eq!(buf, expected, "{nonce_len} {n} at {at} len {len} in place");
                }
                assert_eq!(cipher.position(), (at + len) as u128);
            }
        }
    }
}
