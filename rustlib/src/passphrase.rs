//! The C ABI of the passphrase header: `cb3_passphrase_*` (the codec and
//! the key wrap are the engine's, `cb3_core::passphrase`).

use std::ffi::c_void;

use cb3_core::kdf::{Failure, Field, Params};
use cb3_core::passphrase::{self, Limits, Purpose};

use crate::buffers::{disjoint, store, Raw};
use crate::errors::{cb3_result, ffi_boundary, ffi_boundary_with_key, Cb3Result};
use crate::hash::cb3_interrupt;
use crate::kdf::{cb3_passphrase_fault, failed, Stop};

/// The bytes of a passphrase header before its salt (magic, version,
/// purpose, KDF, parameters, salt length): enough for
/// `cb3_passphrase_header_size`.
pub const CB3_PASSPHRASE_PREFIX_SIZE: usize = 20;
const _: () = assert!(CB3_PASSPHRASE_PREFIX_SIZE == passphrase::PREFIX_SIZE);

/// The size of a header with cb3's 16-byte salt: 100 bytes.
pub const CB3_PASSPHRASE_HEADER_SIZE: usize = 100;
const _: () = assert!(CB3_PASSPHRASE_HEADER_SIZE == passphrase::HEADER_SIZE);

/// The largest header (a 64-byte salt): 148 bytes.
pub const CB3_PASSPHRASE_MAX_HEADER_SIZE: usize = 148;
const _: () = assert!(CB3_PASSPHRASE_MAX_HEADER_SIZE == passphrase::MAX_HEADER_SIZE);

/// The salt length cb3 writes.
pub const CB3_PASSPHRASE_SALT_SIZE: usize = 16;
const _: () = assert!(CB3_PASSPHRASE_SALT_SIZE == passphrase::SALT_SIZE);

/// The format version written and read (header byte 7).
pub const CB3_PASSPHRASE_VERSION: u8 = 1;
const _: () = assert!(CB3_PASSPHRASE_VERSION == passphrase::VERSION);

/// Header purpose: an encrypted file (a chunked stream follows the header).
pub const CB3_PASSPHRASE_PURPOSE_FILE: u32 = 1;
const _: () = assert!(CB3_PASSPHRASE_PURPOSE_FILE == Purpose::File as u32);

/// Header purpose: a key file (the header alone).
pub const CB3_PASSPHRASE_PURPOSE_KEY_FILE: u32 = 2;
const _: () = assert!(CB3_PASSPHRASE_PURPOSE_KEY_FILE == Purpose::KeyFile as u32);

/// The reader's default limit on `time_cost`.
pub const CB3_PASSPHRASE_MAX_TIME_COST: u32 = 10;
const _: () = assert!(CB3_PASSPHRASE_MAX_TIME_COST == Limits::DEFAULT.max_time_cost);

/// The reader's default limit on `memory_cost`, in KiB (2 GiB).
pub const CB3_PASSPHRASE_MAX_MEMORY_COST: u32 = 2097152;
const _: () = assert!(CB3_PASSPHRASE_MAX_MEMORY_COST == Limits::DEFAULT.max_memory_cost);

/// The reader's default limit on `parallelism`.
pub const CB3_PASSPHRASE_MAX_PARALLELISM: u32 = 64;
const _: () = assert!(CB3_PASSPHRASE_MAX_PARALLELISM == Limits::DEFAULT.max_parallelism);

/// The most a reader accepts from a header (`cb3_passphrase_open`); a
/// header above any of them is refused before anything is allocated. The
/// defaults are `CB3_PASSPHRASE_MAX_*`; raise one to read a header made
/// with stronger parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct cb3_passphrase_limits {
    pub max_time_cost: u32,
    /// KiB.
    pub max_memory_cost: u32,
    pub max_parallelism: u32,
}

/// The purpose argument, or `CB3_RESULT_INVALID_ARGUMENT` naming it.
///
/// # Safety
/// `fault_out` is NULL or valid for a write.
unsafe fn purpose(value: u32, fault_out: *mut cb3_passphrase_fault) -> Cb3Result<Purpose> {
    u8::try_from(value).ok().and_then(Purpose::from_byte).ok_or_else(|| {
        // SAFETY: the caller's contract.
        unsafe { failed(Failure::invalid(Field::Purpose, value.into(), 0), fault_out) }
    })
}

