//! Scalable Bloom filters: one Bloom filter per link, chained as in RedisBloom
//! (spec 6.2-6.3), with hard bounds RedisBloom lacks. Each link has one of three
//! bit layouts of ferrobloom's ([`BloomLayout`]): *classic* (RedisBloom's sizing
//! and probe pattern: `k` random bits anywhere in the link, so `k` cache misses
//! per item on a large filter), *blocked* (all `k` bits of an item in one 64-byte
//! cache line: one cache miss per item, sized with more bits so that the link
//! still meets its error rate) or *paired* (the bits in two cache lines, half in
//! each: a lookup of an absent item almost always ends at the first line, and the
//! link needs only 1-3% more bits than a classic one; windowed filters' default).
//!
//! # Sizing of classic links (identical to RedisBloom, so BF.INFO / BF.DEBUG report the same numbers)
//! For a link of `entries` items at error rate `error`:
//! `bpe = |ln(error)| / ln(2)^2`, `bits = max(1, floor(entries * bpe))` rounded up to
//! a multiple of 64, `hashes = ceil(ln(2) * bpe)`. A scaling chain starts with one
//! link at `error / 2`; each new link has `expansion` times the previous capacity and
//! half its error rate, so the compound false-positive rate stays below `error`.
//! A non-scaling filter has one link at `error` and refuses new items when full.
//!
//! # Sizing of blocked links
//! Items land in 512-bit blocks by hash, so the number of items per block is
//! (nearly) Poisson with mean `512 / c` for `c` bits per item, and an item's
//! false-positive rate is the average over blocks of `(1 - (1 - 1/512)^(k j))^k`
//! for a block holding `j` items. A blocked link gets the smallest `c` (found by
//! bisection, `k` optimised for each `c`) whose rate is at most the link's error
//! rate, so the chain keeps RedisBloom's error guarantees; that costs +1.3% bits
//! at 10%, +4.4% at 1%, +9.5% at 0.1% and +17% at 0.01% over a classic link.
//! `bits` is rounded up to a multiple of 512 (whole blocks).
//!
//! # Bit positions (layout 0, "classic")
//! The item's XXH3-128 halves `(lo, hi)` (see [`crate::hash`]) drive double
//! hashing: probe `i` (`0 <= i < hashes`) is `g_i = lo + i * hi` (wrapping 64-bit),
//! mapped to a bit with `fastrange(g_i, bits) = (g_i * bits) >> 64` (128-bit
//! product), which is always below `bits` and needs no division. The same
//! `(lo, hi)` pair is used for every link of a chain, so an item is hashed once per
//! command however many links there are.
//!
//! # Bit positions (layout 1, "blocked")
//! The block is `fastrange(lo, bits / 512)`: bits `512 * block ..` of the link,
//! which is one 64-byte-aligned cache line in memory. Probe `i` is bit
//! `g_i >> 55` of the block (its top 9 bits), where `g_0 = hi * C` and
//! `g_{i+1} = g_i * C` (wrapping) with `C = 0x9E37_79B9_7F4A_7C15`, an odd
//! constant (Fibonacci hashing), so the block and the in-block probes use
//! independent halves of the hash.
//!
//! # Bit positions and sizing (layout 3, "paired")
//! The first block is `fastrange(lo, bits / 512)` (as a blocked link's), the
//! second `fastrange(rotl(lo, 32), bits / 512)` (the other half of `lo`). Probe
//! `i` (`0 <= i < k`) is the 9-bit field `(w_{i / 7} >> (9 · (i mod 7))) & 511`
//! of the word sequence `w_0 = hi`, `w_{j+1} = w_j · C` (the constant above):
//! probes `0 .. ceil(k/2)` are bits of the first block, the rest of the second.
//! The fields of a word are independent, so the probes of a block are computed
//! and tested together, without a chain of multiplications or a branch.
//! Sizing as for blocked links, with the rate of a block replaced by the product
//! of two blocks' rates: each block receives Poisson(`2 · 512 / c`) groups of
//! `k/2` probes on average, and a lookup passes both, so the rate is
//! `E[fill^ceil(k/2)] · E[fill^floor(k/2)]`. The bisection fixes `k` first (the
//! best at `1.03 · bpe`) and runs 36 rounds over `[bpe, 1.25·bpe + 1]`. Cost over
//! a classic link: +0.7% bits at 1%, +1.3% at 0.16%, +2.8% at 0.016% (a windowed
//! generation's first link at 1% and 0.1%), +7.7% at 0.0001%.
//!
//! # Bounds (RedisBloom has none: its quirk Q6)
//! A chain never has more than `Limits::max_links` links, no link uses more than
//! [`MAX_HASHES`] hash functions, and the whole filter never exceeds
//! `Limits::max_bytes` (measured as BF.INFO's `Size`). Reaching a bound is an error
//! reply, never a slow or broken filter.

