//! Windowed filters keep their error rate at every capacity, in every layout
//! (issue: small generation links of the classic layout answered 34x their rate
//! with plain double hashing).
//!
//! Capacities 1..=64 and every 8th to 1000 (16th for the blocked layout, whose
//! sizing costs a millisecond per link), errors 1e-4 and 1e-5, scaling and
//! non-scaling, every layout a window can use: `capacity` items arrive spread
//! over 90% of the window (so they fall in several generations), and the filter
//! is probed at the last arrival, its fullest moment, with never-added items.
//! A fresh filter every `max(500, 4 · capacity)` probes, fixed seeds, and the
//! margins of `bloom/tests/small.rs`: the false positives of `N` probes, pooled
//! over capacity ranges and overall, are at most [`allowed`]`(N, error)`, which
//! a rate of at most `error` exceeds with probability below 1e-6 (Chernoff).

use super::bloom::{BloomLayout, Limits};
use super::test_rng::{allowed, random_hash, SplitMix};
use super::window::Window;

const LIMITS: Limits = Limits {
    max_bytes: 1 << 32,
    max_links: 64,
    max_filters: 64,
};
const W_MS: u64 = 60_000;
const T0: u64 = 1_767_225_600_000;
const PROBES: u64 = 2000;

/// False positives of `PROBES` probes of windows of `cap` items.
fn false_positives(
    layout: BloomLayout,
    cap: u64,
    error: f64,
    expansion: u32,
    g: &mut SplitMix,
) -> u64 {
    let every = (4 * cap).max(500);
    let (mut fp, mut done) = (0, 0);
    while done < PROBES {
        let mut w = Window::new(cap, error, expansion, layout, W_MS, &LIMITS).expect("window");
        let mut now = T0;
        let mut added = 0;
        let mut i = 0;
        while added < cap {
            now = T0 + i * (W_MS * 9 / 10) / cap;
            let h = random_hash(g);
            if !w.contains(&h, now) {
                w.add(&h, now, &LIMITS).expect("add");
                added += 1;
            }
            i += 1;
        }
        let n = every.min(PROBES - done);
        fp += (0..n).filter(|_| w.contains(&random_hash(g), now)).count() as u64;
        done += n;
    }
    fp
}

fn sweep(layout: BloomLayout) {
    let step = if layout == BloomLayout::Blocked {
        16
    } else {
        8
    };
    let caps: Vec<u64> = (1..=1000u64)
        .filter(|&c| c <= 64 || c % step == 0)
        .collect();
    let mut failed = Vec::new();
    for (mode, expansion) in [("scaling", 2u32), ("nonscaling", 0)] {
        for error in [1e-4f64, 1e-5] {
            let mut g = SplitMix(0x3d0 ^ error.to_bits() ^ u64::from(expansion));
            let counts: Vec<(u64, u64)> = caps
                .iter()
                .map(|&c| (c, false_positives(layout, c, error, expansion, &mut g)))
                .collect();
            for (lo, hi) in [(1, 8), (9, 64), (65, 256), (257, 1000), (1, 1000)] {
                let within = counts.iter().filter(|(c, _)| (lo..=hi).contains(c));
                let fp: u64 = within.clone().map(|(_, f)| f).sum();
                let n = PROBES * within.count() as u64;
                println!(
                    "window {layout:?} {mode} {error:e} capacities {lo}-{hi}: {fp} in {n} ({:.2e})",
                    fp as f64 / n as f64
                );
                if fp > allowed(n, error) {
                    failed.push(format!(
                        "{layout:?} {mode} {error:e} {lo}-{hi}: {fp} in {n}"
                    ));
                }
            }
            for (c, fp) in counts {
                if fp > allowed(PROBES, error) {
                    failed.push(format!("{layout:?} {mode} {error:e} capacity {c}: {fp}"));
                }
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn classic_windows_keep_their_error_rate_at_small_capacities() {
    sweep(BloomLayout::Classic);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn paired_windows_keep_their_error_rate_at_small_capacities() {
    sweep(BloomLayout::Paired);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn blocked_windows_keep_their_error_rate_at_small_capacities() {
    sweep(BloomLayout::Blocked);
}

/// The sweep sees the defect: windows of classic links with plain double
/// hashing (link code 0, which windows created before code 4 keep) fail it.
#[test]
fn classic_double_hashing_windows_fail_the_sweep() {
    let mut g = SplitMix(4);
    // Capacities 33..128, where this stream shows the defect: below 32 the
    // first window's rate-sized links leave double hashing within the bound
    // (measured: 0 and 4 false positives where 12 and 16 are allowed).
    let fp: u64 = (33..=128)
        .map(|c| false_positives(BloomLayout::ClassicDouble, c, 1e-4, 2, &mut g))
        .sum();
    assert!(fp > allowed(96 * PROBES, 1e-4), "{fp}");
}
