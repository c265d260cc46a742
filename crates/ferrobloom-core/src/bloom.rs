//! Scalable Bloom filters: one Bloom filter per link, chained as in RedisBloom
//! (`SBChain`, <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/sb.c>),
//! with hard bounds RedisBloom lacks. Each link has one of three bit layouts of
//! ferrobloom's ([`BloomLayout`]): *classic* (RedisBloom's sizing and probe
//! pattern: `k` random bits anywhere in the link, so `k` cache misses per item on
//! a large filter; plain double hashing where the link is large enough for it
//! to keep the rate, mixed probes elsewhere: `bloom/sizing.rs`, "Which classic
//! derivation"), *blocked* (all `k` bits of an item in one 64-byte cache line:
//! one cache miss per item, sized with more bits so that the link still meets its
//! error rate) or *paired* (the bits in two cache lines, half in each: a lookup of
//! an absent item almost always ends at the first line, and the link needs only
//! 1-3% more bits than a classic one; windowed filters' default).
//!
//! Where a link puts an item's bits is documented with [`Link`] (`bloom/link.rs`),
//! how many bits and hash functions it gets with [`LinkShape`] (`bloom/sizing.rs`).
//!
//! # Scaling
//! A scaling chain starts with one link at `error / 2`; each new link has
//! `expansion` times the previous capacity and half its error rate, so the
//! compound false-positive rate stays below `error`. A non-scaling filter has one
//! link at `error` and refuses new items when full.
//!
//! # Bounds (RedisBloom has none: its `SBChain_Add` adds links without limit)
//! A chain never has more than `Limits::max_links` links, no link uses more than
//! [`MAX_HASHES`] hash functions, and the whole filter never exceeds
//! `Limits::max_bytes` (measured as BF.INFO's `Size`). Reaching a bound is an error
//! reply, never a slow or broken filter.

use super::bits::{AllocError, Words, LINE_BITS};
use super::hash::{HashScheme, ItemHash, LOOKAHEAD};
use super::relocate::Pass;

mod batch;
mod encoding;
mod link;
mod merge;
mod plan;
mod redisbloom;
mod sizing;
pub(crate) use batch::BATCH_AHEAD;
#[cfg(test)]
use encoding::HEADER_FIXED;
pub(crate) use encoding::{
    links_fill_chunks, links_for_each_chunk, links_load_chunk, links_scandump_chunk, HeaderRole,
    Reader,
};
pub use encoding::{
    CAPACITY_ABOVE_BITS, CAPACITY_TOO_LARGE, EXPANSION_TOO_LARGE, HEADER_MAGIC,
    HEADER_VERSION_BASE, HEADER_VERSION_OPTIONS, LAYOUT_BLOCKED, LAYOUT_CLASSIC,
    LAYOUT_CLASSIC_MIXED, LAYOUT_PAIRED, LAYOUT_REDISBLOOM, LINK_ABOVE_GROWTH,
};
pub use link::Link;
pub(crate) use link::PairMasks;
pub use merge::{hash_alike, MergeError, MergePlan, Overfill};
pub use plan::{decode_shapes, encode_shapes, ShapePlan, MAX_PLANNED_LINKS};
pub(crate) use plan::{same_family, variant};
pub use redisbloom::{RbChain, RB_MAX_HASHES};
pub(crate) use sizing::poisson_sum_end;
use sizing::{blocked_scaling_bits, Blocks, LN2, LN2_SQUARED};
pub use sizing::{classic_derivation, LinkShape, DOUBLE_HASHING_EXCESS, DOUBLE_HASHING_SHARE};

/// Each new link of a scaling chain has this fraction of the previous error rate.
pub const TIGHTENING_RATIO: f64 = 0.5;
/// Upper bound on hash functions per link (about an error rate of 2^-128).
pub const MAX_HASHES: u32 = 128;
/// Upper bound of the EXPANSION option and configuration.
pub const MAX_EXPANSION: u32 = 32768;
/// Upper bound of the capacity a command may request (RedisBloom 8.x: 2^30).
pub const MAX_CAPACITY: u64 = 1 << 30;
/// Hard ceiling on links, whatever the configuration says (bounds decoders too).
pub const MAX_LINKS_CEILING: u32 = 1024;
/// SCANDUMP data chunks are at most this long (RedisBloom's constant).
pub const SCANDUMP_CHUNK: u64 = 16 * 1024 * 1024;