/// The whole length of the passphrase header that starts with `prefix`
/// (at least `CB3_PASSPHRASE_PREFIX_SIZE`, 20, bytes; more may follow):
/// 84 + the salt length, from 100 to `CB3_PASSPHRASE_MAX_HEADER_SIZE`.
///
/// - `prefix`, `prefix_len`: the first bytes of the file. Not NULL.
/// - `size_out`: receives the length. Not NULL.
/// - `fault_out`: the error detail (which field, see
///   `cb3_passphrase_fault`). May be NULL.
///
/// Returns `CB3_RESULT_OK`, `CB3_RESULT_INVALID_HEADER` (shorter than 20
/// bytes, not the magic "CB3PASS", another version, or a salt length out of
/// range: not a passphrase header this library reads; `*fault_out` names the
/// field) or `CB3_RESULT_NULL_PARAMETER`. On failure nothing is written but
/// `*fault_out`.
#[no_mangle]
pub unsafe extern "C" fn cb3_passphrase_header_size(
    prefix: *const u8,
    prefix_len: usize,
    size_out: *mut usize,
    fault_out: *mut cb3_passphrase_fault,
) -> cb3_result {
    ffi_boundary(|| {
        if prefix.is_null() || size_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        // SAFETY: the C caller's contract: `prefix_len` readable bytes.
        let prefix = unsafe { Raw::new(prefix, prefix_len)?.as_slice() };
        // SAFETY: `fault_out` is NULL or valid for a write (the contract).
        let size = passphrase::header_size(prefix).map_err(|failure| unsafe { failed(failure, fault_out) })?;
        // SAFETY: not NULL (checked), valid for a write (the contract).
        unsafe { store(size_out, size) };
        Ok(())
    })
}

/// Writes the passphrase header that wraps `key` under `passphrase`: the
/// KDF's parameters and `salt`, and the key encrypted with ChaCha20-BLAKE3
/// under Argon2id(passphrase, salt) with the header as associated data
/// (docs/passphrase-format.md has the byte layout).
///
/// - `passphrase`, `passphrase_len`: the passphrase's bytes, not empty.
///   (cb3's Python binding passes text as NFC-normalised UTF-8.)
/// - `key`, `key_len`: the 32-byte key to wrap. Not NULL.
/// - `purpose`: `CB3_PASSPHRASE_PURPOSE_FILE` or `..._KEY_FILE`.
/// - `time_cost`, `memory_cost`, `parallelism`: as for `cb3_argon2id`
///   (`CB3_ARGON2ID_DEFAULT_*` unless you want stronger ones).
/// - `salt`, `salt_len`: 16 to 64 fresh random bytes
///   (`CB3_PASSPHRASE_SALT_SIZE`). Not NULL.
/// - `interrupt`, `interrupt_arg`: as for `cb3_argon2id`. May be NULL.
/// - `out`, `out_len`: at least 84 + `salt_len` bytes. Not NULL.
/// - `out_n`: receives the header's length. May be NULL.
/// - `fault_out`: the error detail. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or `CB3_RESULT_INVALID_ARGUMENT` (an empty
/// passphrase, a parameter or salt length out of range: `*fault_out` names
/// it; or an unknown purpose), `CB3_RESULT_INVALID_KEY_LENGTH`,
/// `CB3_RESULT_INSUFFICIENT_SIZE`, `CB3_RESULT_OUT_OF_MEMORY`,
/// `CB3_RESULT_INTERRUPTED`, `CB3_RESULT_NULL_PARAMETER`,
/// `CB3_RESULT_OVERLAPPING_BUFFERS`. On failure nothing is written but
/// `*fault_out`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cb3_passphrase_seal(
    passphrase: *const u8,
    passphrase_len: usize,
    key: *const u8,
    key_len: usize,
    purpose: u32,
    time_cost: u32,
    memory_cost: u32,
    parallelism: u32,
    salt: *const u8,
    salt_len: usize,
    interrupt: cb3_interrupt,
    interrupt_arg: *mut c_void,
    out: *mut u8,
    out_len: usize,
    out_n: *mut usize,
    fault_out: *mut cb3_passphrase_fault,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        if key.is_null() || salt.is_null() || out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        // SAFETY: `fault_out` is NULL or valid for a write (the contract).
        let purpose = unsafe { self::purpose(purpose, fault_out) }?;
        let inputs = [Raw::new(passphrase, passphrase_len)?, Raw::new(key, key_len)?, Raw::new(salt, salt_len)?];
        let out = Raw::new(out, out_len)?;
        disjoint(&out, &inputs)?;
        // SAFETY (every raw pointer): the C caller's contract, each pointer
        // valid for its length for the call; `out` writable, not NULL,
        // disjoint from the inputs (checked).
        let [passphrase, key, salt] = inputs.map(|raw| unsafe { raw.as_slice() });
        // SAFETY: as above.
        let out = unsafe { Raw::output(out.ptr as *mut u8, out_len, out_len)?.as_mut_slice() };
        let params = Params { time_cost, memory_cost, parallelism };
        let stop = Stop::new(interrupt, interrupt_arg);
        let written = stop
            .with(|stop| passphrase::seal(passphrase, key, purpose, &params, salt, out, stop))
            // SAFETY: `fault_out` is NULL or valid for a write (the contract).
            .map_err(|failure| unsafe { failed(failure, fault_out) })?;
        // SAFETY: `out_n` is NULL or valid for a write (the contract).
        unsafe { store(out_n, written) };
        Ok(())
    })
}

