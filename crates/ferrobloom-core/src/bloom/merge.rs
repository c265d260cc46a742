//! The union of Bloom filters (BF.MERGE): compatibility, the OR of links, and
//! the item counts of merged links.
//!
//! # Compatibility
//! Filters merge when they hash alike ([`hash_alike`]), share their whole-filter
//! parameters (expansion; for RedisBloom chains, RedisBloom's option bits) and,
//! link by link where two of them both have the link, the link's shape: layout,
//! bit count, hash count, byte length and modulus, capacity and error rate.
//! Filters created with the same parameters always merge, however far each has
//! grown; a short chain is compared with the links it has. The inputs are
//! checked in order against the shapes of all the inputs before them (the
//! longest chain so far), so three filters merge only when every pair does.
//! Only chains merge: `BloomFilter` (`filter.rs`) refuses the other kinds.
//!
//! # The result
//! Link `i` of the result is the bitwise OR of link `i` of every input that has
//! one, and the extra links of the longest chain are copied as they are. Every
//! item of every input is therefore a member of the result (no false
//! negatives), and a lookup costs what it costs on the longest input.
//!
//! # Item counts of merged links
//! A link that only one input has keeps its count. A link that two or more
//! inputs OR together gets a count estimated from its set bits, since a sum
//! would count twice every item that several inputs hold:
//! - classic and RedisBloom layouts (`k` probes anywhere among `m` bits):
//!   `n ≈ ln(1 - X/m) / (k · ln(1 - 1/m))`, which is `-(m/k)·ln(1 - X/m)` to within
//!   `1/m`, for `X` set bits (a link with every bit set has no estimate: it
//!   counts the sum of its inputs' counts, capped unless overfill was accepted);
//! - blocked layout (all `k` probes in one 512-bit block): the fill is not
//!   uniform (blocks hold Poisson-many items) and the fill of a block is
//!   concave in its items, so the formula above applied to the whole link
//!   underestimates (Jensen's inequality): by 0.4-0.6% at 7-99% of the link's
//!   capacity, measured. Each block is estimated on its own instead,
//!   `n_b ≈ ln(1 - X_b/512) / (k · ln(1 - 1/512))`, and the blocks summed (a full
//!   block counts as 511.5 set bits): within 0.11% on the same data, as close as
//!   the classic estimate (`merge_count_estimate_within_two_percent` prints both).
//!   A paired link (`ceil(k/2)` probes in one block, the rest in another) is
//!   estimated the same way: its blocks too hold Poisson-many probe groups.
//!
//! The estimate is rounded and kept between the largest input count (the union
//! holds at least that many items) and the sum of the input counts; with
//! [`Overfill::Refuse`] (the default) and [`Overfill::Capped`] also at most the
//! link's capacity (a merged link that reaches its capacity is full, so the next
//! new item starts a new link, as after any fill).
//!
//! # Overfilled unions
//! A link holds its capacity at its error rate; a union with more distinct
//! items in one link breaks the rate (two non-scaling filters of 100,000 at 1%
//! holding 90,000 items each: 0.11). Before anything changes, every result link
//! that two or more inputs share and whose input counts add up to more than its
//! capacity is estimated in a read-only pass (the OR of 4 KiB tiles in a buffer,
//! counted as below; links that cannot overfill are counted during the OR, so
//! a merge into a destination sized for the union costs what it did). A link
//! whose estimate exceeds its capacity by more than the estimator's noise,
//! `entries + 4·sd + 1` with `sd = sqrt(m·q·(1 - (1 + λ)·q)) / (k·q)` at
//! `λ = k·entries/m`, `q = e^-λ` (the standard deviation of the estimate of a
//! link holding exactly its capacity: 0.1% at 100,000 items at 1%, 10% at 100),
//! makes the merge fail with [`MergeError::Overfilled`] under
//! [`Overfill::Refuse`]. [`Overfill::Accept`] (`BF.MERGE … OVERFILL`) takes it
//! and reports the estimate, never capped: such a link's rate is about
//! `(1 - e^(-k·n/m))^k` for `n` items (docs/compatibility.md).
//! [`Overfill::Capped`] takes it with counts capped at the capacities, as
//! releases before the check did: for replaying a merge a primary accepted.
//!
//! # Cost and atomicity
//! [`MergePlan`] says, before anything is allocated, how many links and bytes
//! the result has and how many bytes the merge touches (the bit arrays of every
//! source plus those of the result); the caller bounds it. Every allocation and
//! every check happens before the destination changes; the OR itself cannot
//! fail. The OR runs over 4 KiB tiles: each source's tile is OR-ed into the
//! destination's while it is in L1, then the tile's 64-byte lines are counted.

