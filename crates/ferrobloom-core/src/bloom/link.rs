//! One Bloom filter of a chain ([`Link`]): its bits, and where an item's bits
//! are in each layout.
//!
//! # Bit positions (layout 4, "classic" with mixed probes)
//! The item's XXH3-128 halves `(lo, hi)` (see [`crate::hash`]) give the
//! sequence `g_i = lo + i * hi` (wrapping 64-bit), `0 <= i < hashes`; each
//! value is mixed, `y_i = (g_i ^ (g_i >> 32)) * C` (wrapping, `C =
//! 0x9E37_79B9_7F4A_7C15`), and probe `i` is bit `fastrange(y_i, bits) = (y_i *
//! bits) >> 64` (128-bit product), always below `bits`, no division. The mix
//! makes the probes independent positions: without it (layout 0 below) the
//! probes of an item are an arithmetic progression modulo the link, and in a
//! small link a sizeable share of items (about `0.6 k / bits`) has a step close
//! to a fraction with a small denominator, so their `k` probes fall on a few
//! distinct bits; measured, a link of 7 items at 1e-5 answered 1.0e-3 (100x its
//! rate) and one of 7 items at 1e-7, 9e-4, where the mixed probes meet the rate
//! at every size (`bloom/tests/small.rs`). Cost: one shift, one xor and one
//! multiply per probe, and on memory-bound links more than that (a 64 MiB link
//! at 1%: +19% to +62% in one A/B, 0-14% in a noisier one; docs/performance.md), so a new classic link gets
//! this derivation only where plain double hashing would not keep its rate
//! (`bloom/sizing.rs`, "Which classic derivation"). The same `(lo, hi)` pair is used for every link of a
//! chain, so an item is hashed once per command however many links there are.
//!
//! # Bit positions (layout 0, classic before layout 4)
//! Probe `i` is `fastrange(g_i, bits)` of the same sequence, unmixed (plain
//! double hashing): every classic link before layout 4, and every new classic
//! link large enough for its excess over the ideal rate to be at most 1% of
//! its error (`bloom/sizing.rs`, "Which classic derivation"). Links loaded with
//! this code keep it; a chain created before the rule keeps it for the links it
//! adds (`BloomChain::keeps_double_hashing`).
//!
//! # Bit positions (layout 1, "blocked")
//! The block is `fastrange(lo, bits / 512)`: bits `512 * block ..` of the link,
//! which is one 64-byte-aligned cache line in memory. Probe `i` is bit
//! `g_i >> 55` of the block (its top 9 bits), where `g_0 = hi * C` and
//! `g_{i+1} = g_i * C` (wrapping) with `C = 0x9E37_79B9_7F4A_7C15`, an odd
//! constant (Fibonacci hashing), so the block and the in-block probes use
//! independent halves of the hash.
//!
//! # Bit positions (layout 3, "paired")
//! The first block is `fastrange(lo, bits / 512)` (as a blocked link's), the
//! second `fastrange(rotl(lo, 32), bits / 512)` (the other half of `lo`). Probe
//! `i` (`0 <= i < k`) is the 9-bit field `(w_{i / 7} >> (9 · (i mod 7))) & 511`
//! of the word sequence `w_0 = hi`, `w_{j+1} = w_j · C` (the constant above):
//! probes `0 .. ceil(k/2)` are bits of the first block, the rest of the second.
//! The fields of a word are independent, so the probes of a block are computed
//! and tested together, without a chain of multiplications or a branch.

use super::{redisbloom, BloomError, BloomLayout, LinkShape};
use crate::bits::{Line, Words, LINE_BITS};
use crate::hash::{fastrange, ItemHash};

/// One Bloom filter of a chain.
pub struct Link {
    pub(super) shape: LinkShape,
    /// Items this link accepted as new.
    pub(super) items: u64,
    pub(super) words: Words,
}

