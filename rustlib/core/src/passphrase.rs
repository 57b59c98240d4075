//! The passphrase header: the one codec of cb3's passphrase format
//! (version 1), and the wrap and unwrap of a 32-byte key under a passphrase.
//!
//! Layout (integers big-endian; `S` is the salt length):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 7 | magic `CB3PASS` |
//! | 7 | 1 | version, 1 |
//! | 8 | 1 | purpose: 1 an encrypted file (a chunked stream follows), 2 a key file |
//! | 9 | 1 | KDF: 1 Argon2id (version 0x13) |
//! | 10 | 4 | time_cost |
//! | 14 | 4 | memory_cost (KiB) |
//! | 18 | 1 | parallelism |
//! | 19 | 1 | S, 16..=64 |
//! | 20 | S | salt |
//! | 20+S | 32 | the wrapped key |
//! | 52+S | 32 | its tag |
//!
//! The wrapping key is Argon2id(passphrase, salt, the header's parameters,
//! 32 bytes); the wrapped key and tag are ChaCha20-BLAKE3 of the key under
//! it, with a zero nonce (the wrapping key is unique per random salt) and the
//! header's first `20 + S` bytes as associated data. A change to any header
//! byte therefore fails as a wrong passphrase does (`DecryptionFailed`).
//!
//! Reading checks the structure first (`InvalidHeader` naming the field),
//! then the reader's [`Limits`] (`LimitExceeded` naming the parameter, its
//! value and the limit), both before the derivation allocates anything.

use zeroize::Zeroizing;

use crate::aead::{open as aead_open, seal as aead_seal, Output};
use crate::error::Error;
use crate::kdf::{self, Failure, Field, Params, MAX_SALT_LEN, MIN_SALT_LEN};
use crate::chacha20::Source;

/// The first bytes of every passphrase header.
pub const MAGIC: [u8; 7] = *b"CB3PASS";
/// The format version written and read.
pub const VERSION: u8 = 1;
/// The KDF byte of Argon2id, version 0x13.
pub const KDF_ARGON2ID: u8 = 1;
/// The bytes before the salt: enough to know the whole header's length.
pub const PREFIX_SIZE: usize = 20;
/// The wrapped key and its tag.
pub const WRAPPED_SIZE: usize = 64;
/// The salt length cb3 writes.
pub const SALT_SIZE: usize = 16;
/// The size of a header with a salt of `SALT_SIZE` bytes.
pub const HEADER_SIZE: usize = PREFIX_SIZE + SALT_SIZE + WRAPPED_SIZE;
/// The largest header (a 64-byte salt).
pub const MAX_HEADER_SIZE: usize = PREFIX_SIZE + MAX_SALT_LEN + WRAPPED_SIZE;
/// The key a header wraps.
pub const KEY_SIZE: usize = 32;

/// What a header protects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Purpose {
    /// An encrypted file: a chunked stream under the key follows the header.
    File = 1,
    /// A key file: the header alone.
    KeyFile = 2,
}

impl Purpose {
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Purpose::File),
            2 => Some(Purpose::KeyFile),
            _ => None,
        }
    }
}

/// The most a reader accepts from a header. Each can be raised by the
/// caller; a header above one is refused before anything is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_time_cost: u32,
    /// KiB.
    pub max_memory_cost: u32,
    pub max_parallelism: u32,
}

impl Limits {
    /// The documented defaults: 10 passes, 2 GiB (RFC 9106's first
    /// recommendation fits), 64 lanes.
    pub const DEFAULT: Limits = Limits { max_time_cost: 10, max_memory_cost: 2 * 1024 * 1024, max_parallelism: 64 };

    /// `LimitExceeded` naming the first parameter of `params` above a limit.
    pub fn check(&self, params: &Params) -> Result<(), Failure> {
        let checks = [
            (Field::TimeCost, params.time_cost, self.max_time_cost),
            (Field::MemoryCost, params.memory_cost, self.max_memory_cost),
            (Field::Parallelism, params.parallelism, self.max_parallelism),
        ];
        for (field, value, limit) in checks {
            if value > limit {
                return Err(Failure::new(Error::LimitExceeded, field, value.into(), limit.into()));
            }
        }
        Ok(())
    }
}

