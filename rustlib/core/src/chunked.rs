//! The chunk-level engine of cb3's encrypted file format
//! (docs/stream-format.md), STREAM (Hoang, Reyhanitabar, Rogaway, Vizár,
//! CRYPTO 2015) over ChaCha20-BLAKE3, laid out as age v1 and Tink do.
//!
//! ```text
//! header   = "CB3STRM" || 0x01 (version) || be32(chunk_size) || nonce_prefix (15 B)   (27 bytes)
//! chunk i  = ChaCha20-BLAKE3(key, nonce_i, plaintext_i, aad = header || associated_data)
//! nonce_i  = nonce_prefix || be64(i) || last (0x01 for the final chunk, else 0x00)
//! ```
//!
//! Every chunk but the final one holds exactly `chunk_size` plaintext bytes;
//! the final one 1..=chunk_size, or 0 only when it is chunk 0 (an empty
//! stream). A batch of consecutive chunks is sealed or opened in one call,
//! its chunks spread over a thread pool when `max_threads` allows: chunks are
//! independent, so the bytes never depend on the thread count.
//!
//! Framing (reading the header, finding the end of the stream, telling a
//! truncated stream from a complete one) is the caller's job: it knows where
//! its input ends, and passes `last` for the batch that holds the final chunk.

use std::sync::Arc;

use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::aead::{open, seal, Output, TAG_SIZE};
use crate::chacha20::Source;
use crate::error::{Error, Result};
use crate::parallel::{LazyPool, Workers};

/// Bytes of the stream header: magic (7), version (1), chunk size (4, big
/// endian), nonce prefix (15).
pub const HEADER_SIZE: usize = 27;
/// Bytes of the random nonce prefix in the header (the rest of each 24-byte
/// nonce is the 8-byte big-endian chunk index and the 1-byte last flag).
pub const PREFIX_SIZE: usize = 15;
/// The format version this library writes and reads (header byte 7).
pub const VERSION: u8 = 1;
/// The chunk size (plaintext bytes per chunk) cb3 writes by default: 64 KiB.
pub const DEFAULT_CHUNK_SIZE: u32 = 65536;
/// The smallest chunk size a header may give.
pub const MIN_CHUNK_SIZE: u32 = 64;
/// The largest chunk size a header may give (16 MiB): a reader never needs
/// more than this plus `TAG_SIZE` bytes of buffer per chunk.
pub const MAX_CHUNK_SIZE: u32 = 1 << 24;

pub const MAGIC: &[u8; 7] = b"CB3STRM";

/// Below this many bytes in a batch the chunks stay on the calling thread:
/// waking the pool costs more than it saves.
pub const PARALLEL_MIN_BATCH: usize = 128 * 1024;

/// The rule of the header format that a header breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderRule {
    /// The header is `HEADER_SIZE` bytes.
    Length,
    /// It starts with `MAGIC`.
    Magic,
    /// Its version byte is `VERSION`.
    Version,
    /// Its chunk size is in `MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE`.
    ChunkSize,
}

/// Why bytes are not a header: the first rule they break, and the value that
/// breaks it (the length, the version byte, the chunk size; 0 for the magic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderFault {
    pub rule: HeaderRule,
    pub value: u64,
}

/// The header of a stream, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub chunk_size: u32,
    pub nonce_prefix: [u8; PREFIX_SIZE],
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        out[..7].copy_from_slice(MAGIC);
        out[7] = VERSION;
        out[8..12].copy_from_slice(&self.chunk_size.to_be_bytes());
        out[12..].copy_from_slice(&self.nonce_prefix);
        out
    }

    /// The header in `bytes`, or `InvalidHeader` if it is not a version-1
    /// header with a chunk size in range.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        Self::parse(bytes).map_err(|_| Error::InvalidHeader)
    }

    /// The header in `bytes`, or the first rule it breaks (checked in the
    /// order length, magic, version, chunk size) with the value that breaks it.
    pub fn parse(bytes: &[u8]) -> Result<Self, HeaderFault> {
        let fault = |rule, value| Err(HeaderFault { rule, value });
        if bytes.len() != HEADER_SIZE {
            return fault(HeaderRule::Length, bytes.len() as u64);
        }
        if &bytes[..7] != MAGIC {
            return fault(HeaderRule::Magic, 0);
        }
        if bytes[7] != VERSION {
            return fault(HeaderRule::Version, bytes[7].into());
        }
        let chunk_size = u32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if check_chunk_size(chunk_size).is_err() {
            return fault(HeaderRule::ChunkSize, chunk_size.into());
        }
        let mut nonce_prefix = [0u8; PREFIX_SIZE];
        nonce_prefix.copy_from_slice(&bytes[12..]);
        Ok(Header { chunk_size, nonce_prefix })
    }
}

