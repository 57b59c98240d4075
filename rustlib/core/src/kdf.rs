//! Argon2id (RFC 9106, version 0x13) from the `argon2` crate, for
//! passphrases: parameter validation with a fault naming the parameter,
//! memory blocks that cb3 allocates fallibly and wipes, lanes on cb3's
//! thread pool, and a derivation that an interrupt check can stop.
//!
//! Validation (the one owner of these rules; the passphrase header and every
//! binding use it): the salt is `MIN_SALT_LEN..=MAX_SALT_LEN` bytes,
//! `time_cost >= 1`, `parallelism` is `1..=MAX_PARALLELISM`,
//! `memory_cost >= 8 * parallelism` (KiB) and the output is at least
//! `MIN_HASH_LEN` bytes. Nothing is clamped: a value out of range is a
//! [`Failure`] whose [`Fault`] names it.
//!
//! Memory: `memory_cost` KiB (rounded down to a multiple of `4 *
//! parallelism` blocks of 1 KiB, as Argon2 does) are allocated zeroed and
//! fallibly (a size the system refuses is `OutOfMemory`, never an abort), and
//! zeroed before they are freed. The passphrase and output copies the
//! derivation works on are wiped too, and the stacks of the threads that ran
//! it are scrubbed.
//!
//! Threads and interrupts: the derivation runs on cb3's shared pool
//! (`parallel::AUTO_POOL`), whose threads take the lanes of each slice (the
//! crate's `parallel` feature). The calling thread waits, asking `stop` every
//! `hash::INTERRUPT_EVERY`; when `stop` returns true the call returns
//! `Interrupted` at once, and the derivation finishes on the pool and wipes
//! its memory and output unseen (Argon2 has no point at which to stop it).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};

use argon2::{Algorithm, Argon2, Block, Version};
use zeroize::Zeroizing;

use crate::error::Error;
use crate::hash::INTERRUPT_EVERY;
use crate::parallel::AUTO_POOL;

/// The shortest salt accepted (RFC 9106 recommends 16 bytes for passwords).
pub const MIN_SALT_LEN: usize = 16;
/// The longest salt accepted (the `argon2` crate's limit).
pub const MAX_SALT_LEN: usize = 64;
/// The shortest output Argon2 defines.
pub const MIN_HASH_LEN: usize = 4;
/// The longest output (Argon2's tag length is a 32-bit number).
pub const MAX_HASH_LEN: usize = u32::MAX as usize;
/// The most lanes accepted (one byte in the passphrase header).
pub const MAX_PARALLELISM: u32 = 255;
/// The least memory per lane, in KiB (Argon2's minimum: 8 blocks of 1 KiB).
pub const MIN_MEMORY_PER_LANE: u32 = 8;

/// Argon2id's cost parameters, named as argon2-cffi and RFC 9106 name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Passes over the memory (t).
    pub time_cost: u32,
    /// Memory in KiB (m).
    pub memory_cost: u32,
    /// Lanes (p).
    pub parallelism: u32,
}

impl Params {
    /// The parameters used when encrypting unless stronger ones are asked
    /// for: RFC 9106's second recommended option (t = 3, m = 64 MiB, p = 4),
    /// the same on every machine (never calibrated).
    pub const DEFAULT: Params = Params { time_cost: 3, memory_cost: 64 * 1024, parallelism: 4 };
}

/// The field of a parameter, a header or an input that a [`Fault`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Field {
    /// The passphrase (empty).
    Passphrase = 1,
    /// The salt's length.
    Salt = 2,
    /// `time_cost`.
    TimeCost = 3,
    /// `memory_cost` (KiB).
    MemoryCost = 4,
    /// `parallelism`.
    Parallelism = 5,
    /// The output length.
    HashLength = 6,
    /// The header's magic bytes (the value is their first 8 bytes, big-endian).
    Magic = 7,
    /// The header's format version.
    Version = 8,
    /// The header's purpose byte (an encrypted file or a key file).
    Purpose = 9,
    /// The header's KDF byte.
    Kdf = 10,
    /// The header's length.
    HeaderLength = 11,
}

