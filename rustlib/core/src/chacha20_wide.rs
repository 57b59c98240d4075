//! ChaCha for long runs on CPUs with AVX2 or AVX-512: one state word of 8
//! blocks per 256-bit register (the layout of OpenSSL's `ChaCha20_8x`), or
//! of 16 blocks per 512-bit register (`ChaCha20_16x`), XORed straight from
//! the registers into the output. The bytes are those of the `chacha20`
//! crate's cores (checked against them below, each kernel this CPU runs, and
//! against RFC 8439, at every round count and both layouts).
//!
//! Why not the crate's backends: its AVX2 one keeps two blocks per register
//! as rows, four blocks per call, so every round also shuffles three rows of
//! each register back and forth (a quarter more vector operations than the
//! rounds themselves), and it writes the keystream to a buffer that a second
//! pass XORs into the data; its AVX-512 one is built the same way, with four
//! blocks per register (1.30x OpenSSL's time on a Zen 4, docs/results). The
//! crate's backends stay on CPUs without AVX2 and on other targets.

/// Blocks per unit: `xor` handles whole units only.
pub const UNIT_BLOCKS: usize = 16;
/// Bytes per unit.
pub const UNIT_BYTES: usize = UNIT_BLOCKS * 64;

/// The nonce, which also fixes the layout of the state's last row.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // only the x86_64 kernel reads the nonce
pub enum Nonce<'a> {
    /// The original (DJB) layout: words 12-13 a 64-bit block counter
    /// (wrapping at 2^64, as the crate's does), 14-15 the nonce.
    Djb(&'a [u8; 8]),
    /// RFC 8439: word 12 a 32-bit block counter, 13-15 the nonce. The caller
    /// keeps each call's blocks below 2^32 (the counter does not carry).
    Ietf(&'a [u8; 12]),
}

/// The kernels, by the widest vectors they use.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // no kernel runs there
pub enum Kernel {
    Avx2,
    Avx512,
}

/// The kernel this CPU runs: AVX-512 where cb3 uses it (`info::avx512`),
/// else AVX2; None without AVX2 (the callers then keep the crate).
pub fn kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::info::avx512() {
            return Some(Kernel::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Kernel::Avx2);
        }
    }
    None
}

/// Whether `xor` runs on this CPU.
pub fn available() -> bool {
    kernel().is_some()
}

/// `out = input XOR keystream` (`out ^= keystream` when `input` is None) for
/// the whole units at the front of `out`, the keystream of (`key`, `nonce`)
/// with `double_rounds` double rounds (10 for ChaCha20) from block `counter`
/// on. Returns the bytes done: `out.len()` rounded down to a multiple of
/// `UNIT_BYTES`, or 0 where not `available()`.
pub fn xor(key: &[u8; 32], nonce: Nonce<'_>, counter: u64, double_rounds: usize, input: Option<&[u8]>, out: &mut [u8]) -> usize {
    xor_copying(key, nonce, counter, double_rounds, input, out, None)
}

/// `xor`, also storing every output byte it writes into `copy` (at least as
/// long as the bytes done) from the same register: the AEAD's private piece
/// and the caller's output in one pass, where a copy of one into the other
/// would be a second pass over both.
pub fn xor_copying(
    key: &[u8; 32],
    nonce: Nonce<'_>,
    counter: u64,
    double_rounds: usize,
    input: Option<&[u8]>,
    out: &mut [u8],
    copy: Option<&mut [u8]>,
) -> usize {
    match kernel() {
        // SAFETY: `kernel()` is a kernel this CPU runs.
        Some(kernel) => unsafe { xor_with(kernel, key, nonce, counter, double_rounds, input, out, copy) },
        None => 0,
    }
}

