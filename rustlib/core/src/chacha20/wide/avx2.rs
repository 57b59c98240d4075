//! The AVX2 kernel: one state word of 8 blocks per 256-bit register, two
//! passes per unit, the blocks transposed out of the registers and XORed
//! into the output.

use std::arch::x86_64::*;

use super::rounds::{at_or_null, State};

/// Blocks per pass of the rounds: one per 32-bit lane of a register.
const LANES: usize = 8;

/// Byte masks of `vpshufb` that rotate each 32-bit lane left by 16 and by 8.
static ROTATE_16: [u8; 32] = [2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13];
static ROTATE_8: [u8; 32] = [3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14];

/// `vpshufb` of `x` by the mask at `mask`, as one instruction. In
/// `asm!` because LLVM otherwise rewrites the rotate by 16 as two word
/// shuffles and moves the rotate by 8 in front of the XOR it follows
/// (two shuffles for one): 18 operations per quarter round instead of 16.
#[inline]
#[target_feature(enable = "avx2")]
fn shuffle_bytes(x: __m256i, mask: &'static [u8; 32]) -> __m256i {
    let out: __m256i;
    // SAFETY: reads the 32 bytes of `mask` and writes only `out`; the
    // CPU has AVX2 (this function's feature).
    unsafe {
        std::arch::asm!(
            "vpshufb {out}, {x}, ymmword ptr [{mask}]",
            out = lateout(ymm_reg) out,
            x = in(ymm_reg) x,
            mask = in(reg) mask.as_ptr(),
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    out
}

/// `x` rotated left by `N` bits in each 32-bit lane: a byte shuffle for
/// 16 and 8, two shifts otherwise.
macro_rules! rotl {
    ($x:expr, 16) => {
        shuffle_bytes($x, &ROTATE_16)
    };
    ($x:expr, 8) => {
        shuffle_bytes($x, &ROTATE_8)
    };
    ($x:expr, $n:literal) => {{
        let x = $x;
        _mm256_or_si256(_mm256_slli_epi32::<$n>(x), _mm256_srli_epi32::<{ 32 - $n }>(x))
    }};
}

/// Unsigned `a < b` in each lane, as all ones or zero (AVX2 compares
/// signed: flipping the top bits of both makes it unsigned).
#[inline]
#[target_feature(enable = "avx2")]
fn less_than(a: __m256i, b: __m256i) -> __m256i {
    let top = _mm256_set1_epi32(i32::MIN);
    _mm256_cmpgt_epi32(_mm256_xor_si256(b, top), _mm256_xor_si256(a, top))
}

/// `dst = src XOR keystream` for `units` units of 16 blocks (two passes
/// of 8 each), and `copy` the same unless it is null.
///
/// # Safety
/// `src` (which may equal `dst`, but must not otherwise overlap it),
/// `dst` and `copy` (null, or overlapping neither) hold `units *
/// UNIT_BYTES` bytes; the CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn xor_units<const HIGH_UNIFORM: bool>(state: &State, double_rounds: usize, src: *const u8, dst: *mut u8, copy: *mut u8, units: usize) {
    let words = &state.words;
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let step = _mm256_set1_epi32(LANES as i32);
    // The counter words of the pass's 8 blocks: block `i` in lane `i`, a
    // lane that passes 2^32 carrying into the high word (DJB layout;
    // subtracting the all-ones "less than" adds one).
    let mut low = _mm256_add_epi32(_mm256_set1_epi32(words[12] as i32), lanes);
    let mut high = _mm256_set1_epi32(words[13] as i32);
    if !HIGH_UNIFORM {
        high = _mm256_sub_epi32(high, less_than(low, lanes));
    }
    for pass in 0..units * super::UNIT_BLOCKS / LANES {
        let x: [__m256i; 16] = keystream_pass!(quarter_rounds_in_turn, _mm256_set1_epi32, _mm256_add_epi32, _mm256_xor_si256, rotl, state, HIGH_UNIFORM, low, high, double_rounds);
        let at = pass * LANES * 64;
        // SAFETY: the pass's 512 bytes lie within both buffers (the
        // caller's contract).
        unsafe { store_pass(&x, src.add(at), dst.add(at), at_or_null(copy, at)) };
        let next = _mm256_add_epi32(low, step);
        if !HIGH_UNIFORM {
            high = _mm256_sub_epi32(high, less_than(next, low));
        }
        low = next;
    }
    // As `avx512::clear_vector_registers`: `vzeroupper` would leave the
    // low 128 bits of each register.
    _mm256_zeroall();
}

/// Transposes the 16 words x 8 blocks of `x` into 8 blocks and XORs them
/// into the pass's bytes: `dst[..512] = src[..512] XOR blocks`, and
/// `copy[..512]` the same unless `copy` is null.
///
/// # Safety
/// `src`, `dst` and `copy` (unless null) hold 512 bytes; the CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store_pass(x: &[__m256i; 16], src: *const u8, dst: *mut u8, copy: *mut u8) {
    // Stage 1, within each 128-bit half h (blocks 4h..4h+3).
    let y = transpose_lanes!(x, _mm256_setzero_si256(), _mm256_unpacklo_epi32, _mm256_unpackhi_epi32, _mm256_unpacklo_epi64, _mm256_unpackhi_epi64);
    // Stage 2: block 4h+k is halves h of y[0][k], y[1][k] (its first 32
    // bytes) and y[2][k], y[3][k] (its last 32).
    for k in 0..4 {
        let quarters = [
            (k, _mm256_permute2x128_si256::<0x20>(y[0][k], y[1][k])),
            (k, _mm256_permute2x128_si256::<0x20>(y[2][k], y[3][k])),
            (4 + k, _mm256_permute2x128_si256::<0x31>(y[0][k], y[1][k])),
            (4 + k, _mm256_permute2x128_si256::<0x31>(y[2][k], y[3][k])),
        ];
        for (i, (block, bytes)) in quarters.into_iter().enumerate() {
            let at = block * 64 + (i % 2) * 32;
            // SAFETY: these 32 bytes of block `block` lie within the
            // pass's 512 bytes.
            unsafe {
                let data = _mm256_xor_si256(_mm256_loadu_si256(src.add(at) as *const __m256i), bytes);
                _mm256_storeu_si256(dst.add(at) as *mut __m256i, data);
                if !copy.is_null() {
                    _mm256_storeu_si256(copy.add(at) as *mut __m256i, data);
                }
            }
        }
    }
}
