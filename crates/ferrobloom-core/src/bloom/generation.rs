//! What windowed filters (`crate::window`) need of a chain: a generation
//! is an ordinary [`BloomChain`] whose links the window sizes itself, and a
//! windowed filter is a chain whose `window` holds the generations (its own
//! `links` stay empty, so every plain path sees no links and no items).

use super::*;
use crate::window::Window;

impl BloomChain {
    /// Wraps a windowed filter as the BLOOM type's value.
    pub fn windowed(w: Window) -> Self {
        BloomChain {
            links: Vec::new(),
            items: 0,
            expansion: 0,
            rb: None,
            opts: ChainOptions::default(),
            pending_shape: None,
            window: Some(Box::new(w)),
        }
    }

    /// The window of a windowed filter.
    #[inline]
    pub fn window(&self) -> Option<&Window> {
        self.window.as_deref()
    }

    #[inline]
    pub fn window_mut(&mut self) -> Option<&mut Window> {
        self.window.as_deref_mut()
    }

    /// Sub-filters in use: the links of a plain chain, every generation's
    /// links of a windowed one.
    pub fn link_count(&self) -> usize {
        match &self.window {
            Some(w) => w.link_count(),
            None => self.links.len(),
        }
    }

    /// Every link whose bytes SCANDUMP, RDB and AOF carry, in order: the chain's
    /// own, or each generation's (oldest first).
    pub fn data_links(&self) -> impl Iterator<Item = &Link> + '_ {
        let gens = self
            .window
            .iter()
            .flat_map(|w| w.generations().flat_map(|g| g.links.iter()));
        self.links.iter().chain(gens)
    }

    pub(crate) fn data_links_mut(&mut self) -> impl Iterator<Item = &mut Link> + '_ {
        let gens = self
            .window
            .iter_mut()
            .flat_map(|w| w.generations_mut().flat_map(|g| g.links.iter_mut()));
        self.links.iter_mut().chain(gens)
    }

    pub(super) fn from_window_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        Window::from_header(bytes, limits).map(Self::windowed)
    }

    /// An empty generation (links are pushed by the window).
    pub(crate) fn generation(expansion: u32) -> Self {
        BloomChain {
            links: Vec::new(),
            items: 0,
            expansion,
            rb: None,
            opts: ChainOptions::default(),
            pending_shape: None,
            window: None,
        }
    }

    /// Adds a link of `shape` to a generation without checking limits (the
    /// window checks them over all of its generations first).
    pub(crate) fn push_generation_link(&mut self, shape: LinkShape) -> Result<(), BloomError> {
        self.links
            .try_reserve(1)
            .map_err(|_| BloomError::AllocFailed)?;
        self.links.push(Link::new(shape)?);
        Ok(())
    }

    /// Inserts into the newest link (the caller checked it has room).
    pub(crate) fn insert_last(
        &mut self,
        h: &ItemHash,
        masks: &mut PairMasks,
    ) -> Result<(), BloomError> {
        let items = self.items.checked_add(1).ok_or(BloomError::Full)?;
        match self.links.last_mut() {
            Some(last) => last.insert_masked(h, masks),
            None => return Err(BloomError::InvalidParams("generation has no links")),
        }
        self.items = items;
        Ok(())
    }

    /// True when a link of this generation holds all of the item's bits: the
    /// same answer as [`BloomChain::contains`], in two steps per classic link
    /// (see [`Link::head_hit`]), so that a windowed filter, which asks up to
    /// five generations per item and finds most of them without the item, takes
    /// one well-predicted branch per generation instead of about two
    /// unpredictable ones (one per probe until a zero bit).
    #[cfg(test)]
    pub(crate) fn gen_contains(&self, h: &ItemHash) -> bool {
        self.gen_contains_masked(h, &mut PairMasks::new(h.hi))
    }

    /// [`gen_contains`](Self::gen_contains) with the item's paired-link masks,
    /// built once per item for all generations (see [`PairMasks`]).
    #[inline(always)]
    pub(crate) fn gen_contains_masked(&self, h: &ItemHash, masks: &mut PairMasks) -> bool {
        self.links.iter().rev().any(|l| match l.shape.layout {
            BloomLayout::Paired => l.first_hit_masked(h, masks) && l.second_hit_masked(h, masks),
            _ => l.head_hit(h) && l.tail_hit(h),
        })
    }

    /// Prefetches the cache lines [`gen_contains`](Self::gen_contains) reads
    /// first in each link: the first [`HEAD_PROBES`] probes of a classic link,
    /// the block of a blocked one, both blocks of a paired one (measured: the
    /// second block only when the first passed, in a second prefetch stage half
    /// a batch window later, was slower in process, 117 against 73 ns per
    /// lookup at 1M, as the second stage re-tests every first block).
    #[inline(always)]
    pub(crate) fn prefetch_head(&self, h: &ItemHash) {
        for l in &self.links {
            match l.shape.layout {
                BloomLayout::Paired => l.prefetch(h),
                _ => l.prefetch_head(h),
            }
        }
    }

    /// Sets bit `i` of `seen` for each item `hashes[i]` this generation holds
    /// (items whose bit is set already are not asked again): the same answers
    /// as [`gen_contains`](Self::gen_contains) item by item, asked link by link
    /// over the whole batch, so that each link's shape is read once per batch
    /// and the items' probes, independent of each other, overlap (each link
    /// prefetches [`BATCH_AHEAD`] items ahead).
    pub(crate) fn mark_contained(
        &self,
        hashes: &[ItemHash],
        seen: &mut [u64],
        passed: &mut Vec<u32>,
    ) {
        for l in self.links.iter().rev() {
            if l.shape.layout == BloomLayout::Paired && passed.capacity() >= hashes.len() {
                l.mark_paired(hashes, seen, passed);
                continue;
            }
            for (i, h) in hashes.iter().enumerate() {
                if let Some(next) = hashes.get(i + BATCH_AHEAD) {
                    l.prefetch_head(next);
                }
                let (w, b) = (i / 64, i % 64);
                let Some(word) = seen.get_mut(w) else {
                    return;
                };
                if (*word >> b) & 1 == 0 && l.head_hit(h) && l.tail_hit(h) {
                    *word |= 1 << b;
                }
            }
        }
    }

    /// `32 + 64·links + bytes` without the chain overhead: a generation's part
    /// of its window's `mem_usage`.
    pub(crate) fn links_mem(&self) -> u64 {
        self.links.iter().fold(0u64, |acc, l| {
            acc.saturating_add(LINK_OVERHEAD + l.shape.bytes())
        })
    }
}