/// What was wrong: the field, the value found, and the limit it broke (the
/// minimum for a value below its range, the maximum for one above it, the
/// expected value for a field with one valid value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub field: Field,
    pub value: u64,
    pub limit: u64,
}

/// A failed KDF or passphrase operation: the engine error and, when one
/// field is to blame, which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub error: Error,
    pub fault: Option<Fault>,
}

impl Failure {
    pub fn new(error: Error, field: Field, value: u64, limit: u64) -> Self {
        Failure { error, fault: Some(Fault { field, value, limit }) }
    }

    /// An `InvalidArgument` naming `field`.
    pub fn invalid(field: Field, value: u64, limit: u64) -> Self {
        Failure::new(Error::InvalidArgument, field, value, limit)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure { error, fault: None }
    }
}

/// Checks the parameters, salt length and output length (the rules in the
/// module documentation); the first fault found is returned.
pub fn validate(params: &Params, salt_len: usize, hash_len: usize) -> Result<(), Failure> {
    if salt_len < MIN_SALT_LEN {
        return Err(Failure::invalid(Field::Salt, salt_len as u64, MIN_SALT_LEN as u64));
    }
    if salt_len > MAX_SALT_LEN {
        return Err(Failure::invalid(Field::Salt, salt_len as u64, MAX_SALT_LEN as u64));
    }
    validate_costs(params)?;
    if hash_len < MIN_HASH_LEN {
        return Err(Failure::invalid(Field::HashLength, hash_len as u64, MIN_HASH_LEN as u64));
    }
    if hash_len > MAX_HASH_LEN {
        return Err(Failure::invalid(Field::HashLength, hash_len as u64, MAX_HASH_LEN as u64));
    }
    Ok(())
}

/// The cost rules alone (`validate` without the lengths).
pub fn validate_costs(params: &Params) -> Result<(), Failure> {
    if params.time_cost < 1 {
        return Err(Failure::invalid(Field::TimeCost, params.time_cost.into(), 1));
    }
    if params.parallelism < 1 {
        return Err(Failure::invalid(Field::Parallelism, params.parallelism.into(), 1));
    }
    if params.parallelism > MAX_PARALLELISM {
        return Err(Failure::invalid(Field::Parallelism, params.parallelism.into(), MAX_PARALLELISM.into()));
    }
    let least = MIN_MEMORY_PER_LANE * params.parallelism;
    if params.memory_cost < least {
        return Err(Failure::invalid(Field::MemoryCost, params.memory_cost.into(), least.into()));
    }
    Ok(())
}

/// Argon2id of `password` and `salt` into `out` (its length is the tag
/// length), with no secret and no associated data. `stop`, if given, is
/// asked every `INTERRUPT_EVERY` and ends the call with `Interrupted`.
/// On failure `out` is untouched.
pub fn argon2id(
    password: &[u8],
    salt: &[u8],
    params: &Params,
    out: &mut [u8],
    stop: Option<&mut dyn FnMut() -> bool>,
) -> Result<(), Failure> {
    validate(params, salt.len(), out.len())?;
    let crate_params = argon2::Params::new(params.memory_cost, params.time_cost, params.parallelism, Some(out.len()))
        .map_err(|_| Failure::from(Error::InvalidArgument))?;
    let context = Argon2::new(Algorithm::Argon2id, Version::V0x13, crate_params);
    run(context, password, salt, params, out, stop)
}

