//! The C ABI of the chunked file format: the `cb3_chunked_*` functions.

use cb3_core::chunked::{check_chunk_size, Chunked, Header, HeaderFault, HeaderRule};
use crate::buffers::{disjoint, fixed, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_or, ffi_boundary_with_key, Cb3Result};
use crate::object::{self, Object};

/// Bytes of the stream header: magic (7), version (1), chunk size (4, big
/// endian), nonce prefix (15).
pub const CB3_CHUNKED_HEADER_SIZE: usize = 27;
const _: () = assert!(CB3_CHUNKED_HEADER_SIZE == cb3_core::chunked::HEADER_SIZE);

/// Bytes of the random nonce prefix in the header (the rest of each 24-byte
/// nonce is the 8-byte big-endian chunk index and the 1-byte last flag).
pub const CB3_CHUNKED_PREFIX_SIZE: usize = 15;
const _: () = assert!(CB3_CHUNKED_PREFIX_SIZE == cb3_core::chunked::PREFIX_SIZE);

/// The format version this library writes and reads (header byte 7).
pub const CB3_CHUNKED_VERSION: u8 = 1;
const _: () = assert!(CB3_CHUNKED_VERSION == cb3_core::chunked::VERSION);

/// The chunk size (plaintext bytes per chunk) cb3 writes by default: 64 KiB.
pub const CB3_CHUNKED_DEFAULT_CHUNK_SIZE: u32 = 65536;
const _: () = assert!(CB3_CHUNKED_DEFAULT_CHUNK_SIZE == cb3_core::chunked::DEFAULT_CHUNK_SIZE);

/// The smallest chunk size a header may give.
pub const CB3_CHUNKED_MIN_CHUNK_SIZE: u32 = 64;
const _: () = assert!(CB3_CHUNKED_MIN_CHUNK_SIZE == cb3_core::chunked::MIN_CHUNK_SIZE);

/// The largest chunk size a header may give (16 MiB): a reader never needs
/// more than this plus `CB3_TAG_SIZE` bytes of buffer per chunk.
pub const CB3_CHUNKED_MAX_CHUNK_SIZE: u32 = 1 << 24;
const _: () = assert!(CB3_CHUNKED_MAX_CHUNK_SIZE == cb3_core::chunked::MAX_CHUNK_SIZE);

/// One stream's key, header and associated data, for sealing or opening its
/// chunks.
///
/// Opaque: create with `cb3_chunked_new`, release with `cb3_chunked_free`
/// (which wipes the key). Immutable after creation: any number of threads may
/// seal or open chunks of the same stream at once, as long as none frees it
/// meanwhile. Only the process that made it may seal with it (in a `fork()`
/// child `cb3_chunked_seal` returns `CB3_RESULT_FORKED`); any may open.
pub struct cb3_chunked {
    chunked: Chunked,
}

impl cb3_chunked {
    fn seal_batch(&self, first: u64, last: bool, input: &[u8], out: &mut [u8]) -> Cb3Result<usize> {
        Ok(self.chunked.seal_batch(first, last, input, out)?)
    }

    fn open_batch(&self, first: u64, last: bool, input: &[u8], out: &mut [u8]) -> Cb3Result<usize> {
        Ok(self.chunked.open_batch(first, last, input, out)?)
    }
}

impl Object for cb3_chunked {
    const MAGIC: u64 = u64::from_le_bytes(*b"cb3:chnk");
    const NAME: &'static str = "cb3_chunked";
}

/// A rule of the stream header, in the order they are checked.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_chunked_header_rule {
    /// The header is `CB3_CHUNKED_HEADER_SIZE` (27) bytes.
    Length = 1,
    /// It starts with the magic "CB3STRM".
    Magic = 2,
    /// Byte 7 is `CB3_CHUNKED_VERSION`.
    Version = 3,
    /// The chunk size is within `CB3_CHUNKED_MIN_CHUNK_SIZE` ..
    /// `CB3_CHUNKED_MAX_CHUNK_SIZE`.
    ChunkSize = 4,
}

