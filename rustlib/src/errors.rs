//! The one result enum of the C ABI, its messages, and the panic boundary
//! that every exported function runs inside.

use std::panic::{catch_unwind, UnwindSafe};

/// What every fallible cb3 function returns.
///
/// `CB3_RESULT_OK` is 0; the failures start at 3000 so that they can never be
/// mistaken for an errno value. When a function returns anything but
/// `CB3_RESULT_OK` it has written nothing to its outputs.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_result {
    /// Success.
    Ok = 0,
    /// A required pointer was NULL (a NULL pointer is accepted only when its
    /// length is 0).
    NullParameter = 3000,
    /// The key is not `CB3_KEY_SIZE` (32) bytes.
    InvalidKeyLength = 3001,
    /// The nonce is not `CB3_NONCE_SIZE` (24) bytes (or, for the raw ChaCha
    /// functions, not 8, 12 or 24 bytes).
    InvalidNonceLength = 3002,
    /// The tag is not `CB3_TAG_SIZE` (32) bytes.
    InvalidTagLength = 3003,
    /// An output buffer is too small for the result; nothing was written.
    InsufficientSize = 3004,
    /// An output buffer overlaps an input (other than the one in-place alias
    /// a function documents as allowed).
    OverlappingBuffers = 3005,
    /// The tag does not match: wrong key, nonce, associated data, tag, or
    /// a modified ciphertext. Nothing was written.
    DecryptionFailed = 3006,
    /// A stream has used its last message index; it will fail from now on
    /// rather than ever reuse a nonce.
    StreamExhausted = 3007,
    /// An argument is out of its documented range.
    InvalidArgument = 3008,
    /// A bug: Rust code panicked. The panic was caught at the boundary and
    /// nothing was written.
    Panic = 3009,
    /// A raw ChaCha keystream would pass the end of its block counter (2^32
    /// blocks with a 12- or 24-byte nonce, 2^64 with an 8-byte nonce). The
    /// counter never wraps: nothing was processed and the position is unchanged.
    CounterOverflow = 3010,
    /// The operating system reported an I/O error (opening or reading a
    /// file). The function's `os_error` output holds the `errno` value, or 0
    /// when the error had none.
    IoError = 3011,
}

impl cb3_result {
    /// Human-readable text for the code (static, NUL-terminated).
    pub fn message(self) -> &'static std::ffi::CStr {
        match self {
            Self::Ok => c"ok",
            Self::NullParameter => c"a required pointer argument was NULL",
            Self::InvalidKeyLength => c"key must be 32 bytes",
            Self::InvalidNonceLength => c"nonce has the wrong length",
            Self::InvalidTagLength => c"tag must be 32 bytes",
            Self::InsufficientSize => c"output buffer is too small",
            Self::OverlappingBuffers => c"output buffer overlaps an input buffer",
            Self::DecryptionFailed => c"decryption failed: the tag does not match",
            Self::StreamExhausted => {
                c"stream message counter exhausted (2^64 - 1 messages); start a new Stream with a new nonce"
            }
            Self::InvalidArgument => c"invalid argument",
            Self::Panic => c"internal error: a Rust panic was caught at the C boundary",
            Self::CounterOverflow => {
                c"the ChaCha keystream is exhausted: the block counter would overflow (it never wraps)"
            }
            Self::IoError => c"an operating-system I/O error occurred",
        }
    }
}

/// A static, NUL-terminated description of `result`. Never NULL.
#[no_mangle]
pub extern "C" fn cb3_result_message(result: cb3_result) -> *const std::ffi::c_char {
    result.message().as_ptr()
}

pub type Cb3Result<T> = Result<T, cb3_result>;

/// Runs `f`, turning a panic into `CB3_RESULT_PANIC` so that no unwind ever
/// crosses the C boundary.
pub fn ffi_boundary<F>(f: F) -> cb3_result
where
    F: FnOnce() -> Cb3Result<()> + UnwindSafe,
{
    match catch_unwind(f) {
        Ok(Ok(())) => cb3_result::Ok,
        Ok(Err(code)) => code,
        Err(_) => cb3_result::Panic,
    }
}

/// Like [`ffi_boundary`] for functions that cannot fail except by a bug:
/// a panic yields `default`.
pub fn ffi_boundary_or<T, F>(default: T, f: F) -> T
where
    F: FnOnce() -> T + UnwindSafe,
{
    catch_unwind(f).unwrap_or(default)
}
