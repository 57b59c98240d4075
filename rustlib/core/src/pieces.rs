//! The piece sizes the AEAD derives from the CPU's caches and maker
//! (`cpu`), once per process, instead of constants tuned on one machine.
//! Piece sizes only change how a message is cut into steps, never the
//! bytes: every size gives the same ciphertext and tag.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use crate::buffer::huge_page;
use crate::cpu::{self, Caches, Maker};

/// The sizes assumed when the CPU does not tell: a common x86_64 core's.
const DEFAULT_L1D: usize = 32 * 1024;
const DEFAULT_L2: usize = 512 * 1024;

/// The piece sizes of the AEAD (`aead/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pieces {
    /// One piece of the one pass that encrypts (XOR into the private piece
    /// and the output, MAC from the private piece). The piece is written
    /// once and read once right after, and the best size follows the maker
    /// more than the cache sizes (docs/performance.md, "Piece sizes: by cache
    /// and by maker"): on Intel a quarter of the L2, at least 128 KiB
    /// (below that the per-piece work shows), elsewhere the whole L2. A
    /// power of two (pieces are aligned in the MAC input, so BLAKE3 hashes
    /// whole 16-chunk subtrees) of 64 KiB to 1 MiB.
    pub seal_piece: usize,
    /// One piece of the pass that decrypts (copy into private memory, MAC
    /// there): half the L2, so that the piece stays there with the hash
    /// state around it until it is decrypted or staged (larger pieces gain
    /// nothing, same page), and at most the seal piece (the piece buffer is
    /// sized for that). The same bounds.
    pub open_piece: usize,
    /// One keystream step of the staged decryption's last pass (XOR from the
    /// private copy into the output): twice the L1d (input and output of a
    /// step in L1 and L2), a power of two of 16 to 256 KiB.
    pub xor_piece: usize,
}

fn power_of_two_at_most(bytes: usize, min: usize, max: usize) -> usize {
    let floor = if bytes == 0 { 0 } else { 1 << (usize::BITS - 1 - bytes.leading_zeros()) };
    floor.clamp(min, max)
}

/// The piece sizes for `caches` of a CPU by `maker` (unknown sizes: the
/// defaults).
pub fn pieces_for(caches: &Caches, maker: Maker) -> Pieces {
    const K: usize = 1024;
    let l2 = caches.l2.unwrap_or(DEFAULT_L2);
    let l1d = caches.l1d.unwrap_or(DEFAULT_L1D);
    let seal_piece = match maker {
        Maker::Intel => power_of_two_at_most(l2 / 4, 128 * K, 1024 * K),
        Maker::Amd | Maker::Other => power_of_two_at_most(l2, 64 * K, 1024 * K),
    };
    Pieces {
        seal_piece,
        open_piece: power_of_two_at_most(l2 / 2, 64 * K, 1024 * K).min(seal_piece),
        xor_piece: power_of_two_at_most(l1d * 2, 16 * K, 256 * K),
    }
}

/// This CPU's caches and the piece sizes derived from them (once).
pub fn tuning() -> &'static (Caches, Pieces) {
    static TUNING: OnceLock<(Caches, Pieces)> = OnceLock::new();
    TUNING.get_or_init(|| {
        let caches = *cpu::caches();
        (caches, pieces_for(&caches, cpu::maker()))
    })
}

fn human(bytes: Option<usize>) -> String {
    match bytes {
        None => "?".to_owned(),
        Some(b) if b >= 1024 * 1024 && b % (1024 * 1024) == 0 => format!("{} MiB", b / (1024 * 1024)),
        Some(b) if b >= 1024 => format!("{} KiB", b / 1024),
        Some(b) => format!("{b} B"),
    }
}

