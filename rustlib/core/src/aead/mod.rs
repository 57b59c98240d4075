//! ChaCha20-BLAKE3, the committing AEAD of the `chacha20-blake3` crate, over
//! Rust slices (its C ABI is the `aead` module of the `cb3`
//! crate).
//!
//! The construction (exactly the crate's, checked byte for byte against it in
//! `tests/abi.rs`):
//!
//! ```text
//! enc_key || auth_key || enc_nonce = BLAKE3-keyed(key, nonce24), first 72 XOF bytes
//! ct  = plaintext XOR ChaCha20(enc_key, enc_nonce (8 B), 64-bit block counter from 0)
//! tag = BLAKE3-keyed(auth_key, aad || le64(|aad|) || ct || le64(|ct|))
//! ```
//!
//! The crate's in-place-only API would cost a full copy pass before its XOR
//! and MAC passes (and could not decrypt into a caller's buffer without
//! writing to it before the tag is checked), so the same steps run here over
//! the same primitives: every byte of the data is read once into private
//! memory (copy and XOR fused, piece by piece while the piece is in cache)
//! and MACed there. Decryption always finishes the MAC over the ciphertext
//! and compares the tag (constant time) before it writes a single byte.
//!
//! One file per concern: `keys` (the key derivation and the per-message
//! `Secrets`, wiped when dropped), `direct` (messages up to `DIRECT_MAX`:
//! staged in private memory, MACed by direct compressions), `keystream`
//! (the message keystream from any byte on) and `pass` (longer messages: one
//! pass of pieces over the MAC input as a BLAKE3 tree, split over threads).
//! This file holds the sizes, the API and what `seal` and `open` do with
//! each piece of the pass.

mod direct;
mod keys;
mod keystream;
mod pass;

use std::ops::Range;
use std::ptr;
#[cfg(test)]
use std::sync::atomic::Ordering;

use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::parallel::{LazyPool, Workers};
use crate::wipe::{scrub_stack, scrub_stack_deep};
use crate::chacha20::Source;

use direct::{open_direct, scrub_direct, seal_direct};
use keys::Secrets;
use keystream::{copy_unstored, xor_piece_from, MessageKeystream};
#[cfg(any(test, feature = "bench"))]
use pass::{line_offset, with_scratch};
use pass::{xor_into, Pass, Span};

/// Key size of ChaCha20-BLAKE3 in bytes: `key_len` must equal it.
pub const KEY_SIZE: usize = 32;
/// Nonce size of ChaCha20-BLAKE3 in bytes: `nonce_len` must equal it.
/// Random nonces are safe (a collision is expected only after about 2^96
/// messages under one key).
pub const NONCE_SIZE: usize = 24;
/// Tag size of ChaCha20-BLAKE3 in bytes: a ciphertext is this much longer
/// than its plaintext; input `tag_len` must equal it, output tag buffers must
/// hold at least this much.
pub const TAG_SIZE: usize = 32;

/// Bytes per keystream step of the final pass of a staged decryption (which
/// XORs from the private copy into the output): from this CPU's L1d
/// (`pieces::Pieces::xor_piece`).
fn xor_piece_len() -> usize {
    #[cfg(test)]
    if let n @ 1.. = tests::XOR_PIECE_OVERRIDE.load(Ordering::Relaxed) {
        return n;
    }
    crate::pieces::tuning().1.xor_piece
}

/// Bytes per piece of the one pass over a message that `seal` makes: each
/// piece of the data is XORed into memory no one else can see (and into the
/// output) and MACed there while it is in L2 (from this CPU's L2 and maker:
/// `pieces::Pieces::seal_piece`). Pieces are aligned in the MAC input (which
/// starts with the associated data), so BLAKE3 hashes every piece but the
/// first 16 chunks at a time.
fn seal_piece_len() -> usize {
    piece_len(|pieces| pieces.seal_piece)
}

/// The same for `open`'s pass, which copies each piece of the ciphertext
/// into private memory and MACs it there (half this CPU's L2, at most
/// `seal_piece_len()`: `pieces::Pieces::open_piece`).
fn open_piece_len() -> usize {
    piece_len(|pieces| pieces.open_piece)
}

/// The piece size `size` picks from this CPU's, or the tests' override.
fn piece_len(size: fn(&crate::pieces::Pieces) -> usize) -> usize {
    #[cfg(test)]
    if let n @ 1.. = tests::PIECE_OVERRIDE.load(Ordering::Relaxed) {
        return n;
    }
    size(&crate::pieces::tuning().1)
}

