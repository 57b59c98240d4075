//! The AVX-512 kernel: one state word of 16 blocks per 512-bit register,
//! one pass per unit, the blocks transposed out of the registers and XORed
//! into the output with whole-line stores (shifted where the output starts
//! a whole number of words past a line) and, where the input lies a whole
//! number of words past the lines the stores write, whole-line loads.

use std::arch::x86_64::*;

use super::rounds::{at_or_null, State};

/// `x` rotated left by `N` bits in each 32-bit lane: one `vprold`.
macro_rules! rotl512 {
    ($x:expr, $n:literal) => {
        _mm512_rol_epi32::<$n>($x)
    };
}

/// `avx2::xor_units` with 16 blocks per register: one pass per unit.
///
/// Where `dst` starts a multiple of 4 bytes past a 64-byte line (as
/// Python's buffers do: 16 past one), every 64-byte store would straddle
/// two lines; the blocks are then stored shifted (`store_unit_shifted`),
/// each store one whole line of `dst`. With a copy the stores are twice
/// as many, and stores that straddle lines slow the AEAD's pass down
/// (docs/performance.md, "The wide ChaCha20 kernels").
///
/// # Safety
/// As `avx2::xor_units`, with AVX-512F instead of AVX2.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn xor_units<const HIGH_UNIFORM: bool>(state: &State, double_rounds: usize, src: *const u8, dst: *mut u8, copy: *mut u8, units: usize) {
    let words = &state.words;
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let step = _mm512_set1_epi32(super::UNIT_BLOCKS as i32);
    let one = _mm512_set1_epi32(1);
    // Bytes from `dst` to its next line; shifted stores where that is a
    // whole number of 32-bit words (the shift is by words).
    let shift = (dst as usize).wrapping_neg() % 64;
    let shifted = shift != 0 && shift % 4 == 0;
    let window = Window::new(shift / 4);
    // The input's offset from a line where the stores start lines.
    let src_offset = (src as usize).wrapping_add(if shifted { shift } else { 0 }) % 64;
    let interior = Input { lines: (src_offset != 0 && src_offset % 4 == 0).then(|| Window::new(src_offset / 4)) };
    let mut last = _mm512_setzero_si512();
    // The counter words of the unit's 16 blocks: block `i` in lane `i`, a
    // lane that passes 2^32 carrying into the high word (DJB layout).
    let mut low = _mm512_add_epi32(_mm512_set1_epi32(words[12] as i32), lanes);
    let mut high = _mm512_set1_epi32(words[13] as i32);
    if !HIGH_UNIFORM {
        high = _mm512_mask_add_epi32(high, _mm512_cmplt_epu32_mask(low, lanes), high, one);
    }
    for unit in 0..units {
        let x: [__m512i; 16] = keystream_pass!(quarter_rounds_interleaved, _mm512_set1_epi32, _mm512_add_epi32, _mm512_xor_si512, rotl512, state, HIGH_UNIFORM, low, high, double_rounds);
        let blocks = transpose_unit(&x);
        let at = unit * super::UNIT_BYTES;
        let copy_at = at_or_null(copy, at);
        // The first and last units load straddling: their input's whole
        // lines would reach past the run.
        let input = if unit > 0 && unit + 1 < units { &interior } else { &Input::DIRECT };
        // SAFETY: the unit's 1024 bytes lie within the buffers (the
        // caller's contract); the shifted stores' window before the
        // unit (unit > 0) lies within the previous unit; an interior
        // unit's whole input lines start after the first unit's first
        // byte and end before the last unit's last.
        unsafe {
            if !shifted {
                store_unit(input, &blocks, src.add(at), dst.add(at), copy_at);
            } else {
                if unit == 0 {
                    window.store_head(blocks[0], src, dst, copy);
                } else {
                    // The window across the last unit's last block and this one's first.
                    window.store(input, last, blocks[0], src.add(at - 64), dst.add(at - 64), at_or_null(copy, at - 64));
                }
                store_unit_shifted(input, &window, &blocks, src.add(at), dst.add(at), copy_at);
            }
        }
        last = blocks[15];
        let next = _mm512_add_epi32(low, step);
        if !HIGH_UNIFORM {
            high = _mm512_mask_add_epi32(high, _mm512_cmplt_epu32_mask(next, low), high, one);
        }
        low = next;
    }
    if shifted {
        let at = units * super::UNIT_BYTES - 64;
        // SAFETY: the last block's 64 bytes lie within the buffers.
        unsafe { window.store_tail(last, src.add(at), dst.add(at), at_or_null(copy, at)) };
    }
    clear_vector_registers();
}

