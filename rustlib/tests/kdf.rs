//! The C ABI of Argon2id and the passphrase header: results, fault details,
//! limits, interrupts and NULL handling.

use std::ffi::{c_int, c_void};
use std::ptr;
use std::time::{Duration, Instant};

use cb3::cb3_result;
use cb3::kdf::*;
use cb3::passphrase::*;

const SALT: [u8; 16] = *b"somesaltsomesalt";
const KEY: [u8; 32] = [0x5a; 32];
const NO_FAULT: cb3_passphrase_fault = cb3_passphrase_fault { field: cb3_passphrase_field::None, value: 0, limit: 0 };

fn argon2id(password: &[u8], salt: &[u8], t: u32, m: u32, p: u32, out: &mut [u8]) -> (cb3_result, cb3_passphrase_fault) {
    let mut fault = NO_FAULT;
    let result = unsafe {
        cb3_argon2id(password.as_ptr(), password.len(), salt.as_ptr(), salt.len(), t, m, p, None, ptr::null_mut(),
                     out.as_mut_ptr(), out.len(), &mut fault)
    };
    (result, fault)
}

fn seal(passphrase: &[u8], purpose: u32, t: u32, m: u32, p: u32) -> Vec<u8> {
    let mut out = vec![0u8; CB3_PASSPHRASE_MAX_HEADER_SIZE];
    let mut n = 0;
    let result = unsafe {
        cb3_passphrase_seal(passphrase.as_ptr(), passphrase.len(), KEY.as_ptr(), 32, purpose, t, m, p, SALT.as_ptr(), 16,
                            None, ptr::null_mut(), out.as_mut_ptr(), out.len(), &mut n, ptr::null_mut())
    };
    assert_eq!(result, cb3_result::Ok);
    out.truncate(n);
    out
}

fn open(header: &[u8], passphrase: &[u8], limits: Option<&cb3_passphrase_limits>) -> Result<[u8; 32], (cb3_result, cb3_passphrase_fault)> {
    let mut key = [0u8; 32];
    let mut fault = NO_FAULT;
    let limits = limits.map_or(ptr::null(), |limits| limits as *const _);
    let result = unsafe {
        cb3_passphrase_open(header.as_ptr(), header.len(), passphrase.as_ptr(), passphrase.len(), CB3_PASSPHRASE_PURPOSE_FILE,
                            limits, None, ptr::null_mut(), key.as_mut_ptr(), 32, &mut fault)
    };
    if result == cb3_result::Ok { Ok(key) } else { assert_eq!(key, [0u8; 32]); Err((result, fault)) }
}

fn fault(field: cb3_passphrase_field, value: u64, limit: u64) -> cb3_passphrase_fault {
    cb3_passphrase_fault { field, value, limit }
}

/// argon2-cffi: `hash_secret_raw(b"password", b"somesaltsomesalt",
/// time_cost=2, memory_cost=64, parallelism=2, hash_len=24, type=Type.ID)`.
#[test]
fn argon2id_matches_argon2_cffi() {
    let mut out = [0u8; 24];
    assert_eq!(argon2id(b"password", &SALT, 2, 64, 2, &mut out).0, cb3_result::Ok);
    assert_eq!(hex::encode(out), "7fb3f1b1243de01aa67936f6f3213cda7f30266a4deb239b");
}

#[test]
fn argon2id_names_every_bad_parameter() {
    let mut out = [0u8; 32];
    let invalid = cb3_result::InvalidArgument;
    assert_eq!(argon2id(b"pw", &SALT[..15], 1, 64, 1, &mut out), (invalid, fault(cb3_passphrase_field::Salt, 15, 16)));
    assert_eq!(argon2id(b"pw", &SALT, 0, 64, 1, &mut out), (invalid, fault(cb3_passphrase_field::TimeCost, 0, 1)));
    assert_eq!(argon2id(b"pw", &SALT, 1, 7, 1, &mut out), (invalid, fault(cb3_passphrase_field::MemoryCost, 7, 8)));
    assert_eq!(argon2id(b"pw", &SALT, 1, 4096, 0, &mut out), (invalid, fault(cb3_passphrase_field::Parallelism, 0, 1)));
    assert_eq!(argon2id(b"pw", &SALT, 1, 4096, 256, &mut out), (invalid, fault(cb3_passphrase_field::Parallelism, 256, 255)));
    assert_eq!(argon2id(b"pw", &SALT, 1, 64, 1, &mut out[..3]), (invalid, fault(cb3_passphrase_field::OutputLength, 3, 4)));
    assert_eq!(out, [0u8; 32]);
    let null_out = unsafe {
        cb3_argon2id(ptr::null(), 0, SALT.as_ptr(), 16, 1, 64, 1, None, ptr::null_mut(), ptr::null_mut(), 32, ptr::null_mut())
    };
    assert_eq!(null_out, cb3_result::NullParameter);
    let null_salt = unsafe {
        cb3_argon2id(ptr::null(), 0, ptr::null(), 16, 1, 64, 1, None, ptr::null_mut(), out.as_mut_ptr(), 32, ptr::null_mut())
    };
    assert_eq!(null_salt, cb3_result::NullParameter);
}

