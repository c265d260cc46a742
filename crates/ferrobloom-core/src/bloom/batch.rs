//! What a filter made of many chains needs of each (a windowed filter's
//! generations, `crate::window`): a chain whose links its owner sizes and
//! limits (an empty chain, a link pushed without the chain's own limits, an
//! insert into the newest link), and lookups built for asking many chains about
//! the same items (two-step probes with one branch per link, prefetching the
//! lines those read first, and link-by-link answers for a whole batch); and
//! the batch loops of a chain (`add_batch`, `contains_batch`: a chain of one
//! blocked or classic link, the common case, runs a loop of its layout, each
//! add one pass over the item's probes, so no layout is matched and no probe
//! position computed twice per item; a blocked link's probe loop unrolled for
//! its probe count; a large classic link's lookups in two stages, so that a
//! line is fetched from memory only for an item whose earlier probes passed).

use super::link::{block_all, block_test_and_insert, classic_bit};
use super::*;
use crate::bits::prefetch;
use crate::hash::fastrange;

/// `$body` with `$K` a constant equal to `$k` (a blocked link's probes) for
/// the counts of error rates from 10% to 1e-5 (3 to 14), so that the probe
/// loop is unrolled; `$other` for any other count.
macro_rules! with_probes {
    ($k:expr, $K:ident => $body:expr, _ => $other:expr) => {
        with_probes!(@ $k, $K, $body, $other, 3 4 5 6 7 8 9 10 11 12 13 14)
    };
    (@ $k:expr, $K:ident, $body:expr, $other:expr, $($n:literal)*) => {
        match $k {
            $($n => {
                const $K: usize = $n;
                $body
            })*
            _ => $other,
        }
    };
}

