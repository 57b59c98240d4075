//! Where the data of an operation comes from, and the XOR that every
//! keystream pass ends in.

/// Where the data of an operation comes from: already in the output buffer
/// (in place) or in a separate, non-overlapping input.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    InPlace,
    Separate(&'a [u8]),
}

impl<'a> Source<'a> {
    /// The input bytes of the output's `range`: None in place (the output
    /// holds them).
    pub fn input(&self, range: std::ops::Range<usize>) -> Option<&'a [u8]> {
        match *self {
            Source::InPlace => None,
            Source::Separate(input) => Some(&input[range]),
        }
    }
}

/// `out = input XOR keystream` (`out ^= keystream` when `input` is None),
/// as zips of flat slices, which the compiler turns into SIMD loops.
pub fn xor_keystream(out: &mut [u8], input: Option<&[u8]>, keystream: &[u8]) {
    match input {
        Some(input) => out.iter_mut().zip(input).zip(keystream).for_each(|((o, i), k)| *o = i ^ k),
        None => out.iter_mut().zip(keystream).for_each(|(o, k)| *o ^= k),
    }
}
