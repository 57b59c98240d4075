//! The documented contract of every `cb3_aead_*` function, called through
//! the C ABI with fuzzer-chosen pointers and lengths.
//!
//! Each buffer of the call is placed by the fuzzer: in a buffer of its own
//! (ASan catches any access past its end), NULL, anywhere in one shared
//! arena (so inputs and outputs may overlap, partially or exactly), or next
//! to another buffer of the arena. Lengths may be exact, a little short or
//! long, zero, double, or above PTRDIFF_MAX. From the actual memory and
//! lengths a model of the contract (cb3.h) computes which results apply:
//!
//! - if no failure applies, the call must return CB3_RESULT_OK and memory
//!   afterwards must equal memory before with exactly the documented
//!   outputs written, their bytes being what the chacha20-blake3 crate gives
//!   for the same inputs (a forged input must therefore fail);
//! - otherwise it must return one of the failures that apply (which one is
//!   unspecified) and leave every byte of memory, `*out_n` included, as it was;
//! - never CB3_RESULT_PANIC, and never a crash or a sanitizer report.
#![no_main]

mod common;

use cb3::aead::*;
use cb3::errors::cb3_result;
use common::{crate_cipher, parse, Control, Region};
use libfuzzer_sys::fuzz_target;

const HUGE: usize = isize::MAX as usize + 1;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Loc {
    Null,
    Arena(usize),
    Own(usize), // index into `own`
}

#[derive(Clone, Copy, Debug)]
struct Buf {
    loc: Loc,
    len: usize, // the length passed to C
}

/// All memory the call can see: the arena and the separate buffers.
struct Memory {
    arena: Vec<u8>,
    own: Vec<Vec<u8>>,
}

impl Memory {
    fn region(&mut self, buf: Buf) -> Region {
        match buf.loc {
            Loc::Null => Region { ptr: std::ptr::null_mut(), len: buf.len },
            Loc::Arena(offset) => Region { ptr: self.arena.as_mut_ptr().wrapping_add(offset), len: buf.len },
            Loc::Own(i) => Region { ptr: self.own[i].as_mut_ptr(), len: buf.len },
        }
    }

    /// The bytes of `buf` (which must lie inside its allocation).
    fn read(&self, buf: Buf) -> Vec<u8> {
        match buf.loc {
            Loc::Null => Vec::new(),
            Loc::Arena(offset) => self.arena[offset..offset + buf.len].to_vec(),
            Loc::Own(i) => self.own[i][..buf.len].to_vec(),
        }
    }

    fn write(&mut self, buf: Buf, bytes: &[u8]) {
        match buf.loc {
            Loc::Null => assert!(bytes.is_empty()),
            Loc::Arena(offset) => self.arena[offset..offset + bytes.len()].copy_from_slice(bytes),
            Loc::Own(i) => self.own[i][..bytes.len()].copy_from_slice(bytes),
        }
    }

    fn snapshot(&self) -> (Vec<u8>, Vec<Vec<u8>>) {
        (self.arena.clone(), self.own.clone())
    }
}

/// Lays out the buffers of one call as the fuzzer chooses.
struct Layout<'c, 'a> {
    control: &'c mut Control<'a>,
    memory: Memory,
    arena_offsets: Vec<usize>,
}

impl Layout<'_, '_> {
    /// A length for a buffer whose natural length is `natural`.
    fn length(&mut self, natural: usize, allow_huge: bool) -> usize {
        match self.control.u8() {
            0..=219 => natural,
            220..=229 => natural.saturating_sub(1 + self.control.below(4)),
            230..=239 => natural + 1 + self.control.below(4),
            240..=244 => 0,
            245..=249 => natural * 2 + 1,
            _ if allow_huge => HUGE + self.control.below(1000),
            _ => natural,
        }
    }

