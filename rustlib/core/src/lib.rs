//! cb3's engine: ChaCha20-BLAKE3, BLAKE3 and the raw ChaCha family on Rust
//! slices. Pure Rust: no C names, no `extern "C"`, no interpreter hooks.
//! The C ABI (`cb3`, the crate in `rustlib/`) owns the handles, their locks
//! and owner processes, the panic boundary and the mapping of [`Error`] to
//! its result codes.
// Every unsafe operation sits in its own `unsafe` block with a `SAFETY:`
// comment, also inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod aead;
pub mod blake3_compressions;
pub mod buffer;
pub mod chacha20;
pub mod chunked;
pub mod cpu;
mod error;
pub mod hash;
pub mod parallel;
pub mod pieces;
pub mod stream;
pub mod wipe;

pub use error::{Error, Result};
