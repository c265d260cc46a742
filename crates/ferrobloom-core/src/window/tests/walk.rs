//! Live copies of windowed filters (walk iterators) and the clock rules, with
//! an injected clock.

use super::*;
use crate::bloom::BloomLayout;
use crate::filter::BloomFilter;
use crate::hash::ItemHash;

fn item(i: u64) -> ItemHash {
    ItemHash::of(&i.to_le_bytes())
}

fn lim() -> Limits {
    Limits::default()
}

/// A window of 4 s (generations of 1 s) for `cap` items per window.
fn window(cap: u64, expansion: u32) -> Window {
    Window::new(cap, 0.01, expansion, BloomLayout::Paired, 4_000, &lim()).unwrap()
}

/// Walks `f` from its header with `between(f, step)` run before each data
/// chunk, loading every chunk into a copy, as a client copying a live key.
fn live_copy(
    f: &mut BloomFilter,
    mut between: impl FnMut(&mut BloomFilter, usize),
) -> Result<BloomFilter, BloomError> {
    let mut copy = BloomFilter::from_header(&f.encode_header(), &lim())?;
    let mut it = 1;
    let mut step = 0;
    loop {
        between(f, step);
        step += 1;
        let Some((next, data)) = f.scandump_walk(it)? else {
            break;
        };
        let data = data.to_vec();
        copy.load_chunk(next, &data)?;
        it = next;
    }
    Ok(copy)
}

#[test]
fn walk_iterators_round_trip_and_refuse_positions() {
    assert_eq!(split_walk_iter(walk_iter(5, 1).unwrap()), Some((5, 1)));
    let top = WALK_GENERATIONS * 3 + 7;
    let it = walk_iter(top, (1 << 44) - 1).unwrap();
    assert_eq!(split_walk_iter(it), Some((7, (1 << 44) - 1)));
    assert!(walk_iter(1, 0).is_none());
    assert!(walk_iter(1, 1 << 44).is_none());
    assert!(split_walk_iter(1).is_none());
    assert!(split_walk_iter(-1).is_none());
    let mut w = window(100, 2);
    w.add(&item(1), 10_000, &lim()).unwrap();
    assert_eq!(w.walk_chunk(2), Err(BloomError::BadChunk));
    assert!(w.walk_chunk(1).unwrap().is_some());
}

/// A walk across a generation boundary: every generation after the first is
/// read after a write that dropped the oldest one. With position iterators the
/// copy took every later generation's bits in another's place; with walk
/// iterators every item still inside the window answers 1 in the copy.
#[test]
fn live_copy_across_a_rotation_keeps_every_live_item() {
    for expansion in [0, 2] {
        let mut w = window(400, expansion);
        // Five generations (t = 10 s .. 14 s), 100 items each.
        for g in 0..5u64 {
            for i in 0..100 {
                w.add(&item(g * 1000 + i), 10_000 + g * 1000, &lim())
                    .unwrap();
            }
        }
        let mut f = BloomFilter::from(w);
        let copy = live_copy(&mut f, |f, step| {
            // After the first chunk: one generation later (drops t = 10 s) and a
            // new item (a new generation after the header).
            if step == 1 {
                let w = f.as_window_mut().unwrap();
                w.add(&item(99_999), 15_000, &lim()).unwrap();
            }
        })
        .unwrap();
        let (a, b) = (f.as_window().unwrap(), copy.as_window().unwrap());
        let now = 15_000;
        for g in 1..5u64 {
            for i in 0..100 {
                let h = item(g * 1000 + i);
                assert!(a.contains(&h, now));
                assert!(
                    b.contains(&h, now),
                    "expansion {expansion} gen {g} item {i}"
                );
            }
        }
        // Written after the header: not in the copy (its chunks were skipped).
        assert!(!b.contains(&item(99_999), now));
        // The position walk of the same interleaving loses items.
        let mut w = window(400, expansion);
        for g in 0..5u64 {
            for i in 0..100 {
                w.add(&item(g * 1000 + i), 10_000 + g * 1000, &lim())
                    .unwrap();
            }
        }
        let mut copy = BloomFilter::from_header(&w.encode_header(), &lim()).unwrap();
        let (mut it, mut step) = (1, 0);
        loop {
            if step == 1 {
                w.add(&item(99_999), 15_000, &lim()).unwrap();
            }
            step += 1;
            let Some((next, data)) = w.scandump_chunk(it) else {
                break;
            };
            let data = data.to_vec();
            if copy.load_chunk(next, &data).is_err() {
                break;
            }
            it = next;
        }
        let b = copy.as_window().unwrap();
        let lost = (1..5u64)
            .flat_map(|g| (0..100).map(move |i| item(g * 1000 + i)))
            .filter(|h| !b.contains(h, now))
            .count();
        assert!(lost > 0, "position iterators shift (expansion {expansion})");
    }
}

/// The current generation grows a link during the walk: its chunk is past the
/// copy's links and skipped; every item of the header's time is kept.
#[test]
fn live_copy_while_the_current_generation_grows() {
    let mut w = window(400, 2);
    for i in 0..100 {
        w.add(&item(i), 10_000, &lim()).unwrap();
    }
    let links = w.link_count();
    let mut f = BloomFilter::from(w);
    let copy = live_copy(&mut f, |f, step| {
        if step == 1 {
            let w = f.as_window_mut().unwrap();
            for i in 0..400 {
                w.add(&item(5_000 + i), 10_000, &lim()).unwrap();
            }
        }
    })
    .unwrap();
    assert!(f.link_count() > links);
    let b = copy.as_window().unwrap();
    assert!((0..100).all(|i| b.contains(&item(i), 10_000)));
    assert_eq!(copy.link_count(), links);
}

