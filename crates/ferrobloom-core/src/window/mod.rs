//! Windowed Bloom filters (`WINDOW seconds`): a filter that remembers an item for
//! at least a window `W` after it was last added and forgets it soon after.
//!
//! # Design: generations of ordinary Bloom chains
//! Time is cut into generations of `W / K` milliseconds (`K` = [`PARTS`] = 4, so
//! the slack is `s = 1/K = 1/4`). Generation `n` covers the server times
//! `t` with `floor(K·t / W) = n` (absolute, so every server agrees on the
//! boundaries), holds the items added during it, and is **live** at time `now`
//! while `(n + 1 + K)·W > K·now`, i.e. until a full window after its end. Items
//! go into the current generation; lookups query every live generation; a
//! generation that is no longer live is dropped (whole, O(1) main-thread work:
//! its bit arrays are handed back to the caller, which frees them off the main
//! thread when large). Generations are created lazily, on the first item of
//! their time span, with zeroed memory (`bits.rs`; resident from the start
//! below 1 MiB and when the allocator reuses freed pages: docs/windowed.md,
//! "Resident memory").
//!
//! Guarantees (tested in `window/tests.rs` with an injected clock):
//! 1. *No false negatives inside the window:* an item added at `t` is in
//!    generation `n = floor(K·t/W)`, so `(n + 1)·W > K·t` and the generation is
//!    live at every `now <= t + W`.
//! 2. *It forgets:* `n <= K·t/W`, so at `now >= t + W + W/K = t + W·(1 + s)` the
//!    generation is not live and the item answers like a never-added one.
//! 3. *Bounded false positives:* at most `K + 1` generations are live at any
//!    moment, and the rates their links answer with sum to at most `0.97·p`:
//!    a new generation's links may take what the older ones leave (each link
//!    counts the rate it answers with the items it holds, by the model its
//!    layout is sized with), so the union stays at or below `p` however the
//!    items are spread (`window/sizing.rs`, `Window::limit`).
//!
//! # Sizing (`window/sizing.rs`, `window/forecast.rs`; measured in docs/windowed.md)
//! A generation's first link is sized when its first item arrives, from the
//! generations held (a pure function of the filter's state, which replicas and
//! AOF replays share, and of the write's time):
//! - *Items:* the last `K` generations' counts are read as a regime
//!   (`forecast::Regime`: fresh, above the capacity, young above a share,
//!   young, rising, spike, settled), each with its bound: a share with no
//!   history; over the capacity the trend `2·c1 - c2` plus `3·sqrt` of it;
//!   with a window of history the busiest plus the lesser of 5% and `3·sqrt`
//!   of it (a lone spike excluded); with less, twice the busiest (at most a
//!   share) and at most the last count. A stream that keeps to the capacity
//!   is held to the room the last `K - 1` leave in a window (`capacity` minus
//!   their items, at least half a share): an exact bound, so a stream swinging
//!   within the window is sized exactly.
//! - *Error:* `T·B - r` with `B = 0.97·p/(K+1)`, `r = 0.1·B` kept for growth,
//!   `T = 1.08` (every generation full: `K·(T - r) + T = K + 1`) plus a quarter
//!   of what the generations held left of their own `T·B`, at most the limit;
//!   a young stream's at most the steady error per item (`T·B - r` per share,
//!   at least `0.4·B`).
//!
//! A generation that outgrows its first link opens links sized by its own rate
//! so far over the rest of its span (plus 10%, at most a share, then the
//! previous link times the expansion), the second, third and fourth at least
//! a 16th of the first (the second at most half of it when the generation
//! had no history: a batch projects a whole share), then at least the
//! previous one times the expansion (a batch at one instant projects no rate:
//! 20% over a first link takes at most 4 growth links), each at half of what
//! the limit leaves and at most the steady error per item; a NONSCALING
//! generation's second link holds the rest of a window's capacity and then it
//! refuses with "non scaling filter is full".
//!
//! Memory, against a plain scaling filter of the same capacity and error
//! holding `capacity` items (paired links, `bench_window_memory --capacity
//! 200000 --windows 10`, settled / from the start, 1% and 0.1%): steady
//! 1.51x / 1.51x and 1.46x / 1.46x; swinging ±30% within the window 1.57x /
//! 1.68x and 1.51x / 1.63x; batches of capacity/22 every `W/20` 1.56x and
//! 1.51x; peaks of 1.3x the capacity 1.85x / 1.89x and 1.78x / 1.79x. The
//! least any sizing could reach in this structure, knowing every generation's
//! count in advance (`--bound`): 1.49x steady, 1.54x swinging, 1.40x in the
//! batches, 1.69x peaking at 1% (1.44x, 1.49x, 1.36x, 1.63x at 0.1%). What
//! the sizing pays above it is the forecast: a generation's first link is
//! sized before its items arrive, and one that gets more than its first link
//! opens links at more bits per item.
//!
//! # Speed
//! Links are paired by default (`bloom.rs`: an item's probes in two 512-bit
//! blocks, half in each), so asking a generation about an item it does not hold
//! reads one cache line almost always; classic links read about two, scattered.
//! Batches ([`Window::add_batch`], [`Window::contains_batch`]) ask the
//! generations one at a time for all items, each link in two prefetched passes
//! (first blocks, then the second blocks of the items whose first block
//! passed): the generations older than the current one never change during a
//! write, so their answers can be taken before the items are added in order.
//!
//! Not used: the age-partitioned Bloom filter (Shtul, Baquero, Almeida 2020) needs
//! `k + l` slices with `l` extra slices to cover the sliding part; for a bounded
//! rate at any moment its own analysis gives about 1.3·n·log10(1/p) bytes at the
//! optimum, i.e. 2.1-2.3x a plain filter at 1% and 0.1%, and every insert writes
//! `k` slices spread over the ring (no O(1) rotation with lazily zeroed memory:
//! a slice must be cleared in place). Untightened generations (each at `p`) are
//! simple but their union reaches `(K+1)·p`. The time-limited Bloom filter
//! (arXiv 2306.06742) keeps per-cell timestamps (a multiple of the bits).
//!
//! # Time
//! The filter has its own time, in milliseconds: the server clock plus a lead
//! (`ahead`, in memory only), never before its newest change (`last_ms`). A
//! write that finds the clock (plus the lead) behind the newest change sets the
//! lead to `last_ms - clock` ([`Window::write_time`]): after a clock step back
//! of any size the filter's time goes on from its newest change at the clock's
//! rate, so generations keep rotating (no write is refused because of the step,
//! memory stays at the steady state) and an item added after the step is
//! forgotten by `W·(1 + s)` of the time the filter then runs on; nothing is
//! forgotten early and generations are never reordered. A clock that jumps
//! forward is time passing: what is older than the window by the new time is
//! forgotten. A load, and every write the primary timed (`AT`), anchor the
//! lead again ([`Window::anchor`]), so a filter whose newest change lies ahead
//! of this server's clock (a payload from a server whose clock is ahead, a
//! promoted replica whose clock lags) goes on from its newest change instead
//! of waiting for the clock. Reads use the filter's time and never change
//! anything; only writes drop generations, and they replicate the time they
//! used, so a replica and an AOF replay reach the primary's state.
//!
//! # Encoding (SCANDUMP header `FBbw`, version 1)
//! Documented on [`Window::encode_header`] (`window/encoding.rs`); the data
//! chunks are each generation's links in order, exactly as a plain chain's.
//! SCANDUMP answers them with walk iterators that name their generation
//! ([`walk_iter`], [`Window::walk_chunk`]), so a live copy across a rotation is
//! exact; LOADCHUNK takes those and position iterators (the AOF rewrite's).