/// How a link lays out an item's bits (persisted per link in the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BloomLayout {
    /// RedisBloom's sizing with `k` bits anywhere in the link (`LAYOUT
    /// classic`, the default). Asked for, it is the classic family: each new
    /// link gets the derivation [`classic_derivation`] picks for its shape,
    /// this one or [`ClassicDouble`](Self::ClassicDouble). As a link's layout,
    /// it is the mixed derivation, each probe an independent position (link
    /// code [`LAYOUT_CLASSIC_MIXED`], see `bloom/link.rs`): small links and
    /// links at tight error rates.
    #[default]
    Classic,
    /// The classic layout with plain double hashing (link code
    /// [`LAYOUT_CLASSIC`]): every classic link before code 4, and since the
    /// rule, new classic links large enough for its excess over the ideal
    /// rate to be at most 1% of their error (`bloom/sizing.rs`, "Which classic
    /// derivation"); it is the faster one on memory-bound links. Asked for by
    /// name (`LinkShape::with_layout`, `BloomChain::with_layout`, `Window::new`),
    /// every new link has it: tests and fuzzing, windows created before code
    /// 4, and chains created before the rule that hold a code-0 link the rule
    /// would mix (their growth links keep it; other chains whose links have it
    /// let the rule judge the links they add).
    ClassicDouble,
    /// All `k` bits of an item in one 512-bit block (one cache line).
    Blocked,
    /// An item's bits in two 512-bit blocks: the first `ceil(k/2)` probes in
    /// one, the rest in another, so a lookup of an absent item is answered by
    /// one cache line almost always (the default of windowed filters).
    Paired,
    /// RedisBloom's own hashing, sizing and bit indexing (`(a + i·b) mod M`, see
    /// `redisbloom.rs`): every filter migrated from RedisBloom, and new filters
    /// created with `LAYOUT redisbloom` (so a replica of a RedisBloom primary
    /// builds the same filters, and their dumps load back into RedisBloom).
    RedisBloom,
}

impl BloomLayout {
    /// The header code of the layout.
    pub const fn code(self) -> u8 {
        match self {
            BloomLayout::Classic => LAYOUT_CLASSIC_MIXED,
            BloomLayout::ClassicDouble => LAYOUT_CLASSIC,
            BloomLayout::Blocked => LAYOUT_BLOCKED,
            BloomLayout::Paired => LAYOUT_PAIRED,
            BloomLayout::RedisBloom => LAYOUT_REDISBLOOM,
        }
    }

    /// The layout of a header code ([`code`](Self::code)); `None` for an
    /// unknown code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            LAYOUT_CLASSIC_MIXED => Some(BloomLayout::Classic),
            LAYOUT_CLASSIC => Some(BloomLayout::ClassicDouble),
            LAYOUT_BLOCKED => Some(BloomLayout::Blocked),
            LAYOUT_PAIRED => Some(BloomLayout::Paired),
            LAYOUT_REDISBLOOM => Some(BloomLayout::RedisBloom),
            _ => None,
        }
    }

    /// The configuration name (`classic` / `blocked` / `paired`); the old
    /// classic derivation is `classic` too (what its users asked for).
    pub fn name(self) -> &'static str {
        match self {
            BloomLayout::Classic | BloomLayout::ClassicDouble => "classic",
            BloomLayout::Blocked => "blocked",
            BloomLayout::Paired => "paired",
            BloomLayout::RedisBloom => "redisbloom",
        }
    }

    /// True for both classic derivations (RedisBloom's sizing, `k` bits
    /// anywhere in the link, one probe loop).
    pub fn is_classic(self) -> bool {
        matches!(self, BloomLayout::Classic | BloomLayout::ClassicDouble)
    }

    /// Parses a configuration name (case-insensitive).
    pub fn from_name(name: &[u8]) -> Option<Self> {
        if name.eq_ignore_ascii_case(b"classic") {
            Some(BloomLayout::Classic)
        } else if name.eq_ignore_ascii_case(b"blocked") {
            Some(BloomLayout::Blocked)
        } else if name.eq_ignore_ascii_case(b"paired") {
            Some(BloomLayout::Paired)
        } else if name.eq_ignore_ascii_case(b"redisbloom") {
            Some(BloomLayout::RedisBloom)
        } else {
            None
        }
    }
}