/// A parsed header, borrowing its salt and wrapped key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub purpose: Purpose,
    pub params: Params,
    pub salt: &'a [u8],
    /// The wrapped key and its tag.
    pub wrapped: &'a [u8; WRAPPED_SIZE],
    /// The bytes the tag authenticates (everything before the wrapped key).
    pub authenticated: &'a [u8],
}

fn invalid_header(field: Field, value: u64, limit: u64) -> Failure {
    Failure::new(Error::InvalidHeader, field, value, limit)
}

/// The whole header's length from its first `PREFIX_SIZE` bytes (more may
/// follow): checks the magic, version and salt length.
pub fn header_size(prefix: &[u8]) -> Result<usize, Failure> {
    if prefix.len() < PREFIX_SIZE {
        return Err(invalid_header(Field::HeaderLength, prefix.len() as u64, PREFIX_SIZE as u64));
    }
    if prefix[..7] != MAGIC {
        let mut first = [0u8; 8];
        first.copy_from_slice(&prefix[..8]);
        return Err(invalid_header(Field::Magic, u64::from_be_bytes(first), 0));
    }
    if prefix[7] != VERSION {
        return Err(invalid_header(Field::Version, prefix[7].into(), VERSION.into()));
    }
    let salt_len = usize::from(prefix[19]);
    if salt_len < MIN_SALT_LEN {
        return Err(invalid_header(Field::Salt, salt_len as u64, MIN_SALT_LEN as u64));
    }
    if salt_len > MAX_SALT_LEN {
        return Err(invalid_header(Field::Salt, salt_len as u64, MAX_SALT_LEN as u64));
    }
    Ok(PREFIX_SIZE + salt_len + WRAPPED_SIZE)
}

/// Parses a whole header (exactly its length): every structural rule,
/// `InvalidHeader` naming the field. The reader's limits are checked
/// separately ([`Limits::check`]).
pub fn parse(header: &[u8]) -> Result<Header<'_>, Failure> {
    let size = header_size(header)?;
    if header.len() != size {
        return Err(invalid_header(Field::HeaderLength, header.len() as u64, size as u64));
    }
    let purpose = Purpose::from_byte(header[8]).ok_or(invalid_header(Field::Purpose, header[8].into(), 0))?;
    if header[9] != KDF_ARGON2ID {
        return Err(invalid_header(Field::Kdf, header[9].into(), KDF_ARGON2ID.into()));
    }
    let word = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let params = Params { time_cost: word(10), memory_cost: word(14), parallelism: header[18].into() };
    kdf::validate_costs(&params).map_err(|failure| Failure { error: Error::InvalidHeader, ..failure })?;
    let salt_end = PREFIX_SIZE + usize::from(header[19]);
    Ok(Header {
        purpose,
        params,
        salt: &header[PREFIX_SIZE..salt_end],
        wrapped: header[salt_end..].try_into().expect("64 bytes"),
        authenticated: &header[..salt_end],
    })
}

