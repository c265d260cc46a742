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

/// A fixed-size array of zeroed 64-bit words.
pub struct Words {
    words: Box<[u64]>,
}

impl Words {
    /// Allocates `n` zeroed words, returning an error instead of aborting when the
    /// allocator has no memory. Uses `alloc_zeroed`, which large allocators serve
    /// with lazily-zeroed pages.
    pub fn zeroed(n: usize) -> Result<Self, AllocError> {
        if n == 0 {
            return Ok(Words {
                words: Box::new([]),
            });
        }
        let layout = Layout::array::<u64>(n).map_err(|_| AllocError)?;
        // SAFETY: layout has a non-zero size; a null result is handled.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut u64;
        if ptr.is_null() {
            return Err(AllocError);
        }
        // SAFETY: ptr points to n zeroed (valid) u64s allocated with the global
        // allocator and the layout Box<[u64]> uses for n elements.
        let words = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) };
        Ok(Words { words })
    }

    /// A fallible deep copy.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let mut v: Vec<u64> = Vec::new();
        v.try_reserve_exact(self.words.len())
            .map_err(|_| AllocError)?;
        v.extend_from_slice(&self.words);
        Ok(Words {
            words: v.into_boxed_slice(),
        })
    }

    #[inline]
    pub fn len_bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    /// Sets bit `bit`; out-of-range bits are ignored (callers only pass bits below
    /// `len_bits()`, and this keeps a logic error from becoming a crash).
    #[inline(always)]
    pub fn set(&mut self, bit: u64) {
        if let Some(w) = self.words.get_mut((bit >> 6) as usize) {
            *w |= 1u64 << (bit & 63);
        }
    }

    /// Reads bit `bit`; out-of-range bits read as 0.
    #[inline(always)]
    pub fn get(&self, bit: u64) -> bool {
        match self.words.get((bit >> 6) as usize) {
            Some(w) => (w >> (bit & 63)) & 1 == 1,
            None => false,
        }
    }

    /// Hints the CPU to fetch the cache line holding `bit`.
    #[inline(always)]
    pub fn prefetch(&self, bit: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(w) = self.words.get((bit >> 6) as usize) {
            // SAFETY: prefetching a valid address has no side effects.
            unsafe {
                std::arch::x86_64::_mm_prefetch(
                    w as *const u64 as *const i8,
                    std::arch::x86_64::_MM_HINT_T0,
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = bit;
    }

    /// The little-endian byte view (what gets persisted).
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: u64 has no padding and every byte pattern is a valid u8; the
        // length is exact; alignment of u8 is 1.
        unsafe {
            std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.words.len() * 8)
        }
    }

    /// The mutable little-endian byte view (for loading persisted bytes).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_bytes`; every byte pattern is a valid u64.
        unsafe {
            std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.words.len() * 8)
        }
    }

    /// Number of set bits (for tests and diagnostics).
    pub fn count_ones(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }
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
        assert!(Words::zeroed(usize::MAX).is_err());
    }
}