pub fn check_chunk_size(chunk_size: u32) -> Result<()> {
    if (MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&chunk_size) {
        Ok(())
    } else {
        Err(Error::InvalidArgument)
    }
}

/// The nonce of chunk `index`.
pub fn chunk_nonce(prefix: &[u8; PREFIX_SIZE], index: u64, last: bool) -> [u8; 24] {
    let mut nonce = [0u8; 24];
    nonce[..15].copy_from_slice(prefix);
    nonce[15..23].copy_from_slice(&index.to_be_bytes());
    nonce[23] = last as u8;
    nonce
}

#[derive(Zeroize, ZeroizeOnDrop)]
pub struct ChunkedKey(pub [u8; 32]);

/// One stream's key, header and associated data, for sealing or opening its
/// chunks.
///
/// Immutable after creation: any number of threads may seal or open chunks
/// of the same stream at once. The key is wiped when it is dropped.
pub struct Chunked {
    pub key: ChunkedKey,
    pub header: Header,
    /// The associated data of every chunk: the encoded header, then the
    /// caller's associated data.
    pub aad: Vec<u8>,
    /// The shared pool for `max_threads` (None: the calling thread only).
    pub pool: Option<Arc<LazyPool>>,
}

/// How a batch of `len` bytes splits into chunks of `piece` bytes: the number
/// of chunks (an empty final batch is one empty chunk).
pub fn chunk_count(len: usize, piece: usize) -> usize {
    len.div_ceil(piece).max(1)
}

impl Chunked {
    /// The stream of the encoded `header` under `key`, its chunks bound to
    /// `associated_data`, sealed and opened on `max_threads` threads (see
    /// `parallel::shared_pool`; 1: the calling thread only).
    pub fn new(key: &[u8; 32], header: &[u8], associated_data: &[u8], max_threads: usize) -> Result<Self> {
        let parsed = Header::decode(header)?;
        let mut aad = Vec::with_capacity(HEADER_SIZE + associated_data.len());
        aad.extend_from_slice(header);
        aad.extend_from_slice(associated_data);
        Ok(Chunked { key: ChunkedKey(*key), header: parsed, aad, pool: crate::parallel::shared_pool(max_threads) })
    }

    fn chunk_size(&self) -> usize {
        self.header.chunk_size as usize
    }

    /// Checks the shape of a batch of `count` chunks from `first` and returns
    /// the index of its last chunk.
    fn last_index(&self, first: u64, count: usize) -> Result<u64> {
        first.checked_add(count as u64 - 1).ok_or(Error::InvalidArgument)
    }

    /// Runs `work(chunk number within the batch)` for `count` chunks, on the
    /// calling thread and the pool's (`parallel::Workers`) when the batch is
    /// large enough, and returns the first failure (chunks not yet started
    /// when one fails are skipped).
    fn for_each_chunk<F>(&self, count: usize, batch_bytes: usize, work: F) -> Result<()>
    where
        F: Fn(usize) -> Result<()> + Sync,
    {
        let parallel = count > 1 && batch_bytes >= PARALLEL_MIN_BATCH;
        let workers = if parallel { Workers::of(self.pool.as_deref()) } else { Workers::ONE };
        workers.each(count, &work)
    }