/// Per-filter bounds, from the module configuration.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Maximum `mem_usage()` of one filter, in bytes.
    pub max_bytes: u64,
    /// Maximum number of links in a scaling chain.
    pub max_links: u32,
    /// Maximum number of sub-filters of a cuckoo filter (`cf-max-expansions`).
    pub max_filters: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 4 << 30,
            max_links: 64,
            max_filters: 65536,
        }
    }
}

/// Why creating, growing, adding to or loading a Bloom filter failed.
#[derive(Debug, Clone, PartialEq)]
pub enum BloomError {
    /// A non-scaling filter is full and the item is new.
    Full,
    /// The chain already has `max_links` links.
    MaxLinks,
    /// The filter would exceed `max_bytes`.
    MemoryCap,
    /// The allocator had no memory.
    AllocFailed,
    /// The parameters describe no usable filter (e.g. a capacity overflow).
    InvalidParams(&'static str),
    /// An error rate so small that a link needs more than [`MAX_HASHES`] hash
    /// functions.
    TooManyHashes,
    /// A SCANDUMP header or RDB payload failed validation.
    BadHeader(&'static str),
    /// A LOADCHUNK data chunk starts outside every link.
    NoLinkForOffset,
    /// A LOADCHUNK data chunk runs past the end of its link.
    ChunkTooBig,
    /// A LOADCHUNK data chunk is malformed (empty, bad iterator).
    BadChunk,
}

impl From<AllocError> for BloomError {
    fn from(_: AllocError) -> Self {
        BloomError::AllocFailed
    }
}

/// Per-filter parameters beyond RedisBloom's (valkey-bloom's `TIGHTENING` and
/// `SEED`), persisted in header version 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainOptions {
    /// Each new link's error rate is the previous link's times this (strictly
    /// between 0 and 1; RedisBloom's fixed value is [`TIGHTENING_RATIO`]). The
    /// first link of a scaling chain always has half the filter's error rate, as
    /// in RedisBloom, so the default keeps RedisBloom's sizes.
    pub tightening: f64,
    /// A 32-byte seed that changes the item hashing ([`HashScheme::Xxh3Seeded`]);
    /// `None`: XXH3 with seed 0, as every unseeded ferrobloom filter.
    pub seed: Option<[u8; 32]>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions::REDISBLOOM
    }
}

impl ChainOptions {
    /// RedisBloom's: tightening [`TIGHTENING_RATIO`], no seed (the default).
    pub const REDISBLOOM: ChainOptions = ChainOptions {
        tightening: TIGHTENING_RATIO,
        seed: None,
    };

    /// True when the options are RedisBloom's (header version 1 describes them).
    pub fn is_default(&self) -> bool {
        self.tightening == TIGHTENING_RATIO && self.seed.is_none()
    }
}

/// What stops a chain from scaling further ([`BloomChain::scale_to`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleLimit {
    /// The next link would exceed the per-filter memory cap (or overflow).
    Memory,
    /// The next link would exceed the maximum number of links.
    Links,
    /// The next link's error rate needs more than [`MAX_HASHES`] hash functions.
    ErrorRate,
    /// The filter is non-scaling.
    NonScaling,
}

/// A scalable (or non-scaling) Bloom filter: RedisBloom's `MBbloom--` value.
pub struct BloomChain {
    links: Vec<Link>,
    /// Total items accepted as new (sum of link fills).
    items: u64,
    /// Growth factor; 0 means non-scaling.
    expansion: u32,
    /// Set for filters migrated from RedisBloom: they keep its hashing, bit
    /// indexing, link sizing and header (see `redisbloom.rs`).
    rb: Option<RbChain>,
    /// Tightening ratio and seed (defaults for RedisBloom chains).
    opts: ChainOptions,
    /// The next link's shape, kept once computed while the newest link is full
    /// and growth is refused (links or memory cap): sizing a blocked link takes
    /// milliseconds, and a BF.INSERT of many items into such a filter must not
    /// redo it for every item (measured: 3.7 ms per refused item). Not
    /// persisted; cleared when a link is added.
    pending_shape: Option<LinkShape>,
    /// The running write's plan (`bloom/plan.rs`): consulted only where a
    /// link is added. Not persisted.
    plan: Option<Box<ShapePlan>>,
}