use super::*;

/// Whether two filters hash alike: an item sets and probes the same bit
/// positions in two links of the same shape. The one place that says so (a
/// per-filter seed, once filters have one, belongs here too).
pub fn hash_alike(a: &BloomChain, b: &BloomChain) -> bool {
    a.same_hashing(b)
}

/// Why a merge was refused. `input` is the index of the refused source in the
/// slice given, `None` for the destination.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeError {
    /// The filter is of a kind no merge takes (`why` says which).
    Unmergeable {
        /// The refused source's index in the slice given; `None`: the destination.
        input: Option<usize>,
        /// The kind of filter, as the error reply names it.
        why: &'static str,
    },
    /// The filter differs from the inputs before it in `what` (of link `link`,
    /// 0-based, when it is a link's property).
    Incompatible {
        /// The refused source's index in the slice given; `None`: the destination.
        input: Option<usize>,
        /// The property that differs (`"hash scheme"`, `"layout"`, `"bit count"`, ...).
        what: &'static str,
        /// The link that differs (0-based); `None` for a property of the chain.
        link: Option<usize>,
    },
    /// A bound or the allocator refused the result (`MemoryCap`, `MaxLinks`,
    /// `AllocFailed`, `InvalidParams`).
    Bloom(BloomError),
    /// The union would hold more items in link `link` than the link's
    /// capacity at its error rate ([`Overfill::Refuse`], module doc).
    Overfilled {
        /// The overfilled link of the result (0-based).
        link: usize,
        /// Its estimated distinct items.
        estimate: u64,
        /// Its capacity.
        capacity: u64,
    },
}

/// What a merge does with a union that a link of the result cannot hold at its
/// error rate (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Overfill {
    /// Refuse the merge ([`MergeError::Overfilled`]), changing nothing.
    #[default]
    Refuse,
    /// Take it; merged links count their estimate, never capped at their
    /// capacity (`BF.MERGE … OVERFILL`).
    Accept,
    /// Take it with counts capped at the capacities (releases before the check;
    /// for replaying such a merge on a replica or from the AOF).
    Capped,
}

impl From<BloomError> for MergeError {
    fn from(e: BloomError) -> Self {
        MergeError::Bloom(e)
    }
}

/// What a merge produces and costs, known before it allocates anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergePlan {
    /// Links of the result.
    pub links: usize,
    /// BF.INFO `Size` of the result (the quantity the memory cap bounds).
    pub size: u64,
    /// Bytes the merge reads or writes: the bit arrays of every source plus
    /// those of the result (the destination's are read and written in place).
    pub touched: u64,
}

/// The properties of one link that must agree, in the order they are reported.
fn link_difference(a: &LinkShape, b: &LinkShape) -> Option<&'static str> {
    let checks: [(bool, &'static str); 7] = [
        (a.layout == b.layout, "layout"),
        (a.bits == b.bits, "bit count"),
        (a.hashes == b.hashes, "hash count"),
        (a.storage == b.storage && a.n2 == b.n2, "byte length"),
        (a.entries == b.entries, "capacity"),
        (a.error.to_bits() == b.error.to_bits(), "error rate"),
        (a.bpe.to_bits() == b.bpe.to_bits(), "bits per item"),
    ];
    checks.iter().find(|(same, _)| !same).map(|(_, what)| *what)
}

