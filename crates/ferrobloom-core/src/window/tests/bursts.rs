//! Whole batches at one instant, at any phase of their generation: a stream
//! 20% over the capacity in one batch a generation
//! stays within a few links, and a replica fed only what the primary accepted
//! builds the same links.

use super::*;

/// `W = 600 s`, `K = 4`: generations of 150 s.
const W: u64 = 600_000;
const GEN: u64 = W / 4;
/// Generation boundaries are absolute: this is one.
const G0: u64 = 12_000 * GEN;

/// The `n` items of generation `g`'s batch.
fn batch(g: u64, n: u64) -> Vec<ItemHash> {
    (0..n).map(|i| key(3, g * 1_000_000 + i)).collect()
}

/// Feeds `per` items at once into each of `gens` generations of a filter of
/// capacity 4,000 (1% error), the batch of generation `g` at `phase(g)` ms
/// into it. Returns the filter and the links each generation ended with.
fn feed(per: u64, gens: u64, phase: impl Fn(u64) -> u64) -> (Window, Vec<usize>) {
    let mut f = window(4_000, 0.01, 2, W);
    let mut links = Vec::new();
    for g in 0..gens {
        let now = G0 + g * GEN + phase(g);
        let mut refused = 0;
        f.add_batch(&batch(g, per), now, &lim(), |r| {
            refused += usize::from(r.is_err());
            true
        });
        drop(f.take_retired());
        assert_eq!(refused, 0, "generation {g} at +{} ms", phase(g));
        let (index, chain) = f.generation_list().last().unwrap();
        assert_eq!(index, G0 / GEN + g);
        links.push(chain.links().len());
    }
    (f, links)
}

/// 1,200 items a generation into a capacity of 4,000 (a share of 1,000), the
/// batch at the start, the middle, the end or the last millisecond of its
/// generation, and at phases that change every generation. The first
/// generation (no history: a first link of a share, 1,000) takes the other
/// 200 in at most 4 growth links (at least 63, 63, 63 and 126 items: a
/// second link of a 16th of the first, two more of the previous, then
/// doubling); every later one fits its first link (a young stream whose
/// generations average more than a share is not held to the room the others
/// leave; then the trend plus `3·sqrt`), so the filter holds at most 5 + 4
/// links, far from bf.bf-max-links' 64 (held to the room, the fourth
/// generation would get a first link of 400 and the rest in 13-item links,
/// and at the last millisecond the batch would be refused).
#[test]
fn window_batches_over_the_capacity_stay_within_a_few_links() {
    let mut rng = Mix(27);
    let cases: [(&str, Vec<u64>); 6] = [
        ("start", vec![0; 16]),
        ("middle", vec![GEN / 2; 16]),
        ("end", vec![GEN * 9 / 10; 16]),
        ("last ms", vec![GEN - 1; 16]),
        (
            "alternating",
            (0..16).map(|g| [GEN - 1, 7, GEN * 3 / 4][g % 3]).collect(),
        ),
        ("random", (0..16).map(|_| rng.next() % GEN).collect()),
    ];
    for (name, phases) in cases {
        let (f, links) = feed(1_200, 16, |g| phases[g as usize]);
        assert!(links[0] <= 5, "{name}: {links:?}");
        assert!(links[1..].iter().all(|&n| n == 1), "{name}: {links:?}");
        assert!(f.link_count() <= 9, "{name}: {}", f.link_count());
    }
}

/// A stream at the capacity (1,000 a generation) that jumps to 1,200 in one
/// batch at the end of a generation: the first link is the room the others
/// leave (1,000, exact for a stream that keeps to the capacity), and the 200
/// over it take at most 4 growth links; the stream stays over, and the next
/// generations fit their first links again within one window.
#[test]
fn window_a_late_burst_over_the_room_takes_a_few_links() {
    let (_, links) = feed(1_000, 8, |_| GEN / 3);
    assert!(links.iter().all(|&n| n == 1), "{links:?}");
    let mut f = window(4_000, 0.01, 2, W);
    let mut links = Vec::new();
    for g in 0..16u64 {
        let (n, at) = if g < 8 {
            (1_000, GEN / 3)
        } else {
            (1_200, GEN - 1)
        };
        let mut refused = 0;
        f.add_batch(&batch(g, n), G0 + g * GEN + at, &lim(), |r| {
            refused += usize::from(r.is_err());
            true
        });
        drop(f.take_retired());
        assert_eq!(refused, 0);
        links.push(f.generation_list().last().unwrap().1.links().len());
    }
    assert!(links[8] <= 5, "{links:?}");
    assert!(links[12..].iter().all(|&n| n == 1), "{links:?}");
}

/// Adds `n` items of batch `g` at `now`; all accepted.
fn add_all(f: &mut Window, g: u64, n: u64, now: u64) {
    let mut refused = 0;
    f.add_batch(&batch(g, n), now, &lim(), |r| {
        refused += usize::from(r.is_err());
        true
    });
    drop(f.take_retired());
    assert_eq!(refused, 0);
}

