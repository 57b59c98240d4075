//! The C ABI of the key-derivation function: `cb3_argon2id`, its constants,
//! and the fault detail it shares with the passphrase header functions.

use std::ffi::{c_int, c_void};

use cb3_core::kdf::{self, Failure, Field, Params};

use crate::buffers::{disjoint, store, Raw};
use crate::errors::{cb3_result, ffi_boundary_with_key, Cb3Result};
use crate::hash::cb3_interrupt;

/// The fewest salt bytes `cb3_argon2id` and the passphrase header accept.
pub const CB3_ARGON2ID_MIN_SALT_SIZE: usize = 16;
const _: () = assert!(CB3_ARGON2ID_MIN_SALT_SIZE == kdf::MIN_SALT_LEN);

/// The most salt bytes accepted.
pub const CB3_ARGON2ID_MAX_SALT_SIZE: usize = 64;
const _: () = assert!(CB3_ARGON2ID_MAX_SALT_SIZE == kdf::MAX_SALT_LEN);

/// The shortest output (Argon2's minimum tag length).
pub const CB3_ARGON2ID_MIN_OUTPUT_SIZE: usize = 4;
const _: () = assert!(CB3_ARGON2ID_MIN_OUTPUT_SIZE == kdf::MIN_HASH_LEN);

/// The most lanes accepted.
pub const CB3_ARGON2ID_MAX_PARALLELISM: u32 = 255;
const _: () = assert!(CB3_ARGON2ID_MAX_PARALLELISM == kdf::MAX_PARALLELISM);

/// The passes cb3 uses when encrypting unless asked for more (RFC 9106's
/// second recommended option).
pub const CB3_ARGON2ID_DEFAULT_TIME_COST: u32 = 3;
const _: () = assert!(CB3_ARGON2ID_DEFAULT_TIME_COST == Params::DEFAULT.time_cost);

/// The memory cb3 uses when encrypting, in KiB (64 MiB).
pub const CB3_ARGON2ID_DEFAULT_MEMORY_COST: u32 = 65536;
const _: () = assert!(CB3_ARGON2ID_DEFAULT_MEMORY_COST == Params::DEFAULT.memory_cost);

/// The lanes cb3 uses when encrypting.
pub const CB3_ARGON2ID_DEFAULT_PARALLELISM: u32 = 4;
const _: () = assert!(CB3_ARGON2ID_DEFAULT_PARALLELISM == Params::DEFAULT.parallelism);

/// The input or header field a `cb3_passphrase_fault` names.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cb3_passphrase_field {
    /// No one field: the failure's code says it all.
    None = 0,
    /// The passphrase is empty.
    Passphrase = 1,
    /// The salt's length.
    Salt = 2,
    /// `time_cost` (passes).
    TimeCost = 3,
    /// `memory_cost` (KiB).
    MemoryCost = 4,
    /// `parallelism` (lanes).
    Parallelism = 5,
    /// The output length.
    OutputLength = 6,
    /// The header's magic (value: its first 8 bytes, big-endian).
    Magic = 7,
    /// The header's version byte.
    Version = 8,
    /// The header's purpose byte (`CB3_PASSPHRASE_PURPOSE_*`).
    Purpose = 9,
    /// The header's KDF byte.
    Kdf = 10,
    /// The header's length.
    HeaderLength = 11,
}

/// The error detail of `cb3_argon2id` and the `cb3_passphrase_*`
/// functions: which field is to blame, the value found and the limit it
/// broke (the minimum for a value below its range, the maximum or reader
/// limit for one above it, the expected value for a field with one valid
/// value; 0 where there is none: an unknown purpose, the magic, a memory
/// size that could not be allocated). Written on every failure (with
/// `CB3_PASSPHRASE_FIELD_NONE` when no one field is to blame).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct cb3_passphrase_fault {
    pub field: cb3_passphrase_field,
    pub value: u64,
    pub limit: u64,
}

impl cb3_passphrase_fault {
    pub(crate) fn of(failure: &Failure) -> Self {
        let Some(fault) = failure.fault else {
            return cb3_passphrase_fault { field: cb3_passphrase_field::None, value: 0, limit: 0 };
        };
        let field = match fault.field {
            Field::Passphrase => cb3_passphrase_field::Passphrase,
            Field::Salt => cb3_passphrase_field::Salt,
            Field::TimeCost => cb3_passphrase_field::TimeCost,
            Field::MemoryCost => cb3_passphrase_field::MemoryCost,
            Field::Parallelism => cb3_passphrase_field::Parallelism,
            Field::HashLength => cb3_passphrase_field::OutputLength,
            Field::Magic => cb3_passphrase_field::Magic,
            Field::Version => cb3_passphrase_field::Version,
            Field::Purpose => cb3_passphrase_field::Purpose,
            Field::Kdf => cb3_passphrase_field::Kdf,
            Field::HeaderLength => cb3_passphrase_field::HeaderLength,
        };
        cb3_passphrase_fault { field, value: fault.value, limit: fault.limit }
    }
}

