//! Wiping key material that Rust's destructors do not reach: copies left in
//! the dead stack frames of calls that used a key.
//!
//! Keying BLAKE3 or ChaCha (the per-message KDF and MAC, the cipher's
//! keystream, a keyed hasher) leaves copies of the key in the frames of the
//! calls that did it: blake3's `Hasher` and `OutputReader` hold the key as
//! their chaining value and do not wipe themselves on drop, and blake3's and
//! chacha20's internals and moves leave more temporaries that no destructor
//! reaches. They stay until later calls happen to overwrite them (the
//! memory scans of tests/properties/test_secrets.py find them when a scrub is
//! missing). So each function that used a key zeroes the
//! stack below its own frame when it is done, and pool threads zero theirs
//! after work (`parallel::Workers` helpers after their tasks, hashers' pools
//! by `parallel::scrub_workers`).

/// Bytes below the caller's frame that `scrub_stack` zeroes (also the AEAD's
/// direct path on one-chunk messages): twice the deepest copy the memory
/// scans find on x86_64; aarch64's larger frames reach four times deeper.
#[cfg(target_arch = "aarch64")]
pub const SCRUB_BYTES: usize = 16 * 1024;
#[cfg(not(target_arch = "aarch64"))]
pub const SCRUB_BYTES: usize = 4 * 1024;

/// For the AEAD's direct path (`aead::direct::scrub_direct`), by class of message
/// (`aead::direct::scrub_class`: short, i.e. at most four ChaCha blocks staged in
/// 512 bytes; one chunk of MAC input; more), with AVX-512 and without.
/// Each depth is about a quarter more than the bytes of stack that
/// aead/direct.rs's `the_scrub_reaches_every_frame_of_the_direct_path` measures the class
/// writing (it fails if a backend or compiler goes deeper). Longer messages
/// reach the 16-block ChaCha kernels, after which `chacha20::wide` zeroes
/// the kernel's frame below its own: those zeros count as written too.
/// aarch64 (larger frames) keeps `SCRUB_BYTES` and `WIDE_SCRUB_BYTES`.
#[cfg(target_arch = "aarch64")]
pub const DIRECT_SCRUB_BYTES: [[usize; 3]; 2] = [[SCRUB_BYTES, SCRUB_BYTES, WIDE_SCRUB_BYTES]; 2];
#[cfg(not(target_arch = "aarch64"))]
pub const DIRECT_SCRUB_BYTES: [[usize; 3]; 2] = [[2304, 4 * 1024, 8 * 1024], [2304, 5 * 1024, 8 * 1024]];

/// For the direct one-shot hashes of multi-chunk inputs (`direct::Tree`'s
/// chaining values and blake3's frames).
#[cfg(target_arch = "aarch64")]
pub const WIDE_SCRUB_BYTES: usize = 32 * 1024;
#[cfg(not(target_arch = "aarch64"))]
pub const WIDE_SCRUB_BYTES: usize = 12 * 1024;

/// For pool threads and calls over large inputs, whose frames go deeper
/// (BLAKE3's subtree recursion, rayon's joins).
const DEEP_SCRUB_BYTES: usize = 64 * 1024;

#[inline(always)]
fn zero_below<const N: usize>() {
    wipe(&mut [0u8; N]);
}

/// Zeroes the stack below the caller's frame: the dead frames of the calls
/// it just made with a key. Not inlined, so its own frame lies below the
/// caller's; `black_box` keeps the stores from being removed as dead.
#[inline(never)]
pub fn scrub_stack() {
    zero_below::<SCRUB_BYTES>();
}

/// `scrub_stack` of `N` bytes (the AEAD's direct path,
/// `DIRECT_SCRUB_BYTES`). One function per depth, each frame only its
/// array: arms of one function could place their arrays apart, not each
/// right below the caller's frame.
#[inline(never)]
pub fn scrub_stack_bytes<const N: usize>() {
    zero_below::<N>();
}

/// `scrub_stack` for the direct hashes of multi-chunk inputs (12 KiB).
#[inline(never)]
pub fn scrub_stack_wide() {
    zero_below::<WIDE_SCRUB_BYTES>();
}