use super::bloom::{
    BloomChain, BloomError, BloomLayout, Limits, LinkShape, PairMasks, ShapePlan, BATCH_AHEAD,
    CHAIN_OVERHEAD, LINK_OVERHEAD, MAX_CAPACITY, MAX_EXPANSION, MAX_LINKS_CEILING,
};
use super::hash::{HashScheme, ItemHash};
use super::relocate::Pass;

/// Magic bytes that open a windowed filter's header.
pub const WINDOW_MAGIC: [u8; 4] = *b"FBbw";
/// Windowed header version 1, the first (and the one written).
pub const WINDOW_VERSION_BASE: u8 = 1;
/// Generations per window (`K`; the slack is `1/K`).
pub const PARTS: u32 = 4;
/// Largest `K` a header may carry.
pub const MAX_PARTS: u32 = 64;
/// The longest window: 10 years of 365.25 days, in milliseconds.
pub const MAX_WINDOW_MS: u64 = 315_576_000_000;
/// Fixed part of the header.
const HEADER_FIXED: usize = 48;

/// What an add did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// Not seen within the window: inserted (BF.ADD answers 1).
    New,
    /// Seen in an older live generation: inserted into the current one so it is
    /// remembered for another window (BF.ADD answers 0).
    Refreshed,
    /// Already in the current generation: nothing changed (BF.ADD answers 0).
    Present,
}

