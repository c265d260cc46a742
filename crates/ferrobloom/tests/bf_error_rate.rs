//! Every filter keeps its error rate at small capacities, on a real server (issue:
//! classic links with plain double hashing answered up to 100x their rate; a filter of
//! 7 items at 1e-5 answered 1.0e-3): plain NONSCALING filters and windowed ones
//! (`WINDOW 3600`, scaling), every layout, errors 1e-4 and 1e-5, capacities 1..=20 and
//! 25..=1000 in steps, each filled to capacity with BF.MADD and probed with 6,000
//! never-added items through BF.MEXISTS. The false positives pooled over capacity
//! ranges stay within a sound bound: at most what a rate of `error` exceeds with
//! probability below 1e-6 (Chernoff's bound on the binomial tail). Fixed items.

mod common;

use common::bf::*;
use common::*;
use ferrobloom_core::stats::max_false_positives as allowed;
use redis::{Connection, Value};

const PROBES: usize = 6000;

fn capacities() -> Vec<usize> {
    (1..=20)
        .chain([25, 30, 40, 50, 70, 100, 150, 200, 300, 400, 500, 700, 1000])
        .collect()
}

/// False positives of `PROBES` never-added items in a filter of `cap` items.
fn false_positives(con: &mut Connection, key: &str, cap: usize, probes: &[String]) -> u64 {
    let items = numbered(&format!("{key}:"), cap);
    for chunk in items.chunks(1000) {
        let v = rawv(con, &with_items(&format!("BF.MADD {key}"), chunk));
        assert!(matches!(v, Value::Array(_)), "{}", show(&v));
    }
    let mut fp = 0;
    for chunk in probes.chunks(2000) {
        for v in items_of(rawv(con, &with_items(&format!("BF.MEXISTS {key}"), chunk))) {
            if matches!(v, Value::Int(1)) {
                fp += 1;
            }
        }
    }
    fp
}

fn items_of(v: Value) -> Vec<Value> {
    common::bf::items(v)
}

#[test]
fn small_filters_keep_their_error_rate_in_every_layout() {
    let s = Server::start();
    let mut con = s.conn();
    let probes = numbered("never-added:", PROBES);
    let mut failed = Vec::new();
    for kind in ["NONSCALING", "WINDOW 3600"] {
        for layout in ["classic", "blocked", "paired"] {
            for error in [1e-4, 1e-5] {
                let mut counts = Vec::new();
                for cap in capacities() {
                    let key = format!("f{cap}");
                    ok(
                        &mut con,
                        &format!("BF.RESERVE {key} {error} {cap} {kind} LAYOUT {layout}"),
                    );
                    counts.push((cap, false_positives(&mut con, &key, cap, &probes)));
                    assert_eq!(int(&mut con, &format!("DEL {key}")), 1);
                }
                for (lo, hi) in [(1, 8), (9, 100), (101, 1000), (1, 1000)] {
                    let within = counts.iter().filter(|(c, _)| (lo..=hi).contains(c));
                    let fp: u64 = within.clone().map(|(_, f)| f).sum();
                    let n = (PROBES * within.count()) as u64;
                    eprintln!(
                        "{kind} {layout} {error:e} capacities {lo}-{hi}: {fp} in {n} ({:.1e})",
                        fp as f64 / n as f64
                    );
                    if fp > allowed(n, error) {
                        failed.push(format!("{kind} {layout} {error:e} {lo}-{hi}: {fp} in {n}"));
                    }
                }
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