/// Zeroes every vector register: the kernel leaves keystream and
/// plaintext in them, and `vzeroupper` at the return clears neither the
/// low 128 bits of zmm0-15 nor any of zmm16-31. Left there, they reach
/// memory the next time anything saves the register state (glibc's lazy
/// binding saves it on the stack with `xsave`; so does a signal), where
/// no scrub of cb3's looks (a plaintext copy on the stack, found by
/// tests/properties/test_secrets.py's memory scan).
#[inline]
#[target_feature(enable = "avx512f")]
fn clear_vector_registers() {
    // SAFETY: writes only the registers it declares as clobbered.
    unsafe {
        std::arch::asm!(
            "vzeroall",
            "vpxord zmm16, zmm16, zmm16", "vpxord zmm17, zmm17, zmm17", "vpxord zmm18, zmm18, zmm18", "vpxord zmm19, zmm19, zmm19",
            "vpxord zmm20, zmm20, zmm20", "vpxord zmm21, zmm21, zmm21", "vpxord zmm22, zmm22, zmm22", "vpxord zmm23, zmm23, zmm23",
            "vpxord zmm24, zmm24, zmm24", "vpxord zmm25, zmm25, zmm25", "vpxord zmm26, zmm26, zmm26", "vpxord zmm27, zmm27, zmm27",
            "vpxord zmm28, zmm28, zmm28", "vpxord zmm29, zmm29, zmm29", "vpxord zmm30, zmm30, zmm30", "vpxord zmm31, zmm31, zmm31",
            out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
            out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _, out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _, out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
            out("zmm24") _, out("zmm25") _, out("zmm26") _, out("zmm27") _, out("zmm28") _, out("zmm29") _, out("zmm30") _, out("zmm31") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// Transposes the 16 words x 16 blocks of `x` into the unit's 16
/// keystream blocks, in order.
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose_unit(x: &[__m512i; 16]) -> [__m512i; 16] {
    // Stage 1, within each 128-bit lane h (blocks 4h..4h+3).
    let y = transpose_lanes!(x, _mm512_setzero_si512(), _mm512_unpacklo_epi32, _mm512_unpackhi_epi32, _mm512_unpacklo_epi64, _mm512_unpackhi_epi64);
    // Stage 2: block 4h+k is lanes h of y[0][k], y[1][k], y[2][k] and
    // y[3][k]. Pair the lanes of y[0], y[1] (and of y[2], y[3]) first,
    // then pick every other lane of two pairs: 0x88 takes lanes 0 and 2
    // of each source, 0xDD lanes 1 and 3.
    let mut blocks = [_mm512_setzero_si512(); 16];
    for k in 0..4 {
        let low01 = _mm512_shuffle_i32x4::<0x44>(y[0][k], y[1][k]); // y0 lanes 0 1, y1 lanes 0 1
        let high01 = _mm512_shuffle_i32x4::<0xEE>(y[0][k], y[1][k]); // y0 lanes 2 3, y1 lanes 2 3
        let low23 = _mm512_shuffle_i32x4::<0x44>(y[2][k], y[3][k]);
        let high23 = _mm512_shuffle_i32x4::<0xEE>(y[2][k], y[3][k]);
        blocks[k] = _mm512_shuffle_i32x4::<0x88>(low01, low23);
        blocks[4 + k] = _mm512_shuffle_i32x4::<0xDD>(low01, low23);
        blocks[8 + k] = _mm512_shuffle_i32x4::<0x88>(high01, high23);
        blocks[12 + k] = _mm512_shuffle_i32x4::<0xDD>(high01, high23);
    }
    blocks
}

/// XORs the unit's keystream `blocks` into its bytes: `dst[..1024] =
/// src[..1024] XOR blocks`, and `copy[..1024]` the same unless `copy`
/// is null.
///
/// All the unit's loads come before its stores (as in
/// `store_unit_shifted`). Where `dst` lies a few bytes past `src` modulo
/// 4 KiB (two heap buffers one after the other), each load of the next
/// block would otherwise follow a store that the CPU cannot tell apart
/// from it by the address bits it compares ("4K aliasing") and wait for
/// it: a chain through the unit's stores.
///
/// # Safety
/// `src`, `dst` and `copy` (unless null) hold 1024 bytes; the CPU has
/// AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store_unit(input: &Input, blocks: &[__m512i; 16], src: *const u8, dst: *mut u8, copy: *mut u8) {
    // SAFETY: block `block`'s 64 bytes lie within the unit's 1024.
    let data: [__m512i; 16] = std::array::from_fn(|block| unsafe { input.xor(blocks[block], src.add(block * 64)) });
    for (block, &bytes) in data.iter().enumerate() {
        let at = block * 64;
        // SAFETY: as above.
        unsafe { store_both(bytes, dst.add(at), at_or_null(copy, at)) };
    }
}

/// How a unit loads its 64-byte pieces of input. Where the input lies
/// a whole number of 32-bit words, but not of lines, past the lines the
/// stores write (Python keeps a large bytes object's data 48 bytes past
/// a line, behind its 32-byte header, a large bytearray's 16 past one),
/// each such load would straddle two lines, and split loads slow ChaCha20
/// down (docs/performance.md, "The wide ChaCha20 kernels"). `lines` then loads the two whole
/// lines instead and takes the 64 bytes out of them with one `vpermt2d`
/// (a `Window` over the input). A line is then loaded twice, for the end
/// of one piece and the start of the next, but each byte of a piece comes
/// from one load, and the output and the AEAD's private copy from the
/// same register: what is stored is still one reading of the input.
struct Input {
    lines: Option<Window>,
}

impl Input {
    /// One load per piece, wherever it lies.
    const DIRECT: Input = Input { lines: None };

    /// `src[..64] XOR keystream`.
    ///
    /// # Safety
    /// `src` holds 64 bytes; with `lines`, `src` lies `4 * words` bytes
    /// past a line and both whole lines lie within the input. The CPU
    /// has AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn xor(&self, keystream: __m512i, src: *const u8) -> __m512i {
        // SAFETY: the caller's contract (aligned loads of whole lines).
        let bytes = unsafe {
            match &self.lines {
                None => _mm512_loadu_si512(src as *const _),
                Some(lines) => {
                    let line = src.sub(4 * lines.words);
                    lines.bytes(_mm512_load_si512(line as *const _), _mm512_load_si512(line.add(64) as *const _))
                }
            }
        };
        _mm512_xor_si512(bytes, keystream)
    }
}

/// `dst[..64] = data`, and `copy[..64]` the same unless `copy` is null.
///
/// # Safety
/// The pointers (but a null `copy`) hold 64 bytes; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store_both(data: __m512i, dst: *mut u8, copy: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        _mm512_storeu_si512(dst as *mut _, data);
        if !copy.is_null() {
            _mm512_storeu_si512(copy as *mut _, data);
        }
    }
}

