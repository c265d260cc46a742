//! Shape plans (`bloom/plan.rs`): a replay given the links its primary added
//! builds the same filter, whatever its own sizing rules would give.

use super::bloom::{
    decode_shapes, encode_shapes, BloomChain, BloomLayout, Limits, LinkShape, ShapePlan,
};
use super::hash::HashScheme;
use super::window::Window;

fn lim() -> Limits {
    Limits::default()
}

fn item(i: u64) -> super::hash::ItemHash {
    HashScheme::Xxh3.bloom(&i.to_le_bytes())
}

/// The same shapes with one more 512-bit block each: what a release with
/// other sizing rules might have sent.
fn other_rules(shapes: &[LinkShape]) -> Vec<LinkShape> {
    shapes
        .iter()
        .map(|s| LinkShape {
            bits: s.bits + 512,
            storage: (s.bits + 512) / 8,
            ..*s
        })
        .collect()
}

fn chain_state(c: &BloomChain) -> (Vec<u8>, Vec<Vec<u8>>) {
    let data = c.links().iter().map(|l| l.data().to_vec()).collect();
    (c.encode_header(), data)
}

/// Adds `items` in writes of `per` items, each under a plan: returns the
/// shapes each write added.
fn chain_writes(c: &mut BloomChain, items: u64, per: u64) -> Vec<Vec<LinkShape>> {
    let mut writes = Vec::new();
    for w in 0..items / per {
        c.set_plan(ShapePlan::record());
        for i in w * per..(w + 1) * per {
            c.add(&item(i), &lim()).unwrap();
        }
        writes.push(c.take_plan().unwrap().added().to_vec());
    }
    writes
}

#[test]
fn shapes_round_trip_through_the_header_codec() {
    for layout in [
        BloomLayout::Classic,
        BloomLayout::ClassicDouble,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        let mut c = BloomChain::with_layout(100, 0.01, 2, layout, &lim()).unwrap();
        let writes = chain_writes(&mut c, 2000, 100);
        let shapes: Vec<LinkShape> = writes.concat();
        assert!(shapes.len() >= 3, "{layout:?}: the stream grows the chain");
        let back = decode_shapes(&encode_shapes(&shapes)).unwrap();
        assert_eq!(back.len(), shapes.len());
        for (a, b) in back.iter().zip(&shapes) {
            assert_eq!(
                (a.entries, a.error.to_bits(), a.bits, a.hashes, a.layout),
                (b.entries, b.error.to_bits(), b.bits, b.hashes, b.layout)
            );
        }
    }
}

#[test]
fn decode_refuses_what_a_loaded_link_may_not_be() {
    let c = BloomChain::with_layout(100, 0.01, 2, BloomLayout::Blocked, &lim()).unwrap();
    let good = encode_shapes(&[*c.links()[0].shape()]);
    assert!(decode_shapes(&good).is_ok());
    // Link record at 24: entries +0, items +8, error +16, bits +24, hashes +32, layout +36.
    let mut bad = good.clone();
    bad[24 + 36] = 2; // RedisBloom's layout
    assert!(decode_shapes(&bad).is_err());
    let mut bad = good.clone();
    bad[24 + 24..24 + 32].copy_from_slice(&64u64.to_le_bytes()); // a partial block
    assert!(decode_shapes(&bad).is_err());
    let mut bad = good.clone();
    bad[24..32].copy_from_slice(&(1u64 << 40).to_le_bytes()); // capacity above its bits
    assert!(decode_shapes(&bad).is_err());
    let mut bad = good.clone();
    bad[24 + 8] = 1; // a count
    assert!(decode_shapes(&bad).is_err());
    assert!(decode_shapes(&good[..good.len() - 1]).is_err());
}