/// The whole-filter properties that must agree, in the order they are reported.
fn chain_difference(a: &BloomChain, b: &BloomChain) -> Option<&'static str> {
    let checks: [(bool, &'static str); 4] = [
        (hash_alike(a, b), "hash scheme"),
        (a.expansion == b.expansion, "expansion"),
        (a.opts.tightening == b.opts.tightening, "tightening"),
        (
            a.rb.map(|r| (r.options, r.growth)) == b.rb.map(|r| (r.options, r.growth)),
            "RedisBloom options",
        ),
    ];
    checks.iter().find(|(same, _)| !same).map(|(_, what)| *what)
}

impl BloomChain {
    /// Checks that the sources (and the destination, when it exists) merge, and
    /// what the result will be. Nothing is allocated beyond a list of shapes.
    pub fn merge_plan(
        dest: Option<&BloomChain>,
        sources: &[&BloomChain],
    ) -> Result<MergePlan, MergeError> {
        let inputs = sources
            .iter()
            .enumerate()
            .map(|(i, c)| (Some(i), *c))
            .chain(dest.map(|d| (None, d)));
        let mut reference: Option<&BloomChain> = None;
        // The shapes of the longest chain so far: link i of the result.
        let mut shapes: Vec<LinkShape> = Vec::new();
        for (input, c) in inputs {
            if c.links.is_empty() {
                return Err(BloomError::InvalidParams("filter has no links").into());
            }
            let first = *reference.get_or_insert(c);
            if let Some(what) = chain_difference(first, c) {
                return Err(MergeError::Incompatible {
                    input,
                    what,
                    link: None,
                });
            }
            for (i, l) in c.links.iter().enumerate() {
                match shapes.get(i) {
                    Some(s) => {
                        if let Some(what) = link_difference(s, &l.shape) {
                            return Err(MergeError::Incompatible {
                                input,
                                what,
                                link: Some(i),
                            });
                        }
                    }
                    None => {
                        shapes.try_reserve(1).map_err(|_| BloomError::AllocFailed)?;
                        shapes.push(l.shape);
                    }
                }
            }
        }
        let size = shapes.iter().fold(CHAIN_OVERHEAD, |acc, s| {
            acc.saturating_add(LINK_OVERHEAD + s.bytes())
        });
        let data = |c: &BloomChain| {
            c.links
                .iter()
                .fold(0u64, |acc, l| acc.saturating_add(l.shape.bytes()))
        };
        let result_data = shapes
            .iter()
            .fold(0u64, |acc, s| acc.saturating_add(s.bytes()));
        let touched = sources
            .iter()
            .fold(result_data, |acc, c| acc.saturating_add(data(c)));
        Ok(MergePlan {
            links: shapes.len(),
            size,
            touched,
        })
    }

    /// A new filter holding the union of `sources` (its parameters are the
    /// first source's); an overfilled union is refused ([`Overfill::Refuse`]).
    /// On error nothing was created.
    pub fn merged(sources: &[&BloomChain], limits: &Limits) -> Result<BloomChain, MergeError> {
        Self::merged_with(sources, limits, Overfill::Refuse)
    }

    /// [`merged`](Self::merged) with a choice for overfilled unions.
    pub fn merged_with(
        sources: &[&BloomChain],
        limits: &Limits,
        overfill: Overfill,
    ) -> Result<BloomChain, MergeError> {
        let first = sources
            .first()
            .ok_or(BloomError::InvalidParams("nothing to merge"))?;
        let mut out = BloomChain {
            links: Vec::new(),
            items: 0,
            expansion: first.expansion,
            rb: first.rb,
            opts: first.opts,
            pending_shape: None,
            plan: None,
        };
        out.merge_in(false, sources, limits, overfill)?;
        Ok(out)
    }

    /// ORs `sources` into this filter (module doc); an overfilled union is
    /// refused ([`Overfill::Refuse`]). None of them may be this filter itself
    /// (merging a filter into itself changes nothing: leave it out). On error
    /// the filter is unchanged.
    pub fn merge_from(
        &mut self,
        sources: &[&BloomChain],
        limits: &Limits,
    ) -> Result<(), MergeError> {
        self.merge_in(true, sources, limits, Overfill::Refuse)
    }

