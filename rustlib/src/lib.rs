//! cb3's engine: ChaCha20-BLAKE3, BLAKE3 and the raw ChaCha family behind a
//! C ABI (see `include/cb3.h`).
//!
//! Two layers: the engines at the top of the crate (`aead`, `blake3_compressions`,
//! `hash`, `chacha20`, `stream`, `chunked`, `parallel`, `wipe`, `cache`, `info`)
//! work on Rust slices; `ffi` is the C ABI over them (the exported functions
//! with their header documentation, the result codes and the panic boundary,
//! the pointer-to-slice views, the opaque objects).
//!
//! Conventions, after rustls-ffi: every function is `cb3_<object>_<verb>`;
//! fallible functions return `cb3_result`; inputs come before outputs; every
//! buffer pointer is followed by its length; outputs are written only on
//! success; no panic crosses the boundary; the hot paths do not allocate.
#![allow(non_camel_case_types)]
// Every unsafe operation sits in its own `unsafe` block with a `SAFETY:`
// comment, also inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn)]

mod aead;
mod blake3_compressions;
mod cache;
mod chacha20;
mod chacha20_blocks;
mod chacha20_wide;
mod chunked;
mod hash;
mod info;
mod parallel;
mod stream;
mod wipe;

pub mod ffi;

pub use ffi::errors::cb3_result;
pub use ffi::object::{cb3_set_wait_hooks, dealloc_dropped};
pub use aead::{CB3_KEY_SIZE, CB3_NONCE_SIZE, CB3_TAG_SIZE};