impl Link {
    pub(super) fn new(shape: LinkShape) -> Result<Self, BloomError> {
        let words =
            usize::try_from(shape.storage.div_ceil(8)).map_err(|_| BloomError::MemoryCap)?;
        Ok(Link {
            shape,
            items: 0,
            words: Words::zeroed(words)?,
        })
    }

    /// Capacity, error rate, bits, hash functions and layout of the link.
    pub fn shape(&self) -> &LinkShape {
        &self.shape
    }

    /// Items this link accepted as new.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Whether the link holds its capacity of items: the chain adds the next
    /// item to a new link, or refuses it.
    pub fn is_full(&self) -> bool {
        self.items >= self.shape.entries
    }

    /// Bytes a copy of this link copies (see `bits::Written`).
    pub fn copied_bytes(&self) -> u64 {
        self.words.copied_bytes()
    }

    /// The persisted little-endian byte view of the bits.
    pub fn data(&self) -> &[u8] {
        let bytes = self.words.as_bytes();
        bytes.get(..self.storage()).unwrap_or(bytes)
    }

    /// The persisted byte view of the bits for writing (loading a chunk or a
    /// payload): the whole link then counts as written (see `bits::Written`).
    pub fn data_mut(&mut self) -> &mut [u8] {
        let n = self.storage();
        let bytes = self.words.as_bytes_mut();
        let len = bytes.len();
        bytes.get_mut(..n.min(len)).unwrap_or_default()
    }

    /// Bytes of storage (at most the words' bytes, by construction).
    fn storage(&self) -> usize {
        usize::try_from(self.shape.storage).unwrap_or(usize::MAX)
    }

    #[inline(always)]
    pub(super) fn contains(&self, h: &ItemHash) -> bool {
        match self.shape.layout {
            BloomLayout::Classic => self.classic_contains::<true>(h),
            BloomLayout::ClassicDouble => self.classic_contains::<false>(h),
            BloomLayout::Blocked => match self.words.line(self.block(h)) {
                Some(line) => block_contains(line, h.hi, self.shape.hashes),
                None => false,
            },
            BloomLayout::Paired => self.first_hit(h) && self.second_hit(h),
            BloomLayout::RedisBloom => {
                let m = self.shape.modulus();
                let mut g = h.lo;
                for _ in 0..self.shape.hashes {
                    if !self.words.get(redisbloom::index(g, m)) {
                        return false;
                    }
                    g = g.wrapping_add(h.hi);
                }
                true
            }
        }
    }

    /// Sets the item's bits. Pages written are tracked for COPY (see
    /// `bits::Written`) only while the link is sparse: once its writes reach
    /// four per page (all but ~2% of the pages written), tracking stops and an
    /// add costs no more than it did without it (the per-bit marking slowed
    /// classic adds to a 64 MB link measurably).
    #[inline(always)]
    pub(super) fn insert(&mut self, h: &ItemHash) {
        let k = self.shape.hashes;
        let tracking = self.words.tracking();
        match self.shape.layout {
            BloomLayout::Classic => self.classic_insert::<true>(h, tracking),
            BloomLayout::ClassicDouble => self.classic_insert::<false>(h, tracking),
            BloomLayout::Blocked => {
                let block = self.block(h);
                if let Some(line) = self.words.line_mut(block) {
                    block_insert(line, h.hi, k);
                }
            }
            BloomLayout::Paired => {
                let (first, second) = (self.block(h), self.second_block(h));
                let half = k.div_ceil(2);
                if let Some(line) = self.words.line_mut(first) {
                    pair_insert(line, h.hi, 0, half);
                }
                if let Some(line) = self.words.line_mut(second) {
                    pair_insert(line, h.hi, half, k);
                }
            }
            BloomLayout::RedisBloom => {
                let m = self.shape.modulus();
                let mut g = h.lo;
                for _ in 0..k {
                    let bit = redisbloom::index(g, m);
                    if tracking {
                        self.words.mark_bit(bit);
                    }
                    self.words.set_unmarked(bit);
                    g = g.wrapping_add(h.hi);
                }
            }
        }
        self.count_insert(tracking);
    }