/// Unwraps the 32-byte key of a passphrase header.
///
/// The header's structure and purpose are checked, then `limits`, all
/// before anything is allocated; then Argon2id runs with the header's
/// parameters and the key is decrypted and verified.
///
/// - `header`, `header_len`: exactly one header (its length from
///   `cb3_passphrase_header_size`). Not NULL.
/// - `passphrase`, `passphrase_len`: not empty.
/// - `purpose`: the purpose expected (`CB3_PASSPHRASE_PURPOSE_*`).
/// - `limits`: the reader's limits; NULL for the defaults
///   (`CB3_PASSPHRASE_MAX_*`).
/// - `interrupt`, `interrupt_arg`: as for `cb3_argon2id`. May be NULL.
/// - `key_out`, `key_out_len`: exactly 32 bytes. Not NULL.
/// - `fault_out`: the error detail. May be NULL.
///
/// Returns `CB3_RESULT_OK`, or:
/// - `CB3_RESULT_DECRYPTION_FAILED`: a wrong passphrase, or a modified
///   header (every byte is authenticated).
/// - `CB3_RESULT_LIMIT_EXCEEDED`: a parameter above `limits` (`*fault_out`
///   names it, its value and the limit).
/// - `CB3_RESULT_INVALID_HEADER`: not a header this library reads, or one
///   of another purpose (`*fault_out` names the field).
/// - `CB3_RESULT_INVALID_ARGUMENT` (an empty passphrase, an unknown
///   purpose), `CB3_RESULT_INVALID_KEY_LENGTH` (`key_out_len` is not 32),
///   `CB3_RESULT_OUT_OF_MEMORY`, `CB3_RESULT_INTERRUPTED`,
///   `CB3_RESULT_NULL_PARAMETER`, `CB3_RESULT_OVERLAPPING_BUFFERS`.
///
/// On failure nothing is written but `*fault_out`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cb3_passphrase_open(
    header: *const u8,
    header_len: usize,
    passphrase: *const u8,
    passphrase_len: usize,
    purpose: u32,
    limits: *const cb3_passphrase_limits,
    interrupt: cb3_interrupt,
    interrupt_arg: *mut c_void,
    key_out: *mut u8,
    key_out_len: usize,
    fault_out: *mut cb3_passphrase_fault,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        if header.is_null() || key_out.is_null() {
            return Err(cb3_result::NullParameter);
        }
        // SAFETY: `fault_out` is NULL or valid for a write (the contract).
        let purpose = unsafe { self::purpose(purpose, fault_out) }?;
        let limits = if limits.is_null() {
            Limits::DEFAULT
        } else {
            // SAFETY: the contract: a valid `cb3_passphrase_limits` (plain integers).
            let limits = unsafe { limits.read() };
            Limits {
                max_time_cost: limits.max_time_cost,
                max_memory_cost: limits.max_memory_cost,
                max_parallelism: limits.max_parallelism,
            }
        };
        let inputs = [Raw::new(header, header_len)?, Raw::new(passphrase, passphrase_len)?];
        let key = Raw::new(key_out, key_out_len)?;
        disjoint(&key, &inputs)?;
        // SAFETY (every raw pointer): the C caller's contract, each pointer
        // valid for its length for the call; `key_out` writable, not NULL,
        // disjoint from the inputs (checked).
        let [header, passphrase] = inputs.map(|raw| unsafe { raw.as_slice() });
        // SAFETY: as above.
        let key = unsafe { key.as_mut_slice() };
        let stop = Stop::new(interrupt, interrupt_arg);
        let done: Cb3Result<()> = stop
            .with(|stop| passphrase::open(header, passphrase, purpose, &limits, key, stop))
            // SAFETY: `fault_out` is NULL or valid for a write (the contract).
            .map_err(|failure| unsafe { failed(failure, fault_out) });
        done
    })
}
