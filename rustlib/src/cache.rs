//! The cache sizes of the CPU the code runs on, and the piece sizes the AEAD
//! derives from them (read once per process), instead of constants tuned on
//! one machine. Piece sizes only change how a message is cut into steps,
//! never the bytes: every size gives the same ciphertext and tag.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

/// Cache sizes in bytes, per instance (the L2 of one core, the whole L3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caches {
    pub l1d: Option<usize>,
    pub l2: Option<usize>,
    pub l3: Option<usize>,
    /// Where the sizes came from: "sysfs", "cpuid" or "default".
    pub source: &'static str,
}

/// The sizes assumed when the CPU does not tell: a common x86_64 core's.
const DEFAULT_L1D: usize = 32 * 1024;
const DEFAULT_L2: usize = 512 * 1024;

/// The piece sizes of `aead.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pieces {
    /// One piece of the one pass that encrypts (XOR into the private piece
    /// and the output, MAC from the private piece): the whole L2. The
    /// piece is written once and read once right after, and pieces of the
    /// whole L2 measured faster than half of it (docs/design/performance.md,
    /// "16 MiB `encrypt_into`"). A power of two (pieces are
    /// aligned in the MAC input, so BLAKE3 hashes whole 16-chunk subtrees)
    /// of 64 KiB to 1 MiB.
    pub seal_piece: usize,
    /// One piece of the pass that decrypts (copy into private memory, MAC
    /// there): half the L2, so that the piece stays there with the hash
    /// state around it until it is decrypted or staged (larger pieces
    /// measured no faster there, same page). The same bounds.
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

/// The piece sizes for `caches` (unknown sizes: the defaults).
pub fn pieces_for(caches: &Caches) -> Pieces {
    let l2 = caches.l2.unwrap_or(DEFAULT_L2);
    let l1d = caches.l1d.unwrap_or(DEFAULT_L1D);
    Pieces {
        seal_piece: power_of_two_at_most(l2, 64 * 1024, 1024 * 1024),
        open_piece: power_of_two_at_most(l2 / 2, 64 * 1024, 1024 * 1024),
        xor_piece: power_of_two_at_most(l1d * 2, 16 * 1024, 256 * 1024),
    }
}

/// A sysfs cache size ("32K", "512K", "32768K", "1M"), in bytes.
fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, unit) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 1024),
        b'M' | b'm' => (&text[..text.len() - 1], 1024 * 1024),
        b'G' | b'g' => (&text[..text.len() - 1], 1024 * 1024 * 1024),
        _ => (text, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(unit).filter(|&size| size > 0)
}

/// Caches from the (level, type, size) entries of one CPU's cache list.
fn caches_from<'a>(entries: impl Iterator<Item = (u32, &'a str, Option<usize>)>, source: &'static str) -> Caches {
    let mut caches = Caches { l1d: None, l2: None, l3: None, source };
    for (level, kind, size) in entries {
        match (level, kind) {
            (1, "Data") => caches.l1d = size,
            (2, "Unified") => caches.l2 = size,
            (3, "Unified") => caches.l3 = size,
            _ => {}
        }
    }
    caches
}

/// cpu0's caches from /sys/devices/system/cpu/cpu0/cache/index*/.
fn from_sysfs() -> Option<Caches> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut entries = Vec::new();
    for entry in dir.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        let (Some(level), Some(kind)) = (read("level"), read("type")) else { continue };
        let Ok(level) = level.trim().parse::<u32>() else { continue };
        entries.push((level, kind.trim().to_owned(), read("size").as_deref().and_then(parse_size)));
    }
    let caches = caches_from(entries.iter().map(|(l, k, s)| (*l, k.as_str(), *s)), "sysfs");
    (caches.l1d.is_some() || caches.l2.is_some()).then_some(caches)
}

/// The caches from cpuid's deterministic cache parameters (leaf 4 on Intel,
/// 0x8000_001D on AMD: the same layout).
#[cfg(target_arch = "x86_64")]
fn from_cpuid() -> Option<Caches> {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // Leaves are read only up to the highest one the CPU reports.
    let (max, max_ext) = (__cpuid(0).eax, __cpuid(0x8000_0000).eax);
    let leaf = if max >= 4 && __cpuid_count(4, 0).eax & 0x1F != 0 {
        4
    } else if max_ext >= 0x8000_001D {
        0x8000_001D
    } else {
        return None;
    };
    let mut entries = Vec::new();
    for sub in 0..16 {
        let r = __cpuid_count(leaf, sub);
        let kind = match r.eax & 0x1F {
            0 => break,
            1 => "Data",
            2 => "Instruction",
            _ => "Unified",
        };
        let level = (r.eax >> 5) & 0x7;
        let ways = ((r.ebx >> 22) & 0x3FF) as usize + 1;
        let partitions = ((r.ebx >> 12) & 0x3FF) as usize + 1;
        let line = (r.ebx & 0xFFF) as usize + 1;
        let sets = r.ecx as usize + 1;
        entries.push((level, kind, Some(ways * partitions * line * sets)));
    }
    let caches = caches_from(entries.into_iter(), "cpuid");
    (caches.l1d.is_some() || caches.l2.is_some()).then_some(caches)
}