#[test]
fn a_chain_replay_takes_the_given_shapes() {
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        let mut primary = BloomChain::with_layout(100, 0.01, 2, layout, &lim()).unwrap();
        let writes = chain_writes(&mut primary, 3000, 150);
        // The primary's links under other rules: a replay given them builds
        // them, and one that computes builds others.
        let given: Vec<Vec<LinkShape>> = writes.iter().map(|w| other_rules(w)).collect();
        let mut replica = BloomChain::with_layout(100, 0.01, 2, layout, &lim()).unwrap();
        let mut computed = BloomChain::with_layout(100, 0.01, 2, layout, &lim()).unwrap();
        for (w, shapes) in given.iter().enumerate() {
            replica.set_plan(ShapePlan::replay(shapes.clone()));
            for i in w as u64 * 150..(w as u64 + 1) * 150 {
                replica.add(&item(i), &lim()).unwrap();
                computed.add(&item(i), &lim()).unwrap();
            }
            let plan = replica.take_plan().unwrap();
            assert!(!plan.diverged(), "{layout:?}: write {w}");
            assert_eq!(plan.added().len(), shapes.len());
        }
        let bits: Vec<u64> = replica.links().iter().map(|l| l.shape().bits).collect();
        let want: Vec<u64> = std::iter::once(primary.links()[0].shape().bits)
            .chain(given.concat().iter().map(|s| s.bits))
            .collect();
        assert_eq!(bits, want, "{layout:?}");
        assert_ne!(chain_state(&replica), chain_state(&computed));
        // Given the primary's own shapes, the replay is the primary.
        let mut same = BloomChain::with_layout(100, 0.01, 2, layout, &lim()).unwrap();
        for (w, shapes) in writes.iter().enumerate() {
            same.set_plan(ShapePlan::replay(shapes.clone()));
            for i in w as u64 * 150..(w as u64 + 1) * 150 {
                same.add(&item(i), &lim()).unwrap();
            }
            assert!(!same.take_plan().unwrap().diverged());
        }
        assert_eq!(chain_state(&same), chain_state(&primary));
    }
}

#[test]
fn a_shape_that_does_not_fit_is_computed_instead() {
    let mut a = BloomChain::with_layout(100, 0.01, 2, BloomLayout::Paired, &lim()).unwrap();
    let mut b = BloomChain::with_layout(100, 0.01, 2, BloomLayout::Paired, &lim()).unwrap();
    // Above the expansion times the full link, and of another layout family.
    let big = LinkShape {
        entries: 100_000,
        ..*a.links()[0].shape()
    };
    let classic = *BloomChain::new(200, 0.005, 2, &lim()).unwrap().links()[0].shape();
    a.set_plan(ShapePlan::replay(vec![big, classic, classic]));
    for i in 0..350 {
        a.add(&item(i), &lim()).unwrap();
        b.add(&item(i), &lim()).unwrap();
    }
    let plan = a.take_plan().unwrap();
    assert!(plan.diverged());
    assert_eq!(chain_state(&a), chain_state(&b));
}

/// A windowed stream: `per` items every 50 ms over 40 windows of 1 s, with a
/// burst every 7th step, each step one write under a plan.
fn window_writes(w: &mut Window, given: Option<&[Vec<LinkShape>]>) -> Vec<Vec<LinkShape>> {
    let start = 1_764_000_000_000u64;
    let mut out = Vec::new();
    let mut id = 0u64;
    for step in 0..800u64 {
        let n = if step % 7 == 3 { 400 } else { 40 };
        let plan = match given {
            Some(g) => ShapePlan::replay(g[step as usize].clone()),
            None => ShapePlan::record(),
        };
        w.set_plan(plan);
        let hashes: Vec<_> = (id..id + n).map(item).collect();
        id += n;
        w.add_batch(&hashes, start + step * 50, &lim(), |r| r.is_ok());
        let plan = w.take_plan().unwrap();
        assert!(!plan.diverged(), "step {step}");
        out.push(plan.added().to_vec());
    }
    out
}

#[test]
fn a_window_replay_takes_the_given_shapes() {
    for expansion in [2, 0] {
        let mk = || Window::new(1000, 0.01, expansion, BloomLayout::Paired, 1000, &lim()).unwrap();
        let mut primary = mk();
        let writes = window_writes(&mut primary, None);
        let links: usize = writes.iter().map(Vec::len).sum();
        assert!(links > 40, "the stream opens generations and grows them");
        let mut same = mk();
        window_writes(&mut same, Some(&writes));
        assert_eq!(same.encode_header(), primary.encode_header());
        // Other rules' shapes are taken as given.
        let other: Vec<Vec<LinkShape>> = writes.iter().map(|w| other_rules(w)).collect();
        let mut replica = mk();
        let got = window_writes(&mut replica, Some(&other));
        assert_eq!(got, other);
        assert_ne!(replica.encode_header(), primary.encode_header());
    }
}