/// A tag as `seal` returns it: 16-byte aligned, so that the copies of the
/// result from frame to frame are aligned 16-byte moves (a 33-byte
/// `Result<[u8; 32]>` is copied in overlapping unaligned pieces, and each
/// load straddling two earlier stores cannot take their bytes forwarded and
/// stalls).
#[repr(C, align(16))]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Tag(pub [u8; 32]);

impl std::ops::Deref for Tag {
    type Target = [u8; 32];
    fn deref(&self) -> &[u8; 32] {
        &self.0
    }
}

/// Who can see the output buffer of a decryption while it runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Output {
    /// Memory only this call can see (just allocated, not yet shared): in
    /// one pass, each piece of the ciphertext is copied into the thread's
    /// private piece buffer, MACed there and decrypted from there into the
    /// output; on failure the output is wiped (all zeros) and the caller
    /// discards it.
    Private,
    /// The caller's memory, which others may read or write during the call:
    /// the ciphertext is staged in a private copy, and plaintext reaches the
    /// output only after the tag has verified; on failure it is untouched.
    Shared,
}

/// Messages whose MAC input (`aad || le64 || ct || le64`) is at most this
/// long take the direct path (`direct.rs`): BLAKE3 by direct compressions,
/// every whole chunk of the MAC input in one wide call, the message staged
/// in private memory laid out as the MAC input. Longer ones take the
/// piecewise `Pass` (`pass.rs`). Both give identical bytes; `tests/abi.rs`
/// checks every length and associated-data length around it.
pub const DIRECT_MAX: usize = crate::blake3_compressions::MAX_INPUT;

/// Encrypts into `out` (same length as the data) and returns the tag.
///
/// Every byte of the data is read once and XORed into a private piece
/// buffer, where it is MACed; `out` gets the same ciphertext, stored from
/// the same registers (`chacha20::wide::xor_copying`) or copied from the
/// private buffer: the tag covers exactly the ciphertext written, whatever
/// anyone else writes into the input or `out` meanwhile. Messages of at least
/// `parallel::PARALLEL_MIN` bytes run on `pool`'s threads if it is given;
/// the output does not depend on it.
pub fn seal(
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    source: Source<'_>,
    out: &mut [u8],
    pool: Option<&LazyPool>,
) -> Result<Tag> {
    if aad.len().saturating_add(out.len()) <= DIRECT_MAX - 16 {
        let mut secrets = Secrets::new();
        let tag = seal_direct(&mut secrets, key, nonce, aad, source, out);
        scrub_direct(aad.len(), out.len());
        return tag;
    }
    let keys = Secrets::derived(key, nonce);
    scrub_stack();
    let tag = seal_with(&keys, aad, source, out, &Workers::for_len(pool, out.len())).map(Tag);
    scrub_stack_deep();
    tag
}

/// One piece of `seal`'s XOR: `input` (None: `target`'s own bytes, in
/// place) XORed into `private` and `target` alike, stored from the same
/// registers where the kernel runs, else copied from `private`.
fn xor_private_piece(stream: &mut MessageKeystream<'_>, input: Option<&[u8]>, private: &mut [u8], target: &mut [u8], last: bool) -> Result<()> {
    let stored = match input {
        None => xor_piece_from(stream, &*target, private, last, None)?,
        Some(input) => xor_piece_from(stream, input, private, last, Some(&mut *target))?,
    };
    copy_unstored(target, private, stored);
    Ok(())
}

/// `seal` after the key derivation, on `workers`.
fn seal_with(keys: &Secrets, aad: &[u8], source: Source<'_>, out: &mut [u8], workers: &Workers) -> Result<[u8; 32]> {
    let len = out.len();
    let out = Span::of(out);
    let piece = move |range: Range<usize>, mac: &mut blake3::Hasher, stream: &mut MessageKeystream<'_>, last: bool, prefix: usize, scratch: &mut [u8]| {
        let staged = &mut scratch[..prefix + range.len()];
        // SAFETY: each range is handled by one thread only.
        let target = unsafe { out.get(range.clone()) };
        // The one read of the piece: XORed straight into the private buffer,
        // which the MAC then reads. The output gets the same bytes: stored
        // from the same registers as the private ones where the kernel runs
        // (no second pass), else copied from the private buffer.
        xor_private_piece(stream, source.input(range), &mut staged[prefix..], target, last)?;
        mac.update(staged);
        Ok(())
    };
    Pass::run(keys, aad, len, workers, seal_piece_len(), Some(out.ptr as usize), &piece)
}

