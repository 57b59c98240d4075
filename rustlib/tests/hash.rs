//! The `cb3_blake3_*` C ABI checked against the `blake3` crate's own API.

mod common;

use std::ptr;

use cb3::cb3_result;
use cb3::hash::*;
use common::bytes;

const CONTEXT: &str = "cb3 2025 rustlib/tests/hash.rs context";

#[derive(Clone, Copy, Debug)]
enum Mode<'a> {
    Hash,
    Keyed(&'a [u8; 32]),
    DeriveKey(&'a str),
}

impl Mode<'_> {
    fn reference(self) -> blake3::Hasher {
        match self {
            Mode::Hash => blake3::Hasher::new(),
            Mode::Keyed(key) => blake3::Hasher::new_keyed(key),
            Mode::DeriveKey(context) => blake3::Hasher::new_derive_key(context),
        }
    }
}

struct Hasher(*mut cb3_blake3);

impl Hasher {
    fn new(mode: Mode<'_>, max_threads: usize) -> Self {
        let mut p = ptr::null_mut();
        let r = unsafe {
            match mode {
                Mode::Hash => cb3_blake3_new(max_threads, &mut p),
                Mode::Keyed(key) => cb3_blake3_new_keyed(key.as_ptr(), 32, max_threads, &mut p),
                Mode::DeriveKey(context) => cb3_blake3_new_derive_key(context.as_ptr(), context.len(), max_threads, &mut p),
            }
        };
        assert_eq!(r, cb3_result::Ok);
        assert!(!p.is_null());
        Hasher(p)
    }
    fn update(&self, data: &[u8]) -> &Self {
        assert_eq!(unsafe { cb3_blake3_update(self.0, data.as_ptr(), data.len()) }, cb3_result::Ok);
        self
    }
    fn output(&self, seek: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        assert_eq!(unsafe { cb3_blake3_finalize(self.0, seek, out.as_mut_ptr(), len) }, cb3_result::Ok);
        out
    }
    fn copy(&self) -> Hasher {
        let mut p = ptr::null_mut();
        assert_eq!(unsafe { cb3_blake3_copy(self.0, &mut p) }, cb3_result::Ok);
        Hasher(p)
    }
    fn update_mmap(&self, path: &[u8]) -> Result<(), (cb3_result, i32)> {
        let mut errno = -1;
        let r = unsafe { cb3_blake3_update_mmap(self.0, path.as_ptr(), path.len(), &mut errno) };
        if r == cb3_result::Ok {
            assert_eq!(errno, -1, "os_error written on success");
            Ok(())
        } else {
            Err((r, errno))
        }
    }
}

impl Drop for Hasher {
    fn drop(&mut self) {
        unsafe { cb3_blake3_free(self.0) }
    }
}

fn reference_output(mut hasher: blake3::Hasher, data: &[u8], seek: u64, len: usize) -> Vec<u8> {
    hasher.update(data);
    let mut reader = hasher.finalize_xof();
    reader.set_position(seek);
    let mut out = vec![0u8; len];
    reader.fill(&mut out);
    out
}

fn one_shot(mode: Mode<'_>, data: &[u8], len: usize) -> Result<Vec<u8>, cb3_result> {
    let mut out = vec![0xAAu8; len];
    let r = unsafe {
        match mode {
            Mode::Hash => cb3_blake3_hash(data.as_ptr(), data.len(), out.as_mut_ptr(), len),
            Mode::Keyed(key) => cb3_blake3_keyed_hash(key.as_ptr(), 32, data.as_ptr(), data.len(), out.as_mut_ptr(), len),
            Mode::DeriveKey(context) => {
                cb3_blake3_derive_key(context.as_ptr(), context.len(), data.as_ptr(), data.len(), out.as_mut_ptr(), len)
            }
        }
    };
    if r != cb3_result::Ok {
        assert!(out.iter().all(|&b| b == 0xAA), "output written on failure");
        return Err(r);
    }
    Ok(out)
}

/// Every length around the block (64), chunk (1024) and SIMD-degree
/// boundaries, all three modes, incremental and one-shot, against the crate.
#[test]
fn matches_crate_across_boundaries() {
    let key: [u8; 32] = bytes(7, 32).try_into().unwrap();
    let mut lengths: Vec<usize> = (0..=200).collect();
    for edge in [256usize, 512, 1024, 2048, 3072, 4096, 8192, 16384, 31744, 65536, 102400] {
        lengths.extend([edge - 1, edge, edge + 1]);
    }
    for mode in [Mode::Hash, Mode::Keyed(&key), Mode::DeriveKey(CONTEXT)] {
        for &len in &lengths {
            let data = bytes(len as u64, len);
            let expected = reference_output(mode.reference(), &data, 0, 131);
            let hasher = Hasher::new(mode, 1);
            let (a, b) = data.split_at(len / 3);
            hasher.update(a).update(b);
            assert_eq!(hasher.output(0, 131), expected, "{mode:?} length {len}");
            assert_eq!(hasher.output(0, 32), expected[..32], "{mode:?} length {len}");
            assert_eq!(one_shot(mode, &data, 131).unwrap(), expected, "{mode:?} length {len}");
            if let Mode::Hash = mode {
                assert_eq!(one_shot(mode, &data, 32).unwrap(), blake3::hash(&data).as_bytes());
            }
        }
    }
    assert_eq!(one_shot(Mode::Keyed(&key), b"abc", 32).unwrap(), blake3::keyed_hash(&key, b"abc").as_bytes());
    assert_eq!(one_shot(Mode::DeriveKey(CONTEXT), b"abc", 32).unwrap(), blake3::derive_key(CONTEXT, b"abc"));
}

