//! Shared by the fuzz targets: the input layout, and memory regions.
//!
//! Every target reads its input as
//!
//! ```text
//! op: u8 | key: [u8; 32] | nonce: [u8; 24] | aad_len: u8 | aad | body_len: u16 le | body | control...
//! ```
//!
//! padding with zeros when the input runs out, so that a short input is
//! still a complete, ordinary case. The control bytes (read by `Control`)
//! choose placements, lengths and mutations; when they run out every choice
//! is its default (separate buffers of exactly the documented sizes), so a
//! seed made of a test vector's fields (fuzz/cargo/make_seeds.py) is a
//! valid call. `op` selects the function.
#![allow(dead_code)]

pub struct Input<'a> {
    pub op: u8,
    pub key: [u8; 32],
    pub nonce: [u8; 24],
    pub aad: &'a [u8],
    pub body: &'a [u8],
    pub control: Control<'a>,
}

pub struct Control<'a> {
    data: &'a [u8],
}

impl<'a> Control<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Control { data }
    }

    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        head
    }

    pub fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }

    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }

    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }

    /// 0 when the input has run out.
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            0
        } else if n <= 256 {
            usize::from(self.u8()) % n
        } else {
            self.u32() as usize % n
        }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

pub fn parse(data: &[u8]) -> Input<'_> {
    let mut c = Control::new(data);
    let op = c.u8();
    let mut key = [0u8; 32];
    let k = c.bytes(32);
    key[..k.len()].copy_from_slice(k);
    let mut nonce = [0u8; 24];
    let n = c.bytes(24);
    nonce[..n.len()].copy_from_slice(n);
    let aad_len = usize::from(c.u8());
    let aad = c.bytes(aad_len);
    let body_len = usize::from(c.u16());
    let body = c.bytes(body_len);
    Input { op, key, nonce, aad, body, control: c }
}

/// A byte range in memory, as a C caller passes it: (pointer, length).
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Region {
    pub const NULL: Region = Region { ptr: std::ptr::null_mut(), len: 0 };

    pub fn overlaps(&self, other: &Region) -> bool {
        if self.len == 0 || other.len == 0 || self.ptr.is_null() || other.ptr.is_null() {
            return false;
        }
        let (a0, b0) = (self.ptr as usize, other.ptr as usize);
        a0 < b0.wrapping_add(other.len) && b0 < a0.wrapping_add(self.len)
    }

    pub fn at(&self, offset: usize, len: usize) -> Region {
        Region { ptr: self.ptr.wrapping_add(offset), len }
    }

    /// # Safety
    /// `len` readable bytes (a region the harness laid out).
    pub unsafe fn read(&self) -> Vec<u8> {
        if self.len == 0 || self.ptr.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(self.ptr, self.len).to_vec()
        }
    }
}

/// The ChaCha20-BLAKE3 crate, the reference for every comparison.
pub fn crate_cipher(key: &[u8; 32]) -> chacha20_blake3::ChaCha20Blake3 {
    chacha20_blake3::ChaCha20Blake3::new(*key)
}

/// A body for differential runs: the fuzzer's bytes, or (rarely) those
/// bytes repeated to a larger size, so the multi-piece and multi-thread
/// paths are reached too.
pub fn expand(body: &[u8], control: &mut Control<'_>) -> Vec<u8> {
    match control.u8() {
        250..=254 => repeat(body, 512 + control.below(200_000)),
        255 => repeat(body, (1 << 20) + control.below(70_000)),
        _ => body.to_vec(),
    }
}

fn repeat(body: &[u8], len: usize) -> Vec<u8> {
    let pattern: &[u8] = if body.is_empty() { &[0x5a] } else { body };
    pattern.iter().copied().cycle().take(len).collect()
}

/// The nonce of message `index` of a `cb3_stream` started at `nonce`: its
/// last 8 bytes, little-endian, plus `index` (wrapping), as the crate counts.
pub fn nonce_for(nonce: &[u8; 24], index: u64) -> [u8; 24] {
    let mut out = *nonce;
    let base = u64::from_le_bytes(nonce[16..].try_into().unwrap());
    out[16..].copy_from_slice(&base.wrapping_add(index).to_le_bytes());
    out
}