/// `xor_store` of the 32-bit words in `mask` only: the masked-off
/// words are neither read nor written.
///
/// # Safety
/// The pointers (but a null `copy`) hold the words in `mask`; the CPU
/// has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn xor_store_masked(mask: __mmask16, keystream: __m512i, src: *const u8, dst: *mut u8, copy: *mut u8) {
    // SAFETY: masked loads and stores touch only the words in `mask`
    // (the caller's contract).
    unsafe {
        let data = _mm512_xor_si512(_mm512_maskz_loadu_epi32(mask, src as *const i32), keystream);
        _mm512_mask_storeu_epi32(dst as *mut i32, mask, data);
        if !copy.is_null() {
            _mm512_mask_storeu_epi32(copy as *mut i32, mask, data);
        }
    }
}

/// The 64 bytes that start `4 * words` bytes into one keystream block
/// and end as far into the next: `dst`'s whole lines when `dst` is that
/// far short of one. Over two whole lines of input, the 64 bytes of
/// input that `4 * words` bytes past a line start (`Input`).
struct Window {
    words: usize,
    /// `vpermt2d` indices: lane i takes word `i + words` of the pair.
    index: __m512i,
}

impl Window {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(words: usize) -> Self {
        let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        Window { words, index: _mm512_add_epi32(lanes, _mm512_set1_epi32(words as i32)) }
    }

