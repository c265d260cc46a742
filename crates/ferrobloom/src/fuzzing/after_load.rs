//! What commands do to a filter after it loaded: every target that loads a
//! filter (RDB payloads, LOADCHUNK headers, files, RedisBloom's payloads)
//! hands it here, which adds items, looks them up and (for a windowed filter)
//! moves time on so that generations rotate, open and grow links, at phases
//! early and late in each generation. Nothing may panic whatever state the
//! readers accepted, an added item is found, and the filter it leaves dumps
//! and loads back ([`check_bloom`], [`check_cuckoo`]).

use super::checks::{check_bloom, check_cuckoo};
use super::*;

/// Items added after a load (a few links' worth under [`MAX_BYTES`]).
const ITEMS: u64 = 240;
/// Time steps of a windowed filter: each `2/5` of a generation (phases 0,
/// 0.4, 0.8, 0.2, 0.6 of the generations they reach, over six windows).
const STEPS: u64 = 60;
/// Items added at once at phase 0.8 (every fifth step): a burst late in a
/// generation, whose growth link is sized from the little time left.
const BURST: u64 = 60;

fn item(i: u64) -> [u8; 12] {
    let mut b = *b"after-\0\0\0\0\0\0";
    b[6..].copy_from_slice(&i.to_le_bytes()[..6]);
    b
}

/// Adds and looks up items in a loaded Bloom filter (module doc).
pub(super) fn exercise_bloom(c: &mut BloomFilter) {
    let limits = limits();
    match c.as_window_mut() {
        Some(w) => {
            let start = w.last_ms();
            // The local loaders anchor to this machine's clock: anchored to
            // the newest change instead, the run is the same on every machine.
            w.anchor(start);
            let gen = (w.window_ms() / u64::from(w.parts().max(1))).max(1);
            let mut i = 0u64;
            for step in 0..STEPS {
                let now = start.saturating_add(step.saturating_mul(gen).saturating_mul(2) / 5);
                let n = if step % 5 == 2 { BURST } else { 4 };
                for _ in 0..n {
                    let h = w.hash(&item(i));
                    i += 1;
                    let t = w.write_time(now);
                    if w.add(&h, t, &limits).is_ok() {
                        assert!(w.contains(&h, t), "an item added after a load is not found");
                    }
                    drop(w.take_retired());
                }
                let _ = (w.items_at(now), w.read_mark(now), w.mem_usage());
            }
        }
        // Any kind time does not change.
        None => {
            for i in 0..ITEMS {
                let h = c.hash(&item(i));
                if c.add_hash(&h, 0, &limits).is_ok() {
                    assert!(
                        c.contains_marked(&h, 0),
                        "an item added after a load is not found"
                    );
                }
            }
        }
    }
    // The batch path the local API uses, at the filter's time.
    let items: Vec<[u8; 12]> = (ITEMS..ITEMS + 64).map(item).collect();
    let now = c.as_window().map_or(0, |w| w.last_ms());
    let added = c.add_items(items.iter().map(|b| &b[..]), now, &limits);
    let found = c.contains_items(items.iter().map(|b| &b[..]), now);
    for (a, f) in added.iter().zip(&found) {
        assert!(a.is_err() || *f, "an item added in a batch is not found");
    }
    let _ = (c.items(), c.capacity(), c.link_count(), c.mem_usage());
    check_bloom(c);
}

/// Adds, deletes and looks up items in a loaded cuckoo filter (module doc).
pub(super) fn exercise_cuckoo(f: &mut CuckooFilter) {
    for i in 0..ITEMS {
        let h = f.hash(&item(i));
        if f.insert(&h, MAX_FILTERS, MAX_BYTES).is_ok() {
            assert!(f.contains(&h) && f.count(&h) >= 1, "added item not found");
        }
        if i % 3 == 0 {
            let h = f.hash(&item(i / 2));
            let present = f.contains(&h);
            assert_eq!(f.delete(&h), present);
        }
    }
    let _ = f.compact_step(64);
    check_cuckoo(f);
}
