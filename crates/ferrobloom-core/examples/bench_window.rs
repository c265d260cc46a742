//! Windowed Bloom filters in process, no Redis: ns per item of a BF.MADD-like
//! and a BF.MEXISTS-like batch on a windowed filter (`Window`) against a plain
//! scaling filter of the same capacity and error, the way the server runs them
//! (16-byte items; the plain filter's hashed
//! [`LOOKAHEAD`](ferrobloom_core::hash::LOOKAHEAD) ahead with its prefetches,
//! the windowed filter's hashed first and handed to `Window::add_batch` /
//! `Window::contains_batch`, as `crates/ferrobloom/src/redis/window.rs` and
//! `crates/ferrobloom/src/redis/membership.rs` do; no reply encoding, no argument parsing).
//!
//! Method, per capacity (the server bench's `window` part, in process): the
//! plain filter gets `capacity` items; the windowed filter (window 60 s, test
//! clock) a quarter of its capacity per generation for six generations, so five
//! are live and full when the lookups run. Adds are timed over the whole fill,
//! in batches of `--batch`. Lookups: half items of the live window, half never
//! added, in batches of `--batch`, `--lookups` items per round.
//!
//! Run: `cargo run --release -p ferrobloom-core --example bench_window --
//!       [--capacities 1M,10M] [--error 0.01] [--batch 1000] [--lookups 2000000]
//!       [--rounds 3] [--layout paired|classic|blocked] [--only plain|window]`
//! Every figure is the fastest of `--rounds` rounds (adds: fresh filters each).
//! Output: one JSON object per row on stdout.

#[path = "common/bench.rs"]
mod common;

use std::hint::black_box;
use std::time::Instant;

use common::{Args, Json};
use ferrobloom_core::bloom::{BloomChain, BloomLayout, Limits};
use ferrobloom_core::hash::{HashAhead, ItemHash};
use ferrobloom_core::window::Window;

const WINDOW_MS: u64 = 60_000;
const T0: u64 = 1_800_000_000_000;

fn items(tag: u64, from: u64, n: u64) -> Vec<[u8; 16]> {
    (from..from + n).map(|i| common::item16(tag, i)).collect()
}

fn add_plain(c: &mut BloomChain, batch: &[[u8; 16]], lim: &Limits) -> u64 {
    let mut ahead = HashAhead::new(batch.iter().map(|v| v.as_slice()), ItemHash::of);
    let mut n = 0;
    while let Some(h) = ahead.next_with(|h| c.prefetch(h)) {
        n += u64::from(c.add(&h, lim).unwrap_or(false));
    }
    n
}

fn add_window(w: &mut Window, batch: &[[u8; 16]], now: u64, lim: &Limits) -> u64 {
    let hashes: Vec<ItemHash> = batch.iter().map(|v| ItemHash::of(v)).collect();
    let mut n = 0;
    w.add_batch(&hashes, now, lim, |r| {
        n += u64::from(r.is_ok_and(|a| a.is_new()));
        true
    });
    drop(w.take_retired());
    n
}

fn look_plain(c: &BloomChain, batch: &[[u8; 16]]) -> u64 {
    let mut ahead = HashAhead::new(batch.iter().map(|v| v.as_slice()), ItemHash::of);
    let mut n = 0;
    while let Some(h) = ahead.next_with(|h| c.prefetch(h)) {
        n += u64::from(c.contains(&h));
    }
    n
}

fn look_window(w: &Window, batch: &[[u8; 16]], now: u64) -> u64 {
    let mark = w.read_mark(now);
    let hashes: Vec<ItemHash> = batch.iter().map(|v| ItemHash::of(v)).collect();
    let mut found = vec![0u64; hashes.len().div_ceil(64)];
    w.contains_batch(&hashes, mark, &mut found);
    (0..hashes.len())
        .map(|i| (found[i / 64] >> (i % 64)) & 1)
        .sum()
}

