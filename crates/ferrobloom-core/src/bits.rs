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

use crate::relocate::Pass;

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

/// Bytes per chunk of a [`Written`] map: one page, the unit the OS zeroes
/// lazily, so a copy copies what the original holds in memory (larger chunks
/// made a Bloom filter's sparse, random writes copy far more: 100 items in a
/// 418 MB filter at 1e-7 touch 2,400 pages but a third of its 64 KiB chunks).
pub const WRITTEN_CHUNK: usize = 4096;
/// Arrays shorter than this are not tracked by a [`Written`] map (a copy copies
/// them whole: at most 1 MiB, and below it the allocator zeroes eagerly anyway).
pub const WRITTEN_MIN: usize = 1 << 20;

/// Which [`WRITTEN_CHUNK`]-byte chunks of a zeroed array were ever written, one
/// bit each (128 KiB of map for 4 GiB of array). A large array is allocated with
/// lazily zeroed pages (`redis::alloc`), so a chunk never written is all zeroes
/// and holds no memory: a copy (COPY) allocates its array the same way and
/// copies only the written chunks, costing what the filter holds rather than
/// what it reserved (issue 19: COPY of a 418 MB never-written Bloom filter took
/// 0.33 s and 418 MB of RSS). Every write path marks what it writes; loading a
/// whole array marks all of it. Not persisted. An untracked (empty) map, for
/// arrays below [`WRITTEN_MIN`], means "copy everything".
#[derive(Default)]
pub struct Written {
    bits: Vec<u64>,
}

impl Written {
    /// The map for an array of `len` bytes (empty below [`WRITTEN_MIN`]).
    pub fn for_len(len: usize) -> Result<Self, AllocError> {
        if len < WRITTEN_MIN {
            return Ok(Written::default());
        }
        let words = len.div_ceil(WRITTEN_CHUNK).div_ceil(64);
        let mut bits = Vec::new();
        bits.try_reserve_exact(words).map_err(|_| AllocError)?;
        bits.resize(words, 0);
        Ok(Written { bits })
    }

    /// Marks the chunk holding byte `byte` (ignored out of range). Reads
    /// before it writes: once a filter's pages are all marked (soon, for a
    /// Bloom filter's random writes) a write costs one well-predicted branch
    /// on a small, cached map, and no store.
    #[inline(always)]
    pub fn mark(&mut self, byte: usize) {
        let c = byte / WRITTEN_CHUNK;
        if let Some(w) = self.bits.get_mut(c / 64) {
            let m = 1u64 << (c % 64);
            if *w & m == 0 {
                *w |= m;
            }
        }
    }

    /// Marks every chunk overlapping bytes `start .. end`.
    pub fn mark_range(&mut self, start: usize, end: usize) {
        if start >= end || self.bits.is_empty() {
            return;
        }
        for c in start / WRITTEN_CHUNK..=(end - 1) / WRITTEN_CHUNK {
            if let Some(w) = self.bits.get_mut(c / 64) {
                *w |= 1u64 << (c % 64);
            } else {
                break;
            }
        }
    }

    /// Whether writes are tracked (a large array, until [`retire`](Self::retire)).
    #[inline(always)]
    pub fn is_tracking(&self) -> bool {
        !self.bits.is_empty()
    }

    /// Stops tracking and frees the map: from now on a copy copies the whole
    /// array (always correct; for arrays whose writes have reached nearly every
    /// page, where tracking saves nothing).
    pub fn retire(&mut self) {
        self.bits = Vec::new();
    }

    /// Marks the whole array.
    pub fn mark_all(&mut self) {
        self.bits.iter_mut().for_each(|w| *w = u64::MAX);
    }

