//! Bit storage for Bloom links: a zero-initialised, fallibly allocated array of
//! 64-bit words.
//!
//! Bit `x` lives in word `x / 64` at bit `x % 64` (least significant first). Viewed
//! as little-endian bytes that is byte `x / 8`, bit `x % 8`: the byte view is what
//! RDB, SCANDUMP and AOF carry, so the persisted form is platform-independent.
//!
//! Plain `u64` words, not `bitvec`: see the README's design notes for the
//! measurement behind that choice.

use std::alloc::Layout;

#[cfg(not(target_endian = "little"))]
compile_error!("ferrobloom's byte views of bit arrays assume a little-endian target");

/// Allocation failure: the allocator returned null (the Redis layer maps it to
/// `ERR Insufficient memory ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocError;

/// One 64-byte cache line of bits (the unit the blocked Bloom layout probes).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Line(pub [u64; 8]);

/// Bits per [`Line`].
pub const LINE_BITS: u64 = 512;

/// A fixed-size array of zeroed 64-bit words, allocated as whole cache lines
/// aligned to 64 bytes (so a 512-bit block is exactly one cache line). The
/// words past `len` in the last line are never read, written or persisted.
pub struct Words {
    lines: Box<[Line]>,
    /// Number of words in use (`<= lines.len() * 8`).
    len: usize,
}

impl Words {
    /// Allocates `n` zeroed words, returning an error instead of aborting when the
    /// allocator has no memory. Uses `alloc_zeroed`, which large allocators serve
    /// with lazily-zeroed pages.
    pub fn zeroed(n: usize) -> Result<Self, AllocError> {
        let count = n.div_ceil(8);
        Ok(Words {
            lines: zeroed_lines(count)?,
            len: n,
        })
    }

    /// A fallible deep copy.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let mut lines = zeroed_lines(self.lines.len())?;
        lines.copy_from_slice(&self.lines);
        Ok(Words {
            lines,
            len: self.len,
        })
    }

    /// The words in use.
    #[inline(always)]
    pub fn words(&self) -> &[u64] {
        // SAFETY: `Line` is `repr(C)` over `[u64; 8]` with no padding (64 bytes,
        // align 64), so the lines are `lines.len() * 8` contiguous u64s, and
        // `len <= lines.len() * 8` by construction.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const u64, self.len) }
    }

    #[inline(always)]
    pub(crate) fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `words`, with unique access through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut u64, self.len) }
    }

    /// Cache line `i`, if it exists.
    #[inline(always)]
    pub fn line(&self, i: u64) -> Option<&Line> {
        self.lines.get(usize::try_from(i).ok()?)
    }

    /// Cache line `i` for writing, if it exists.
    #[inline(always)]
    pub fn line_mut(&mut self, i: u64) -> Option<&mut Line> {
        self.lines.get_mut(usize::try_from(i).ok()?)
    }

    /// Hints the CPU to fetch cache line `i`.
    #[inline(always)]
    pub fn prefetch_line(&self, i: u64) {
        if let Some(l) = self.line(i) {
            prefetch(l as *const Line as *const u8);
        }
    }

    #[inline]
    pub fn len_bits(&self) -> u64 {
        self.len as u64 * 64
    }

    /// Sets bit `bit`; out-of-range bits are ignored (callers only pass bits below
    /// `len_bits()`, and this keeps a logic error from becoming a crash).
    #[inline(always)]
    pub fn set(&mut self, bit: u64) {
        if let Some(w) = self.words_mut().get_mut((bit >> 6) as usize) {
            *w |= 1u64 << (bit & 63);
        }
    }

    /// Reads bit `bit`; out-of-range bits read as 0.
    #[inline(always)]
    pub fn get(&self, bit: u64) -> bool {
        match self.words().get((bit >> 6) as usize) {
            Some(w) => (w >> (bit & 63)) & 1 == 1,
            None => false,
        }
    }

    /// Hints the CPU to fetch the cache line holding `bit`.
    #[inline(always)]
    pub fn prefetch(&self, bit: u64) {
        self.prefetch_line(bit >> 9);
    }

    /// Asks the kernel to back the words with memory now, in one call
    /// (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14+), rather than by one page
    /// fault per 4 KiB page on first write: a fresh, lazily zeroed allocation
    /// about to be written whole (BF.MERGE into a new key) is then filled about
    /// 1.6x faster. Only for allocations of at least 1 MiB; a kernel without
    /// the call refuses it and the pages fault in as usual. Changes no bits.
    pub fn populate(&mut self) {
        #[cfg(target_os = "linux")]
        {
            const MADV_POPULATE_WRITE: libc::c_int = 23;
            const PAGE: usize = 4096;
            let bytes = std::mem::size_of_val(&*self.lines);
            if bytes < (1 << 20) {
                return;
            }
            let start = self.lines.as_mut_ptr() as usize;
            let first = start.div_ceil(PAGE) * PAGE;
            let end = (start + bytes) / PAGE * PAGE;
            if end > first {
                // SAFETY: whole pages inside our own allocation; populating
                // writes nothing a reader could see (the pages stay zero).
                unsafe {
                    libc::madvise(first as *mut libc::c_void, end - first, MADV_POPULATE_WRITE)
                };
            }
        }
    }

    /// The little-endian byte view (what gets persisted).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: u64 has no padding and every byte pattern is a valid u8; the
        // length is exact; alignment of u8 is 1.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const u8, self.len * 8) }
    }

    /// The mutable little-endian byte view (for loading persisted bytes).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_bytes`; every byte pattern is a valid u64.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut u8, self.len * 8) }
    }

    /// The heap block holding the words (`None` when empty), for memory
    /// accounting: its address, requested size and alignment.
    pub fn heap_block(&self) -> Option<(*const u8, usize, usize)> {
        (!self.lines.is_empty()).then(|| {
            (
                self.lines.as_ptr() as *const u8,
                std::mem::size_of_val(&*self.lines),
                std::mem::align_of::<Line>(),
            )
        })
    }

    /// Number of set bits (for tests and diagnostics).
    pub fn count_ones(&self) -> u64 {
        self.words().iter().map(|w| w.count_ones() as u64).sum()
    }
}