/// Maps an engine failure to its code, storing its detail in `fault_out`.
///
/// # Safety
/// `fault_out` is NULL or valid for a write.
pub(crate) unsafe fn failed(failure: Failure, fault_out: *mut cb3_passphrase_fault) -> cb3_result {
    // SAFETY: the caller's contract.
    unsafe { store(fault_out, cb3_passphrase_fault::of(&failure)) };
    failure.error.into()
}

/// The engine's stop check from a C interrupt callback: None without one.
pub(crate) struct Stop {
    interrupt: cb3_interrupt,
    arg: *mut c_void,
}

impl Stop {
    pub(crate) fn new(interrupt: cb3_interrupt, arg: *mut c_void) -> Self {
        Stop { interrupt, arg }
    }

    /// Calls `f` with the check (None when there is no callback).
    pub(crate) fn with<R>(&self, f: impl FnOnce(Option<&mut dyn FnMut() -> bool>) -> R) -> R {
        match self.interrupt {
            None => f(None),
            Some(callback) => {
                // SAFETY: the caller's callback and its argument, called on
                // the calling thread as documented.
                let mut ask = || unsafe { callback(self.arg) } != (0 as c_int);
                f(Some(&mut ask))
            }
        }
    }
}

/// Argon2id (RFC 9106, version 0x13, no secret, no associated data) of
/// `password` and `salt` into `out`, whose length is the output length:
/// argon2-cffi's `hash_secret_raw(..., type=Type.ID)`.
///
/// - `password`, `password_len`: any bytes, empty allowed (NULL only if
///   `password_len` is 0).
/// - `salt`, `salt_len`: `CB3_ARGON2ID_MIN_SALT_SIZE` (16) to
///   `CB3_ARGON2ID_MAX_SALT_SIZE` (64) bytes: random, fresh for each
///   password.
/// - `time_cost`: passes, at least 1. `memory_cost`: KiB, at least 8 *
///   `parallelism`. `parallelism`: lanes, 1 to 255 (they run on cb3's
///   thread pool, as many at once as there are cores).
/// - `interrupt`, `interrupt_arg`: as for `cb3_blake3_update_file`: called
///   on the calling thread about every 20 ms while the derivation runs; when
///   it returns non-zero the function returns `CB3_RESULT_INTERRUPTED` at
///   once (the derivation finishes on the pool and wipes its memory unseen).
///   May be NULL.
/// - `out`, `out_len`: the output, at least `CB3_ARGON2ID_MIN_OUTPUT_SIZE`
///   (4) bytes. Not NULL. May not overlap the inputs.
/// - `fault_out`: the error detail (see `cb3_passphrase_fault`). May be NULL.
///
/// The memory (`memory_cost` KiB) is allocated for the call, zeroed before
/// it is freed; so are the private copies of the password and the output.
///
/// Returns `CB3_RESULT_OK`, or `CB3_RESULT_INVALID_ARGUMENT` (a parameter
/// or length out of range: `*fault_out` names it), `CB3_RESULT_OUT_OF_MEMORY`
/// (the memory could not be allocated), `CB3_RESULT_INTERRUPTED`,
/// `CB3_RESULT_NULL_PARAMETER`, `CB3_RESULT_OVERLAPPING_BUFFERS`. On failure
/// nothing is written but `*fault_out`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cb3_argon2id(
    password: *const u8,
    password_len: usize,
    salt: *const u8,
    salt_len: usize,
    time_cost: u32,
    memory_cost: u32,
    parallelism: u32,
    interrupt: cb3_interrupt,
    interrupt_arg: *mut c_void,
    out: *mut u8,
    out_len: usize,
    fault_out: *mut cb3_passphrase_fault,
) -> cb3_result {
    ffi_boundary_with_key(|| {
        let (password, salt) = (Raw::new(password, password_len)?, Raw::new(salt, salt_len)?);
        let out = Raw::output(out, out_len, out_len)?;
        disjoint(&out, &[password, salt])?;
        let params = Params { time_cost, memory_cost, parallelism };
        // SAFETY (every raw pointer): the C caller's contract, each pointer
        // valid for its length for the call; `out` writable, not NULL,
        // disjoint from the inputs (checked).
        let (password, salt, out) = unsafe { (password.as_slice(), salt.as_slice(), out.as_mut_slice()) };
        let stop = Stop::new(interrupt, interrupt_arg);
        let done: Cb3Result<()> = stop.with(|stop| kdf::argon2id(password, salt, &params, out, stop))
            // SAFETY: `fault_out` is NULL or valid for a write (the contract).
            .map_err(|failure| unsafe { failed(failure, fault_out) });
        done
    })
}