use super::bits::{AllocError, Line, Words, LINE_BITS};
use super::hash::{fastrange, HashScheme, ItemHash};

mod batch;
mod encoding;
mod merge;
mod redisbloom;
pub(crate) use batch::BATCH_AHEAD;
#[cfg(test)]
use encoding::HEADER_FIXED;
pub(crate) use encoding::{
    links_fill_chunks, links_for_each_chunk, links_load_chunk, links_scandump_chunk, Reader,
};
pub use encoding::{
    HEADER_MAGIC, HEADER_VERSION, HEADER_VERSION_OPTIONS, LAYOUT_BLOCKED, LAYOUT_CLASSIC,
    LAYOUT_PAIRED, LAYOUT_REDISBLOOM,
};
pub use merge::{hash_alike, MergeError, MergePlan};
pub use redisbloom::{RbChain, RB_MAX_HASHES};

/// `ln(2)` as RedisBloom writes it (one digit short of `f64::consts::LN_2`; the
/// exact value decides `k = ceil(ln 2 * bpe)` at boundaries, so keep RedisBloom's).
#[allow(clippy::approx_constant)]
const LN2: f64 = 0.693147180559945;
/// `ln(2)^2` as RedisBloom writes it.
const LN2_SQUARED: f64 = 0.480453013918201;
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
    /// RedisBloom's layout: `k` bits anywhere in the link.
    #[default]
    Classic,
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
            BloomLayout::Classic => LAYOUT_CLASSIC,
            BloomLayout::Blocked => LAYOUT_BLOCKED,
            BloomLayout::Paired => LAYOUT_PAIRED,
            BloomLayout::RedisBloom => LAYOUT_REDISBLOOM,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            LAYOUT_CLASSIC => Some(BloomLayout::Classic),
            LAYOUT_BLOCKED => Some(BloomLayout::Blocked),
            LAYOUT_PAIRED => Some(BloomLayout::Paired),
            LAYOUT_REDISBLOOM => Some(BloomLayout::RedisBloom),
            _ => None,
        }
    }

    /// The configuration name (`classic` / `blocked` / `paired`).
    pub fn name(self) -> &'static str {
        match self {
            BloomLayout::Classic => "classic",
            BloomLayout::Blocked => "blocked",
            BloomLayout::Paired => "paired",
            BloomLayout::RedisBloom => "redisbloom",
        }
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

/// The shape of one link: what it holds and how it is sized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShape {
    /// Item capacity.
    pub entries: u64,
    /// The link's own false-positive rate.
    pub error: f64,
    /// Bit count (a multiple of 64); the modulus of the bit positions.
    pub bits: u64,
    /// Number of hash functions.
    pub hashes: u32,
    /// How the bits of an item are placed.
    pub layout: BloomLayout,
    /// Bits per entry (`|ln error| / ln(2)^2`; persisted only for RedisBloom links).
    pub bpe: f64,
    /// RedisBloom's power-of-two exponent of the modulus (0 = the modulus is
    /// `bits`); always 0 for ferrobloom's own layouts.
    pub n2: u8,
    /// Bytes of bit storage: `bits / 8`, except for links from RedisBloom 1.x
    /// files, whose byte length is whatever they were saved with.
    pub storage: u64,
}

impl LinkShape {
    /// Sizes a classic link exactly as RedisBloom does (spec 6.2).
    pub fn new(entries: u64, error: f64) -> Result<Self, BloomError> {
        Self::sized(entries, error, false)
    }