/// The fixed part of `mem_usage`, per RedisBloom's formula (`BFMemUsage` in
/// src/rebloom.c: `sizeof(SBChain)` plus `sizeof(SBLink)` per link).
pub(crate) const CHAIN_OVERHEAD: u64 = 32;
/// The per-link part of `mem_usage` (RedisBloom's formula).
pub(crate) const LINK_OVERHEAD: u64 = 64;

/// The size from which batches over classic links prefetch
/// ([`BloomChain::prefetch_distance`]).
pub const PREFETCH_FROM: u64 = 4 << 20;

/// The size (`mem_usage`) from which the bindings' calls on one item (the
/// Python package's, the Java library's) prefetch the lines they read first
/// (`BloomFilter::prefetch`), so they arrive together: a core's L2 cache,
/// 1-2 MiB. At 10M items (12 MB, 1%) that took absent items' lookups from
/// Python from about 210 to 125-200 ns, present ones' from 240 to 200-240; in
/// a cache it costs a few ns. (Batches prefetch from [`PREFETCH_FROM`]: there
/// the other items' work hides the latency.)
pub const PREFETCH_ONE_FROM: u64 = 1 << 20;

impl BloomChain {
    /// Creates a classic filter for `capacity` items at `error`, growing by
    /// `expansion` (0 = non-scaling).
    pub fn new(
        capacity: u64,
        error: f64,
        expansion: u32,
        limits: &Limits,
    ) -> Result<Self, BloomError> {
        Self::with_layout(capacity, error, expansion, BloomLayout::Classic, limits)
    }

    /// Creates a filter whose links use `layout` (new links keep it).
    pub fn with_layout(
        capacity: u64,
        error: f64,
        expansion: u32,
        layout: BloomLayout,
        limits: &Limits,
    ) -> Result<Self, BloomError> {
        Self::with_options(
            capacity,
            error,
            expansion,
            layout,
            ChainOptions::default(),
            limits,
        )
    }

    /// Creates a filter with a tightening ratio and seed ([`ChainOptions`]).
    /// RedisBloom's layout takes only the defaults (its header cannot record others).
    pub fn with_options(
        capacity: u64,
        error: f64,
        expansion: u32,
        layout: BloomLayout,
        opts: ChainOptions,
        limits: &Limits,
    ) -> Result<Self, BloomError> {
        if layout == BloomLayout::RedisBloom {
            if !opts.is_default() {
                return Err(BloomError::InvalidParams(
                    "the RedisBloom layout takes no tightening ratio or seed",
                ));
            }
            // Any `unsigned` growth, as RedisBloom 2.x (its primary may send one).
            return Self::new_redisbloom(capacity, error, expansion, 2, limits);
        }
        if expansion > MAX_EXPANSION {
            return Err(BloomError::InvalidParams("expansion out of range"));
        }
        // What every reader refuses (`bloom/encoding.rs`): no filter the core
        // creates fails to load back.
        if capacity > MAX_CAPACITY {
            return Err(BloomError::InvalidParams(CAPACITY_TOO_LARGE));
        }
        if !(opts.tightening > 0.0 && opts.tightening < 1.0) {
            return Err(BloomError::InvalidParams(
                "tightening ratio must be in (0, 1)",
            ));
        }
        let shape = if expansion == 0 {
            LinkShape::with_layout(capacity, error, layout, true)?
        } else {
            LinkShape::with_layout(capacity, error * TIGHTENING_RATIO, layout, false)?
        };
        let shape = variant(shape);
        let mut chain = BloomChain {
            links: Vec::new(),
            items: 0,
            expansion,
            rb: None,
            opts,
            pending_shape: None,
            plan: None,
        };
        chain.push_link(shape, limits)?;
        Ok(chain)
    }

    pub(crate) fn push_link(
        &mut self,
        shape: LinkShape,
        limits: &Limits,
    ) -> Result<(), BloomError> {
        if self.links.len() as u64 >= u64::from(limits.max_links.min(MAX_LINKS_CEILING)) {
            return Err(BloomError::MaxLinks);
        }
        let after = self
            .mem_usage()
            .checked_add(LINK_OVERHEAD + shape.bytes())
            .ok_or(BloomError::MemoryCap)?;
        if after > limits.max_bytes {
            return Err(BloomError::MemoryCap);
        }
        self.links
            .try_reserve(1)
            .map_err(|_| BloomError::AllocFailed)?;
        self.links.push(Link::new(shape)?);
        self.pending_shape = None;
        Ok(())
    }

