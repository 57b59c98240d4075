//! The engine's one error type. The C ABI crate maps it to its result
//! codes; nothing here knows about C.

/// Why an engine operation failed. A failing operation has written nothing
/// to its outputs, except where a variant says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The key is not 32 bytes.
    InvalidKeyLength,
    /// The nonce has a length this operation does not take.
    InvalidNonceLength,
    /// The tag is not 32 bytes.
    InvalidTagLength,
    /// An output buffer is too small for the result.
    InsufficientSize,
    /// The tag does not match; no plaintext was released.
    DecryptionFailed,
    /// A stream has used its last message index.
    StreamExhausted,
    /// An argument is out of its documented range.
    InvalidArgument,
    /// A worker thread panicked; outputs may hold partial results.
    Panic,
    /// A ChaCha keystream would pass the end of its block counter.
    CounterOverflow,
    /// The operating system reported an I/O error.
    Io,
    /// A private working copy could not be allocated.
    OutOfMemory,
    /// An interrupt check asked a long operation to stop.
    Interrupted,
    /// A ChaCha round count other than 20, 12 or 8.
    InvalidRounds,
    /// A ChaCha starting block at or past the end of the keystream.
    InvalidCounter,
    /// A ChaCha position past the end of the keystream.
    InvalidPosition,
    /// Text that must be UTF-8 is not.
    InvalidUtf8,
    /// Not a chunked-format or passphrase header.
    InvalidHeader,
    /// A passphrase header asks for more than the reader's limits allow
    /// (checked before anything is allocated).
    LimitExceeded,
}

/// The engine's results: `Error` unless another error type is named.
pub type Result<T, E = Error> = std::result::Result<T, E>;
