//! Times the `chacha20-blake3` crate directly, so that `python -m cb3 bench`
//! can report cb3 / raw-Rust ratios measured in the same process, interleaved
//! with the Python-level measurements.

use std::hint::black_box;
use std::time::Instant;

use chacha20_blake3::ChaCha20Blake3;

use crate::buffers::store;
use crate::errors::{cb3_result, ffi_boundary};

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
}

/// Runs `iterations` calls of the crate operation `mode` on a
/// `message_len`-byte message (no associated data) and stores the elapsed
/// wall time in nanoseconds in `*elapsed_ns_out`. Allocates its buffers
/// before timing. `elapsed_ns_out` must not be NULL; `iterations` must be
/// at least 1 (`CB3_RESULT_INVALID_ARGUMENT`).
#[no_mangle]
pub unsafe extern "C" fn cb3_bench_reference(
    mode: cb3_bench_mode,
    message_len: usize,
    iterations: u64,
    elapsed_ns_out: *mut u64,
) -> cb3_result {
    ffi_boundary(|| {
        if elapsed_ns_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        if iterations == 0 {
            return Err(cb3_result::InvalidArgument);
        }
        let cipher = ChaCha20Blake3::new([0x42; 32]);
        let nonce = [0x24; 24];
        let mut buffer = vec![0x5a_u8; message_len];
        let sealed = cipher.encrypt(&nonce, &buffer, b"");
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
            }
        }
        store(elapsed_ns_out, start.elapsed().as_nanos() as u64);
        Ok(())
    })
}
