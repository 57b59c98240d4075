//! ChaCha for long runs on CPUs with AVX2 or AVX-512: which kernel runs
//! here, and the one call into it. The kernels (`avx2`: one state word of 8
//! blocks per 256-bit register, the layout of OpenSSL's `ChaCha20_8x`;
//! `avx512`: of 16 blocks per 512-bit register, `ChaCha20_16x`) XOR straight
//! from the registers into the output, over the rounds and the state they
//! share (`rounds`). The bytes are those of the `chacha20` crate's cores
//! (checked against them in `tests`, each kernel this CPU runs, and against
//! RFC 8439, at every round count and both layouts).
//!
//! Why not the crate's backends: its AVX2 one keeps two blocks per register
//! as rows, four blocks per call, so every round also shuffles three rows of
//! each register back and forth (a quarter more vector operations than the
//! rounds themselves), and it writes the keystream to a buffer that a second
//! pass XORs into the data; its AVX-512 one is built the same way, with four
//! blocks per register. The crate's backends stay on CPUs without AVX2 and
//! on other targets.

#[cfg(target_arch = "x86_64")]
#[macro_use]
mod rounds;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "x86_64")]
use rounds::State;

/// Blocks per unit: `xor` handles whole units only.
pub const UNIT_BLOCKS: usize = 16;
/// Bytes per unit.
pub const UNIT_BYTES: usize = UNIT_BLOCKS * 64;

/// Bytes of stack below the frame that calls a kernel that `xor_with`
/// zeroes after it (a memset of them, once per call). A kernel's frame holds
/// whatever the compiler spills from the registers, among it a unit's
/// keystream blocks (the AVX-512 kernel's 16 outnumber the registers),
/// which would otherwise stay there below the depth its callers scrub. What
/// each kernel writes (measured by `tests::kernels_write_within_the_scrub`,
/// which fails if a compiler goes deeper) and about a quarter more.
#[cfg(target_arch = "x86_64")]
const KERNEL_SCRUB_BYTES: usize = 4608;

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

/// The kernel this CPU runs: AVX-512 where cb3 uses it (`cpu::avx512`),
/// else AVX2; None without AVX2 (the callers then keep the crate).
pub fn kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::avx512() {
            return Some(Kernel::Avx512);
        }
        if crate::cpu::avx2() {
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

/// `xor_copying` on the given kernel, whose frame is zeroed after it
/// (`KERNEL_SCRUB_BYTES`).
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
        unsafe { run(kernel, &state, double_rounds, src, out.as_mut_ptr(), copy, units) };
        state.wipe();
        crate::wipe::scrub_stack_bytes::<KERNEL_SCRUB_BYTES>();
        units * UNIT_BYTES
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kernel, key, nonce, counter, double_rounds, input, copy);
        0
    }
}

/// `dst = src XOR keystream` for `units` units on `kernel`, and `copy` the
/// same unless it is null: the one choice of kernel code.
///
/// # Safety
/// `src` (which may equal `dst`, but must not otherwise overlap it), `dst`
/// and `copy` (null, or overlapping neither) hold `units * UNIT_BYTES`
/// bytes; the CPU has the kernel's features.
#[cfg(target_arch = "x86_64")]
unsafe fn run(kernel: Kernel, state: &State, double_rounds: usize, src: *const u8, dst: *mut u8, copy: *mut u8, units: usize) {
    // SAFETY (every arm): this function's contract is the kernels'.
    unsafe {
        match (kernel, state.high_uniform) {
            (Kernel::Avx2, true) => avx2::xor_units::<true>(state, double_rounds, src, dst, copy, units),
            (Kernel::Avx2, false) => avx2::xor_units::<false>(state, double_rounds, src, dst, copy, units),
            (Kernel::Avx512, true) => avx512::xor_units::<true>(state, double_rounds, src, dst, copy, units),
            (Kernel::Avx512, false) => avx512::xor_units::<false>(state, double_rounds, src, dst, copy, units),
        }
    }
}
