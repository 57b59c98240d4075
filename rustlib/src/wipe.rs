//! Wiping key material that Rust's destructors do not reach: copies left in
//! the dead stack frames of calls that used a key.
//!
//! Keying BLAKE3 or ChaCha (the per-message KDF and MAC, the cipher's
//! keystream, a keyed hasher) leaves copies of the key in the frames of the
//! calls that did it: blake3's `Hasher` and `OutputReader` hold the key as
//! their chaining value and do not wipe themselves on drop, and blake3's and
//! chacha20's internals and moves leave more temporaries that no destructor
//! reaches. They stay until later calls happen to overwrite them (measured
//! with tests/test_secrets.py: 1 to 8 copies of a key after its object was
//! freed, before these scrubs). So each function that used a key zeroes the
//! stack below its own frame when it is done, and pool threads zero theirs
//! after work (`parallel::install`).

/// Bytes below the caller's frame that `scrub_stack` zeroes: the deepest
/// copy found on x86_64 was 2 KiB down; on aarch64 (larger frames) copies
/// were found 4-8 KiB down.
#[cfg(target_arch = "aarch64")]
const SCRUB_BYTES: usize = 16 * 1024;
#[cfg(not(target_arch = "aarch64"))]
const SCRUB_BYTES: usize = 4 * 1024;

/// For the AEAD's direct path on multi-chunk messages (`aead::mac_tree`'s
/// chaining values and the ChaCha backend's frames below the staging).
#[cfg(target_arch = "aarch64")]
const WIDE_SCRUB_BYTES: usize = 32 * 1024;
#[cfg(not(target_arch = "aarch64"))]
const WIDE_SCRUB_BYTES: usize = 12 * 1024;

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
/// Cost: about 60 ns.
#[inline(never)]
pub fn scrub_stack() {
    zero_below::<SCRUB_BYTES>();
}

/// `scrub_stack` for the direct path's multi-chunk messages (12 KiB, about
/// 80 ns).
#[inline(never)]
pub fn scrub_stack_wide() {
    zero_below::<WIDE_SCRUB_BYTES>();
}

/// `scrub_stack` for deeper call trees (64 KiB, about 1-2 us).
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