    /// A fallible copy of the map.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let mut bits = Vec::new();
        bits.try_reserve_exact(self.bits.len())
            .map_err(|_| AllocError)?;
        bits.extend_from_slice(&self.bits);
        Ok(Written { bits })
    }

    /// Copies into `dst` (zeroed, as long as `src`) every chunk of `src` that
    /// may hold a non-zero byte: all of it when untracked.
    pub fn copy_written(&self, src: &[u8], dst: &mut [u8]) {
        if self.bits.is_empty() {
            let n = src.len().min(dst.len());
            if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
                d.copy_from_slice(s);
            }
            return;
        }
        for (i, &word) in self.bits.iter().enumerate() {
            let mut w = word;
            while w != 0 {
                let c = i * 64 + w.trailing_zeros() as usize;
                w &= w - 1;
                let start = c.saturating_mul(WRITTEN_CHUNK);
                let end = start.saturating_add(WRITTEN_CHUNK).min(src.len());
                if let (Some(d), Some(s)) = (dst.get_mut(start..end), src.get(start..end)) {
                    d.copy_from_slice(s);
                }
            }
        }
    }

    /// Bytes a copy copies out of an array of `len` bytes.
    pub fn copied_bytes(&self, len: usize) -> u64 {
        if self.bits.is_empty() {
            return len as u64;
        }
        let chunks: u64 = self.bits.iter().map(|w| u64::from(w.count_ones())).sum();
        chunks.saturating_mul(WRITTEN_CHUNK as u64).min(len as u64)
    }

    /// Offers the map's block to a relocation pass (one block number).
    pub(crate) fn relocate_blocks(&mut self, pass: &mut Pass) {
        pass.vec(&mut self.bits);
    }

    /// The map's heap block, for memory accounting (see `Words::heap_block`).
    pub fn heap_block(&self) -> Option<(*const u8, usize, usize)> {
        (self.bits.capacity() > 0).then(|| {
            (
                self.bits.as_ptr() as *const u8,
                self.bits.capacity() * 8,
                std::mem::align_of::<u64>(),
            )
        })
    }
}

/// A fixed-size array of zeroed 64-bit words, allocated as whole cache lines
/// aligned to 64 bytes (so a 512-bit block is exactly one cache line). The
/// words past `len` in the last line are never read, written or persisted.
pub struct Words {
    lines: Box<[Line]>,
    /// Number of words in use (`<= lines.len() * 8`).
    len: usize,
    /// The chunks ever written (so a copy copies only those).
    written: Written,
}

impl Words {
    /// Allocates `n` zeroed words, returning an error instead of aborting when the
    /// allocator has no memory. Uses `alloc_zeroed`, which large allocators serve
    /// with lazily-zeroed pages.
    pub fn zeroed(n: usize) -> Result<Self, AllocError> {
        let count = n.div_ceil(8);
        let lines = zeroed_lines(count)?;
        Ok(Words {
            written: Written::for_len(std::mem::size_of_val(&*lines))?,
            lines,
            len: n,
        })
    }