impl Added {
    /// The reply of BF.ADD / BF.MADD.
    pub fn is_new(self) -> bool {
        self == Added::New
    }
    /// Whether the filter changed.
    pub fn changed(self) -> bool {
        self != Added::Present
    }
}

/// One generation: the items added during its time span.
struct Generation {
    /// The generation covers the times `t` with `floor(K·t/W) = index`.
    index: u64,
    chain: BloomChain,
}

/// A windowed filter (see the module doc).
pub struct Window {
    window_ms: u64,
    parts: u32,
    capacity: u64,
    error: f64,
    /// 0 = non-scaling.
    expansion: u32,
    layout: BloomLayout,
    /// The time of the newest change (ms); writes and reads never use an
    /// earlier time.
    last_ms: u64,
    /// How far the filter's time runs ahead of the server clock (ms): set when
    /// a write finds the clock behind the newest change (a step back, a
    /// failover, a load), so the filter's time goes on from its newest change
    /// at the clock's rate (see "Time" in the module doc). In memory only: a
    /// load anchors it again ([`Window::anchor`]); it never changes the state a
    /// replica or an AOF replay reaches (writes replicate their time).
    ahead: u64,
    /// Oldest first, indices strictly increasing.
    gens: Vec<Generation>,
    /// Dropped generations the caller has not taken yet ([`Window::take_retired`]).
    retired: Vec<BloomChain>,
    /// The error rates sized for blocked and paired links (`window/sizing.rs`;
    /// derived, never persisted).
    shapes: sizing::SizeCache,
    /// The one sized last: a steady stream's generations ask for the same
    /// first-link error rate at every rotation.
    grown: sizing::Memo<sizing::Template>,
    /// The running write's plan (`bloom/plan.rs`): consulted only where a
    /// link is added. Not persisted.
    plan: Option<Box<ShapePlan>>,
}

/// Limits that never refuse (a window checks its own, over all generations).
const UNBOUNDED: Limits = Limits {
    max_bytes: u64::MAX,
    max_links: MAX_LINKS_CEILING,
    max_filters: u32::MAX,
};

impl Window {
    /// A windowed filter for `capacity` items per window of `window_ms`
    /// milliseconds at `error`, scaling by `expansion` (0 = non-scaling). No
    /// generation exists until the first add. Refused when a steady stream
    /// (`K + 1` generations) would not fit the limits.
    pub fn new(
        capacity: u64,
        error: f64,
        expansion: u32,
        layout: BloomLayout,
        window_ms: u64,
        limits: &Limits,
    ) -> Result<Self, BloomError> {
        if window_ms == 0 || window_ms > MAX_WINDOW_MS {
            return Err(BloomError::InvalidParams("window out of range"));
        }
        if expansion > MAX_EXPANSION {
            return Err(BloomError::InvalidParams("expansion out of range"));
        }
        if capacity == 0 {
            return Err(BloomError::InvalidParams("capacity must be positive"));
        }
        if capacity > MAX_CAPACITY {
            return Err(BloomError::InvalidParams(crate::bloom::CAPACITY_TOO_LARGE));
        }
        if !(error > 0.0 && error < 1.0) {
            return Err(BloomError::InvalidParams("error rate must be in (0, 1)"));
        }
        if layout == BloomLayout::RedisBloom {
            return Err(BloomError::InvalidParams(
                "the RedisBloom layout has no windowed filters",
            ));
        }
        let w = Window {
            window_ms,
            parts: PARTS,
            capacity,
            error,
            expansion,
            layout,
            last_ms: 0,
            ahead: 0,
            gens: Vec::new(),
            retired: Vec::new(),
            shapes: Default::default(),
            grown: Default::default(),
            plan: None,
        };
        let first = w.shape(capacity.div_ceil(u64::from(PARTS)).max(1), w.steady_error())?;
        let steady = u64::from(w.parts) + 1;
        if steady > u64::from(limits.max_links.min(MAX_LINKS_CEILING)) {
            return Err(BloomError::MaxLinks);
        }
        let need = (LINK_OVERHEAD + first.bytes())
            .checked_mul(steady)
            .and_then(|b| b.checked_add(CHAIN_OVERHEAD))
            .ok_or(BloomError::MemoryCap)?;
        if need > limits.max_bytes {
            return Err(BloomError::MemoryCap);
        }
        Ok(w)
    }

