//! The buffer the AEAD's pieces go in (`pieces`): zeroed, and laid out in
//! the system's transparent huge pages where it has them.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// The largest transparent huge page a piece buffer is laid out in: Linux
/// on x86-64 and on arm64 with 4 KiB pages has 2 MiB ones; arm64 kernels
/// with 16 or 64 KiB pages have 32 or 512 MiB ones, far more than a piece.
const MAX_HUGE_PAGE: usize = 4 << 20;

/// The size of the transparent huge pages this system backs advised memory
/// with (Linux with /sys/kernel/mm/transparent_hugepage/enabled "always" or
/// "madvise"), if at most `MAX_HUGE_PAGE`; else None (read once).
pub(crate) fn huge_page() -> Option<usize> {
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

/// A zeroed buffer for the AEAD's pieces (`aead/pass.rs`, one per thread), laid
/// out in whole transparent huge pages where `huge_page()` gives their
/// size: its bytes are then physically contiguous, so a piece the size of
/// the L2 spreads over the L2's sets evenly instead of wherever the 4 KiB
/// pages of an ordinary allocation happen to fall (likely colliding, so
/// that lines of the piece leave the L2 before the MAC reads them;
/// docs/performance.md, "Piece sizes"). The first write may make the kernel
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