/// Why `cb3_chunked_header_decode` refused a header: its error detail with
/// `CB3_RESULT_INVALID_HEADER`, so that a caller can say what is wrong.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct cb3_chunked_header_fault {
    /// The first rule the header breaks.
    pub rule: cb3_chunked_header_rule,
    /// The value that breaks it: the length given (`..._LENGTH`), the
    /// version byte (`..._VERSION`), the chunk size (`..._CHUNK_SIZE`); 0
    /// for `..._MAGIC`.
    pub value: u64,
}

impl From<HeaderFault> for cb3_chunked_header_fault {
    fn from(fault: HeaderFault) -> Self {
        let rule = match fault.rule {
            HeaderRule::Length => cb3_chunked_header_rule::Length,
            HeaderRule::Magic => cb3_chunked_header_rule::Magic,
            HeaderRule::Version => cb3_chunked_header_rule::Version,
            HeaderRule::ChunkSize => cb3_chunked_header_rule::ChunkSize,
        };
        cb3_chunked_header_fault { rule, value: fault.value }
    }
}

fn flag(last: u32) -> Cb3Result<bool> {
    match last {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(cb3_result::InvalidArgument),
    }
}

/// Writes a stream header (`CB3_CHUNKED_HEADER_SIZE`, 27 bytes) to `out`.
///
/// - `nonce_prefix`, `nonce_prefix_len`: exactly `CB3_CHUNKED_PREFIX_SIZE`
///   (15) bytes, fresh random bytes for every stream (never reuse a prefix
///   with the same key). Not NULL.
/// - `chunk_size`: plaintext bytes per chunk, from
///   `CB3_CHUNKED_MIN_CHUNK_SIZE` to `CB3_CHUNKED_MAX_CHUNK_SIZE`
///   (`CB3_CHUNKED_DEFAULT_CHUNK_SIZE` unless you have a reason).
/// - `out`, `out_len`: at least `CB3_CHUNKED_HEADER_SIZE` bytes. Not NULL.
///
/// Returns `CB3_RESULT_OK`, or `CB3_RESULT_NULL_PARAMETER`,
/// `CB3_RESULT_INVALID_NONCE_LENGTH` (prefix not 15 bytes),
/// `CB3_RESULT_INVALID_ARGUMENT` (chunk size out of range),
/// `CB3_RESULT_INSUFFICIENT_SIZE` or `CB3_RESULT_OVERLAPPING_BUFFERS`.
/// On failure nothing is written.
#[no_mangle]
pub unsafe extern "C" fn cb3_chunked_header_encode(
    nonce_prefix: *const u8,
    nonce_prefix_len: usize,
    chunk_size: u32,
    out: *mut u8,
    out_len: usize,
) -> cb3_result {
    ffi_boundary(|| {
        // SAFETY (every raw pointer of an exported function): the C caller's
        // contract in cb3.h, each pointer valid for its length for the call.
        let prefix =
            unsafe { fixed::<CB3_CHUNKED_PREFIX_SIZE>(nonce_prefix, nonce_prefix_len, cb3_result::InvalidNonceLength) }?;
        check_chunk_size(chunk_size)?;
        let out = Raw::output(out, out_len, CB3_CHUNKED_HEADER_SIZE)?;
        disjoint(&out, &[Raw::new(nonce_prefix, nonce_prefix_len)?])?;
        let header = Header { chunk_size, nonce_prefix: *prefix }.encode();
        // SAFETY: the contract: `out_len` (checked >= 27) writable bytes at
        // `out`, not NULL, disjoint from the prefix (checked).
        let out = unsafe { out.as_mut_slice() };
        out.copy_from_slice(&header);
        Ok(())
    })
}