/// The XOR of `seal`'s one-thread pass without its MAC, for the benchmark
/// tool `rustlib/bench` (the evidence rows of the per-call targets): the
/// same pieces of `seal_piece_len()` bytes, each XORed from `input` into
/// `out` and, with `private_copy`, into the thread's piece buffer at the
/// output's line offset as `seal` does (stored from the same registers where
/// the kernel runs, else copied). The two against each other give what the
/// private copy costs the pass.
#[cfg(any(test, feature = "bench"))]
pub fn seal_xor_pass(key: &[u8; 32], nonce: &[u8; 24], input: &[u8], out: &mut [u8], private_copy: bool) -> Result<()> {
    let keys = Secrets::derived(key, nonce);
    let piece = seal_piece_len();
    let pieces = out.len().div_ceil(piece);
    let done = with_scratch(piece, |scratch| {
        let mut stream = keys.keystream(0)?;
        for (index, (target, from)) in out.chunks_mut(piece).zip(input.chunks(piece)).enumerate() {
            let last = index + 1 == pieces;
            if !private_copy {
                xor_piece_from(&mut stream, from, target, last, None)?;
                continue;
            }
            let shift = line_offset(target.as_ptr() as usize, scratch.as_ptr() as usize);
            xor_private_piece(&mut stream, Some(from), &mut scratch[shift..shift + target.len()], target, last)?;
        }
        Ok(())
    });
    scrub_stack_deep();
    done
}

/// Verifies `tag` over the ciphertext and decrypts it into `out`, reading
/// every ciphertext byte once (see `Output` for where it goes first).
/// Returns `DecryptionFailed` on a mismatch; `out` is then untouched
/// (`Output::Shared`) or zeroed (`Output::Private`).
#[allow(clippy::too_many_arguments)]
pub fn open(
    key: &[u8; 32],
    nonce: &[u8; 24],
    aad: &[u8],
    tag: &[u8; 32],
    source: Source<'_>,
    out: &mut [u8],
    output: Output,
    pool: Option<&LazyPool>,
) -> Result<()> {
    let tag = *tag; // read once
    if aad.len().saturating_add(out.len()) <= DIRECT_MAX - 16 {
        let mut secrets = Secrets::new();
        let result = open_direct(&mut secrets, key, nonce, aad, &tag, source, out);
        scrub_direct(aad.len(), out.len());
        return result;
    }
    let keys = Secrets::derived(key, nonce);
    scrub_stack();
    let result = open_with(&keys, aad, &tag, source, out, output, &Workers::for_len(pool, out.len()));
    scrub_stack_deep();
    result
}

/// `open` after the key derivation, on `workers`.
fn open_with(
    keys: &Secrets,
    aad: &[u8],
    tag: &[u8; 32],
    source: Source<'_>,
    out: &mut [u8],
    output: Output,
    workers: &Workers,
) -> Result<()> {
    let len = out.len();
    let verify = |expected: [u8; 32]| {
        let expected = Zeroizing::new(expected);
        if constant_time_eq::constant_time_eq_32(&expected, tag) {
            Ok(())
        } else {
            Err(Error::DecryptionFailed)
        }
    };
    match (output, source) {
        (Output::Private, Source::Separate(input)) => {
            let target = Span::of(out);
            let piece = move |range: Range<usize>, mac: &mut blake3::Hasher, stream: &mut MessageKeystream<'_>, last: bool, prefix: usize, scratch: &mut [u8]| {
                // The one read of the piece, into the private buffer; MACed
                // there, then decrypted from there into `out` (which nobody
                // else sees, and which is wiped if the tag fails).
                let staged = &mut scratch[..prefix + range.len()];
                staged[prefix..].copy_from_slice(&input[range.clone()]);
                mac.update(staged);
                // SAFETY: each range is handled by one thread only.
                let dst = unsafe { target.get(range) };
                xor_piece_from(stream, &staged[prefix..], dst, last, None).map(drop)
            };
            Pass::run(keys, aad, len, workers, open_piece_len(), None, &piece).and_then(verify).inspect_err(|_| crate::wipe::wipe_bytes(out))
        }
        _ => {
            // Staged: a private copy of the ciphertext, verified, then
            // decrypted from that copy into `out`.
            // (Not zeroed first: every byte is written before it is read.)
            let mut staging: Vec<u8> = Vec::new();
            staging.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
            let stage = Span { ptr: staging.as_mut_ptr(), len };
            let from = Span::of(out);
            let piece = move |range: Range<usize>, mac: &mut blake3::Hasher, _: &mut MessageKeystream<'_>, _: bool, prefix: usize, scratch: &mut [u8]| {
                let src = match source {
                    // SAFETY: each range is handled by one thread only.
                    Source::InPlace => unsafe { from.get(range.clone()) },
                    Source::Separate(input) => &input[range.clone()],
                };
                if prefix > 0 {
                    // The first piece: MACed behind the staged head in the
                    // private buffer, then copied into the staging copy.
                    let staged = &mut scratch[..prefix + range.len()];
                    staged[prefix..].copy_from_slice(src);
                    mac.update(staged);
                    // SAFETY: `range` lies within the capacity of `staging`,
                    // which no one else writes; the bytes are initialized here.
                    unsafe { ptr::copy_nonoverlapping(staged[prefix..].as_ptr(), stage.at(range.start), range.len()) };
                    return Ok(());
                }
                // SAFETY: `range` lies within the capacity of `staging`, and
                // its bytes are initialized by this copy before the slice
                // over them is formed.
                let dst = unsafe {
                    let at = stage.at(range.start);
                    ptr::copy_nonoverlapping(src.as_ptr(), at, range.len());
                    std::slice::from_raw_parts(at, range.len())
                };
                mac.update(dst);
                Ok(())
            };
            Pass::run(keys, aad, len, workers, open_piece_len(), None, &piece).and_then(verify)?;
            // SAFETY: the pass wrote every byte of 0..len (pieces cover the message).
            unsafe { staging.set_len(len) };
            xor_into(keys, &staging, out, workers)
        }
    }
}