    /// Sets the item's bits and says whether one of them was clear, in one
    /// pass over its probes: the answer of `!contains(h)` followed by
    /// [`insert`](Self::insert) when it is true, where an item already held
    /// changes no bit (its bits are set, so its pages were written) and is not
    /// counted. Each probe's position is computed once and read and set without
    /// a branch, where the two calls computed it twice and branched on every
    /// probe until a clear bit.
    #[inline(always)]
    pub(super) fn test_and_insert(&mut self, h: &ItemHash) -> bool {
        match self.shape.layout {
            BloomLayout::Classic => self.classic_test_and_insert::<true>(h),
            BloomLayout::ClassicDouble => self.classic_test_and_insert::<false>(h),
            BloomLayout::Blocked => self.blocked_test_and_insert::<0>(h),
            BloomLayout::Paired => {
                let tracking = self.words.tracking();
                let mut masks = PairMasks::new(h.hi);
                let m = masks.for_k(self.shape.hashes);
                let (first, second) = (self.block(h), self.second_block(h));
                let mut added = false;
                if let Some(line) = self.words.line_mut(first) {
                    added |= !covers(line, &m.first);
                    or_into(line, &m.first);
                }
                if let Some(line) = self.words.line_mut(second) {
                    added |= !covers(line, &m.second);
                    or_into(line, &m.second);
                }
                if added {
                    self.count_insert(tracking);
                }
                added
            }
            BloomLayout::RedisBloom => {
                if self.contains(h) {
                    return false;
                }
                self.insert(h);
                true
            }
        }
    }

    /// [`test_and_insert`](Self::test_and_insert) of a blocked link (`K`: its
    /// probe count as a constant, or 0 to read it from the shape).
    #[inline(always)]
    pub(super) fn blocked_test_and_insert<const K: usize>(&mut self, h: &ItemHash) -> bool {
        let tracking = self.words.tracking();
        let k = if K > 0 { K as u32 } else { self.shape.hashes };
        let added = match self.words.line_mut(self.block(h)) {
            Some(line) => block_test_and_insert(line, h.hi, k),
            None => false,
        };
        if added {
            self.count_insert(tracking);
        }
        added
    }

    /// [`test_and_insert`](Self::test_and_insert) of a classic link.
    #[inline(always)]
    pub(super) fn classic_test_and_insert<const MIXED: bool>(&mut self, h: &ItemHash) -> bool {
        let tracking = self.words.tracking();
        let m = self.shape.bits;
        let mut g = h.lo;
        let mut all = 1u64;
        let words = self.words.words_mut();
        for _ in 0..self.shape.hashes {
            let bit = classic_bit::<MIXED>(g, m);
            if let Some(w) = words.get_mut((bit >> 6) as usize) {
                all &= *w >> (bit & 63);
                *w |= 1u64 << (bit & 63);
            }
            g = g.wrapping_add(h.hi);
        }
        if tracking {
            let mut g = h.lo;
            for _ in 0..self.shape.hashes {
                self.words.mark_bit(classic_bit::<MIXED>(g, m));
                g = g.wrapping_add(h.hi);
            }
        }
        let added = all & 1 == 0;
        if added {
            self.count_insert(tracking);
        }
        added
    }

    /// Whether a classic link holds the item's bits (`MIXED`: layout 4's
    /// mixed probes, else layout 0's; module doc).
    #[inline(always)]
    fn classic_contains<const MIXED: bool>(&self, h: &ItemHash) -> bool {
        let m = self.shape.bits;
        let mut g = h.lo;
        for _ in 0..self.shape.hashes {
            if !self.words.get(classic_bit::<MIXED>(g, m)) {
                return false;
            }
            g = g.wrapping_add(h.hi);
        }
        true
    }