#[test]
fn extendable_output_with_seek() {
    let data = bytes(1, 5000);
    let hasher = Hasher::new(Mode::Hash, 1);
    hasher.update(&data);
    let long = reference_output(blake3::Hasher::new(), &data, 0, 4096);
    assert_eq!(hasher.output(0, 4096), long);
    for seek in [0u64, 1, 31, 32, 63, 64, 65, 127, 1000, 4000] {
        for len in [0usize, 1, 7, 64, 65, 96] {
            let end = (seek as usize + len).min(4096);
            assert_eq!(hasher.output(seek, end - seek as usize), long[seek as usize..end]);
        }
    }
    // Near the end of the 64-bit position space the crate defines the bytes.
    let seek = u64::MAX - 5;
    assert_eq!(hasher.output(seek, 20), reference_output(blake3::Hasher::new(), &data, seek, 20));
    // Finalizing does not change the hasher.
    assert_eq!(hasher.output(0, 32), long[..32]);
    hasher.update(b"more");
    let mut more = data.clone();
    more.extend_from_slice(b"more");
    assert_eq!(hasher.output(0, 32), blake3::hash(&more).as_bytes());
}

/// Every threading mode gives the crate's digest, for inputs below and well
/// above the parallel threshold, fed whole or in uneven pieces.
#[test]
fn threads_do_not_change_the_digest() {
    let data = bytes(99, 3 * CB3_BLAKE3_PARALLEL_MIN + 12345);
    let key: [u8; 32] = bytes(5, 32).try_into().unwrap();
    for mode in [Mode::Hash, Mode::Keyed(&key), Mode::DeriveKey(CONTEXT)] {
        let expected = reference_output(mode.reference(), &data, 0, 64);
        for max_threads in [1usize, CB3_BLAKE3_AUTO, 2, 3, 8] {
            let whole = Hasher::new(mode, max_threads);
            whole.update(&data);
            assert_eq!(whole.output(0, 64), expected, "{mode:?} max_threads {max_threads}");
            let pieces = Hasher::new(mode, max_threads);
            let mut rest = &data[..];
            for size in [1usize, 1023, CB3_BLAKE3_PARALLEL_MIN + 1, 77777] {
                let (head, tail) = rest.split_at(size.min(rest.len()));
                pieces.update(head);
                rest = tail;
            }
            pieces.update(rest);
            assert_eq!(pieces.output(0, 64), expected, "{mode:?} max_threads {max_threads}, pieces");
            // Copies share the pool and stay independent.
            let copy = pieces.copy();
            copy.update(&data);
            pieces.update(b"x");
            let mut doubled = data.clone();
            doubled.extend_from_slice(&data);
            assert_eq!(copy.output(0, 64), reference_output(mode.reference(), &doubled, 0, 64));
        }
    }
}

#[test]
fn shared_between_threads() {
    let hasher = Hasher::new(Mode::Hash, 2);
    let piece = bytes(3, CB3_BLAKE3_PARALLEL_MIN);
    let address = hasher.0 as usize;
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let piece = &piece;
            scope.spawn(move || {
                for _ in 0..4 {
                    unsafe { cb3_blake3_update(address as *const cb3_blake3, piece.as_ptr(), piece.len()) };
                }
            });
        }
    });
    // Identical pieces: any interleaving gives the same input.
    let mut expected = blake3::Hasher::new();
    for _ in 0..16 {
        expected.update(&piece);
    }
    assert_eq!(hasher.output(0, 32), expected.finalize().as_bytes());
    assert_eq!(unsafe { cb3_blake3_count(hasher.0) }, 16 * piece.len() as u64);
}

#[test]
fn copy_and_reset() {
    let key: [u8; 32] = bytes(11, 32).try_into().unwrap();
    let hasher = Hasher::new(Mode::Keyed(&key), 1);
    hasher.update(b"prefix ");
    let copy = hasher.copy();
    hasher.update(b"one");
    copy.update(b"two");
    assert_eq!(hasher.output(0, 32), blake3::keyed_hash(&key, b"prefix one").as_bytes());
    assert_eq!(copy.output(0, 32), blake3::keyed_hash(&key, b"prefix two").as_bytes());
    assert_eq!(unsafe { cb3_blake3_reset(hasher.0) }, cb3_result::Ok);
    assert_eq!(unsafe { cb3_blake3_count(hasher.0) }, 0);
    assert_eq!(hasher.output(0, 32), blake3::keyed_hash(&key, b"").as_bytes());
    hasher.update(b"after");
    assert_eq!(hasher.output(0, 32), blake3::keyed_hash(&key, b"after").as_bytes());
}