    /// Sizes a link of the given layout: classic links as [`LinkShape::new`]
    /// (or [`LinkShape::guaranteed`]), blocked links as the module doc says.
    pub fn with_layout(
        entries: u64,
        error: f64,
        layout: BloomLayout,
        guaranteed: bool,
    ) -> Result<Self, BloomError> {
        let classic = Self::sized(entries, error, guaranteed)?;
        match layout {
            BloomLayout::Classic => Ok(classic),
            BloomLayout::Blocked => Self::blocked(classic, guaranteed, Blocks::One),
            BloomLayout::Paired => Self::blocked(classic, guaranteed, Blocks::Two),
            BloomLayout::RedisBloom => Err(BloomError::InvalidParams(
                "the RedisBloom layout is only for migrated filters",
            )),
        }
    }

    /// The blocked (or paired) shape for a link whose classic shape is `classic`.
    fn blocked(classic: LinkShape, guaranteed: bool, blocks: Blocks) -> Result<Self, BloomError> {
        let entries = classic.entries as f64;
        let bpe = classic.error.ln().abs() / LN2_SQUARED;
        // The non-scaling guarantee (accepted items, integer k) scales the
        // classic size up; scale the blocked size by the same factor.
        let plain = (entries * bpe).floor().max(1.0);
        let factor = if guaranteed {
            (classic.bits as f64 / plain).max(1.0)
        } else {
            1.0
        };
        let (c, k) = blocked_bits_per_item(classic.error, bpe, blocks);
        let bits_f = (entries * c * factor).ceil();
        if bits_f.is_nan() || bits_f >= (1u64 << 62) as f64 {
            return Err(BloomError::MemoryCap);
        }
        let bits = (bits_f as u64).max(1).div_ceil(LINE_BITS) * LINE_BITS;
        Ok(LinkShape {
            bits,
            hashes: k,
            layout: blocks.layout(),
            storage: bits / 8,
            ..classic
        })
    }

    /// Sizes a link so that its expected false-positive rate is still at most
    /// `error` when it has *accepted* `entries` items, for the integer number of
    /// hash functions it uses.
    ///
    /// RedisBloom's formula gets this wrong in two ways that add up for a full
    /// non-scaling filter: it assumes the real-valued optimal `k` (the integer `k`
    /// is rounded up), and it assumes `entries` random insertions, while a filter
    /// counts only the items it accepted as new, so reaching "full" takes `entries`
    /// plus the false positives met on the way, and every accepted item sets at
    /// least one new bit. A RedisBloom filter reserved at 10% measures about 10.6%
    /// when full. With `rho(t) = 1 - e^(-k t)` the fill after `t` attempts per bit,
    /// the filter accepts `m * integral_0^T (1 - rho(s)^k) ds` items before its
    /// rate reaches `error` at `T = -ln(1 - error^(1/k)) / k`, so
    /// `m >= entries / integral` (Simpson's rule, 256 steps). The cost over
    /// RedisBloom's size: +3.7% bits at 10%, +0.25% at 1%, under 0.1% below.
    pub fn guaranteed(entries: u64, error: f64) -> Result<Self, BloomError> {
        Self::sized(entries, error, true)
    }

    fn sized(entries: u64, error: f64, guaranteed: bool) -> Result<Self, BloomError> {
        if entries == 0 {
            return Err(BloomError::InvalidParams("capacity must be positive"));
        }
        if !(error > 0.0 && error < 1.0) {
            return Err(BloomError::InvalidParams("error rate must be in (0, 1)"));
        }
        let bpe = error.ln().abs() / LN2_SQUARED;
        let hashes_f = (LN2 * bpe).ceil();
        if !(hashes_f >= 1.0 && hashes_f <= MAX_HASHES as f64) {
            return Err(BloomError::TooManyHashes);
        }
        let mut bits_f = (entries as f64 * bpe).floor();
        if guaranteed {
            let per_bit = accepted_per_bit(hashes_f, error);
            if per_bit > 0.0 && per_bit.is_finite() {
                bits_f = bits_f.max((entries as f64 / per_bit).ceil());
            }
        }
        // 2^62 bits = 512 PiB: far above any memory cap, and keeps the
        // round-up below from overflowing.
        if bits_f.is_nan() || bits_f >= (1u64 << 62) as f64 {
            return Err(BloomError::MemoryCap);
        }
        let bits = (bits_f as u64).max(1);
        let bits = bits.div_ceil(64) * 64;
        Ok(LinkShape {
            entries,
            error,
            bits,
            hashes: hashes_f as u32,
            layout: BloomLayout::Classic,
            bpe,
            n2: 0,
            storage: bits / 8,
        })
    }

    /// Bytes of bit storage.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.storage
    }
}

