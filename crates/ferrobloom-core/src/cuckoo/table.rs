//! One cuckoo table (a sub-filter): bit-packed slot storage, bucket
//! search, and the fallible zeroed allocation of its bytes.

use super::*;
use crate::bits::Written;

/// Bit-packing parameters shared by all sub-filters of one filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) fp_bits: u8,
    pub(super) bucket_size: u64,
    pub(super) fp_mask: u64,
}

impl Layout {
    pub(super) fn new(fp_bits: u8, bucket_size: u8) -> Self {
        Layout {
            fp_bits,
            bucket_size: u64::from(bucket_size),
            fp_mask: (1u64 << u32::from(fp_bits.clamp(1, MAX_FP_BITS))) - 1,
        }
    }
}

/// `u64` to `usize`; values that do not fit become `usize::MAX`, which every
/// `get` then rejects.
#[inline(always)]
pub(super) fn idx(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

#[inline(always)]
pub(super) fn le16(c: &[u8]) -> u32 {
    match c {
        [a, b] => u32::from(u16::from_le_bytes([*a, *b])),
        _ => 0,
    }
}

#[inline(always)]
pub(super) fn le32(c: &[u8]) -> u32 {
    match c {
        [a, b, d, e] => u32::from_le_bytes([*a, *b, *d, *e]),
        _ => 0,
    }
}

/// Reads 8 bytes little-endian at `byte`; bytes past the end read as 0.
#[inline(always)]
pub(super) fn load_word(data: &[u8], byte: usize) -> u64 {
    if let Some(s) = data.get(byte..byte.saturating_add(8)) {
        if let Ok(a) = <[u8; 8]>::try_from(s) {
            return u64::from_le_bytes(a);
        }
    }
    let mut buf = [0u8; 8];
    if let Some(rest) = data.get(byte..) {
        for (d, s) in buf.iter_mut().zip(rest) {
            *d = *s;
        }
    }
    u64::from_le_bytes(buf)
}

/// Writes back the bytes of `word` that lie inside `data`.
#[inline(always)]
pub(super) fn store_word(data: &mut [u8], byte: usize, word: u64) {
    let bytes = word.to_le_bytes();
    if let Some(s) = data.get_mut(byte..byte.saturating_add(8)) {
        if s.len() == 8 {
            s.copy_from_slice(&bytes);
            return;
        }
    }
    if let Some(rest) = data.get_mut(byte..) {
        for (d, s) in rest.iter_mut().zip(bytes.iter()) {
            *d = *s;
        }
    }
}

/// Table bytes of a sub-filter with `buckets` buckets, `None` on overflow.
pub(super) fn table_bytes(buckets: u64, bucket_size: u8, fp_bits: u8) -> Option<u64> {
    let bits = buckets
        .checked_mul(u64::from(bucket_size))?
        .checked_mul(u64::from(fp_bits))?;
    Some(bits / 8 + u64::from(bits % 8 != 0))
}

/// A zeroed byte vector, allocated fallibly with the allocator's zeroed
/// allocation (lazily zeroed pages for large tables: no time proportional to
/// the size, see `redis::alloc`).
pub(super) fn alloc_zeroed(bytes: u64) -> Result<Vec<u8>, CuckooError> {
    let n = usize::try_from(bytes).map_err(|_| CuckooError::MemoryCap)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).map_err(|_| CuckooError::MemoryCap)?;
    // SAFETY: the layout has a non-zero size; a null result is handled.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(CuckooError::AllocFailed);
    }
    // SAFETY: `ptr` holds `n` zeroed (initialised) bytes, allocated by the global
    // allocator with the layout a `Vec<u8>` of capacity `n` uses.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// One cuckoo table.
pub(super) struct SubFilter {
    pub(super) data: Vec<u8>,
    /// Bucket count, a non-zero power of two.
    pub(super) buckets: u64,
    /// `buckets * bucket_size` (checked at creation).
    pub(super) slots: u64,
    /// Non-empty slots, maintained on every write.
    pub(super) occupied: u64,
    /// The chunks of `data` ever written: a copy copies only those (see
    /// `core::bits::Written`). Every write of `data` marks what it writes.
    pub(super) written: Written,
}

impl SubFilter {
    pub(super) fn new_zeroed(buckets: u64, l: &Layout) -> Result<Self, CuckooError> {
        let bytes =
            table_bytes(buckets, l.bucket_size as u8, l.fp_bits).ok_or(CuckooError::MemoryCap)?;
        let slots = buckets
            .checked_mul(l.bucket_size)
            .ok_or(CuckooError::MemoryCap)?;
        let data = alloc_zeroed(bytes)?;
        Ok(SubFilter {
            written: Written::for_len(data.len()).map_err(|_| CuckooError::AllocFailed)?,
            data,
            buckets,
            slots,
            occupied: 0,
        })
    }

    /// A deep copy: a zeroed table (lazily zeroed when large) into which only
    /// the chunks ever written are copied, so copying a large, sparsely written
    /// table costs what it holds, not its size.
    pub(super) fn try_clone(&self) -> Result<Self, CuckooError> {
        let mut data = alloc_zeroed(self.data.len() as u64)?;
        self.written.copy_written(&self.data, &mut data);
        Ok(SubFilter {
            data,
            buckets: self.buckets,
            slots: self.slots,
            occupied: self.occupied,
            written: self
                .written
                .try_clone()
                .map_err(|_| CuckooError::AllocFailed)?,
        })
    }