    /// Sets a classic link's bits for the item (see
    /// [`classic_contains`](Self::classic_contains)).
    #[inline(always)]
    fn classic_insert<const MIXED: bool>(&mut self, h: &ItemHash, tracking: bool) {
        let m = self.shape.bits;
        let mut g = h.lo;
        for _ in 0..self.shape.hashes {
            let bit = classic_bit::<MIXED>(g, m);
            if tracking {
                self.words.mark_bit(bit);
            }
            self.words.set_unmarked(bit);
            g = g.wrapping_add(h.hi);
        }
    }

    /// Counts an inserted item; stops tracking written pages once the link's
    /// writes reach four per page (see [`insert`](Self::insert)).
    #[inline(always)]
    fn count_insert(&mut self, tracking: bool) {
        self.items += 1;
        if tracking {
            let per_item = match self.shape.layout {
                BloomLayout::Blocked => 1,
                BloomLayout::Paired => 2,
                _ => u64::from(self.shape.hashes),
            };
            if self.items.saturating_mul(per_item) >= self.words.pages().saturating_mul(4) {
                self.words.stop_tracking();
            }
        }
    }

    /// The block of a blocked link that holds the item's bits (of a paired
    /// link, its first `ceil(k/2)` probes).
    #[inline(always)]
    pub(super) fn block(&self, h: &ItemHash) -> u64 {
        fastrange(h.lo, self.shape.bits / LINE_BITS)
    }

    /// The block of a paired link that holds the item's last `floor(k/2)`
    /// probes: chosen by the low half of `lo`, where [`block`](Self::block)
    /// is chosen by its high half (`fastrange` reads the high bits).
    #[inline(always)]
    pub(super) fn second_block(&self, h: &ItemHash) -> u64 {
        fastrange(h.lo.rotate_left(32), self.shape.bits / LINE_BITS)
    }

    /// Whether a paired link's first block holds the item's first `ceil(k/2)`
    /// probes, tested without a branch between them.
    #[inline(always)]
    pub(super) fn first_hit(&self, h: &ItemHash) -> bool {
        match self.words.line(self.block(h)) {
            Some(line) => pair_all(line, h.hi, 0, self.shape.hashes.div_ceil(2)),
            None => false,
        }
    }

    /// Whether a paired link's second block holds the item's other probes.
    #[inline(always)]
    pub(super) fn second_hit(&self, h: &ItemHash) -> bool {
        let k = self.shape.hashes;
        match self.words.line(self.second_block(h)) {
            Some(line) => pair_all(line, h.hi, k.div_ceil(2), k),
            None => false,
        }
    }

    /// Prefetches the cache lines a lookup of `h` reads: the block of a blocked
    /// link, or the first [`CLASSIC_PREFETCH`] probes of a classic one.
    #[inline(always)]
    pub(super) fn prefetch(&self, h: &ItemHash) {
        match self.shape.layout {
            BloomLayout::Classic | BloomLayout::ClassicDouble => {
                self.prefetch_classic(h, CLASSIC_PREFETCH)
            }
            BloomLayout::Blocked => self.words.prefetch_line(self.block(h)),
            BloomLayout::Paired => {
                self.words.prefetch_line(self.block(h));
                self.words.prefetch_line(self.second_block(h));
            }
            BloomLayout::RedisBloom => {
                let m = self.shape.modulus();
                let mut g = h.lo;
                for _ in 0..self.shape.hashes.min(CLASSIC_PREFETCH) {
                    self.words.prefetch(redisbloom::index(g, m));
                    g = g.wrapping_add(h.hi);
                }
            }
        }
    }

    /// Prefetches the lines of a classic link's first `n` probes (at most `k`).
    #[inline(always)]
    pub(super) fn prefetch_classic(&self, h: &ItemHash, n: u32) {
        let m = self.shape.bits;
        let mixed = self.shape.layout == BloomLayout::Classic;
        let mut g = h.lo;
        for _ in 0..self.shape.hashes.min(n) {
            self.words.prefetch(if mixed {
                classic_bit::<true>(g, m)
            } else {
                classic_bit::<false>(g, m)
            });
            g = g.wrapping_add(h.hi);
        }
    }