    /// Seals `plaintext` as chunks `first..` into `out` (plaintext length plus
    /// one tag per chunk); returns the bytes written.
    pub fn seal_batch(&self, first: u64, last: bool, plaintext: &[u8], out: &mut [u8]) -> Result<usize> {
        let size = self.chunk_size();
        if !last && (plaintext.is_empty() || plaintext.len() % size != 0) {
            return Err(Error::InvalidArgument);
        }
        if plaintext.is_empty() && first != 0 {
            // Only an empty stream has an empty (final) chunk.
            return Err(Error::InvalidArgument);
        }
        let count = chunk_count(plaintext.len(), size);
        let last_index = self.last_index(first, count)?;
        let total = plaintext.len().checked_add(count * TAG_SIZE).ok_or(Error::InvalidArgument)?;
        if out.len() < total {
            return Err(Error::InsufficientSize);
        }
        let out_base = SendPtr(out.as_mut_ptr());
        self.for_each_chunk(count, plaintext.len(), |chunk| {
            let start = chunk * size;
            let input = &plaintext[start..(start + size).min(plaintext.len())];
            let index = first + chunk as u64;
            let nonce = chunk_nonce(&self.header.nonce_prefix, index, last && index == last_index);
            // SAFETY: chunk `chunk` owns out[start + chunk * TAG .. + input.len() + TAG],
            // disjoint from every other chunk's range and inside `out` (checked above).
            let sealed = unsafe {
                std::slice::from_raw_parts_mut(out_base.get().add(start + chunk * TAG_SIZE), input.len() + TAG_SIZE)
            };
            let (body, tag_out) = sealed.split_at_mut(input.len());
            let tag = seal(&self.key.0, &nonce, &self.aad, Source::Separate(input), body, None)?;
            tag_out.copy_from_slice(&tag[..]);
            Ok(())
        })?;
        Ok(total)
    }

    /// Verifies and decrypts the chunks `first..` in `ciphertext` into `out`;
    /// returns the plaintext bytes written. On failure no plaintext is left in
    /// `out` (chunks that verified are zeroed again).
    pub fn open_batch(&self, first: u64, last: bool, ciphertext: &[u8], out: &mut [u8]) -> Result<usize> {
        let piece = self.chunk_size() + TAG_SIZE;
        if !last && (ciphertext.is_empty() || ciphertext.len() % piece != 0) {
            return Err(Error::InvalidArgument);
        }
        let count = chunk_count(ciphertext.len(), piece);
        let last_index = self.last_index(first, count)?;
        let final_len = ciphertext.len() - (count - 1) * piece;
        // A final chunk shorter than a tag, or an empty final chunk anywhere
        // but at index 0, is never written by a sealer: reject it as forged.
        if final_len < TAG_SIZE || (last && final_len == TAG_SIZE && last_index != 0) {
            return Err(Error::DecryptionFailed);
        }
        let total = ciphertext.len() - count * TAG_SIZE;
        if out.len() < total {
            return Err(Error::InsufficientSize);
        }
        let size = self.chunk_size();
        let out_base = SendPtr(out.as_mut_ptr());
        let result = self.for_each_chunk(count, ciphertext.len(), |chunk| {
            let start = chunk * piece;
            let sealed = &ciphertext[start..(start + piece).min(ciphertext.len())];
            let (body, tag) = sealed.split_at(sealed.len() - TAG_SIZE);
            let index = first + chunk as u64;
            let nonce = chunk_nonce(&self.header.nonce_prefix, index, last && index == last_index);
            // SAFETY: chunk `chunk` owns out[chunk * size .. + body.len()], disjoint
            // from every other chunk's range and inside `out` (checked above).
            let plain = unsafe { std::slice::from_raw_parts_mut(out_base.get().add(chunk * size), body.len()) };
            open(&self.key.0, &nonce, &self.aad, tag.try_into().expect("32 bytes"), Source::Separate(body), plain, Output::Shared, None)
        });
        if let Err(code) = result {
            out[..total].zeroize();
            return Err(code);
        }
        Ok(total)
    }
}

/// A raw output pointer handed to the pool's threads, each of which writes
/// only its own chunk's disjoint range.
#[derive(Clone, Copy)]
pub struct SendPtr(*mut u8);
// SAFETY: see the uses: every thread writes a disjoint range of one buffer
// that outlives the scope.
unsafe impl Send for SendPtr {}
// SAFETY: as for Send: shared only to hand out disjoint ranges.
unsafe impl Sync for SendPtr {}
impl SendPtr {
    fn get(self) -> *mut u8 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(chunk_size: u32, threads: usize) -> Chunked {
        let header = Header { chunk_size, nonce_prefix: [7; 15] };
        let mut aad = header.encode().to_vec();
        aad.extend_from_slice(b"aad");
        Chunked { key: ChunkedKey([1; 32]), header, aad, pool: crate::parallel::shared_pool(threads) }
    }

    #[test]
    fn header_round_trip_and_rejections() {
        let header = Header { chunk_size: 65536, nonce_prefix: [9; 15] };
        let bytes = header.encode();
        assert_eq!(&bytes[..12], b"CB3STRM\x01\x00\x01\x00\x00");
        assert_eq!(Header::decode(&bytes), Ok(header));
        for (at, value) in [(0, b'X'), (7, 2), (8, 1), (9, 0)] {
            let mut bad = bytes;
            bad[at] = value;
            assert_eq!(Header::decode(&bad), Err(Error::InvalidHeader), "byte {at}");
        }
        assert_eq!(Header::decode(&bytes[..26]), Err(Error::InvalidHeader));
    }

