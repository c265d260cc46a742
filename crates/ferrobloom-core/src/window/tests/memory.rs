//! Memory and false positives under real arrival patterns:
//! streams not aligned to generation boundaries, injected clock, fixed seeds.
//! The same patterns as `examples/bench_window_memory.rs` (the `window` part of
//! `make bench`), on a smaller filter.

use super::*;
use crate::window::forecast::{young_bounds, YoungBound};
use crate::window::sizing::{link_fpr, MARGIN};

const W: u64 = 1_000;
const STEP: u64 = 10;
/// Not a generation boundary (12.345 windows of 1 s past one).
const T0: u64 = 1_800_000_012_345;
const CAP: u64 = 100_000;

/// Items arriving in the step at `t` ms after the start `t0` (fractional
/// counts carried in `acc`); see the example's table of patterns.
fn arrivals(pattern: &str, t0: u64, t: u64, acc: &mut f64, rng: &mut Mix) -> u64 {
    let r = CAP as f64 / W as f64 * STEP as f64;
    let x = t as f64 / W as f64 * std::f64::consts::TAU;
    let want = match pattern {
        "steady" => r,
        "swing30" => 0.99 * r * (1.0 + 0.3 * x.sin()),
        "swing20" => 0.9 * r * (1.0 + 0.2 * (3.0 * x).sin()),
        "half" => r / 2.0,
        "peak130" => r * (1.0 + 0.3 * (x / 2.0).sin()),
        "poisson" => {
            // Normal approximation of a Poisson count of mean 0.95·r (190).
            let u = |m: &mut Mix| (m.next() >> 11) as f64 / (1u64 << 53) as f64;
            let (a, b) = (u(rng).max(1e-300), u(rng));
            let z = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
            let m = 0.95 * r;
            return (m + z * m.sqrt()).round().max(0.0) as u64;
        }
        "batches" | "batches20" => {
            // One batch per slot, at a random time within it.
            let per = if pattern == "batches" { 50 } else { 20 };
            let slot = W / per;
            let at = |s: u64| s * slot + Mix(s.wrapping_mul(0x9E37) ^ 0xba7c).next() % slot;
            let hits = (t / slot..=(t + STEP - 1) / slot)
                .filter(|&s| (t..t + STEP).contains(&at(s)))
                .count() as u64;
            return hits * (CAP / (per + 2));
        }
        "quarter25" | "quarter30" => {
            // One batch per generation (aligned to its boundaries), at a
            // random time within it, at least a step after its start (the
            // items of a step are added at the step's start, which must lie
            // in the batch's generation).
            let share = if pattern == "quarter25" {
                CAP / 4
            } else {
                CAP * 3 / 10
            };
            let slot = W / 4;
            let abs = t0 + t;
            let at = |g: u64| {
                g * slot + STEP + Mix(g.wrapping_mul(0x9E37) ^ 0x9a27).next() % (slot - STEP)
            };
            let hits = (abs / slot..=(abs + STEP - 1) / slot)
                .filter(|&g| (abs..abs + STEP).contains(&at(g)))
                .count() as u64;
            return hits * share;
        }
        _ => unreachable!(),
    };
    *acc += want;
    let n = acc.floor();
    *acc -= n;
    n as u64
}

struct Run {
    /// Largest `mem_usage` from the third window on, and over the whole run.
    settled: u64,
    from_start: u64,
    most_in_a_window: u64,
    worst_fp: f64,
    mean_fp: f64,
}

/// Runs `pattern` for 8 windows from `T0`; checks at every step that at most
/// `K + 1` generations are live and that the live generations' estimated
/// rates sum to at most the bound, and measures `probes` never-added items at
/// the fullest moment of every generation after the first window (each within
/// 4 sigma of `p`).
fn run(pattern: &str, p: f64, layout: BloomLayout, probes: u64) -> Run {
    run_from(pattern, p, layout, probes, T0, 8)
}

/// [`run`] from `t0` for `windows` windows.
fn run_from(pattern: &str, p: f64, layout: BloomLayout, probes: u64, t0: u64, windows: u64) -> Run {
    let mut f = Window::new(CAP, p, 2, layout, W, &lim()).unwrap();
    let mut rng = Mix(0x5eed);
    let (mut acc, mut id, mut pid) = (0.0, 0u64, 0u64);
    let (mut settled, mut from_start) = (0, 0);
    let (mut worst_fp, mut sum_fp, mut moments) = (0.0f64, 0.0, 0u64);
    let mut per_step = Vec::new();
    let mut most_in_a_window = 0;
    let gen_ms = W / u64::from(PARTS);
    for s in 0..windows * W / STEP {
        let t = s * STEP;
        let now = t0 + t;
        let n = arrivals(pattern, t0, t, &mut acc, &mut rng);
        for _ in 0..n {
            f.add(&member(id), now, &lim()).unwrap();
            id += 1;
        }
        drop(f.take_retired());
        per_step.push(n);
        let from = per_step.len().saturating_sub((W / STEP) as usize);
        most_in_a_window = most_in_a_window.max(per_step[from..].iter().sum());
        from_start = from_start.max(f.mem_usage());
        if t >= 2 * W {
            settled = settled.max(f.mem_usage());
        }
        let mark = f.read_mark(now);
        let live: Vec<_> = f
            .gens
            .iter()
            .filter(|g| g.index + u64::from(PARTS) >= mark)
            .collect();
        assert!(live.len() <= PARTS as usize + 1);
        let est: f64 = live
            .iter()
            .flat_map(|g| g.chain.links())
            .map(link_fpr)
            .sum();
        assert!(
            est <= p * MARGIN * 1.000_001,
            "{pattern}: estimate {est} at {t}"
        );
        if t >= W && (now + STEP) / gen_ms != now / gen_ms {
            let r = fp_rate(&f, now, 1_000_000 + pid, probes);
            pid += probes;
            assert!(r <= bound(p, probes), "{pattern} p={p}: FP {r} at {t}");
            worst_fp = worst_fp.max(r);
            sum_fp += r;
            moments += 1;
        }
    }
    Run {
        settled,
        from_start,
        most_in_a_window,
        worst_fp,
        mean_fp: sum_fp / moments as f64,
    }
}