#[cfg(not(target_arch = "x86_64"))]
fn from_cpuid() -> Option<Caches> {
    None
}

fn detect() -> Caches {
    from_sysfs().or_else(from_cpuid).unwrap_or(Caches { l1d: None, l2: None, l3: None, source: "default" })
}

/// This CPU's caches and the piece sizes derived from them (once).
pub fn tuning() -> &'static (Caches, Pieces) {
    static TUNING: OnceLock<(Caches, Pieces)> = OnceLock::new();
    TUNING.get_or_init(|| {
        let caches = detect();
        (caches, pieces_for(&caches))
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
/// (sysfs); seal piece 512 KiB, open piece 256 KiB, xor piece 64 KiB".
pub fn describe() -> &'static CStr {
    static TEXT: OnceLock<CString> = OnceLock::new();
    TEXT.get_or_init(|| {
        let (caches, pieces) = tuning();
        let text = format!(
            "L1d {}, L2 {}, L3 {} ({}); seal piece {}, open piece {}, xor piece {}",
            human(caches.l1d),
            human(caches.l2),
            human(caches.l3),
            caches.source,
            human(Some(pieces.seal_piece)),
            human(Some(pieces.open_piece)),
            human(Some(pieces.xor_piece)),
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
        // Zen 3 in a VM (32K L1d, 512K L2).
        assert_eq!(pieces_for(&caches(Some(32 * K), Some(512 * K))), pieces(512, 256, 64));
        // Zen 4 (32K L1d, 1 MiB L2), Zen 5 (48K, 1 MiB), Intel with 48K L1d and 1.25 or 2 MiB L2.
        assert_eq!(pieces_for(&caches(Some(32 * K), Some(1024 * K))), pieces(1024, 512, 64));
        assert_eq!(pieces_for(&caches(Some(48 * K), Some(1024 * K))), pieces(1024, 512, 64));
        assert_eq!(pieces_for(&caches(Some(48 * K), Some(1280 * K))), pieces(1024, 512, 64));
        assert_eq!(pieces_for(&caches(Some(48 * K), Some(2048 * K))), pieces(1024, 1024, 64));
        // Clamped: tiny or huge caches, and unknown ones (the defaults).
        assert_eq!(pieces_for(&caches(Some(4 * K), Some(64 * K))), pieces(64, 64, 16));
        assert_eq!(pieces_for(&caches(Some(1024 * K), Some(64 * 1024 * K))), pieces(1024, 1024, 256));
        assert_eq!(pieces_for(&caches(None, None)), pieces_for(&caches(Some(DEFAULT_L1D), Some(DEFAULT_L2))));
    }

    #[test]
    fn sysfs_sizes_parse() {
        assert_eq!(["32K", "512K\n", "32768K", "1M", "2G", "100"].map(parse_size), [
            Some(32 << 10),
            Some(512 << 10),
            Some(32 << 20),
            Some(1 << 20),
            Some(2 << 30),
            Some(100)
        ]);
        assert_eq!(["", "K", "x", "-1K", "0K"].map(parse_size), [None; 5]);
        let entries = [(1, "Data", Some(48 << 10)), (1, "Instruction", Some(32 << 10)), (2, "Unified", Some(2 << 20)), (3, "Unified", Some(30 << 20))];
        assert_eq!(caches_from(entries.into_iter(), "sysfs"), Caches { l1d: Some(48 << 10), l2: Some(2 << 20), l3: Some(30 << 20), source: "sysfs" });
    }

    /// Whatever this machine reports, the derived pieces are in range, and
    /// sysfs and cpuid (where both exist) agree on the L1d and L2.
    #[test]
    fn this_machine() {
        let (caches, pieces) = tuning();
        for piece in [pieces.seal_piece, pieces.open_piece] {
            assert!(piece.is_power_of_two() && (64 << 10..=1 << 20).contains(&piece), "{caches:?}");
        }
        assert!(pieces.seal_piece >= pieces.open_piece); // aead.rs sizes the piece buffer for both
        assert!(pieces.xor_piece.is_power_of_two() && (16 << 10..=256 << 10).contains(&pieces.xor_piece));
        if let (Some(sysfs), Some(cpuid)) = (from_sysfs(), from_cpuid()) {
            assert_eq!((sysfs.l1d, sysfs.l2), (cpuid.l1d, cpuid.l2));
        }
        eprintln!("{}", describe().to_string_lossy());
    }
}
