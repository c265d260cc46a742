//! Unit tests of Bloom filter chains, by topic; the helpers they share.

use super::*;

pub(crate) use crate::test_rng::SplitMix;

mod accuracy;
mod chain;
mod derivation;
mod encoding;
mod merge;
mod options;
mod redisbloom;
mod sizing;
mod small;

fn h(s: &str) -> ItemHash {
    ItemHash::of(s.as_bytes())
}

fn rb_chain(cap: u64, error: f64, expansion: u32) -> BloomChain {
    BloomChain::with_layout(
        cap,
        error,
        expansion,
        BloomLayout::RedisBloom,
        &Limits::default(),
    )
    .unwrap()
}

fn opts(tightening: f64, seed: Option<[u8; 32]>) -> ChainOptions {
    ChainOptions { tightening, seed }
}