/// `tuning()` as one line of text, e.g. "L1d 32 KiB, L2 512 KiB, L3 32 MiB
/// (sysfs); seal piece 512 KiB, open piece 256 KiB, xor piece 64 KiB; piece
/// buffer in 2 MiB huge pages".
pub fn describe() -> &'static CStr {
    static TEXT: OnceLock<CString> = OnceLock::new();
    TEXT.get_or_init(|| {
        let (caches, pieces) = tuning();
        let text = format!(
            "L1d {}, L2 {}, L3 {} ({}); seal piece {}, open piece {}, xor piece {}; piece buffer in {}",
            human(caches.l1d),
            human(caches.l2),
            human(caches.l3),
            caches.source,
            human(Some(pieces.seal_piece)),
            human(Some(pieces.open_piece)),
            human(Some(pieces.xor_piece)),
            huge_page().map_or("ordinary pages".to_owned(), |page| format!("{} huge pages", human(Some(page)))),
        );
        CString::new(text).expect("no NUL")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caches(l1d: Option<usize>, l2: Option<usize>) -> Caches {
        Caches { l1d, l2, l3: None, source: "test" }
    }

    #[test]
    fn pieces_follow_the_cache_sizes() {
        const K: usize = 1024;
        let pieces = |seal, open, xor| Pieces { seal_piece: seal * K, open_piece: open * K, xor_piece: xor * K };
        let amd = |l1d, l2| pieces_for(&caches(Some(l1d * K), Some(l2 * K)), Maker::Amd);
        let intel = |l1d, l2| pieces_for(&caches(Some(l1d * K), Some(l2 * K)), Maker::Intel);
        // AMD: the whole L2 (L1d and L2 of 32K and 512K, 32K and 1 MiB, 48K and 1 MiB).
        assert_eq!(amd(32, 512), pieces(512, 256, 64));
        assert_eq!(amd(32, 1024), pieces(1024, 512, 64));
        assert_eq!(amd(48, 1024), pieces(1024, 512, 64));
        // Intel: a quarter of it, at least 128 KiB; the open piece never above
        // the seal piece (L1d and L2 of 48K and 2 MiB, 48K and 1.25 MiB, 32K
        // and 256K).
        assert_eq!(intel(48, 2048), pieces(512, 512, 64));
        assert_eq!(intel(48, 1280), pieces(256, 256, 64));
        assert_eq!(intel(32, 256), pieces(128, 128, 64));
        // Other makers (and other architectures) as AMD.
        for (l1d, l2) in [(32, 512), (64, 2048), (48, 1024)] {
            assert_eq!(pieces_for(&caches(Some(l1d * K), Some(l2 * K)), Maker::Other), amd(l1d, l2));
        }
        // Clamped: tiny or huge caches, and unknown ones (the defaults).
        assert_eq!(amd(4, 64), pieces(64, 64, 16));
        assert_eq!(intel(4, 64), pieces(128, 64, 16));
        assert_eq!(amd(1024, 64 * 1024), pieces(1024, 1024, 256));
        assert_eq!(intel(1024, 64 * 1024), pieces(1024, 1024, 256));
        for maker in [Maker::Intel, Maker::Amd, Maker::Other] {
            let defaults = caches(Some(DEFAULT_L1D), Some(DEFAULT_L2));
            assert_eq!(pieces_for(&caches(None, None), maker), pieces_for(&defaults, maker));
        }
    }

    /// Whatever this machine reports, the derived pieces are in range.
    #[test]
    fn this_machine() {
        let (caches, pieces) = tuning();
        for piece in [pieces.seal_piece, pieces.open_piece] {
            assert!(piece.is_power_of_two() && (64 << 10..=1 << 20).contains(&piece), "{caches:?}");
        }
        assert!(pieces.seal_piece >= pieces.open_piece); // aead/pass.rs sizes the piece buffer for both
        assert!(pieces.xor_piece.is_power_of_two() && (16 << 10..=256 << 10).contains(&pieces.xor_piece));
        eprintln!("{}", describe().to_string_lossy());
    }
}
