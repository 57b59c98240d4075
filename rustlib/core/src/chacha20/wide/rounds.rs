//! What both kernels share: the state of a call (with the first round of
//! the columns that are the same in every block done once, in scalar), and
//! the rounds, the keystream pass and the transpose's first stage, written
//! once as macros over the vector width's add, XOR and rotate.

use super::Nonce;


/// The 16 words of the state before the rounds, whether word 13 is the
/// same in every block of the call, and the state after the first round of
/// the columns that are.
///
/// Only column 0 holds the low counter word; column 1 holds the high one
/// (DJB layout; in RFC 8439's, word 13 is nonce), the same in every block
/// unless the low word wraps within the call. The first round of the other
/// columns is therefore one scalar quarter round each per call instead of a
/// vector one per pass (`first`): 36 of the 960 vector operations of 16
/// blocks' ChaCha20 rounds. The bytes are the same.
pub(super) struct State {
    pub(super) words: [u32; 16],
    /// Word 13 is the same in all the call's blocks.
    pub(super) high_uniform: bool,
    /// `words` after the first column round of columns 2 and 3, and of
    /// column 1 where `high_uniform`; the other columns' words as in `words`.
    pub(super) first: [u32; 16],
}

impl State {
    /// The state of a call of `blocks` blocks from block `counter`.
    pub(super) fn new(key: &[u8; 32], nonce: Nonce<'_>, counter: u64, blocks: usize) -> Self {
        let mut words = [0u32; 16];
        words[..4].copy_from_slice(&[0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574]);
        for (word, bytes) in words[4..12].iter_mut().zip(key.chunks_exact(4)) {
            *word = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        let (tail, wide): (&[u8], bool) = match nonce {
            Nonce::Djb(nonce) => {
                words[12] = counter as u32;
                words[13] = (counter >> 32) as u32;
                (&nonce[..], true)
            }
            Nonce::Ietf(nonce) => {
                words[12] = counter as u32;
                (&nonce[..], false)
            }
        };
        let first = 16 - tail.len() / 4;
        for (word, bytes) in words[first..].iter_mut().zip(tail.chunks_exact(4)) {
            *word = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        }
        // The last block's low word is counter's plus blocks - 1: no wrap
        // while that stays below 2^32.
        let high_uniform = !wide || u64::from(words[12]) + blocks as u64 <= 1 << 32;
        let mut first = words;
        for column in if high_uniform { 1..4 } else { 2..4 } {
            quarter_round(&mut first, column, column + 4, column + 8, column + 12);
        }
        State { words, high_uniform, first }
    }

    pub(super) fn wipe(&mut self) {
        crate::wipe::wipe(&mut self.words);
        crate::wipe::wipe(&mut self.first);
    }
}

/// One ChaCha quarter round on words `a`, `b`, `c`, `d` of `x` (RFC 8439,
/// section 2.1).
pub(super) fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// A quarter round's seven steps after its first add (`a += b`, already
/// in `$x[$a]`), with `$d_word` as word `d` before them.
macro_rules! quarter_round_after_first_add {
    ($add:ident, $xor:ident, $rotl:ident, $x:ident, $d_word:expr, $a:literal, $b:literal, $c:literal, $d:literal) => {
        $x[$d] = $rotl!($xor($d_word, $x[$a]), 16);
        $x[$c] = $add($x[$c], $x[$d]);
        $x[$b] = $rotl!($xor($x[$b], $x[$c]), 12);
        $x[$a] = $add($x[$a], $x[$b]);
        $x[$d] = $rotl!($xor($x[$d], $x[$a]), 8);
        $x[$c] = $add($x[$c], $x[$d]);
        $x[$b] = $rotl!($xor($x[$b], $x[$c]), 7);
    };
}

/// ChaCha quarter rounds on four registers each (one word of every
/// block per register), with the vector width's add, XOR and rotate:
/// each quarter round whole, one after another.
macro_rules! quarter_rounds_in_turn {
    ($add:ident, $xor:ident, $rotl:ident, $x:ident, $(($a:literal, $b:literal, $c:literal, $d:literal)),+) => {
        $(
            $x[$a] = $add($x[$a], $x[$b]);
            quarter_round_after_first_add!($add, $xor, $rotl, $x, $x[$d], $a, $b, $c, $d);
        )+
    };
}

/// The same quarter rounds side by side, one step of all of them at a
/// time (OpenSSL's order), so that in-order port assignment sees four
/// independent operations at every step instead of one chain of twelve
/// after another.
macro_rules! quarter_rounds_interleaved {
    ($add:ident, $xor:ident, $rotl:ident, $x:ident, $(($a:literal, $b:literal, $c:literal, $d:literal)),+) => {
        $( $x[$a] = $add($x[$a], $x[$b]); )+
        $( $x[$d] = $rotl!($xor($x[$d], $x[$a]), 16); )+
        $( $x[$c] = $add($x[$c], $x[$d]); )+
        $( $x[$b] = $rotl!($xor($x[$b], $x[$c]), 12); )+
        $( $x[$a] = $add($x[$a], $x[$b]); )+
        $( $x[$d] = $rotl!($xor($x[$d], $x[$a]), 8); )+
        $( $x[$c] = $add($x[$c], $x[$d]); )+
        $( $x[$b] = $rotl!($xor($x[$b], $x[$c]), 7); )+
    };
}

/// One round on the columns, in the style of `$quarter_rounds`.
macro_rules! column_round {
    ($quarter_rounds:ident, $add:ident, $xor:ident, $rotl:ident, $x:ident) => {
        $quarter_rounds!($add, $xor, $rotl, $x, (0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))
    };
}

/// One round on the diagonals.
macro_rules! diagonal_round {
    ($quarter_rounds:ident, $add:ident, $xor:ident, $rotl:ident, $x:ident) => {
        $quarter_rounds!($add, $xor, $rotl, $x, (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))
    };
}

/// The first quarter round of column (`a`, `b`, `c`, `d`), whose words
/// `a`, `b`, `c` are the same in every block (`$x` holds them
/// broadcast) and whose word `d` is the per-lane `$d_words` (a counter
/// word): the first add is one scalar add.
macro_rules! first_quarter_round {
    ($set1:ident, $add:ident, $xor:ident, $rotl:ident, $x:ident, $words:expr, $d_words:expr, $a:literal, $b:literal, $c:literal, $d:literal) => {
        $x[$a] = $set1($words[$a].wrapping_add($words[$b]) as i32);
        quarter_round_after_first_add!($add, $xor, $rotl, $x, $d_words, $a, $b, $c, $d);
    };
}

/// The 16 state words of one pass's blocks (one word of every block per
/// register) after the rounds and the feed-forward of the input state:
/// `state`'s words broadcast, with the per-lane counter words `low` and
/// `high`. The first column round starts from `state.first`, where the
/// columns that are the same in every block have had theirs (column 1
/// only where `$high_uniform`, a constant of the kernel's).
macro_rules! keystream_pass {
    ($quarter_rounds:ident, $set1:ident, $add:ident, $xor:ident, $rotl:ident, $state:expr, $high_uniform:expr, $low:expr, $high:expr, $double_rounds:expr) => {{
        let (words, first) = (&$state.words, &$state.first);
        let mut x = std::array::from_fn::<_, 16, _>(|i| $set1(first[i] as i32));
        first_quarter_round!($set1, $add, $xor, $rotl, x, words, $low, 0, 4, 8, 12);
        if !$high_uniform {
            first_quarter_round!($set1, $add, $xor, $rotl, x, words, $high, 1, 5, 9, 13);
        }
        diagonal_round!($quarter_rounds, $add, $xor, $rotl, x);
        for _ in 1..$double_rounds {
            column_round!($quarter_rounds, $add, $xor, $rotl, x);
            diagonal_round!($quarter_rounds, $add, $xor, $rotl, x);
        }
        for (i, word) in x.iter_mut().enumerate() {
            let input = match i {
                12 => $low,
                13 => $high,
                _ => $set1(words[i] as i32),
            };
            *word = $add(*word, input);
        }
        x
    }};
}

/// The first stage of the transpose, within each 128-bit lane h (blocks
/// 4h..4h+3): a 4x4 transpose of each group of four words, so that
/// `y[g][k]` holds, in lane h, words 4g..4g+3 of block 4h+k.
macro_rules! transpose_lanes {
    ($x:expr, $zero:expr, $lo32:ident, $hi32:ident, $lo64:ident, $hi64:ident) => {{
        let mut y = [[$zero; 4]; 4];
        for g in 0..4 {
            let p = &$x[4 * g..4 * g + 4];
            let u0 = $lo32(p[0], p[1]);
            let u1 = $hi32(p[0], p[1]);
            let u2 = $lo32(p[2], p[3]);
            let u3 = $hi32(p[2], p[3]);
            y[g] = [$lo64(u0, u2), $hi64(u0, u2), $lo64(u1, u3), $hi64(u1, u3)];
        }
        y
    }};
}

/// `copy + at`, or null if `copy` is (the kernels' "no copy").
#[inline]
pub(super) fn at_or_null(copy: *mut u8, at: usize) -> *mut u8 {
    if copy.is_null() { copy } else { copy.wrapping_add(at) }
}
