//! The error rate at every size (issue: small classic links set far fewer
//! distinct bits than their sizing assumes with plain double hashing).
//!
//! Every layout ferrobloom creates, scaling (one link at `error / 2`) and
//! non-scaling (one link at `error`), every capacity 1..=1000 (see
//! [`capacities`]) and 2^12, 2^16, 2^20, errors 0.5 down to 1e-9: filled to
//! capacity with random item hashes (XXH3-128 of distinct items is modelled as
//! uniform), then probed with never-added ones.
//!
//! # Sound margins
//! A check passes when the false positives counted in `N` probes are at most
//! [`allowed`]`(N, error)`: the largest count a filter whose rate is at most
//! `error` exceeds with probability below 1e-6 (Chernoff's bound on the
//! binomial tail, `P(X >= t) <= exp(-N · D(t/N || error))`). A small filter's
//! own rate varies with its bits, so each capacity is rebuilt (from an empty
//! copy: no resizing) every `max(200, 4 · capacity)` probes: each instance
//! answers few probes, and the count is binomial in the average rate the promise
//! is about. Fixed seeds: the counts are the same on every run. Where `N ·
//! error` is far below 1 (1e-8 and 1e-9), a check only catches a gross excess:
//! that is where plain double hashing fails (a link of 7 items at 1e-7 answered
//! 9e-4), and measuring such rates closely takes 10^10 probes.
//!
//! Checks: each capacity on its own, capacities pooled in ranges (1-8, 9-32,
//! 33-128, 129-512, 513-1000, all), and each large capacity.

use super::*;
use crate::test_rng::{allowed, random_hash};

const LIMITS: Limits = Limits {
    max_bytes: 1 << 32,
    max_links: 64,
    max_filters: 64,
};

const ERRORS: [f64; 10] = [0.5, 0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9];
/// Probes per capacity of the dense sweep.
const PROBES: u64 = 4000;
/// Pooled ranges of the dense sweep.
const RANGES: [(u64, u64); 6] = [
    (1, 8),
    (9, 32),
    (33, 128),
    (129, 512),
    (513, 1000),
    (1, 1000),
];

/// An empty filter's copy filled to its capacity with random items.
fn fill(empty: &BloomChain, cap: u64, g: &mut SplitMix) -> BloomChain {
    let mut c = empty.try_clone().expect("copy");
    while c.items() < cap {
        c.add(&random_hash(g), &LIMITS).expect("add");
    }
    c
}

/// False positives in `probes` probes of filters of `cap` items, rebuilt every
/// `max(200, 4 · cap)` probes.
fn false_positives(
    layout: BloomLayout,
    cap: u64,
    error: f64,
    expansion: u32,
    probes: u64,
    g: &mut SplitMix,
) -> u64 {
    let empty = BloomChain::with_layout(cap, error, expansion, layout, &LIMITS).expect("create");
    let every = (4 * cap).max(200);
    let mut fp = 0;
    let mut done = 0;
    while done < probes {
        let c = fill(&empty, cap, g);
        let n = every.min(probes - done);
        fp += (0..n).filter(|_| c.contains(&random_hash(g))).count() as u64;
        done += n;
    }
    fp
}

