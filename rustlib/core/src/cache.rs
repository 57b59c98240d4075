//! The cache sizes and maker of the CPU the code runs on, and the piece
//! sizes the AEAD derives from them (read once per process), instead of
//! constants tuned on one machine; and the buffer the pieces go in, in the
//! system's huge pages. Piece sizes only change how a message is cut into
//! steps, never the bytes: every size gives the same ciphertext and tag.

use std::alloc::{self, Layout};
use std::ffi::{CStr, CString};
use std::ptr::NonNull;
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
    /// and the output, MAC from the private piece). The piece is written
    /// once and read once right after, and the best size followed the maker
    /// more than the cache sizes (docs/design/performance.md, "The seal
    /// piece, by maker"): on Intel a quarter of the L2 (two Xeons with
    /// 2 MiB L2s: 512 KiB pieces 2-4 % faster than 1 MiB ones, at least
    /// 128 KiB, below which the per-piece work showed), elsewhere the whole
    /// L2 (a Zen 5: 1 MiB pieces 4 % faster than 512 KiB ones). A power of
    /// two (pieces are aligned in the MAC input, so BLAKE3 hashes whole
    /// 16-chunk subtrees) of 64 KiB to 1 MiB.
    pub seal_piece: usize,
    /// One piece of the pass that decrypts (copy into private memory, MAC
    /// there): half the L2, so that the piece stays there with the hash
    /// state around it until it is decrypted or staged (larger pieces
    /// measured no faster there, same page), and at most the seal piece
    /// (the piece buffer is sized for that). The same bounds.
    pub open_piece: usize,
    /// One keystream step of the staged decryption's last pass (XOR from the
    /// private copy into the output): twice the L1d (input and output of a
    /// step in L1 and L2), a power of two of 16 to 256 KiB.
    pub xor_piece: usize,
}

/// Who made the CPU, where the piece rule differs by it: from cpuid's vendor
/// string on x86-64 (`Other` elsewhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Maker {
    Intel,
    Amd,
    Other,
}