/// The entries of each link of the newest generation.
fn newest_links(f: &Window) -> Vec<u64> {
    let (_, chain) = f.generation_list().last().unwrap();
    chain.links().iter().map(|l| l.shape().entries).collect()
}

/// A generation without history gets a share (1,000 of 4,000); 1,200 at once
/// in its middle project a rate of a whole share for the rest of it, but its
/// second link holds at most half of the first (it was a full share: 1,000
/// items for 200), and the batch still fits in a few links.
#[test]
fn window_a_fresh_generations_second_link_is_at_most_half_its_first() {
    for phase in [0, GEN / 2, GEN - 1] {
        let mut f = window(4_000, 0.01, 2, W);
        add_all(&mut f, 0, 1_200, G0 + phase);
        let links = newest_links(&f);
        assert_eq!(links[0], 1_000, "{links:?}");
        assert!(links[1] <= 500, "+{phase} ms: {links:?}");
        assert!(links.len() <= 5, "+{phase} ms: {links:?}");
    }
}

/// A stream whose last three generations took nearly a window's capacity
/// (1,300 each after 100: the first generation was partial) leaves the room
/// bound 100 items; the first link gets at least half a share (500 of 1,000),
/// not a quarter, so a stream going over the capacity takes the rest in a
/// few growth links.
#[test]
fn window_the_room_bound_leaves_at_least_half_a_share() {
    let mut f = window(4_000, 0.01, 2, W);
    for (g, n) in [100, 1_300, 1_300, 1_300].into_iter().enumerate() {
        add_all(&mut f, g as u64, n, G0 + g as u64 * GEN + GEN / 2);
    }
    add_all(&mut f, 4, 1, G0 + 4 * GEN + GEN / 2);
    assert_eq!(newest_links(&f), vec![500]);
}

/// With a window of history, a first link holds the busiest generation plus
/// the lesser of 5% and `3·sqrt` of it: 95,000 a generation into a capacity
/// of 400,000 get about 95,925 (5% would be 99,750; the room the others
/// leave, 115,000, does not bind; the few items a generation answered as
/// present by a false positive are not counted).
#[test]
fn window_first_links_take_three_standard_deviations_of_a_large_stream() {
    let mut f = window(400_000, 0.01, 2, W);
    for g in 0..5u64 {
        add_all(&mut f, g, 95_000, G0 + g * GEN + GEN / 3);
    }
    let links = newest_links(&f);
    assert_eq!(links.len(), 1);
    assert!((95_800..=95_925).contains(&links[0]), "{links:?}");
}

/// A replica, and an AOF replay, get `BF.INSERT key NOCREATE AT <t> ITEMS`
/// with the items the primary accepted (the ones its limits refused are left
/// out) and no limits of their own: fed that, a window builds the primary's
/// links byte for byte, with batches at every phase, growth links, and limits
/// that refuse items in the middle of batches on the primary.
#[test]
fn window_replicated_batches_build_the_primarys_links() {
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        let tight = Limits {
            max_bytes: 60_000,
            max_links: 7,
            max_filters: 1,
        };
        let unbounded = Limits {
            max_bytes: u64::MAX,
            max_links: MAX_LINKS_CEILING,
            max_filters: u32::MAX,
        };
        let mk = || Window::new(4_000, 0.01, 2, layout, W, &lim()).unwrap();
        let (mut primary, mut replica) = (mk(), mk());
        let mut rng = Mix(0x27);
        let mut now = G0;
        let (mut refused, mut grown) = (0, 0);
        for g in 0..40u64 {
            now += match rng.next() % 4 {
                0 => 0,
                1 => rng.next() % 1_000,
                _ => rng.next() % (2 * GEN),
            };
            let n = 200 + rng.next() % 2_000;
            // Items repeat within and across batches.
            let items: Vec<ItemHash> = (0..n).map(|_| member(rng.next() % 20_000)).collect();
            let mut accepted = Vec::new();
            let mut i = 0;
            primary.add_batch(&items, now, &tight, |r| {
                match r {
                    Ok(_) => accepted.push(items[i]),
                    Err(_) => refused += 1,
                }
                i += 1;
                true
            });
            if !accepted.is_empty() {
                replica.add_batch(&accepted, now, &unbounded, |r| {
                    assert!(r.is_ok());
                    true
                });
            }
            drop((primary.take_retired(), replica.take_retired()));
            grown = grown.max(
                primary
                    .gens
                    .iter()
                    .map(|g| g.chain.links().len())
                    .max()
                    .unwrap(),
            );
            // Both hold the same live generations (a write whose every item
            // was refused replicates nothing: compare after the next one).
            if !accepted.is_empty() {
                assert_eq!(state(&primary), state(&replica), "{layout:?} batch {g}");
            }
        }
        assert!(refused > 0, "{layout:?}: the limits never refused");
        assert!(grown >= 2, "{layout:?}: no growth links");
    }
}