/// `scrub_stack` for deeper call trees (64 KiB): pool threads and large inputs.
#[inline(never)]
pub fn scrub_stack_deep() {
    zero_below::<DEEP_SCRUB_BYTES>();
}

/// Zeroes `bytes` in a way the compiler keeps (one `memset`, not the
/// byte-by-byte volatile stores of `Zeroize`).
pub fn wipe_bytes(bytes: &mut [u8]) {
    // SAFETY: a valid, exclusive slice.
    unsafe { std::ptr::write_bytes(bytes.as_mut_ptr(), 0, bytes.len()) };
    std::hint::black_box(bytes);
}

/// `wipe_bytes` for any plain-data value (arrays of integers).
pub fn wipe<T: Copy>(value: &mut T) {
    // SAFETY: T is Copy (no drop glue, no references we rely on); all zero
    // bytes are valid for the integer arrays this is used on.
    unsafe { std::ptr::write_bytes(value as *mut T as *mut u8, 0, std::mem::size_of::<T>()) };
    std::hint::black_box(value);
}

/// Measuring how deep a call writes the stack (for the scrub depths' tests).
#[cfg(all(any(test, feature = "probe"), any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod probe {
    /// Bytes of stack the probe paints and reads back.
    const PROBE: usize = 64 * 1024;
    const PAINT: u8 = 0xA5;

    /// One byte of stack memory, read with an instruction of this CPU: the
    /// dead frames of earlier calls are not Rust values, so no Rust load may
    /// read them.
    unsafe fn load(at: *const u8) -> u8 {
        let value: u32;
        // SAFETY: the caller's contract: `at` lies in this thread's mapped stack.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            std::arch::asm!("movzx {v:e}, byte ptr [{p}]", v = out(reg) value, p = in(reg) at, options(nostack, readonly, preserves_flags))
        };
        #[cfg(target_arch = "aarch64")]
        unsafe {
            std::arch::asm!("ldrb {v:w}, [{p}]", v = out(reg) value, p = in(reg) at, options(nostack, readonly, preserves_flags))
        };
        value as u8
    }

    /// The `PROBE` bytes below the caller's frame: painted (`paint`) or read
    /// back (the same frame layout both times: one function).
    #[inline(never)]
    fn region(paint: bool) -> Vec<u8> {
        let mut bytes = std::mem::MaybeUninit::<[u8; PROBE]>::uninit();
        let base = std::hint::black_box(bytes.as_mut_ptr() as *mut u8);
        if std::hint::black_box(paint) {
            // SAFETY: `bytes` is PROBE writable bytes.
            unsafe { std::ptr::write_bytes(base, PAINT, PROBE) };
            std::hint::black_box(base);
            return Vec::new();
        }
        // SAFETY: `bytes` lies in this thread's stack, PROBE bytes long.
        (0..PROBE).map(|i| unsafe { load(base.add(i)) }).collect()
    }

    /// Runs `work` from the caller's frame and returns the stack below that
    /// frame as `work` left it, deepest byte first, and how many bytes below
    /// the frame it wrote (the deepest byte that is not the paint). The few
    /// bytes that reading the region changes itself (the stack probes of its
    /// big frame store a zero word per page) are left out.
    #[inline(never)]
    pub fn after(work: impl FnOnce()) -> (Vec<u8>, usize) {
        region(true);
        let unchanged = region(false);
        region(true);
        work();
        let stack = region(false);
        let deepest = stack.iter().zip(&unchanged).position(|(&b, &calm)| calm == PAINT && b != PAINT).unwrap_or(PROBE);
        (stack, PROBE - deepest)
    }

    /// How many bytes below the frame of the last copy of any 8-byte window
    /// of `secret` in `stack` (0: none).
    pub fn deepest_copy(stack: &[u8], secret: &[u8]) -> usize {
        let windows: std::collections::HashSet<&[u8]> = secret.windows(8).collect();
        stack.windows(8).position(|w| windows.contains(&w)).map_or(0, |at| stack.len() - at)
    }
}