/// `xor_copying` on the given kernel.
///
/// # Safety
/// The CPU has the kernel's features (`kernel()`, or for the tests any
/// kernel whose features are detected).
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
unsafe fn xor_with(
    kernel: Kernel,
    key: &[u8; 32],
    nonce: Nonce<'_>,
    counter: u64,
    double_rounds: usize,
    input: Option<&[u8]>,
    out: &mut [u8],
    copy: Option<&mut [u8]>,
) -> usize {
    let units = out.len() / UNIT_BYTES;
    if units == 0 {
        return 0;
    }
    assert!(input.is_none_or(|input| input.len() >= units * UNIT_BYTES));
    assert!(copy.as_ref().is_none_or(|copy| copy.len() >= units * UNIT_BYTES));
    #[cfg(target_arch = "x86_64")]
    {
        let mut state = State::new(key, nonce, counter, units * UNIT_BLOCKS);
        let src = input.map_or(out.as_ptr(), |input| input.as_ptr());
        let copy = copy.map_or(std::ptr::null_mut(), |copy| copy.as_mut_ptr());
        // SAFETY: `src`, `out` and `copy` (unless null) hold `units` units
        // (`src` may be `out`, which the kernels allow; `copy` is a separate
        // `&mut`, so it overlaps neither); the CPU has the kernel's features
        // (this function's contract).
        unsafe {
            let dst = out.as_mut_ptr();
            match (kernel, state.high_uniform) {
                (Kernel::Avx2, true) => x86::xor_units::<true>(&state, double_rounds, src, dst, copy, units),
                (Kernel::Avx2, false) => x86::xor_units::<false>(&state, double_rounds, src, dst, copy, units),
                (Kernel::Avx512, true) => x86::xor_units_avx512::<true>(&state, double_rounds, src, dst, copy, units),
                (Kernel::Avx512, false) => x86::xor_units_avx512::<false>(&state, double_rounds, src, dst, copy, units),
            }
        }
        state.wipe();
        units * UNIT_BYTES
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kernel, key, nonce, counter, double_rounds, input, copy);
        0
    }
}

/// The 16 words of the state before the rounds, whether word 13 is the
/// same in every block of the call, and the state after the first round of
/// the columns that are.
///
/// Only column 0 holds the low counter word; column 1 holds the high one
/// (DJB layout; in RFC 8439's, word 13 is nonce), the same in every block
/// unless the low word wraps within the call. The first round of the other
/// columns is therefore one scalar quarter round each per call instead of a
/// vector one per pass (`first`): 36 of the 960 vector operations of 16
/// blocks' ChaCha20 rounds. The bytes are the same.
#[cfg(target_arch = "x86_64")]
pub struct State {
    words: [u32; 16],
    /// Word 13 is the same in all the call's blocks.
    high_uniform: bool,
    /// `words` after the first column round of columns 2 and 3, and of
    /// column 1 where `high_uniform`; the other columns' words as in `words`.
    first: [u32; 16],
}

#[cfg(target_arch = "x86_64")]
impl State {
    /// The state of a call of `blocks` blocks from block `counter`.
    fn new(key: &[u8; 32], nonce: Nonce<'_>, counter: u64, blocks: usize) -> Self {
        let mut words = [0u32; 16];
        words[..4].copy_from_slice(&[0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]);
        for (word, bytes) in words[4..12].iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        let (tail, wide): (&[u8], bool) = match nonce {
            Nonce::Djb(nonce) => {
                words[12] = counter as u32;
                words[13] = (counter >> 32) as u32;
                (&nonce[..], true)
            }
            Nonce::Ietf(nonce) => {
                words[12] = counter as u32;
                (&nonce[..], false)
            }
        };
        let first = 16 - tail.len() / 4;
        for (word, bytes) in words[first..].iter_mut().zip(tail.chunks_exact(4)) {
            *word = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        // The last block's low word is counter's plus blocks - 1: no wrap
        // while that stays below 2^32.
        let high_uniform = !wide || u64::from(words[12]) + blocks as u64 <= 1 << 32;
        let mut first = words;
        for column in if high_uniform { 1..4 } else { 2..4 } {
            quarter_round(&mut first, column, column + 4, column + 8, column + 12);
        }
        State { words, high_uniform, first }
    }

    fn wipe(&mut self) {
        crate::wipe::wipe(&mut self.words);
        crate::wipe::wipe(&mut self.first);
    }
}

/// One ChaCha quarter round on words `a`, `b`, `c`, `d` of `x` (RFC 8439,
/// section 2.1).
#[cfg(target_arch = "x86_64")]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::State;

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