unsafe extern "C" fn stop_after(arg: *mut c_void) -> c_int {
    // SAFETY: the test passes a pointer to its Instant.
    let started = unsafe { &*(arg as *const Instant) };
    (started.elapsed() > Duration::from_millis(100)) as c_int
}

#[test]
fn argon2id_interrupt_returns_promptly() {
    let started = Instant::now();
    let mut out = [0u8; 32];
    let result = unsafe {
        cb3_argon2id(b"pw".as_ptr(), 2, SALT.as_ptr(), 16, 40, 64 * 1024, 1, Some(stop_after),
                     &started as *const Instant as *mut c_void, out.as_mut_ptr(), 32, ptr::null_mut())
    };
    assert_eq!(result, cb3_result::Interrupted);
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    assert_eq!(out, [0u8; 32]);
}

#[test]
fn seal_open_round_trip_and_header_size() {
    let header = seal(b"correct horse", CB3_PASSPHRASE_PURPOSE_FILE, 1, 64, 2);
    assert_eq!(header.len(), CB3_PASSPHRASE_HEADER_SIZE);
    let mut size = 0;
    assert_eq!(unsafe { cb3_passphrase_header_size(header.as_ptr(), CB3_PASSPHRASE_PREFIX_SIZE, &mut size, ptr::null_mut()) }, cb3_result::Ok);
    assert_eq!(size, CB3_PASSPHRASE_HEADER_SIZE);
    assert_eq!(unsafe { cb3_passphrase_header_size(header.as_ptr(), 19, &mut size, ptr::null_mut()) }, cb3_result::InvalidHeader);
    let mut fault_out = NO_FAULT;
    let stream = b"CB3STRM\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    assert_eq!(unsafe { cb3_passphrase_header_size(stream.as_ptr(), 20, &mut size, &mut fault_out) }, cb3_result::InvalidHeader);
    assert_eq!(fault_out.field, cb3_passphrase_field::Magic);
    assert_eq!(open(&header, b"correct horse", None), Ok(KEY));
    assert_eq!(open(&header, b"correct horsE", None), Err((cb3_result::DecryptionFailed, NO_FAULT)));
    let mut changed = header.clone();
    changed[30] ^= 1; // the salt
    assert_eq!(open(&changed, b"correct horse", None), Err((cb3_result::DecryptionFailed, NO_FAULT)));
}

#[test]
fn open_refuses_headers_above_the_limits_before_deriving() {
    let header = seal(b"pw", CB3_PASSPHRASE_PURPOSE_FILE, 1, 64, 2);
    let mut huge = header.clone();
    huge[14..18].copy_from_slice(&u32::MAX.to_be_bytes());
    let started = Instant::now();
    assert_eq!(
        open(&huge, b"pw", None),
        Err((cb3_result::LimitExceeded, fault(cb3_passphrase_field::MemoryCost, u32::MAX.into(), CB3_PASSPHRASE_MAX_MEMORY_COST.into())))
    );
    assert!(started.elapsed() < Duration::from_millis(50));
    let tight = cb3_passphrase_limits { max_time_cost: 1, max_memory_cost: 63, max_parallelism: 2 };
    assert_eq!(open(&header, b"pw", Some(&tight)), Err((cb3_result::LimitExceeded, fault(cb3_passphrase_field::MemoryCost, 64, 63))));
    let exact = cb3_passphrase_limits { max_memory_cost: 64, ..tight };
    assert_eq!(open(&header, b"pw", Some(&exact)), Ok(KEY));
}