    /// [`merge_from`](Self::merge_from) with a choice for overfilled unions.
    pub fn merge_from_with(
        &mut self,
        sources: &[&BloomChain],
        limits: &Limits,
        overfill: Overfill,
    ) -> Result<(), MergeError> {
        self.merge_in(true, sources, limits, overfill)
    }

    fn merge_in(
        &mut self,
        existing: bool,
        sources: &[&BloomChain],
        limits: &Limits,
        overfill: Overfill,
    ) -> Result<(), MergeError> {
        let plan = Self::merge_plan(existing.then_some(&*self), sources)?;
        let have = self.links.len();
        // Bounds: the result may not grow past them (a filter that is already
        // above a since-lowered bound may still take bits that fit).
        if plan.size > limits.max_bytes && plan.size > self.mem_usage() {
            return Err(BloomError::MemoryCap.into());
        }
        let max_links = limits.max_links.min(MAX_LINKS_CEILING) as usize;
        if plan.links > max_links && plan.links > have {
            return Err(BloomError::MaxLinks.into());
        }
        // Phase 1, fallible: the links the destination lacks, complete, and
        // room for everything phase 2 needs.
        let mut extra: Vec<Link> = Vec::new();
        extra
            .try_reserve_exact(plan.links.saturating_sub(have))
            .map_err(|_| BloomError::AllocFailed)?;
        self.links
            .try_reserve_exact(plan.links.saturating_sub(have))
            .map_err(|_| BloomError::AllocFailed)?;
        let mut at: Vec<&Link> = Vec::new();
        at.try_reserve_exact(sources.len())
            .map_err(|_| BloomError::AllocFailed)?;
        // Phase 0, read-only: the counts of the links that may overfill, and
        // the refusal of an overfilled union (module doc).
        let mut counts: Vec<Option<u64>> = Vec::new();
        counts
            .try_reserve_exact(plan.links)
            .map_err(|_| BloomError::AllocFailed)?;
        for i in 0..plan.links {
            links_at(&mut at, sources, i);
            let own = self.links.get(i);
            let Some(shape) = own.or(at.first().copied()).map(|l| l.shape) else {
                return Err(BloomError::InvalidParams("a result link has no input").into());
            };
            let inputs = at.len() + usize::from(own.is_some());
            let (largest, sum) = count_bounds(&at, own);
            if inputs < 2 || sum <= shape.entries {
                counts.push(None);
                continue;
            }
            let est = estimate_items(&shape, &union_histogram(&at, own));
            if overfill == Overfill::Refuse && overfilled(&shape, est) {
                return Err(MergeError::Overfilled {
                    link: i,
                    estimate: if est.is_finite() {
                        est.round() as u64
                    } else {
                        sum
                    },
                    capacity: shape.entries,
                });
            }
            counts.push(Some(merged_count(&shape, est, largest, sum, overfill)));
        }
        for i in have..plan.links {
            links_at(&mut at, sources, i);
            let link = match at.as_slice() {
                [] => return Err(BloomError::InvalidParams("a result link has no input").into()),
                [only] => only.try_clone()?,
                [first, ..] => {
                    let mut link = Link::new(first.shape)?;
                    let count = counts.get(i).copied().flatten();
                    or_into(&mut link, &at, Fresh::Yes, count, overfill);
                    link
                }
            };
            extra.push(link);
        }
        // Phase 2, infallible (`at` has room for every source): OR into the
        // destination's own links.
        for (i, link) in self.links.iter_mut().enumerate() {
            links_at(&mut at, sources, i);
            if !at.is_empty() {
                let count = counts.get(i).copied().flatten();
                or_into(link, &at, Fresh::No, count, overfill);
            }
        }
        self.links.append(&mut extra);
        self.items = self
            .links
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.items));
        Ok(())
    }
}

/// Link `i` of every source that has one, into `out` (whose capacity holds
/// every source, so this never allocates).
fn links_at<'a>(out: &mut Vec<&'a Link>, sources: &[&'a BloomChain], i: usize) {
    out.clear();
    out.extend(sources.iter().filter_map(|c| c.links.get(i)));
}