    /// A quarter round's seven steps after its first add (`a += b`, already
    /// in `$x[$a]`), with `$d_word` as word `d` before them.
    macro_rules! quarter_round_after_first_add {
        ($add:ident, $xor:ident, $rotl:ident, $x:ident, $d_word:expr, $a:literal, $b:literal, $c:literal, $d:literal) => {
            $x[$d] = $rotl!($xor($d_word, $x[$a]), 16);
            $x[$c] = $add($x[$c], $x[$d]);
            $x[$b] = $rotl!($xor($x[$b], $x[$c]), 12);
            $x[$a] = $add($x[$a], $x[$b]);
            $x[$d] = $rotl!($xor($x[$d], $x[$a]), 8);
            $x[$c] = $add($x[$c], $x[$d]);
            $x[$b] = $rotl!($xor($x[$b], $x[$c]), 7);
        };
    }

    /// ChaCha quarter rounds on four registers each (one word of every
    /// block per register), with the vector width's add, XOR and rotate:
    /// each quarter round whole, one after another.
    macro_rules! quarter_rounds_in_turn {
        ($add:ident, $xor:ident, $rotl:ident, $x:ident, $(($a:literal, $b:literal, $c:literal, $d:literal)),+) => {
            $(
                $x[$a] = $add($x[$a], $x[$b]);
                quarter_round_after_first_add!($add, $xor, $rotl, $x, $x[$d], $a, $b, $c, $d);
            )+
        };
    }

    /// The same quarter rounds side by side, one step of all of them at a
    /// time (OpenSSL's order), so that in-order port assignment sees four
    /// independent operations at every step instead of one chain of twelve
    /// after another.
    macro_rules! quarter_rounds_interleaved {
        ($add:ident, $xor:ident, $rotl:ident, $x:ident, $(($a:literal, $b:literal, $c:literal, $d:literal)),+) => {
            $( $x[$a] = $add($x[$a], $x[$b]); )+
            $( $x[$d] = $rotl!($xor($x[$d], $x[$a]), 16); )+
            $( $x[$c] = $add($x[$c], $x[$d]); )+
            $( $x[$b] = $rotl!($xor($x[$b], $x[$c]), 12); )+
            $( $x[$a] = $add($x[$a], $x[$b]); )+
            $( $x[$d] = $rotl!($xor($x[$d], $x[$a]), 8); )+
            $( $x[$c] = $add($x[$c], $x[$d]); )+
            $( $x[$b] = $rotl!($xor($x[$b], $x[$c]), 7); )+
        };
    }

    /// One round on the columns, in the style of `$quarter_rounds`.
    macro_rules! column_round {
        ($quarter_rounds:ident, $add:ident, $xor:ident, $rotl:ident, $x:ident) => {
            $quarter_rounds!($add, $xor, $rotl, $x, (0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))
        };
    }

    /// One round on the diagonals.
    macro_rules! diagonal_round {
        ($quarter_rounds:ident, $add:ident, $xor:ident, $rotl:ident, $x:ident) => {
            $quarter_rounds!($add, $xor, $rotl, $x, (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))
        };
    }

    /// The first quarter round of column (`a`, `b`, `c`, `d`), whose words
    /// `a`, `b`, `c` are the same in every block (`$x` holds them
    /// broadcast) and whose word `d` is the per-lane `$d_words` (a counter
    /// word): the first add is one scalar add.
    macro_rules! first_quarter_round {
        ($set1:ident, $add:ident, $xor:ident, $rotl:ident, $x:ident, $words:expr, $d_words:expr, $a:literal, $b:literal, $c:literal, $d:literal) => {
            $x[$a] = $set1($words[$a].wrapping_add($words[$b]) as i32);
            quarter_round_after_first_add!($add, $xor, $rotl, $x, $d_words, $a, $b, $c, $d);
        };
    }