    pub(super) fn try_clone(&self) -> Result<Self, BloomError> {
        Ok(Link {
            shape: self.shape,
            items: self.items,
            words: self.words.try_clone()?,
        })
    }
}

/// The multiplier of a classic link's probe mix (module doc): the odd
/// golden-ratio constant, as [`BLOCK_MUL`].
const MIX_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// The bit of a classic link of `m` bits for the sequence value `g`: mixed
/// (layout 4) or plain double hashing (layout 0); module doc.
#[inline(always)]
pub(super) fn classic_bit<const MIXED: bool>(g: u64, m: u64) -> u64 {
    if MIXED {
        fastrange((g ^ (g >> 32)).wrapping_mul(MIX_MUL), m)
    } else {
        fastrange(g, m)
    }
}

/// Probes of a classic link that
/// [`BloomChain::prefetch`](super::BloomChain::prefetch) fetches ahead.
const CLASSIC_PREFETCH: u32 = 16;
/// The odd multiplier that derives the in-block probes of a blocked link.
const BLOCK_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline(always)]
fn block_contains(line: &Line, hi: u64, k: u32) -> bool {
    let mut g = hi;
    for _ in 0..k {
        g = g.wrapping_mul(BLOCK_MUL);
        let bit = (g >> 55) as usize;
        if line.0[bit >> 6] & (1u64 << (bit & 63)) == 0 {
            return false;
        }
    }
    true
}

#[inline(always)]
fn block_insert(line: &mut Line, hi: u64, k: u32) {
    let mut g = hi;
    for _ in 0..k {
        g = g.wrapping_mul(BLOCK_MUL);
        let bit = (g >> 55) as usize;
        line.0[bit >> 6] |= 1u64 << (bit & 63);
    }
}

/// Whether a blocked link's probes are all set in `line`, without a branch
/// between them.
#[inline(always)]
pub(super) fn block_all(line: &Line, hi: u64, k: u32) -> bool {
    let mut g = hi;
    let mut all = 1u64;
    for _ in 0..k {
        g = g.wrapping_mul(BLOCK_MUL);
        let bit = (g >> 55) as usize;
        all &= line.0[bit >> 6] >> (bit & 63);
    }
    all & 1 == 1
}

/// [`block_insert`] that says whether one of the probes was clear.
#[inline(always)]
pub(super) fn block_test_and_insert(line: &mut Line, hi: u64, k: u32) -> bool {
    let mut g = hi;
    let mut all = 1u64;
    for _ in 0..k {
        g = g.wrapping_mul(BLOCK_MUL);
        let bit = (g >> 55) as usize;
        let w = &mut line.0[bit >> 6];
        all &= *w >> (bit & 63);
        *w |= 1u64 << (bit & 63);
    }
    all & 1 == 0
}

/// In-block probes of a paired link per 64-bit word (9 bits each).
const PAIR_PER_WORD: u32 = 7;

/// The word of a paired link's probe sequence that holds probe `from`, and the
/// probe's place in it: word 0 is `hi`, word `j + 1` is word `j` times
/// [`BLOCK_MUL`] (module doc).
#[inline(always)]
fn pair_word(hi: u64, from: u32) -> (u64, u32) {
    let mut w = hi;
    for _ in 0..from / PAIR_PER_WORD {
        w = w.wrapping_mul(BLOCK_MUL);
    }
    (w, from % PAIR_PER_WORD)
}

/// Whether a paired link's probes `from..to` are all set in `line`, tested
/// without branching between them. The probes are independent 9-bit fields of
/// the sequence's words, so they are computed in parallel, not in a chain.
#[inline(always)]
fn pair_all(line: &Line, hi: u64, from: u32, to: u32) -> bool {
    let (mut w, mut j) = pair_word(hi, from);
    let mut all = 1u64;
    for _ in from..to {
        if j == PAIR_PER_WORD {
            w = w.wrapping_mul(BLOCK_MUL);
            j = 0;
        }
        let bit = ((w >> (9 * j)) & 511) as u32;
        all &= line.0[(bit >> 6) as usize] >> (bit & 63);
        j += 1;
    }
    all & 1 == 1
}

