//! Windowed Bloom filters under real arrival patterns, in process with an
//! injected clock (no Redis): memory (bits per item, against a plain filter of
//! the same capacity and error) and the measured false-positive rate, per
//! pattern, at each error rate. The `window` part of `make bench` runs it.
//!
//! Method: a filter of `--capacity` items per window of 60 s gets a stream for
//! `--windows` windows, starting at a time that is not a generation boundary
//! (`T0`, 12.345 s past one, plus `--phase` ms), in steps of 100 ms (`--step ms`) (the items of a step are added
//! at the step's time). Patterns, with `r = capacity / window`:
//!
//! | name | rate |
//! |---|---|
//! | `steady` | `r` |
//! | `swing30` | `0.99·r·(1 + 0.3·sin(2π t/W))`: ±30% within the window |
//! | `swing20` | `0.9·r·(1 + 0.2·sin(2π t/(W/3)))`: 90% of capacity, ±20%, period W/3 |
//! | `poisson` | Poisson counts per step, mean `0.95·r` |
//! | `batches` | `capacity/52` items at once, once per `W/50` (1.2 s) at a random time within it |
//! | `batches20` | `capacity/22` items at once, once per `W/20` at a random time within it (5 slots a generation) |
//! | `batches17`, `batches19`, `batches21`, `batches23` | `capacity/(n+2)` at once, once per `W/n` at a random time within it: 4.25, 4.75, 5.25 and 5.75 slots a generation (a period that does not divide a generation) |
//! | `half` | `r / 2` (also compared with a plain filter of half the capacity) |
//! | `peak130` | `r·(1 + 0.3·sin(2π t/(2W)))`: peaks at 1.3x (windows of up to 1.19x capacity) |
//! | `quarter25` | `capacity/4` items at once in every generation (W/4), at a random time within it |
//! | `quarter30` | `0.3·capacity` at once in every generation: 20% over the capacity |
//! | `whole` | the whole capacity at once every `1.02·W` (within the capacity in every window, yet two batches live together for up to `0.23·W`) |
//!
//! Every pattern but `peak130` and `quarter30` keeps at most `capacity` items in
//! every generation-aligned window; `quarter25` and `quarter30` hold up to five
//! batches in a window that starts within a generation (1.25x and 1.5x).
//! Memory is the largest BF.INFO `Size` (`Window::mem_usage`) over the whole
//! run; the plain filter is a scaling chain of `capacity` at the same error
//! holding `capacity` items. False positives: `--probes` never-added items at
//! the fullest moment of every generation after the first window (the last
//! step before each boundary), worst and mean.
//!
//! Run: `cargo run --release -p ferrobloom-core --example bench_window_memory --
//!       [--capacity 200000] [--errors 0.01,0.001] [--windows 10] [--probes 100000]
//!       [--patterns steady,swing30,...] [--layout paired] [--phase 0] [--step 100] [--trace] [--bound]`
//! Output: one JSON object per row on stdout. `--trace`: at the end of every
//! generation, each generation held and its links (items/entries error) on
//! stderr. `--bound`: instead of running filters, the memory a sizing with
//! perfect foresight could reach (`common/window_bound.rs`), per pattern.

#[path = "common/bench.rs"]
mod common;
#[path = "common/window_bound.rs"]
mod window_bound;

use common::{Args, Json, SplitMix};
use ferrobloom_core::bloom::{BloomChain, BloomLayout, Limits};
use ferrobloom_core::hash::ItemHash;
use ferrobloom_core::window::Window;

const W: u64 = 60_000;
/// `--step ms`: the stream's items arrive once per step (100 ms by default;
/// the server test `crates/ferrobloom/tests/bf_window/memory.rs` steps a hundredth of its window).
static STEP_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);