    /// Places a buffer of `len` bytes (`room` bytes allocated) holding `content`
    /// (repeated to `room`) or, for outputs, the arena's pattern / 0xA5.
    fn place(&mut self, len: usize, content: &[u8], nullable: bool) -> Buf {
        let huge = len >= HUGE;
        let room = if huge { content.len() } else { len };
        let choice = self.control.u8();
        let loc = match choice {
            176..=207 if !huge && room <= self.memory.arena.len() => {
                Loc::Arena(self.control.below(self.memory.arena.len() - room + 1))
            }
            208..=227 if !huge && !self.arena_offsets.is_empty() && room <= self.memory.arena.len() => {
                let base = self.arena_offsets[self.control.below(self.arena_offsets.len())] as isize;
                let delta = self.control.below(81) as isize - 40;
                let max = (self.memory.arena.len() - room) as isize;
                Loc::Arena((base + delta).clamp(0, max) as usize)
            }
            240..=255 if nullable => Loc::Null,
            _ => {
                self.memory.own.push(vec![0xA5; room]);
                Loc::Own(self.memory.own.len() - 1)
            }
        };
        let buf = Buf { loc, len };
        if let Loc::Arena(offset) = loc {
            self.arena_offsets.push(offset);
        }
        if loc != Loc::Null && !content.is_empty() {
            let fill: Vec<u8> = content.iter().copied().cycle().take(room).collect();
            self.memory.write(Buf { loc, len: room }, &fill);
        }
        buf
    }

    /// An output placed exactly at `data` (in place), if the fuzzer asks and it fits.
    fn place_output(&mut self, len: usize, data: Buf) -> Buf {
        if self.control.below(8) == 0 {
            if let Loc::Arena(offset) = data.loc {
                if offset + len <= self.memory.arena.len() {
                    return Buf { loc: data.loc, len };
                }
            }
        }
        self.place(len, &[], true)
    }
}

fn reasonable(buf: Buf) -> bool {
    buf.len < HUGE
}

/// Failures that apply to an input buffer: NULL with a length, or too long.
fn input_failures(buf: Buf, out: &mut Vec<cb3_result>) {
    if buf.loc == Loc::Null && buf.len != 0 {
        out.push(cb3_result::NullParameter);
    } else if buf.len >= HUGE {
        out.push(cb3_result::InvalidArgument);
    }
}

/// A fixed-size input (nonce, tag): NULL, or the wrong length.
fn fixed_failures(buf: Buf, size: usize, wrong: cb3_result, out: &mut Vec<cb3_result>) {
    if buf.loc == Loc::Null {
        out.push(cb3_result::NullParameter);
    } else if buf.len != size {
        out.push(wrong);
    }
}

fn overlapping(memory: &mut Memory, a: Buf, others: &[Buf]) -> bool {
    let ra = memory.region(a);
    others.iter().any(|b| {
        let rb = memory.region(*b);
        ra.overlaps(&rb)
    })
}

/// `out` may start exactly at `data` (in place) or not touch it.
fn in_place_or_disjoint(memory: &mut Memory, out: Buf, data: Buf) -> bool {
    let (ro, rd) = (memory.region(out), memory.region(data));
    (data.len > 0 && ro.ptr == rd.ptr) || !ro.overlaps(&rd)
}

