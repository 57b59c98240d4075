//! The message keystream from any byte of the message on: by the wide
//! kernel (`chacha20::wide`) where it runs, else by the crate's cipher; the
//! piece XOR of the pass and the segments of a staged decryption's last
//! pass.

use std::ops::Range;

use chacha20::cipher::{StreamCipher, StreamCipherSeek};
use chacha20::ChaCha20Legacy;
use zeroize::Zeroizing;

use super::keys::Secrets;
use super::xor_piece_len;
use crate::error::{Error, Result};
use crate::chacha20::xor_keystream;

impl Secrets {
    /// The keystream from byte `offset` of the message on.
    pub(super) fn keystream(&self, offset: usize) -> Result<MessageKeystream<'_>> {
        let mut stream = ChaCha20Legacy::from_core(self.cipher());
        stream.try_seek(offset as u64).map_err(|_| Error::Panic)?;
        let mut keystream = MessageKeystream {
            keys: self,
            stream,
            wide: crate::chacha20::wide::available(),
            pos: offset as u64,
            carry: [0; crate::chacha20::wide::UNIT_BYTES],
            carry_at: crate::chacha20::wide::UNIT_BYTES,
        };
        if keystream.wide && offset % 64 != 0 {
            // The rest of the unit from this block on, so that the kernel
            // starts on a block boundary.
            keystream.refill((offset / 64) as u64);
            keystream.carry_at = offset % 64;
        }
        Ok(keystream)
    }
}

/// `out = input XOR keystream` from byte `offset` of the message on, in
/// pieces of `xor_piece_len()` bytes.
pub(super) fn xor_segment(keys: &Secrets, offset: usize, input: &[u8], out: &mut [u8]) -> Result<()> {
    let mut stream = keys.keystream(offset)?;
    let step = xor_piece_len();
    let pieces = out.len().div_ceil(step);
    for (index, (piece, from)) in out.chunks_mut(step).zip(input.chunks(step)).enumerate() {
        xor_piece_from(&mut stream, from, piece, index + 1 == pieces, None)?;
    }
    Ok(())
}

/// The keystream unit the SIMD backends produce cheapest: four 64-byte
/// blocks. (One or two blocks cost the crate's AVX-512 backend more than a
/// four-block run.)
const KEYSTREAM_RUN: usize = 256;

/// A message's keystream from some byte position on (`Secrets::keystream`):
/// by `chacha20::wide` where it runs on this CPU, else by the crate's cipher.
///
/// The kernel makes whole units from a block boundary on; the keystream of
/// the unit that a call ends inside is kept (`carry`) for the next call. So
/// a message cut into pieces anywhere (the pass cuts on the grid of the MAC
/// input, not of the keystream) costs the kernel what the whole message
/// costs it: no piece's edges go to the crate (whose AVX-512 backend takes
/// longer per block for a few blocks than for a run of four).
pub(super) struct MessageKeystream<'a> {
    keys: &'a Secrets,
    /// The crate's cipher, used where the kernel does not run (`wide` false).
    stream: ChaCha20Legacy,
    /// Whether the kernel runs on this CPU.
    wide: bool,
    /// Kernel only: the message byte the next call starts at.
    pos: u64,
    /// Kernel only: keystream bytes `carry[carry_at..]` come next.
    carry: [u8; crate::chacha20::wide::UNIT_BYTES],
    carry_at: usize,
}

impl Drop for MessageKeystream<'_> {
    fn drop(&mut self) {
        crate::wipe::wipe_bytes(&mut self.carry);
    }
}

impl MessageKeystream<'_> {
    /// `out = input XOR keystream` (`out ^= keystream` when `input` is
    /// None), advancing the position. Where the kernel runs and `copy` (as
    /// long as `out`) is given, the kernel stores the bytes it produces into
    /// `copy` too, from the same registers; returns the range of `copy` so
    /// written (the rest is the caller's to fill, `copy_unstored`).
    fn xor(&mut self, input: Option<&[u8]>, out: &mut [u8], copy: Option<&mut [u8]>) -> Result<Range<usize>> {
        if !self.wide {
            self.xor_crate(input, out)?;
            return Ok(0..0);
        }
        let len = out.len();
        // The keystream left over from the last unit: after it the position
        // is on a block boundary (a unit ends on one).
        let mut done = (self.carry.len() - self.carry_at).min(len);
        let carried = &self.carry[self.carry_at..self.carry_at + done];
        xor_keystream(&mut out[..done], input.map(|input| &input[..done]), carried);
        self.carry_at += done;
        let mut stored = 0..0;
        if done < len {
            let counter = (self.pos + done as u64) / 64;
            let copied = copy.is_some();
            let wide = self.keys.xor_wide(counter, input.map(|input| &input[done..]), &mut out[done..],
                                          copy.map(|copy| &mut copy[done..]));
            if copied {
                stored = done..done + wide;
            }
            done += wide;
            if done < len {
                // Less than a unit left: the next unit's keystream, the rest
                // of which the next call uses.
                self.refill(counter + (wide / 64) as u64);
                let tail = len - done;
                xor_keystream(&mut out[done..], input.map(|input| &input[done..]), &self.carry[..tail]);
                self.carry_at = tail;
            }
        }
        self.pos += len as u64;
        Ok(stored)
    }

    /// `carry` = the keystream unit from block `counter` on (zeros XOR
    /// keystream: no `memset` of `carry` first).
    fn refill(&mut self, counter: u64) {
        static ZEROS: [u8; crate::chacha20::wide::UNIT_BYTES] = [0; crate::chacha20::wide::UNIT_BYTES];
        let made = self.keys.xor_wide(counter, Some(&ZEROS), &mut self.carry, None);
        debug_assert_eq!(made, self.carry.len());
    }

    fn xor_crate(&mut self, input: Option<&[u8]>, out: &mut [u8]) -> Result<()> {
        // Only fails past 2^64 blocks, which no in-memory message reaches.
        match input {
            Some(input) => self.stream.try_apply_keystream_b2b(input, out),
            None => self.stream.try_apply_keystream(out),
        }
        .map_err(|_| Error::Panic)
    }
}

