//! Link sizing: the bits and hash functions a link of each layout gets for its
//! capacity and error rate ([`LinkShape`]).
//!
//! # Classic links (identical to RedisBloom, so BF.INFO / BF.DEBUG report the same numbers)
//! For a link of `entries` items at error rate `error`:
//! `bpe = |ln(error)| / ln(2)^2`, `bits = max(1, floor(entries * bpe))` rounded up to
//! a multiple of 64, `hashes = ceil(ln(2) * bpe)`: RedisBloom's `bloom_init` with
//! `BLOOM_OPT_NOROUND`
//! (<https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/deps/bloom/bloom.c>).
//!
//! # Which classic derivation
//! A classic link places probe `i` at `g_i = lo + i·hi` mapped to a bit, plain
//! (link code 0) or mixed first (code 4; `bloom/link.rs`). Plain double hashing
//! is faster on memory-bound links but answers above the ideal rate: with the
//! stride `d = hi·m / 2^64` bits, an item whose `(j·d) mod m` is within about
//! `1/(k-1)` of 0 for a small `j` (a stride near a fraction of the link with a
//! small denominator `q`) puts its `k` probes on about `q` distinct bits, so it
//! answers about `rho^q` (`rho`, the fill, about 1/2) instead of `rho^k`. Such
//! strides have probability of order `1/((k-1)·m)` each, so the excess is at
//! most `C / ((k-1)·m)`: a constant over the link's bits, whatever its error.
//! Measured (`bloom/tests/derivation.rs`, `double_hashing_excess`, links filled
//! to capacity, errors 0.25 to 1e-9, `k` 3 to 30, `m` 64 to 10^6 bits), `C` is
//! 1.8-3.6 where the excess is resolved, every cell's three-sigma bound at most
//! 5.1; [`DOUBLE_HASHING_EXCESS`] takes `C = 8`. A new classic link gets plain
//! double hashing when that bound is at most [`DOUBLE_HASHING_SHARE`] (1%) of
//! its error, `(k-1)·m·error >= 800`, or when `k = 1` (one probe: the two are
//! the same), and mixed probes otherwise ([`classic_derivation`]). Each link is
//! judged on its own shape (a scaling chain's later links have tighter errors
//! and more bits). At 1% a link needs about 1,400 items (NONSCALING) or 2,100
//! (scaling, first link at 0.5%); at 1e-4 about 32,000 / 55,000; at 1e-9 about
//! `3·10^10` bits (3.4 GB), so links at tight errors keep the mixed probes and
//! their cost.
//! The rule reads only the shape (`bits`, `hashes`, `error`), so a primary, its
//! replicas and an AOF replay pick the same derivation.
//!
//! # Blocked links
//! Items land in 512-bit blocks by hash, so the number of items per block is
//! (nearly) Poisson with mean `512 / c` for `c` bits per item, and an item's
//! false-positive rate is the average over blocks of `(1 - (1 - 1/512)^(k j))^k`
//! for a block holding `j` items. A blocked link gets the smallest `c` (found by
//! bisection, `k` optimised for each `c`) whose rate is at most the link's error
//! rate, so the chain keeps RedisBloom's error guarantees; that costs +1.3% bits
//! at 10%, +4.4% at 1%, +9.5% at 0.1% and +17% at 0.01% over a classic link.
//! `bits` is rounded up to a multiple of 512 (whole blocks).
//!
//! # Paired links
//! Sizing as for blocked links, with the rate of a block replaced by the product
//! of two blocks' rates: each block receives Poisson(`2 · 512 / c`) groups of
//! `k/2` probes on average, and a lookup passes both, so the rate is
//! `E[fill^ceil(k/2)] · E[fill^floor(k/2)]`. The bisection fixes `k` first (the
//! best at `1.03 · bpe`) and runs 36 rounds over `[bpe, 1.25·bpe + 1]`. Cost over
//! a classic link: +0.7% bits at 1%, +1.3% at 0.16%, +2.8% at 0.016% (a windowed
//! generation's first link at 1% and 0.1%), +7.7% at 0.0001%.

use super::{BloomError, BloomLayout, MAX_HASHES};
use crate::bits::LINE_BITS;