    /// The 16 state words of one pass's blocks (one word of every block per
    /// register) after the rounds and the feed-forward of the input state:
    /// `state`'s words broadcast, with the per-lane counter words `low` and
    /// `high`. The first column round starts from `state.first`, where the
    /// columns that are the same in every block have had theirs (column 1
    /// only where `$high_uniform`, a constant of the kernel's).
    macro_rules! keystream_pass {
        ($quarter_rounds:ident, $set1:ident, $add:ident, $xor:ident, $rotl:ident, $state:expr, $high_uniform:expr, $low:expr, $high:expr, $double_rounds:expr) => {{
            let (words, first) = (&$state.words, &$state.first);
            let mut x = std::array::from_fn::<_, 16, _>(|i| $set1(first[i] as i32));
            first_quarter_round!($set1, $add, $xor, $rotl, x, words, $low, 0, 4, 8, 12);
            if !$high_uniform {
                first_quarter_round!($set1, $add, $xor, $rotl, x, words, $high, 1, 5, 9, 13);
            }
            diagonal_round!($quarter_rounds, $add, $xor, $rotl, x);
            for _ in 1..$double_rounds {
                column_round!($quarter_rounds, $add, $xor, $rotl, x);
                diagonal_round!($quarter_rounds, $add, $xor, $rotl, x);
            }
            for (i, word) in x.iter_mut().enumerate() {
                let input = match i {
                    12 => $low,
                    13 => $high,
                    _ => $set1(words[i] as i32),
                };
                *word = $add(*word, input);
            }
            x
        }};
    }