/// Runs `context` on the pool with private copies of the inputs, waiting
/// for the result as the module documentation describes.
pub(crate) fn run(
    context: Argon2<'static>,
    password: &[u8],
    salt: &[u8],
    params: &Params,
    out: &mut [u8],
    stop: Option<&mut dyn FnMut() -> bool>,
) -> Result<(), Failure> {
    let out_of_memory = || Failure::new(Error::OutOfMemory, Field::MemoryCost, params.memory_cost.into(), 0);
    let block_count = context.params().block_count();
    let mut blocks = Blocks::new(block_count).ok_or_else(out_of_memory)?;
    let password = Zeroizing::new(copy(password).ok_or_else(out_of_memory)?);
    let salt = copy(salt).ok_or_else(out_of_memory)?;
    let mut output = Zeroizing::new(zeroed(out.len()).ok_or_else(out_of_memory)?);
    let pool = AUTO_POOL.get().ok_or(Failure::from(Error::OutOfMemory))?;

    // The derivation owns everything it touches, so that it can outlive an
    // interrupted call; its result travels back (and, unread, is dropped and
    // wiped) through the channel.
    let (sender, receiver) = sync_channel::<Result<Zeroizing<Vec<u8>>, Error>>(1);
    let workers = pool.clone();
    pool.spawn(move || {
        let done = catch_unwind(AssertUnwindSafe(|| {
            context.hash_password_into_with_memory(&password, &salt, &mut output, blocks.as_mut())
        }));
        drop(blocks);
        // The lanes' compression blocks lived on the workers' stacks. Every
        // worker scrubs its stack before the result is handed over, so the
        // pool is idle when the call returns: a fork() right after it finds
        // no worker in the middle of a job (the child then builds its own
        // pool without inheriting a lock a busy worker held).
        workers.broadcast(|_| crate::wipe::scrub_stack_deep());
        let result = match done {
            Ok(Ok(())) => Ok(output),
            Ok(Err(_)) => Err(Error::InvalidArgument),
            Err(_) => Err(Error::Panic),
        };
        let _ = sender.send(result);
    });

    let result = match stop {
        None => receiver.recv().unwrap_or(Err(Error::Panic)),
        Some(stop) => loop {
            match receiver.recv_timeout(INTERRUPT_EVERY) {
                Ok(result) => break result,
                Err(RecvTimeoutError::Disconnected) => break Err(Error::Panic),
                Err(RecvTimeoutError::Timeout) => {
                    if stop() {
                        return Err(Error::Interrupted.into());
                    }
                }
            }
        },
    };
    let output = result?;
    out.copy_from_slice(&output);
    Ok(())
}

/// A copy of `bytes`, or None if it cannot be allocated.
fn copy(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut vec = Vec::new();
    vec.try_reserve_exact(bytes.len()).ok()?;
    vec.extend_from_slice(bytes);
    Some(vec)
}

/// `len` zero bytes, or None if they cannot be allocated.
fn zeroed(len: usize) -> Option<Vec<u8>> {
    let mut vec = Vec::new();
    vec.try_reserve_exact(len).ok()?;
    vec.resize(len, 0);
    Some(vec)
}

/// Argon2's memory: `len` zeroed blocks, allocated fallibly, zeroed again
/// before they are freed. On Linux, from 2 MiB on, they are an anonymous
/// mapping (zeroed by the kernel as it is first touched), aligned to 2 MiB
/// and advised as transparent huge pages: Argon2 reads blocks all over its
/// memory, and with huge pages those reads miss the TLB far less and the
/// first pass takes one page fault per 2 MiB instead of one per 4 KiB
/// (where the system gives no huge pages, the advice changes nothing).
/// Smaller memory, and all memory elsewhere, is a zeroed heap allocation.
struct Blocks {
    ptr: NonNull<Block>,
    len: usize,
    /// The whole mapping (start, length) that `ptr` lies in, or None for a
    /// heap allocation.
    mapping: Option<(NonNull<u8>, usize)>,
}

// SAFETY: Blocks owns its memory exclusively, like a Box<[Block]>.
unsafe impl Send for Blocks {}

/// The usual transparent huge page, the alignment of a mapping and the
/// least memory that gets one.
const HUGE_PAGE: usize = 2 << 20;

impl Blocks {
    fn new(len: usize) -> Option<Self> {
        let layout = Layout::array::<Block>(len).ok()?;
        if layout.size() == 0 {
            return None;
        }
        if cfg!(target_os = "linux") && layout.size() >= HUGE_PAGE {
            return Self::mapped(len, layout.size());
        }
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        Some(Blocks { ptr: NonNull::new(ptr.cast())?, len, mapping: None })
    }

