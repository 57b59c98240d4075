//! BLAKE3 by direct calls of its compression function, for inputs of up to
//! 64 KiB: the AEAD's per-message KDF and MAC and the one-shot hashes.
//!
//! The bytes are those of `blake3::Hasher` (checked at every length, split
//! and associated-data offset in the unit tests below and in tests/abi.rs);
//! the cost is lower:
//! - no `Hasher`/`OutputReader` state to build, move and wipe: a one-chunk
//!   input is a chain of compressions on one chaining value, and the KDF's
//!   72 bytes are one two-block `xof_many`;
//! - every whole 1 KiB chunk of the input is hashed in ONE `hash_many` call
//!   (SIMD across chunks), the remainder group padded up to a SIMD width
//!   (3 chunks cost one 4-wide call, not three serial ones), and each level
//!   of parent nodes is one `hash_many` call too. `Hasher::update` hashes
//!   subtrees aligned to powers of two, so input that does not start on one
//!   (the AEAD's MAC input after its associated data) takes narrow serial
//!   steps there.
//!
//! It uses blake3's doc-hidden `platform` module (runtime-dispatched
//! AVX-512/AVX2/SSE4.1/NEON compression and `hash_many`), which semver does
//! not cover: Cargo.toml pins blake3 to one exact version.
//!
//! Every chaining value (key material) lives in memory the caller passes in
//! (`Tree`, or a `[u32; 8]`) and wipes; this module keeps none.

use std::sync::OnceLock;

use blake3::platform::Platform;
use blake3::IncrementCounter;

use crate::wipe::{wipe, wipe_bytes};

pub const CHUNK_LEN: usize = 1024;
const BLOCK_LEN: usize = 64;
/// The longest input `hash` takes.
pub const MAX_INPUT: usize = MAX_CHUNKS * CHUNK_LEN;
const MAX_CHUNKS: usize = 64;

// Domain-separation flags (BLAKE3 specification, table 3).
const CHUNK_START: u8 = 1 << 0;
const CHUNK_END: u8 = 1 << 1;
const PARENT: u8 = 1 << 2;
const ROOT: u8 = 1 << 3;
pub const KEYED_HASH: u8 = 1 << 4;

/// The BLAKE3 IV (the key words of the unkeyed mode).
pub const IV: [u32; 8] = [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19];

/// The compression functions of this CPU (detected once).
pub fn platform() -> Platform {
    static PLATFORM: OnceLock<Platform> = OnceLock::new();
    *PLATFORM.get_or_init(Platform::detect)
}

/// `key` as the eight little-endian words BLAKE3 keys with: the key itself
/// (no copy) where it is 4-byte aligned on a little-endian CPU, else a copy
/// in `spare`, which the caller wipes.
pub fn key_words<'a>(key: &'a [u8; 32], spare: &'a mut [u32; 8]) -> &'a [u32; 8] {
    if cfg!(target_endian = "little") && key.as_ptr() as usize % std::mem::align_of::<u32>() == 0 {
        // SAFETY: 32 initialized bytes, aligned for u32, read as 8 u32s.
        return unsafe { &*(key as *const [u8; 32] as *const [u32; 8]) };
    }
    for (word, bytes) in spare.iter_mut().zip(key.chunks_exact(4)) {
        *word = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
    }
    spare
}

/// The 72-byte KDF of ChaCha20-BLAKE3 and more: the first 128 bytes of the
/// extended output of BLAKE3-keyed(`key`, 24-byte `input`), written to `out`.
pub fn keyed_xof_24(key: &[u32; 8], input: &[u8; 24], out: &mut [u8; 128]) {
    let mut block = [0u8; BLOCK_LEN];
    block[..24].copy_from_slice(input);
    platform().xof_many(key, &block, 24, 0, KEYED_HASH | CHUNK_START | CHUNK_END | ROOT, out);
}

