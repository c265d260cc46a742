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
//!   `1/m`, for `X` set bits;
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
//! holds at least that many items) and the smaller of the sum of the input
//! counts and the link's capacity (the header requires `items <= entries`; a
//! merged link that reaches its capacity is full, so the next new item starts a
//! new link, as after any fill).
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
    /// first source's). On error nothing was created.
    pub fn merged(sources: &[&BloomChain], limits: &Limits) -> Result<BloomChain, MergeError> {
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
        };
        out.merge_in(false, sources, limits)?;
        Ok(out)
    }

    /// ORs `sources` into this filter (module doc). None of them may be this
    /// filter itself (merging a filter into itself changes nothing: leave it
    /// out). On error the filter is unchanged.
    pub fn merge_from(
        &mut self,
        sources: &[&BloomChain],
        limits: &Limits,
    ) -> Result<(), MergeError> {
        self.merge_in(true, sources, limits)
    }

    fn merge_in(
        &mut self,
        existing: bool,
        sources: &[&BloomChain],
        limits: &Limits,
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
        for i in have..plan.links {
            links_at(&mut at, sources, i);
            let link = match at.as_slice() {
                [] => return Err(BloomError::InvalidParams("a result link has no input").into()),
                [only] => only.try_clone()?,
                [first, ..] => {
                    let mut link = Link::new(first.shape)?;
                    or_into(&mut link, &at, Fresh::Yes);
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
                or_into(link, &at, Fresh::No);
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

/// ORs the inputs' bits into `dst` (of the same shape) and sets its item count
/// from the result's set bits, bounded by the inputs' counts (module doc).
/// `dst`'s own count is one of the inputs when it already holds bits.
///
/// A fresh `dst` gets the first input's tile copied instead of OR-ed: its pages
/// are then written before they are ever read. Reading a page of a fresh
/// (lazily zeroed) allocation first maps the shared zero page, and the write
/// that follows faults a second time to replace it: that doubled the time of a
/// merge into a new key (`perf`: `do_wp_page` under `or_into`). Its pages are
/// also populated in one call first ([`Words::populate`](crate::bits::Words::populate)),
/// instead of one page fault per 4 KiB.
fn or_into(dst: &mut Link, inputs: &[&Link], fresh: Fresh) {
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
            count_blocks(tile, &mut hist);
            start = end;
        }
    }
    let counts = inputs.iter().map(|l| l.items).chain([dst.items]);
    let largest = counts.clone().max().unwrap_or(0);
    let sum = counts.fold(0u64, |a, c| a.saturating_add(c));
    let hi = sum.min(dst.shape.entries);
    let lo = largest.min(hi);
    let est = estimate_items(&dst.shape, &hist);
    dst.items = if est.is_finite() && est >= 0.0 {
        (est.round() as u64).clamp(lo, hi)
    } else {
        hi
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
            let x = x.min(m - 0.5);
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

#[cfg(test)]
mod tests {
    use super::super::tests::SplitMix;
    use super::*;

    fn item(g: &mut SplitMix, tag: u8) -> [u8; 17] {
        let mut out = [tag; 17];
        out[1..9].copy_from_slice(&g.next().to_le_bytes());
        out[9..17].copy_from_slice(&g.next().to_le_bytes());
        out
    }

    fn chain(layout: BloomLayout, cap: u64, error: f64, expansion: u32) -> BloomChain {
        BloomChain::with_layout(cap, error, expansion, layout, &Limits::default()).unwrap()
    }

    /// Adds `n` items of stream `seed` (item `i` of a stream is always the same).
    fn fill(c: &mut BloomChain, seed: u64, from: u64, n: u64) {
        let limits = Limits::default();
        let mut g = SplitMix(seed);
        for i in 0..from + n {
            let it = item(&mut g, 1);
            if i >= from {
                c.add(&c.hash(&it), &limits).unwrap();
            }
        }
    }

    fn all_present(c: &BloomChain, seed: u64, n: u64) -> bool {
        let mut g = SplitMix(seed);
        (0..n).all(|_| c.contains(&c.hash(&item(&mut g, 1))))
    }

    fn snapshot(c: &BloomChain) -> (Vec<u8>, Vec<Vec<u8>>) {
        (
            c.encode_header(),
            c.links().iter().map(|l| l.data().to_vec()).collect(),
        )
    }

    const LAYOUTS: [BloomLayout; 4] = [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
        BloomLayout::RedisBloom,
    ];

    /// Every item of every input is in the result, for chains of different
    /// lengths (1, 3 and 5 links), into a new filter and into an existing one,
    /// in every layout; the result has the longest chain's links, and its
    /// header loads back.
    #[test]
    fn merge_has_no_false_negatives() {
        for layout in LAYOUTS {
            let mut a = chain(layout, 1000, 0.01, 2);
            let mut b = chain(layout, 1000, 0.01, 2);
            let mut d = chain(layout, 1000, 0.01, 2);
            fill(&mut a, 1, 0, 500);
            fill(&mut b, 2, 0, 20_000);
            fill(&mut d, 3, 0, 5_000);
            assert_eq!(
                (a.links().len(), b.links().len(), d.links().len()),
                (1, 5, 3)
            );
            let limits = Limits::default();
            let m = BloomChain::merged(&[&a, &b], &limits).unwrap();
            assert_eq!(m.links().len(), 5);
            assert!(all_present(&m, 1, 500) && all_present(&m, 2, 20_000));
            let mut d2 = d.try_clone().unwrap();
            d2.merge_from(&[&a, &b], &limits).unwrap();
            assert_eq!(d2.links().len(), 5);
            for (seed, n) in [(1, 500), (2, 20_000), (3, 5_000)] {
                assert!(all_present(&d2, seed, n), "{layout:?} seed {seed}");
            }
            let (h, _) = snapshot(&d2);
            let back = BloomChain::from_header(&h, &limits).unwrap();
            assert_eq!(back.items(), d2.items());
            assert_eq!(
                d2.items(),
                d2.links().iter().map(|l| l.items()).sum::<u64>()
            );
            // Links only b has are copied as they are.
            for i in 3..5 {
                assert_eq!(d2.links()[i].data(), b.links()[i].data());
                assert_eq!(d2.links()[i].items(), b.links()[i].items());
            }
            // A merge of one source into a new key is a copy.
            let one = BloomChain::merged(&[&b], &limits).unwrap();
            assert_eq!(snapshot(&one), snapshot(&b));
        }
    }

    /// The count of a merged link estimates the distinct items of the union:
    /// two sources of `n` items each sharing half of them (1.5n distinct), for
    /// fills from 5% to 100% of a non-scaling link of 100,000 items at 1%, in
    /// both of ferrobloom's layouts and RedisBloom's. Asserted within 2% (the
    /// estimator's standard deviation is below 0.3% at these sizes; the bound
    /// also covers the bias of the blocked layout's per-block estimate).
    #[test]
    fn merge_count_estimate_within_two_percent() {
        let limits = Limits::default();
        let mut report = String::new();
        for layout in LAYOUTS {
            for pct in [5u64, 20, 50, 66] {
                let cap = 100_000;
                let n = cap * pct / 100;
                let mut a = chain(layout, cap, 0.01, 0);
                let mut b = chain(layout, cap, 0.01, 0);
                // a: items 0..n of the stream; b: items n/2..3n/2.
                fill(&mut a, 7, 0, n);
                fill(&mut b, 7, n / 2, n);
                let m = BloomChain::merged(&[&a, &b], &limits).unwrap();
                let truth = (n + n / 2) as f64;
                let est = m.items() as f64;
                let naive = {
                    let l = &m.links()[0];
                    let x = l.words.count_ones() as f64;
                    let mm = l.shape.modulus() as f64;
                    -(mm / l.shape.hashes as f64) * (1.0 - x / mm).ln()
                };
                report.push_str(&format!(
                    "{} union {truth}: estimate {est} ({:+.2}%), whole-link formula {naive:.0} ({:+.2}%)\n",
                    layout.name(),
                    100.0 * (est / truth - 1.0),
                    100.0 * (naive / truth - 1.0)
                ));
                assert!(
                    (est / truth - 1.0).abs() < 0.02,
                    "{layout:?} {pct}%: estimate {est} for {truth}"
                );
            }
        }
        println!("{report}");
    }

    /// A merged link whose estimate exceeds its capacity is full: its count is
    /// the capacity (what the header allows), and the next new item starts a
    /// new link.
    #[test]
    fn merged_link_above_capacity_is_full() {
        let limits = Limits::default();
        let mut a = chain(BloomLayout::Classic, 1000, 0.01, 2);
        let mut b = chain(BloomLayout::Classic, 1000, 0.01, 2);
        fill(&mut a, 11, 0, 900);
        fill(&mut b, 12, 0, 900);
        assert_eq!((a.links().len(), b.links().len()), (1, 1));
        let mut m = BloomChain::merged(&[&a, &b], &limits).unwrap();
        assert_eq!(m.items(), 1000, "clamped to the link's capacity");
        // (Some of these are false positives of the overfull link.)
        fill(&mut m, 13, 0, 100);
        assert_eq!(m.links().len(), 2);
        // Non-scaling: full, and refuses new items.
        let mut a = chain(BloomLayout::Classic, 1000, 0.01, 0);
        let mut b = chain(BloomLayout::Classic, 1000, 0.01, 0);
        fill(&mut a, 11, 0, 900);
        fill(&mut b, 12, 0, 900);
        let mut m = BloomChain::merged(&[&a, &b], &limits).unwrap();
        let h = m.hash(b"new item");
        assert_eq!(m.add(&h, &limits), Err(BloomError::Full));
    }

    /// The measured false-positive rate of a merged filter matches the rate its
    /// fill predicts (per link `(X/m)^k`, blocked: the block average; chain: `1 -
    /// prod(1 - p_i)`), within 4 binomial standard errors plus 3% of the rate
    /// (the formula ignores double hashing's small correlations), over 1,000,000
    /// non-member probes, with fixed seeds.
    #[test]
    fn merge_false_positive_rate_matches_its_fill() {
        const PROBES: u64 = 1_000_000;
        let limits = Limits::default();
        for layout in LAYOUTS {
            let mut a = chain(layout, 20_000, 0.01, 2);
            let mut b = chain(layout, 20_000, 0.01, 2);
            fill(&mut a, 21, 0, 30_000);
            fill(&mut b, 22, 0, 15_000);
            let m = BloomChain::merged(&[&a, &b], &limits).unwrap();
            let predicted = 1.0
                - m.links()
                    .iter()
                    .map(|l| 1.0 - predicted_fpr(l))
                    .product::<f64>();
            let mut g = SplitMix(0xfa15e);
            let fp = (0..PROBES)
                .filter(|_| m.contains(&m.hash(&item(&mut g, 2))))
                .count() as f64
                / PROBES as f64;
            let margin =
                4.0 * (predicted * (1.0 - predicted) / PROBES as f64).sqrt() + 0.03 * predicted;
            println!("{layout:?}: measured {fp:.6}, predicted {predicted:.6}");
            assert!(
                (fp - predicted).abs() <= margin,
                "{layout:?}: measured {fp}, predicted {predicted} ± {margin}"
            );
        }
    }

    /// Each difference is reported with the input and (for a link) the link.
    #[test]
    fn incompatible_filters_say_what_differs() {
        let base = chain(BloomLayout::Classic, 1000, 0.01, 2);
        let differs = |c: &BloomChain| BloomChain::merge_plan(None, &[&base, c]).unwrap_err();
        let inc = |what, link| MergeError::Incompatible {
            input: Some(1),
            what,
            link,
        };
        assert_eq!(
            differs(&chain(BloomLayout::Blocked, 1000, 0.01, 2)),
            inc("layout", Some(0))
        );
        assert_eq!(
            differs(&chain(BloomLayout::Classic, 1000, 0.02, 2)),
            inc("bit count", Some(0))
        );
        assert_eq!(
            differs(&chain(BloomLayout::Classic, 1000, 0.01, 4)),
            inc("expansion", None)
        );
        assert_eq!(
            differs(&chain(BloomLayout::Classic, 1000, 0.01, 0)),
            inc("expansion", None)
        );
        assert_eq!(
            differs(&chain(BloomLayout::RedisBloom, 1000, 0.01, 2)),
            inc("hash scheme", None)
        );
        // valkey-bloom's options: another seed hashes otherwise; another
        // tightening ratio would grow the result otherwise.
        let with = |opts: ChainOptions| {
            BloomChain::with_options(
                1000,
                0.01,
                2,
                BloomLayout::Classic,
                opts,
                &Limits::default(),
            )
            .unwrap()
        };
        let seeded = with(ChainOptions {
            seed: Some([7; 32]),
            ..ChainOptions::default()
        });
        assert_eq!(differs(&seeded), inc("hash scheme", None));
        assert!(!hash_alike(&base, &seeded));
        let tight = with(ChainOptions {
            tightening: 0.9,
            ..ChainOptions::default()
        });
        assert_eq!(differs(&tight), inc("tightening", None));
        assert!(BloomChain::merge_plan(None, &[&seeded, &seeded.try_clone().unwrap()]).is_ok());
        // Same bits (rounded up to 64), another capacity.
        assert_eq!(
            differs(&chain(BloomLayout::Classic, 1001, 0.01, 2)),
            inc("capacity", Some(0))
        );
        // The destination is checked after the sources.
        let e = BloomChain::merge_plan(Some(&chain(BloomLayout::Classic, 999, 0.01, 2)), &[&base])
            .unwrap_err();
        assert!(matches!(
            e,
            MergeError::Incompatible {
                input: None,
                link: Some(0),
                ..
            }
        ));
        // Link 1 differs (crafted header): found however short the first input.
        let mut long = chain(BloomLayout::Classic, 1000, 0.01, 2);
        fill(&mut long, 5, 0, 1500);
        let mut h = long.encode_header();
        // Hashes of link 1: header 24 + record 40 + offset 32.
        h[24 + 40 + 32] += 1;
        let odd = BloomChain::from_header(&h, &Limits::default()).unwrap();
        let e = BloomChain::merge_plan(None, &[&base, &long, &odd]).unwrap_err();
        assert_eq!(
            e,
            MergeError::Incompatible {
                input: Some(2),
                what: "hash count",
                link: Some(1)
            }
        );
        assert!(BloomChain::merge_plan(None, &[&base, &odd]).is_ok());
        assert!(hash_alike(&base, &long) && !hash_alike(&base, &rb_like()));
    }

    fn rb_like() -> BloomChain {
        chain(BloomLayout::RedisBloom, 1000, 0.01, 2)
    }

    /// The plan counts the result's links and size and the bytes touched; the
    /// memory cap and the link limit refuse a result that grows past them, and
    /// a refused merge changes nothing.
    #[test]
    fn merge_bounds_and_atomicity() {
        let limits = Limits::default();
        let mut long = chain(BloomLayout::Classic, 1000, 0.01, 2);
        fill(&mut long, 31, 0, 10_000);
        let mut d = chain(BloomLayout::Classic, 1000, 0.01, 2);
        fill(&mut d, 32, 0, 100);
        let plan = BloomChain::merge_plan(Some(&d), &[&long]).unwrap();
        let data: u64 = long.links().iter().map(|l| l.shape().bytes()).sum();
        assert_eq!(plan.links, long.links().len());
        assert_eq!(plan.size, long.mem_usage());
        assert_eq!(plan.touched, 2 * data);
        let before = snapshot(&d);
        let tight = Limits {
            max_bytes: long.mem_usage() - 1,
            ..limits
        };
        assert_eq!(
            d.merge_from(&[&long], &tight),
            Err(MergeError::Bloom(BloomError::MemoryCap))
        );
        assert_eq!(snapshot(&d), before);
        let few = Limits {
            max_links: 2,
            ..limits
        };
        assert_eq!(
            d.merge_from(&[&long], &few),
            Err(MergeError::Bloom(BloomError::MaxLinks))
        );
        assert_eq!(snapshot(&d), before);
        assert!(matches!(
            BloomChain::merged(&[&long], &tight),
            Err(MergeError::Bloom(BloomError::MemoryCap))
        ));
        // An incompatible source: nothing changes either.
        let other = chain(BloomLayout::Blocked, 1000, 0.01, 2);
        assert!(d.merge_from(&[&long, &other], &limits).is_err());
        assert_eq!(snapshot(&d), before);
        // Merging a copy of itself changes nothing but may re-estimate counts
        // within their bounds.
        let copy = d.try_clone().unwrap();
        d.merge_from(&[&copy], &limits).unwrap();
        assert_eq!(snapshot(&d).1, before.1);
    }
}