/// The dense sweep of one layout: every failed check, and a line per error
/// with the worst ratio of a pooled range's rate to the error.
fn dense(layout: BloomLayout, errors: &[f64]) -> (Vec<String>, String) {
    let mut failed = Vec::new();
    let mut report = String::new();
    for (mode, expansion) in [("scaling", 2u32), ("nonscaling", 0)] {
        for &error in errors {
            let mut g = SplitMix(0x5eed ^ error.to_bits() ^ u64::from(expansion));
            let counts: Vec<(u64, u64)> = capacities(layout)
                .map(|cap| {
                    let fp = false_positives(layout, cap, error, expansion, PROBES, &mut g);
                    (cap, fp)
                })
                .collect();
            for &(cap, fp) in &counts {
                if fp > allowed(PROBES, error) {
                    failed.push(format!(
                        "{layout:?} {mode} {error:e} capacity {cap}: {fp} in {PROBES}"
                    ));
                }
            }
            let mut worst = (0.0, 0, 0);
            for (lo, hi) in RANGES {
                let within = counts.iter().filter(|(c, _)| (lo..=hi).contains(c));
                let fp: u64 = within.clone().map(|(_, fp)| fp).sum();
                let n = PROBES * within.count() as u64;
                if fp > allowed(n, error) {
                    failed.push(format!(
                        "{layout:?} {mode} {error:e} capacities {lo}-{hi}: {fp} in {n} \
                         (rate {:.2e})",
                        fp as f64 / n as f64
                    ));
                }
                let ratio = fp as f64 / n as f64 / error;
                if ratio > worst.0 {
                    worst = (ratio, lo, hi);
                }
            }
            report.push_str(&format!(
                "{layout:?} {mode} {error:e}: worst range {}-{} at {:.2}x the error\n",
                worst.1, worst.2, worst.0
            ));
        }
    }
    (failed, report)
}

/// The capacities of the dense sweep: every one from 1 to 1000 for the
/// classic layout; for the blocked and paired layouts (whose sizing takes a
/// millisecond per link, so 20,000 links would take the test's whole budget)
/// every one to 64, then every 16th (paired) or 32nd (blocked).
fn capacities(layout: BloomLayout) -> impl Iterator<Item = u64> + Clone {
    let step = match layout {
        BloomLayout::Blocked => 32,
        BloomLayout::Paired => 16,
        _ => 1,
    };
    (1..=1000u64).filter(move |&c| c <= 64 || c % step == 0)
}