fuzz_target!(|data: &[u8]| {
    let mut input = parse(data);
    let op = input.op % 6;
    let body = input.body.to_vec();
    let aad_content = input.aad.to_vec();
    let arena_len = 2 * (body.len() + aad_content.len()) + 160;
    let mut layout = Layout {
        control: &mut input.control,
        memory: Memory { arena: (0..arena_len).map(|i| (i * 151 + 89) as u8).collect(), own: Vec::new() },
        arena_offsets: Vec::new(),
    };

    // The cipher (rarely NULL).
    let mut aead: *mut cb3_aead = std::ptr::null_mut();
    let threads = [1usize, 2, 0][layout.control.below(3)];
    assert_eq!(unsafe { cb3_aead_new_with_threads(input.key.as_ptr(), 32, threads, &mut aead) }, cb3_result::Ok);
    let pass_null_aead = layout.control.u8() == 255;

    // Buffers, in the order cb3.h lists the parameters.
    let nonce_len = layout.length(24, false);
    let nonce = layout.place(nonce_len, &input.nonce, true);
    let decrypting = matches!(op, 1 | 3 | 5);
    let detached_input = matches!(op, 3 | 5);
    let (data_content, tag_content) = if detached_input && body.len() >= 32 {
        (body[..body.len() - 32].to_vec(), body[body.len() - 32..].to_vec())
    } else if detached_input {
        (Vec::new(), body.clone())
    } else {
        (body.clone(), Vec::new())
    };
    let data_len = layout.length(data_content.len(), true);
    let data = layout.place(data_len, &data_content, true);
    let tag = if detached_input {
        let len = layout.length(tag_content.len(), false);
        Some(layout.place(len, &tag_content, true))
    } else {
        None
    };
    let aad_len = layout.length(aad_content.len(), true);
    let aad = layout.place(aad_len, &aad_content, true);
    let required = match op {
        0 => data_len.saturating_add(32),
        1 => data_len.saturating_sub(32),
        2 | 3 => data_len,
        _ => 0,
    };
    let out = match op {
        0..=3 if reasonable(data) => {
            let len = layout.length(required, false);
            Some(layout.place_output(len, data))
        }
        0..=3 => Some(layout.place(0, &[], true)),
        _ => None,
    };
    let tag_out = if matches!(op, 2 | 4) {
        let len = layout.length(32, false);
        Some(layout.place(len, &[], true))
    } else {
        None
    };
    let mut out_n: usize = 0xDEAD;
    let pass_out_n = layout.control.u8() < 200;
    let memory = &mut layout.memory;

    // What the contract says about this call.
    let mut failures = Vec::new();
    if pass_null_aead {
        failures.push(cb3_result::NullParameter);
    }
    fixed_failures(nonce, 24, cb3_result::InvalidNonceLength, &mut failures);
    input_failures(data, &mut failures);
    if let Some(tag) = tag {
        fixed_failures(tag, 32, cb3_result::InvalidTagLength, &mut failures);
    }
    input_failures(aad, &mut failures);
    let sane = failures.is_empty();
    // Writes on success: (buffer, bytes).
    let mut writes: Vec<(Buf, Vec<u8>)> = Vec::new();
    let mut expected_n = None;
    if sane {
        let nonce_bytes: [u8; 24] = memory.read(nonce).try_into().unwrap();
        let data_bytes = memory.read(data);
        let aad_bytes = memory.read(aad);
        let cipher = crate_cipher(&input.key);
        match op {
            0 => {
                let out = out.unwrap();
                if out.loc == Loc::Null {
                    failures.push(cb3_result::NullParameter);
                }
                if out.len < required {
                    failures.push(cb3_result::InsufficientSize);
                }
                let body = Buf { len: data_len, ..out };
                // The tag is written right after the ciphertext, inside `out`.
                let ro = memory.region(out);
                let tag_at = Region { ptr: ro.ptr.wrapping_add(data_len), len: 32 };
                let inputs = [memory.region(data), memory.region(aad), memory.region(nonce)];
                if out.loc != Loc::Null
                    && (inputs.iter().any(|r| tag_at.overlaps(r))
                        || overlapping(memory, body, &[aad, nonce])
                        || !in_place_or_disjoint(memory, body, data))
                {
                    failures.push(cb3_result::OverlappingBuffers);
                }
                if out.len >= required && out.loc != Loc::Null {
                    writes.push((Buf { len: required, ..out }, cipher.encrypt(&nonce_bytes, &data_bytes, &aad_bytes)));
                    expected_n = Some(required);
                }
            }
            1 => {
                let out = out.unwrap();
                if data_len < 32 {
                    failures.push(cb3_result::DecryptionFailed);
                } else {
                    if out.loc == Loc::Null && required > 0 {
                        failures.push(cb3_result::NullParameter);
                    }
                    if out.len < required {
                        failures.push(cb3_result::InsufficientSize);
                    }
                    let body_region = Buf { len: required, ..out };
                    let ct = Buf { len: required, ..data };
                    let tag_region = {
                        let r = memory.region(data);
                        Region { ptr: r.ptr.wrapping_add(required), len: 32 }
                    };
                    let ro = memory.region(body_region);
                    if ro.overlaps(&tag_region)
                        || overlapping(memory, body_region, &[aad, nonce])
                        || !in_place_or_disjoint(memory, body_region, ct)
                    {
                        failures.push(cb3_result::OverlappingBuffers);
                    }
                    match cipher.decrypt(&nonce_bytes, &data_bytes, &aad_bytes) {
                        Ok(pt) => {
                            if out.len >= required && (out.loc != Loc::Null || required == 0) {
                                writes.push((body_region, pt));
                            }
                            expected_n = Some(required);
                        }
                        Err(_) => failures.push(cb3_result::DecryptionFailed),
                    }
                }
            }
            2 => {
                let (out, tag_out) = (out.unwrap(), tag_out.unwrap());
                if (out.loc == Loc::Null && data_len > 0) || tag_out.loc == Loc::Null {
                    failures.push(cb3_result::NullParameter);
                }
                if out.len < data_len || tag_out.len < 32 {
                    failures.push(cb3_result::InsufficientSize);
                }
                let body_region = Buf { len: data_len, ..out };
                let tag_region = Buf { len: 32, ..tag_out };
                if overlapping(memory, tag_region, &[data, aad, nonce, body_region])
                    || overlapping(memory, body_region, &[aad, nonce])
                    || !in_place_or_disjoint(memory, body_region, data)
                {
                    failures.push(cb3_result::OverlappingBuffers);
                }
                let mut ct = data_bytes.clone();
                let t = cipher.encrypt_in_place_detached(&nonce_bytes, &mut ct, &aad_bytes);
                if out.len >= data_len && tag_out.len >= 32 && tag_out.loc != Loc::Null {
                    writes.push((body_region, ct));
                    writes.push((Buf { len: 32, ..tag_out }, t.to_vec()));
                }
            }
            3 => {
                let (out, tag) = (out.unwrap(), tag.unwrap());
                if out.loc == Loc::Null && data_len > 0 {
                    failures.push(cb3_result::NullParameter);
                }
                if out.len < data_len {
                    failures.push(cb3_result::InsufficientSize);
                }
                let body_region = Buf { len: data_len, ..out };
                if overlapping(memory, body_region, &[tag, aad, nonce]) || !in_place_or_disjoint(memory, body_region, data)
                {
                    failures.push(cb3_result::OverlappingBuffers);
                }
                let tag_bytes: [u8; 32] = memory.read(tag).try_into().unwrap();
                let mut pt = data_bytes.clone();
                match cipher.decrypt_in_place_detached(&nonce_bytes, &mut pt, &tag_bytes, &aad_bytes) {
                    Ok(()) => {
                        if out.len >= data_len {
                            writes.push((body_region, pt));
                        }
                    }
                    Err(_) => failures.push(cb3_result::DecryptionFailed),
                }
            }
            4 => {
                let tag_out = tag_out.unwrap();
                if tag_out.loc == Loc::Null {
                    failures.push(cb3_result::NullParameter);
                }
                if tag_out.len < 32 {
                    failures.push(cb3_result::InsufficientSize);
                }
                let tag_region = Buf { len: 32, ..tag_out };
                if overlapping(memory, tag_region, &[data, aad, nonce]) || overlapping(memory, data, &[aad, nonce]) {
                    failures.push(cb3_result::OverlappingBuffers);
                }
                let mut ct = data_bytes.clone();
                let t = cipher.encrypt_in_place_detached(&nonce_bytes, &mut ct, &aad_bytes);
                writes.push((data, ct));
                if tag_out.len >= 32 && tag_out.loc != Loc::Null {
                    writes.push((Buf { len: 32, ..tag_out }, t.to_vec()));
                }
            }
            _ => {
                let tag = tag.unwrap();
                if overlapping(memory, data, &[tag, aad, nonce]) {
                    failures.push(cb3_result::OverlappingBuffers);
                }
                let tag_bytes: [u8; 32] = memory.read(tag).try_into().unwrap();
                let mut pt = data_bytes.clone();
                match cipher.decrypt_in_place_detached(&nonce_bytes, &mut pt, &tag_bytes, &aad_bytes) {
                    Ok(()) => writes.push((data, pt)),
                    Err(_) => failures.push(cb3_result::DecryptionFailed),
                }
            }
        }
    }

    // The call.
    let before = memory.snapshot();
    let aead_arg = if pass_null_aead { std::ptr::null() } else { aead as *const cb3_aead };
    let r_nonce = memory.region(nonce);
    let r_data = memory.region(data);
    let r_aad = memory.region(aad);
    let r_tag = tag.map(|t| memory.region(t));
    let r_out = out.map(|o| memory.region(o));
    let r_tag_out = tag_out.map(|t| memory.region(t));
    let out_n_ptr: *mut usize = if pass_out_n { &mut out_n } else { std::ptr::null_mut() };
    let result = unsafe {
        match op {
            0 => {
                let o = r_out.unwrap();
                cb3_aead_encrypt(aead_arg, r_nonce.ptr, r_nonce.len, r_data.ptr, r_data.len, r_aad.ptr, r_aad.len, o.ptr, o.len, out_n_ptr)
            }
            1 => {
                let o = r_out.unwrap();
                cb3_aead_decrypt(aead_arg, r_nonce.ptr, r_nonce.len, r_data.ptr, r_data.len, r_aad.ptr, r_aad.len, cb3_output_mode::Shared as u32, o.ptr, o.len, out_n_ptr)
            }
            2 => {
                let (o, t) = (r_out.unwrap(), r_tag_out.unwrap());
                cb3_aead_encrypt_detached(aead_arg, r_nonce.ptr, r_nonce.len, r_data.ptr, r_data.len, r_aad.ptr, r_aad.len, o.ptr, o.len, t.ptr, t.len)
            }
            3 => {
                let (o, t) = (r_out.unwrap(), r_tag.unwrap());
                cb3_aead_decrypt_detached(aead_arg, r_nonce.ptr, r_nonce.len, r_data.ptr, r_data.len, t.ptr, t.len, r_aad.ptr, r_aad.len, cb3_output_mode::Shared as u32, o.ptr, o.len)
            }
            4 => {
                let t = r_tag_out.unwrap();
                cb3_aead_encrypt_in_place(aead_arg, r_nonce.ptr, r_nonce.len, r_data.ptr, r_data.len, r_aad.ptr, r_aad.len, t.ptr, t.len)
            }
            _ => {
                let t = r_tag.unwrap();
                cb3_aead_decrypt_in_place(aead_arg, r_nonce.ptr, r_nonce.len, r_data.ptr, r_data.len, t.ptr, t.len, r_aad.ptr, r_aad.len)
            }
        }
    };
    unsafe { cb3_aead_free(aead) };

    assert_ne!(result, cb3_result::Panic, "op {op}: a panic was caught at the C boundary");
    if failures.is_empty() {
        assert_eq!(result, cb3_result::Ok, "op {op}: a valid call failed (forged = {decrypting})");
        let mut expected = Memory { arena: before.0, own: before.1 };
        for (buf, bytes) in &writes {
            expected.write(*buf, bytes);
        }
        assert!(memory.arena == expected.arena, "op {op}: arena differs from the documented writes");
        assert!(memory.own == expected.own, "op {op}: a buffer differs from the documented writes");
        if let Some(n) = expected_n {
            assert_eq!(out_n, if pass_out_n { n } else { 0xDEAD }, "op {op}: *out_n");
        }
    } else {
        assert!(
            failures.contains(&result),
            "op {op}: returned {result:?}; the failures that apply are {failures:?}"
        );
        assert!(memory.arena == before.0 && memory.own == before.1, "op {op}: a failed call wrote to memory");
        assert_eq!(out_n, 0xDEAD, "op {op}: a failed call wrote *out_n");
    }
});