    /// A fallible deep copy: a zeroed allocation (lazy for large arrays) into
    /// which only the chunks ever written are copied (see [`Written`]).
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let mut lines = zeroed_lines(self.lines.len())?;
        self.written
            .copy_written(lines_bytes(&self.lines), lines_bytes_mut(&mut lines));
        Ok(Words {
            lines,
            len: self.len,
            written: self.written.try_clone()?,
        })
    }

    /// Bytes [`try_clone`](Self::try_clone) copies (for tests and diagnostics).
    pub fn copied_bytes(&self) -> u64 {
        self.written
            .copied_bytes(std::mem::size_of_val(&*self.lines))
    }

    /// The words in use.
    #[inline(always)]
    pub fn words(&self) -> &[u64] {
        // SAFETY: `Line` is `repr(C)` over `[u64; 8]` with no padding (64 bytes,
        // align 64), so the lines are `lines.len() * 8` contiguous u64s, and
        // `len <= lines.len() * 8` by construction.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const u64, self.len) }
    }

    /// Not marked written: callers mark what they write.
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

    /// Every cache line, in order.
    #[inline(always)]
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// Every cache line for writing, when writes are not tracked (`None`
    /// while they are: [`line_mut`](Self::line_mut) marks each line).
    #[inline(always)]
    pub(crate) fn lines_mut_untracked(&mut self) -> Option<&mut [Line]> {
        if self.written.is_tracking() {
            None
        } else {
            Some(&mut self.lines)
        }
    }

    /// Cache line `i` for writing, if it exists.
    #[inline(always)]
    pub fn line_mut(&mut self, i: u64) -> Option<&mut Line> {
        let i = usize::try_from(i).ok()?;
        self.written.mark(i.wrapping_mul(64));
        self.lines.get_mut(i)
    }

    /// Hints the CPU to fetch cache line `i`.
    #[inline(always)]
    pub fn prefetch_line(&self, i: u64) {
        if let Some(l) = self.line(i) {
            prefetch(l as *const Line as *const u8);
        }
    }

    /// Bits in use: 64 per word.
    #[inline]
    pub fn len_bits(&self) -> u64 {
        self.len as u64 * 64
    }

    /// Sets bit `bit`; out-of-range bits are ignored (callers only pass bits below
    /// `len_bits()`, and this keeps a logic error from becoming a crash).
    #[inline(always)]
    pub fn set(&mut self, bit: u64) {
        self.written.mark((bit >> 3) as usize);
        if let Some(w) = self.words_mut().get_mut((bit >> 6) as usize) {
            *w |= 1u64 << (bit & 63);
        }
    }

    /// [`set`](Self::set) without marking the bit's page: for loops that hoist
    /// the [`tracking`](Self::tracking) check and call
    /// [`mark_bit`](Self::mark_bit) themselves while it holds.
    #[inline(always)]
    pub fn set_unmarked(&mut self, bit: u64) {
        if let Some(w) = self.words_mut().get_mut((bit >> 6) as usize) {
            *w |= 1u64 << (bit & 63);
        }
    }

    /// Marks the page holding `bit` as written.
    #[inline(always)]
    pub fn mark_bit(&mut self, bit: u64) {
        self.written.mark((bit >> 3) as usize);
    }

    /// Whether writes are tracked (see [`Written`]).
    #[inline(always)]
    pub fn tracking(&self) -> bool {
        self.written.is_tracking()
    }

    /// Pages of the array (the unit of [`Written`]).
    pub fn pages(&self) -> u64 {
        (std::mem::size_of_val(&*self.lines) / WRITTEN_CHUNK) as u64
    }

    /// Stops tracking writes (see [`Written::retire`]).
    pub fn stop_tracking(&mut self) {
        self.written.retire();
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

    /// Gives the whole pages of bytes `[from, from + max)` of the array back
    /// to the kernel (`madvise(MADV_DONTNEED)`): they read as zero afterwards.
    /// Returns where the range ended (the array's byte length at the end).
    /// For an array about to be freed: its pages are then released in steps
    /// of bounded cost, and the free itself tears down no resident pages.
    pub fn release_pages(&mut self, from: usize, max: usize) -> usize {
        let bytes = std::mem::size_of_val(&*self.lines);
        let end = from.saturating_add(max).min(bytes);
        #[cfg(target_os = "linux")]
        {
            const PAGE: usize = 4096;
            let start = self.lines.as_mut_ptr() as usize;
            let first = (start + from).div_ceil(PAGE) * PAGE;
            let last = (start + end) / PAGE * PAGE;
            if last > first {
                // SAFETY: whole pages inside our own allocation (from the
                // first page boundary at or after `from` to the last at or
                // before `end`), which nothing else maps; anonymous memory
                // reads as zero after MADV_DONTNEED, a valid value of every word.
                unsafe {
                    libc::madvise(
                        first as *mut libc::c_void,
                        last - first,
                        libc::MADV_DONTNEED,
                    )
                };
            }
        }
        end
    }

    /// Bytes of the array's allocation (what [`release_pages`](Self::release_pages) walks).
    pub fn alloc_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.lines)
    }

    /// The little-endian byte view (what gets persisted).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: u64 has no padding and every byte pattern is a valid u8; the
        // length is exact; alignment of u8 is 1.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const u8, self.len * 8) }
    }

    /// The mutable little-endian byte view (for loading persisted bytes): the
    /// whole array counts as written.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.written.mark_all();
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

    /// Block numbers [`relocate_blocks`](Self::relocate_blocks) takes: the lines and the map.
    pub const BLOCKS: u64 = 2;

    /// Offers the lines and the written-chunk map to a relocation pass.
    pub fn relocate_blocks(&mut self, pass: &mut Pass) {
        pass.boxed_slice(&mut self.lines);
        self.written.relocate_blocks(pass);
    }

    /// The written-chunk map's heap block, for memory accounting.
    pub fn written_block(&self) -> Option<(*const u8, usize, usize)> {
        self.written.heap_block()
    }

    /// Number of set bits (for tests and diagnostics).
    pub fn count_ones(&self) -> u64 {
        self.words().iter().map(|w| w.count_ones() as u64).sum()
    }
}