/// Writes the output of the root node (`cv`, `block`) to `out` (any
/// length). Leaves the last output block's words in `cv`.
fn root_output(p: Platform, cv: &mut [u32; 8], block: &[u8; BLOCK_LEN], block_len: u8, flags: u8, out: &mut [u8]) {
    if out.len() == 32 {
        p.compress_in_place(cv, block, block_len, 0, flags | ROOT);
        for (bytes, word) in out.chunks_exact_mut(4).zip(cv.iter()) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        return;
    }
    let whole = out.len() / BLOCK_LEN * BLOCK_LEN;
    p.xof_many(cv, block, block_len, 0, flags | ROOT, &mut out[..whole]);
    if whole < out.len() {
        let mut last = p.compress_xof(cv, block, block_len, (whole / BLOCK_LEN) as u64, flags | ROOT);
        let rest = out.len() - whole;
        out[whole..].copy_from_slice(&last[..rest]);
        wipe(&mut last);
    }
}

/// Compresses every block of `chunk` (at most one chunk) but the last into
/// `cv` (which starts as the key) and returns the last block, zero-padded,
/// its length and its flags (the chunk-end flag included).
fn chunk_but_last(p: Platform, cv: &mut [u32; 8], chunk: &[u8], counter: u64, flags: u8) -> ([u8; BLOCK_LEN], u8, u8) {
    let blocks = chunk.len().div_ceil(BLOCK_LEN).max(1);
    for (i, block) in chunk.chunks_exact(BLOCK_LEN).take(blocks - 1).enumerate() {
        let start = if i == 0 { CHUNK_START } else { 0 };
        p.compress_in_place(cv, block.try_into().expect("64 bytes"), BLOCK_LEN as u8, counter, flags | start);
    }
    let tail = &chunk[(blocks - 1) * BLOCK_LEN..];
    let mut last = [0u8; BLOCK_LEN];
    last[..tail.len()].copy_from_slice(tail);
    let start = if blocks == 1 { CHUNK_START } else { 0 };
    (last, tail.len() as u8, flags | start | CHUNK_END)
}

/// BLAKE3 of an input of at most one chunk, keyed with `key` (the IV for the
/// unkeyed mode) and `flags`: writes the output to `out`. The chaining value
/// lives in `cv` (the caller wipes it).
pub fn hash_chunk(key: &[u32; 8], flags: u8, chunk: &[u8], out: &mut [u8], cv: &mut [u32; 8]) {
    debug_assert!(chunk.len() <= CHUNK_LEN);
    let p = platform();
    *cv = *key;
    let (last, len, last_flags) = chunk_but_last(p, cv, chunk, 0, flags);
    root_output(p, cv, &last, len, last_flags, out);
}

/// The chaining values of one multi-chunk hash: wiped by `wipe`.
#[repr(C)]
pub struct Tree {
    cv: [u32; 8],
    block: [u8; BLOCK_LEN],
    chunks: [u8; MAX_CHUNKS * 32],
    parents: [u8; MAX_CHUNKS / 2 * 32],
    /// Bytes of `chunks` and `parents` written.
    used: usize,
    /// Read, never used, by `hash_many` past the last pair of `parents`
    /// (see `hash_tree`): keeps that read inside the struct.
    slack: [u8; 16],
}

impl Tree {
    pub fn new() -> Self {
        Tree { cv: [0; 8], block: [0; BLOCK_LEN], chunks: [0; MAX_CHUNKS * 32], parents: [0; MAX_CHUNKS / 2 * 32], used: 0, slack: [0; 16] }
    }

    pub fn wipe(&mut self) {
        wipe(&mut self.cv);
        wipe(&mut self.block);
        let used = self.used.min(self.chunks.len());
        wipe_bytes(&mut self.chunks[..used]);
        wipe_bytes(&mut self.parents[..used.min(MAX_CHUNKS / 2 * 32)]);
        self.used = 0;
    }
}

/// How many chunks to give one `hash_many` call for `full` chunks: the
/// remainder group after the widest batches is padded (with copies of a
/// chunk whose chaining values are thrown away) up to the next SIMD width,
/// since a 4-, 8- or 16-wide pass costs about one serial chunk while the
/// leftovers of a narrower group would each cost one.
fn padded(full: usize, degree: usize) -> usize {
    let rest = full % degree;
    if degree < 4 || rest <= 1 {
        return full;
    }
    full - rest + rest.next_power_of_two().clamp(4, degree)
}

fn as_chunk(bytes: &[u8]) -> &[u8; CHUNK_LEN] {
    bytes[..CHUNK_LEN].try_into().expect("one chunk")
}