    /// True when any link (newest first) holds all of the item's bits.
    #[inline]
    pub fn contains(&self, h: &ItemHash) -> bool {
        self.links.iter().rev().any(|l| l.contains(h))
    }

    /// Adds an item. `Ok(true)`: newly added; `Ok(false)`: already present (or a
    /// false positive), nothing changed. On error nothing changed either.
    pub fn add(&mut self, h: &ItemHash, limits: &Limits) -> Result<bool, BloomError> {
        // The common case in one pass: the newest link has room, so the item
        // is tested and set there together (`Link::test_and_insert`) once no
        // older link holds it; the answers and the bits are the same as below.
        if let (Some((last, older)), Some(items)) =
            (self.links.split_last_mut(), self.items.checked_add(1))
        {
            if !last.is_full() {
                if older.iter().rev().any(|l| l.contains(h)) || !last.test_and_insert(h) {
                    return Ok(false);
                }
                self.items = items;
                return Ok(true);
            }
        }
        self.add_two_pass(h, limits)
    }

    /// [`add`](Self::add) in two passes: a lookup over every link, then (when
    /// the newest link is full) a new link, then the insert. Every add took this
    /// path before the one-pass case; the tests compare the two.
    fn add_two_pass(&mut self, h: &ItemHash, limits: &Limits) -> Result<bool, BloomError> {
        if self.contains(h) {
            return Ok(false);
        }
        let (full, next) = match self.links.last() {
            Some(last) => (
                last.is_full(),
                (last.shape.entries, last.shape.error, last.shape.layout),
            ),
            None => return Err(BloomError::InvalidParams("filter has no links")),
        };
        if full {
            let shape = match self.plan.take() {
                Some(mut plan) => {
                    let r = self.planned_shape(&mut plan, next);
                    self.plan = Some(plan);
                    r?
                }
                None => match self.pending_shape {
                    Some(shape) => shape,
                    None => self.next_shape(next.0, next.1, next.2)?,
                },
            };
            self.pending_shape = Some(shape);
            self.push_link(shape, limits)?;
            if let (Some(plan), None) = (self.plan.as_mut(), self.rb) {
                plan.note_added(shape);
            }
        }
        // Only a crafted header (link capacities are not bound by their bits)
        // gets here: the count must not wrap, or the next save would not load
        // (found while writing the fuzz targets).
        let items = self.items.checked_add(1).ok_or(BloomError::Full)?;
        match self.links.last_mut() {
            Some(last) => last.insert(h),
            None => return Err(BloomError::InvalidParams("filter has no links")),
        }
        self.items = items;
        Ok(true)
    }

    /// The link that follows a full link of `entries` items at `error`.
    fn next_shape(
        &self,
        entries: u64,
        error: f64,
        layout: BloomLayout,
    ) -> Result<LinkShape, BloomError> {
        match self.rb {
            Some(rb) => rb.next_link(entries, error),
            None => {
                if self.expansion == 0 {
                    return Err(BloomError::Full);
                }
                let entries = entries
                    .checked_mul(u64::from(self.expansion))
                    .ok_or(BloomError::MemoryCap)?;
                let layout = match layout {
                    BloomLayout::ClassicDouble if !self.keeps_double_hashing() => {
                        BloomLayout::Classic
                    }
                    other => other,
                };
                LinkShape::with_layout(entries, error * self.opts.tightening, layout, false)
                    .map(variant)
            }
        }
    }

    /// True for a classic chain created before the derivation rule
    /// ([`sizing::classic_derivation`]): one of its links has plain double
    /// hashing where the rule picks mixed probes. Such a chain adds links
    /// with plain double hashing, as it always did; every other classic chain
    /// lets the rule judge each new link.
    fn keeps_double_hashing(&self) -> bool {
        self.links.iter().any(|l| {
            let s = &l.shape;
            s.layout == BloomLayout::ClassicDouble
                && classic_derivation(s.bits, s.hashes, s.error) == BloomLayout::Classic
        })
    }