/// Items a Bloom filter with `k` hash functions accepts per bit of storage before
/// its false-positive rate reaches `error` (see [`LinkShape::guaranteed`]).
fn accepted_per_bit(k: f64, error: f64) -> f64 {
    let end = -(1.0 - error.powf(1.0 / k)).ln() / k;
    let accept = |s: f64| 1.0 - (1.0 - (-k * s).exp()).powf(k);
    const STEPS: u32 = 256;
    let h = end / f64::from(STEPS);
    let mut sum = accept(0.0) + accept(end);
    for i in 1..STEPS {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * accept(f64::from(i) * h);
    }
    sum * h / 3.0
}

/// How many 512-bit blocks an item's bits are spread over: one (the blocked
/// layout) or two (the paired layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocks {
    One,
    Two,
}

impl Blocks {
    fn layout(self) -> BloomLayout {
        match self {
            Blocks::One => BloomLayout::Blocked,
            Blocks::Two => BloomLayout::Paired,
        }
    }
}

/// The expected false-positive rate of a blocked link with `c` bits per item
/// and `k` probes: items per 512-bit block are Poisson(512 / c) (module doc).
fn blocked_fpr(c: f64, k: u32) -> f64 {
    let kf = f64::from(k);
    block_moment(LINE_BITS as f64 / c, kf, kf)
}

/// `E[fill^j]` over 512-bit blocks that receive Poisson(`lambda`) groups of
/// `per_group` probes each, where `fill = 1 - (1 - 1/512)^(per_group · groups)`.
fn block_moment(lambda: f64, per_group: f64, j: f64) -> f64 {
    let ln_keep = (1.0 - 1.0 / LINE_BITS as f64).ln();
    // Sum over the group count up to far into the tail; log-space so large
    // means can't underflow the first terms.
    let last = (lambda + 12.0 * lambda.sqrt() + 40.0).ceil() as u64;
    let mut ln_p = -lambda;
    let mut sum = 0.0;
    for g in 0..=last {
        let fill = 1.0 - (ln_keep * per_group * g as f64).exp();
        if fill > 0.0 {
            sum += (ln_p + j * fill.ln()).exp();
        }
        ln_p += (lambda / (g + 1) as f64).ln();
    }
    sum
}

/// The expected false-positive rate of a paired link with `c` bits per item and
/// `k` probes (module doc): each item puts `ceil(k/2)` probes in one block and
/// `floor(k/2)` in another, so a block receives Poisson(2·512 / c) groups of
/// `k/2` probes on average, and the two blocks of a lookup are independent.
fn paired_fpr(c: f64, k: u32) -> f64 {
    let lambda = 2.0 * LINE_BITS as f64 / c;
    let half = f64::from(k) / 2.0;
    let first = f64::from(k.div_ceil(2));
    let second = f64::from(k / 2);
    // `block_moment` for both exponents in one pass over the group counts.
    let ln_keep = (1.0 - 1.0 / LINE_BITS as f64).ln();
    let last = (lambda + 12.0 * lambda.sqrt() + 40.0).ceil() as u64;
    let mut ln_p = -lambda;
    let (mut a, mut b) = (0.0, 0.0);
    for g in 0..=last {
        let fill = 1.0 - (ln_keep * half * g as f64).exp();
        if fill > 0.0 {
            let ln_fill = fill.ln();
            a += (ln_p + first * ln_fill).exp();
            b += (ln_p + second * ln_fill).exp();
        }
        ln_p += (lambda / (g + 1) as f64).ln();
    }
    a * b
}

/// The best probe count for a blocked (or paired) link with `c` bits per item,
/// and its rate.
fn blocked_best_k(c: f64, blocks: Blocks) -> (u32, f64) {
    let fpr = |k: u32| match blocks {
        Blocks::One => blocked_fpr(c, k),
        Blocks::Two => paired_fpr(c, k),
    };
    let top = ((LN2 * c).ceil() as u32).clamp(1, MAX_HASHES);
    // A paired link's best `k` is the classic one's or one below (two blocks
    // spread the load almost as evenly as the whole link).
    let span = match blocks {
        Blocks::One => 8,
        Blocks::Two => 5,
    };
    let mut best = (top, fpr(top));
    for k in top.saturating_sub(span).max(1)..top {
        let f = fpr(k);
        if f < best.1 {
            best = (k, f);
        }
    }
    best
}

