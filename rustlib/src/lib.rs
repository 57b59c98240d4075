//! cb3's engine: ChaCha20-BLAKE3, BLAKE3 and the raw ChaCha family behind a
//! C ABI (see `include/cb3.h`).
//!
//! Conventions, after rustls-ffi: every function is `cb3_<object>_<verb>`;
//! fallible functions return `cb3_result`; inputs come before outputs; every
//! buffer pointer is followed by its length; outputs are written only on
//! success; no panic crosses the boundary; the hot paths do not allocate.
#![allow(non_camel_case_types)]
// Every unsafe operation sits in its own `unsafe` block with a `SAFETY:`
// comment, also inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod aead;
pub mod bench;
mod buffers;
mod cache;
pub mod chacha20;
pub mod chunked;
mod direct;
pub mod errors;
pub mod hash;
pub mod info;
mod object;
mod parallel;
pub mod stream;
mod wipe;

pub use aead::{CB3_KEY_SIZE, CB3_NONCE_SIZE, CB3_TAG_SIZE};
pub use errors::cb3_result;
pub use object::{cb3_set_wait_hooks, dealloc_dropped};