    /// `dst[w..w + 64] = src[w..w + 64] XOR (first || second)[w..w + 64]`
    /// (w = 4 * words), and `copy` the same unless null.
    ///
    /// # Safety
    /// The pointers (but a null `copy`) hold 128 bytes from where they point.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(&self, input: &Input, first: __m512i, second: __m512i, src: *const u8, dst: *mut u8, copy: *mut u8) {
        let at = 4 * self.words;
        // SAFETY: the 64 bytes at `at` lie within the 128 (the contract).
        unsafe { store_both(input.xor(self.bytes(first, second), src.add(at)), dst.add(at), at_or_null(copy, at)) };
    }

    /// The window's 64 bytes of keystream: `(first || second)[w..w + 64]`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn bytes(&self, first: __m512i, second: __m512i) -> __m512i {
        _mm512_permutex2var_epi32(first, self.index, second)
    }

    /// The first `4 * words` bytes of a run, from its first block.
    ///
    /// # Safety
    /// The pointers (but a null `copy`) hold 64 bytes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store_head(&self, first: __m512i, src: *const u8, dst: *mut u8, copy: *mut u8) {
        let mask: __mmask16 = (1 << self.words) - 1;
        // SAFETY: the first `words` words of the 64 bytes (the contract).
        unsafe { xor_store_masked(mask, first, src, dst, copy) };
    }

    /// The bytes of a run's last block from `4 * words` on.
    ///
    /// # Safety
    /// The pointers (but a null `copy`) hold the last block's 64 bytes.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store_tail(&self, last: __m512i, src: *const u8, dst: *mut u8, copy: *mut u8) {
        let bytes = _mm512_permutex2var_epi32(last, self.index, _mm512_setzero_si512());
        let mask: __mmask16 = (1 << (16 - self.words)) - 1;
        let at = 4 * self.words;
        // SAFETY: the 64 - `at` bytes from `at` to the block's end (the contract).
        unsafe { xor_store_masked(mask, bytes, src.add(at), dst.add(at), at_or_null(copy, at)) };
    }
}

/// The unit's blocks stored shifted: the windows across blocks 0-1, 1-2,
/// ..., 14-15 (the one across 15 and the next unit's 0 is the next
/// unit's, or the run's tail).
///
/// # Safety
/// As `store_unit`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store_unit_shifted(input: &Input, window: &Window, blocks: &[__m512i; 16], src: *const u8, dst: *mut u8, copy: *mut u8) {
    let shift = 4 * window.words;
    // All the windows' loads before their stores (`store_unit`).
    // SAFETY: the windows across blocks `block` and `block + 1` lie
    // within the unit.
    let data: [__m512i; 15] = std::array::from_fn(|block| unsafe { input.xor(window.bytes(blocks[block], blocks[block + 1]), src.add(block * 64 + shift)) });
    for (block, &bytes) in data.iter().enumerate() {
        let at = block * 64 + shift;
        // SAFETY: as above.
        unsafe { store_both(bytes, dst.add(at), at_or_null(copy, at)) };
    }
}
