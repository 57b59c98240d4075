//! The one pass over a long message: its MAC input as a BLAKE3 tree, whose
//! leaves (several per thread) are cut into pieces on the grid of the MAC
//! input and handed to a piece function (`seal`'s or `open`'s), their
//! chaining values merged into the tag; the thread's piece buffer the pieces
//! work in; and the split of a staged decryption's last XOR pass.

use std::ops::Range;
use std::sync::Mutex;

use blake3::hazmat::{merge_subtrees_non_root, merge_subtrees_root, HasherExt, Mode};
use zeroize::Zeroize;

use super::keys::Secrets;
use super::keystream::{xor_segment, MessageKeystream};
use super::seal_piece_len;
use crate::buffer::PieceBuffer;
use crate::error::{Error, Result};
use crate::parallel::{self, Workers};

/// `out = input XOR keystream` for the whole message, in
/// `LEAVES_PER_THREAD` segments per thread of `workers` (the last pass of a
/// staged decryption).
pub(super) fn xor_into(keys: &Secrets, input: &[u8], out: &mut [u8], workers: &Workers) -> Result<()> {
    if workers.threads() <= 1 {
        return xor_segment(keys, 0, input, out);
    }
    let len = out.len();
    let segment = parallel::segment_len(len, workers.threads() * LEAVES_PER_THREAD);
    let target = Span::of(out);
    let task = |index: usize| {
        let range = index * segment..((index + 1) * segment).min(len);
        // SAFETY: each segment is handled by one task only.
        let part = unsafe { target.get(range.clone()) };
        xor_segment(keys, range.start, &input[range], part)
    };
    workers.each(len.div_ceil(segment), &task).map_err(|_| Error::Panic)
}

/// A byte buffer that the pieces of one call write from several threads,
/// each piece to its own disjoint range.
#[derive(Clone, Copy)]
pub(super) struct Span {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
}

// SAFETY: a Span is only used for disjoint ranges by the threads of one call
// (each piece of a pass, each segment of `xor_into`, is handled by exactly
// one thread).
unsafe impl Send for Span {}
unsafe impl Sync for Span {}

impl Span {
    pub(super) fn of(bytes: &mut [u8]) -> Self {
        Span { ptr: bytes.as_mut_ptr(), len: bytes.len() }
    }

    /// # Safety
    /// `offset` is at most the span's length.
    pub(super) unsafe fn at(&self, offset: usize) -> *mut u8 {
        // SAFETY: the caller's contract: `offset` is within the span.
        unsafe { self.ptr.add(offset) }
    }

