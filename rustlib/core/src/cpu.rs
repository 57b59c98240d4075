//! What the CPU is: its cache sizes (from sysfs, else cpuid), its maker and
//! model name, and the SIMD instruction sets cb3's own kernels use. The one
//! place the engine asks the CPU; what it does with the answers lives with
//! the users (the AEAD's piece sizes in `pieces`, the ChaCha kernels'
//! choice in `chacha20::wide` and `chacha20::blocks`).

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

/// This CPU's caches (read once): from sysfs, else cpuid, else unknown
/// ("default").
pub fn caches() -> &'static Caches {
    static CACHES: OnceLock<Caches> = OnceLock::new();
    CACHES.get_or_init(|| from_sysfs().or_else(from_cpuid).unwrap_or(Caches { l1d: None, l2: None, l3: None, source: "default" }))
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

/// Who made the CPU (the piece rule differs by it): from cpuid's vendor
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

/// Whether the BLAKE3 and ChaCha cores run their AVX-512 code here.
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the CPU has AVX2 (the 16-block ChaCha kernels' floor).
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The widest SIMD instruction set this CPU offers to the BLAKE3 and ChaCha
/// cores: "avx512", "avx2", "sse4.1", "sse2", "neon" or "portable".
pub fn simd_backend() -> &'static CStr {
    #[cfg(target_arch = "x86_64")]
    {
        if avx512() {
            return c"avx512";
        }
        if avx2() {
            return c"avx2";
        }
        if is_x86_feature_detected!("sse4.1") {
            return c"sse4.1";
        }
        c"sse2"
    }
    #[cfg(target_arch = "aarch64")]
    {
        c"neon"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        c"portable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// sysfs and cpuid (where both exist) agree on the L1d and L2, and the
    /// maker is the one the kernel reports.
    #[test]
    fn this_machine() {
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
        eprintln!("{:?}, {}, {:?}", caches(), model().to_string_lossy(), simd_backend());
    }
}