    #[cfg(target_os = "linux")]
    fn mapped(len: usize, size: usize) -> Option<Self> {
        let mapped = size.checked_add(HUGE_PAGE)?;
        // SAFETY: a new private anonymous mapping; no existing memory is touched.
        let start = unsafe {
            libc::mmap(std::ptr::null_mut(), mapped, libc::PROT_READ | libc::PROT_WRITE,
                       libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        if start == libc::MAP_FAILED {
            return None;
        }
        let start = start.cast::<u8>();
        let offset = (start as usize).next_multiple_of(HUGE_PAGE) - start as usize;
        // SAFETY: `offset + size <= mapped`: inside the mapping.
        let ptr = unsafe { start.add(offset) };
        // SAFETY: a range of this mapping; an error only leaves the pages small.
        unsafe { libc::madvise(ptr.cast(), size, libc::MADV_HUGEPAGE) };
        Some(Blocks { ptr: NonNull::new(ptr.cast())?, len, mapping: Some((NonNull::new(start)?, mapped)) })
    }

    #[cfg(not(target_os = "linux"))]
    fn mapped(_len: usize, _size: usize) -> Option<Self> {
        None
    }

    fn as_mut(&mut self) -> &mut [Block] {
        // SAFETY: `ptr` holds `len` initialised (zeroed: a valid Block) blocks,
        // borrowed exclusively through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Blocks {
    fn drop(&mut self) {
        let layout = Layout::array::<Block>(self.len).expect("checked in new");
        // SAFETY: the blocks are `layout.size()` writable bytes.
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr().cast::<u8>(), 0, layout.size()) };
        std::hint::black_box(self.ptr);
        match self.mapping {
            #[cfg(target_os = "linux")]
            // SAFETY: the mapping made in `mapped`, unmapped once.
            Some((start, mapped)) => unsafe {
                libc::munmap(start.as_ptr().cast(), mapped);
            },
            #[cfg(not(target_os = "linux"))]
            Some(_) => unreachable!("mappings are Linux's"),
            // SAFETY: allocated in `new` with this layout.
            None => unsafe { dealloc(self.ptr.as_ptr().cast(), layout) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// RFC 9106 section 5.3: Argon2id with a secret and associated data,
    /// through cb3's memory, pool and wait (`run`).
    #[test]
    fn rfc9106_argon2id_vector() {
        static SECRET: [u8; 8] = [3; 8];
        let params = argon2::ParamsBuilder::new()
            .m_cost(32)
            .t_cost(3)
            .p_cost(4)
            .data(argon2::AssociatedData::new(&[4; 12]).unwrap())
            .output_len(32)
            .build()
            .unwrap();
        let context = Argon2::new_with_secret(&SECRET, Algorithm::Argon2id, Version::V0x13, params).unwrap();
        let mut out = [0u8; 32];
        let ours = Params { time_cost: 3, memory_cost: 32, parallelism: 4 };
        run(context, &[1; 32], &[2; 16], &ours, &mut out, None).unwrap();
        assert_eq!(hex::encode(out), "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659");
    }

    /// The plain form (no secret, no associated data), as argon2-cffi
    /// computes it: `argon2.low_level.hash_secret_raw(b"password",
    /// b"somesaltsomesalt", time_cost=2, memory_cost=64, parallelism=2,
    /// hash_len=24, type=Type.ID).hex()`.
    #[test]
    fn plain_form_matches_argon2_cffi() {
        let mut out = [0u8; 24];
        let params = Params { time_cost: 2, memory_cost: 64, parallelism: 2 };
        argon2id(b"password", b"somesaltsomesalt", &params, &mut out, None).unwrap();
        assert_eq!(hex::encode(out), PLAIN_VECTOR);
    }
    const PLAIN_VECTOR: &str = "7fb3f1b1243de01aa67936f6f3213cda7f30266a4deb239b";

    #[test]
    fn every_bad_parameter_is_named() {
        let good = Params { time_cost: 1, memory_cost: 64, parallelism: 2 };
        let mut out = [0u8; 32];
        let case = |params: Params, salt: &[u8], out: &mut [u8]| argon2id(b"pw", salt, &params, out, None).unwrap_err();
        let salt = [0u8; 16];
        assert_eq!(case(good, &[0; 15], &mut out), Failure::invalid(Field::Salt, 15, 16));
        assert_eq!(case(good, &[0; 65], &mut out), Failure::invalid(Field::Salt, 65, 64));
        assert_eq!(case(Params { time_cost: 0, ..good }, &salt, &mut out), Failure::invalid(Field::TimeCost, 0, 1));
        assert_eq!(case(Params { parallelism: 0, ..good }, &salt, &mut out), Failure::invalid(Field::Parallelism, 0, 1));
        assert_eq!(
            case(Params { parallelism: 256, memory_cost: 1 << 20, ..good }, &salt, &mut out),
            Failure::invalid(Field::Parallelism, 256, 255)
        );
        assert_eq!(case(Params { memory_cost: 15, ..good }, &salt, &mut out), Failure::invalid(Field::MemoryCost, 15, 16));
        assert_eq!(case(good, &salt, &mut out[..3]), Failure::invalid(Field::HashLength, 3, 4));
        assert_eq!(out, [0u8; 32], "nothing written on failure");
    }

    #[test]
    fn the_smallest_valid_parameters_work() {
        let mut out = [0u8; 4];
        argon2id(b"", &[7; 16], &Params { time_cost: 1, memory_cost: 8, parallelism: 1 }, &mut out, None).unwrap();
        assert_ne!(out, [0u8; 4]);
        let mut wide = [0u8; 4];
        argon2id(b"", &[7; 64], &Params { time_cost: 1, memory_cost: 255 * 8, parallelism: 255 }, &mut wide, None).unwrap();
        assert_ne!(wide, out);
    }

    /// A memory size the system cannot give is an error, not an abort.
    #[test]
    fn unallocatable_memory_is_an_error() {
        if cfg!(target_pointer_width = "32") {
            return;
        }
        let started = Instant::now();
        let params = Params { time_cost: 1, memory_cost: u32::MAX, parallelism: 4 };
        match argon2id(b"pw", &[0; 16], &params, &mut [0u8; 32], Some(&mut || true)) {
            // Refused by the allocator, or (an overcommitting system) given,
            // then stopped at the first check.
            Err(failure) => assert!(matches!(failure.error, Error::OutOfMemory | Error::Interrupted), "{failure:?}"),
            Ok(()) => panic!("4 TiB derived"),
        }
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_stop_request_returns_at_once() {
        let params = Params { time_cost: 40, memory_cost: 64 * 1024, parallelism: 1 };
        let started = Instant::now();
        let mut asks = 0;
        let mut stopped = None;
        let mut stop = || {
            asks += 1;
            if started.elapsed() > Duration::from_millis(100) {
                stopped = Some(Instant::now());
            }
            stopped.is_some()
        };
        let failure = argon2id(b"pw", &[0; 16], &params, &mut [0u8; 32], Some(&mut stop)).unwrap_err();
        assert_eq!(failure.error, Error::Interrupted);
        assert!(asks >= 1);
        let after_stop = stopped.unwrap().elapsed();
        assert!(after_stop < Duration::from_millis(50), "{after_stop:?}");
    }

    #[test]
    fn stop_never_asked_to_stop_gives_the_same_bytes() {
        let params = Params { time_cost: 2, memory_cost: 256, parallelism: 4 };
        let mut plain = [0u8; 32];
        let mut polled = [0u8; 32];
        argon2id(b"pw", &[9; 16], &params, &mut plain, None).unwrap();
        argon2id(b"pw", &[9; 16], &params, &mut polled, Some(&mut || false)).unwrap();
        assert_eq!(plain, polled);
    }
}
