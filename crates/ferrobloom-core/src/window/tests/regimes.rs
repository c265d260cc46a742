//! The first link of a new generation by the history of the last `K`
//! generations: each line of `tests/fixtures/window_first_links.tsv` gives a
//! history, the regime it is read as and the items its first link gets
//! (`window/forecast.rs`). The fast test reads them through
//! [`History`]; the slow one builds windows whose generations hold those
//! counts and opens the next generation.

use super::*;
use crate::window::forecast::History;

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/window_first_links.tsv"
);

/// A line of the fixture: capacity, `K`, the counts (newest first), the
/// regime (its `Debug` form) and the first link's items.
struct Case {
    capacity: u64,
    parts: u32,
    counts: Vec<u64>,
    regime: String,
    items: u64,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(FILE).expect("tests/fixtures/window_first_links.tsv");
    let cases: Vec<Case> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "{l}");
            Case {
                capacity: f[0].parse().expect("capacity"),
                parts: f[1].parse().expect("K"),
                counts: f[2].split(',').map(|c| c.parse().expect("count")).collect(),
                regime: f[3].to_string(),
                items: f[4].parse().expect("items"),
            }
        })
        .collect();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    cases
}

#[test]
fn window_first_links_by_regime() {
    let cases = cases();
    for c in &cases {
        assert_eq!(c.counts.len(), c.parts as usize);
        let h = History::new(&c.counts, c.capacity, c.parts);
        let regime = h.regime();
        assert_eq!(format!("{regime:?}"), c.regime, "{:?}", c.counts);
        assert_eq!(h.first_link_items(regime), c.items, "{:?}", c.counts);
    }
    // Every regime is in the fixture.
    for name in [
        "Fresh",
        "Above",
        "YoungAbove",
        "Young(None)",
        "Young(Some(Spike(",
        "Young(Some(Dip(",
        "Young(Some(Share))",
        "Rising",
        "Spiking(",
        "Settled",
    ] {
        assert!(
            cases.iter().any(|c| c.regime.starts_with(name)),
            "no case of {name}"
        );
    }
}

/// The same through windows: generations `g0 .. g0+K-1` get the counts (fresh
/// items at each generation's first millisecond until it holds its count),
/// and generation `g0+K`'s first link holds the fixture's items.
#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "seconds: `make test` runs it (--features slow-tests)"
)]
fn window_first_links_by_regime_in_windows() {
    const W: u64 = 4_000;
    let g0 = 1_000u64;
    let mut id = 0u64;
    for c in &cases() {
        let mut w =
            Window::new(c.capacity, 0.01, 2, BloomLayout::Paired, W, &UNBOUNDED).expect("window");
        w.parts = c.parts;
        let k = u64::from(c.parts);
        for (j, &count) in c.counts.iter().enumerate().rev() {
            let g = g0 + k - 1 - j as u64;
            let now = u64::try_from((u128::from(g) * u128::from(W)).div_ceil(u128::from(k)))
                .expect("time");
            assert_eq!(w.gen_index(now), g);
            let held = |w: &Window| {
                w.gens
                    .last()
                    .filter(|x| x.index == g)
                    .map_or(0, |x| x.chain.items())
            };
            while held(&w) < count {
                id += 1;
                w.add(&key(9, id), now, &UNBOUNDED).expect("add");
            }
        }
        let shape = w.first_link(g0 + k).expect("first link");
        assert_eq!(shape.entries, c.items.max(1), "{:?}", c.counts);
    }
}