/// Every pattern that keeps at most `capacity` items in any window costs at
/// most 1.6x a plain filter of the same capacity and error once it has run for
/// two windows (at 1% and 0.1%); one that peaks at 1.3x the capacity, 2x; a
/// stream at half the capacity, 1.6x a plain filter holding what arrives. The
/// false-positive rate stays within the error at every fullest moment (and
/// the estimate at every step). Generations of a quarter of the capacity
/// each would cost swing30 2.78x, batches20 2.37x, peak130 3.19x, half 3.08x
/// of what arrives.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_memory_follows_the_stream() {
    for p in [0.01, 0.001] {
        let plain = plain_size(CAP, p) as f64;
        let plain_half = plain_size(CAP / 2, p) as f64;
        for (pattern, most) in [
            ("steady", 1.6),
            // 1.579x at 1%, 1.522x at 0.1%.
            ("swing30", 1.585),
            ("swing20", 1.6),
            ("poisson", 1.6),
            ("batches", 1.6),
            // 4 to 6 batches of capacity/22 in a generation: 1.641x at 1%,
            // 1.589x at 0.1% (docs/windowed.md, "Where it stays above 1.6x").
            ("batches20", 1.65),
            // One batch of a quarter of the capacity per generation (up to
            // 1.25x in a window that starts within a generation).
            ("quarter25", 1.6),
            ("peak130", 2.0),
            // One batch of 0.3x per generation: 20% over the capacity.
            ("quarter30", 2.0),
        ] {
            let r = run(pattern, p, BloomLayout::Paired, 20_000);
            let ratio = r.settled as f64 / plain;
            println!(
                "{pattern} p={p}: {ratio:.3}x plain ({:.3}x from the start), most in a window \
                 {}, FP worst {:.5} mean {:.5}",
                r.from_start as f64 / plain,
                r.most_in_a_window,
                r.worst_fp,
                r.mean_fp
            );
            if !["peak130", "quarter25", "quarter30"].contains(&pattern) {
                assert!(r.most_in_a_window <= CAP, "{pattern}");
            }
            assert!(ratio <= most, "{pattern} at {p}: {ratio}x");
            assert!(
                r.from_start as f64 / plain <= 2.0,
                "{pattern} at {p} from the start"
            );
            assert!(r.mean_fp <= p, "{pattern} at {p}: mean FP {}", r.mean_fp);
        }
        let r = run("half", p, BloomLayout::Paired, 20_000);
        let actual = r.settled as f64 / plain_half;
        println!(
            "half p={p}: {actual:.3}x a plain filter of half the capacity, {:.3}x of the capacity",
            r.settled as f64 / plain
        );
        assert!(actual <= 1.6, "half at {p}: {actual}x");
    }
}

/// The same in the classic and blocked layouts (steady, swinging and
/// Poisson-like streams), against a plain filter of the same layout.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_memory_follows_the_stream_in_every_layout() {
    for layout in [BloomLayout::Classic, BloomLayout::Blocked] {
        for p in [0.01, 0.001] {
            // Against a plain filter of the same layout.
            let mut c = BloomChain::with_layout(CAP, p, 2, layout, &lim()).unwrap();
            for i in 0..CAP {
                c.add(&member(i), &lim()).unwrap();
            }
            let plain = c.mem_usage() as f64;
            for pattern in ["steady", "swing30", "poisson"] {
                let r = run(pattern, p, layout, 10_000);
                let ratio = r.settled as f64 / plain;
                println!(
                    "{layout:?} {pattern} p={p}: {ratio:.3}x, FP mean {:.5}",
                    r.mean_fp
                );
                // Blocked links are sized 10% below the model's rate (see
                // `BLOCKED_MODEL`): swinging at 1%, 1.63x (docs/windowed.md).
                let most = if layout == BloomLayout::Blocked && pattern == "swing30" {
                    1.65
                } else {
                    1.6
                };
                assert!(ratio <= most, "{layout:?} {pattern} at {p}: {ratio}x");
                assert!(r.mean_fp <= p, "{layout:?} {pattern} at {p}");
            }
        }
    }
}

