//! Link sizing: RedisBloom's classic sizes, the guaranteed sizing, blocked and
//! paired links' extra bits and the fast blocked sizing.

use super::*;
use crate::bloom::sizing::{blocked_fpr, paired_fpr};

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn link_sizes_match_redisbloom_table() {
    // (error, capacity) -> (link bytes, hashes, BF.INFO Size), as RedisBloom
    // computes them (`bloom_init` in deps/bloom/bloom.c, `BFMemUsage` in src/rebloom.c).
    let cases: &[(f64, u64, u64, u32, u64)] = &[
        (0.01, 10, 16, 8, 112),
        (0.001, 100, 200, 11, 296),
        (0.01, 100, 144, 8, 240),
        (0.05, 1000, 960, 6, 1056),
        (0.001, 50000, 98880, 11, 98976),
        (0.000001, 300_000_000, 1_132_420_136, 21, 1_132_420_232),
    ];
    for &(err, cap, bytes, k, size) in cases {
        let shape = LinkShape::new(cap, err / 2.0).unwrap();
        assert_eq!(shape.bytes(), bytes, "bytes for {err} {cap}");
        assert_eq!(shape.bits, bytes * 8);
        assert_eq!(shape.hashes, k, "hashes for {err} {cap}");
        assert_eq!(32 + 64 + shape.bytes(), size);
    }
    // BF.INSERT x CAPACITY 3 NONSCALING: 8 bytes, 7 hashes, Size 104.
    let chain = BloomChain::new(3, 0.01, 0, &Limits::default()).unwrap();
    assert_eq!(chain.mem_usage(), 104);
    assert_eq!(chain.links()[0].shape().hashes, 7);
    let big = BloomChain::new(300_000_000, 0.000001, 2, &Limits::default());
    // 1.13 GB is within the default 4 GiB cap: only check the arithmetic here.
    drop(big);
}

#[test]
fn blocked_links_cost_the_predicted_extra_bits() {
    // (link error, extra bits over classic): `bloom/sizing.rs`'s module doc, and
    // `accuracy::false_positive_rate_stays_below_requested` checks that the extra
    // bits are enough.
    for &(err, lo, hi) in &[
        (0.05, 0.005, 0.03),
        (0.005, 0.03, 0.06),
        (0.0005, 0.08, 0.11),
        (0.00005, 0.15, 0.19),
    ] {
        let classic = LinkShape::new(1_000_000, err).unwrap();
        let blocked = LinkShape::with_layout(1_000_000, err, BloomLayout::Blocked, false).unwrap();
        assert_eq!(blocked.layout, BloomLayout::Blocked);
        assert_eq!(blocked.bits % 512, 0);
        assert!(blocked.hashes <= classic.hashes);
        let extra = blocked.bits as f64 / classic.bits as f64 - 1.0;
        assert!(extra > lo && extra < hi, "{err}: +{extra}");
        assert!(blocked_fpr(blocked.bits as f64 / 1e6, blocked.hashes) <= err);
    }
    // Tiny links are whole blocks; the shape survives the header.
    let limits = Limits::default();
    let c = BloomChain::with_layout(3, 0.01, 0, BloomLayout::Blocked, &limits).unwrap();
    assert_eq!(c.links()[0].shape().bits, 512);
    let d = BloomChain::from_header(&c.encode_header(), &limits).unwrap();
    assert_eq!(d.links()[0].shape(), c.links()[0].shape());
    // Growth keeps the layout.
    let mut g = BloomChain::with_layout(10, 0.01, 2, BloomLayout::Blocked, &limits).unwrap();
    for i in 0..100 {
        g.add(&h(&i.to_string()), &limits).unwrap();
    }
    assert!(g.links().len() >= 3);
    assert!(g
        .links()
        .iter()
        .all(|l| l.shape().layout == BloomLayout::Blocked));
    for i in 0..100 {
        assert!(g.contains(&h(&i.to_string())));
    }
}

#[test]
fn guaranteed_sizing_adds_bits_only_where_needed() {
    for &(err, cap) in &[(0.1, 1_000_000u64), (0.01, 1_000_000), (0.0001, 1000)] {
        let rb = LinkShape::new(cap, err).unwrap();
        let g = LinkShape::guaranteed(cap, err).unwrap();
        assert_eq!(rb.hashes, g.hashes);
        assert!(g.bits >= rb.bits);
        let extra = g.bits as f64 / rb.bits as f64 - 1.0;
        assert!(extra < 0.04, "{err}: {} vs {}", g.bits, rb.bits);
        if err == 0.1 {
            assert!(extra > 0.03, "10% needs about 3.7% more bits: {extra}");
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn fast_blocked_sizing_gives_the_full_sizing_bits() {
    let check = |entries: u64, error: f64| {
        let Ok(classic) = LinkShape::new(entries, error) else {
            return;
        };
        for blocks in [Blocks::One, Blocks::Two] {
            let full = LinkShape::blocked(classic, false, blocks).unwrap();
            assert_eq!(
                blocked_scaling_bits(&classic, blocks).unwrap(),
                full.bits,
                "{entries} at {error}, {blocks:?}"
            );
        }
    };
    // Links of a few items (whole blocks at either end of the interval: the
    // shortcut) and of any size.
    for n in 1..=64u64 {
        for error in [1e-2, 1e-4, 1e-7, 1e-10] {
            check(n, error);
        }
    }
    let mut rng = SplitMix(42);
    for _ in 0..300 {
        let entries = 1 + rng.next() % 50_000_000;
        check(
            entries,
            10f64.powf(-(1.0 + (rng.next() % 1_000_000) as f64 / 100_000.0)),
        );
    }
    // Each link the simulation sizes is the link the chain then adds.
    let limits = Limits::default();
    let mut c =
        BloomChain::with_options(7, 0.02, 3, BloomLayout::Blocked, opts(0.7, None), &limits)
            .unwrap();
    for i in 0..20_000 {
        c.add(&h(&format!("b{i}")), &limits).unwrap();
    }
    let n = c.links().len();
    let capacity = c.capacity();
    let bytes: u64 = c.links().iter().map(|l| l.shape().bytes()).sum();
    let fit = Limits {
        max_links: n as u32,
        max_bytes: c.mem_usage(),
        ..limits
    };
    assert_eq!(
        c.scale_to(None, &fit),
        Ok(capacity),
        "{n} links, {bytes} bytes"
    );
    let short = Limits {
        max_bytes: c.mem_usage() - 1,
        ..fit
    };
    assert!(c.scale_to(None, &short).unwrap() < capacity);
}

#[test]
fn paired_links_meet_their_error_with_a_few_percent_over_classic() {
    // (error, lowest and highest extra bits over a classic link)
    for &(err, lo, hi) in &[
        (0.01, 0.0, 0.012),
        (0.0016, 0.008, 0.018),
        (0.00016, 0.02, 0.035),
        (0.000001, 0.06, 0.09),
    ] {
        let classic = LinkShape::new(262_144, err).unwrap();
        let paired = LinkShape::with_layout(262_144, err, BloomLayout::Paired, false).unwrap();
        assert_eq!(paired.layout, BloomLayout::Paired);
        assert_eq!(paired.bits % 512, 0);
        let extra = paired.bits as f64 / classic.bits as f64 - 1.0;
        assert!(extra >= lo && extra < hi, "{err}: +{extra}");
        assert!(paired_fpr(paired.bits as f64 / 262_144.0, paired.hashes) <= err);
    }
}