/// Writes the header of `key` under `passphrase` into `out` (at least the
/// header's size) and returns its size. The salt comes from the caller
/// (cb3's bindings draw `SALT_SIZE` random bytes); `stop` as for
/// [`kdf::argon2id`]. On failure `out` is untouched.
pub fn seal(
    passphrase: &[u8],
    key: &[u8],
    purpose: Purpose,
    params: &Params,
    salt: &[u8],
    out: &mut [u8],
    stop: Option<&mut dyn FnMut() -> bool>,
) -> Result<usize, Failure> {
    if passphrase.is_empty() {
        return Err(Failure::invalid(Field::Passphrase, 0, 1));
    }
    if key.len() != KEY_SIZE {
        return Err(Error::InvalidKeyLength.into());
    }
    kdf::validate(params, salt.len(), KEY_SIZE)?;
    if params.parallelism > u8::MAX.into() {
        return Err(Failure::invalid(Field::Parallelism, params.parallelism.into(), u8::MAX.into()));
    }
    let size = PREFIX_SIZE + salt.len() + WRAPPED_SIZE;
    if out.len() < size {
        return Err(Error::InsufficientSize.into());
    }
    let mut header = [0u8; MAX_HEADER_SIZE];
    header[..7].copy_from_slice(&MAGIC);
    header[7] = VERSION;
    header[8] = purpose as u8;
    header[9] = KDF_ARGON2ID;
    header[10..14].copy_from_slice(&params.time_cost.to_be_bytes());
    header[14..18].copy_from_slice(&params.memory_cost.to_be_bytes());
    header[18] = params.parallelism as u8;
    header[19] = salt.len() as u8;
    header[PREFIX_SIZE..PREFIX_SIZE + salt.len()].copy_from_slice(salt);

    let mut wrap_key = Zeroizing::new([0u8; KEY_SIZE]);
    kdf::argon2id(passphrase, salt, params, &mut wrap_key[..], stop)?;
    let (authenticated, rest) = header.split_at_mut(PREFIX_SIZE + salt.len());
    let (wrapped, tag) = rest[..WRAPPED_SIZE].split_at_mut(KEY_SIZE);
    let sealed = aead_seal(&wrap_key, &[0; 24], authenticated, Source::Separate(key), wrapped, None)?;
    tag.copy_from_slice(&sealed.0);
    out[..size].copy_from_slice(&header[..size]);
    Ok(size)
}

