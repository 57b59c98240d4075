//! The C ABI: every `extern "C"` function of `include/cb3.h` with its header
//! documentation, one file per family of operations, over the engines of the
//! crate root; and what they share: the result codes and the panic boundary
//! (`errors`), C pointers made slices (`buffers`), the opaque objects
//! (`object`).

pub mod aead;
pub mod bench;
pub(crate) mod buffers;
pub mod chacha20;
pub mod chunked;
pub mod errors;
pub mod hash;
pub mod info;
pub mod object;
pub mod stream;
