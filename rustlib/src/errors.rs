//! The one result enum of the C ABI, its messages, the mapping of the
//! engine's errors to it, and the panic boundary that every exported
//! function runs inside.

use std::panic::{catch_unwind, UnwindSafe};

/// What every fallible cb3 function returns.
///
/// `CB3_RESULT_OK` is 0; the failures start at 3000 so that they can never be
/// mistaken for an errno value. When a function returns a failure other than
/// `CB3_RESULT_PANIC` it has written nothing to its outputs. If several
/// failures apply to one call, which of them is returned is unspecified.
/// `cb3_result_message` describes any code.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_result {
    /// Success.
    Ok = 0,
    /// A pointer that may not be NULL was NULL. Data buffers may be NULL
    /// only when their length is 0; objects, keys, nonces, tags, tag outputs
    /// and `*_new` result pointers never.
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
    /// The tag does not match: wrong key, nonce, associated data or tag, a
    /// modified ciphertext, or a ciphertext shorter than `CB3_TAG_SIZE`.
    /// Nothing was written: no unverified plaintext is ever released.
    DecryptionFailed = 3006,
    /// A stream has used its last message index; it will fail from now on
    /// rather than ever reuse a nonce.
    StreamExhausted = 3007,
    /// An argument is out of its documented range and no more specific code
    /// applies: a buffer length above `PTRDIFF_MAX`, `cb3_stream_new`'s
    /// `message_index` at `UINT64_MAX`, a `cb3_chunked` batch or index the
    /// file format refuses; or an object pointer that is not a live object of the function's type
    /// (already freed, or of another type: every call checks a tag in the
    /// object, which `cb3_*_free` erases; see the free functions).
    InvalidArgument = 3008,
    /// A bug in cb3: Rust code panicked. The panic was caught at the boundary
    /// (it never unwinds into C) and the object stays usable, but output
    /// buffers may hold partial results: treat them as garbage. Decryption
    /// still never writes unverified plaintext.
    Panic = 3009,
    /// A raw ChaCha keystream would pass the end of its block counter (2^32
    /// blocks with a 12- or 24-byte nonce, 2^64 with an 8-byte nonce). The
    /// counter never wraps: nothing was processed and the position is unchanged.
    CounterOverflow = 3010,
    /// The operating system reported an I/O error (opening or reading a
    /// file). The function's `os_error` output holds the `errno` value, or 0
    /// when the error had none.
    IoError = 3011,
    /// Memory for a private working copy could not be allocated (a
    /// decryption into a caller's buffer stages the ciphertext in a private
    /// copy as long as the message; Argon2id allocates its `memory_cost`).
    /// Nothing was written.
    OutOfMemory = 3012,
    /// The object was created in another process: this process is a `fork()`
    /// child of the one that created it. A stream (`cb3_stream`) or raw ChaCha
    /// object (`cb3_chacha`) never works in a child, since parent and child
    /// would continue from the same message index or keystream position and
    /// reuse nonces (a two-time pad): create a new one, with a fresh nonce, in
    /// the child. A hasher (`cb3_blake3`) moves to the child on its first use
    /// there, unless another thread was using it at the fork (then its state
    /// is torn and its lock never released, and it fails this way).
    Forked = 3013,
    /// An interrupt callback asked a long operation to stop (see
    /// `cb3_blake3_update_file`, `cb3_argon2id`). Its work so far is kept, as for
    /// `CB3_RESULT_IO_ERROR`.
    Interrupted = 3014,
    /// `cb3_chacha_new`'s `rounds` is not 20, 12 or 8.
    InvalidRounds = 3015,
    /// `cb3_chacha_new`'s starting block `counter` is at or past the end of
    /// the keystream (2^32 blocks with a 12- or 24-byte nonce, 2^64 with an
    /// 8-byte one).
    InvalidCounter = 3016,
    /// `cb3_chacha_seek`'s position is past the end of the keystream (2^38
    /// bytes with a 12- or 24-byte nonce, 2^70 with an 8-byte one). The
    /// position is unchanged.
    InvalidPosition = 3017,
    /// Text that must be UTF-8 is not: a BLAKE3 key-derivation context, or a
    /// file path given to `cb3_blake3_update_file`.
    InvalidUtf8 = 3018,
    /// Not a cb3 stream header (`cb3_chunked_header_decode`,
    /// `cb3_chunked_new`): wrong length, magic or version, or a chunk size
    /// out of range; or not a passphrase header this library reads
    /// (`cb3_passphrase_*`: the fault detail names the field).
    InvalidHeader = 3019,
    /// A passphrase header asks for more than the reader's limits
    /// (`cb3_passphrase_open`'s `limits`): refused before anything was
    /// allocated. The fault detail names the parameter, its value and the
    /// limit; raise the limit to read it.
    LimitExceeded = 3020,
}

/// The last code: the codes are 0 and `3000..=LAST`, with no gaps (the test
/// `codes_are_contiguous` checks it).
const LAST: cb3_result = cb3_result::LimitExceeded;

