//! splitmix64: the one tiny deterministic generator of the core's fixed-seed
//! tests (Bloom, cuckoo, merge and round-trip tests share it).

pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-enough in `0..n` (n > 0) for tests.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One element of a non-empty slice.
    pub(crate) fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }

    /// A random 16-byte item; `tag` separates member and non-member key spaces.
    pub(crate) fn item(&mut self, tag: u8) -> [u8; 17] {
        let mut out = [0u8; 17];
        out[0] = tag;
        out[1..9].copy_from_slice(&self.next().to_le_bytes());
        out[9..17].copy_from_slice(&self.next().to_le_bytes());
        out
    }
}

/// The most false positives `probes` probes show at a rate of at most `p`
/// (`crate::accuracy::max_false_positives`).
pub(crate) use crate::accuracy::max_false_positives as allowed;

/// A random 128-bit item hash (XXH3-128 of distinct items is modelled as
/// uniform).
pub(crate) fn random_hash(g: &mut SplitMix) -> crate::hash::ItemHash {
    crate::hash::ItemHash {
        lo: g.next(),
        hi: g.next(),
    }
}
