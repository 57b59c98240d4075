//! Version and build facts for `python -m cb3` and C users: `cb3_version`, `cb3_simd_backend`, `cb3_cache_tuning`,
//! and `cb3_panic_boundary_check`, which proves that the build can unwind to its panic boundary.

use std::ffi::{c_char, CStr};

use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or};
use cb3_core::cpu::simd_backend;

const VERSION: &CStr = {
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("version contains NUL"),
    }
};

/// The library version as "MAJOR.MINOR.PATCH", e.g. "0.1.0": the version
/// of the library linked in, which `CB3_VERSION_MAJOR`, `CB3_VERSION_MINOR`
/// and `CB3_VERSION_PATCH` give for the header compiled against. Static and
/// NUL-terminated: never NULL; do not free or modify it.
#[no_mangle]
pub extern "C" fn cb3_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The widest SIMD instruction set this CPU offers to the BLAKE3 and ChaCha
/// cores, detected at run time: "avx512", "avx2", "sse4.1", "sse2", "neon"
/// or "portable". For diagnostics only: every backend computes the same
/// bytes. Static and NUL-terminated: never NULL; do not free or modify it.
#[no_mangle]
pub extern "C" fn cb3_simd_backend() -> *const c_char {
    ffi_boundary_or(c"portable".as_ptr(), || simd_backend().as_ptr())
}

/// This CPU's cache sizes and the piece sizes the AEAD derived from them at
/// run time, and the pages of its piece buffers, as one line of text, e.g.
/// "L1d 32 KiB, L2 512 KiB, L3 32 MiB (sysfs); seal piece 512 KiB, open
/// piece 256 KiB, xor piece 64 KiB; piece buffer in 2 MiB huge pages"
/// (sizes from sysfs on Linux, else cpuid, else "default"; "?" for a size
/// not found; "ordinary pages" where the system has no transparent huge
/// pages for it). For diagnostics only: every piece size computes the same
/// bytes. Static and NUL-terminated: never NULL; do not free or modify it.
#[no_mangle]
pub extern "C" fn cb3_cache_tuning() -> *const c_char {
    ffi_boundary_or(c"unknown".as_ptr(), || cb3_core::pieces::describe().as_ptr())
}

/// Who made this CPU, as the engine's tuning sees it: "Intel", "AMD" (from
/// cpuid's vendor string on x86-64) or "other". For diagnostics and
/// benchmark records. Static and NUL-terminated: never NULL; do not free or
/// modify it.
#[no_mangle]
pub extern "C" fn cb3_cpu_maker() -> *const c_char {
    ffi_boundary_or(c"other".as_ptr(), || cb3_core::cpu::maker().name().as_ptr())
}

/// This CPU's model name: cpuid's brand string on x86-64, "implementer 0xII
/// part 0xPPP" (the `MIDR_EL1` register from sysfs) on aarch64, "unknown"
/// where neither can be read. For diagnostics and benchmark records. Static
/// and NUL-terminated: never NULL; do not free or modify it.
#[no_mangle]
pub extern "C" fn cb3_cpu_model() -> *const c_char {
    ffi_boundary_or(c"unknown".as_ptr(), || cb3_core::cpu::model().as_ptr())
}

/// The number of threads an object created with this `max_threads` works
/// on: `CB3_BLAKE3_AUTO` (0) is every usable core, any other value is capped
/// at the usable cores. The usable cores are the ones this process may run
/// on: its CPU affinity and its cgroup CPU quota, read once per process.
/// Callers that size buffers or batches per thread ask this function rather
/// than count cores themselves.
#[no_mangle]
pub extern "C" fn cb3_threads_count(max_threads: usize) -> usize {
    ffi_boundary_or(1, || cb3_core::parallel::thread_count(max_threads))
}

/// Unwinds a deliberate panic from inside the panic boundary that every
/// export runs in, and returns what the boundary made of it:
/// `CB3_RESULT_PANIC`. Prints nothing (the unwind starts without the panic
/// hook). The boundary needs an unwinder that can walk Rust's frames; a
/// program that links libcb3.a with one that cannot aborts here instead, as
/// it would on any panic. `python -m cb3` and the tests call it, so every
/// build, each wheel included, shows that its unwinder works.
#[no_mangle]
pub extern "C" fn cb3_panic_boundary_check() -> cb3_result {
    ffi_boundary(|| std::panic::resume_unwind(Box::new("cb3_panic_boundary_check")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_catches_the_deliberate_panic() {
        assert_eq!(cb3_panic_boundary_check(), cb3_result::Panic);
        assert_eq!(cb3_panic_boundary_check(), cb3_result::Panic); // the panic count went back to 0
    }

    #[test]
    fn thread_counts_are_capped_at_the_usable_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(cb3_threads_count(0), cores);
        assert_eq!(cb3_threads_count(1), 1);
        assert_eq!(cb3_threads_count(usize::MAX), cores);
        assert_eq!(cb3_threads_count(cores + 1), cores);
    }

    #[test]
    fn cpu_facts_are_text() {
        // SAFETY: both return static NUL-terminated strings.
        let maker = unsafe { CStr::from_ptr(cb3_cpu_maker()) }.to_str().unwrap();
        assert!(["Intel", "AMD", "other"].contains(&maker));
        let model = unsafe { CStr::from_ptr(cb3_cpu_model()) }.to_str().unwrap();
        assert!(!model.is_empty() && model.trim() == model);
    }
}