impl cb3_result {
    /// The code with this numeric value, if there is one. C can pass any
    /// integer where a `cb3_result` is expected, and a Rust enum holding an
    /// undeclared value is undefined behaviour, so values from C arrive as
    /// integers and are converted here.
    pub fn from_code(code: u32) -> Option<Self> {
        if code != 0 && !(cb3_result::NullParameter as u32..=LAST as u32).contains(&code) {
            return None;
        }
        // SAFETY: cb3_result is repr(C) with a u32-sized discriminant (its
        // values fit in u32 and none is negative), and `code` is one of its
        // declared values: 0, or within the gap-free range 3000..=LAST.
        Some(unsafe { std::mem::transmute::<u32, cb3_result>(code) })
    }

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
            Self::OutOfMemory => c"out of memory for a private working copy",
            Self::Forked => {
                c"the object was created in another process (before fork()): create a new one, with a fresh nonce, in this process"
            }
            Self::Interrupted => c"the operation was interrupted by its callback",
            Self::InvalidRounds => c"rounds must be 20, 12 or 8",
            Self::InvalidCounter => c"the starting block counter is past the end of the keystream",
            Self::InvalidPosition => c"the position is past the end of the keystream",
            Self::InvalidUtf8 => c"text must be UTF-8",
            Self::InvalidHeader => c"not a cb3 stream header (magic, version or chunk size)",
            Self::LimitExceeded => c"a passphrase header asks for more than the reader's limits (raise the limit to read it)",
        }
    }
}

/// A static, NUL-terminated English description of `result`, a
/// `cb3_result` value. Any other integer gives "unknown cb3_result code".
/// Never NULL; the caller must not free or modify it.
#[no_mangle]
pub extern "C" fn cb3_result_message(result: std::ffi::c_uint) -> *const std::ffi::c_char {
    match cb3_result::from_code(result) {
        Some(result) => result.message().as_ptr(),
        None => c"unknown cb3_result code".as_ptr(),
    }
}

pub type Cb3Result<T> = Result<T, cb3_result>;

/// The one mapping of the engine's errors to result codes.
impl From<cb3_core::Error> for cb3_result {
    fn from(error: cb3_core::Error) -> Self {
        use cb3_core::Error;
        match error {
            Error::InvalidKeyLength => cb3_result::InvalidKeyLength,
            Error::InvalidNonceLength => cb3_result::InvalidNonceLength,
            Error::InvalidTagLength => cb3_result::InvalidTagLength,
            Error::InsufficientSize => cb3_result::InsufficientSize,
            Error::DecryptionFailed => cb3_result::DecryptionFailed,
            Error::StreamExhausted => cb3_result::StreamExhausted,
            Error::InvalidArgument => cb3_result::InvalidArgument,
            Error::Panic => cb3_result::Panic,
            Error::CounterOverflow => cb3_result::CounterOverflow,
            Error::Io => cb3_result::IoError,
            Error::OutOfMemory => cb3_result::OutOfMemory,
            Error::Interrupted => cb3_result::Interrupted,
            Error::InvalidRounds => cb3_result::InvalidRounds,
            Error::InvalidCounter => cb3_result::InvalidCounter,
            Error::InvalidPosition => cb3_result::InvalidPosition,
            Error::InvalidUtf8 => cb3_result::InvalidUtf8,
            Error::InvalidHeader => cb3_result::InvalidHeader,
            Error::LimitExceeded => cb3_result::LimitExceeded,
        }
    }
}

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

/// [`ffi_boundary`] for functions that copy a key (the constructors): `f`
/// runs in a frame of its own below the export's (`in_own_frame`), and the
/// stack below the export's frame is zeroed once the boundary has returned,
/// so every frame that held a copy of the key is wiped, to the wide depth: a
/// keyed BLAKE3 hasher (about 2 KB) is moved by value through several
/// frames on its way into its handle. (A scrub from inside
/// `f` misses `f`'s own frame, and the boundary alone may inline `f` into
/// the export's frame.)
#[inline(always)]
pub fn ffi_boundary_with_key<F>(f: F) -> cb3_result
where
    F: FnOnce() -> Cb3Result<()> + UnwindSafe,
{
    let result = ffi_boundary(|| in_own_frame(f));
    cb3_core::wipe::scrub_stack_wide();
    result
}

/// Calls `f` in a frame of its own.
#[inline(never)]
fn in_own_frame<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Like [`ffi_boundary`] for functions that cannot fail except by a bug:
/// a panic yields `default`.
pub fn ffi_boundary_or<T, F>(default: T, f: F) -> T
where
    F: FnOnce() -> T + UnwindSafe,
{
    catch_unwind(f).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code, by an exhaustive match: a new variant fails to compile
    /// here until it is listed, and the test then checks `from_code`'s range.
    #[test]
    fn codes_are_contiguous() {
        let mut count = 0;
        for code in (0..=0).chain(3000..=LAST as u32) {
            let result = cb3_result::from_code(code).expect("no gaps");
            assert_eq!(result as u32, code);
            count += match result {
                cb3_result::Ok | cb3_result::NullParameter | cb3_result::InvalidKeyLength
                | cb3_result::InvalidNonceLength | cb3_result::InvalidTagLength | cb3_result::InsufficientSize
                | cb3_result::OverlappingBuffers | cb3_result::DecryptionFailed | cb3_result::StreamExhausted
                | cb3_result::InvalidArgument | cb3_result::Panic | cb3_result::CounterOverflow
                | cb3_result::IoError | cb3_result::OutOfMemory | cb3_result::Forked | cb3_result::Interrupted
                | cb3_result::InvalidRounds | cb3_result::InvalidCounter | cb3_result::InvalidPosition
                | cb3_result::InvalidUtf8 | cb3_result::InvalidHeader | cb3_result::LimitExceeded => 1,
            };
        }
        assert_eq!(count, 22);
        for code in [1, 2999, LAST as u32 + 1, u32::MAX] {
            assert_eq!(cb3_result::from_code(code), None);
        }
    }
}