#[test]
fn update_mmap_matches_update() {
    let dir = std::env::temp_dir().join(format!("cb3-hash-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Below, at and above the crate's 16 KiB mmap threshold, and large
    // enough for the parallel path.
    for (i, len) in [0usize, 1, 16383, 16384, 16385, 1 << 20, 3 * CB3_BLAKE3_PARALLEL_MIN + 5].into_iter().enumerate() {
        let data = bytes(i as u64 + 50, len);
        let path = dir.join(format!("file{i}"));
        std::fs::write(&path, &data).unwrap();
        let path_bytes = path.to_str().unwrap().as_bytes();
        for max_threads in [1usize, CB3_BLAKE3_AUTO, 2] {
            let hasher = Hasher::new(Mode::Hash, max_threads);
            hasher.update(b"head");
            hasher.update_mmap(path_bytes).unwrap();
            hasher.update_mmap(path_bytes).unwrap();
            let mut expected = blake3::Hasher::new();
            expected.update(b"head").update(&data).update(&data);
            assert_eq!(hasher.output(0, 32), expected.finalize().as_bytes(), "length {len}");
        }
    }
    let hasher = Hasher::new(Mode::Hash, 1);
    assert_eq!(hasher.update_mmap(b"/nonexistent/cb3/file"), Err((cb3_result::IoError, 2)));
    assert_eq!(hasher.update_mmap(b"bad\0path"), Err((cb3_result::IoError, 22)));
    let (result, errno) = hasher.update_mmap(dir.to_str().unwrap().as_bytes()).unwrap_err();
    assert_eq!((result, errno), (cb3_result::IoError, 21), "a directory is EISDIR");
    // NULL os_error is allowed.
    let missing = b"/nonexistent/cb3/file";
    let r = unsafe { cb3_blake3_update_mmap(hasher.0, missing.as_ptr(), missing.len(), ptr::null_mut()) };
    assert_eq!(r, cb3_result::IoError);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors() {
    let mut p = ptr::null_mut();
    for len in [0usize, 16, 31, 33, 64] {
        let key = vec![1u8; len];
        assert_eq!(unsafe { cb3_blake3_new_keyed(key.as_ptr(), len, 1, &mut p) }, cb3_result::InvalidKeyLength);
        assert!(p.is_null());
        assert_eq!(one_shot_keyed_len(&key), cb3_result::InvalidKeyLength);
    }
    assert_eq!(unsafe { cb3_blake3_new_keyed(ptr::null(), 32, 1, &mut p) }, cb3_result::NullParameter);
    assert_eq!(unsafe { cb3_blake3_new(1, ptr::null_mut()) }, cb3_result::NullParameter);
    let bad = [0xFFu8, 0xFE];
    assert_eq!(unsafe { cb3_blake3_new_derive_key(bad.as_ptr(), 2, 1, &mut p) }, cb3_result::InvalidUtf8);
    let mut out = [0u8; 32];
    assert_eq!(
        unsafe { cb3_blake3_derive_key(bad.as_ptr(), 2, b"x".as_ptr(), 1, out.as_mut_ptr(), 32) },
        cb3_result::InvalidUtf8
    );
    assert!(p.is_null());
    assert_eq!(unsafe { cb3_blake3_update(ptr::null(), b"x".as_ptr(), 1) }, cb3_result::NullParameter);
    let hasher = Hasher::new(Mode::Hash, 1);
    assert_eq!(unsafe { cb3_blake3_update(hasher.0, ptr::null(), 1) }, cb3_result::NullParameter);
    assert_eq!(unsafe { cb3_blake3_update(hasher.0, ptr::null(), 0) }, cb3_result::Ok);
    assert_eq!(unsafe { cb3_blake3_finalize(hasher.0, 0, ptr::null_mut(), 0) }, cb3_result::Ok);
    assert_eq!(unsafe { cb3_blake3_finalize(hasher.0, 0, ptr::null_mut(), 32) }, cb3_result::NullParameter);
    // A one-shot output may not overlap its input.
    let mut buf = bytes(4, 64);
    let r = unsafe { cb3_blake3_hash(buf.as_ptr(), 64, buf.as_mut_ptr().add(10), 32) };
    assert_eq!(r, cb3_result::OverlappingBuffers);
    assert_eq!(unsafe { cb3_blake3_count(ptr::null()) }, 0);
    unsafe { cb3_blake3_free(ptr::null_mut()) };
}

fn one_shot_keyed_len(key: &[u8]) -> cb3_result {
    let mut out = [0u8; 32];
    unsafe { cb3_blake3_keyed_hash(key.as_ptr(), key.len(), b"abc".as_ptr(), 3, out.as_mut_ptr(), 32) }
}