#[cfg(test)]
mod tests {
    use chacha20_blake3::ChaCha20Blake3;

    use super::*;

    /// Test bytes: `len` of them, different for each `seed`.
    pub(super) fn bytes(seed: usize, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(97) ^ (i >> 8)) as u8).collect()
    }

    /// Piece sizes other CPUs derive (`pieces::pieces_for`) for the tests
    /// here and in `pass.rs` (0: this CPU's). Other tests running meanwhile
    /// may see them: the bytes do not depend on them.
    pub(super) static PIECE_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    pub(super) static XOR_PIECE_OVERRIDE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// The smallest and largest piece sizes `pieces::pieces_for` derives
    /// give the crate's bytes, for lengths and associated data around the
    /// pieces, one and three leaves, and both decryption outputs.
    #[test]
    fn every_piece_size_gives_the_same_bytes() {
        for (piece, xor_piece) in [(64 << 10, 16 << 10), (1 << 20, 256 << 10)] {
            PIECE_OVERRIDE.store(piece, Ordering::Relaxed);
            XOR_PIECE_OVERRIDE.store(xor_piece, Ordering::Relaxed);
            for (i, &len) in [piece - 1, piece + 1, 2 * piece + 5, 3 * piece + 777].iter().enumerate() {
                for aad_len in [0, 1017, piece - 5] {
                    let key: [u8; 32] = bytes(i + 7, 32).try_into().unwrap();
                    let nonce: [u8; 24] = bytes(i + 8, 24).try_into().unwrap();
                    let (pt, aad) = (bytes(i + 9, len), bytes(i + 10, aad_len));
                    let expected = ChaCha20Blake3::new(key).encrypt(&nonce, &pt, &aad);
                    let keys = Secrets::derived(&key, &nonce);
                    let tag: [u8; 32] = expected[len..].try_into().unwrap();
                    for threads in [1, 3] {
                        let what = format!("piece {piece}, length {len}, aad {aad_len}, {threads} threads");
                        let mut out = vec![0u8; len];
                        assert_eq!(seal_with(&keys, &aad, Source::Separate(&pt), &mut out, &Workers::split_only(threads)), Ok(tag), "{what}");
                        assert!(out == expected[..len], "{what}");
                        for output in [Output::Private, Output::Shared] {
                            let mut plain = vec![0xAA; len];
                            open_with(&keys, &aad, &tag, Source::Separate(&out), &mut plain, output, &Workers::split_only(threads)).unwrap();
                            assert!(plain == pt, "{what} {output:?}");
                        }
                    }
                }
            }
        }
        PIECE_OVERRIDE.store(0, Ordering::Relaxed);
        XOR_PIECE_OVERRIDE.store(0, Ordering::Relaxed);
    }

    /// The benchmark's XOR pass (`seal_xor_pass`, with and without the
    /// private copy) writes `seal`'s ciphertext: its rows time the same work.
    #[test]
    fn the_bench_xor_pass_writes_seals_ciphertext() {
        let (key, nonce) = ([9u8; 32], [8u8; 24]);
        let piece = seal_piece_len();
        for len in [0, 1, 100, 1024, 70_000, piece - 3, piece + 5, 2 * piece + 1000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let mut sealed = vec![0u8; len];
            seal(&key, &nonce, b"", Source::Separate(&data), &mut sealed, None).unwrap();
            for private_copy in [false, true] {
                let mut out = vec![0xEEu8; len];
                seal_xor_pass(&key, &nonce, &data, &mut out, private_copy).unwrap();
                assert!(out == sealed, "len {len}, private copy {private_copy}");
            }
        }
    }
}
