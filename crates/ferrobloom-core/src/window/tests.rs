//! Windowed filters with an injected clock (milliseconds): the three
//! guarantees over 25+ windows with measured rates, bursts, memory, the clock
//! rules, the encoding and the limits.

use super::*;
use crate::bloom::Limits;
use crate::filter::BloomFilter;

mod bursts;
mod memory;
mod regimes;

/// splitmix64 (fixed seeds).
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
}

/// Member `i` (tag 1) and never-added probe `i` (tag 2) are distinct keys.
fn member(i: u64) -> ItemHash {
    key(1, i)
}
fn probe(i: u64) -> ItemHash {
    key(2, i)
}
fn key(tag: u8, i: u64) -> ItemHash {
    let mut b = [0u8; 9];
    b[0] = tag;
    b[1..].copy_from_slice(&i.to_le_bytes());
    ItemHash::of(&b)
}

/// The largest rate a filter at `p` may measure with `n` probes (4 sigma).
fn bound(p: f64, n: u64) -> f64 {
    p + 4.0 * (p * (1.0 - p) / n as f64).sqrt()
}

fn lim() -> Limits {
    Limits::default()
}

/// A window of `w` ms for `cap` items per window.
fn window(cap: u64, p: f64, expansion: u32, w: u64) -> Window {
    Window::new(cap, p, expansion, BloomLayout::Paired, w, &lim()).unwrap()
}

/// Never-added probes answering 1 at `now`, out of `n` (offset `from`).
fn fp_rate(f: &Window, now: u64, from: u64, n: u64) -> f64 {
    let hits = (from..from + n)
        .filter(|&i| f.contains(&probe(i), now))
        .count();
    hits as f64 / n as f64
}

