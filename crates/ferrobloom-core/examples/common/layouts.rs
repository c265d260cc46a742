//! The Bloom layouts the benchmarks compare, in one place (included with
//! `#[path]` by `bench_core` and `bench_accuracy`).
//!
//! To benchmark a new layout: add its name to `LAYOUTS` and a match arm to
//! `new_chain`; every table then gets a row per layout (select with
//! `--layouts a,b`; `bench/run.py --layouts a,b` passes it on).

#![allow(dead_code)]

use ferrobloom_core::bloom::{BloomChain, BloomLayout, Limits};

/// Every layout the core offers, in table order.
pub const LAYOUTS: &[&str] = &["classic", "blocked"];

/// Limits generous enough for every benchmark filter (up to 4 GiB, 64 links).
pub fn limits() -> Limits {
    Limits {
        max_bytes: 4 << 30,
        max_links: 64,
        ..Limits::default()
    }
}

/// A Bloom filter of `layout` for `capacity` items at `error`, growing by
/// `expansion` (0 = non-scaling).
pub fn new_chain(layout: &str, capacity: u64, error: f64, expansion: u32) -> BloomChain {
    let made = match layout {
        "classic" => BloomChain::new(capacity, error, expansion, &limits()),
        "blocked" => {
            BloomChain::with_layout(capacity, error, expansion, BloomLayout::Blocked, &limits())
        }
        other => panic!("unknown Bloom layout {other:?} (known: {LAYOUTS:?})"),
    };
    made.unwrap_or_else(|e| panic!("{layout} chain ({capacity}, {error}, {expansion}): {e:?}"))
}

/// Bytes of bit storage per item of a non-scaling filter of `layout` at `error`
/// (measured on a 2^20-item filter; allocation is lazy, so this is cheap).
pub fn bytes_per_item(layout: &str, error: f64) -> f64 {
    let n = 1u64 << 20;
    let c = new_chain(layout, n, error, 0);
    bits_of(&c) as f64 / 8.0 / n as f64
}

/// Total bits of storage over all links.
pub fn bits_of(c: &BloomChain) -> u64 {
    c.links().iter().map(|l| l.data().len() as u64 * 8).sum()
}

/// Writes every byte of the filter (zeros), so page faults happen before timing.
pub fn prefault(c: &mut BloomChain) {
    let _ = c.fill_chunks(|piece| {
        piece.fill(0);
        Ok::<(), ()>(())
    });
}