/// The smallest bits per item (and its probe count) for which a blocked link's
/// false-positive rate is at most `error`; `bpe` is the classic bits per item.
fn blocked_bits_per_item(error: f64, bpe: f64, blocks: Blocks) -> (f64, u32) {
    let b = Bisection::new(error, bpe, blocks);
    let (mut lo, mut hi) = (b.lo, b.hi);
    // Bisection: 48 rounds narrow the interval far below one bit per million
    // items (a paired link's narrower interval needs fewer).
    for _ in 0..b.rounds {
        let mid = (lo + hi) / 2.0;
        if b.fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (hi, b.k_at(hi))
}

/// The bisection that sizes a blocked or paired link: over bits per item `c`
/// in `[lo, hi]`, for `rounds` rounds.
///
/// Blocked links: `[bpe, 2·bpe + 8]`, 48 rounds, the best `k` for each `c`.
/// A paired link needs a few percent more than a classic one (module doc), so
/// its interval is `[bpe, 1.25·bpe + 1]`, 36 rounds reach the same width, and
/// `k` is fixed first: the best `k` at `1.03·bpe` (where the answer lies). One
/// rate per round instead of six: a windowed filter sizes a generation's link
/// on the main thread (0.3 ms instead of 2). If that `k` does not fit at `hi`,
/// the blocked bisection's interval and rule.
struct Bisection {
    lo: f64,
    hi: f64,
    rounds: u32,
    error: f64,
    blocks: Blocks,
    k: Option<u32>,
}

impl Bisection {
    fn new(error: f64, bpe: f64, blocks: Blocks) -> Self {
        if blocks == Blocks::Two {
            let hi = bpe * 1.25 + 1.0;
            let k = blocked_best_k(bpe * 1.03, blocks).0;
            if paired_fpr(hi, k) <= error {
                return Bisection {
                    lo: bpe,
                    hi,
                    rounds: 36,
                    error,
                    blocks,
                    k: Some(k),
                };
            }
        }
        Bisection {
            lo: bpe,
            hi: bpe * 2.0 + 8.0,
            rounds: 48,
            error,
            blocks,
            k: None,
        }
    }

    /// Whether `c` bits per item meet the error rate.
    fn fits(&self, c: f64) -> bool {
        match self.k {
            Some(k) => paired_fpr(c, k) <= self.error,
            None => blocked_best_k(c, self.blocks).1 <= self.error,
        }
    }

    /// The probe count at `c`.
    fn k_at(&self, c: f64) -> u32 {
        self.k.unwrap_or_else(|| blocked_best_k(c, self.blocks).0)
    }
}

/// The storage bits of a scaling (not guaranteed) blocked link of `entries` items
/// for the classic shape's error rate: exactly `LinkShape::blocked(classic,
/// false)?.bits`, found with the same bisection steps but stopped as soon as both
/// ends of the interval round to the same whole blocks (bits are monotone in the
/// bits per item). [`BloomChain::scale_to`] sizes hundreds of future links with it:
/// the full bisection costs about a millisecond per link.
fn blocked_scaling_bits(classic: &LinkShape, blocks: Blocks) -> Result<u64, BloomError> {
    let entries = classic.entries as f64;
    let bpe = classic.error.ln().abs() / LN2_SQUARED;
    let bits = |c: f64| -> Result<u64, BloomError> {
        let bits_f = (entries * c).ceil();
        if bits_f.is_nan() || bits_f >= (1u64 << 62) as f64 {
            return Err(BloomError::MemoryCap);
        }
        Ok((bits_f as u64).max(1).div_ceil(LINE_BITS) * LINE_BITS)
    };
    let b = Bisection::new(classic.error, bpe, blocks);
    let (mut lo, mut hi) = (b.lo, b.hi);
    for _ in 0..b.rounds {
        if bits(lo)? == bits(hi)? {
            break;
        }
        let mid = (lo + hi) / 2.0;
        if b.fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    bits(hi)
}

/// One Bloom filter of a chain.
pub struct Link {
    shape: LinkShape,
    /// Items this link accepted as new.
    items: u64,
    words: Words,
}

impl Link {
    fn new(shape: LinkShape) -> Result<Self, BloomError> {
        let words =
            usize::try_from(shape.storage.div_ceil(8)).map_err(|_| BloomError::MemoryCap)?;
        Ok(Link {
            shape,
            items: 0,
            words: Words::zeroed(words)?,
        })
    }

    pub fn shape(&self) -> &LinkShape {
        &self.shape
    }

    pub fn items(&self) -> u64 {
        self.items
    }

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
    fn contains(&self, h: &ItemHash) -> bool {
        match self.shape.layout {
            BloomLayout::Classic => {
                let m = self.shape.bits;
                let mut g = h.lo;
                for _ in 0..self.shape.hashes {
                    if !self.words.get(fastrange(g, m)) {
                        return false;
                    }
                    g = g.wrapping_add(h.hi);
                }
                true
            }
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
    fn insert(&mut self, h: &ItemHash) {
        let k = self.shape.hashes;
        let tracking = self.words.tracking();
        match self.shape.layout {
            BloomLayout::Classic => {
                let m = self.shape.bits;
                let mut g = h.lo;
                for _ in 0..k {
                    let bit = fastrange(g, m);
                    if tracking {
                        self.words.mark_bit(bit);
                    }
                    self.words.set_unmarked(bit);
                    g = g.wrapping_add(h.hi);
                }
            }
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
    fn block(&self, h: &ItemHash) -> u64 {
        fastrange(h.lo, self.shape.bits / LINE_BITS)
    }

    /// The block of a paired link that holds the item's last `floor(k/2)`
    /// probes: chosen by the low half of `lo`, where [`block`](Self::block)
    /// is chosen by its high half (`fastrange` reads the high bits).
    #[inline(always)]
    fn second_block(&self, h: &ItemHash) -> u64 {
        fastrange(h.lo.rotate_left(32), self.shape.bits / LINE_BITS)
    }

    /// Whether a paired link's first block holds the item's first `ceil(k/2)`
    /// probes, tested without a branch between them.
    #[inline(always)]
    fn first_hit(&self, h: &ItemHash) -> bool {
        match self.words.line(self.block(h)) {
            Some(line) => pair_all(line, h.hi, 0, self.shape.hashes.div_ceil(2)),
            None => false,
        }
    }

    /// Whether a paired link's second block holds the item's other probes.
    #[inline(always)]
    fn second_hit(&self, h: &ItemHash) -> bool {
        let k = self.shape.hashes;
        match self.words.line(self.second_block(h)) {
            Some(line) => pair_all(line, h.hi, k.div_ceil(2), k),
            None => false,
        }
    }

    /// Prefetches the cache lines a lookup of `h` reads: the block of a blocked
    /// link, or the first [`CLASSIC_PREFETCH`] probes of a classic one.
    #[inline(always)]
    fn prefetch(&self, h: &ItemHash) {
        match self.shape.layout {
            BloomLayout::Classic => self.prefetch_classic(h, CLASSIC_PREFETCH),
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
    fn prefetch_classic(&self, h: &ItemHash, n: u32) {
        let m = self.shape.bits;
        let mut g = h.lo;
        for _ in 0..self.shape.hashes.min(n) {
            self.words.prefetch(fastrange(g, m));
            g = g.wrapping_add(h.hi);
        }
    }

    fn try_clone(&self) -> Result<Self, BloomError> {
        Ok(Link {
            shape: self.shape,
            items: self.items,
            words: self.words.try_clone()?,
        })
    }
}

/// Probes of a classic link that [`BloomChain::prefetch`] fetches ahead.
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
        ChainOptions {
            tightening: TIGHTENING_RATIO,
            seed: None,
        }
    }
}

impl ChainOptions {
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
}

/// The fixed part of `mem_usage`, per RedisBloom's formula (spec 8.3).
pub(crate) const CHAIN_OVERHEAD: u64 = 32;
/// The per-link part of `mem_usage` (RedisBloom's formula).
pub(crate) const LINK_OVERHEAD: u64 = 64;

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
        let mut chain = BloomChain {
            links: Vec::new(),
            items: 0,
            expansion,
            rb: None,
            opts,
            pending_shape: None,
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
            let shape = match self.pending_shape {
                Some(shape) => shape,
                None => self.next_shape(next.0, next.1, next.2)?,
            };
            self.pending_shape = Some(shape);
            self.push_link(shape, limits)?;
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
                LinkShape::with_layout(entries, error * self.opts.tightening, layout, false)
            }
        }
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
        })
    }
}

#[cfg(test)]
mod tests;