    /// The window `W` in milliseconds.
    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }
    /// Generations per window (`K`).
    pub fn parts(&self) -> u32 {
        self.parts
    }
    /// Items per window the filter is sized for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// The error rate the filter keeps at every moment.
    pub fn error(&self) -> f64 {
        self.error
    }
    /// `None` for non-scaling filters.
    pub fn expansion(&self) -> Option<u32> {
        (self.expansion != 0).then_some(self.expansion)
    }
    /// The layout of new links.
    pub fn layout(&self) -> BloomLayout {
        self.layout
    }
    /// The time of the newest change (ms since the epoch; 0 before the first).
    pub fn last_ms(&self) -> u64 {
        self.last_ms
    }

    /// The generation a write at `t` goes to.
    #[inline]
    pub fn gen_index(&self, t: u64) -> u64 {
        let w = self.window_ms.max(1);
        match t.checked_mul(u64::from(self.parts)) {
            Some(x) => x / w,
            None => {
                let n = u128::from(t) * u128::from(self.parts) / u128::from(w);
                u64::try_from(n).unwrap_or(u64::MAX)
            }
        }
    }

    /// What a read at server time `now` needs: the index of the current
    /// generation (generation `n` is live iff `n + K >= mark`, the integer form of
    /// `(n + 1 + K)·W > K·now`). Computed once per command.
    #[inline]
    pub fn read_mark(&self, now: u64) -> u64 {
        self.gen_index(self.effective(now))
    }

    /// [`contains`](Self::contains) with a [`read_mark`](Self::read_mark).
    #[inline]
    pub fn contains_marked(&self, h: &ItemHash, mark: u64) -> bool {
        let k = u64::from(self.parts);
        let mut masks = PairMasks::new(h.hi);
        self.gens
            .iter()
            .rev()
            .take_while(|g| g.index.saturating_add(k) >= mark)
            .any(|g| g.chain.two_step_contains_masked(h, &mut masks))
    }

    /// Whether generation `index` still answers at `now`.
    #[inline]
    fn is_live(&self, index: u64, now: u64) -> bool {
        let k = u128::from(self.parts);
        (u128::from(index) + 1 + k) * u128::from(self.window_ms) > k * u128::from(now)
    }

    /// Whether generation `index` answers at `now` (BF.DEBUG).
    pub fn is_live_at(&self, index: u64, now: u64) -> bool {
        self.is_live(index, now)
    }

    /// The filter's time at server time `now` (reads): the clock plus how far
    /// the filter runs ahead of it, and never before the newest change.
    #[inline]
    pub fn effective(&self, now: u64) -> u64 {
        now.saturating_add(self.ahead).max(self.last_ms)
    }

    /// The filter's time for a write at server time `now` (the local clock):
    /// [`effective`](Self::effective), and when the clock (plus the lead) is
    /// behind the newest change, the newest change itself, from which the
    /// filter's time then goes on at the clock's rate (the lead is set to
    /// `last_ms - now`). So a clock step back of any size never stops the
    /// rotation: a write lands in the generation it would have without the
    /// step, as time passes after it.
    pub fn write_time(&mut self, now: u64) -> u64 {
        let t = now.saturating_add(self.ahead);
        if t >= self.last_ms {
            return t;
        }
        self.ahead = self.last_ms - now;
        self.last_ms
    }

    /// Anchors the filter's time to server time `now`: when the newest change
    /// is ahead of the clock, the filter's time goes on from it at the clock's
    /// rate (after a load, and after every write the primary timed, so a
    /// promoted replica goes on from the last replicated time). Never moves
    /// the filter's time back nor changes what it holds.
    pub fn anchor(&mut self, now: u64) {
        self.ahead = self.last_ms.saturating_sub(now);
    }

    /// How far the filter's time runs ahead of the server clock (ms).
    pub fn ahead_ms(&self) -> u64 {
        self.ahead
    }

    /// True when a live generation (by `now`) holds all of the item's bits.
    /// Reads never change anything: generations too old by `now` are skipped.
    #[inline]
    pub fn contains(&self, h: &ItemHash, now: u64) -> bool {
        self.contains_marked(h, self.read_mark(now))
    }

    /// [`contains_marked`](Self::contains_marked) for a batch: sets bit `i` of
    /// `found` (which the caller zeroed, one bit per item) for each item
    /// `hashes[i]` a generation live at `mark` holds, generation by generation
    /// (see [`add_batch`](Self::add_batch)).
    pub fn contains_batch(&self, hashes: &[ItemHash], mark: u64, found: &mut [u64]) {
        let k = u64::from(self.parts);
        let mut passed: Vec<u32> = Vec::new();
        // Without room for the list, paired links answer in one pass.
        let _ = passed.try_reserve_exact(hashes.len());
        for g in self
            .gens
            .iter()
            .rev()
            .take_while(|g| g.index.saturating_add(k) >= mark)
        {
            g.chain.mark_contained(hashes, found, &mut passed);
        }
    }

    /// Prefetches the cache lines a lookup of `h` reads first.
    #[inline]
    pub fn prefetch(&self, h: &ItemHash) {
        for g in &self.gens {
            g.chain.prefetch_head(h);
        }
    }

    /// Drops the generations that are no longer live at the filter's time
    /// `now` (taken as the newest change if earlier; O(1) each; their memory
    /// waits in [`Window::take_retired`]). True if any was dropped.
    pub fn advance(&mut self, now: u64) -> bool {
        let now = now.max(self.last_ms);
        let mark = self.gen_index(now);
        if self
            .gens
            .first()
            .is_none_or(|g| g.index.saturating_add(u64::from(self.parts)) >= mark)
        {
            return false;
        }
        let dead = self
            .gens
            .iter()
            .take_while(|g| !self.is_live(g.index, now))
            .count();
        if dead == 0 {
            return false;
        }
        if self.retired.try_reserve(dead).is_ok() {
            self.retired
                .extend(self.gens.drain(..dead).map(|g| g.chain));
        } else {
            self.gens.drain(..dead);
        }
        self.last_ms = now;
        true
    }

    /// The generations dropped since the last call (the caller frees them).
    pub fn take_retired(&mut self) -> Vec<BloomChain> {
        std::mem::take(&mut self.retired)
    }

    /// Adds an item at the filter's time `now` (a [`write_time`] or the
    /// primary's `AT`; the newest change if earlier), after dropping what is
    /// no longer live.
    ///
    /// [`write_time`]: Self::write_time
    /// On error the filter is unchanged except for that drop.
    pub fn add(&mut self, h: &ItemHash, now: u64, limits: &Limits) -> Result<Added, BloomError> {
        self.advance(now);
        let now = now.max(self.last_ms);
        let cur = self.gen_index(now);
        self.add_at(h, now, cur, limits, |w, masks| {
            w.gens
                .iter()
                .rev()
                .filter(|g| g.index < cur)
                .any(|g| g.chain.two_step_contains_masked(h, masks))
        })
    }

    /// Adds items in order at the filter's time `now`: the same answers, the same
    /// state and the same errors as an [`add`](Self::add) per item, passed to
    /// `each` in order (which returns false to stop). Faster for a batch: the
    /// generations older than the current one, which a write at `now` never
    /// changes, are asked for all items first, generation by generation
    /// ([`BloomChain::mark_contained`]); then each item is looked up in, and
    /// added to, the current generation, in order (a batch may repeat items).
    pub fn add_batch(
        &mut self,
        hashes: &[ItemHash],
        now: u64,
        limits: &Limits,
        mut each: impl FnMut(Result<Added, BloomError>) -> bool,
    ) {
        self.advance(now);
        let now = now.max(self.last_ms);
        let cur = self.gen_index(now);
        let mut seen: Vec<u64> = Vec::new();
        let mut passed: Vec<u32> = Vec::new();
        if seen.try_reserve_exact(hashes.len().div_ceil(64)).is_err()
            || passed.try_reserve_exact(hashes.len()).is_err()
        {
            for h in hashes {
                if !each(self.add(h, now, limits)) {
                    return;
                }
            }
            return;
        }
        seen.resize(hashes.len().div_ceil(64), 0);
        for g in self.gens.iter().rev().filter(|g| g.index < cur) {
            g.chain.mark_contained(hashes, &mut seen, &mut passed);
        }
        for (i, h) in hashes.iter().enumerate() {
            if let (Some(next), Some(g)) = (hashes.get(i + BATCH_AHEAD), self.gens.last()) {
                if g.index == cur {
                    g.chain.prefetch(next);
                }
            }
            let old = seen.get(i / 64).is_some_and(|w| (w >> (i % 64)) & 1 == 1);
            if !each(self.add_at(h, now, cur, limits, |_, _| old)) {
                return;
            }
        }
    }

    /// An add at `now` (effective, generation `cur`, after [`advance`]):
    /// `Present` if the current generation holds the item, else the item goes
    /// into the current generation (created or grown as needed), `Refreshed` if
    /// `older` (asked only then) says an older generation holds it.
    ///
    /// [`advance`]: Self::advance
    fn add_at(
        &mut self,
        h: &ItemHash,
        now: u64,
        cur: u64,
        limits: &Limits,
        older: impl FnOnce(&Self, &mut PairMasks) -> bool,
    ) -> Result<Added, BloomError> {
        let newest_current = self.gens.last().is_some_and(|g| g.index == cur);
        let mut masks = PairMasks::new(h.hi);
        if newest_current
            && self
                .gens
                .last()
                .is_some_and(|g| g.chain.two_step_contains_masked(h, &mut masks))
        {
            return Ok(Added::Present);
        }
        let seen = older(self, &mut masks);
        if !newest_current {
            let shape = self.planned(|w| w.first_link(cur))?;
            self.check_room(&shape, limits)?;
            let mut chain = BloomChain::empty(self.expansion.max(1));
            chain.push_owned_link(shape)?;
            self.gens
                .try_reserve(1)
                .map_err(|_| BloomError::AllocFailed)?;
            self.gens.push(Generation { index: cur, chain });
            self.note_added(shape);
        } else {
            let grow = match self.gens.last().and_then(|g| g.chain.links().last()) {
                Some(last) if last.is_full() => Some((*last.shape(), self.gen_links())),
                Some(_) => None,
                None => return Err(BloomError::InvalidParams("generation has no links")),
            };
            if let Some((last, n)) = grow {
                if self.expansion == 0 && n >= 2 {
                    return Err(BloomError::Full);
                }
                let items = self.gens.last().map_or(0, |g| g.chain.items());
                let shape = self.planned(|w| w.next_link(cur, now, &last, n, items))?;
                self.check_room(&shape, limits)?;
                if let Some(g) = self.gens.last_mut() {
                    g.chain.push_owned_link(shape)?;
                }
                self.note_added(shape);
            }
        }
        match self.gens.last_mut() {
            Some(g) => g.chain.insert_last(h, &mut masks)?,
            None => return Err(BloomError::InvalidParams("no generation")),
        }
        self.last_ms = now;
        Ok(if seen { Added::Refreshed } else { Added::New })
    }

    /// Gives the next writes a plan (`bloom/plan.rs`); the caller takes it
    /// back with [`take_plan`](Self::take_plan) once the write is done.
    pub fn set_plan(&mut self, plan: ShapePlan) {
        self.plan = Some(Box::new(plan));
    }

    /// Takes back the plan [`set_plan`](Self::set_plan) gave.
    pub fn take_plan(&mut self) -> Option<ShapePlan> {
        self.plan.take().map(|b| *b)
    }

    /// A new link's shape: the plan's next given one when it has the
    /// filter's layout family (checked as a loaded generation's link), else
    /// `compute`'s (the sizing rules).
    fn planned(
        &mut self,
        compute: impl FnOnce(&Self) -> Result<LinkShape, BloomError>,
    ) -> Result<LinkShape, BloomError> {
        let Some(mut plan) = self.plan.take() else {
            return compute(self).map(crate::bloom::variant);
        };
        let layout = self.layout;
        let r = plan.next_shape(
            |s| crate::bloom::same_family(s.layout, layout),
            || compute(self).map(crate::bloom::variant),
        );
        self.plan = Some(plan);
        r
    }

    /// Records a link about to be added (after its room was checked).
    fn note_added(&mut self, shape: LinkShape) {
        if let Some(plan) = self.plan.as_mut() {
            plan.note_added(shape);
        }
    }

    /// Links of the newest generation.
    fn gen_links(&self) -> usize {
        self.gens.last().map_or(0, |g| g.chain.links().len())
    }

    /// Refuses a new link that would pass the limits (over all generations).
    fn check_room(&self, shape: &LinkShape, limits: &Limits) -> Result<(), BloomError> {
        if self.link_count() as u64 >= u64::from(limits.max_links.min(MAX_LINKS_CEILING)) {
            return Err(BloomError::MaxLinks);
        }
        let after = self
            .mem_usage()
            .checked_add(LINK_OVERHEAD + shape.bytes())
            .ok_or(BloomError::MemoryCap)?;
        if after > limits.max_bytes {
            return Err(BloomError::MemoryCap);
        }
        Ok(())
    }

    /// Items added to the generations held (live or not yet dropped).
    pub fn items(&self) -> u64 {
        self.gens
            .iter()
            .fold(0u64, |a, g| a.saturating_add(g.chain.items()))
    }

    /// Items added to the generations live at `now` (BF.CARD, BF.INFO).
    pub fn items_at(&self, now: u64) -> u64 {
        let now = self.effective(now);
        self.gens
            .iter()
            .filter(|g| self.is_live(g.index, now))
            .fold(0u64, |a, g| a.saturating_add(g.chain.items()))
    }

    /// Links over all generations held.
    pub fn link_count(&self) -> usize {
        self.gens.iter().map(|g| g.chain.links().len()).sum()
    }

    /// RedisBloom's formula over every generation: `32 + 64·links + bytes`.
    pub fn mem_usage(&self) -> u64 {
        self.gens
            .iter()
            .fold(CHAIN_OVERHEAD, |a, g| a.saturating_add(g.chain.links_mem()))
    }

    /// The generations, oldest first, as `(index, chain)` (BF.DEBUG).
    pub fn generation_list(&self) -> impl Iterator<Item = (u64, &BloomChain)> + '_ {
        self.gens.iter().map(|g| (g.index, &g.chain))
    }

    /// Every heap block the window owns besides itself (see
    /// `BloomChain::heap_blocks`).
    pub fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        if self.gens.capacity() > 0 {
            f(
                self.gens.as_ptr() as *const u8,
                self.gens.capacity() * std::mem::size_of::<Generation>(),
                std::mem::align_of::<Generation>(),
            );
        }
        for g in &self.gens {
            g.chain.heap_blocks(f);
        }
    }

    /// Block numbers [`relocate_blocks`](Self::relocate_blocks) takes.
    pub fn block_count(&self) -> u64 {
        let chains = self.gens.iter().map(|g| &g.chain).chain(&self.retired);
        3 + chains.map(BloomChain::block_count).sum::<u64>()
    }

    /// Offers every heap block to a relocation pass: the generation list and
    /// each generation's chain, the dropped generations not yet taken, and
    /// the sizing cache (see `crate::relocate`).
    pub fn relocate_blocks(&mut self, pass: &mut Pass) {
        pass.vec(&mut self.gens);
        pass.items(
            &mut self.gens,
            |g| g.chain.block_count(),
            |p, g| g.chain.relocate_blocks(p),
        );
        pass.vec(&mut self.retired);
        pass.items(&mut self.retired, BloomChain::block_count, |p, c| {
            c.relocate_blocks(p)
        });
        self.shapes.relocate_blocks(pass);
    }

    /// A fallible deep copy (COPY).
    pub fn try_clone(&self) -> Result<Self, BloomError> {
        let mut gens = Vec::new();
        gens.try_reserve_exact(self.gens.len())
            .map_err(|_| BloomError::AllocFailed)?;
        for g in &self.gens {
            gens.push(Generation {
                index: g.index,
                chain: g.chain.try_clone()?,
            });
        }
        Ok(Window {
            window_ms: self.window_ms,
            parts: self.parts,
            capacity: self.capacity,
            error: self.error,
            expansion: self.expansion,
            layout: self.layout,
            last_ms: self.last_ms,
            ahead: self.ahead,
            gens,
            retired: Vec::new(),
            shapes: Default::default(),
            grown: Default::default(),
            plan: None,
        })
    }

    /// How a windowed filter hashes items (XXH3-128, no seed).
    pub fn scheme(&self) -> HashScheme {
        HashScheme::Xxh3
    }

    /// The item's hash under this filter's scheme.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.scheme().bloom(item)
    }
}

mod encoding;
mod forecast;
pub use encoding::{split_walk_iter, walk_iter, WALK_FLAG, WALK_GENERATIONS};
mod sizing;
#[cfg(test)]
mod tests;