/// A clock step back of 10 windows in the middle of a stream at 80% of the
/// capacity: no write is refused (NONSCALING), memory stays at the steady
/// state, an item added after the step is remembered for `W` and forgotten
/// by `1.25·W` of the clock time after the step, and nothing is reordered.
#[test]
fn clock_step_back_keeps_the_rotation() {
    const W: u64 = 4_000;
    for expansion in [0, 2] {
        let mut w = Window::new(1_000, 0.01, expansion, BloomLayout::Paired, W, &lim()).unwrap();
        let start = 1_700_000_000_000u64;
        // 800 items per window: one every 5 ms.
        let mut steady = 0;
        let mut n = 0u64;
        let mut clock = start;
        let step_at = start + 10 * W;
        let mut stepped = false;
        let mut watched = None;
        while clock < step_at + 20 * W {
            if !stepped && clock >= step_at {
                stepped = true;
                clock -= 10 * W;
            }
            if !stepped && clock >= step_at - 8 * W {
                // The steady state: the largest size over the eight windows
                // before the step (generations are sized from the stream).
                steady = steady.max(w.mem_usage());
            }
            let t = w.write_time(clock);
            w.add(&item(n), t, &lim())
                .unwrap_or_else(|e| panic!("expansion {expansion} item {n}: {e:?}"));
            if stepped && watched.is_none() {
                watched = Some((n, clock));
            }
            if stepped {
                // Generations are sized from the observed rate, so a stream
                // shifted against the generation boundaries by the step may size
                // a few percent differently; a stalled rotation costs many times
                // the steady size (12x measured).
                assert!(
                    w.mem_usage() <= steady + steady / 20,
                    "expansion {expansion}: {} > steady {steady}",
                    w.mem_usage()
                );
            }
            if let Some((id, at)) = watched {
                let age = clock - at;
                if age <= W {
                    assert!(w.contains(&item(id), clock), "forgotten at {age} ms");
                }
                if age >= W + W / 4 {
                    // Forgotten: only its own false-positive chance remains,
                    // and its generation is gone.
                    assert!(w
                        .generation_list()
                        .all(|(g, _)| g > w.gen_index(at + w.ahead_ms())));
                }
            }
            n += 1;
            clock += 5;
        }
        // The last write before the step was 5 ms before it.
        assert_eq!(w.ahead_ms(), 10 * W - 5);
    }
}

/// The time a load or a replicated write anchors: a filter whose newest change
/// is 50 years ahead goes on from it at the clock's rate.
#[test]
fn a_future_newest_change_runs_on_at_the_clock_rate() {
    const W: u64 = 1_000;
    let fifty_years = 50 * 31_557_600_000u64;
    let now = 1_700_000_000_000u64;
    let mut w = Window::new(100, 0.01, 0, BloomLayout::Paired, W, &lim()).unwrap();
    w.add(&item(1), now + fifty_years, &lim()).unwrap();
    let mut f = Window::from_header(&w.encode_header(), &lim()).unwrap();
    f.anchor(now);
    assert_eq!(f.ahead_ms(), fifty_years);
    // 400 items over 4 s at capacity 100 per second: all taken.
    for i in 0..400u64 {
        let t = f.write_time(now + i * 10);
        f.add(&item(100 + i), t, &lim()).unwrap();
    }
    assert!(!f.contains(&item(100), now + 4_000));
    assert!(f.contains(&item(499), now + 4_000));
    // Anchoring never moves the time back.
    f.anchor(now + fifty_years * 2);
    assert_eq!(f.ahead_ms(), 0);
    assert!(f.contains(&item(499), now + 3_990));
}

/// Walk iterators carry a generation's index modulo [`WALK_GENERATIONS`]: a
/// live copy whose generations straddle a multiple of it (residues ..., 2^18 -
/// 1, 0, 1, ...) keeps every live item, and resolves each residue to the right
/// generation, as far from time 0 as a filter gets.
#[test]
fn live_copy_across_the_iterator_residue_wrap() {
    for first in [
        WALK_GENERATIONS - 2,
        WALK_GENERATIONS * 1000 - 3,
        WALK_GENERATIONS * 5_000_000 - 1,
    ] {
        // Generations of 1 s: generation g starts at g * 1000 ms.
        let t0 = first * 1000;
        let mut w = window(400, 2);
        for g in 0..5u64 {
            for i in 0..100 {
                w.add(&item(g * 1000 + i), t0 + g * 1000, &lim()).unwrap();
            }
        }
        let mut f = BloomFilter::from(w);
        let copy = live_copy(&mut f, |f, step| {
            if step == 1 {
                let w = f.as_window_mut().unwrap();
                w.add(&item(99_999), t0 + 5_000, &lim()).unwrap();
            }
        })
        .unwrap();
        let b = copy.as_window().unwrap();
        let now = t0 + 5_000;
        for g in 1..5u64 {
            for i in 0..100 {
                assert!(
                    b.contains(&item(g * 1000 + i), now),
                    "first {first} gen {g} item {i}"
                );
            }
        }
        assert!(!b.contains(&item(99_999), now));
        // Each generation's bits went to the generation of the same index:
        // every generation both hold has the same items and the same bytes.
        let a = f.as_window().unwrap();
        let mut same = 0;
        for gb in &b.gens {
            if let Some(ga) = a.gens.iter().find(|g| g.index == gb.index) {
                assert_eq!(ga.chain.items(), gb.chain.items(), "first {first}");
                let bytes = |c: &BloomChain| -> Vec<Vec<u8>> {
                    c.links().iter().map(|l| l.data().to_vec()).collect()
                };
                assert_eq!(bytes(&ga.chain), bytes(&gb.chain), "first {first}");
                same += 1;
            }
        }
        assert_eq!(same, 4, "first {first}");
    }
}