fn main() {
    let a = Args::parse();
    let caps: Vec<u64> = a
        .list("capacities", "1M,10M")
        .iter()
        .map(|s| common::parse_size(s).expect("bad capacity"))
        .collect();
    let error = a.f64("error", 0.01);
    let bsz = a.u64("batch", 1000).max(1);
    let lookups = a.u64("lookups", 2_000_000);
    let rounds = a.u64("rounds", 3).max(1);
    let only = a.str("only", "");
    let layout = BloomLayout::from_name(a.str("layout", "paired").as_bytes()).expect("layout");
    let lim = Limits::default();
    common::disable_thp_like_redis();
    for cap in caps {
        let quarter = cap / 4;
        let span = WINDOW_MS / 4;
        let (mut plain_add, mut win_add) = (f64::INFINITY, f64::INFINITY);
        let mut plain = BloomChain::new(cap, error, 2, &lim).expect("plain");
        let mut w = Window::new(cap, error, 2, layout, WINDOW_MS, &lim).expect("window");
        // Adds: fresh filters per round, the fastest round.
        for _ in 0..rounds {
            if only != "window" {
                plain = BloomChain::new(cap, error, 2, &lim).expect("plain");
                let mut timed = 0u128;
                for x in (0..cap).step_by(bsz as usize) {
                    let batch = items(1, x, bsz.min(cap - x));
                    let t = Instant::now();
                    black_box(add_plain(&mut plain, &batch, &lim));
                    timed += t.elapsed().as_nanos();
                }
                plain_add = plain_add.min(timed as f64 / cap as f64);
            }
            if only != "plain" {
                w = Window::new(cap, error, 2, layout, WINDOW_MS, &lim).expect("window");
                let mut timed = 0u128;
                for g in 0..6u64 {
                    let now = T0 + g * span + 1;
                    let start = g * quarter;
                    for x in (start..start + quarter).step_by(bsz as usize) {
                        let batch = items(1, x, bsz.min(start + quarter - x));
                        let t = Instant::now();
                        black_box(add_window(&mut w, &batch, now, &lim));
                        timed += t.elapsed().as_nanos();
                    }
                }
                win_add = win_add.min(timed as f64 / (6 * quarter) as f64);
            }
        }
        let now = T0 + 5 * span + 2;
        let live_from = 2 * quarter;
        let (mut lp, mut lw) = (vec![], vec![]);
        for r in 0..rounds {
            let mut batches = vec![];
            let mut i = 0u64;
            while (batches.len() as u64) * bsz < lookups {
                let span_items = (4 * quarter - live_from - bsz).max(1);
                let pres = items(1, live_from + (i * 7919 * (bsz / 2)) % span_items, bsz / 2);
                let absent = items(1000 + r, i * bsz, bsz - bsz / 2);
                let b: Vec<[u8; 16]> = pres
                    .iter()
                    .zip(&absent)
                    .flat_map(|(p, q)| [*p, *q])
                    .collect();
                batches.push(b);
                i += 1;
            }
            let n = (batches.len() as u64 * bsz) as f64;
            if only != "window" {
                let t = Instant::now();
                for b in &batches {
                    black_box(look_plain(&plain, b));
                }
                lp.push(t.elapsed().as_nanos() as f64 / n);
            }
            if only != "plain" {
                let t = Instant::now();
                for b in &batches {
                    black_box(look_window(&w, b, now));
                }
                lw.push(t.elapsed().as_nanos() as f64 / n);
            }
        }
        // The fastest round: the least disturbed by other work on the machine.
        let med = |v: &[f64]| {
            if v.is_empty() {
                f64::NAN
            } else {
                common::min(v)
            }
        };
        let (mp, mw) = (med(&lp), med(&lw));
        Json::new("window")
            .int("capacity", cap)
            .str("layout", layout.name())
            .num("error", error)
            .num("add_plain_ns", plain_add)
            .num("add_window_ns", win_add)
            .num("add_ratio", win_add / plain_add)
            .num("lookup_plain_ns", mp)
            .num("lookup_window_ns", mw)
            .num("lookup_ratio", mw / mp)
            .int("window_bytes", w.mem_usage())
            .int("plain_bytes", plain.mem_usage())
            .emit();
    }
}