    #[test]
    fn parse_names_the_rule_that_failed() {
        use HeaderRule::*;
        let bytes = Header { chunk_size: 1024, nonce_prefix: [3; 15] }.encode();
        let with = |at: usize, value: &[u8]| {
            let mut bad = bytes;
            bad[at..at + value.len()].copy_from_slice(value);
            Header::parse(&bad).map_err(|f| (f.rule, f.value))
        };
        let parse = |bytes: &[u8]| Header::parse(bytes).map_err(|f| (f.rule, f.value));
        assert_eq!(parse(&bytes[..26]), Err((Length, 26)));
        assert_eq!(parse(&[bytes.as_slice(), b"x"].concat()), Err((Length, 28)));
        assert_eq!(parse(&[]), Err((Length, 0)));
        assert_eq!(with(0, b"X"), Err((Magic, 0)));
        assert_eq!(with(7, &[2]), Err((Version, 2)));
        assert_eq!(with(8, &63u32.to_be_bytes()), Err((ChunkSize, 63)));
        assert_eq!(with(8, &((1u32 << 24) + 1).to_be_bytes()), Err((ChunkSize, (1 << 24) + 1)));
        // The first rule broken is the one named: a bad magic before a bad version.
        let mut both = bytes;
        both[0] = b'X';
        both[7] = 9;
        assert_eq!(parse(&both), Err((Magic, 0)));
        assert_eq!(with(8, &64u32.to_be_bytes()).map(|h| h.chunk_size), Ok(64));
    }

    #[test]
    fn batches_equal_single_chunks_for_every_thread_count() {
        let data: Vec<u8> = (0..(64 * 1024 * 5 + 100)).map(|i| (i * 7) as u8).collect();
        let one = stream(64 * 1024, 1);
        let mut reference = vec![0u8; data.len() + 6 * 32];
        let mut at = 0;
        for (i, piece) in data.chunks(64 * 1024).enumerate() {
            let n = one.seal_batch(i as u64, i == 5, piece, &mut reference[at..]).unwrap();
            at += n;
        }
        assert_eq!(at, reference.len());
        for threads in [1, 2, 3, 0] {
            let s = stream(64 * 1024, threads);
            let mut out = vec![0u8; reference.len()];
            assert_eq!(s.seal_batch(0, true, &data, &mut out), Ok(reference.len()));
            assert_eq!(out, reference);
            let mut plain = vec![0u8; data.len()];
            assert_eq!(s.open_batch(0, true, &out, &mut plain), Ok(data.len()));
            assert_eq!(plain, data);
            // Not the end of the stream: the final chunk fails; nothing is left.
            let mut plain = vec![0xAAu8; data.len()];
            let cut = 5 * (64 * 1024 + 32);
            assert_eq!(s.open_batch(0, true, &out[..cut], &mut plain[..5 * 65536]), Err(Error::DecryptionFailed));
            assert!(plain[..5 * 65536].iter().all(|&b| b == 0));
            assert_eq!(s.open_batch(0, false, &out[..cut], &mut plain), Ok(5 * 65536));
        }
    }

    #[test]
    fn empty_and_shape_rules() {
        let s = stream(64, 1);
        let mut out = [0u8; 32];
        assert_eq!(s.seal_batch(0, true, &[], &mut out), Ok(32));
        assert_eq!(s.open_batch(0, true, &out, &mut []), Ok(0));
        assert_eq!(s.seal_batch(1, true, &[], &mut out), Err(Error::InvalidArgument));
        assert_eq!(s.open_batch(1, true, &out, &mut []), Err(Error::DecryptionFailed));
        assert_eq!(s.seal_batch(0, false, &[0; 10], &mut [0; 100]), Err(Error::InvalidArgument));
        assert_eq!(s.open_batch(0, true, &out[..31], &mut []), Err(Error::DecryptionFailed));
        assert_eq!(s.seal_batch(u64::MAX, false, &[0; 128], &mut [0; 200]), Err(Error::InvalidArgument));
        assert_eq!(s.seal_batch(u64::MAX, true, &[0; 64], &mut [0; 96]), Ok(96));
    }
}