    /// # Safety
    /// `range` lies within the span and no other reference to it is live.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn get(&self, range: Range<usize>) -> &mut [u8] {
        debug_assert!(range.start <= range.end && range.end <= self.len);
        if range.is_empty() {
            return &mut [];
        }
        // SAFETY: the caller's contract: `range` lies within the span (so
        // the bytes are valid) and nothing else refers to them meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

/// What one piece of the pass does: given the piece's range of the message,
/// the MAC and the keystream positioned at the piece, whether it is the last
/// piece of the stream, `prefix` and a private scratch buffer of at least
/// `prefix` + the piece's length, it reads the piece from the caller exactly
/// once and feeds the MAC only bytes no one else can change. The first
/// `prefix` bytes of the scratch buffer are MAC input just before the piece
/// (the tail of the associated data and its length, staged so that the first
/// piece, like every other, starts on the piece grid of the MAC input) that
/// the piece feeds to the MAC in the same `update`.
pub(super) type PieceFn<'a> =
    dyn Fn(Range<usize>, &mut blake3::Hasher, &mut MessageKeystream<'_>, bool, usize, &mut [u8]) -> Result<()> + Sync + 'a;

/// Leaves (or segments) per thread when a message is split over threads:
/// several, so that a thread that starts late (a pool thread's wake-up can
/// be slow, on a VM most of all: `parallel::Workers`) leaves its share to
/// the others instead of finishing last.
const LEAVES_PER_THREAD: usize = 8;

/// The shortest leaf a split message gets (shorter ones when a message is
/// split over threads: `LEAVES_PER_THREAD` would ask for less): a leaf is
/// cut into pieces of at most its length, and pieces below 128 KiB cost
/// more per byte ("Piece sizes: by cache and by maker" in docs/performance.md).
/// Not the piece length: where pieces are as long as a message, that message
/// would not split at all.
const LEAF_MIN: usize = 128 * 1024;

/// Bytes of `SCRATCH` behind the most any piece uses (see `with_scratch`):
/// up to 63 to start a piece where `Pass::line_offset` puts it, 64 behind it.
const SCRATCH_SLACK: usize = 128;

/// How far past `from` a private copy of bytes at `target` starts to lie
/// as far from a 64-byte line as they do (below 64).
pub(super) fn line_offset(target: usize, from: usize) -> usize {
    target.wrapping_sub(from) % 64
}

thread_local! {
    /// Each thread's piece buffer for `seal` and the direct path's staging
    /// (`seal_piece_len()` bytes and `SCRATCH_SLACK`, in whole huge pages
    /// where the system has them; allocated on its first message with more
    /// than one chunk of MAC input and kept; it only ever holds ciphertext
    /// and associated data when a call returns).
    static SCRATCH: std::cell::RefCell<PieceBuffer> = const { std::cell::RefCell::new(PieceBuffer::EMPTY) };
}

/// Runs `work` on this thread's piece buffer, at least `len` (and
/// `seal_piece_len()`) bytes: kept between calls (so that no call allocates
/// and zeroes one), or a new one if a piece function ever ran a nested pass
/// on this thread. In huge pages where the system has them
/// (`buffer::PieceBuffer`).
pub(super) fn with_scratch<R>(len: usize, work: impl FnOnce(&mut [u8]) -> Result<R>) -> Result<R> {
    SCRATCH.with(|cell| {
        let mut owned = PieceBuffer::EMPTY;
        let mut borrowed = cell.try_borrow_mut();
        let scratch: &mut PieceBuffer = match borrowed.as_deref_mut() {
            Ok(kept) => kept,
            Err(_) => &mut owned,
        };
        // Slack behind the bytes asked for: blake3's AVX2 `hash_many` reads
        // 16 bytes past each chunk it hashes, and a piece may fill the
        // buffer up to `len` (see blake3_compressions.rs).
        let want = len.max(seal_piece_len()) + SCRATCH_SLACK;
        if scratch.len() < want {
            // The old bytes are only ever ciphertext and associated data.
            *scratch = PieceBuffer::EMPTY;
            *scratch = PieceBuffer::new(want).ok_or(Error::OutOfMemory)?;
        }
        work(scratch.as_mut_slice())
    })
}

/// One pass over a message: the MAC input `aad || le64(|aad|) || ct ||
/// le64(|ct|)` as a BLAKE3 tree (with the `hazmat` subtree functions), whose
/// leaves run on `workers` (`LEAVES_PER_THREAD` per thread, the caller's
/// included) when there are several, and are cut into pieces of `piece_len`
/// bytes, each handed to `piece`. Returns the tag; the
/// bytes equal one `blake3::Hasher::update` over the whole input (checked
/// against the crate at every length and split in tests/abi.rs).
pub(super) struct Pass<'a> {
    keys: &'a Secrets,
    aad: &'a [u8],
    aad_len: [u8; 8],
    /// |aad| + 8: where the ciphertext starts in the MAC input.
    head: usize,
    ct_len: usize,
    ct_len_le: [u8; 8],
    /// Subtrees longer than this are split in two.
    leaf_max: usize,
    /// Bytes per piece (`seal_piece_len()` or `open_piece_len()`).
    piece_len: usize,
    /// The address of the output's first byte, where each piece's private
    /// bytes are to lie at the same offset from a 64-byte line as their
    /// place in the output (`seal`: the kernel then stores whole lines of
    /// both, `chacha20::wide`); None: anywhere.
    out_addr: Option<usize>,
    piece: &'a PieceFn<'a>,
}

impl<'a> Pass<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(keys: &'a Secrets, aad: &'a [u8], ct_len: usize, workers: &Workers, piece_len: usize, out_addr: Option<usize>, piece: &'a PieceFn<'a>) -> Result<[u8; 32]> {
        let head = aad.len() + 8;
        let total = head + ct_len + 8;
        let threads = workers.threads();
        let leaf_max = if threads > 1 { (total / (threads * LEAVES_PER_THREAD)).max(LEAF_MIN) } else { usize::MAX };
        let pass = Pass {
            keys,
            aad,
            aad_len: (aad.len() as u64).to_le_bytes(),
            head,
            ct_len,
            ct_len_le: (ct_len as u64).to_le_bytes(),
            leaf_max,
            piece_len,
            out_addr,
            piece,
        };
        if pass.split(total).is_none() {
            return pass.leaf(0, total, true);
        }
        let mut leaves = Vec::new();
        pass.plan(0, total, &mut leaves);
        // The leaves' chaining values, written in place by their tasks and
        // wiped in place at the end (they are keyed with the MAC key).
        let cvs: Vec<Mutex<[u8; 32]>> = leaves.iter().map(|_| Mutex::new([0; 32])).collect();
        let slot = |index: usize| cvs[index].lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let task = |index: usize| {
            let (start, len) = leaves[index];
            let mut cv = pass.leaf(start, len, false)?;
            *slot(index) = cv;
            cv.zeroize();
            Ok(())
        };
        let mut next = 0..leaves.len();
        let tag = workers.each(leaves.len(), &task).and_then(|()| pass.merge(total, true, &mut || Ok(*slot(next.next().expect("a value per leaf")))));
        for index in 0..cvs.len() {
            slot(index).zeroize();
        }
        tag
    }

    /// Where a subtree of `len` bytes splits (its left subtree's length),
    /// or None if it is a leaf.
    fn split(&self, len: usize) -> Option<usize> {
        (len > self.leaf_max).then(|| blake3::hazmat::left_subtree_len(len as u64) as usize)
    }

    /// The leaves `(start, len)` of the subtree `[start, start + len)`, in order.
    fn plan(&self, start: usize, len: usize, leaves: &mut Vec<(usize, usize)>) {
        match self.split(len) {
            None => leaves.push((start, len)),
            Some(left) => {
                self.plan(start, left, leaves);
                self.plan(start + left, len - left, leaves);
            }
        }
    }

    /// The chaining value of a subtree of `len` bytes (the tag if `root`)
    /// from its leaves' chaining values, which `leaf` gives in order.
    fn merge(&self, len: usize, root: bool, leaf: &mut dyn FnMut() -> Result<[u8; 32]>) -> Result<[u8; 32]> {
        let Some(left) = self.split(len) else {
            return leaf();
        };
        let (l, r) = (self.merge(left, false, leaf), self.merge(len - left, false, leaf));
        let (mut l, mut r) = (l?, r?);
        let mode = Mode::KeyedHash(self.keys.auth_key());
        let out = if root { *merge_subtrees_root(&l, &r, mode).as_bytes() } else { merge_subtrees_non_root(&l, &r, mode) };
        l.zeroize();
        r.zeroize();
        Ok(out)
    }

    /// Feeds `mac` the bytes `[from, to)` of `head_bytes || tail`, a part of
    /// the MAC input that the caller does not share with a writer: the
    /// associated data (read once, here) and the two lengths.
    fn feed_fixed(mac: &mut blake3::Hasher, parts: [&[u8]; 2], from: usize, to: usize) {
        let first = parts[0].len();
        if from < first {
            mac.update(&parts[0][from..to.min(first)]);
        }
        if to > first {
            mac.update(&parts[1][from.max(first) - first..to - first]);
        }
    }

    /// Copies the bytes `[from, to)` of `parts[0] || parts[1]` (as in
    /// `feed_fixed`) to `out`, which is `to - from` long.
    fn copy_fixed(out: &mut [u8], parts: [&[u8]; 2], from: usize, to: usize) {
        let first = parts[0].len();
        let split = first.clamp(from, to) - from;
        if from < first {
            out[..split].copy_from_slice(&parts[0][from..to.min(first)]);
        }
        if to > first {
            out[split..].copy_from_slice(&parts[1][from.max(first) - first..to - first]);
        }
    }

    /// Where in `scratch` a piece whose ciphertext starts at `at` (behind
    /// `prefix` staged bytes) goes: 0, or with `out_addr` the first offset
    /// (below 64, within `SCRATCH_SLACK`) that puts the piece's ciphertext
    /// as far from a 64-byte line as its place in the output.
    fn line_offset(&self, scratch: &[u8], at: usize, prefix: usize) -> usize {
        self.out_addr.map_or(0, |out| line_offset(out + at, scratch.as_ptr() as usize + prefix))
    }

    fn leaf(&self, start: usize, len: usize, root: bool) -> Result<[u8; 32]> {
        let end = start + len;
        let ct_end = self.head + self.ct_len;
        let mut mac = blake3::Hasher::new_keyed(self.keys.auth_key());
        if start > 0 {
            mac.set_input_offset(start as u64);
        }
        let fixed = [self.aad, &self.aad_len[..]];
        let result = (|| {
            let (ct_start, ct_stop) = (start.max(self.head), end.min(ct_end));
            if ct_start < ct_stop {
                // The head (associated data and its length) in this leaf up
                // to the piece grid goes to the MAC here; the rest is staged
                // in front of the first piece, so that every `update` of
                // ciphertext starts on the grid (whole, wide subtrees; no
                // chunk-by-chunk ramp after the associated data).
                let piece = self.piece_len;
                let staged_from = if start < self.head { (self.head / piece * piece).max(start) } else { self.head };
                if start < staged_from {
                    Self::feed_fixed(&mut mac, fixed, start, staged_from);
                }
                let (first, stop) = (ct_start - self.head, ct_stop - self.head);
                let mut stream = self.keys.keystream(first)?;
                with_scratch(piece, |scratch| {
                    let mut prefix = self.head - staged_from;
                    let mut at = first;
                    let mut line = self.line_offset(scratch, at, prefix);
                    Self::copy_fixed(&mut scratch[line..line + prefix], fixed, staged_from, self.head);
                    while at < stop {
                        // The next piece boundary, aligned in the MAC input.
                        let next = (((at + self.head) / piece + 1) * piece - self.head).min(stop);
                        (self.piece)(at..next, &mut mac, &mut stream, next == stop, prefix, &mut scratch[line..])?;
                        prefix = 0;
                        at = next;
                        line = self.line_offset(scratch, at, 0);
                    }
                    Ok(())
                })?;
            } else if start < self.head {
                Self::feed_fixed(&mut mac, fixed, start, end.min(self.head));
            }
            if end > ct_end {
                Self::feed_fixed(&mut mac, [&[], &self.ct_len_le], start.max(ct_end) - ct_end, end - ct_end);
            }
            Ok(if root { *mac.finalize().as_bytes() } else { mac.finalize_non_root() })
        })();
        mac.zeroize();
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use chacha20_blake3::ChaCha20Blake3;

    use super::*;
    use crate::aead::tests::{bytes, PIECE_OVERRIDE};
    use crate::aead::{open_piece_len, open_with, seal_with, Output, DIRECT_MAX};
    use crate::chacha20::Source;

    /// `seal` from and into buffers at every offset from a 64-byte line
    /// (private pieces follow the output's, `Pass::line_offset`), in
    /// pieces of several sizes: the crate's bytes.
    #[test]
    fn every_output_line_offset_matches_the_crate() {
        let (key, nonce) = ([5u8; 32], [6u8; 24]);
        for piece in [64 << 10, 0] {
            PIECE_OVERRIDE.store(piece, Ordering::Relaxed);
            for (i, offset) in (0..64).step_by(3).chain([16, 32, 48]).enumerate() {
                let len = [DIRECT_MAX + 1, 200_000 + i, (1 << 20) + 3 * i][i % 3];
                let aad = bytes(i + 40, [0, 8, 1017][i % 3]);
                let pt = bytes(i + 20, len);
                let expected = ChaCha20Blake3::new(key).encrypt(&nonce, &pt, &aad);
                let keys = Secrets::derived(&key, &nonce);
                let mut backing = vec![0u8; len + 128];
                let start = (backing.as_ptr() as usize).wrapping_neg() % 64 + offset;
                let out = &mut backing[start..start + len];
                let what = format!("output {offset} past a line, length {len}, piece {piece}");
                assert_eq!(seal_with(&keys, &aad, Source::Separate(&pt), out, &Workers::ONE).map(|tag| tag.to_vec()), Ok(expected[len..].to_vec()), "{what}");
                assert!(out[..] == expected[..len], "{what}");
            }
        }
        PIECE_OVERRIDE.store(0, Ordering::Relaxed);
    }

    /// Pools are capped at the usable cores, so tests/abi.rs sees only this
    /// machine's split; here the one pass runs with many leaf counts (any
    /// thread count gives a valid BLAKE3 tree) and associated data lengths
    /// around the chunk and piece alignment, against the crate.
    #[test]
    fn every_split_matches_the_crate() {
        // Around both passes' piece boundaries (seal's and open's pieces).
        let (seal, open) = (seal_piece_len(), open_piece_len());
        let mut lengths = vec![512, 1500, open - 1, open + 1, seal - 1, seal + 1, 2 * seal + 5, (1 << 20) + 33, 3 * (1 << 20) + 777];
        lengths.sort();
        lengths.dedup(); // the pieces may be the same size
        for (i, &len) in lengths.iter().enumerate() {
            for aad_len in [0, 7, 1016, 1017, open - 8, seal - 5, 2 * seal + 1000] {
                let key: [u8; 32] = bytes(i, 32).try_into().unwrap();
                let nonce: [u8; 24] = bytes(i + 1, 24).try_into().unwrap();
                let (pt, aad) = (bytes(i + 2, len), bytes(i + 3, aad_len));
                let expected = ChaCha20Blake3::new(key).encrypt(&nonce, &pt, &aad);
                let keys = Secrets::derived(&key, &nonce);
                let tag: [u8; 32] = expected[len..].try_into().unwrap();
                for threads in [1, 2, 3, 5, 8, 64] {
                    let what = format!("length {len}, aad {aad_len}, {threads} threads");
                    let mut out = vec![0u8; len];
                    assert_eq!(seal_with(&keys, &aad, Source::Separate(&pt), &mut out, &Workers::split_only(threads)), Ok(tag), "{what}");
                    assert!(out == expected[..len], "{what}");
                    let mut buf = pt.clone();
                    assert_eq!(seal_with(&keys, &aad, Source::InPlace, &mut buf, &Workers::split_only(threads)), Ok(tag), "{what}");
                    assert!(buf == out, "{what}");
                    for output in [Output::Private, Output::Shared] {
                        let mut plain = vec![0xAA; len];
                        open_with(&keys, &aad, &tag, Source::Separate(&out), &mut plain, output, &Workers::split_only(threads)).unwrap();
                        assert!(plain == pt, "{what} {output:?}");
                        let mut bad = tag;
                        bad[5] ^= 1;
                        let mut plain = vec![0xAA; len];
                        let failed = open_with(&keys, &aad, &bad, Source::Separate(&out), &mut plain, output, &Workers::split_only(threads));
                        assert_eq!(failed, Err(Error::DecryptionFailed));
                        let left = if output == Output::Private { 0 } else { 0xAA };
                        assert!(plain.iter().all(|&b| b == left), "{what} {output:?}: output after failure");
                    }
                    let mut buf = out.clone();
                    open_with(&keys, &aad, &tag, Source::InPlace, &mut buf, Output::Shared, &Workers::split_only(threads)).unwrap();
                    assert!(buf == pt, "{what} in place");
                }
            }
        }
    }
}