fn dense_sweep(layout: BloomLayout) {
    let (failed, report) = dense(layout, &ERRORS);
    println!("{report}");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn classic_keeps_its_error_rate_at_every_small_capacity() {
    dense_sweep(BloomLayout::Classic);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn blocked_keeps_its_error_rate_at_every_small_capacity() {
    dense_sweep(BloomLayout::Blocked);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn paired_keeps_its_error_rate_at_every_small_capacity() {
    dense_sweep(BloomLayout::Paired);
}

/// The sweep has the power to see the defect: classic links with plain double
/// hashing (link code 0, what every classic filter had before code 4) fail it.
#[test]
fn the_sweep_fails_classic_double_hashing() {
    let (failed, _) = dense(BloomLayout::ClassicDouble, &[1e-5]);
    assert!(
        failed.iter().any(|f| f.contains("capacities 1-8")),
        "{failed:?}"
    );
    let fp = false_positives(
        BloomLayout::ClassicDouble,
        7,
        1e-5,
        0,
        200_000,
        &mut SplitMix(7),
    );
    assert!(fp > allowed(200_000, 1e-5) * 10, "{fp}");
}

/// 2^12, 2^16 and (classic) 2^20 items, one filter each (a large filter's
/// rate hardly varies with its bits), every layout, both modes.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn every_layout_keeps_its_error_rate_at_large_capacities() {
    let mut failed = Vec::new();
    let mut report = String::new();
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        for (mode, expansion) in [("scaling", 2u32), ("nonscaling", 0)] {
            for error in [1e-2f64, 1e-4, 1e-6, 1e-9] {
                let largest = if layout.is_classic() { 20 } else { 16 };
                for cap in [1u64 << 12, 1 << 16, 1 << 20]
                    .into_iter()
                    .filter(|c| *c <= 1 << largest)
                {
                    let probes = 2_000_000;
                    let mut g = SplitMix(cap ^ error.to_bits());
                    let empty = BloomChain::with_layout(cap, error, expansion, layout, &LIMITS)
                        .expect("create");
                    let c = fill(&empty, cap, &mut g);
                    let fp = (0..probes)
                        .filter(|_| c.contains(&random_hash(&mut g)))
                        .count() as u64;
                    report.push_str(&format!(
                        "{layout:?} {mode} {error:e} {cap}: {:.2e}\n",
                        fp as f64 / probes as f64
                    ));
                    if fp > allowed(probes, error) {
                        failed.push(format!(
                            "{layout:?} {mode} {error:e} {cap}: {fp} in {probes}"
                        ));
                    }
                }
            }
        }
    }
    println!("{report}");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn allowed_is_a_binomial_upper_bound() {
    // Mean 10 (sd ~3.2): well above the mean, below mean + 10 sd.
    let a = allowed(1_000_000, 1e-5);
    assert!((25..45).contains(&a), "{a}");
    // Tiny means: a couple of hits at most.
    assert!((1..=3).contains(&allowed(4000, 1e-9)));
    // Large means: about mean + 5 sd.
    let a = allowed(4000, 0.5);
    assert!((2000 + 100..2000 + 200).contains(&a), "{a}");
}

/// The table of docs/performance.md (run with `--ignored --nocapture`): the
/// rate of NONSCALING filters filled to capacity, 1,000,000 probes, a fresh
/// filter every `max(1000, 4 · capacity)` probes, per layout, with classic
/// links as they were before link code 4 (plain double hashing) and after.
#[test]
#[ignore]
fn error_rate_table() {
    let cases = [
        (1u64, 1e-4),
        (4, 1e-4),
        (7, 1e-5),
        (40, 1e-4),
        (100, 1e-5),
        (400, 1e-5),
        (1000, 1e-6),
        (7, 1e-7),
    ];
    println!("| capacity | error | classic before | classic after | paired | blocked |");
    for (cap, error) in cases {
        let mut row = format!("| {cap} | {error:e} |");
        for layout in [
            BloomLayout::ClassicDouble,
            BloomLayout::Classic,
            BloomLayout::Paired,
            BloomLayout::Blocked,
        ] {
            let empty = BloomChain::with_layout(cap, error, 0, layout, &LIMITS).expect("create");
            let mut g = SplitMix(cap ^ error.to_bits());
            let (mut fp, mut done) = (0u64, 0u64);
            while done < 1_000_000 {
                let c = fill(&empty, cap, &mut g);
                let n = (4 * cap).max(1000).min(1_000_000 - done);
                fp += (0..n).filter(|_| c.contains(&random_hash(&mut g))).count() as u64;
                done += n;
            }
            row.push_str(&format!(" {:.1e} |", fp as f64 / 1e6));
        }
        println!("{row}");
    }
}

/// A dropped chain's pages are released in steps of at most the budget (whole
/// pages inside each link's array), link after link, and read as zero after.
#[test]
fn release_step_walks_every_link_within_the_budget() {
    let limits = Limits::default();
    let mut c = BloomChain::new(200_000, 0.01, 2, &limits).unwrap();
    for i in 0..500_000u32 {
        c.add(&h(&format!("r{i}")), &limits).unwrap();
    }
    assert!(c.links().len() >= 2);
    assert!(c.contains(&h("r7")));
    let total: u64 = c.links().iter().map(|l| l.words.alloc_bytes() as u64).sum();
    let budget = 64 << 10;
    let (mut at, mut steps) = (0u64, 0u64);
    while let Some(next) = c.release_step(at, budget) {
        assert!(next > at && next - at <= budget, "{at} -> {next}");
        at = next;
        steps += 1;
    }
    assert_eq!(at, total);
    assert!(steps >= total / budget, "{steps} steps for {total} bytes");
    // Every whole page reads as zero: no added item is found any more (a
    // link's first and last partial pages keep their bits).
    let found = (0..500_000u32)
        .filter(|i| c.contains(&h(&format!("r{i}"))))
        .count();
    assert!(found < 5_000, "{found}");
    assert_eq!(c.release_step(total, budget), None);
}