    #[inline(always)]
    pub(super) fn mask(&self) -> u64 {
        self.buckets.wrapping_sub(1)
    }

    #[inline(always)]
    pub(super) fn get(&self, l: &Layout, slot: u64) -> u32 {
        match l.fp_bits {
            8 => self.data.get(idx(slot)).map_or(0, |&v| u32::from(v)),
            16 => {
                let i = idx(slot.wrapping_mul(2));
                self.data.get(i..i.saturating_add(2)).map_or(0, le16)
            }
            32 => {
                let i = idx(slot.wrapping_mul(4));
                self.data.get(i..i.saturating_add(4)).map_or(0, le32)
            }
            f => {
                let bit = slot.wrapping_mul(u64::from(f));
                let word = load_word(&self.data, idx(bit / 8));
                ((word >> (bit % 8)) & l.fp_mask) as u32
            }
        }
    }

    /// Raw write (does not touch `occupied`).
    #[inline(always)]
    pub(super) fn put(&mut self, l: &Layout, slot: u64, v: u32) {
        // A slot's bytes never straddle more than two chunks: mark both ends.
        let first = idx(slot.wrapping_mul(u64::from(l.fp_bits)) / 8);
        self.written.mark(first);
        self.written
            .mark(first.saturating_add(usize::from(l.fp_bits.div_ceil(8))));
        match l.fp_bits {
            8 => {
                if let Some(b) = self.data.get_mut(idx(slot)) {
                    *b = v as u8;
                }
            }
            16 => {
                let i = idx(slot.wrapping_mul(2));
                if let Some(s) = self.data.get_mut(i..i.saturating_add(2)) {
                    s.copy_from_slice(&(v as u16).to_le_bytes());
                }
            }
            32 => {
                let i = idx(slot.wrapping_mul(4));
                if let Some(s) = self.data.get_mut(i..i.saturating_add(4)) {
                    s.copy_from_slice(&v.to_le_bytes());
                }
            }
            f => {
                let bit = slot.wrapping_mul(u64::from(f));
                let byte = idx(bit / 8);
                let shift = bit % 8;
                let word = load_word(&self.data, byte);
                let m = l.fp_mask << shift;
                let word = (word & !m) | ((u64::from(v) & l.fp_mask) << shift);
                store_word(&mut self.data, byte, word);
            }
        }
    }

    /// Write that keeps `occupied` exact.
    #[inline(always)]
    pub(super) fn set(&mut self, l: &Layout, slot: u64, v: u32) {
        let old = self.get(l, slot);
        self.put(l, slot, v);
        match (old == 0, v == 0) {
            (true, false) => self.occupied = self.occupied.saturating_add(1),
            (false, true) => self.occupied = self.occupied.saturating_sub(1),
            _ => {}
        }
    }

    /// Hints the CPU to fetch the cache line where `bucket` starts.
    #[inline(always)]
    pub(super) fn prefetch_bucket(&self, l: &Layout, bucket: u64) {
        let bit = bucket
            .wrapping_mul(l.bucket_size)
            .wrapping_mul(u64::from(l.fp_bits));
        if let Some(b) = self.data.get(idx(bit / 8)) {
            crate::bits::prefetch(b as *const u8);
        }
    }

    /// Slot index of the first slot of `bucket` holding `fp` (0 = first empty).
    #[inline(always)]
    pub(super) fn find(&self, l: &Layout, bucket: u64, fp: u32) -> Option<u64> {
        let b = l.bucket_size;
        let first = bucket.wrapping_mul(b);
        let pos = match l.fp_bits {
            8 => {
                let s = idx(first);
                self.data
                    .get(s..s.saturating_add(b as usize))?
                    .iter()
                    .position(|&x| u32::from(x) == fp)
            }
            16 => {
                let s = idx(first.wrapping_mul(2));
                self.data
                    .get(s..s.saturating_add(2 * b as usize))?
                    .chunks_exact(2)
                    .position(|c| le16(c) == fp)
            }
            32 => {
                let s = idx(first.wrapping_mul(4));
                self.data
                    .get(s..s.saturating_add(4 * b as usize))?
                    .chunks_exact(4)
                    .position(|c| le32(c) == fp)
            }
            _ => {
                return (0..b)
                    .map(|p| first.wrapping_add(p))
                    .find(|&s| s < self.slots && self.get(l, s) == fp)
            }
        };
        pos.map(|p| first.wrapping_add(p as u64))
    }

    /// Number of slots of `bucket` holding `fp`.
    pub(super) fn count_in(&self, l: &Layout, bucket: u64, fp: u32) -> u64 {
        let first = bucket.wrapping_mul(l.bucket_size);
        (0..l.bucket_size)
            .map(|p| first.wrapping_add(p))
            .filter(|&s| s < self.slots && self.get(l, s) == fp)
            .count() as u64
    }

    /// Non-empty slots among `from .. to` (clamped to the table).
    pub(super) fn count_occupied(&self, l: &Layout, from: u64, to: u64) -> u64 {
        let to = to.min(self.slots);
        if from >= to {
            return 0;
        }
        if l.fp_bits == 8 {
            return self
                .data
                .get(idx(from)..idx(to))
                .map_or(0, |s| s.iter().filter(|&&x| x != 0).count() as u64);
        }
        (from..to).filter(|&s| self.get(l, s) != 0).count() as u64
    }
}
