//! What a BF creation is made of: the parameters every BF parser (strict,
//! RedisBloom 2.x's lenient one, the option table) produces and the Redis layer
//! creates and replicates a filter from, and the configured defaults they start
//! from. A module of its own so that the parsers depend on it, never on each other.

use ferrobloom_core::bloom::{BloomLayout, ChainOptions, LinkShape};

/// A client's BF.RESERVE / BF.INSERT / `bf-error-rate` above this creates a
/// filter of this rate, in every layout, as RedisBloom 8 does (with a log
/// line). RedisBloom 2.8 keeps such rates (`BF.RESERVE k 0.5 1000`: 3 hashes,
/// 368 bytes there): what a 2.x primary or AOF writes is parsed without the
/// cap (`lenient.rs`); docs/compatibility.md.
pub const MAX_ERROR_RATE: f64 = 0.25;

/// Defaults for what a command does not say (from the module configuration).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BloomDefaults {
    pub error: f64,
    pub capacity: u64,
    pub expansion: u32,
    pub layout: BloomLayout,
    /// The tightening ratio and seed of a filter created without `TIGHTENING`
    /// or `SEED` (valkey-bloom's `bloom-tightening-ratio` and
    /// `bloom-use-random-seed` settings; [`ChainOptions::REDISBLOOM`] unless
    /// configured). Not for RedisBloom's layout or windowed filters, which have
    /// no place for them.
    pub opts: ChainOptions,
}

/// Everything needed to create a filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CreateParams {
    pub error: f64,
    pub capacity: u64,
    /// 0 = non-scaling.
    pub expansion: u32,
    /// ferrobloom's `LAYOUT classic|blocked|paired|redisbloom` option (default:
    /// `bf.bf-layout`).
    pub layout: BloomLayout,
    /// The growth a non-scaling filter with RedisBloom's layout records (its
    /// header's `growth`): 2, or the EXPANSION RedisBloom 2.x's BF.INSERT was
    /// given beside NONSCALING.
    pub nonscaling_growth: u32,
    /// valkey-bloom's `TIGHTENING ratio` and `SEED 32-bytes` (default: RedisBloom's
    /// 0.5, no seed).
    pub opts: ChainOptions,
    /// valkey-bloom's `VALIDATESCALETO n`: refuse the creation when the filter
    /// could never hold `n` items (checked by the handler against the limits).
    pub scale_to: Option<u64>,
    /// `WINDOW seconds`, in milliseconds: a windowed filter (`core::window`).
    pub window_ms: Option<u64>,
    /// The first link the primary created (a replicated BF.RESERVE's internal
    /// `SHAPES`): taken instead of sizing it here, when it fits.
    pub first_link: Option<LinkShape>,
}

impl CreateParams {
    /// A creation that says nothing but what `d` gives: a scaling (or, with
    /// expansion 0, non-scaling) filter in `d`'s layout with `d`'s tightening
    /// and seed (RedisBloom's for RedisBloom's layout, which has no place for
    /// others), no window. Every other field is set with `..` from this.
    pub fn from_defaults(d: &BloomDefaults) -> CreateParams {
        CreateParams {
            error: d.error,
            capacity: d.capacity,
            expansion: d.expansion,
            layout: d.layout,
            nonscaling_growth: 2,
            opts: if d.layout == BloomLayout::RedisBloom {
                ChainOptions::REDISBLOOM
            } else {
                d.opts
            },
            scale_to: None,
            window_ms: None,
            first_link: None,
        }
    }
}