    /// [`next_shape`](Self::next_shape) for sizing only: the same entries, error
    /// and storage bytes (a blocked link's hash count is not computed).
    fn next_shape_sized(
        &self,
        entries: u64,
        error: f64,
        layout: BloomLayout,
    ) -> Result<LinkShape, BloomError> {
        let blocks = match layout {
            BloomLayout::Blocked if self.rb.is_none() => Blocks::One,
            BloomLayout::Paired if self.rb.is_none() => Blocks::Two,
            _ => return self.next_shape(entries, error, layout),
        };
        let classic = self.next_shape(entries, error, BloomLayout::Classic)?;
        let bits = blocked_scaling_bits(&classic, blocks)?;
        Ok(LinkShape {
            bits,
            layout,
            storage: bits / 8,
            ..classic
        })
    }

    /// The total capacity the filter reaches when it scales from its first link
    /// until `target` items fit (`Some`), or as far as the limits let it (`None`),
    /// by sizing (not allocating) each link the chain would add. `Ok(total)` is
    /// the capacity of the links up to the one that reaches `target`, or the
    /// largest capacity for `None`; `Err` says why `target` is out of reach.
    /// valkey-bloom's VALIDATESCALETO and `BF.INFO … MAXSCALEDCAPACITY`. At most
    /// [`MAX_LINKS_CEILING`] links are sized.
    pub fn scale_to(&self, target: Option<u64>, limits: &Limits) -> Result<u64, ScaleLimit> {
        let Some(first) = self.links.first() else {
            return Err(ScaleLimit::Memory);
        };
        let max_links = u64::from(limits.max_links.min(MAX_LINKS_CEILING));
        let mut shape = first.shape;
        let mut total = shape.entries;
        let mut mem = CHAIN_OVERHEAD.saturating_add(LINK_OVERHEAD + shape.bytes());
        let mut links = 1u64;
        let stop = |why: ScaleLimit, total: u64| match target {
            None => Ok(total),
            Some(_) => Err(why),
        };
        if mem > limits.max_bytes {
            return stop(ScaleLimit::Memory, 0);
        }
        while target.is_none_or(|t| total < t) {
            if links >= max_links {
                return stop(ScaleLimit::Links, total);
            }
            let next = match self.next_shape_sized(shape.entries, shape.error, shape.layout) {
                Ok(s) => s,
                Err(BloomError::Full) => return stop(ScaleLimit::NonScaling, total),
                Err(BloomError::MemoryCap) => return stop(ScaleLimit::Memory, total),
                Err(_) => return stop(ScaleLimit::ErrorRate, total),
            };
            mem = mem.saturating_add(LINK_OVERHEAD + next.bytes());
            if mem > limits.max_bytes {
                return stop(ScaleLimit::Memory, total);
            }
            total = total.saturating_add(next.entries);
            links += 1;
            shape = next;
        }
        Ok(total)
    }

    /// The tightening ratio and seed.
    pub fn options(&self) -> ChainOptions {
        self.opts
    }

    /// True when both filters hash every item to the same `(lo, hi)` pair
    /// (same scheme, seed included): the precondition for combining their bits.
    pub fn same_hashing(&self, other: &BloomChain) -> bool {
        self.scheme() == other.scheme()
    }

    /// How many items ahead a batch prefetches ([`LOOKAHEAD`]), or 0 for a
    /// classic chain below [`PREFETCH_FROM`] bytes, where the lines are in a
    /// cache and computing the positions twice costs more than the prefetch
    /// saves (a blocked item's line is one product away: measured at 1 MiB,
    /// blocked batches with prefetching were faster, adds 19.5 → 13.4 ns,
    /// classic lookups slower, 10.8 → 14.7).
    pub(crate) fn prefetch_distance(&self) -> usize {
        let bytes = self.links.iter().map(|l| l.shape.bytes()).sum::<u64>();
        let blocked = self
            .links
            .iter()
            .all(|l| l.shape.layout == BloomLayout::Blocked);
        if bytes >= PREFETCH_FROM || blocked {
            LOOKAHEAD
        } else {
            0
        }
    }

    /// Prefetches the cache lines an add or lookup of `h` touches first.
    #[inline]
    pub fn prefetch(&self, h: &ItemHash) {
        for l in &self.links {
            l.prefetch(h);
        }
    }