fn step() -> u64 {
    STEP_MS
        .load(std::sync::atomic::Ordering::Relaxed)
        .clamp(1, W)
}
const T0_BASE: u64 = 1_800_000_012_345;
/// `--phase ms` moves the start (and so the streams' alignment with the
/// generations) later by that much.
static PHASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The stream's start: [`T0_BASE`] plus `--phase`.
fn t0() -> u64 {
    T0_BASE + PHASE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Items arriving in the step starting at `t` ms after the start (fractional
/// counts carried in `acc`).
fn arrivals(pattern: &str, cap: u64, t: u64, acc: &mut f64, rng: &mut SplitMix) -> u64 {
    let r = cap as f64 / W as f64 * step() as f64; // items per step at capacity
    let x = t as f64 / W as f64 * std::f64::consts::TAU;
    let want = match pattern {
        "steady" => r,
        "swing30" => 0.99 * r * (1.0 + 0.3 * x.sin()),
        "swing20" => 0.9 * r * (1.0 + 0.2 * (3.0 * x).sin()),
        "half" => r / 2.0,
        "peak130" => r * (1.0 + 0.3 * (x / 2.0).sin()),
        "poisson" => return poisson(0.95 * r, rng),
        "batches" | "batches17" | "batches19" | "batches20" | "batches21" | "batches23" => {
            // One batch per slot (W/50 for `batches`, W/n for `batchesN`), at
            // a random time within it (so a window holds at most 51, or
            // n + 1, batches).
            let per = pattern
                .strip_prefix("batches")
                .and_then(|n| n.parse().ok())
                .unwrap_or(50u64);
            let slot = W / per;
            let at = |s: u64| s * slot + SplitMix(s.wrapping_mul(0x9E37) ^ 0xba7c).next() % slot;
            let hits = (t / slot..=(t + step() - 1) / slot)
                .filter(|&s| (t..t + step()).contains(&at(s)))
                .count() as u64;
            return hits * (cap / (per + 2));
        }
        "whole" => {
            // The whole capacity at once every 1.02·W (no window holds two
            // batches), from the stream's start.
            let every = W * 102 / 100;
            let hits = (t..t + step()).filter(|&x| x % every == 0).count() as u64;
            return hits * cap;
        }
        "quarter25" | "quarter30" => {
            // One batch per generation (absolute: aligned to its boundaries),
            // at a random time within it.
            let share = if pattern == "quarter25" {
                cap / 4
            } else {
                cap * 3 / 10
            };
            let slot = W / 4;
            let abs = t0() + t;
            let at = |g: u64| g * slot + SplitMix(g.wrapping_mul(0x9E37) ^ 0x9a27).next() % slot;
            let hits = (abs / slot..=(abs + step() - 1) / slot)
                .filter(|&g| (abs..abs + step()).contains(&at(g)))
                .count() as u64;
            return hits * share;
        }
        _ => panic!("unknown pattern {pattern}"),
    };
    *acc += want;
    let n = acc.floor();
    *acc -= n;
    n as u64
}

/// A Poisson count of mean `m` (normal approximation above 50).
fn poisson(m: f64, rng: &mut SplitMix) -> u64 {
    let u = |rng: &mut SplitMix| (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    if m > 50.0 {
        let (a, b) = (u(rng).max(1e-300), u(rng));
        let z = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
        return (m + z * m.sqrt()).round().max(0.0) as u64;
    }
    let (l, mut k, mut p) = ((-m).exp(), 0u64, 1.0);
    loop {
        p *= u(rng);
        if p <= l {
            return k;
        }
        k += 1;
    }
}

fn key(tag: u64, i: u64) -> ItemHash {
    ItemHash::of(&common::item16(tag, i))
}

fn plain_bytes(cap: u64, p: f64, lim: &Limits) -> u64 {
    let mut c = BloomChain::new(cap, p, 2, lim).expect("plain");
    for i in 0..cap {
        let _ = c.add(&key(7, i), lim);
    }
    c.mem_usage()
}

fn main() {
    let a = Args::parse();
    let cap = a.u64("capacity", 200_000);
    let errors: Vec<f64> = a
        .list("errors", "0.01,0.001")
        .iter()
        .map(|s| s.parse().expect("bad error"))
        .collect();
    let windows = a.u64("windows", 10);
    let probes = a.u64("probes", 100_000);
    let patterns = a.list(
        "patterns",
        "steady,swing30,swing20,poisson,batches,batches20,batches17,batches19,batches21,batches23,half,peak130,quarter25,quarter30,whole",
    );
    let layout = BloomLayout::from_name(a.str("layout", "paired").as_bytes()).expect("layout");
    let lim = Limits::default();
    let gen_ms = W / 4;
    let trace = a.str("trace", "") == "1";
    PHASE.store(a.u64("phase", 0), std::sync::atomic::Ordering::Relaxed);
    STEP_MS.store(a.u64("step", 100), std::sync::atomic::Ordering::Relaxed);
    if a.str("bound", "") == "1" {
        return bound_rows(&errors, &patterns, cap, windows, layout, &lim);
    }
    for &p in &errors {
        let plain = plain_bytes(cap, p, &lim);
        let plain_half = plain_bytes(cap / 2, p, &lim);
        for pat in &patterns {
            let mut f = Window::new(cap, p, 2, layout, W, &lim).expect("window");
            let mut rng = SplitMix(0x5eed ^ cap);
            let (mut acc, mut id, mut probe_id) = (0.0, 0u64, 0u64);
            let (mut most, mut most_links, mut settled) = (0u64, 0usize, 0u64);
            let (mut worst_fp, mut sum_fp, mut moments) = (0.0f64, 0.0f64, 0u64);
            // Items added per step, to count the most items any window held.
            let mut per_step: Vec<u64> = Vec::new();
            let mut most_window = 0u64;
            for s in 0..windows * W / step() {
                let t = s * step();
                let now = t0() + t;
                let n = arrivals(pat, cap, t, &mut acc, &mut rng);
                for _ in 0..n {
                    let _ = f.add(&key(1, id), now, &lim);
                    id += 1;
                }
                drop(f.take_retired());
                if trace && (now + step()) / gen_ms != now / gen_ms {
                    let mut line = format!("t={:.1}s mem={}", t as f64 / 1000.0, f.mem_usage());
                    for (i, c) in f.generation_list() {
                        line += &format!(" | g{} n={}:", i % 1000, c.items());
                        for l in c.links() {
                            let s = l.shape();
                            line +=
                                &format!(" [{}/{} {:.3}%]", l.items(), s.entries, s.error * 100.0);
                        }
                    }
                    eprintln!("{line}");
                }
                per_step.push(n);
                let from = per_step.len().saturating_sub((W / step()) as usize);
                most_window = most_window.max(per_step[from..].iter().sum());
                most = most.max(f.mem_usage());
                if t >= 2 * W {
                    settled = settled.max(f.mem_usage());
                }
                most_links = most_links.max(f.link_count());
                // The fullest moment: the last step before a boundary.
                if t >= W && (now + step()) / gen_ms != now / gen_ms {
                    let hits = (0..probes)
                        .filter(|_| {
                            probe_id += 1;
                            f.contains(&key(2, probe_id), now)
                        })
                        .count();
                    let r = hits as f64 / probes as f64;
                    worst_fp = worst_fp.max(r);
                    sum_fp += r;
                    moments += 1;
                }
            }
            let mut row = Json::new("window_memory");
            row.str("pattern", pat)
                .str("layout", layout.name())
                .num("error", p)
                .int("capacity", cap)
                .int("most_in_a_window", most_window)
                .int("window_bytes", settled)
                .int("window_bytes_from_start", most)
                .int("plain_bytes", plain)
                .num("bits_per_item", settled as f64 * 8.0 / cap as f64)
                .num("plain_bits_per_item", plain as f64 * 8.0 / cap as f64)
                .num("ratio", settled as f64 / plain as f64)
                .num("ratio_from_start", most as f64 / plain as f64)
                .int("links", most_links as u64)
                .num("fp_worst", worst_fp)
                .num("fp_mean", sum_fp / moments.max(1) as f64)
                .int("fp_moments", moments)
                .int("probes", probes);
            if pat == "half" {
                row.num("ratio_to_actual", settled as f64 / plain_half as f64)
                    .num(
                        "ratio_to_actual_from_start",
                        most as f64 / plain_half as f64,
                    );
            }
            row.emit();
        }
    }
}

/// `--bound`: per pattern and error, the memory a sizing with perfect
/// foresight could reach in today's structure (`common/window_bound.rs`),
/// against the plain filter, settled (from the third window on) and from the
/// start, for the budget `p` and for the `0.97·p` the sizing keeps.
fn bound_rows(
    errors: &[f64],
    patterns: &[String],
    cap: u64,
    windows: u64,
    layout: BloomLayout,
    lim: &Limits,
) {
    let gen_ms = W / 4;
    let bits = window_bound::Bits::new(layout);
    for &p in errors {
        let plain = plain_bytes(cap, p, lim) as f64;
        for pat in patterns {
            let mut rng = SplitMix(0x5eed ^ cap);
            let mut acc = 0.0;
            let first = t0() / gen_ms;
            let mut counts: Vec<u64> = Vec::new();
            for s in 0..windows * W / step() {
                let t = s * step();
                let g = ((t0() + t) / gen_ms - first) as usize;
                if counts.len() <= g {
                    counts.resize(g + 1, 0);
                }
                counts[g] += arrivals(pat, cap, t, &mut acc, &mut rng);
            }
            // Generation `c` ends after the third window's start: measured settled.
            let settled = |c: usize| (first + c as u64 + 1) * gen_ms > t0() + 2 * W;
            let mut row = Json::new("window_memory_bound");
            row.str("pattern", pat)
                .str("layout", layout.name())
                .num("error", p)
                .int("capacity", cap);
            for (tag, budget) in [("", p), ("_097", 0.97 * p)] {
                let (lo, reach) = window_bound::bound(&bits, &counts, 4, budget, settled);
                let (lo0, reach0) = window_bound::bound(&bits, &counts, 4, budget, |_| true);
                row.num(&format!("lower{tag}"), lo / plain)
                    .num(&format!("reached{tag}"), reach / plain)
                    .num(&format!("lower_from_start{tag}"), lo0 / plain)
                    .num(&format!("reached_from_start{tag}"), reach0 / plain);
            }
            row.emit();
        }
    }
}