    /// The first stage of the transpose, within each 128-bit lane h (blocks
    /// 4h..4h+3): a 4x4 transpose of each group of four words, so that
    /// `y[g][k]` holds, in lane h, words 4g..4g+3 of block 4h+k.
    macro_rules! transpose_lanes {
        ($x:expr, $zero:expr, $lo32:ident, $hi32:ident, $lo64:ident, $hi64:ident) => {{
            let mut y = [[$zero; 4]; 4];
            for g in 0..4 {
                let p = &$x[4 * g..4 * g + 4];
                let u0 = $lo32(p[0], p[1]);
                let u1 = $hi32(p[0], p[1]);
                let u2 = $lo32(p[2], p[3]);
                let u3 = $hi32(p[2], p[3]);
                y[g] = [$lo64(u0, u2), $hi64(u0, u2), $lo64(u1, u3), $hi64(u1, u3)];
            }
            y
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
        // As `clear_vector_registers_avx512`: `vzeroupper` would leave the
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

    /// `x` rotated left by `N` bits in each 32-bit lane: one `vprold`.
    macro_rules! rotl512 {
        ($x:expr, $n:literal) => {
            _mm512_rol_epi32::<$n>($x)
        };
    }

    /// `xor_units` with 16 blocks per register: one pass per unit.
    ///
    /// Where `dst` starts a multiple of 4 bytes past a 64-byte line (as
    /// Python's buffers do: 16 past one), every 64-byte store would straddle
    /// two lines; the blocks are then stored shifted (`store_unit_shifted`),
    /// each store one whole line of `dst`. With a copy the stores are twice
    /// as many, and straddling ones cost the AEAD's pass a sixth of its time
    /// on an Intel Xeon (docs/design/performance.md).
    ///
    /// # Safety
    /// As `xor_units`, with AVX-512F instead of AVX2.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn xor_units_avx512<const HIGH_UNIFORM: bool>(state: &State, double_rounds: usize, src: *const u8, dst: *mut u8, copy: *mut u8, units: usize) {
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
                    store_unit_avx512(input, &blocks, src.add(at), dst.add(at), copy_at);
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
        clear_vector_registers_avx512();
    }

    /// Zeroes every vector register: the kernel leaves keystream and
    /// plaintext in them, and `vzeroupper` at the return clears neither the
    /// low 128 bits of zmm0-15 nor any of zmm16-31. Left there, they reach
    /// memory the next time anything saves the register state (glibc's lazy
    /// binding saves it on the stack with `xsave`; so does a signal), where
    /// no scrub of cb3's looks (a plaintext copy on the stack, found by
    /// tests/test_secrets.py's memory scan).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn clear_vector_registers_avx512() {
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
    unsafe fn store_unit_avx512(input: &Input, blocks: &[__m512i; 16], src: *const u8, dst: *mut u8, copy: *mut u8) {
        // SAFETY: block `block`'s 64 bytes lie within the unit's 1024.
        let data: [__m512i; 16] = std::array::from_fn(|block| unsafe { input.xor(blocks[block], src.add(block * 64)) });
        for (block, &bytes) in data.iter().enumerate() {
            let at = block * 64;
            // SAFETY: as above.
            unsafe { store_both(bytes, dst.add(at), at_or_null(copy, at)) };
        }
    }

    /// `copy + at`, or null if `copy` is (the kernels' "no copy").
    #[inline]
    fn at_or_null(copy: *mut u8, at: usize) -> *mut u8 {
        if copy.is_null() { copy } else { copy.wrapping_add(at) }
    }

    /// How a unit loads its 64-byte pieces of input. Where the input lies
    /// a whole number of 32-bit words, but not of lines, past the lines the
    /// stores write (Python keeps a large bytes object's data 48 bytes past
    /// a line, behind its 32-byte header, a large bytearray's 16 past one),
    /// each such load would straddle two lines: on an Intel Xeon that cost
    /// ChaCha20 up to a tenth of its time (docs/design/performance.md). `lines` then loads the two whole
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
    /// As `store_unit_avx512`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store_unit_shifted(input: &Input, window: &Window, blocks: &[__m512i; 16], src: *const u8, dst: *mut u8, copy: *mut u8) {
        let shift = 4 * window.words;
        // All the windows' loads before their stores (`store_unit_avx512`).
        // SAFETY: the windows across blocks `block` and `block + 1` lie
        // within the unit.
        let data: [__m512i; 15] = std::array::from_fn(|block| unsafe { input.xor(window.bytes(blocks[block], blocks[block + 1]), src.add(block * 64 + shift)) });
        for (block, &bytes) in data.iter().enumerate() {
            let at = block * 64 + shift;
            // SAFETY: as above.
            unsafe { store_both(bytes, dst.add(at), at_or_null(copy, at)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chacha20::cipher::inout::InOutBuf;
    use chacha20::cipher::{KeyIvInit, StreamCipherCore};
    use chacha20::variants::Ietf;
    use chacha20::{ChaChaCore, Rounds, R12, R20, R8};

    use crate::chacha20_blocks::tests::random;

    /// The crate's bytes: `data` XOR its keystream from block `counter`.
    fn crate_xor<R: Rounds>(key: &[u8; 32], nonce: Nonce<'_>, counter: u64, data: &[u8]) -> Vec<u8> {
        let mut out = data.to_vec();
        let (blocks, _) = chacha20::cipher::array::Array::slice_as_chunks_mut(&mut out);
        match nonce {
            Nonce::Djb(nonce) => {
                assert_eq!(R::COUNT, 10, "the crate's DJB core is ChaCha20 only");
                let mut core = chacha20::ChaCha20LegacyCore::new(key.into(), nonce.into());
                core.set_block_pos(counter);
                core.apply_keystream_blocks(blocks);
            }
            Nonce::Ietf(nonce) => {
                let mut core = ChaChaCore::<R, Ietf>::new(key.into(), nonce.into());
                core.set_block_pos(counter as u32);
                core.apply_keystream_blocks_inout(InOutBuf::from(blocks));
            }
        }
        out
    }

    /// Every kernel this CPU can run: on an AVX-512 machine both, so that
    /// the AVX2 one is tested natively there too.
    fn kernels_here() -> Vec<Kernel> {
        let mut kernels = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                kernels.push(Kernel::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                kernels.push(Kernel::Avx512);
            }
        }
        kernels
    }

    /// Offsets of the input, the output and the copy from a 64-byte line.
    #[derive(Clone, Copy, Debug)]
    struct Offsets {
        data: usize,
        out: usize,
        copy: usize,
    }

    /// `len` bytes of `backing` (64 more than `len` + 64) from `offset` past a line.
    fn at_line_offset(backing: &mut [u8], offset: usize, len: usize) -> &mut [u8] {
        let start = (backing.as_ptr() as usize).wrapping_neg() % 64 + offset;
        &mut backing[start..start + len]
    }

    #[allow(clippy::too_many_arguments)]
    fn check<R: Rounds>(kernel: Kernel, key: &[u8; 32], nonce: Nonce<'_>, counter: u64, units: usize, offsets: Offsets, state: &mut u64) {
        // SAFETY (both): `kernel` comes from `kernels_here`, whose features are detected.
        let xor = |key: &[u8; 32], nonce, counter, rounds, input, out: &mut [u8]| unsafe { xor_with(kernel, key, nonce, counter, rounds, input, out, None) };
        let xor_copying = |key: &[u8; 32], nonce, counter, rounds, input, out: &mut [u8], copy| unsafe { xor_with(kernel, key, nonce, counter, rounds, input, out, copy) };
        let len = units * UNIT_BYTES;
        let what = format!("{kernel:?}: {} rounds, counter {counter:#x}, {units} units, {offsets:?}", 2 * R::COUNT);
        let mut data_backing = random(state, len + 192);
        let mut inplace_backing = vec![0u8; len + 192];
        let data = &*at_line_offset(&mut data_backing, offsets.data, len + 64); // 64 bytes more than the units
        let expected = crate_xor::<R>(key, nonce, counter, &data[..len]);
        let mut out_backing = vec![0xAAu8; len + 192];
        let out = at_line_offset(&mut out_backing, offsets.out, len + 64);
        assert_eq!(xor(key, nonce, counter, R::COUNT, Some(data), out), len);
        assert_eq!(&out[..len], &expected[..], "out of place: {what}");
        assert!(out_backing.iter().filter(|&&b| b != 0xAA).count() <= len, "outside the units: {what}");
        let inplace = at_line_offset(&mut inplace_backing, offsets.data, len + 64);
        inplace.copy_from_slice(data);
        assert_eq!(xor(key, nonce, counter, R::COUNT, None, inplace), len);
        assert_eq!(&inplace[..len], &expected[..], "in place: {what}");
        assert_eq!(&inplace[len..], &data[len..], "in place, past the units: {what}");
        let mut both_backing = vec![0x55u8; len + 192];
        let mut copy_backing = vec![0x33u8; len + 192];
        let both = at_line_offset(&mut both_backing, offsets.out, len + 64);
        let copy = at_line_offset(&mut copy_backing, offsets.copy, len + 64);
        assert_eq!(xor_copying(key, nonce, counter, R::COUNT, Some(data), both, Some(&mut copy[..])), len);
        assert_eq!((&both[..len], &copy[..len]), (&expected[..], &expected[..]), "with a copy: {what}");
        assert!(both_backing.iter().filter(|&&b| b != 0x55).count() <= len, "outside the units: {what}");
        assert!(copy_backing.iter().filter(|&&b| b != 0x33).count() <= len, "outside the units of the copy: {what}");
    }

    /// Bit for bit the crate's bytes: random keys and nonces; counters at 0
    /// and either side of 2^32 (the carry into the high word) and 2^64
    /// (where the DJB counter wraps); one to five units; every offset of the
    /// output from a 64-byte line (the AVX-512 kernel's shifted stores where
    /// it is a multiple of 4), with the input and the copy at the same and at
    /// other offsets; in place, out of place, and out of place with a copy.
    #[test]
    fn matches_the_crate() {
        let kernels = kernels_here();
        if kernels.is_empty() {
            eprintln!("this CPU has no AVX2: xor does nothing here (checked by whole_units_only)");
        }
        for kernel in kernels {
            matches_the_crate_on(kernel);
        }
    }

    fn matches_the_crate_on(kernel: Kernel) {
        let mut state = 0x2545_F491_4F6C_DD1D;
        let djb_counters = [0, 1, (1 << 32) - 16, (1 << 32) - 5, (1 << 32) - 1, 1 << 32, u64::MAX - 15, u64::MAX - 3, u64::MAX];
        for (round, out) in (0..64).chain(0..64).chain(0..64).enumerate() {
            // The first 64 rounds: all three at one offset; then apart, the
            // last 64 with the input a whole number of words (1-15) past the
            // output's offset (`Input`'s whole lines).
            let offsets = match round / 64 {
                0 => Offsets { data: out, out, copy: out },
                1 => Offsets { data: (out * 7 + 3) % 64, out, copy: (out * 13 + 4) % 64 },
                _ => Offsets { data: (out + 4 * (1 + round % 15)) % 64, out, copy: (out * 13 + 4) % 64 },
            };
            let key: [u8; 32] = random(&mut state, 32).try_into().unwrap();
            let djb: [u8; 8] = random(&mut state, 8).try_into().unwrap();
            let ietf: [u8; 12] = random(&mut state, 12).try_into().unwrap();
            let units = 1 + round % 5;
            let counter = djb_counters[round % djb_counters.len()];
            check::<R20>(kernel, &key, Nonce::Djb(&djb), counter, units, offsets, &mut state);
            // The 32-bit layout: counters that keep the call below 2^32.
            let ietf_counter = u64::from(u32::MAX) + 1 - (units * UNIT_BLOCKS) as u64 - (round as u64 % 7);
            for counter in [0, 7, ietf_counter] {
                check::<R20>(kernel, &key, Nonce::Ietf(&ietf), counter, units, offsets, &mut state);
                check::<R12>(kernel, &key, Nonce::Ietf(&ietf), counter, units, offsets, &mut state);
                check::<R8>(kernel, &key, Nonce::Ietf(&ietf), counter, units, offsets, &mut state);
            }
        }
    }

    /// Column 1's first round is done once per call wherever word 13 is
    /// the same in all the call's blocks: always in RFC 8439's layout (it
    /// is nonce), in the DJB one unless the low counter word wraps within
    /// the call. Column 0 (the low counter word) is never done ahead, nor
    /// column 1 where the high word differs between blocks.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn first_column_round_ahead_only_where_the_same_in_every_block() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let below = (1u64 << 32) - 16;
        for (nonce, counter, blocks, uniform) in [
            (Nonce::Ietf(&[9; 12]), u64::from(u32::MAX) - 15, 16, true),
            (Nonce::Djb(&[9; 8]), 0, 1 << 20, true),
            (Nonce::Djb(&[9; 8]), below, 16, true),
            (Nonce::Djb(&[9; 8]), below + 1, 16, false),
            (Nonce::Djb(&[9; 8]), below, 17, false),
            (Nonce::Djb(&[9; 8]), 1 << 32, 16, true),
        ] {
            let state = State::new(&key, nonce, counter, blocks);
            let what = format!("counter {counter:#x}, {blocks} blocks");
            assert_eq!(state.high_uniform, uniform, "{what}");
            let mut expected = state.words;
            for column in if uniform { 1..4 } else { 2..4 } {
                quarter_round(&mut expected, column, column + 4, column + 8, column + 12);
            }
            assert_eq!(state.first, expected, "{what}");
            for word in [0, 4, 8, 12] {
                assert_eq!(state.first[word], state.words[word], "column 0 left to the kernel: {what}");
            }
        }
    }

    /// Less than a unit is left to the caller; so is everything on a CPU
    /// where the kernel does not run.
    #[test]
    fn whole_units_only() {
        let key = [7u8; 32];
        let mut out = vec![0u8; 3 * UNIT_BYTES - 1];
        let done = xor(&key, Nonce::Djb(&[1; 8]), 0, 10, None, &mut out);
        assert_eq!(done, if available() { 2 * UNIT_BYTES } else { 0 });
        assert!(out[done..].iter().all(|&b| b == 0), "bytes past the units were written");
        assert_eq!(xor(&key, Nonce::Djb(&[1; 8]), 0, 10, None, &mut out[..UNIT_BYTES - 1]), 0);
    }

    /// RFC 8439 section 2.4.2's example: its plaintext encrypted from block
    /// counter 1, padded to a unit with zeros (whose ciphertext is then the
    /// keystream), against the RFC's ciphertext.
    #[test]
    fn rfc8439_encryption() {
        for kernel in kernels_here() {
            rfc8439_encryption_on(kernel);
        }
    }

    fn rfc8439_encryption_on(kernel: Kernel) {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let nonce = [0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0];
        let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
        let expected = hex::decode(
            "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b\
             f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8\
             07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736\
             5af90bbf74a35be6b40b8eedf2785e42874d",
        )
        .unwrap();
        let mut unit = vec![0u8; UNIT_BYTES];
        unit[..plaintext.len()].copy_from_slice(plaintext);
        // SAFETY: `kernel` comes from `kernels_here`, whose features are detected.
        let done = unsafe { xor_with(kernel, &key, Nonce::Ietf(&nonce), 1, 10, None, &mut unit, None) };
        assert_eq!(done, UNIT_BYTES, "{kernel:?}");
        assert_eq!(hex::encode(&unit[..plaintext.len()]), hex::encode(&expected), "{kernel:?}");
    }
}