/// The largest and the sum of the counts of a result link's inputs (`own`:
/// the destination's link, when it has one).
fn count_bounds(inputs: &[&Link], own: Option<&Link>) -> (u64, u64) {
    inputs
        .iter()
        .copied()
        .chain(own)
        .fold((0u64, 0u64), |(l, s), x| {
            (l.max(x.items), s.saturating_add(x.items))
        })
}

/// The histogram of set bits per 512-bit block of the OR of `inputs` and
/// `own`, without writing anything (phase 0 of a merge).
fn union_histogram(inputs: &[&Link], own: Option<&Link>) -> [u64; BLOCK_WORDS * 64 + 1] {
    let mut hist = [0u64; BLOCK_WORDS * 64 + 1];
    let mut tile = [0u64; TILE_WORDS];
    let len = own
        .or(inputs.first().copied())
        .map_or(0, |l| l.words.words().len());
    let mut start = 0;
    while start < len {
        let end = (start + TILE_WORDS).min(len);
        let Some(t) = tile.get_mut(..end - start) else {
            break;
        };
        t.fill(0);
        for l in inputs.iter().copied().chain(own) {
            if let Some(s) = l.words.words().get(start..end) {
                for (d, w) in t.iter_mut().zip(s) {
                    *d |= *w;
                }
            }
        }
        count_blocks(t, &mut hist);
        start = end;
    }
    hist
}

/// Whether an estimate of `est` items exceeds what a link of `shape` holds at
/// its error rate by more than the estimator's noise (module doc).
pub(super) fn overfilled(shape: &LinkShape, est: f64) -> bool {
    let n = shape.entries as f64;
    let m = shape.modulus().max(1) as f64;
    let k = f64::from(shape.hashes.max(1));
    let q = (-k * n / m).exp();
    let var = m * q * (1.0 - (1.0 + k * n / m) * q);
    let sd = var.max(0.0).sqrt() / (k * q).max(f64::MIN_POSITIVE);
    est.is_nan() || est > n + 4.0 * sd + 1.0
}

/// A merged link's count from its estimate (module doc): at least the largest
/// input count, at most their sum and, unless overfill was accepted, the
/// link's capacity.
fn merged_count(shape: &LinkShape, est: f64, largest: u64, sum: u64, overfill: Overfill) -> u64 {
    let hi = match overfill {
        Overfill::Accept => sum,
        Overfill::Refuse | Overfill::Capped => sum.min(shape.entries),
    };
    let lo = largest.min(hi);
    if est.is_finite() && est >= 0.0 {
        (est.round() as u64).clamp(lo, hi)
    } else {
        hi
    }
}

/// Words per tile of the OR loop (4 KiB: the destination's tile stays in L1
/// while every source's tile is OR-ed into it).
const TILE_WORDS: usize = 512;
/// Words per 512-bit block.
const BLOCK_WORDS: usize = (LINE_BITS / 64) as usize;

/// Whether the destination link was just allocated (all zero).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fresh {
    Yes,
    No,
}

/// ORs the inputs' bits into `dst` (of the same shape) and sets its item count:
/// `count` when phase 0 computed it, else from the result's set bits, bounded
/// by the inputs' counts (module doc). `dst`'s own count is one of the inputs
/// when it already holds bits.
///
/// A fresh `dst` gets the first input's tile copied instead of OR-ed: its pages
/// are then written before they are ever read. Reading a page of a fresh
/// (lazily zeroed) allocation first maps the shared zero page, and the write
/// that follows faults a second time to replace it: that doubled the time of a
/// merge into a new key (`perf`: `do_wp_page` under `or_into`). Its pages are
/// also populated in one call first ([`Words::populate`](crate::bits::Words::populate)),
/// instead of one page fault per 4 KiB.
fn or_into(dst: &mut Link, inputs: &[&Link], fresh: Fresh, count: Option<u64>, overfill: Overfill) {
    let mut hist = [0u64; BLOCK_WORDS * 64 + 1];
    {
        if fresh == Fresh::Yes {
            dst.words.populate();
        }
        let words = dst.words.words_mut();
        let mut start = 0;
        while start < words.len() {
            let end = (start + TILE_WORDS).min(words.len());
            let Some(tile) = words.get_mut(start..end) else {
                break;
            };
            for (n, l) in inputs.iter().enumerate() {
                if let Some(s) = l.words.words().get(start..end) {
                    if n == 0 && fresh == Fresh::Yes && s.len() == tile.len() {
                        tile.copy_from_slice(s);
                    } else {
                        for (d, w) in tile.iter_mut().zip(s) {
                            *d |= *w;
                        }
                    }
                }
            }
            if count.is_none() {
                count_blocks(tile, &mut hist);
            }
            start = end;
        }
    }
    dst.items = match count {
        Some(c) => c,
        None => {
            let (largest, sum) = count_bounds(inputs, Some(&*dst));
            let est = estimate_items(&dst.shape, &hist);
            merged_count(&dst.shape, est, largest, sum, overfill)
        }
    };
}