impl BloomChain {
    /// Links in use (BF.INFO `Number of filters`).
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// The links, oldest first, for writing into (LOADCHUNK, RDB loading).
    pub(crate) fn links_mut(&mut self) -> impl Iterator<Item = &mut Link> + '_ {
        self.links.iter_mut()
    }

    /// An empty chain growing by `expansion` whose links the caller pushes
    /// ([`push_owned_link`](Self::push_owned_link)).
    pub(crate) fn empty(expansion: u32) -> Self {
        BloomChain {
            links: Vec::new(),
            items: 0,
            expansion,
            rb: None,
            opts: ChainOptions::default(),
            pending_shape: None,
            plan: None,
        }
    }

    /// Adds a link of `shape` without checking limits (the owner checks them
    /// over all of its chains first).
    pub(crate) fn push_owned_link(&mut self, shape: LinkShape) -> Result<(), BloomError> {
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

    /// True when a link of this chain holds all of the item's bits: the
    /// same answer as [`BloomChain::contains`], in two steps per classic link
    /// (see [`Link::head_hit`]), so that a windowed filter, which asks up to
    /// five generations per item and finds most of them without the item, takes
    /// one well-predicted branch per generation instead of about two
    /// unpredictable ones (one per probe until a zero bit).
    #[cfg(test)]
    pub(crate) fn two_step_contains(&self, h: &ItemHash) -> bool {
        self.two_step_contains_masked(h, &mut PairMasks::new(h.hi))
    }

    /// [`two_step_contains`](Self::two_step_contains) with the item's
    /// paired-link masks, built once per item for all chains asked (see
    /// [`PairMasks`]).
    #[inline(always)]
    pub(crate) fn two_step_contains_masked(&self, h: &ItemHash, masks: &mut PairMasks) -> bool {
        self.links.iter().rev().any(|l| match l.shape.layout {
            BloomLayout::Paired => l.first_hit_masked(h, masks) && l.second_hit_masked(h, masks),
            _ => l.head_hit(h) && l.tail_hit(h),
        })
    }

    /// Prefetches the cache lines [`two_step_contains`](Self::two_step_contains) reads
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

    /// Sets bit `i` of `seen` for each item `hashes[i]` this chain holds
    /// (items whose bit is set already are not asked again): the same answers
    /// as [`two_step_contains`](Self::two_step_contains) item by item, asked link by link
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

    /// Appends [`contains`](Self::contains) of each hash to `out`, prefetching
    /// the lines of the hash `ahead` items on (none when `ahead` is 0); a
    /// chain of one blocked or classic link in a loop of its layout, whose
    /// lines are prefetched a group at a time ([`grouped`]).
    pub(crate) fn contains_batch(&self, hashes: &[ItemHash], ahead: usize, out: &mut Vec<bool>) {
        if let [l] = &self.links[..] {
            match l.shape.layout {
                BloomLayout::Blocked => return l.blocked_contains_batch(hashes, ahead, out),
                BloomLayout::Classic => {
                    return l.classic_contains_batch::<true>(hashes, ahead, out)
                }
                BloomLayout::ClassicDouble => {
                    return l.classic_contains_batch::<false>(hashes, ahead, out)
                }
                _ => {}
            }
        }
        if ahead == 0 {
            return out.extend(hashes.iter().map(|h| self.contains(h)));
        }
        for h in hashes.iter().take(ahead) {
            self.prefetch(h);
        }
        for (i, h) in hashes.iter().enumerate() {
            if let Some(a) = hashes.get(i + ahead) {
                self.prefetch(a);
            }
            out.push(self.contains(h));
        }
    }

    /// Adds each hash as [`add`](Self::add) does, appending the results to
    /// `out` and stopping after a "full" error; the lines of the hash `ahead`
    /// items on are prefetched (none when `ahead` is 0). A chain of one
    /// blocked or classic link with room runs a loop of its own with the
    /// layout matched once per batch, prefetching a group at a time
    /// ([`Link::add_run`]).
    pub(crate) fn add_batch(
        &mut self,
        hashes: &[ItemHash],
        ahead: usize,
        limits: &Limits,
        out: &mut Vec<Result<bool, BloomError>>,
    ) {
        let mut done = 0;
        if let [l] = &mut self.links[..] {
            done = match l.shape.layout {
                BloomLayout::Blocked => with_probes!(
                    l.shape.hashes,
                    K => l.blocked_add_k::<K>(hashes, ahead, &mut self.items, out),
                    _ => l.add_run::<RUN_BLOCKED, 0>(hashes, ahead, &mut self.items, out)
                ),
                BloomLayout::Classic => {
                    l.add_run::<RUN_MIXED, 0>(hashes, ahead, &mut self.items, out)
                }
                BloomLayout::ClassicDouble => {
                    l.add_run::<RUN_DOUBLE, 0>(hashes, ahead, &mut self.items, out)
                }
                _ => 0,
            };
        }
        let rest = hashes.get(done..).unwrap_or_default();
        if ahead > 0 {
            for h in rest.iter().take(ahead) {
                self.prefetch(h);
            }
        }
        for (i, h) in rest.iter().enumerate() {
            if ahead > 0 {
                if let Some(a) = rest.get(i + ahead) {
                    self.prefetch(a);
                }
            }
            let r = self.add(h, limits);
            let full = r == Err(BloomError::Full);
            out.push(r);
            if full {
                break;
            }
        }
    }

    /// `64·links + bytes`: [`mem_usage`](Self::mem_usage) without the chain's
    /// fixed part (a chain's share of its owner's).
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

/// Probes of a classic link tested together, without a branch
/// between them, before the rest (`Link::head_hit`). At the fill a full link
/// reaches (about half its bits set) a never-added item passes all four with
/// probability 1/16, so the branch after them is almost always "absent".
/// Measured with `crates/ferrobloom-core/examples/bench_window.rs` (2, 3, 4, 6: 4 was fastest at 1M,
/// all four within noise at 10M).
pub(crate) const HEAD_PROBES: u32 = 4;

/// Items per group of a one-link batch loop over a blocked link
/// ([`grouped`]): the lines of the next 32 items are prefetched in one burst.
const BLOCKED_GROUP: usize = 32;

/// Items per group of adds to a classic link, whose prefetch fetches up to
/// 16 of an item's lines (`Link::prefetch`; an add writes all of them): 4
/// items, 28 lines at k = 7 (2 and 8 measured the same or slower).
const CLASSIC_GROUP: usize = 4;

/// Calls `each` on every hash in order, in groups of `g`: before a group is
/// worked on, the lines of the group after it are prefetched (`pf`) in one
/// burst. A burst of prefetches with little work between them keeps more of
/// them in flight than one prefetch per item between items' work, which
/// waits on the CPU's window of instructions in flight (measured on a
/// 128 MiB blocked filter: lookups 2.0-2.4x the memory floor one item ahead,
/// 1.5-1.7x in groups of 32).
#[inline(always)]
fn grouped(
    hashes: &[ItemHash],
    g: usize,
    mut pf: impl FnMut(&ItemHash),
    mut each: impl FnMut(&ItemHash),
) {
    let g = g.max(1);
    hashes.iter().take(g).for_each(&mut pf);
    for (n, group) in hashes.chunks(g).enumerate() {
        let next = hashes.get((n + 1) * g..).unwrap_or_default();
        next.iter().take(g).for_each(&mut pf);
        group.iter().for_each(&mut each);
    }
}

/// Items per stage of a staged classic lookup
/// ([`Link::classic_contains_staged`]): the indices of the items whose first
/// probes pass fit in a stack array of this many.
const STAGE: usize = 256;
/// Items whose first probes' lines a staged classic lookup prefetches in one
/// burst (16-32 lines).
const HEAD_GROUP: usize = 16;
/// Items whose other probes' lines a staged classic lookup prefetches in one
/// burst (24 lines at k = 7, as [`CLASSIC_GROUP`]).
const TAIL_GROUP: usize = 4;

/// [`Link::add_run`]'s layouts.
const RUN_BLOCKED: u8 = 0;
const RUN_MIXED: u8 = 1;
const RUN_DOUBLE: u8 = 2;

impl Link {
    /// [`BloomChain::add_batch`] for the chain's only link (of layout `L`)
    /// while it has room, in groups as [`grouped`] (no prefetch when `ahead`
    /// is 0): each item tested and set in one pass
    /// ([`test_and_insert`](Self::test_and_insert)), `items` (the chain's
    /// count) kept with the link's. Returns how many hashes it took; the
    /// caller adds the rest item by item (the link is full, or the count would
    /// wrap). `K`: a blocked link's probe count as a constant, or 0.
    fn add_run<const L: u8, const K: usize>(
        &mut self,
        hashes: &[ItemHash],
        ahead: usize,
        items: &mut u64,
        out: &mut Vec<Result<bool, BloomError>>,
    ) -> usize {
        let prefetch = |l: &Link, h: &ItemHash| match L {
            RUN_BLOCKED => l.words.prefetch_line(l.block(h)),
            _ => l.prefetch(h),
        };
        let g = match (ahead, L) {
            (0, _) => hashes.len().max(1),
            (_, RUN_BLOCKED) => BLOCKED_GROUP,
            _ => CLASSIC_GROUP,
        };
        let mut start = 0;
        while start < hashes.len() {
            let group = hashes.get(start..).unwrap_or_default();
            let (group, next) = group.split_at(g.min(group.len()));
            if ahead > 0 {
                if start == 0 {
                    group.iter().for_each(|h| prefetch(self, h));
                }
                next.iter().take(g).for_each(|h| prefetch(self, h));
            }
            for (j, h) in group.iter().enumerate() {
                let Some(n) = items.checked_add(1) else {
                    return start + j;
                };
                if self.is_full() {
                    return start + j;
                }
                let added = match L {
                    RUN_BLOCKED => self.blocked_test_and_insert::<K>(h),
                    RUN_MIXED => self.classic_test_and_insert::<true>(h),
                    _ => self.classic_test_and_insert::<false>(h),
                };
                if added {
                    *items = n;
                }
                out.push(Ok(added));
            }
            start += group.len();
        }
        hashes.len()
    }

    /// [`add_run`](Self::add_run) of a blocked link of `K` probes: while the
    /// link has room for the rest of the batch (each add adds one item at
    /// most, so no item needs a check) and its writes are not tracked (a link
    /// of less than 1 MiB, or one that has taken four items a page, when
    /// tracking stops: `Link::count_insert`, `bits::Written`),
    /// a loop over the lines with the probe loop unrolled, prefetching in
    /// groups; otherwise `add_run`. Same answers, counts and bits.
    fn blocked_add_k<const K: usize>(
        &mut self,
        hashes: &[ItemHash],
        ahead: usize,
        items: &mut u64,
        out: &mut Vec<Result<bool, BloomError>>,
    ) -> usize {
        let blocks = self.shape.bits / crate::bits::LINE_BITS;
        let mut done = 0;
        loop {
            let rest = hashes.get(done..).unwrap_or_default();
            // Each add adds one item at most: this many fill neither the
            // link nor the chain's count.
            let room = (self.shape.entries.saturating_sub(self.items))
                .min(u64::MAX - *items)
                .min(rest.len() as u64) as usize;
            let Some(lines) = self.words.lines_mut_untracked().filter(|_| room > 0) else {
                return done + self.add_run::<RUN_BLOCKED, K>(rest, ahead, items, out);
            };
            let run = rest.get(..room).unwrap_or_default();
            let g = if ahead == 0 {
                run.len().max(1)
            } else {
                BLOCKED_GROUP
            };
            let line = |h: &ItemHash| fastrange(h.lo, blocks) as usize;
            let mut added = 0u64;
            out.reserve(run.len());
            if ahead > 0 {
                for h in run.iter().take(g) {
                    if let Some(l) = lines.get(line(h)) {
                        prefetch(l as *const _ as *const u8);
                    }
                }
            }
            for (n, group) in run.chunks(g).enumerate() {
                if ahead > 0 {
                    let next = run.get((n + 1) * g..).unwrap_or_default();
                    for h in next.iter().take(g) {
                        if let Some(l) = lines.get(line(h)) {
                            prefetch(l as *const _ as *const u8);
                        }
                    }
                }
                for h in group {
                    let new = lines
                        .get_mut(line(h))
                        .is_some_and(|l| block_test_and_insert(l, h.hi, K as u32));
                    added += u64::from(new);
                    out.push(Ok(new));
                }
            }
            self.items += added;
            *items += added;
            done += run.len();
        }
    }

    /// [`BloomChain::contains_batch`] of a chain of one blocked link: the
    /// layout is matched once per batch, not once per item, and the lines are
    /// prefetched in groups of [`BLOCKED_GROUP`] when `ahead` is not 0.
    fn blocked_contains_batch(&self, hashes: &[ItemHash], ahead: usize, out: &mut Vec<bool>) {
        let lines = self.words.lines();
        let blocks = self.shape.bits / crate::bits::LINE_BITS;
        let k = self.shape.hashes;
        let line = |h: &ItemHash| lines.get(fastrange(h.lo, blocks) as usize);
        if ahead == 0 {
            return out.extend(
                hashes
                    .iter()
                    .map(|h| line(h).is_some_and(|l| block_all(l, h.hi, k))),
            );
        }
        with_probes!(
            k,
            K => self.blocked_contains_k::<K>(hashes, out),
            _ => grouped(
            hashes,
            BLOCKED_GROUP,
            |h| {
                if let Some(l) = line(h) {
                    prefetch(l as *const _ as *const u8);
                }
            },
            |h| out.push(line(h).is_some_and(|l| block_all(l, h.hi, k))),
            )
        )
    }

    /// [`blocked_contains_batch`](Self::blocked_contains_batch) with `ahead`
    /// for a link of `K` probes, the probe loop unrolled (4 MiB, 1M mixed
    /// lookups: 12.5 -> 8.4 ns per item, fastest of 9 rounds).
    fn blocked_contains_k<const K: usize>(&self, hashes: &[ItemHash], out: &mut Vec<bool>) {
        let lines = self.words.lines();
        let blocks = self.shape.bits / crate::bits::LINE_BITS;
        let line = |h: &ItemHash| lines.get(fastrange(h.lo, blocks) as usize);
        let start = out.len();
        out.resize(start + hashes.len(), false);
        let dst = out.get_mut(start..).unwrap_or_default();
        for h in hashes.iter().take(BLOCKED_GROUP) {
            if let Some(l) = line(h) {
                prefetch(l as *const _ as *const u8);
            }
        }
        for (n, (group, d)) in hashes
            .chunks(BLOCKED_GROUP)
            .zip(dst.chunks_mut(BLOCKED_GROUP))
            .enumerate()
        {
            let next = hashes.get((n + 1) * BLOCKED_GROUP..).unwrap_or_default();
            for h in next.iter().take(BLOCKED_GROUP) {
                if let Some(l) = line(h) {
                    prefetch(l as *const _ as *const u8);
                }
            }
            for (h, o) in group.iter().zip(d.iter_mut()) {
                *o = line(h).is_some_and(|l| block_all(l, h.hi, K as u32));
            }
        }
    }

    /// [`BloomChain::contains_batch`] of a chain of one classic link (`MIXED`:
    /// layout 4): without `ahead`, each item in two steps
    /// ([`head_hit`](Self::head_hit) then [`tail_hit`](Self::tail_hit): one
    /// well-predicted branch for most non-members instead of one per probe);
    /// with it, in stages ([`classic_contains_staged`](Self::classic_contains_staged)).
    fn classic_contains_batch<const MIXED: bool>(
        &self,
        hashes: &[ItemHash],
        ahead: usize,
        out: &mut Vec<bool>,
    ) {
        let hit = |h: &ItemHash| self.classic_head::<MIXED>(h) && self.classic_tail::<MIXED>(h);
        if ahead == 0 {
            return out.extend(hashes.iter().map(hit));
        }
        self.classic_contains_staged::<MIXED>(hashes, out)
    }

    /// [`classic_contains_batch`](Self::classic_contains_batch) with `ahead`
    /// (a link of 4 MiB and more), in two stages over each [`STAGE`] items:
    /// the lines of every item's first probe (two once the link holds half
    /// its capacity, when about half its bits are set and a never-added item
    /// passes one probe in two) are prefetched in groups and tested without a
    /// branch, the indices of the items that pass kept; then the other
    /// probes' lines of those items only are prefetched and tested. Before, all
    /// `k` lines of every item were prefetched: a never-added item needs one
    /// or two, and the batch moved 7 lines per item where a mixed batch must
    /// read about 4 (measured, 1M mixed lookups, median of 9 rounds: 128 MiB
    /// nearly empty 104 -> 63 ns, 64 MiB 94 -> 57, 4 MiB 27 -> 15; 128 MiB
    /// with 101M items, 83 -> 71). Same answers.
    fn classic_contains_staged<const MIXED: bool>(&self, hashes: &[ItemHash], out: &mut Vec<bool>) {
        let (m, k) = (self.shape.bits, self.shape.hashes);
        let words = self.words.words();
        let head = if self.items.saturating_mul(2) < self.shape.entries {
            1
        } else {
            2
        }
        .min(k);
        let pf = |h: &ItemHash, from: u32, to: u32| {
            let mut g = h.lo.wrapping_add(h.hi.wrapping_mul(u64::from(from)));
            for _ in from..to {
                self.words.prefetch(classic_bit::<MIXED>(g, m));
                g = g.wrapping_add(h.hi);
            }
        };
        let test = |h: &ItemHash, from: u32, to: u32| {
            let mut g = h.lo.wrapping_add(h.hi.wrapping_mul(u64::from(from)));
            let mut all = 1u64;
            for _ in from..to {
                let bit = classic_bit::<MIXED>(g, m);
                let w = words.get((bit >> 6) as usize).copied().unwrap_or(0);
                all &= w >> (bit & 63);
                g = g.wrapping_add(h.hi);
            }
            all & 1 == 1
        };
        let start = out.len();
        out.resize(start + hashes.len(), false);
        let Some(dst) = out.get_mut(start..) else {
            return;
        };
        let mut passed = [0u16; STAGE];
        for (hs, ds) in hashes.chunks(STAGE).zip(dst.chunks_mut(STAGE)) {
            let mut n = 0usize;
            for h in hs.iter().take(HEAD_GROUP) {
                pf(h, 0, head);
            }
            for (g, group) in hs.chunks(HEAD_GROUP).enumerate() {
                let next = hs.get((g + 1) * HEAD_GROUP..).unwrap_or_default();
                for h in next.iter().take(HEAD_GROUP) {
                    pf(h, 0, head);
                }
                for (j, h) in group.iter().enumerate() {
                    if let Some(p) = passed.get_mut(n) {
                        *p = (g * HEAD_GROUP + j) as u16;
                    }
                    n += usize::from(test(h, 0, head));
                }
            }
            let passed = passed.get(..n).unwrap_or_default();
            for i in passed.iter().take(TAIL_GROUP) {
                if let Some(h) = hs.get(usize::from(*i)) {
                    pf(h, head, k);
                }
            }
            for (g, group) in passed.chunks(TAIL_GROUP).enumerate() {
                let next = passed.get((g + 1) * TAIL_GROUP..).unwrap_or_default();
                for i in next.iter().take(TAIL_GROUP) {
                    if let Some(h) = hs.get(usize::from(*i)) {
                        pf(h, head, k);
                    }
                }
                for i in group {
                    let i = usize::from(*i);
                    if let (Some(h), Some(d)) = (hs.get(i), ds.get_mut(i)) {
                        *d = test(h, head, k);
                    }
                }
            }
        }
    }

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
            BloomLayout::Classic | BloomLayout::ClassicDouble => {
                self.prefetch_classic(h, HEAD_PROBES)
            }
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
            BloomLayout::Classic => self.classic_head::<true>(h),
            BloomLayout::ClassicDouble => self.classic_head::<false>(h),
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
            BloomLayout::Classic => self.classic_tail::<true>(h),
            BloomLayout::ClassicDouble => self.classic_tail::<false>(h),
            BloomLayout::Paired => self.second_hit(h),
            _ => self.contains(h),
        }
    }

    /// [`head_hit`](Self::head_hit) of a classic link (`MIXED`: layout 4).
    #[inline(always)]
    fn classic_head<const MIXED: bool>(&self, h: &ItemHash) -> bool {
        let m = self.shape.bits;
        let words = self.words.words();
        let mut g = h.lo;
        let mut all = 1u64;
        for _ in 0..self.shape.hashes.min(HEAD_PROBES) {
            let bit = classic_bit::<MIXED>(g, m);
            let w = words.get((bit >> 6) as usize).copied().unwrap_or(0);
            all &= w >> (bit & 63);
            g = g.wrapping_add(h.hi);
        }
        all & 1 == 1
    }

    /// [`tail_hit`](Self::tail_hit) of a classic link (`MIXED`: layout 4).
    #[inline(always)]
    fn classic_tail<const MIXED: bool>(&self, h: &ItemHash) -> bool {
        let m = self.shape.bits;
        let k = self.shape.hashes;
        let skip = k.min(HEAD_PROBES);
        let mut g = h.lo.wrapping_add(h.hi.wrapping_mul(u64::from(skip)));
        for _ in skip..k {
            if !self.words.get(classic_bit::<MIXED>(g, m)) {
                return false;
            }
            g = g.wrapping_add(h.hi);
        }
        true
    }
}