#[test]
fn open_names_structural_faults() {
    let header = seal(b"pw", CB3_PASSPHRASE_PURPOSE_KEY_FILE, 1, 64, 2);
    assert_eq!(open(&header, b"pw", None), Err((cb3_result::InvalidHeader, fault(cb3_passphrase_field::Purpose, 2, 1))));
    let mut version = header.clone();
    version[7] = 9;
    assert_eq!(open(&version, b"pw", None), Err((cb3_result::InvalidHeader, fault(cb3_passphrase_field::Version, 9, 1))));
    assert_eq!(open(&header[..99], b"pw", None), Err((cb3_result::InvalidHeader, fault(cb3_passphrase_field::HeaderLength, 99, 100))));
    let mut key = [0u8; 32];
    let unknown_purpose = unsafe {
        cb3_passphrase_open(header.as_ptr(), header.len(), b"pw".as_ptr(), 2, 3, ptr::null(), None, ptr::null_mut(),
                            key.as_mut_ptr(), 32, ptr::null_mut())
    };
    assert_eq!(unknown_purpose, cb3_result::InvalidArgument);
    let short_key = unsafe {
        cb3_passphrase_open(header.as_ptr(), header.len(), b"pw".as_ptr(), 2, CB3_PASSPHRASE_PURPOSE_KEY_FILE, ptr::null(),
                            None, ptr::null_mut(), key.as_mut_ptr(), 31, ptr::null_mut())
    };
    assert_eq!(short_key, cb3_result::InvalidKeyLength);
}

#[test]
fn seal_refuses_bad_arguments() {
    let mut out = [0u8; CB3_PASSPHRASE_MAX_HEADER_SIZE];
    let mut fault_out = NO_FAULT;
    let mut call = |passphrase: &[u8], purpose: u32, out_len: usize, fault_out: &mut cb3_passphrase_fault| unsafe {
        cb3_passphrase_seal(passphrase.as_ptr(), passphrase.len(), KEY.as_ptr(), 32, purpose, 1, 64, 1, SALT.as_ptr(), 16,
                            None, ptr::null_mut(), out.as_mut_ptr(), out_len, ptr::null_mut(), fault_out)
    };
    assert_eq!(call(b"", 1, 148, &mut fault_out), cb3_result::InvalidArgument);
    assert_eq!(fault_out, fault(cb3_passphrase_field::Passphrase, 0, 1));
    assert_eq!(call(b"pw", 0, 148, &mut fault_out), cb3_result::InvalidArgument);
    assert_eq!(call(b"pw", 1, 99, &mut fault_out), cb3_result::InsufficientSize);
    assert!(out.iter().all(|&b| b == 0));
}

/// Neither the wrapped key nor the key derived from the passphrase stays on
/// the calling thread's stack after a seal or an open (the boundary scrubs
/// it; the derivation's own memory is wiped on the pool).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn seal_and_open_leave_no_key_on_the_stack() {
    use cb3_core::wipe::probe;

    let mut wrap_key = [0u8; 32];
    assert_eq!(argon2id(b"correct horse", &SALT, 1, 64, 2, &mut wrap_key).0, cb3_result::Ok);
    let header = seal(b"correct horse", CB3_PASSPHRASE_PURPOSE_FILE, 1, 64, 2);
    let cases: Vec<(&str, Box<dyn Fn()>)> = vec![
        ("cb3_passphrase_seal", Box::new(|| {
            seal(b"correct horse", CB3_PASSPHRASE_PURPOSE_FILE, 1, 64, 2);
        })),
        ("cb3_passphrase_open", Box::new(|| {
            let mut key = [0u8; 32];
            let result = unsafe {
                cb3_passphrase_open(header.as_ptr(), header.len(), b"correct horse".as_ptr(), 13,
                                    CB3_PASSPHRASE_PURPOSE_FILE, ptr::null(), None, ptr::null_mut(), key.as_mut_ptr(),
                                    32, ptr::null_mut())
            };
            assert_eq!(result, cb3_result::Ok);
            // Out of this frame before the scan (the caller owns its copy).
            std::hint::black_box(&mut key).fill(0);
        })),
    ];
    let mut left = Vec::new();
    for (name, call) in cases {
        let (stack, _) = probe::after(|| call());
        for (what, secret) in [("key", &KEY[..]), ("wrapping key", &wrap_key[..])] {
            let depth = probe::deepest_copy(&stack, secret);
            if depth != 0 {
                left.push(format!("{name}: the {what}, {depth} bytes below the caller"));
            }
        }
    }
    assert!(left.is_empty(), "copies left on the stack: {left:?}");
}