impl Maker {
    /// "Intel", "AMD" or "other".
    pub fn name(self) -> &'static CStr {
        match self {
            Maker::Intel => c"Intel",
            Maker::Amd => c"AMD",
            Maker::Other => c"other",
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub fn maker() -> Maker {
    let id = std::arch::x86_64::__cpuid(0);
    let mut vendor = [0u8; 12];
    for (bytes, word) in vendor.chunks_exact_mut(4).zip([id.ebx, id.edx, id.ecx]) {
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    match &vendor {
        b"GenuineIntel" => Maker::Intel,
        b"AuthenticAMD" => Maker::Amd,
        _ => Maker::Other,
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn maker() -> Maker {
    Maker::Other
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

/// The CPU's model name: cpuid's brand string on x86-64 (leaves
/// 0x80000002-4, spaces trimmed); elsewhere the `MIDR_EL1` register as
/// "implementer 0xII part 0xPPP" from sysfs; "unknown" where neither exists.
pub fn model() -> &'static CStr {
    static MODEL: OnceLock<CString> = OnceLock::new();
    MODEL.get_or_init(|| CString::new(model_text().unwrap_or_else(|| "unknown".into())).unwrap_or_default())
}

#[cfg(target_arch = "x86_64")]
fn model_text() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    if __cpuid(0x8000_0000).eax < 0x8000_0004 {
        return None;
    }
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002..=0x8000_0004u32 {
        let r = __cpuid(leaf);
        for word in [r.eax, r.ebx, r.ecx, r.edx] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    let text: String = String::from_utf8_lossy(&bytes).trim_matches(|c: char| c == '\0' || c.is_whitespace()).into();
    (!text.is_empty()).then_some(text)
}

#[cfg(not(target_arch = "x86_64"))]
fn model_text() -> Option<String> {
    let midr = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1").ok()?;
    let midr = u64::from_str_radix(midr.trim().trim_start_matches("0x"), 16).ok()?;
    Some(format!("implementer {:#04x} part {:#05x}", (midr >> 24) & 0xff, (midr >> 4) & 0xfff))
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
        (caches, pieces_for(&caches, maker()))
    })
}

/// The largest transparent huge page a piece buffer is laid out in: Linux
/// on x86-64 and on arm64 with 4 KiB pages has 2 MiB ones; arm64 kernels
/// with 16 or 64 KiB pages have 32 or 512 MiB ones, far more than a piece.
const MAX_HUGE_PAGE: usize = 4 << 20;

/// The size of the transparent huge pages this system backs advised memory
/// with (Linux with /sys/kernel/mm/transparent_hugepage/enabled "always" or
/// "madvise"), if at most `MAX_HUGE_PAGE`; else None (read once).
fn huge_page() -> Option<usize> {
    static HUGE_PAGE: OnceLock<Option<usize>> = OnceLock::new();
    *HUGE_PAGE.get_or_init(|| {
        let read = |name| std::fs::read_to_string(format!("/sys/kernel/mm/transparent_hugepage/{name}")).ok();
        huge_page_from(&read("enabled")?, &read("hpage_pmd_size")?)
    })
}

/// `huge_page()` from the texts of sysfs's `enabled` ("always [madvise]
/// never": the mode in brackets) and `hpage_pmd_size` (bytes).
fn huge_page_from(enabled: &str, size: &str) -> Option<usize> {
    if !(enabled.contains("[always]") || enabled.contains("[madvise]")) {
        return None;
    }
    let size = size.trim().parse::<usize>().ok()?;
    (size.is_power_of_two() && size <= MAX_HUGE_PAGE).then_some(size)
}

/// A zeroed buffer for the AEAD's pieces (`aead.rs`, one per thread), laid
/// out in whole transparent huge pages where `huge_page()` gives their
/// size: its bytes are then physically contiguous, so a piece the size of
/// the L2 spreads over the L2's sets evenly instead of wherever the 4 KiB
/// pages of an ordinary allocation happen to fall (likely colliding, so
/// that lines of the piece leave the L2 before the MAC reads them: an
/// Intel Xeon's `encrypt_into` took 1.07-1.09 of cb3's own two primitives
/// with 4 KiB pages and 0.99-1.03 with one 2 MiB page;
/// docs/design/performance.md). The first write may make the kernel
/// compact memory to find a huge page: once per thread. Elsewhere, an
/// ordinary allocation of the length asked for.
pub struct PieceBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl PieceBuffer {
    /// An empty buffer, which allocates nothing.
    pub const EMPTY: PieceBuffer = PieceBuffer { ptr: NonNull::dangling(), layout: Layout::new::<()>() };

    /// A zeroed buffer of at least `len` bytes (more when rounded up to
    /// whole huge pages); None if the memory cannot be had.
    pub fn new(len: usize) -> Option<PieceBuffer> {
        if len == 0 {
            return Some(PieceBuffer::EMPTY);
        }
        let Some(page) = huge_page() else {
            let layout = Layout::from_size_align(len, 64).ok()?;
            // SAFETY: `layout` has a non-zero size.
            let ptr = NonNull::new(unsafe { alloc::alloc_zeroed(layout) })?;
            return Some(PieceBuffer { ptr, layout });
        };
        let layout = Layout::from_size_align(len.checked_next_multiple_of(page)?, page).ok()?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc(layout) })?;
        // Advised before the first write, so that the pages are huge from
        // their first fault (an error only leaves them small).
        #[cfg(target_os = "linux")]
        // SAFETY: the range is this allocation's, aligned to a page.
        unsafe {
            libc::madvise(ptr.as_ptr().cast(), layout.size(), libc::MADV_HUGEPAGE);
        }
        // SAFETY: the allocation holds `layout.size()` bytes.
        unsafe { ptr.as_ptr().write_bytes(0, layout.size()) };
        Some(PieceBuffer { ptr, layout })
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len()` zeroed-then-owned bytes (none for EMPTY, whose
        // dangling pointer is aligned and non-null as a slice needs).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }
}

impl Drop for PieceBuffer {
    fn drop(&mut self) {
        if self.layout.size() > 0 {
            // SAFETY: allocated in `new` with this layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
        }
    }
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
        // AMD: the whole L2. Zen 3 in a VM (32K L1d, 512K L2), Zen 4 (32K, 1 MiB), Zen 5 (48K, 1 MiB).
        assert_eq!(amd(32, 512), pieces(512, 256, 64));
        assert_eq!(amd(32, 1024), pieces(1024, 512, 64));
        assert_eq!(amd(48, 1024), pieces(1024, 512, 64));
        // Intel: a quarter of it, at least 128 KiB; the open piece never above
        // the seal piece. Xeons with 48K L1d and 2 MiB L2, with 1.25 MiB
        // L2, a client core with 256K.
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

    #[test]
    fn huge_pages_only_where_advised_memory_gets_them() {
        let advised = "always [madvise] never\n";
        assert_eq!(huge_page_from(advised, "2097152\n"), Some(2 << 20));
        assert_eq!(huge_page_from("[always] madvise never", "2097152"), Some(2 << 20));
        assert_eq!(huge_page_from("always madvise [never]", "2097152"), None);
        // arm64 kernels with 16 and 64 KiB base pages: far more than a piece.
        assert_eq!(huge_page_from(advised, "33554432"), None);
        assert_eq!(huge_page_from(advised, "536870912"), None);
        assert_eq!(["", "0", "x", "3000000"].map(|size| huge_page_from(advised, size)), [None; 4]);
    }

    /// A piece buffer is zeroed, at least as long as asked, and in whole
    /// huge pages (aligned to one) where the system has them; allocated
    /// anew, it is zeroed again whatever the last one held.
    #[test]
    fn piece_buffers() {
        assert_eq!(PieceBuffer::EMPTY.len(), 0);
        assert!(PieceBuffer::new(0).expect("nothing to allocate").as_mut_slice().is_empty());
        for len in [1, 4096, (1 << 20) + 128, (2 << 20) + 1] {
            let mut buffer = PieceBuffer::new(len).expect("memory");
            assert!(buffer.len() >= len);
            let bytes = buffer.as_mut_slice();
            assert!(bytes.iter().all(|&b| b == 0), "{len}");
            if let Some(page) = huge_page() {
                assert_eq!((bytes.as_ptr() as usize % page, bytes.len() % page), (0, 0), "{len}");
            } else {
                assert_eq!(bytes.len(), len);
            }
            bytes.fill(0xA5);
        }
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
        // The maker as the kernel reports it.
        if let (true, Ok(info)) = (cfg!(target_arch = "x86_64"), std::fs::read_to_string("/proc/cpuinfo")) {
            let vendor = info.lines().find_map(|line| line.strip_prefix("vendor_id")?.split(':').nth(1)).map(str::trim);
            let expected = match vendor {
                Some("GenuineIntel") => Maker::Intel,
                Some("AuthenticAMD") => Maker::Amd,
                _ => Maker::Other,
            };
            assert_eq!(maker(), expected, "{vendor:?}");
        }
        eprintln!("{}", describe().to_string_lossy());
    }
}