/// Unwraps the key of `header` (exactly one header) into `key_out` (32
/// bytes): the structure and `purpose` checked (`InvalidHeader`), then
/// `limits` (`LimitExceeded`), before the derivation; a wrong passphrase or
/// any changed header byte is `DecryptionFailed`. On failure `key_out` is
/// untouched.
pub fn open(
    header: &[u8],
    passphrase: &[u8],
    purpose: Purpose,
    limits: &Limits,
    key_out: &mut [u8],
    stop: Option<&mut dyn FnMut() -> bool>,
) -> Result<(), Failure> {
    let parsed = parse(header)?;
    if parsed.purpose != purpose {
        return Err(invalid_header(Field::Purpose, (parsed.purpose as u8).into(), (purpose as u8).into()));
    }
    limits.check(&parsed.params)?;
    if passphrase.is_empty() {
        return Err(Failure::invalid(Field::Passphrase, 0, 1));
    }
    if key_out.len() != KEY_SIZE {
        return Err(Error::InvalidKeyLength.into());
    }
    let mut wrap_key = Zeroizing::new([0u8; KEY_SIZE]);
    kdf::argon2id(passphrase, parsed.salt, &parsed.params, &mut wrap_key[..], stop)?;
    let (wrapped, tag) = parsed.wrapped.split_at(KEY_SIZE);
    let mut key = Zeroizing::new([0u8; KEY_SIZE]);
    let tag: &[u8; 32] = tag.try_into().expect("32 bytes");
    aead_open(&wrap_key, &[0; 24], parsed.authenticated, tag, Source::Separate(wrapped), &mut key[..], Output::Shared, None)?;
    key_out.copy_from_slice(&key[..]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const FAST: Params = Params { time_cost: 1, memory_cost: 64, parallelism: 2 };
    const KEY: [u8; 32] = [0x42; 32];
    const SALT: [u8; 16] = *b"0123456789abcdef";

    fn sealed(purpose: Purpose) -> Vec<u8> {
        let mut out = vec![0u8; MAX_HEADER_SIZE];
        let n = seal(b"correct horse", &KEY, purpose, &FAST, &SALT, &mut out, None).unwrap();
        out.truncate(n);
        out
    }

    fn open_key(header: &[u8], passphrase: &[u8]) -> Result<[u8; 32], Failure> {
        let mut key = [0u8; 32];
        open(header, passphrase, Purpose::File, &Limits::DEFAULT, &mut key, None).map(|()| key)
    }

    #[test]
    fn round_trip_and_layout() {
        let header = sealed(Purpose::File);
        assert_eq!(header.len(), HEADER_SIZE);
        assert_eq!(&header[..10], b"CB3PASS\x01\x01\x01");
        assert_eq!(&header[10..20], &[0, 0, 0, 1, 0, 0, 0, 64, 2, 16]);
        assert_eq!(&header[20..36], &SALT);
        assert_eq!(header_size(&header[..PREFIX_SIZE]), Ok(HEADER_SIZE));
        let parsed = parse(&header).unwrap();
        assert_eq!((parsed.purpose, parsed.params, parsed.salt), (Purpose::File, FAST, &SALT[..]));
        assert_eq!(open_key(&header, b"correct horse"), Ok(KEY));
        // A 64-byte salt, as a writer may choose.
        let mut long = [0u8; MAX_HEADER_SIZE];
        let n = seal(b"pw", &KEY, Purpose::KeyFile, &FAST, &[5; 64], &mut long, None).unwrap();
        assert_eq!(n, MAX_HEADER_SIZE);
        let mut key = [0u8; 32];
        open(&long, b"pw", Purpose::KeyFile, &Limits::DEFAULT, &mut key, None).unwrap();
        assert_eq!(key, KEY);
    }

    /// The wrap is exactly the documented composition: Argon2id, then
    /// ChaCha20-BLAKE3 (the reference crate) with a zero nonce over the
    /// header's first 20 + S bytes.
    #[test]
    fn wrap_is_the_documented_composition() {
        use chacha20_blake3::ChaCha20Blake3;
        let header = sealed(Purpose::File);
        let mut wrap_key = [0u8; 32];
        kdf::argon2id(b"correct horse", &SALT, &FAST, &mut wrap_key, None).unwrap();
        let cipher = ChaCha20Blake3::new(wrap_key);
        let expected = cipher.encrypt(&[0; 24], &KEY, &header[..36]);
        assert_eq!(&header[36..], &expected[..]);
    }

    #[test]
    fn wrong_passphrase_and_every_changed_byte_fail_alike() {
        let header = sealed(Purpose::File);
        assert_eq!(open_key(&header, b"correct horsf").unwrap_err(), Failure::from(Error::DecryptionFailed));
        // Bytes the parser cannot tell from valid ones: parameters that stay
        // in range, the salt, the wrapped key and the tag.
        for at in [13, 17, 18, 20, 35, 36, 67, 68, 99] {
            let mut changed = header.clone();
            changed[at] ^= match at {
                13 => 0x02, // 1 -> 3 passes
                18 => 0x03, // 2 -> 1 lane
                _ => 0x01,
            };
            assert_eq!(open_key(&changed, b"correct horse").unwrap_err().error, Error::DecryptionFailed, "byte {at}");
        }
    }

    #[test]
    fn every_structural_fault_is_named() {
        let header = sealed(Purpose::File);
        let fault = |changed: &[u8]| open_key(changed, b"correct horse").unwrap_err();
        let with = |at: usize, byte: u8| {
            let mut changed = header.clone();
            changed[at] = byte;
            changed
        };
        let invalid = |field, value, limit| Failure::new(Error::InvalidHeader, field, value, limit);
        assert_eq!(fault(&header[..19]), invalid(Field::HeaderLength, 19, 20));
        assert_eq!(fault(&header[..99]), invalid(Field::HeaderLength, 99, 100));
        assert_eq!(fault(&[header.clone(), vec![0]].concat()), invalid(Field::HeaderLength, 101, 100));
        assert_eq!(fault(&with(0, b'X')).fault.unwrap().field, Field::Magic);
        assert_eq!(fault(&with(7, 2)), invalid(Field::Version, 2, 1));
        assert_eq!(fault(&with(8, 3)), invalid(Field::Purpose, 3, 0));
        assert_eq!(fault(&with(8, 2)), invalid(Field::Purpose, 2, 1));
        assert_eq!(fault(&with(9, 2)), invalid(Field::Kdf, 2, 1));
        assert_eq!(fault(&with(13, 0)), invalid(Field::TimeCost, 0, 1));
        assert_eq!(fault(&with(17, 15)), invalid(Field::MemoryCost, 15, 16));
        assert_eq!(fault(&with(18, 0)), invalid(Field::Parallelism, 0, 1));
        assert_eq!(fault(&with(19, 15)), invalid(Field::Salt, 15, 16));
        assert_eq!(fault(&with(19, 65)), invalid(Field::Salt, 65, 64));
        assert_eq!(header_size(&with(19, 17)), Ok(101));
        assert_eq!(open_key(&header, b"").unwrap_err(), Failure::invalid(Field::Passphrase, 0, 1));
    }

    /// A header claiming the most memory its field can hold (4 TiB) costs
    /// nothing: the limit is checked before any allocation.
    #[test]
    fn limits_are_refused_before_allocating() {
        let header = sealed(Purpose::File);
        let mut huge = header.clone();
        huge[14..18].copy_from_slice(&u32::MAX.to_be_bytes());
        let started = Instant::now();
        assert_eq!(
            open_key(&huge, b"correct horse").unwrap_err(),
            Failure::new(Error::LimitExceeded, Field::MemoryCost, u32::MAX.into(), 2 * 1024 * 1024)
        );
        assert!(started.elapsed() < Duration::from_millis(50));
        let mut slow = header.clone();
        slow[10..14].copy_from_slice(&11u32.to_be_bytes());
        assert_eq!(
            open_key(&slow, b"correct horse").unwrap_err(),
            Failure::new(Error::LimitExceeded, Field::TimeCost, 11, 10)
        );
        let mut wide = header.clone();
        wide[18] = 65;
        wide[14..18].copy_from_slice(&(65u32 * 8).to_be_bytes());
        assert_eq!(
            open_key(&wide, b"correct horse").unwrap_err(),
            Failure::new(Error::LimitExceeded, Field::Parallelism, 65, 64)
        );
        // Raised limits let the same header through to the tag check.
        let raised = Limits { max_time_cost: 11, ..Limits::DEFAULT };
        let mut key = [0u8; 32];
        assert_eq!(
            open(&slow, b"correct horse", Purpose::File, &raised, &mut key, None).unwrap_err().error,
            Error::DecryptionFailed
        );
    }

    #[test]
    fn seal_refuses_bad_input_without_writing() {
        let mut out = [0u8; MAX_HEADER_SIZE];
        let seal_with = |passphrase: &[u8], key: &[u8], params: Params, salt: &[u8], out: &mut [u8]| {
            seal(passphrase, key, Purpose::File, &params, salt, out, None).unwrap_err()
        };
        assert_eq!(seal_with(b"", &KEY, FAST, &SALT, &mut out), Failure::invalid(Field::Passphrase, 0, 1));
        assert_eq!(seal_with(b"pw", &KEY[..31], FAST, &SALT, &mut out), Failure::from(Error::InvalidKeyLength));
        assert_eq!(seal_with(b"pw", &KEY, FAST, &SALT[..8], &mut out), Failure::invalid(Field::Salt, 8, 16));
        assert_eq!(
            seal_with(b"pw", &KEY, Params { time_cost: 0, ..FAST }, &SALT, &mut out),
            Failure::invalid(Field::TimeCost, 0, 1)
        );
        assert_eq!(seal_with(b"pw", &KEY, FAST, &SALT, &mut out[..99]), Failure::from(Error::InsufficientSize));
        assert!(out.iter().all(|&b| b == 0));
    }

    #[test]
    fn an_interrupted_open_returns_at_once() {
        let mut header = vec![0u8; MAX_HEADER_SIZE];
        let slow = Params { time_cost: 10, memory_cost: 64 * 1024, parallelism: 1 };
        let n = seal(b"pw", &KEY, Purpose::File, &FAST, &SALT, &mut header, None).unwrap();
        header.truncate(n);
        header[10..14].copy_from_slice(&slow.time_cost.to_be_bytes());
        header[14..18].copy_from_slice(&slow.memory_cost.to_be_bytes());
        header[18] = 1;
        let started = Instant::now();
        let mut stop = || started.elapsed() > Duration::from_millis(50);
        let mut key = [0u8; 32];
        let failure = open(&header, b"pw", Purpose::File, &Limits::DEFAULT, &mut key, Some(&mut stop)).unwrap_err();
        assert_eq!(failure.error, Error::Interrupted);
        assert!(started.elapsed() < Duration::from_millis(300));
        assert_eq!(key, [0u8; 32]);
    }
}
