//! Times the `chacha20-blake3` crate directly, so that `python -m cb3 bench`
//! can report cb3 / raw-Rust ratios measured in the same process, interleaved
//! with the Python-level measurements.

use std::ffi::c_uint;
use std::hint::black_box;
use std::time::Instant;

use chacha20_blake3::ChaCha20Blake3;

use crate::ffi::buffers::store;
use crate::ffi::errors::{cb3_result, ffi_boundary};

/// Which crate call `cb3_bench_reference` times.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_bench_mode {
    /// `ChaCha20Blake3::encrypt`: allocates and returns `ciphertext || tag`,
    /// like cb3's `encrypt`.
    Encrypt = 0,
    /// `ChaCha20Blake3::encrypt_in_place_detached` on a preallocated buffer,
    /// like cb3's `encrypt_in_place`.
    EncryptInPlace = 1,
    /// `ChaCha20Blake3::decrypt`: verifies and returns a new plaintext.
    Decrypt = 2,
    /// cb3's own engine (`aead::seal`, the Rust core under
    /// `cb3_aead_encrypt`) into a preallocated buffer: cb3's time without
    /// the Python call, beside the crate's.
    Seal = 3,
    /// The two primitives `Seal` fuses, back to back and without Python:
    /// cb3's ChaCha20 (the engine of `ChaCha20.update_into`, 8-byte nonce)
    /// into a preallocated buffer, then keyed BLAKE3 of that buffer.
    Parts = 4,
    /// `Seal`'s XOR alone: its pieces, without the MAC and without the
    /// private copy.
    SealXor = 5,
    /// `SealXor` with the private copy `Seal` makes of each piece (the
    /// second store stream): against `SealXor`, what that copy costs.
    SealXorCopying = 6,
}

impl cb3_bench_mode {
    /// The mode with this numeric value. C may pass any integer where an
    /// enum is expected, and a Rust enum holding an undeclared value is
    /// undefined behaviour, so the mode arrives as an integer.
    fn from_code(code: c_uint) -> Option<Self> {
        [Self::Encrypt, Self::EncryptInPlace, Self::Decrypt, Self::Seal, Self::Parts, Self::SealXor, Self::SealXorCopying]
            .into_iter()
            .find(|mode| *mode as c_uint == code)
    }
}

/// The longest message `cb3_bench_reference` times (1 GiB): its buffers are
/// allocated with Rust's infallible allocator, which aborts the process
/// when an allocation fails.
const MAX_MESSAGE_LEN: usize = 1 << 30;

/// Runs `iterations` calls of the crate operation `mode` (a
/// `cb3_bench_mode` value) on a `message_len`-byte message (no associated
/// data) and stores the elapsed wall time in nanoseconds in
/// `*elapsed_ns_out`. Allocates its buffers before timing.
/// `elapsed_ns_out` must not be NULL. `CB3_RESULT_INVALID_ARGUMENT` if
/// `mode` is not a `cb3_bench_mode`, `message_len` is above 2^30 (1 GiB)
/// or `iterations` is 0.
#[no_mangle]
pub unsafe extern "C" fn cb3_bench_reference(
    mode: c_uint,
    message_len: usize,
    iterations: u64,
    elapsed_ns_out: *mut u64,
) -> cb3_result {
    ffi_boundary(|| {
        if elapsed_ns_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let mode = cb3_bench_mode::from_code(mode).ok_or(cb3_result::InvalidArgument)?;
        if iterations == 0 || message_len > MAX_MESSAGE_LEN {
            return Err(cb3_result::InvalidArgument);
        }
        let cipher = ChaCha20Blake3::new([0x42; 32]);
        let nonce = [0x24; 24];
        let mut buffer = vec![0x5a_u8; message_len];
        let sealed = if mode == cb3_bench_mode::Decrypt { cipher.encrypt(&nonce, &buffer, b"") } else { Vec::new() };
        // Written before timing: the first timed call does not fault its pages in.
        let (key, mut out) = ([0x42; 32], vec![0xa5_u8; message_len]);
        let mut chacha = crate::chacha20::Keystream::<chacha20::R20>::new(&key, &nonce[..8], 0)?;
        let start = Instant::now();
        for _ in 0..iterations {
            match mode {
                cb3_bench_mode::Encrypt => drop(black_box(cipher.encrypt(&nonce, black_box(&buffer), b""))),
                cb3_bench_mode::EncryptInPlace => {
                    black_box(cipher.encrypt_in_place_detached(&nonce, black_box(&mut buffer), b""));
                }
                cb3_bench_mode::Decrypt => {
                    let plaintext = cipher.decrypt(&nonce, black_box(&sealed), b"").map_err(|_| cb3_result::DecryptionFailed)?;
                    drop(black_box(plaintext));
                }
                cb3_bench_mode::Seal => {
                    let source = crate::ffi::buffers::Source::Separate(black_box(&buffer));
                    black_box(crate::aead::seal(&key, &nonce, b"", source, black_box(&mut out), None))?;
                }
                cb3_bench_mode::Parts => {
                    chacha.apply(crate::ffi::buffers::Source::Separate(black_box(&buffer)), black_box(&mut out))?;
                    black_box(blake3::keyed_hash(&key, black_box(&out)));
                }
                cb3_bench_mode::SealXor | cb3_bench_mode::SealXorCopying => {
                    let copying = mode == cb3_bench_mode::SealXorCopying;
                    crate::aead::seal_xor_pass(&key, &nonce, black_box(&buffer), black_box(&mut out), copying)?;
                }
            }
        }
        // SAFETY: checked not NULL above; the C caller's contract makes it valid for a write.
        unsafe { store(elapsed_ns_out, start.elapsed().as_nanos() as u64) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_arguments_are_refused_not_fatal() {
        let mut elapsed = 7u64;
        for (mode, len, iterations) in
            [(7, 64, 1), (c_uint::MAX, 64, 1), (0, MAX_MESSAGE_LEN + 1, 1), (0, usize::MAX, 1), (0, 64, 0)]
        {
            // SAFETY: `elapsed` is a live u64.
            let result = unsafe { cb3_bench_reference(mode, len, iterations, &mut elapsed) };
            assert_eq!(result, cb3_result::InvalidArgument, "{mode} {len} {iterations}");
            assert_eq!(elapsed, 7);
        }
        for mode in [cb3_bench_mode::Decrypt, cb3_bench_mode::Parts, cb3_bench_mode::SealXor, cb3_bench_mode::SealXorCopying] {
            // SAFETY: as above.
            let result = unsafe { cb3_bench_reference(mode as c_uint, 3000, 2, &mut elapsed) };
            assert_eq!(result, cb3_result::Ok, "{mode:?}");
        }
    }
}