/// A steady stream of `cap` distinct items per window of 1 s over 26 windows,
/// starting at an arbitrary epoch time: every item added within the last window
/// answers 1 (guarantee 1); items older than `W·(1+s)` answer only at the false
/// positive rate (guarantee 2); never-added items answer at most at `p` right
/// after each rotation and at each fullest moment (guarantee 3).
fn stream(p: f64, cap: u64, layout: BloomLayout) {
    const W: u64 = 1000;
    const STEP: u64 = 10;
    let per_step = cap * STEP / W;
    let start: u64 = 1_764_000_000_123; // not aligned to a generation
    let mut f = Window::new(cap, p, 2, layout, W, &lim()).unwrap();
    let mut added: Vec<(u64, u64)> = Vec::new(); // (time, id)
    let mut next_id = 0u64;
    let (mut worst_fp, mut fp_checks) = (0.0f64, 0);
    let mut worst_forgotten = 0.0f64;
    let mut dup_answers = 0u64;
    let probes = 100_000;
    let gen_ms = W / u64::from(PARTS);
    for step in 0..26 * W / STEP {
        let now = start + step * STEP;
        for _ in 0..per_step {
            let a = f.add(&member(next_id), now, &lim()).unwrap();
            // A fresh item answers 0 only on a false positive.
            dup_answers += u64::from(a != Added::New);
            added.push((now, next_id));
            next_id += 1;
        }
        drop(f.take_retired());
        // Guarantee 1: every item added within [now - W, now] answers 1; the
        // oldest ones every step, all of them every 20 steps.
        let lo = added.partition_point(|&(t, _)| t + W < now);
        let edge = added.partition_point(|&(t, _)| t + W < now + 2 * STEP);
        let upto = if step % 20 == 0 { added.len() } else { edge };
        for &(t, id) in &added[lo..upto] {
            assert!(f.contains(&member(id), now), "item of {t} gone at {now}");
        }
        // Guarantee 3: right after a rotation (the step after a boundary) and
        // at the fullest moment (the last step before one), after 2 windows.
        let phase = (now + STEP) % gen_ms;
        if step * STEP > 2 * W && (phase < STEP || now % gen_ms < STEP) {
            let r = fp_rate(&f, now, step * probes, probes);
            assert!(r <= bound(p, probes), "FP {r} at {now} (p {p})");
            worst_fp = worst_fp.max(r);
            fp_checks += 1;
        }
        // Guarantee 2: items older than W·(1+s) answer like never-added ones.
        if step % 50 == 0 && step * STEP > 3 * W {
            let old = added.partition_point(|&(t, _)| t + W + W / u64::from(PARTS) <= now);
            let sample = &added[old.saturating_sub(20_000)..old];
            let hits = sample
                .iter()
                .filter(|&&(_, id)| f.contains(&member(id), now))
                .count();
            let r = hits as f64 / sample.len() as f64;
            assert!(r <= bound(p, sample.len() as u64), "forgotten {r} at {now}");
            worst_forgotten = worst_forgotten.max(r);
        }
        assert!(f.gens.len() <= PARTS as usize + 1);
    }
    assert!(fp_checks >= 40, "{fp_checks} checks");
    let r = dup_answers as f64 / next_id as f64;
    assert!(r <= bound(p, next_id), "fresh items answering 0: {r}");
    println!(
        "stream p={p} cap={cap} {layout:?}: worst FP {worst_fp:.5} over {fp_checks} moments, \
         forgotten items answering 1: {worst_forgotten:.5}, bound {:.5}; \
         fresh adds answering 0: {r:.5} of {next_id}",
        bound(p, probes)
    );
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_guarantees_over_26_windows_at_1_percent() {
    stream(0.01, 20_000, BloomLayout::Paired);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_guarantees_over_26_windows_at_1_percent_classic() {
    stream(0.01, 20_000, BloomLayout::Classic);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_guarantees_over_26_windows_at_0_1_percent() {
    stream(0.001, 20_000, BloomLayout::Paired);
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_guarantees_over_26_windows_at_0_1_percent_blocked() {
    stream(0.001, 20_000, BloomLayout::Blocked);
}

/// Guarantees 1 and 2 exactly: a lone item (nothing else in the filter, so no
/// false positive is possible) answers 1 up to `t + W` and 0 from `t + W·(1+s)`,
/// for many add times and windows (including ones not divisible by K).
#[test]
fn window_lone_item_lives_exactly_its_window() {
    let mut rng = Mix(0x1234);
    for &w in &[1u64, 2, 3, 7, 999, 1000, 1001, 86_400_000, MAX_WINDOW_MS] {
        for _ in 0..50 {
            let t = rng.next() % (1 << 42);
            let mut f = window(100, 0.01, 2, w);
            assert_eq!(f.add(&member(7), t, &lim()).unwrap(), Added::New);
            for dt in [0, 1, w / 2, w.saturating_sub(1), w] {
                assert!(f.contains(&member(7), t + dt), "w {w} t {t} dt {dt}");
            }
            let forget = t + w + w.div_ceil(u64::from(PARTS));
            assert!(!f.contains(&member(7), forget), "w {w} t {t}");
            assert!(!f.contains(&member(7), forget + 5 * w));
            // A write at that time drops the generation.
            f.add(&member(8), forget, &lim()).unwrap();
            assert!(!f.contains(&member(7), forget));
            assert_eq!(f.items(), 1);
        }
    }
}

/// BF.ADD answers 1 only when the item was not seen within the window, and a
/// re-add keeps the item for another full window from the re-add.
#[test]
fn window_readd_refreshes() {
    let w = 1000;
    let mut f = window(100, 0.01, 2, w);
    let t = 5_000_000;
    assert_eq!(f.add(&member(1), t, &lim()).unwrap(), Added::New);
    assert_eq!(f.add(&member(1), t + 1, &lim()).unwrap(), Added::Present);
    assert_eq!(
        f.add(&member(1), t + 900, &lim()).unwrap(),
        Added::Refreshed
    );
    assert!(f.contains(&member(1), t + 1900));
    assert!(!f.contains(&member(1), t + 900 + 1250));
    // Not seen within the window: new again.
    assert_eq!(
        f.add(&member(1), t + 900 + 1250, &lim()).unwrap(),
        Added::New
    );
}

/// A burst of the whole capacity (and of twice it) at one moment keeps the
/// bound (the generation scales); NONSCALING refuses past a window's capacity
/// in one generation instead of degrading.
#[test]
fn window_bursts_keep_the_bound() {
    let (w, cap, p, probes) = (1000, 50_000, 0.01, 200_000);
    for burst in [cap, 2 * cap] {
        let mut f = window(cap, p, 2, w);
        for i in 0..burst {
            f.add(&member(i), 10_000, &lim()).unwrap();
        }
        let r = fp_rate(&f, 10_000, 0, probes);
        assert!(r <= bound(p, probes), "burst {burst}: {r}");
        for i in 0..burst {
            assert!(f.contains(&member(i), 11_000));
        }
        println!(
            "burst of {burst} (capacity {cap}): FP {r:.5}, links {}",
            f.link_count()
        );
    }
    let mut f = window(cap, p, 0, w);
    let mut refused = None;
    for i in 0..cap + 1000 {
        if let Err(e) = f.add(&member(i), 10_000, &lim()) {
            refused = Some((i, e));
            break;
        }
    }
    let (at, e) = refused.expect("a non-scaling window refuses");
    assert_eq!(e, BloomError::Full);
    assert!(
        at >= cap,
        "refused at {at}, before the window's capacity {cap}"
    );
    assert!(fp_rate(&f, 10_000, 0, probes) <= bound(p, probes));
    // The next generation accepts again.
    assert!(f.add(&member(u64::MAX), 10_250, &lim()).is_ok());
}

fn plain_size(cap: u64, p: f64) -> u64 {
    let mut c = BloomChain::new(cap, p, 2, &lim()).unwrap();
    for i in 0..cap {
        c.add(&member(i), &lim()).unwrap();
    }
    c.mem_usage()
}

/// Memory against a plain scaling filter of the same capacity and error holding
/// `capacity` items: a steady stream (the largest size over 4 windows) and a
/// burst of the whole capacity at once.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn window_memory_ratios() {
    let (w, cap) = (1000u64, 1_000_000u64);
    for p in [0.01, 0.001] {
        let plain = plain_size(cap, p) as f64;
        let mut f = window(cap, p, 2, w);
        let mut most = 0u64;
        let step = 10u64;
        let mut id = 0;
        for s in 0..4 * w / step {
            for _ in 0..cap * step / w {
                f.add(&member(id), 7_000_000 + s * step, &lim()).unwrap();
                id += 1;
            }
            drop(f.take_retired());
            most = most.max(f.mem_usage());
        }
        let steady = most as f64 / plain;
        let mut b = window(cap, p, 2, w);
        for i in 0..cap {
            b.add(&member(i), 1_000, &lim()).unwrap();
        }
        let burst = b.mem_usage() as f64 / plain;
        println!(
            "p={p}: plain {:.2} bits/item; windowed steady {:.2} bits/item (ratio {steady:.3}), \
             burst {:.2} bits/item (ratio {burst:.3})",
            plain * 8.0 / cap as f64,
            most as f64 * 8.0 / cap as f64,
            b.mem_usage() as f64 * 8.0 / cap as f64
        );
        assert!(steady <= 1.6, "steady ratio {steady} at {p}");
        assert!(burst <= 2.0, "burst ratio {burst} at {p}");
        // A stream 1% over `capacity`, aligned to the generations, over its
        // first two windows (sized by a share, then by its count and trend):
        // 2.72x at 1% and 2.57x at 0.1% (the earlier sizing, a second link of
        // one more share: 3.60x and 3.34x; of three more: 7.6x).
        let mut o = window(cap, p, 2, w);
        let mut over = 0u64;
        for g in 0..8u64 {
            for i in 0..cap / 4 + cap / 400 {
                o.add(
                    &member(10_000_000 + g * cap + i),
                    9_000_000 + g * w / 4,
                    &lim(),
                )
                .unwrap();
            }
            drop(o.take_retired());
            over = over.max(o.mem_usage());
        }
        let over = over as f64 / plain;
        println!("p={p}: a stream 1% over capacity: ratio {over:.3}");
        assert!(over <= 3.0, "over-capacity ratio {over} at {p}");
    }
}

/// Memory does not grow with the filter's age: 60 windows of a steady stream
/// stay within the size of the first few.
#[test]
fn window_memory_does_not_grow_with_age() {
    let (w, cap) = (400u64, 4_000u64);
    let mut f = window(cap, 0.01, 2, w);
    let mut id = 0;
    let (mut early, mut late) = (0, 0);
    for s in 0..60 * w / 4 {
        for _ in 0..cap * 4 / w {
            f.add(&member(id), 1_000_000 + s * 4, &lim()).unwrap();
            id += 1;
        }
        let retired = f.take_retired();
        assert!(retired.len() <= 1);
        if s < 3 * w / 4 {
            early = early.max(f.mem_usage());
        } else {
            late = late.max(f.mem_usage());
        }
    }
    assert!(late <= early, "{late} after 3 windows, {early} before");
    assert!(f.gens.len() <= 5 && f.link_count() <= 5);
}

/// The clock going back forgets nothing early and reorders nothing; going
/// forward forgets what is older than the window by the new time.
#[test]
fn window_clock_jumps() {
    let w = 1000;
    let mut f = window(100, 0.01, 2, w);
    f.add(&member(1), 10_000_000, &lim()).unwrap();
    // Back by an hour: reads and writes use the last write's time.
    assert!(f.contains(&member(1), 10_000_000 - 3_600_000));
    assert_eq!(
        f.add(&member(2), 10_000_000 - 3_600_000, &lim()).unwrap(),
        Added::New
    );
    assert_eq!(
        f.gens.len(),
        1,
        "the old time wrote into the current generation"
    );
    assert!(f.contains(&member(2), 10_000_000 + 999));
    // Forward by an hour: everything is forgotten.
    assert!(!f.contains(&member(1), 10_000_000 + 3_600_000));
    f.add(&member(3), 10_000_000 + 3_600_000, &lim()).unwrap();
    assert_eq!(f.gens.len(), 1);
    assert_eq!(f.take_retired().len(), 1);
    assert!(
        !f.contains(&member(1), 0),
        "the clock going back revives nothing"
    );
}

/// Same operations with the same timestamps give the same state (a replica or
/// an AOF replay fed the primary's times), byte for byte.
#[test]
fn window_same_times_same_state() {
    let mut rng = Mix(77);
    let (mut a, mut b) = (window(500, 0.01, 2, 300), window(500, 0.01, 2, 300));
    let mut now = 50_000;
    for _ in 0..20_000 {
        now += rng.next() % 3;
        let item = member(rng.next() % 3_000);
        assert_eq!(a.add(&item, now, &lim()), b.add(&item, now, &lim()));
    }
    assert_eq!(a.encode_header(), b.encode_header());
    let bytes = |f: &Window| {
        f.generation_list()
            .flat_map(|(_, g)| g.links().iter().flat_map(|l| l.data().to_vec()))
            .collect::<Vec<u8>>()
    };
    assert_eq!(bytes(&a), bytes(&b));
}

/// Header and data round-trip through the chain's persistence paths (RDB, AOF
/// and SCANDUMP share them); the loaded filter answers alike at every time.
#[test]
fn window_encoding_round_trip() {
    let w = 1000;
    let mut f = window(2_000, 0.01, 2, w);
    for i in 0..6_000u64 {
        f.add(&member(i), 20_000 + i / 4, &lim()).unwrap();
    }
    let chain = BloomFilter::from(f);
    let header = chain.encode_header();
    assert!(header.starts_with(&WINDOW_MAGIC));
    let lengths = BloomFilter::header_link_bytes(&header, &lim(), Some(false)).unwrap();
    assert_eq!(lengths.len(), chain.link_count());
    let mut copy = BloomFilter::from_header(&header, &lim()).unwrap();
    let mut chunks = Vec::new();
    chain.for_each_chunk(|it, d| chunks.push((it, d.to_vec())));
    for (it, d) in &chunks {
        copy.load_chunk(*it, d).unwrap();
    }
    // SCANDUMP's chunk iteration finds the same chunks.
    let mut it = 1;
    let mut n = 0;
    while let Some((next, d)) = chain.scandump_chunk(it) {
        assert_eq!((next, d), (chunks[n].0, &chunks[n].1[..]));
        it = next;
        n += 1;
    }
    assert_eq!(n, chunks.len());
    assert_eq!(copy.encode_header(), header);
    let (a, b) = (chain.as_window().unwrap(), copy.as_window().unwrap());
    for now in [21_000, 21_400, 22_000, 22_600, 23_000] {
        for i in 0..8_000 {
            assert_eq!(a.contains(&member(i), now), b.contains(&member(i), now));
        }
    }
    assert_eq!(chain.items(), copy.items());
    assert_eq!(chain.mem_usage(), copy.mem_usage());
    let cloned = chain.try_clone().unwrap();
    assert_eq!(cloned.encode_header(), header);
    // An empty window round-trips too.
    let empty = BloomFilter::from(window(10, 0.1, 0, 5));
    let h = empty.encode_header();
    assert_eq!(h.len(), HEADER_FIXED);
    assert!(BloomFilter::from_header(&h, &lim())
        .unwrap()
        .as_window()
        .is_some());
    assert!(empty.scandump_chunk(1).is_none());
}

/// Every corruption of a header is refused before anything is allocated, and
/// the limits apply on load.
#[test]
fn window_header_rejects_corruption_and_limits() {
    let mut f = window(2_000, 0.01, 2, 1000);
    for i in 0..5_000u64 {
        f.add(&member(i), 10_000 + i / 5, &lim()).unwrap();
    }
    let header = f.encode_header();
    assert!(Window::from_header(&header, &lim()).is_ok());
    // Truncations and one extra byte.
    for n in 0..header.len() {
        assert!(
            Window::from_header(&header[..n], &lim()).is_err(),
            "len {n}"
        );
    }
    let mut long = header.clone();
    long.push(0);
    assert!(Window::from_header(&long, &lim()).is_err());
    // Every single-byte change of the fixed part is refused or loads a valid
    // filter (never panics); these ones must be refused.
    let set = |off: usize, v: &[u8]| {
        let mut h = header.clone();
        h[off..off + v.len()].copy_from_slice(v);
        Window::from_header(&h, &lim()).is_err()
    };
    assert!(set(4, &[2]), "version");
    assert!(set(5, &[0]), "K = 0");
    assert!(set(5, &[65]), "K too large");
    assert!(set(6, &[2]), "RedisBloom layout");
    assert!(set(7, &[1]), "reserved");
    assert!(set(8, &0u64.to_le_bytes()), "window 0");
    assert!(
        set(8, &(MAX_WINDOW_MS + 1).to_le_bytes()),
        "window too long"
    );
    assert!(set(16, &0u64.to_le_bytes()), "capacity 0");
    assert!(set(24, &f64::NAN.to_bits().to_le_bytes()), "NaN error");
    assert!(set(24, &1.0f64.to_bits().to_le_bytes()), "error 1");
    assert!(set(32, &40_000u32.to_le_bytes()), "expansion");
    assert!(set(36, &6u32.to_le_bytes()), "too many generations");
    assert!(set(40, &0u64.to_le_bytes()), "generations after the clock");
    assert!(
        set(40, &u64::MAX.to_le_bytes()),
        "generations outside the window"
    );
    assert!(set(48, &0u64.to_le_bytes()), "generation index");
    // (Under a cap of 64 times the filter's size: a flipped high byte of a link's
    // size then stops at the cap check instead of allocating, and zeroing, up to
    // the default 4 GiB; every other check runs as before.)
    let roomy = Limits {
        max_bytes: 64 * f.mem_usage(),
        ..lim()
    };
    for b in 0..header.len() {
        for x in [1u8, 0x80, 0xff] {
            let mut h = header.clone();
            h[b] ^= x;
            let _ = Window::from_header(&h, &roomy);
        }
    }
    // Limits: the memory cap and max links over all generations.
    let size = f.mem_usage();
    let tight = Limits {
        max_bytes: size - 1,
        ..lim()
    };
    assert_eq!(
        Window::from_header(&header, &tight).err(),
        Some(BloomError::MemoryCap)
    );
    let few = Limits {
        max_links: f.link_count() as u32 - 1,
        ..lim()
    };
    assert_eq!(
        Window::from_header(&header, &few).err(),
        Some(BloomError::MaxLinks)
    );
}

/// The limits refuse on creation and on every add path (a new generation, a
/// new link), leaving the filter unchanged apart from drops.
#[test]
fn window_limits() {
    // A steady generation: a share at 0.96 of its budget (`sizing.rs`).
    let first = LinkShape::new(250, 0.01 * 0.97 / 5.0 * 0.98)
        .unwrap()
        .bytes();
    let steady = 32 + 5 * (64 + first);
    let cap = |b| Limits {
        max_bytes: b,
        ..lim()
    };
    let links = |n| Limits {
        max_links: n,
        ..lim()
    };
    let mk = |l: &Limits| Window::new(1000, 0.01, 2, BloomLayout::Classic, 1000, l);
    assert_eq!(mk(&cap(steady - 1)).err(), Some(BloomError::MemoryCap));
    assert!(mk(&cap(steady)).is_ok());
    assert_eq!(mk(&links(4)).err(), Some(BloomError::MaxLinks));
    let mut f = mk(&links(5)).unwrap();
    // A burst needs a second link in its generation: max links refuses it.
    let mut err = None;
    for i in 0..2_000 {
        if let Err(e) = f.add(&member(i), 10_000, &links(1)) {
            err = Some((i, e));
            break;
        }
    }
    let (i, e) = err.unwrap();
    assert_eq!(e, BloomError::MaxLinks);
    assert!(i >= 250);
    assert_eq!(f.items(), i);
    // A new generation is refused by the memory cap.
    let before = f.encode_header();
    assert_eq!(
        f.add(&member(9_999), 10_250, &cap(f.mem_usage())).err(),
        Some(BloomError::MemoryCap)
    );
    assert_eq!(f.encode_header(), before);
    // Bad parameters.
    let bad = |c, e, x, w| Window::new(c, e, x, BloomLayout::Classic, w, &lim()).is_err();
    assert!(bad(1000, 0.01, 2, 0));
    assert!(bad(1000, 0.01, 2, MAX_WINDOW_MS + 1));
    assert!(bad(0, 0.01, 2, 1000));
    assert!(bad(1000, 0.0, 2, 1000));
    assert!(bad(1000, 1.0, 2, 1000));
    assert!(bad(1000, f64::NAN, 2, 1000));
    assert!(bad(1000, 0.01, MAX_EXPANSION + 1, 1000));
    assert!(Window::new(10, 0.01, 2, BloomLayout::RedisBloom, 1000, &lim()).is_err());
}

/// The two-step generation check (`BloomChain::two_step_contains`: the first
/// `HEAD_PROBES` probes without branches, then the rest) answers exactly as a
/// plain chain lookup, item by item, for classic, blocked and paired generations with
/// one, two and three links (a burst) at every fill, across generation
/// boundaries and at small error rates (k above `HEAD_PROBES`) and large ones
/// (k below it).
#[test]
fn window_two_step_contains_matches_chain_contains() {
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        for p in [0.3, 0.01, 0.0001] {
            let w = 1000;
            let mut f = Window::new(400, p, 2, layout, w, &lim()).unwrap();
            let mut rng = Mix(7);
            let mut id = 0;
            for step in 0..12u64 {
                let now = 5_000_000 + step * 200;
                // Bursts in some generations: up to 3 links.
                let n = if step.is_multiple_of(3) { 900 } else { 100 };
                for _ in 0..n {
                    f.add(&member(id), now, &lim()).unwrap();
                    id += 1;
                }
                drop(f.take_retired());
                let mark = f.read_mark(now);
                for _ in 0..3000 {
                    let r = rng.next();
                    let h = if r.is_multiple_of(2) {
                        member(r % (id + 1))
                    } else {
                        probe(r)
                    };
                    for g in &f.gens {
                        assert_eq!(g.chain.two_step_contains(&h), g.chain.contains(&h));
                    }
                    let naive = f
                        .gens
                        .iter()
                        .filter(|g| g.index + u64::from(f.parts) >= mark)
                        .any(|g| g.chain.contains(&h));
                    assert_eq!(f.contains_marked(&h, mark), naive);
                }
            }
            assert!(f.gens.iter().any(|g| g.chain.links().len() >= 2));
        }
    }
}

/// Everything a window holds that its encodings carry: the header and each
/// generation's link bytes.
fn state(f: &Window) -> (Vec<u8>, Vec<Vec<u8>>) {
    let data = f
        .generation_list()
        .flat_map(|(_, g)| g.links().iter().map(|l| l.data().to_vec()))
        .collect();
    (f.encode_header(), data)
}

/// `add_batch` gives the same answers, errors and state as `add` item by item,
/// and `contains_batch` the same answers as `contains_marked`: classic, blocked
/// and paired layouts, scaling and not, batches of 1 to 300 items drawn from a
/// pool (repeats within and across batches), times that stay in a generation,
/// skip several or go back, and limits that refuse new links on the way.
#[test]
fn window_batches_answer_and_change_like_single_items() {
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        for (expansion, cap) in [(2u32, 300u64), (0, 300), (1, 40)] {
            let mut rng = Mix(u64::from(expansion) * 31 + cap);
            let limits = Limits {
                max_bytes: 40_000,
                max_links: 9,
                max_filters: 1,
            };
            let mk = || Window::new(cap, 0.01, expansion, layout, 1000, &lim()).unwrap();
            let (mut a, mut b) = (mk(), mk());
            let mut now = 3_000_000u64;
            let (mut errors, mut fulls) = (0, 0);
            for _ in 0..120 {
                now = match rng.next() % 8 {
                    0 => now.saturating_sub(300),
                    1 => now + 900 + rng.next() % 2000,
                    _ => now + rng.next() % 120,
                };
                let n = 1 + (rng.next() % 300) as usize;
                let items: Vec<ItemHash> = (0..n).map(|_| member(rng.next() % 2000)).collect();
                let mut one = Vec::new();
                a.advance(now);
                for h in &items {
                    let r = a.add(h, now, &limits);
                    let stop = r == Err(BloomError::Full);
                    one.push(r);
                    if stop {
                        break;
                    }
                }
                let mut batch = Vec::new();
                b.add_batch(&items, now, &limits, |r| {
                    let go = r != Err(BloomError::Full);
                    batch.push(r);
                    go
                });
                assert_eq!(one, batch, "{layout:?} x{expansion} at {now}");
                errors += one.iter().filter(|r| r.is_err()).count();
                fulls += one.iter().filter(|r| **r == Err(BloomError::Full)).count();
                drop((a.take_retired(), b.take_retired()));
                assert_eq!(state(&a), state(&b), "{layout:?} x{expansion} at {now}");
                // Lookups at this time and at a later one (older generations
                // skipped by the mark).
                for t in [now, now + 700] {
                    let mark = b.read_mark(t);
                    let probes: Vec<ItemHash> = (0..500)
                        .map(|i| {
                            if i % 2 == 0 {
                                member(rng.next() % 2000)
                            } else {
                                probe(rng.next())
                            }
                        })
                        .collect();
                    let mut found = vec![0u64; probes.len().div_ceil(64)];
                    b.contains_batch(&probes, mark, &mut found);
                    for (i, h) in probes.iter().enumerate() {
                        let bit = (found[i / 64] >> (i % 64)) & 1 == 1;
                        assert_eq!(bit, b.contains_marked(h, mark), "{layout:?} item {i}");
                    }
                }
            }
            // The limits and NONSCALING refused on the way, so the error paths
            // were compared too.
            assert!(errors > 0, "{layout:?} x{expansion}: no refusals");
            if expansion == 0 {
                assert!(fulls > 0, "{layout:?}: never full");
            }
        }
    }
}