    /// Total item capacity (sum of link capacities).
    pub fn capacity(&self) -> u64 {
        self.links
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.shape.entries))
    }

    /// Items accepted as new.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// `None` for non-scaling filters.
    pub fn expansion(&self) -> Option<u32> {
        match self.rb {
            Some(rb) => rb.scaling().then_some(rb.growth),
            None => (self.expansion != 0).then_some(self.expansion),
        }
    }

    /// How this filter hashes items.
    pub fn scheme(&self) -> HashScheme {
        match (self.rb, self.opts.seed) {
            (Some(rb), _) => rb.scheme(),
            (None, Some(seed)) => HashScheme::seeded(&seed),
            (None, None) => HashScheme::Xxh3,
        }
    }

    /// The item's hash under this filter's scheme.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.scheme().bloom(item)
    }

    /// Whether the filter came from RedisBloom (and keeps its formats).
    pub fn is_redisbloom(&self) -> bool {
        self.rb.is_some()
    }

    /// The links, oldest first.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The error rate the filter was created with (derived from the first link).
    pub fn error_rate(&self) -> f64 {
        match self.links.first() {
            Some(l) if self.expansion != 0 => l.shape.error / TIGHTENING_RATIO,
            Some(l) => l.shape.error,
            None => 0.0,
        }
    }

    /// Releases up to `budget` bytes of the links' pages to the kernel, from
    /// byte `from` of the links' arrays taken in order
    /// ([`Words::release_pages`](crate::bits::Words::release_pages)); returns
    /// where the next step starts, `None` once every link is done. For a chain
    /// about to be freed (a windowed filter's dropped generation): the bits
    /// read as zero afterwards.
    pub fn release_step(&mut self, from: u64, budget: u64) -> Option<u64> {
        let mut base = 0u64;
        for l in &mut self.links {
            let len = l.words.alloc_bytes() as u64;
            if from < base.saturating_add(len) {
                let off = usize::try_from(from - base).ok()?;
                let max = usize::try_from(budget).unwrap_or(usize::MAX);
                let end = l.words.release_pages(off, max) as u64;
                return Some(base.saturating_add(end));
            }
            base = base.saturating_add(len);
        }
        None
    }

    /// Memory estimate in bytes: RedisBloom's formula `32 + 64 * links + bytes`
    /// (BF.INFO `Size`, MEMORY USAGE, and the quantity the memory cap bounds).
    pub fn mem_usage(&self) -> u64 {
        self.links.iter().fold(CHAIN_OVERHEAD, |acc, l| {
            acc.saturating_add(LINK_OVERHEAD + l.shape.bytes())
        })
    }

    /// Every heap block the filter owns besides itself (address, requested
    /// size, alignment), so the Redis layer can report what the allocator really
    /// holds (MEMORY USAGE) rather than the formula.
    pub fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        if self.links.capacity() > 0 {
            f(
                self.links.as_ptr() as *const u8,
                self.links.capacity() * std::mem::size_of::<Link>(),
                std::mem::align_of::<Link>(),
            );
        }
        for l in &self.links {
            if let Some((p, n, a)) = l.words.heap_block() {
                f(p, n, a);
            }
            if let Some((p, n, a)) = l.words.written_block() {
                f(p, n, a);
            }
        }
    }

    /// Block numbers [`relocate_blocks`](Self::relocate_blocks) takes (`crate::relocate`).
    pub fn block_count(&self) -> u64 {
        1 + Words::BLOCKS * self.links.len() as u64
    }

    /// Offers every heap block to a relocation pass: the link list, then each
    /// link's bits and written-chunk map (active defragmentation).
    pub fn relocate_blocks(&mut self, pass: &mut Pass) {
        pass.vec(&mut self.links);
        pass.items(
            &mut self.links,
            |_| Words::BLOCKS,
            |p, l| l.words.relocate_blocks(p),
        );
    }

    /// A fallible deep copy (for COPY).
    pub fn try_clone(&self) -> Result<Self, BloomError> {
        let mut links = Vec::new();
        links
            .try_reserve_exact(self.links.len())
            .map_err(|_| BloomError::AllocFailed)?;
        for l in &self.links {
            links.push(l.try_clone()?);
        }
        Ok(BloomChain {
            links,
            items: self.items,
            expansion: self.expansion,
            rb: self.rb,
            opts: self.opts,
            pending_shape: self.pending_shape,
            plan: None,
        })
    }
}

#[cfg(test)]
mod tests;