/// `out = input XOR keystream` for one piece (`last`: the stream is not
/// used again): one read of `input`, no copy pass before the XOR; `copy`, if
/// given, as in `MessageKeystream::xor` (returns the range it stored).
pub(super) fn xor_piece_from(stream: &mut MessageKeystream<'_>, input: &[u8], out: &mut [u8], last: bool, copy: Option<&mut [u8]>) -> Result<Range<usize>> {
    if stream.wide {
        return stream.xor(Some(input), out, copy);
    }
    // The crate's backends: the last piece's partial run through a buffer
    // of whole runs (the cheapest unit of its SIMD backends).
    let full = if last { input.len() / KEYSTREAM_RUN * KEYSTREAM_RUN } else { input.len() };
    let stored = stream.xor(Some(&input[..full]), &mut out[..full], copy.map(|copy| &mut copy[..full]))?;
    if full < input.len() {
        let mut run = Zeroizing::new([0u8; KEYSTREAM_RUN]);
        stream.xor(None, &mut run[..], None)?;
        xor_keystream(&mut out[full..], Some(&input[full..]), &run[..]);
    }
    Ok(stored)
}

/// Completes `target` as a copy of `from` (same length) around the range
/// the kernel already stored into it.
pub(super) fn copy_unstored(target: &mut [u8], from: &[u8], stored: Range<usize>) {
    target[..stored.start].copy_from_slice(&from[..stored.start]);
    target[stored.end..].copy_from_slice(&from[stored.end..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aead::tests::bytes;

    /// The message keystream cut into calls anywhere (the pass's pieces
    /// start where the MAC input's grid falls, not on blocks), from any
    /// starting offset, with and without an input and a copy: the crate's
    /// keystream, and a copy holding the same bytes wherever the kernel
    /// stored them.
    #[test]
    fn the_keystream_is_the_same_however_it_is_cut() {
        let keys = Secrets::derived(&[3; 32], &[4; 24]);
        let total = 9 * 1024 + 77;
        let mut reference = vec![0u8; total];
        keys.keystream(0).unwrap().xor_crate(None, &mut reference).unwrap();
        let input = bytes(11, total);
        let cuts: [&[usize]; 5] = [&[1, 63, 64, 65, 1023, 1024, 1025], &[1024, 3000, 17], &[4096, 5], &[100_000], &[7, 2041, 1, 1]];
        for start in [0, 1, 8, 63, 64, 1000, 1024, 1031, 2048 + 56] {
            for (round, pattern) in cuts.iter().enumerate() {
                let what = format!("from {start}, cuts {pattern:?}");
                let mut stream = keys.keystream(start).unwrap();
                let (mut out, mut copy) = (vec![0u8; total - start], vec![0xEEu8; total - start]);
                let mut at = 0;
                for &cut in pattern.iter().cycle() {
                    if at == out.len() {
                        break;
                    }
                    let end = (at + cut).min(out.len());
                    if round % 2 == 0 {
                        let stored = stream.xor(Some(&input[start + at..start + end]), &mut out[at..end], Some(&mut copy[at..end])).unwrap();
                        assert!(stored.end <= end - at, "{what}");
                        assert!(copy[at..end][stored.clone()] == out[at..end][stored.clone()], "{what}: the copy at {at}");
                    } else {
                        out[at..end].copy_from_slice(&input[start + at..start + end]);
                        assert_eq!(stream.xor(None, &mut out[at..end], None).unwrap(), 0..0, "{what}");
                    }
                    at = end;
                }
                let expected: Vec<u8> = input[start..].iter().zip(&reference[start..]).map(|(i, k)| i ^ k).collect();
                assert!(out == expected, "{what}");
            }
        }
    }
}