/// A paired link's probes of one item as two 512-bit masks (the first block's
/// and the second's), built once per item and probe count and then tested
/// against, or OR-ed into, any number of links: a windowed filter asks up to
/// five generations whose links share their probe count, and one mask test is
/// a few vector instructions where the probes are a loop each. The answers are
/// the probes' answers ([`pair_all`], [`pair_insert`]).
pub(crate) struct PairMasks {
    hi: u64,
    /// The probe count the masks are built for (0: not built yet).
    k: u32,
    first: Line,
    second: Line,
}

impl PairMasks {
    #[inline(always)]
    pub(crate) fn new(hi: u64) -> Self {
        PairMasks {
            hi,
            k: 0,
            first: Line([0; 8]),
            second: Line([0; 8]),
        }
    }

    /// The masks for `k` probes (rebuilt only when `k` differs from the last).
    #[inline(always)]
    fn for_k(&mut self, k: u32) -> &Self {
        if self.k != k {
            let half = k.div_ceil(2);
            self.first = Line([0; 8]);
            self.second = Line([0; 8]);
            pair_insert(&mut self.first, self.hi, 0, half);
            pair_insert(&mut self.second, self.hi, half, k);
            self.k = k;
        }
        self
    }
}

/// Whether every bit of `mask` is set in `line`.
#[inline(always)]
fn covers(line: &Line, mask: &Line) -> bool {
    let mut missing = 0u64;
    for (l, m) in line.0.iter().zip(mask.0.iter()) {
        missing |= m & !l;
    }
    missing == 0
}

#[inline(always)]
fn or_into(line: &mut Line, mask: &Line) {
    for (l, m) in line.0.iter_mut().zip(mask.0.iter()) {
        *l |= m;
    }
}

impl Link {
    /// A paired link's [`first_hit`](Self::first_hit) with the item's masks.
    #[inline(always)]
    pub(crate) fn first_hit_masked(&self, h: &ItemHash, masks: &mut PairMasks) -> bool {
        let m = masks.for_k(self.shape.hashes);
        match self.words.line(self.block(h)) {
            Some(line) => covers(line, &m.first),
            None => false,
        }
    }

    /// A paired link's [`second_hit`](Self::second_hit) with the item's masks.
    #[inline(always)]
    pub(crate) fn second_hit_masked(&self, h: &ItemHash, masks: &mut PairMasks) -> bool {
        let m = masks.for_k(self.shape.hashes);
        match self.words.line(self.second_block(h)) {
            Some(line) => covers(line, &m.second),
            None => false,
        }
    }

    /// [`insert`](Self::insert) with the item's masks for a paired link (the
    /// same bits set, the same bookkeeping); other layouts as `insert`.
    #[inline(always)]
    pub(crate) fn insert_masked(&mut self, h: &ItemHash, masks: &mut PairMasks) {
        if self.shape.layout != BloomLayout::Paired {
            return self.insert(h);
        }
        let tracking = self.words.tracking();
        let m = masks.for_k(self.shape.hashes);
        let (first, second) = (self.block(h), self.second_block(h));
        if let Some(line) = self.words.line_mut(first) {
            or_into(line, &m.first);
        }
        if let Some(line) = self.words.line_mut(second) {
            or_into(line, &m.second);
        }
        self.count_insert(tracking);
    }
}

/// Sets a paired link's probes `from..to` in `line` (see [`pair_all`]).
#[inline(always)]
fn pair_insert(line: &mut Line, hi: u64, from: u32, to: u32) {
    let (mut w, mut j) = pair_word(hi, from);
    for _ in from..to {
        if j == PAIR_PER_WORD {
            w = w.wrapping_mul(BLOCK_MUL);
            j = 0;
        }
        let bit = ((w >> (9 * j)) & 511) as u32;
        line.0[(bit >> 6) as usize] |= 1u64 << (bit & 63);
        j += 1;
    }
}
