//! Item hashing shared by every filter type.
//!
//! Every item is hashed exactly once, with XXH3-128 (`xxhash_rust::xxh3::xxh3_128`,
//! seed 0, the whole item as input). The 128-bit result is split into two 64-bit
//! halves: `lo` (bits 0..64) and `hi` (bits 64..128). XXH3's output is defined
//! byte-for-byte by its specification and does not depend on the platform, so the
//! values are safe to persist: a filter saved on one machine answers the same on
//! another.
//!
//! How each filter turns the two halves into positions is documented beside the
//! filter (`bloom::Link` for Bloom filters).

use xxhash_rust::xxh3::xxh3_128;

/// The two 64-bit halves of an item's XXH3-128 hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemHash {
    pub lo: u64,
    pub hi: u64,
}

impl ItemHash {
    #[inline]
    pub fn of(item: &[u8]) -> Self {
        let h = xxh3_128(item);
        ItemHash {
            lo: h as u64,
            hi: (h >> 64) as u64,
        }
    }
}

/// Maps a uniformly distributed 64-bit value onto `0..n` without a division
/// (Lemire's multiply-shift "fastrange"). The result is always `< n` for `n > 0`.
#[inline(always)]
pub fn fastrange(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// How many items ahead a batch hashes and prefetches (enough to cover a DRAM
/// miss with the work of the items in between: on a 137 MB blocked filter,
/// contains with prefetch took 56 ns/item at 8 ahead, 31 at 16, 29 at 32).
pub const LOOKAHEAD: usize = 16;

/// Hashes a batch of items [`LOOKAHEAD`] items ahead of their use, calling a
/// prefetch hook on each hash as it is computed, so the cache misses of
/// consecutive items overlap instead of queueing. The window lives on the stack:
/// no allocation per batch or per item.
pub struct HashAhead<I, H, F> {
    items: I,
    hash: F,
    ring: [Option<H>; LOOKAHEAD],
    /// Slot of the next hash to hand out.
    head: usize,
    primed: bool,
}

impl<'a, I, H, F> HashAhead<I, H, F>
where
    I: Iterator<Item = &'a [u8]>,
    H: Copy,
    F: Fn(&[u8]) -> H,
{
    pub fn new(items: I, hash: F) -> Self {
        HashAhead {
            items,
            hash,
            ring: [None; LOOKAHEAD],
            head: 0,
            primed: false,
        }
    }

    /// The next item's hash, in order; `prefetch` is called on every hash
    /// computed (the first call computes and prefetches a full window).
    #[inline]
    pub fn next_with(&mut self, mut prefetch: impl FnMut(&H)) -> Option<H> {
        if !self.primed {
            self.primed = true;
            for slot in self.ring.iter_mut() {
                *slot = self.items.next().map(|item| (self.hash)(item));
                if let Some(h) = slot {
                    prefetch(h);
                }
            }
        }
        let slot = self.ring.get_mut(self.head)?;
        let out = slot.take()?;
        *slot = self.items.next().map(|item| (self.hash)(item));
        if let Some(h) = slot {
            prefetch(h);
        }
        self.head = (self.head + 1) % LOOKAHEAD;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_are_stable_test_vectors() {
        // Pinned so that a change of hash (which would silently corrupt every
        // persisted filter) fails loudly.
        let h = ItemHash::of(b"");
        let full = xxh3_128(b"");
        assert_eq!(h.lo, full as u64);
        assert_eq!(h.hi, (full >> 64) as u64);
        assert_eq!(
            ItemHash::of(b"foo"),
            ItemHash::of(b"foo"),
            "hashing must be deterministic"
        );
        assert_ne!(ItemHash::of(b"foo"), ItemHash::of(b"fop"));
        // XXH3-128 of the empty input, from the reference implementation.
        assert_eq!(full, 0x99aa06d3014798d86001c324468d497f);
    }

    #[test]
    fn hash_ahead_yields_every_item_in_order_and_prefetches_each_once() {
        for n in [0usize, 1, 7, 8, 9, 100] {
            let items: Vec<Vec<u8>> = (0..n).map(|i| i.to_string().into_bytes()).collect();
            let mut ahead = HashAhead::new(items.iter().map(|v| v.as_slice()), ItemHash::of);
            let mut got = Vec::new();
            let mut prefetched = Vec::new();
            while let Some(h) = ahead.next_with(|h| prefetched.push(*h)) {
                got.push(h);
                assert!(prefetched.len() >= got.len().min(n));
            }
            let want: Vec<ItemHash> = items.iter().map(|v| ItemHash::of(v)).collect();
            assert_eq!(got, want);
            assert_eq!(prefetched, want);
            assert!(ahead.next_with(|_| panic!("nothing left")).is_none());
        }
    }

    #[test]
    fn fastrange_stays_in_range() {
        for n in [1u64, 2, 63, 64, 1000, u64::MAX] {
            for x in [0u64, 1, u64::MAX / 3, u64::MAX - 1, u64::MAX] {
                assert!(fastrange(x, n) < n);
            }
        }
        assert_eq!(fastrange(u64::MAX, 10), 9);
        assert_eq!(fastrange(0, 10), 0);
    }
}