/// Adds each 512-bit block of `tile` to the histogram of set bits per block.
#[inline(always)]
fn count_blocks_portable(tile: &[u64], hist: &mut [u64]) {
    for block in tile.chunks(BLOCK_WORDS) {
        let ones = block.iter().map(|w| w.count_ones()).sum::<u32>() as usize;
        if let Some(h) = hist.get_mut(ones) {
            *h += 1;
        }
    }
}

/// [`count_blocks_portable`] compiled for the `popcnt` instruction (the build
/// targets baseline x86-64, where `count_ones` is a dozen SSE2 instructions:
/// a quarter of the OR loop's time in `perf annotate`).
///
/// # Safety
/// Only on a CPU with `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_blocks_popcnt(tile: &[u64], hist: &mut [u64]) {
    count_blocks_portable(tile, hist)
}

fn count_blocks(tile: &[u64], hist: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has popcnt (checked just above; std caches the check).
        return unsafe { count_blocks_popcnt(tile, hist) };
    }
    count_blocks_portable(tile, hist)
}

/// Estimated distinct items of a link from the histogram of set bits per
/// 512-bit block (module doc). Deterministic: the same bits give the same value.
fn estimate_items(shape: &LinkShape, hist: &[u64]) -> f64 {
    let k = f64::from(shape.hashes.max(1));
    match shape.layout {
        // Per block, as the probes of a paired link are in-block probes too.
        BloomLayout::Blocked | BloomLayout::Paired => {
            let b = LINE_BITS as f64;
            let per_item = (-1.0 / b).ln_1p();
            let mut n = 0.0;
            for (x, &c) in hist.iter().enumerate().skip(1) {
                if c > 0 {
                    let x = (x as f64).min(b - 0.5);
                    n += c as f64 * (-x / b).ln_1p() / per_item;
                }
            }
            n / k
        }
        BloomLayout::Classic | BloomLayout::ClassicDouble | BloomLayout::RedisBloom => {
            let m = shape.modulus().max(1) as f64;
            let x = hist
                .iter()
                .enumerate()
                .fold(0f64, |acc, (ones, &c)| acc + ones as f64 * c as f64);
            if x >= m - 0.5 {
                // Every bit set: the bits say no more than "at least this
                // many"; the caller takes the sum of the inputs' counts.
                return f64::INFINITY;
            }
            (-x / m).ln_1p() / (k * (-1.0 / m).ln_1p())
        }
    }
}

/// The false-positive rate a link's fill predicts: `(X/m)^k` for classic
/// links, the average over blocks of `(X_b/512)^k` for blocked ones. For
/// tests and the documentation's predictions.
#[cfg(test)]
pub(super) fn predicted_fpr(link: &Link) -> f64 {
    let k = link.shape.hashes as i32;
    let words = link.words.words();
    match link.shape.layout {
        BloomLayout::Blocked => {
            let blocks = words.len() / BLOCK_WORDS;
            let sum: f64 = words
                .chunks(BLOCK_WORDS)
                .map(|b| (b.iter().map(|w| w.count_ones()).sum::<u32>() as f64 / 512.0).powi(k))
                .sum();
            sum / blocks.max(1) as f64
        }
        _ => {
            let ones: u64 = words.iter().map(|w| u64::from(w.count_ones())).sum();
            (ones as f64 / link.shape.modulus() as f64).powi(k)
        }
    }
}