/// The chaining values of the whole chunks of `chunks` (chunk numbers
/// `first` on) into `tree.chunks`, in `hash_many` calls padded to a SIMD
/// width where the padding fits (see `padded`). Every chunk must have 16
/// bytes of its buffer behind it (see `hash_tree`). Returns the chunk number
/// after the last chaining value written, padding included.
fn hash_chunks(p: Platform, key: &[u32; 8], flags: u8, chunks: &[u8], first: usize, tree: &mut Tree) -> usize {
    let n = chunks.len() / CHUNK_LEN;
    if n == 0 {
        return 0;
    }
    let mut inputs: [&[u8; CHUNK_LEN]; MAX_CHUNKS] = [as_chunk(chunks); MAX_CHUNKS];
    for (slot, chunk) in inputs.iter_mut().zip(chunks.chunks_exact(CHUNK_LEN)) {
        *slot = as_chunk(chunk);
    }
    let wide = padded(n, p.simd_degree());
    let wide = if first + wide <= MAX_CHUNKS { wide } else { n };
    let out = &mut tree.chunks[first * 32..(first + wide) * 32];
    p.hash_many(&inputs[..wide], key, first as u64, IncrementCounter::Yes, flags, CHUNK_START, CHUNK_END, out);
    first + wide
}

/// The chaining value of chunk number `index` (`chunk`: at most one chunk,
/// read block by block through a copy of its last block) into `tree.chunks`.
fn chunk_cv(p: Platform, key: &[u32; 8], flags: u8, chunk: &[u8], index: usize, tree: &mut Tree) {
    tree.cv = *key;
    let (mut last, len, last_flags) = chunk_but_last(p, &mut tree.cv, chunk, index as u64, flags);
    p.compress_in_place(&mut tree.cv, &last, len, index as u64, last_flags);
    wipe(&mut last);
    for (bytes, word) in tree.chunks[index * 32..][..32].chunks_exact_mut(4).zip(tree.cv.iter()) {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
}

/// BLAKE3 (keyed with `key` and `flags`) of `head || tail`, where `head` is
/// whole chunks and the total is more than one chunk and at most
/// `MAX_INPUT`: writes the output to `out`. Chaining values live in `tree`
/// (the caller wipes it).
pub fn hash_tree(key: &[u32; 8], flags: u8, head: &[u8], tail: &[u8], out: &mut [u8], tree: &mut Tree) {
    let total = head.len() + tail.len();
    debug_assert!(head.len() % CHUNK_LEN == 0 && total > CHUNK_LEN && total <= MAX_INPUT);
    let p = platform();
    let full = total / CHUNK_LEN;
    let head_chunks = head.len() / CHUNK_LEN;
    let tail_chunks = full - head_chunks;
    // blake3's AVX2 `hash_many` loads each input block as 32 bytes from 16
    // bytes before its end (keeping 16), so it reads 16 bytes past every
    // chunk it is given: a chunk must have 16 more bytes of its buffer behind
    // it. Not so for the last chunk of `head` (what follows is the caller's)
    // nor for the last whole chunk of `tail` when fewer than 16 bytes follow
    // it: those are hashed block by block (`chunk_cv`), the rest wide.
    let rest_len = total % CHUNK_LEN;
    let wide_head = head_chunks.saturating_sub(1);
    let wide_tail = if rest_len >= 16 { tail_chunks } else { tail_chunks.saturating_sub(1) };
    let mut end = 0;
    end = end.max(hash_chunks(p, key, flags, &head[..wide_head * CHUNK_LEN], 0, tree));
    if head_chunks > 0 {
        let index = head_chunks - 1;
        chunk_cv(p, key, flags, &head[index * CHUNK_LEN..], index, tree);
        end = end.max(head_chunks);
    }
    end = end.max(hash_chunks(p, key, flags, &tail[..wide_tail * CHUNK_LEN], head_chunks, tree));
    if wide_tail < tail_chunks {
        let index = head_chunks + wide_tail;
        chunk_cv(p, key, flags, &tail[wide_tail * CHUNK_LEN..][..CHUNK_LEN], index, tree);
    }
    let mut count = full;
    if rest_len > 0 {
        chunk_cv(p, key, flags, &tail[tail.len() - rest_len..], full, tree);
        count += 1;
    }
    tree.used = (end.max(count) * 32).min(tree.chunks.len());
    // Parent levels, each one hash_many call, until two chaining values remain.
    let (mut from, mut to): (&mut [u8], &mut [u8]) = (&mut tree.chunks, &mut tree.parents);
    while count > 2 {
        let pairs = count / 2;
        let mut nodes: [&[u8; BLOCK_LEN]; MAX_CHUNKS / 2] = [from[..BLOCK_LEN].try_into().expect("64 bytes"); MAX_CHUNKS / 2];
        for (slot, pair) in nodes.iter_mut().zip(from.chunks_exact(BLOCK_LEN)).take(pairs) {
            *slot = pair.try_into().expect("64 bytes");
        }
        p.hash_many(&nodes[..pairs], key, 0, IncrementCounter::No, flags | PARENT, 0, 0, &mut to[..pairs * 32]);
        if count % 2 == 1 {
            to[pairs * 32..][..32].copy_from_slice(&from[(count - 1) * 32..][..32]);
        }
        count = pairs + count % 2;
        std::mem::swap(&mut from, &mut to);
    }
    tree.block.copy_from_slice(&from[..BLOCK_LEN]);
    tree.cv = *key;
    root_output(p, &mut tree.cv, &tree.block, BLOCK_LEN as u8, flags | PARENT, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 9) as u8).collect()
    }

    /// Every length to 64 KiB around the block and chunk edges, every
    /// head/tail split in whole chunks, and output lengths around the XOF
    /// block: the same bytes as blake3::Hasher, keyed and unkeyed.
    #[test]
    fn matches_the_hasher() {
        let key = [0x5Au8; 32];
        let mut spare = [0u32; 8];
        let words = *key_words(&key, &mut spare);
        let mut lengths: Vec<usize> = (0..=2200).collect();
        for chunks in 2..=MAX_CHUNKS {
            let edge = chunks * CHUNK_LEN;
            lengths.extend([edge - 65, edge - 64, edge - 63, edge - 1, edge, edge + 1, edge + 63, edge + 64]);
        }
        lengths.retain(|&n| n <= MAX_INPUT);
        let input = bytes(MAX_INPUT, 7);
        for &len in &lengths {
            let data = &input[..len];
            for (flags, words, hasher) in [(KEYED_HASH, words, blake3::Hasher::new_keyed(&key)), (0, IV, blake3::Hasher::new())] {
                let mut hasher = hasher;
                hasher.update(data);
                for out_len in [32usize, 1, 64, 100, 200] {
                    let mut expected = vec![0u8; out_len];
                    hasher.finalize_xof().fill(&mut expected);
                    let mut got = vec![0u8; out_len];
                    if len <= CHUNK_LEN {
                        hash_chunk(&words, flags, data, &mut got, &mut [0; 8]);
                        assert_eq!(got, expected, "length {len}, flags {flags}, out {out_len}");
                        continue;
                    }
                    let mut tree = Tree::new();
                    for head_chunks in [0, 1, len / CHUNK_LEN / 2, len / CHUNK_LEN] {
                        let head = head_chunks * CHUNK_LEN;
                        if head > len {
                            continue;
                        }
                        got.fill(0);
                        hash_tree(&words, flags, &data[..head], &data[head..], &mut got, &mut tree);
                        assert_eq!(got, expected, "length {len}, head {head}, flags {flags}, out {out_len}");
                        tree.wipe();
                    }
                }
            }
        }
    }

    #[test]
    fn kdf_matches_the_hasher() {
        let key = [0x11u8; 32];
        let nonce = [0x22u8; 24];
        let mut expected = [0u8; 128];
        blake3::Hasher::new_keyed(&key).update(&nonce).finalize_xof().fill(&mut expected);
        let mut out = [0u8; 128];
        keyed_xof_24(key_words(&key, &mut [0; 8]), &nonce, &mut out);
        assert_eq!(out, expected);
    }

    #[test]
    fn padding_rounds_the_last_group_up() {
        assert_eq!([1, 2, 3, 5, 9, 15, 16, 17, 19, 33].map(|n| padded(n, 16)), [1, 4, 4, 8, 16, 16, 16, 17, 20, 33]);
        assert_eq!([3, 5, 7].map(|n| padded(n, 8)), [4, 8, 8]);
        assert_eq!([3, 5].map(|n| padded(n, 1)), [3, 5]);
    }
}
