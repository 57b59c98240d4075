//! SIMD facts of this CPU, for `cb3_simd_backend` (`ffi::info`) and the engines.

use std::ffi::CStr;


/// Whether the BLAKE3 and ChaCha cores run their AVX-512 code here.
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

pub fn simd_backend() -> &'static CStr {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512() {
            return c"avx512";
        }
        if is_x86_feature_detected!("avx2") {
            return c"avx2";
        }
        if is_x86_feature_detected!("sse4.1") {
            return c"sse4.1";
        }
        c"sse2"
    }
    #[cfg(target_arch = "aarch64")]
    {
        c"neon"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        c"portable"
    }
}