/// Parses a stream header: checks the magic, the version and the chunk
/// size, and returns the chunk size and the nonce prefix.
///
/// - `header`, `header_len`: exactly `CB3_CHUNKED_HEADER_SIZE` (27) bytes,
///   the first bytes of the stream. Not NULL.
/// - `nonce_prefix_out`, `nonce_prefix_out_len`: receives the 15-byte nonce
///   prefix; at least `CB3_CHUNKED_PREFIX_SIZE` bytes. May be NULL (then
///   `nonce_prefix_out_len` must be 0) if the prefix is not wanted.
/// - `chunk_size_out`: receives the chunk size. May be NULL.
/// - `fault_out`: an error detail, written only with
///   `CB3_RESULT_INVALID_HEADER`: which rule the header breaks, and the
///   value that breaks it. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_INVALID_HEADER`: not a cb3 stream header: wrong length,
///   magic or version, or a chunk size out of range (`*fault_out` says
///   which). (The header is not authenticated until a chunk opens: a
///   modified prefix or chunk size that is still in range is caught by
///   `cb3_chunked_open`.)
/// - `CB3_RESULT_NULL_PARAMETER`, `CB3_RESULT_INSUFFICIENT_SIZE`,
///   `CB3_RESULT_OVERLAPPING_BUFFERS`.
///
/// On failure nothing is written but `*fault_out`.
#[no_mangle]
pub unsafe extern "C" fn cb3_chunked_header_decode(
    header: *const u8,
    header_len: usize,
    nonce_prefix_out: *mut u8,
    nonce_prefix_out_len: usize,
    chunk_size_out: *mut u32,
    fault_out: *mut cb3_chunked_header_fault,
) -> cb3_result {
    ffi_boundary(|| {
        if header.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let input = Raw::new(header, header_len)?;
        // SAFETY: the C caller's contract: `header_len` readable bytes at
        // `header`, not NULL.
        let parsed = Header::parse(unsafe { input.as_slice() }).map_err(|fault| {
            // SAFETY: the contract: `fault_out` is NULL or valid for a write.
            unsafe { store(fault_out, cb3_chunked_header_fault::from(fault)) };
            cb3_result::InvalidHeader
        })?;
        let prefix_out = Raw::new(nonce_prefix_out, nonce_prefix_out_len)?;
        if !nonce_prefix_out.is_null() {
            if nonce_prefix_out_len < CB3_CHUNKED_PREFIX_SIZE {
                return Err(cb3_result::InsufficientSize);
            }
            disjoint(&prefix_out, &[input])?;
            // SAFETY: the contract: `nonce_prefix_out_len` (checked >= 15)
            // writable bytes, not NULL, disjoint from the header (checked).
            let prefix = unsafe { prefix_out.as_mut_slice() };
            prefix[..CB3_CHUNKED_PREFIX_SIZE].copy_from_slice(&parsed.nonce_prefix);
        }
        // SAFETY: the contract: `chunk_size_out` is NULL or valid for a write.
        unsafe { store(chunk_size_out, parsed.chunk_size) };
        Ok(())
    })
}

/// Creates the object that seals and opens the chunks of one stream.
///
/// - `key`, `key_len`: exactly `CB3_KEY_SIZE` (32) bytes. Not NULL. Copied.
/// - `header`, `header_len`: the stream's header (`cb3_chunked_header_encode`
///   for a new stream; the first 27 bytes of a stream being read). Not
///   NULL. It gives the chunk size and nonce prefix and is authenticated
///   with every chunk: the object keeps these exact bytes, which is why it
///   takes the header and not its parsed fields, and parses them with
///   `cb3_chunked_header_decode`'s parser.
/// - `aad`, `aad_len`: the caller's associated data, authenticated with
///   every chunk after the header. NULL only if `aad_len` is 0. Copied.
/// - `max_threads`: threads for a batch of chunks (0 = one per core, 1 = the
///   calling thread only). Batches under 128 KiB stay on the calling thread.
/// - `chunked_out`: receives the new object. Not NULL. Release it with
///   `cb3_chunked_free`.
///
/// Returns `CB3_RESULT_OK`, or `CB3_RESULT_NULL_PARAMETER`,
/// `CB3_RESULT_INVALID_KEY_LENGTH`, `CB3_RESULT_INVALID_HEADER` (not a valid
/// header, see `cb3_chunked_header_decode`) or `CB3_RESULT_INVALID_ARGUMENT`
/// (a length above `PTRDIFF_MAX`). On failure `*chunked_out` is not written and nothing is
/// allocated.
#[no_mangle]
pub unsafe extern "C" fn cb3_chunked_new(
    key: *const u8,
    key_len: usize,
    header: *const u8,
    header_len: usize,
    aad: *const u8,
    aad_len: usize,
    max_threads: usize,
    chunked_out: *mut *mut cb3_chunked,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        // SAFETY (every raw pointer of an exported function): the C caller's
        // contract in cb3.h, each pointer valid for its length for the call.
        let key = unsafe { fixed::<32>(key, key_len, cb3_result::InvalidKeyLength) }?;
        if header.is_null() || chunked_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        // SAFETY: the contract: `header_len` readable bytes, not NULL.
        let header_bytes = unsafe { Raw::new(header, header_len)?.as_slice() };
        // SAFETY: the contract: `aad_len` readable bytes (NULL only if 0).
        let aad = unsafe { Raw::new(aad, aad_len)?.as_slice() };
        let chunked = cb3_chunked { chunked: Chunked::new(key, header_bytes, aad, max_threads)? };
        // SAFETY: `chunked_out` is not NULL and valid for a write (the contract).
        unsafe { object::give(chunked, chunked_out) }
    })
}