/// Random streams with pauses, bursts of up to twice the capacity and rate
/// changes: at every step the live generations' estimated rates sum to at most
/// the bound, every first link gets at least `0.2·B` of error (no generation
/// is starved by the ones before it), and a primary and a replica fed the same
/// times reach the same links.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_budget_holds_under_random_streams() {
    for seed in 0..6u64 {
        let mut rng = Mix(seed);
        let p = [0.01, 0.001, 0.1][seed as usize % 3];
        let mk = || Window::new(2_000, p, 2, BloomLayout::Paired, 400, &lim()).unwrap();
        let (mut a, mut b) = (mk(), mk());
        let mut now = 5_000_000u64 + seed * 77;
        let mut id = 0u64;
        let b_min = 0.2 * p * MARGIN / 5.0;
        for _ in 0..3_000 {
            now += match rng.next() % 50 {
                0 => 400 + rng.next() % 600, // a pause
                _ => rng.next() % 7,
            };
            let n = match rng.next() % 200 {
                0 => 4_000,
                1..=20 => rng.next() % 120,
                _ => rng.next() % 12,
            };
            for _ in 0..n {
                let h = member(id);
                id += 1;
                assert_eq!(a.add(&h, now, &lim()), b.add(&h, now, &lim()));
            }
            drop((a.take_retired(), b.take_retired()));
            let mark = a.read_mark(now);
            let est: f64 = a
                .gens
                .iter()
                .filter(|g| g.index + u64::from(PARTS) >= mark)
                .flat_map(|g| g.chain.links())
                .map(link_fpr)
                .sum();
            assert!(est <= p * MARGIN * 1.000_001, "seed {seed}: {est} at {now}");
            for g in &a.gens {
                let first = g.chain.links()[0].shape().error;
                assert!(first >= b_min * 0.999, "seed {seed}: first link at {first}");
            }
        }
        assert_eq!(state(&a), state(&b));
    }
}

/// A new stream's first three windows at eight phases against the
/// generations (starting `T0` plus 0, 1/32, ..., 7/32 of a window): the most
/// memory from the start, worst phase, against a plain filter, at 1% / 0.1%:
/// steady 1.513x / 1.461x, batches of capacity/52 1.518x / 1.466x, swinging
/// ±30% 1.725x / 1.672x, batches of capacity/22 1.574x / 1.513x, peaks of
/// 1.3x 1.963x / 1.840x, half the capacity 1.093x / 1.052x. 20,000 probes a
/// moment (with 2,000, two expected hits at 0.1%, one moment of the peaks
/// drew 8 where a million probes measure 0.1013%).
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_memory_from_the_start_at_every_phase() {
    for p in [0.01, 0.001] {
        let plain = plain_size(CAP, p) as f64;
        for (pattern, most) in [
            ("steady", 1.53),
            ("batches", 1.53),
            ("swing30", 1.74),
            // 1.574x at 1%.
            ("batches20", 1.58),
            // 1.963x at 1%.
            ("peak130", 1.97),
            ("half", 1.15),
        ] {
            let worst = (0..8u64)
                .map(|i| {
                    let t0 = T0 + i * W / 32;
                    let r = run_from(pattern, p, BloomLayout::Paired, 20_000, t0, 3);
                    r.from_start as f64 / plain
                })
                .fold(0.0, f64::max);
            println!("{pattern} p={p}: worst phase {worst:.3}x from the start");
            assert!(worst <= most, "{pattern} at {p}: {worst}x from the start");
        }
    }
}

/// A young stream's last counts that stand out (`young_bounds` in
/// `window/forecast.rs`), from the bench's streams at
/// capacity 200,000 (a share of 50,000; counts newest first, 0 for a
/// generation not held): batches of capacity/22 at 13.3 s, a six among fives
/// after a partial first generation, bounded by the five; batches of
/// capacity/52 at 13.3 s, fourteen batches after a partial first generation
/// (a share), then the dip of eleven after them (their mean); and what must
/// not be bounded: peaks of 1.3x rising over their partial first generation
/// (56,088 after 2,681), a steady stream, a swinging one over two shares, a
/// five after a six (batches of capacity/22 at 7.6 s: the dip rule sized
/// its next generation for five and a half and cost 0.5% from the start).
#[test]
fn young_bounds_of_spikes_and_dips() {
    let share = 50_000;
    let cases: [([u64; 4], Option<YoungBound>); 8] = [
        ([54_514, 45_442, 9_090, 0], Some(YoungBound::Spike(45_442))),
        ([53_827, 11_538, 0, 0], Some(YoungBound::Share)),
        ([42_301, 53_827, 11_538, 0], Some(YoungBound::Dip(48_064))),
        ([56_088, 2_681, 0, 0], None),
        ([50_000, 50_000, 12_000, 0], None),
        ([61_000, 56_000, 9_300, 0], None),
        ([45_450, 54_538, 27_270, 0], None),
        ([45_000, 11_538, 0, 0], None),
    ];
    for (counts, want) in cases {
        assert_eq!(young_bounds(&counts, share), want, "{counts:?}");
    }
}
