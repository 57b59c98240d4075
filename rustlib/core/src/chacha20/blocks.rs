//! ChaCha20 for the one to four keystream blocks of a short AEAD message:
//! the DJB ("legacy") layout the construction uses (64-bit block counter,
//! 8-byte nonce), the bytes of the `chacha20` crate's `ChaCha20LegacyCore`
//! (checked against it below, counter wrap at 2^64 included).
//!
//! Why not the crate: its AVX-512 backend is slower for one or two blocks
//! than for four (`CACHE_BLOCKS`), and its calls into non-inlined `rounds`
//! and loads add their own cost. Here each block is
//! one row per 128-bit register (SSE2, with AVX-512VL's `vprold` rotates
//! when the CPU has them), the blocks interleaved, XORed straight from the
//! registers into the output. Other targets keep the crate.

/// The most blocks `xor` handles: longer runs go to the 16-block kernels
/// (`wide`) or the crate's backends.
pub const MAX_BLOCKS: usize = 4;

/// `out = input XOR keystream` (`out ^= keystream` when `input` is None),
/// the keystream of (`key`, `nonce`) from block `counter` on; `out` is at
/// most `MAX_BLOCKS` blocks.
pub fn xor(key: &[u8; 32], nonce: &[u8; 8], counter: u64, input: Option<&[u8]>, out: &mut [u8]) {
    assert!(out.len() <= MAX_BLOCKS * 64 && input.is_none_or(|input| input.len() == out.len()));
    #[cfg(target_arch = "x86_64")]
    {
        let src = input.map_or(out.as_ptr(), |input| input.as_ptr());
        // SAFETY: `src` and `out` hold `out.len()` bytes (`src` may be `out`
        // itself, which `x86::xor` allows); AVX-512F/VL only where detected.
        unsafe { x86::xor(key, nonce, counter, src, out.as_mut_ptr(), out.len(), crate::cpu::avx512()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use chacha20::cipher::{KeyIvInit, StreamCipherCore};
        let mut core = chacha20::ChaCha20LegacyCore::new(key.into(), nonce.into());
        core.set_block_pos(counter);
        let mut blocks: [chacha20::cipher::Block<chacha20::ChaCha20LegacyCore>; MAX_BLOCKS] = Default::default();
        let count = out.len().div_ceil(64);
        core.write_keystream_blocks(&mut blocks[..count]);
        let keystream = chacha20::cipher::array::Array::slice_as_flattened(&blocks[..count]);
        super::xor_keystream(out, input, keystream);
        for block in &mut blocks[..count] {
            crate::wipe::wipe_bytes(block);
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub mod x86 {
    use std::arch::x86_64::*;

    macro_rules! rotl_sse2 {
        ($x:expr, $n:literal) => {{
            let x = $x;
            _mm_or_si128(_mm_slli_epi32::<$n>(x), _mm_srli_epi32::<{ 32 - $n }>(x))
        }};
    }

    macro_rules! rotl_avx512 {
        ($x:expr, $n:literal) => {
            _mm_rol_epi32::<$n>($x)
        };
    }

    /// The four quarter rounds of one ChaCha round (column or diagonal,
    /// after the rows' shuffle) on `N` blocks held as rows `a, b, c, d`.
    macro_rules! quarter_rounds {
        ($rotl:ident, $a:ident, $b:ident, $c:ident, $d:ident) => {
            for i in 0..N {
                $a[i] = _mm_add_epi32($a[i], $b[i]);
                $d[i] = $rotl!(_mm_xor_si128($d[i], $a[i]), 16);
            }
            for i in 0..N {
                $c[i] = _mm_add_epi32($c[i], $d[i]);
                $b[i] = $rotl!(_mm_xor_si128($b[i], $c[i]), 12);
            }
            for i in 0..N {
                $a[i] = _mm_add_epi32($a[i], $b[i]);
                $d[i] = $rotl!(_mm_xor_si128($d[i], $a[i]), 8);
            }
            for i in 0..N {
                $c[i] = _mm_add_epi32($c[i], $d[i]);
                $b[i] = $rotl!(_mm_xor_si128($b[i], $c[i]), 7);
            }
        };
    }

    /// `dst[..len] = src[..len] XOR` the keystream of `N` blocks from
    /// `counter` on (`len` more than `N - 1` blocks, at most `N`).
    macro_rules! blocks_fn {
        ($(#[$attr:meta])* $name:ident, $rotl:ident) => {
            $(#[$attr])*
            pub unsafe fn $name<const N: usize>(key: &[u8; 32], nonce: &[u8; 8], counter: u64, src: *const u8, dst: *mut u8, len: usize) {
                // SAFETY: the caller's contract (`x86::xor`'s): `src` and
                // `dst` hold `len` bytes; the CPU has this function's features.
                unsafe {
                    let constants = _mm_setr_epi32(0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574);
                    let k0 = _mm_loadu_si128(key.as_ptr() as *const __m128i);
                    let k1 = _mm_loadu_si128(key.as_ptr().add(16) as *const __m128i);
                    let n = i64::from_le_bytes(*nonce);
                    let row3 = |i: usize| _mm_set_epi64x(n, counter.wrapping_add(i as u64) as i64);
                    let (mut a, mut b, mut c) = ([constants; N], [k0; N], [k1; N]);
                    let mut d = [_mm_setzero_si128(); N];
                    for i in 0..N {
                        d[i] = row3(i);
                    }
                    // The diagonals line up against row b, which stays:
                    // b is the last row a round writes and the first the
                    // next one reads, so shuffling it would put a shuffle
                    // on the critical path of every round (one block is
                    // one dependency chain); a, c and d are shuffled while
                    // b is still being computed.
                    for _ in 0..10 {
                        quarter_rounds!($rotl, a, b, c, d);
                        for i in 0..N {
                            a[i] = _mm_shuffle_epi32::<0x93>(a[i]);
                            c[i] = _mm_shuffle_epi32::<0x39>(c[i]);
                            d[i] = _mm_shuffle_epi32::<0x4E>(d[i]);
                        }
                        quarter_rounds!($rotl, a, b, c, d);
                        for i in 0..N {
                            a[i] = _mm_shuffle_epi32::<0x39>(a[i]);
                            c[i] = _mm_shuffle_epi32::<0x93>(c[i]);
                            d[i] = _mm_shuffle_epi32::<0x4E>(d[i]);
                        }
                    }
                    for i in 0..N {
                        let rows = [
                            _mm_add_epi32(a[i], constants),
                            _mm_add_epi32(b[i], k0),
                            _mm_add_epi32(c[i], k1),
                            _mm_add_epi32(d[i], row3(i)),
                        ];
                        for (r, row) in rows.into_iter().enumerate() {
                            let at = i * 64 + r * 16;
                            if at + 16 <= len {
                                let data = _mm_loadu_si128(src.add(at) as *const __m128i);
                                _mm_storeu_si128(dst.add(at) as *mut __m128i, _mm_xor_si128(data, row));
                            } else if at < len {
                                let mut last = [0u8; 16];
                                _mm_storeu_si128(last.as_mut_ptr() as *mut __m128i, row);
                                for (j, k) in last[..len - at].iter().enumerate() {
                                    *dst.add(at + j) = *src.add(at + j) ^ k;
                                }
                                crate::wipe::wipe(&mut last);
                            }
                        }
                    }
                }
            }
        };
    }

    blocks_fn!(
        /// # Safety
        /// `src` (which may be `dst`) and `dst` hold `len` bytes.
        blocks_sse2,
        rotl_sse2
    );
    blocks_fn!(
        /// # Safety
        /// As `blocks_sse2`, on a CPU with AVX-512F and AVX-512VL.
        #[target_feature(enable = "avx512f,avx512vl")]
        blocks_avx512,
        rotl_avx512
    );

    /// # Safety
    /// `src` (which may be `dst`) and `dst` hold `len` bytes, at most
    /// `MAX_BLOCKS` blocks; `avx512`: the CPU has AVX-512F and AVX-512VL.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn xor(key: &[u8; 32], nonce: &[u8; 8], counter: u64, src: *const u8, dst: *mut u8, len: usize, avx512: bool) {
        // SAFETY: the caller's contract.
        unsafe {
            match (len.div_ceil(64), avx512) {
                (0, _) => {}
                (1, true) => blocks_avx512::<1>(key, nonce, counter, src, dst, len),
                (2, true) => blocks_avx512::<2>(key, nonce, counter, src, dst, len),
                (3, true) => blocks_avx512::<3>(key, nonce, counter, src, dst, len),
                (_, true) => blocks_avx512::<4>(key, nonce, counter, src, dst, len),
                (1, false) => blocks_sse2::<1>(key, nonce, counter, src, dst, len),
                (2, false) => blocks_sse2::<2>(key, nonce, counter, src, dst, len),
                (3, false) => blocks_sse2::<3>(key, nonce, counter, src, dst, len),
                (_, false) => blocks_sse2::<4>(key, nonce, counter, src, dst, len),
            }
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use chacha20::cipher::{KeyIvInit, StreamCipherCore};

    /// The crate's keystream from block `counter` (`len` bytes).
    fn crate_keystream(key: &[u8; 32], nonce: &[u8; 8], counter: u64, len: usize) -> Vec<u8> {
        let mut core = chacha20::ChaCha20LegacyCore::new(key.into(), nonce.into());
        core.set_block_pos(counter);
        let mut blocks: [chacha20::cipher::Block<chacha20::ChaCha20LegacyCore>; MAX_BLOCKS] = Default::default();
        core.write_keystream_blocks(&mut blocks[..len.div_ceil(64)]);
        chacha20::cipher::array::Array::slice_as_flattened(&blocks)[..len].to_vec()
    }

    /// A xorshift stream, for keys, nonces and data.
    pub fn random(state: &mut u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                *state as u8
            })
            .collect()
    }

    /// Every implementation this CPU can run (`xor` picks one of them).
    fn implementations() -> Vec<(&'static str, Box<dyn Fn(&[u8; 32], &[u8; 8], u64, Option<&[u8]>, &mut [u8])>)> {
        #[allow(unused_mut)] // nothing more to add on other targets
        let mut all: Vec<(&'static str, Box<dyn Fn(&[u8; 32], &[u8; 8], u64, Option<&[u8]>, &mut [u8])>)> = vec![("xor", Box::new(xor))];
        #[cfg(target_arch = "x86_64")]
        for (name, avx512) in [("sse2", false), ("avx512", true)] {
            if avx512 && !crate::cpu::avx512() {
                continue;
            }
            all.push((
                name,
                Box::new(move |key: &[u8; 32], nonce: &[u8; 8], counter, input: Option<&[u8]>, out: &mut [u8]| {
                    let src = input.map_or(out.as_ptr(), |input| input.as_ptr());
                    // SAFETY: both buffers hold `out.len()` bytes; AVX-512 only if detected.
                    unsafe { x86::xor(key, nonce, counter, src, out.as_mut_ptr(), out.len(), avx512) }
                }),
            ));
        }
        all
    }

    /// Bit for bit the crate's keystream: random keys and nonces, counters
    /// at 0, around 2^32 (the carry into the high word) and 2^64 (where the
    /// crate's 64-bit counter wraps to 0), every length to four blocks, in
    /// place and out of place.
    #[test]
    fn matches_the_crate() {
        let mut state = 0x9E37_79B9_7F4A_7C15;
        let counters = [0, 1, 5, (1 << 32) - 3, (1 << 32) - 1, 1 << 32, u64::MAX - 2, u64::MAX - 1, u64::MAX];
        for (name, run) in implementations() {
            for round in 0..12 {
                let key: [u8; 32] = random(&mut state, 32).try_into().unwrap();
                let nonce: [u8; 8] = random(&mut state, 8).try_into().unwrap();
                let counter = if round < counters.len() { counters[round] } else { u64::from_le_bytes(random(&mut state, 8).try_into().unwrap()) };
                for len in 0..=MAX_BLOCKS * 64 {
                    let data = random(&mut state, len);
                    let expected: Vec<u8> = data.iter().zip(crate_keystream(&key, &nonce, counter, len)).map(|(d, k)| d ^ k).collect();
                    let mut out = vec![0xAA; len];
                    run(&key, &nonce, counter, Some(&data), &mut out);
                    assert_eq!(out, expected, "{name}: counter {counter:#x}, length {len}");
                    let mut inplace = data.clone();
                    run(&key, &nonce, counter, None, &mut inplace);
                    assert_eq!(inplace, expected, "{name} in place: counter {counter:#x}, length {len}");
                }
            }
        }
    }

    /// RFC 8439 section 2.3.2's block, in the DJB layout: its 32-bit counter
    /// 1 and first nonce word 0x09000000 are this layout's 64-bit counter.
    #[test]
    fn rfc8439_block() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let nonce = [0, 0, 0, 0x4a, 0, 0, 0, 0];
        let expected = hex::decode(
            "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e\
             d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e",
        )
        .unwrap();
        for (name, run) in implementations() {
            let mut block = [0u8; 64];
            run(&key, &nonce, 0x0900_0000_0000_0001, None, &mut block);
            assert_eq!(block[..], expected[..], "{name}");
        }
    }
}
