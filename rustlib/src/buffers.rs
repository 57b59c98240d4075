//! The one place where C pointers become Rust slices.
//!
//! Safety contract (stated once here, relied on by every export): a caller
//! passes `(ptr, len)` pairs that are either `(NULL, 0)` or point to `len`
//! readable (inputs) or writable (outputs) bytes that stay valid and are not
//! written by anyone else for the duration of the call. Rust's aliasing rules
//! forbid a `&[u8]` and a `&mut [u8]` over the same bytes, so overlap is
//! checked on the raw addresses *before* any slice is formed: an output may
//! only alias an input where a function explicitly allows it (exact in-place),
//! and that case is then handled with a single `&mut [u8]`.

use cb3_core::chacha20::Source;

use crate::errors::{cb3_result, Cb3Result};

/// A raw `(pointer, length)` pair as it arrives from C.
#[derive(Clone, Copy)]
pub struct Raw {
    pub ptr: *const u8,
    pub len: usize,
}

impl Raw {
    pub fn new(ptr: *const u8, len: usize) -> Cb3Result<Self> {
        if ptr.is_null() && len != 0 {
            return Err(cb3_result::NullParameter);
        }
        if len > isize::MAX as usize {
            return Err(cb3_result::InvalidArgument);
        }
        Ok(Raw { ptr, len })
    }

    /// The first `need` bytes of the output buffer `(ptr, capacity)`: NULL
    /// (when `need` is not 0) is `CB3_RESULT_NULL_PARAMETER`, a capacity
    /// below `need` `CB3_RESULT_INSUFFICIENT_SIZE`.
    pub fn output(ptr: *mut u8, capacity: usize, need: usize) -> Cb3Result<Self> {
        if ptr.is_null() && need > 0 {
            return Err(cb3_result::NullParameter);
        }
        if capacity < need {
            return Err(cb3_result::InsufficientSize);
        }
        Raw::new(ptr, need)
    }

    fn range(&self) -> (usize, usize) {
        let start = self.ptr as usize;
        (start, start + self.len)
    }

    /// True if the two byte ranges share at least one byte.
    pub fn overlaps(&self, other: &Raw) -> bool {
        if self.len == 0 || other.len == 0 {
            return false;
        }
        let (a0, a1) = self.range();
        let (b0, b1) = other.range();
        a0 < b1 && b0 < a1
    }

    /// # Safety
    /// See the module contract: `len` readable bytes, not written during the call.
    pub unsafe fn as_slice<'a>(&self) -> &'a [u8] {
        if self.len == 0 {
            &[]
        } else {
            // SAFETY: `ptr` is not NULL (Raw::new refused NULL with a
            // length), `len` is at most PTRDIFF_MAX, and the caller guarantees
            // `len` readable bytes that nobody writes during the call.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }

    /// # Safety
    /// See the module contract: `len` writable bytes with no other live reference.
    pub unsafe fn as_mut_slice<'a>(&self) -> &'a mut [u8] {
        if self.len == 0 {
            &mut []
        } else {
            // SAFETY: as for `as_slice`, and the caller guarantees the bytes
            // are writable with no other live reference to them.
            unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.len) }
        }
    }
}

/// A fixed-size input such as a key, nonce or tag.
///
/// # Safety
/// See the module contract.
pub unsafe fn fixed<'a, const N: usize>(
    ptr: *const u8,
    len: usize,
    wrong_length: cb3_result,
) -> Cb3Result<&'a [u8; N]> {
    if ptr.is_null() {
        return Err(cb3_result::NullParameter);
    }
    if len != N {
        return Err(wrong_length);
    }
    // SAFETY: `ptr` is not NULL and the caller guarantees `len` == N readable
    // bytes for the call; [u8; N] has alignment 1.
    Ok(unsafe { &*(ptr as *const [u8; N]) })
}

/// Fails with `CB3_RESULT_OVERLAPPING_BUFFERS` if `output` shares a byte with
/// any of `inputs`.
pub fn disjoint(output: &Raw, inputs: &[Raw]) -> Cb3Result<()> {
    if inputs.iter().any(|input| output.overlaps(input)) {
        return Err(cb3_result::OverlappingBuffers);
    }
    Ok(())
}

/// Writes `value` through `out` if it is not NULL.
///
/// # Safety
/// `out` is NULL or valid for one write of `T`.
pub unsafe fn store<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: not NULL, and the caller guarantees it is valid for a write.
        unsafe { out.write(value) };
    }
}

/// Resolves the data input and the output of an out-of-place call: either the
/// output starts exactly at the input (in place) or the two are disjoint.
/// Every other buffer in `others` must be disjoint from the output.
///
/// # Safety
/// See the module contract: valid `(ptr, len)` pairs.
pub unsafe fn data_and_output<'a>(data: Raw, out: Raw, others: &[Raw]) -> Cb3Result<(Source<'a>, &'a mut [u8])> {
    disjoint(&out, others)?;
    if data.len > 0 && data.ptr == out.ptr {
        // SAFETY: the caller's contract: `out` is valid for writes of its length.
        return Ok((Source::InPlace, unsafe { out.as_mut_slice() }));
    }
    disjoint(&out, &[data])?;
    // SAFETY: the caller's contract (valid pairs), and the two are disjoint.
    Ok((Source::Separate(unsafe { data.as_slice() }), unsafe { out.as_mut_slice() }))
}