/// Wipes the key and frees an object made by `cb3_chunked_new`. `chunked`
/// may be NULL. It must not be used afterwards, by any thread.
#[no_mangle]
pub unsafe extern "C" fn cb3_chunked_free(chunked: *mut cb3_chunked) {
    // SAFETY: the contract above: NULL or a pointer from cb3_chunked_new that
    // no other thread uses.
    ffi_boundary_or((), || unsafe { object::free(chunked) })
}

/// What `cb3_chunked_seal` and `cb3_chunked_open` share: the argument checks
/// in their documented order (`out` may be NULL only when empty and not
/// `out_required`), then `op` on the batch.
///
/// # Safety
/// The contract of those two functions: `chunked` is NULL or from
/// `cb3_chunked_new`; `input` and `out` valid for their lengths (NULL only
/// when empty); `out_n` NULL or valid for a write.
unsafe fn batch_call(
    chunked: *const cb3_chunked,
    first_index: u64,
    last: u32,
    (input, input_len): (*const u8, usize),
    (out, out_len, out_required): (*mut u8, usize, bool),
    out_n: *mut usize,
    (op, sealing): (fn(&cb3_chunked, u64, bool, &[u8], &mut [u8]) -> Cb3Result<usize>, bool),
) -> cb3_result {
    ffi_boundary(|| {
        // Sealing is bound to the process that made the object: a fork()
        // child would seal under the parent's nonce prefix and chunk indices
        // (a two-time pad). Opening has no state to reuse and works anywhere.
        // SAFETY: the C caller's contract (a cb3_chunked pointer or NULL).
        let chunked = unsafe { object::get_bound(chunked, sealing) }?;
        let last = flag(last)?;
        let input = Raw::new(input, input_len)?;
        if out_required && out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        let output = Raw::new(out, out_len)?;
        disjoint(&output, &[input])?;
        // SAFETY: the contract: `input_len` readable bytes at `input` and
        // `out_len` writable bytes at `out`, which do not overlap (checked).
        let (input, output) = unsafe { (input.as_slice(), output.as_mut_slice()) };
        let written = op(chunked, first_index, last, input, output)?;
        // SAFETY: the contract: `out_n` is NULL or valid for a write.
        unsafe { store(out_n, written) };
        Ok(())
    })
}