/// Allocates `count` zeroed, 64-byte-aligned lines without aborting on failure.
fn zeroed_lines(count: usize) -> Result<Box<[Line]>, AllocError> {
    if count == 0 {
        return Ok(Box::new([]));
    }
    let layout = Layout::array::<Line>(count).map_err(|_| AllocError)?;
    // SAFETY: layout has a non-zero size; a null result is handled.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut Line;
    if ptr.is_null() {
        return Err(AllocError);
    }
    // SAFETY: ptr points to `count` zeroed (valid) lines allocated with the
    // global allocator and the layout Box<[Line]> uses for `count` elements.
    Ok(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, count)) })
}

/// Hints the CPU to fetch the cache line at `p` (no effect on other targets).
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural side effects.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_and_byte_view_are_lsb_first() {
        let mut w = Words::zeroed(2).unwrap();
        assert_eq!(w.len_bits(), 128);
        w.set(0);
        w.set(9);
        w.set(127);
        w.set(128); // out of range: ignored
        assert!(w.get(0) && w.get(9) && w.get(127));
        assert!(!w.get(1) && !w.get(128) && !w.get(u64::MAX));
        let b = w.as_bytes();
        assert_eq!(b.len(), 16);
        assert_eq!(b[0], 0b0000_0001);
        assert_eq!(b[1], 0b0000_0010);
        assert_eq!(b[15], 0b1000_0000);
        assert_eq!(w.count_ones(), 3);
        let c = w.try_clone().unwrap();
        assert_eq!(c.as_bytes(), w.as_bytes());
    }

    #[test]
    fn zero_length_and_absurd_length() {
        assert_eq!(Words::zeroed(0).unwrap().len_bits(), 0);
        let w = Words::zeroed(9).unwrap();
        assert_eq!(
            w.as_bytes().len(),
            72,
            "only the words in use are persisted"
        );
        assert!(w.line(1).is_some() && w.line(2).is_none());
        assert_eq!(
            w.line(0).unwrap() as *const Line as usize % 64,
            0,
            "lines are aligned"
        );
        assert!(Words::zeroed(usize::MAX).is_err());
    }
}