/// How many items ahead [`BloomChain::mark_contained`] prefetches a link's
/// lines: the loop over one link's items does little work per item, so the
/// lines of 16 items cover a miss to memory.
pub(crate) const BATCH_AHEAD: usize = 16;

/// Probes of a classic generation link tested together, without a branch
/// between them, before the rest (`Link::head_hit`). At the fill a full link
/// reaches (about half its bits set) a never-added item passes all four with
/// probability 1/16, so the branch after them is almost always "absent".
/// Measured with `crates/ferrobloom-core/examples/bench_window.rs` (2, 3, 4, 6: 4 was fastest at 1M,
/// all four within noise at 10M).
pub(crate) const HEAD_PROBES: u32 = 4;

impl Link {
    /// [`BloomChain::mark_contained`] for a paired link, in two passes: the
    /// first blocks of all items (prefetched ahead), then the second blocks of
    /// the items whose first block passed (prefetched ahead among those), so
    /// every line read was prefetched and no second block is fetched for an
    /// item the first block rules out. `passed` has room for every item.
    fn mark_paired(&self, hashes: &[ItemHash], seen: &mut [u64], passed: &mut Vec<u32>) {
        let bit =
            |seen: &[u64], i: usize| seen.get(i / 64).is_some_and(|w| (w >> (i % 64)) & 1 == 1);
        passed.clear();
        for (i, h) in hashes.iter().enumerate() {
            // (not for an item a newer generation already holds: it is not asked)
            if let Some(next) = hashes.get(i + BATCH_AHEAD) {
                if !bit(seen, i + BATCH_AHEAD) {
                    self.words.prefetch_line(self.block(next));
                }
            }
            if !bit(seen, i) && self.first_hit(h) && passed.len() < passed.capacity() {
                passed.push(i as u32);
            }
        }
        for (j, &i) in passed.iter().enumerate() {
            if let Some(next) = passed
                .get(j + BATCH_AHEAD)
                .and_then(|&n| hashes.get(n as usize))
            {
                self.words.prefetch_line(self.second_block(next));
            }
            let i = i as usize;
            if hashes.get(i).is_some_and(|h| self.second_hit(h)) {
                if let Some(w) = seen.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
    }

    /// Prefetches what [`head_hit`](Self::head_hit) reads: the first
    /// [`HEAD_PROBES`] probes of a classic link, the block of a blocked one,
    /// the first block of a paired one.
    #[inline(always)]
    fn prefetch_head(&self, h: &ItemHash) {
        match self.shape.layout {
            BloomLayout::Classic => self.prefetch_classic(h, HEAD_PROBES),
            BloomLayout::Blocked | BloomLayout::Paired => self.words.prefetch_line(self.block(h)),
            BloomLayout::RedisBloom => {}
        }
    }

    /// Whether the first [`HEAD_PROBES`] probes of a classic link are all set,
    /// read without branching between them; a blocked link's whole answer
    /// (one cache line); a paired link's first block; `true` for RedisBloom's
    /// layout (not in windows; its
    /// [`tail_hit`](Self::tail_hit) is the whole answer).
    #[inline(always)]
    fn head_hit(&self, h: &ItemHash) -> bool {
        match self.shape.layout {
            BloomLayout::Classic => {
                let m = self.shape.bits;
                let words = self.words.words();
                let mut g = h.lo;
                let mut all = 1u64;
                for _ in 0..self.shape.hashes.min(HEAD_PROBES) {
                    let bit = fastrange(g, m);
                    let w = words.get((bit >> 6) as usize).copied().unwrap_or(0);
                    all &= w >> (bit & 63);
                    g = g.wrapping_add(h.hi);
                }
                all & 1 == 1
            }
            BloomLayout::Paired => self.first_hit(h),
            BloomLayout::Blocked | BloomLayout::RedisBloom => true,
        }
    }

    /// The rest of the answer after [`head_hit`](Self::head_hit): the probes
    /// after the first [`HEAD_PROBES`] of a classic link, a paired link's
    /// second block, a blocked link's block, RedisBloom's layout whole.
    #[inline(always)]
    fn tail_hit(&self, h: &ItemHash) -> bool {
        match self.shape.layout {
            BloomLayout::Classic => {
                let m = self.shape.bits;
                let k = self.shape.hashes;
                let skip = k.min(HEAD_PROBES);
                let mut g = h.lo.wrapping_add(h.hi.wrapping_mul(u64::from(skip)));
                for _ in skip..k {
                    if !self.words.get(fastrange(g, m)) {
                        return false;
                    }
                    g = g.wrapping_add(h.hi);
                }
                true
            }
            BloomLayout::Paired => self.second_hit(h),
            _ => self.contains(h),
        }
    }
}

/// The per-link overhead of `mem_usage` (RedisBloom's formula).
pub(crate) const GEN_LINK_OVERHEAD: u64 = LINK_OVERHEAD;
/// The per-filter overhead of `mem_usage` (RedisBloom's formula).
pub(crate) const GEN_CHAIN_OVERHEAD: u64 = CHAIN_OVERHEAD;