/// `ln(2)` as RedisBloom writes it (one digit short of `f64::consts::LN_2`; the
/// exact value decides `k = ceil(ln 2 * bpe)` at boundaries, so keep RedisBloom's).
#[allow(clippy::approx_constant)]
pub(super) const LN2: f64 = 0.693147180559945;
/// `ln(2)^2` as RedisBloom writes it.
pub(super) const LN2_SQUARED: f64 = 0.480453013918201;

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
    /// Sizes a classic link exactly as RedisBloom does (module doc).
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
            BloomLayout::ClassicDouble => Ok(LinkShape {
                layout: BloomLayout::ClassicDouble,
                ..classic
            }),
            BloomLayout::Blocked => Self::blocked(classic, guaranteed, Blocks::One),
            BloomLayout::Paired => Self::blocked(classic, guaranteed, Blocks::Two),
            BloomLayout::RedisBloom => Err(BloomError::InvalidParams(
                "the RedisBloom layout is only for migrated filters",
            )),
        }
    }

    /// The blocked (or paired) shape for a link whose classic shape is `classic`.
    pub(super) fn blocked(
        classic: LinkShape,
        guaranteed: bool,
        blocks: Blocks,
    ) -> Result<Self, BloomError> {
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
        let hashes = hashes_f as u32;
        Ok(LinkShape {
            entries,
            error,
            bits,
            hashes,
            layout: classic_derivation(bits, hashes, error),
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

/// `C` of the bound on plain double hashing's excess (module doc, "Which
/// classic derivation"): measured 1.8-3.6, every three-sigma bound at most 5.1
/// (`bloom/tests/derivation.rs`, `double_hashing_excess`); taken with a margin.
pub const DOUBLE_HASHING_EXCESS: f64 = 8.0;
/// The share of a link's error rate plain double hashing's excess bound may
/// take for the link to get it.
pub const DOUBLE_HASHING_SHARE: f64 = 0.01;

/// The derivation of a new classic link of `bits` bits, `hashes` probes and
/// rate `error` (module doc, "Which classic derivation"): plain double hashing
/// ([`BloomLayout::ClassicDouble`], code 0) when its excess bound
/// `DOUBLE_HASHING_EXCESS / ((hashes - 1) · bits)` is at most
/// `DOUBLE_HASHING_SHARE · error` (or one probe, where the two are the same
/// thing), mixed probes ([`BloomLayout::Classic`], code 4) otherwise. A pure
/// function of the shape, so a primary, its replicas and an AOF replay pick
/// the same.
pub fn classic_derivation(bits: u64, hashes: u32, error: f64) -> BloomLayout {
    let spread = f64::from(hashes.saturating_sub(1)) * bits as f64;
    if hashes <= 1 || DOUBLE_HASHING_EXCESS <= DOUBLE_HASHING_SHARE * error * spread {
        BloomLayout::ClassicDouble
    } else {
        BloomLayout::Classic
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
pub(super) enum Blocks {
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
pub(super) fn blocked_fpr(c: f64, k: u32) -> f64 {
    let kf = f64::from(k);
    block_moment(LINE_BITS as f64 / c, kf, kf)
}

/// Standard deviations past the mean where the sums over a Poisson count stop
/// ([`poisson_sum_end`]).
const POISSON_TAIL_SDS: f64 = 12.0;
/// Counts added to that end, for small means (where the tail is not normal).
const POISSON_TAIL_EXTRA: f64 = 40.0;

/// The last count a sum over Poisson(`lambda`) counts takes,
/// `ceil(lambda + 12·sqrt(lambda) + 40)`: with `t = 12·sqrt(lambda) + 40`,
/// the mass beyond is below `exp(-t²/(2·(lambda + t/3)))` (Bernstein), at
/// most `e^-60` (at `lambda = 0`; `e^-72` for large means), far below any
/// rate a link is sized for.
pub(crate) fn poisson_sum_end(lambda: f64) -> f64 {
    (lambda + POISSON_TAIL_SDS * lambda.sqrt() + POISSON_TAIL_EXTRA).ceil()
}

/// `E[fill^j]` over 512-bit blocks that receive Poisson(`lambda`) groups of
/// `per_group` probes each, where `fill = 1 - (1 - 1/512)^(per_group · groups)`.
fn block_moment(lambda: f64, per_group: f64, j: f64) -> f64 {
    let ln_keep = (1.0 - 1.0 / LINE_BITS as f64).ln();
    // Sum over the group count up to far into the tail; log-space so large
    // means can't underflow the first terms.
    let last = poisson_sum_end(lambda) as u64;
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
pub(super) fn paired_fpr(c: f64, k: u32) -> f64 {
    let lambda = 2.0 * LINE_BITS as f64 / c;
    let half = f64::from(k) / 2.0;
    let first = f64::from(k.div_ceil(2));
    let second = f64::from(k / 2);
    // `block_moment` for both exponents in one pass over the group counts.
    let ln_keep = (1.0 - 1.0 / LINE_BITS as f64).ln();
    let last = poisson_sum_end(lambda) as u64;
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
/// bits per item). [`BloomChain::scale_to`](super::BloomChain::scale_to) sizes
/// hundreds of future links with it: the full bisection costs about a
/// millisecond per link.
pub(super) fn blocked_scaling_bits(classic: &LinkShape, blocks: Blocks) -> Result<u64, BloomError> {
    let entries = classic.entries as f64;
    let bpe = classic.error.ln().abs() / LN2_SQUARED;
    let bits = |c: f64| -> Result<u64, BloomError> {
        let bits_f = (entries * c).ceil();
        if bits_f.is_nan() || bits_f >= (1u64 << 62) as f64 {
            return Err(BloomError::MemoryCap);
        }
        Ok((bits_f as u64).max(1).div_ceil(LINE_BITS) * LINE_BITS)
    };
    // Every bisection's interval lies within `[bpe, 2·bpe + 8]`: when both
    // ends round to the same whole blocks (a link of a few items), so does the
    // answer, without the rates `Bisection::new` evaluates (a paired link's
    // cost 40 µs: MAXSCALEDCAPACITY of 1,024 one-item links took 43 ms).
    let widest = bits(bpe * 2.0 + 8.0)?;
    if bits(bpe)? == widest {
        return Ok(widest);
    }
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