/// Encrypts a batch of consecutive chunks: `plaintext` is cut into pieces of
/// the header's chunk size, and piece `k` becomes chunk `first_index + k`:
/// its ciphertext followed by its 32-byte tag, written one after the other
/// to `out`, exactly as they appear in the stream after the header.
///
/// - `chunked`: from `cb3_chunked_new`. Not NULL.
/// - `first_index`: the index of the batch's first chunk (0 for the chunk
///   right after the header).
/// - `last`: 1 if the batch ends with the final chunk of the stream, else 0.
///   With 0, `plaintext_len` must be a positive multiple of the chunk size;
///   with 1 the final piece may be shorter, and `plaintext_len` may be 0
///   only when `first_index` is 0 (an empty stream is one empty final chunk;
///   a stream whose length is a multiple of the chunk size ends with a full
///   final chunk, never an empty one).
/// - `plaintext`, `plaintext_len`: NULL only if `plaintext_len` is 0.
/// - `out`, `out_len`: at least `plaintext_len + n * CB3_TAG_SIZE` bytes,
///   `n` the number of chunks (`ceil(plaintext_len / chunk_size)`, or 1 for
///   an empty stream). Not NULL. May not overlap `plaintext`.
/// - `out_n`: receives the bytes written. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or `CB3_RESULT_NULL_PARAMETER`,
/// `CB3_RESULT_INSUFFICIENT_SIZE`, `CB3_RESULT_OVERLAPPING_BUFFERS`, or
/// `CB3_RESULT_INVALID_ARGUMENT` (a batch shape not allowed above, `last`
/// not 0 or 1, or a chunk index past `UINT64_MAX`), or `CB3_RESULT_FORKED`
/// (the object was made in another process: a `fork()` child would seal
/// under its parent's nonces; make a new object, with a fresh nonce prefix,
/// in the child). On failure nothing is written. Never seal two different
/// batches with the same object and chunk indices.
#[no_mangle]
pub unsafe extern "C" fn cb3_chunked_seal(
    chunked: *const cb3_chunked,
    first_index: u64,
    last: u32,
    plaintext: *const u8,
    plaintext_len: usize,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    // SAFETY: this function's contract is batch_call's.
    unsafe {
        batch_call(chunked, first_index, last, (plaintext, plaintext_len), (out, out_len, true), out_n, (cb3_chunked::seal_batch, true))
    }
}

/// Verifies and decrypts a batch of consecutive chunks: `ciphertext` is cut
/// into pieces of chunk size + `CB3_TAG_SIZE` bytes, and piece `k` is opened
/// as chunk `first_index + k`; the plaintexts are written one after the
/// other to `out`.
///
/// - `chunked`: from `cb3_chunked_new`. Not NULL.
/// - `first_index`: the index of the batch's first chunk.
/// - `last`: 1 if the batch ends at the end of the stream (its final piece
///   is opened as the final chunk), else 0. With 0, `ciphertext_len` must
///   be a positive multiple of chunk size + 32. The caller decides `last`
///   from where its input ends: a stream cut at a chunk boundary then fails
///   here, because its apparent final chunk was sealed as a non-final one.
/// - `ciphertext`, `ciphertext_len`: NULL only if `ciphertext_len` is 0.
/// - `out`, `out_len`: at least `ciphertext_len - n * CB3_TAG_SIZE` bytes,
///   `n` the number of pieces. NULL only if that is 0. May not overlap
///   `ciphertext`.
/// - `out_n`: receives the plaintext bytes written. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_DECRYPTION_FAILED`: a chunk did not verify (wrong key,
///   header or associated data; a modified, reordered, dropped, duplicated
///   or spliced chunk; a stream truncated or extended at this batch), or
///   the final piece is shorter than a tag, or is an empty final chunk at
///   an index other than 0. To find which chunk failed, open the batch one
///   chunk at a time. No plaintext is released: chunks of the batch that
///   did verify are zeroed again in `out`, whose other bytes are untouched.
/// - `CB3_RESULT_NULL_PARAMETER`, `CB3_RESULT_INSUFFICIENT_SIZE`,
///   `CB3_RESULT_OVERLAPPING_BUFFERS`, `CB3_RESULT_INVALID_ARGUMENT` (a
///   batch shape not allowed above, `last` not 0 or 1, a chunk index past
///   `UINT64_MAX`); these write nothing.
#[no_mangle]
pub unsafe extern "C" fn cb3_chunked_open(
    chunked: *const cb3_chunked,
    first_index: u64,
    last: u32,
    ciphertext: *const u8,
    ciphertext_len: usize,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
) -> cb3_result {
    // SAFETY: this function's contract is batch_call's.
    unsafe {
        batch_call(chunked, first_index, last, (ciphertext, ciphertext_len), (out, out_len, false), out_n, (cb3_chunked::open_batch, false))
    }
}