/// All bytes of the lines (the words in use and the zero tail of the last line).
fn lines_bytes(lines: &[Line]) -> &[u8] {
    // SAFETY: `Line` is 64 plain bytes with no padding; the length is exact.
    unsafe { std::slice::from_raw_parts(lines.as_ptr() as *const u8, std::mem::size_of_val(lines)) }
}

fn lines_bytes_mut(lines: &mut [Line]) -> &mut [u8] {
    // SAFETY: as in `lines_bytes`, with unique access; every byte pattern is valid.
    unsafe {
        std::slice::from_raw_parts_mut(lines.as_mut_ptr() as *mut u8, std::mem::size_of_val(lines))
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
    fn a_copy_copies_only_the_chunks_written() {
        // 8 MiB of words: tracked, 128 chunks.
        let mut w = Words::zeroed(1 << 20).unwrap();
        assert_eq!(w.copied_bytes(), 0, "never written: a copy copies nothing");
        let c = w.try_clone().unwrap();
        assert_eq!(c.count_ones(), 0);
        for bit in [0u64, 9, 70_000 * 8, (1 << 26) - 1] {
            w.set(bit);
        }
        if let Some(l) = w.line_mut(40_000) {
            l.0[3] = 0xf0;
        }
        assert_eq!(w.copied_bytes(), 4 * WRITTEN_CHUNK as u64);
        let c = w.try_clone().unwrap();
        assert!(c.as_bytes() == w.as_bytes());
        assert_eq!(c.count_ones(), 8);
        assert_eq!(c.copied_bytes(), w.copied_bytes(), "the copy keeps the map");
        // Loading through the byte view marks everything.
        let mut l = Words::zeroed(1 << 20).unwrap();
        l.as_bytes_mut()[5] = 1;
        assert_eq!(l.copied_bytes(), 8 << 20);
        assert!(l.try_clone().unwrap().as_bytes() == l.as_bytes());
        // Small arrays are not tracked: copied whole.
        let mut s = Words::zeroed(1000).unwrap();
        s.set(5);
        assert_eq!(s.copied_bytes(), 8000);
        assert!(s.try_clone().unwrap().as_bytes() == s.as_bytes());
        let mut m = Written::for_len(WRITTEN_MIN * 3).unwrap();
        m.mark_range(WRITTEN_CHUNK - 1, WRITTEN_CHUNK + 1);
        assert_eq!(m.copied_bytes(WRITTEN_MIN * 3), 2 * WRITTEN_CHUNK as u64);
        m.mark_range(0, usize::MAX);
        assert_eq!(m.copied_bytes(WRITTEN_MIN * 3), (WRITTEN_MIN * 3) as u64);
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
