//! Unit and property tests of the cuckoo filter core.

use super::filter::*;
use super::*;
use std::collections::HashMap;

const NOCAP: u64 = u64::MAX;

use crate::test_rng::SplitMix;

fn params(capacity: u64, bucket_size: u8, expansion: u32, fp_bits: u8) -> CuckooParams {
    CuckooParams {
        capacity,
        bucket_size,
        max_iterations: 20,
        expansion,
        fp_bits,
        error_rate: None,
        redisbloom: false,
    }
}

fn key(tag: u64, i: u64) -> [u8; 8] {
    (i | (tag << 56)).to_le_bytes()
}

/// Header + all slot bytes, for byte-identity checks.
fn snapshot(f: &CuckooFilter) -> (Vec<u8>, Vec<Vec<u8>>) {
    (
        f.encode_header(),
        f.subfilter_bytes().map(|s| s.to_vec()).collect(),
    )
}

fn check_occupancy(f: &CuckooFilter) {
    let mut total = 0;
    for s in &f.subs {
        let real = s.count_occupied(&f.layout, 0, s.slots);
        assert_eq!(real, s.occupied);
        total += real;
    }
    assert_eq!(total, f.num_items);
}

#[test]
fn shapes_match_redisbloom() {
    for (cap, bs, buckets) in [
        (1000, 2, 512),
        (10, 2, 8),
        (10000, 2, 8192),
        (64, 1, 64),
        (256, 4, 64),
        (2, 1, 2),
    ] {
        let f = CuckooFilter::new(&params(cap, bs, 1, 8), NOCAP).unwrap();
        assert_eq!(f.base_buckets(), buckets, "{cap}/{bs}");
    }
    let f = CuckooFilter::new(&CuckooParams::default(), NOCAP).unwrap();
    assert_eq!(f.mem_usage(), 40 + 16 + 1024);
    let f = CuckooFilter::new(&params(1000, 2, 1, 8), NOCAP).unwrap();
    assert_eq!(f.mem_usage(), 1080);
    let f = CuckooFilter::new(&params(1000, 2, 1, 12), NOCAP).unwrap();
    assert_eq!(f.mem_usage(), 40 + 16 + 1536);
    let f = CuckooFilter::new(&params(1000, 2, 3, 8), NOCAP).unwrap();
    assert_eq!(f.expansion(), 4);
    let f = CuckooFilter::new(&params(1000, 2, 0, 8), NOCAP).unwrap();
    assert_eq!(f.expansion(), 0);
}

#[test]
fn new_rejects_nonsense() {
    let bad = [
        params(0, 2, 1, 8),
        params(3, 2, 1, 8),
        params(1000, 0, 1, 8),
        params(1000, 2, 32769, 8),
        params(1000, 2, 1, 3),
        params(1000, 2, 1, 33),
        params(u64::MAX, 1, 1, 8),
        CuckooParams {
            max_iterations: 0,
            ..params(1000, 2, 1, 8)
        },
        CuckooParams {
            error_rate: Some(f64::NAN),
            ..params(1000, 2, 1, 8)
        },
        CuckooParams {
            error_rate: Some(1.0),
            ..params(1000, 2, 1, 8)
        },
    ];
    for p in bad {
        assert!(CuckooFilter::new(&p, NOCAP).is_err(), "{p:?}");
    }
    assert_eq!(
        CuckooFilter::new(&params(1 << 30, 1, 1, 32), 1 << 20).unwrap_err(),
        CuckooError::MemoryCap
    );
}

#[test]
fn round_trips_all_widths() {
    for fp_bits in [4u8, 5, 7, 8, 9, 12, 13, 16, 20, 31, 32] {
        for bs in [1u8, 2, 3, 4, 7] {
            let mut f = CuckooFilter::new(&params(4000, bs, 1, fp_bits), NOCAP).unwrap();
            let n = 1500u64;
            for i in 0..n {
                f.insert(&hash_item(&key(1, i)), 64, NOCAP).unwrap();
            }
            check_occupancy(&f);
            for i in 0..n {
                assert!(
                    f.contains(&hash_item(&key(1, i))),
                    "f={fp_bits} b={bs} i={i}"
                );
            }
            for i in 0..n / 2 {
                assert!(f.delete(&hash_item(&key(1, i))));
            }
            for i in n / 2..n {
                assert!(f.contains(&hash_item(&key(1, i))));
            }
            assert_eq!(f.num_items(), n - n / 2);
            check_occupancy(&f);
        }
    }
}

#[test]
fn count_duplicates_and_coinciding_buckets() {
    let mut f = CuckooFilter::new(&params(1024, 4, 1, 8), NOCAP).unwrap();
    let h = hash_item(b"dup");
    for i in 1..=5 {
        f.insert(&h, 32, NOCAP).unwrap();
        assert_eq!(f.count(&h), i);
    }
    assert!(!f.insert_unique(&h, 32, NOCAP).unwrap());
    assert!(f.insert_unique(&hash_item(b"new"), 32, NOCAP).unwrap());
    for i in (0..5).rev() {
        assert!(f.delete(&h));
        assert_eq!(f.count(&h), i);
    }
    assert!(!f.delete(&h));
    // Both candidate buckets coincide: count must not double (Q10).
    let mut f = CuckooFilter::new(&params(8, 4, 1, 8), NOCAP).unwrap();
    assert_eq!(f.base_buckets(), 2);
    let h = (0u64..)
        .map(|i| hash_item(&key(0, i)))
        .find(|h| alt_hash(h.fingerprint(8)) & 1 == 0)
        .unwrap();
    f.insert(&h, 32, NOCAP).unwrap();
    assert_eq!(f.count(&h), 1);
    f.insert(&h, 32, NOCAP).unwrap();
    assert_eq!(f.count(&h), 2);
    assert!(f.delete(&h));
    assert_eq!(f.count(&h), 1);
}

#[test]
fn delete_absent_changes_nothing() {
    for fp_bits in [8u8, 12, 16] {
        let mut f = CuckooFilter::new(&params(64, 2, 1, fp_bits), NOCAP).unwrap();
        for i in 0..300 {
            f.insert(&hash_item(&key(1, i)), 64, NOCAP).unwrap();
        }
        assert!(f.num_filters() > 1);
        let before = snapshot(&f);
        let mut misses = 0;
        for i in 0..2000 {
            let h = hash_item(&key(2, i));
            if !f.contains(&h) {
                assert!(!f.delete(&h));
                misses += 1;
            }
        }
        assert!(misses > 1000);
        assert_eq!(before, snapshot(&f));
    }
}

#[test]
fn failed_insert_leaves_table_identical() {
    for (bs, fp_bits) in [(1u8, 8u8), (2, 8), (4, 12), (3, 16), (2, 5)] {
        let mut f = CuckooFilter::new(
            &CuckooParams {
                max_iterations: 50,
                ..params(256, bs, 0, fp_bits)
            },
            NOCAP,
        )
        .unwrap();
        let mut failures = 0;
        let mut inserted = Vec::new();
        for i in 0..2000 {
            let h = hash_item(&key(3, i));
            let before = snapshot(&f);
            match f.insert(&h, 32, NOCAP) {
                Ok(()) => inserted.push(h),
                Err(e) => {
                    assert_eq!(e, CuckooError::Full);
                    assert_eq!(before, snapshot(&f));
                    failures += 1;
                }
            }
        }
        assert!(failures > 100);
        for h in &inserted {
            assert!(f.contains(h));
        }
        check_occupancy(&f);
    }
}

#[test]
fn growth_and_max_expansions_per_growth() {
    // 2 buckets x 2 slots per sub-filter, expansion 1 (RedisBloom's `CF.RESERVE cf 4`).
    let mut f = CuckooFilter::new(&params(4, 2, 1, 8), NOCAP).unwrap();
    let mut added = 0u64;
    let err = loop {
        match f.insert(&hash_item(added.to_string().as_bytes()), 32, NOCAP) {
            Ok(()) => added += 1,
            Err(e) => break e,
        }
        assert!(f.num_filters() <= 32);
    };
    assert_eq!(err, CuckooError::MaxExpansions);
    assert_eq!(f.num_filters(), 32);
    assert!(added > 100 && added <= 128, "{added}");
    // Expansion 2: sizes double; the limit is enforced per growth.
    let mut f = CuckooFilter::new(&params(8, 2, 2, 8), NOCAP).unwrap();
    let mut i = 0u64;
    let err = loop {
        if let Err(e) = f.insert(&hash_item(&key(4, i)), 5, NOCAP) {
            break e;
        }
        i += 1;
    };
    assert_eq!(err, CuckooError::MaxExpansions);
    assert_eq!(
        f.subfilter_buckets().collect::<Vec<_>>(),
        vec![4, 8, 16, 32, 64]
    );
    // Memory cap on growth: RedisBloom's formula, 40 + 16 per sub-filter + tables,
    // so two sub-filters (8 and 16 bytes) fit in 40 + 32 + 24 and a third does not.
    let cap = 40 + 2 * 16 + 8 + 16;
    assert!(CuckooFilter::new(&params(8, 2, 2, 8), 40 + 16 + 7).is_err());
    let mut f = CuckooFilter::new(&params(8, 2, 2, 8), cap).unwrap();
    let mut i = 0u64;
    let err = loop {
        if let Err(e) = f.insert(&hash_item(&key(5, i)), 100, cap) {
            break e;
        }
        i += 1;
    };
    assert_eq!(err, CuckooError::MemoryCap);
    assert_eq!(f.num_filters(), 2);
    // Expansion 0 never grows.
    let mut f = CuckooFilter::new(&params(8, 2, 0, 8), NOCAP).unwrap();
    let mut i = 0u64;
    let err = loop {
        if let Err(e) = f.insert(&hash_item(&key(6, i)), 100, NOCAP) {
            break e;
        }
        i += 1;
    };
    assert_eq!(err, CuckooError::Full);
    assert_eq!(f.num_filters(), 1);
}

#[test]
fn compaction_frees_trailing_subfilters() {
    let mut f = CuckooFilter::new(&params(64, 2, 2, 12), NOCAP).unwrap();
    for i in 0..1000 {
        f.insert(&hash_item(&key(7, i)), 64, NOCAP).unwrap();
    }
    let grown = f.num_filters();
    assert!(grown >= 4);
    for i in 0..950 {
        assert!(f.delete(&hash_item(&key(7, i))));
    }
    f.compact();
    assert!(!f.compaction_in_progress());
    assert_eq!(f.num_deletes(), 0);
    assert!(f.num_filters() < grown, "{} {}", f.num_filters(), grown);
    for i in 950..1000 {
        assert!(f.contains(&hash_item(&key(7, i))));
    }
    check_occupancy(&f);
    // Incremental steps are bounded, keep everything findable, and finish.
    // Deleting < 10% of the items does not trigger automatic compaction.
    let mut f = CuckooFilter::new(&params(64, 2, 1, 8), NOCAP).unwrap();
    for i in 0..2000 {
        f.insert(&hash_item(&key(8, i)), 1000, NOCAP).unwrap();
    }
    let grown = f.num_filters();
    for i in 0..150 {
        assert!(f.delete(&hash_item(&key(8, i))));
    }
    assert!(!f.compaction_in_progress());
    let mut steps = 0;
    while !f.compact_step(16) {
        steps += 1;
        for i in (150..2000).step_by(7) {
            assert!(f.contains(&hash_item(&key(8, i))));
        }
    }
    assert!(steps > 50, "{steps}");
    for i in 150..2000 {
        assert!(f.contains(&hash_item(&key(8, i))));
    }
    assert_eq!(f.num_deletes(), 0);
    assert!(f.num_filters() < grown, "{} {grown}", f.num_filters());
    check_occupancy(&f);
    // Automatic compaction after many deletes frees sub-filters by itself.
    for i in 150..1900 {
        assert!(f.delete(&hash_item(&key(8, i))));
    }
    while f.compaction_in_progress() {
        assert!(f.delete(&hash_item(&key(8, 1999))));
        f.insert(&hash_item(&key(8, 1999)), 1000, NOCAP).unwrap();
    }
    assert!(f.num_filters() <= 4, "{}", f.num_filters());
    for i in 1900..2000 {
        assert!(f.contains(&hash_item(&key(8, i))));
    }
    check_occupancy(&f);
}

#[test]
fn no_false_negatives_property() {
    for seed in 0..200u64 {
        let mut rng = SplitMix(seed.wrapping_mul(0x1234_5678_9abc_def1) ^ 0xfeed);
        let bs = [1u8, 2, 3, 4][rng.below(4) as usize];
        let fp_bits = [8u8, 12, 16, 5, 32][rng.below(5) as usize];
        let expansion = [1u32, 2, 4][rng.below(3) as usize];
        let p = CuckooParams {
            max_iterations: [1u16, 5, 20, 100][rng.below(4) as usize],
            ..params(2 * u64::from(bs) + rng.below(64), bs, expansion, fp_bits)
        };
        let mut f = CuckooFilter::new(&p, NOCAP).unwrap();
        let universe = 50 + rng.below(400);
        let mut model: HashMap<u64, u64> = HashMap::new();
        let ops = 2500;
        for op in 0..ops {
            let r = rng.below(100);
            if r < 55 {
                let x = rng.below(universe);
                let h = hash_item(&key(9, x));
                if f.insert(&h, 40, 1 << 24).is_ok() {
                    *model.entry(x).or_default() += 1;
                }
            } else if r < 95 {
                if model.is_empty() {
                    continue;
                }
                let nth = rng.below(model.len() as u64) as usize;
                let x = *model.keys().nth(nth).unwrap();
                assert!(f.delete(&hash_item(&key(9, x))), "seed {seed} op {op}");
                let c = model.get_mut(&x).unwrap();
                *c -= 1;
                if *c == 0 {
                    model.remove(&x);
                }
            } else if r < 99 {
                f.compact_step(1 + rng.below(64));
            } else {
                f.compact();
            }
            if op % 50 == 0 || op == ops - 1 {
                for (&x, &c) in &model {
                    let h = hash_item(&key(9, x));
                    assert!(f.count(&h) >= c, "seed {seed} op {op} item {x}");
                    assert!(f.contains(&h));
                }
                check_occupancy(&f);
            }
        }
    }
}

#[test]
fn fp_bits_for_error_choices() {
    assert_eq!(fp_bits_for_error(0.02, 2), Some(8));
    assert_eq!(fp_bits_for_error(0.5, 2), Some(8));
    assert_eq!(fp_bits_for_error(0.001, 2), Some(12));
    assert_eq!(fp_bits_for_error(0.0001, 2), Some(16));
    assert!(fp_bits_for_error(0.01, 2).unwrap() > 8);
    assert!(fp_bits_for_error(1e-6, 4).unwrap() > 16);
    assert_eq!(fp_bits_for_error(1e-12, 2), None);
    assert_eq!(fp_bits_for_error(0.0, 2), None);
    assert_eq!(fp_bits_for_error(1.0, 2), None);
    assert_eq!(fp_bits_for_error(f64::NAN, 2), None);
    assert_eq!(fp_bits_for_error(0.01, 0), None);
    for b in [1u8, 2, 4, 255] {
        let mut last = 8;
        for e in [0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
            if let Some(f) = fp_bits_for_error(e, b) {
                assert!(fpr_bound(f, b) <= e);
                assert!(f == 8 || fpr_bound(f - 1, b) > e);
                assert!(f >= last);
                last = f;
            }
        }
    }
}

/// Fills to the target load (or the first failure) and measures the FPR
/// over 10^6 non-members.
#[test]
fn measured_fpr_within_bound() {
    const PROBES: u64 = 1_000_000;
    let mut table = String::new();
    for fp_bits in [8u8, 12, 16, 32] {
        for bs in [1u8, 2, 4] {
            let slots = 1u64 << 16;
            let mut f = CuckooFilter::new(
                &CuckooParams {
                    max_iterations: 2000,
                    ..params(slots, bs, 0, fp_bits)
                },
                NOCAP,
            )
            .unwrap();
            // Fill to the target load, skipping items whose insert fails
            // (a failed insert leaves the table unchanged), or give up
            // after `slots` failures.
            let target_load = match bs {
                1 => 0.50,
                2 => 0.90,
                _ => 0.95,
            };
            let target = (slots as f64 * target_load) as u64;
            let (mut n, mut tried, mut first_fail) = (0u64, 0u64, None);
            let mut members = Vec::new();
            while n < target && tried - n < slots {
                let h = hash_item(&key(10, tried));
                tried += 1;
                if f.insert(&h, 1, NOCAP).is_ok() {
                    n += 1;
                    members.push(h);
                } else if first_fail.is_none() {
                    first_fail = Some(n);
                }
            }
            let load = n as f64 / slots as f64;
            let first_fail = first_fail.map_or("none".to_string(), |x| {
                format!("{:.3}", x as f64 / slots as f64)
            });
            for h in &members {
                assert!(f.contains(h));
            }
            let fp = (0..PROBES)
                .filter(|&i| f.contains(&hash_item(&key(11, i))))
                .count() as u64;
            let rate = fp as f64 / PROBES as f64;
            let bound = fpr_bound(fp_bits, bs);
            let margin = 4.0 * (bound * (1.0 - bound) / PROBES as f64).sqrt();
            let bytes_per_item = f.table_bytes() as f64 / n as f64;
            table.push_str(&format!(
                "f={fp_bits:2} b={bs} first-failure-load={first_fail} load={load:.3} \
                 fpr={rate:.3e} bound={bound:.3e} bytes/item={bytes_per_item:.3}\n"
            ));
            if fp_bits == 32 {
                assert!(fp <= 1, "{fp}");
            } else {
                assert!(
                    rate <= bound + margin,
                    "f={fp_bits} b={bs}: {rate} > {bound}"
                );
            }
            if bs == 4 {
                assert!(load >= 0.949, "b=4 should reach 95%: {load}");
            }
        }
    }
    println!("{table}");
}

/// Regression (found by tests/stress.rs): a header whose item count claims every slot
/// while the tables are empty, then inserts (and a compaction that frees sub-filters):
/// the encoded header must still decode, or the filter's own RDB payload is refused.
#[test]
fn a_lying_item_count_never_makes_an_undecodable_header() {
    let mut f = CuckooFilter::new(&params(4, 2, 1, 8), NOCAP).unwrap();
    let slots = f.total_slots();
    let mut h = f.encode_header();
    h[32..40].copy_from_slice(&slots.to_le_bytes());
    f = CuckooFilter::from_header(&h, NOCAP).unwrap();
    assert_eq!(f.num_items(), slots);
    for i in 0..slots {
        f.insert(&hash_item(&i.to_le_bytes()), 32, NOCAP).unwrap();
    }
    let h = f.encode_header();
    let g = CuckooFilter::from_header(&h, NOCAP).unwrap();
    assert_eq!(g.num_items(), f.total_slots());
    assert!(f.try_clone(NOCAP).is_ok());

    // Three sub-filters, a count of all their slots, nothing stored: compaction frees
    // sub-filters 1 and 2, and the count still encodes within the one left.
    let mut f = CuckooFilter::new(&params(4, 2, 1, 8), NOCAP).unwrap();
    let mut i = 0u64;
    while f.num_filters() < 3 {
        f.insert(&hash_item(&i.to_le_bytes()), 32, NOCAP).unwrap();
        i += 1;
    }
    let mut h = f.encode_header();
    h[32..40].copy_from_slice(&f.total_slots().to_le_bytes());
    let mut f = CuckooFilter::from_header(&h, NOCAP).unwrap();
    f.compact();
    assert_eq!(f.num_filters(), 1);
    assert!(CuckooFilter::from_header(&f.encode_header(), NOCAP).is_ok());
}

#[test]
fn header_round_trip_and_rejections() {
    let mut f = CuckooFilter::new(
        &CuckooParams {
            error_rate: Some(0.001),
            redisbloom: false,
            max_iterations: 77,
            ..params(64, 4, 2, 12)
        },
        NOCAP,
    )
    .unwrap();
    for i in 0..500 {
        f.insert(&hash_item(&key(12, i)), 64, NOCAP).unwrap();
    }
    for i in 0..100 {
        f.delete(&hash_item(&key(12, i)));
    }
    let h = f.encode_header();
    assert_eq!(h.len(), HEADER_LEN);
    let g = CuckooFilter::from_header(&h, NOCAP).unwrap();
    assert_eq!(g.encode_header(), h);
    assert_eq!(g.error_rate(), Some(0.001));
    assert_eq!(g.max_iterations(), 77);
    assert_eq!(
        g.subfilter_buckets().collect::<Vec<_>>(),
        f.subfilter_buckets().collect::<Vec<_>>()
    );
    let c = f.try_clone(NOCAP).unwrap();
    assert_eq!(snapshot(&c), snapshot(&f));
    check_occupancy(&c);

    let base = {
        let mut f = CuckooFilter::new(&params(1024, 2, 2, 8), NOCAP).unwrap();
        f.insert(&hash_item(b"x"), 32, NOCAP).unwrap();
        f.encode_header()
    };
    assert!(CuckooFilter::from_header(&base, NOCAP).is_ok());
    let patch = |off: usize, bytes: &[u8]| {
        let mut h = base.clone();
        h[off..off + bytes.len()].copy_from_slice(bytes);
        CuckooFilter::from_header(&h, 1 << 30)
    };
    let bad: Vec<(usize, Vec<u8>)> = vec![
        (0, b"RBcf".to_vec()),
        (4, vec![2]),
        (4, vec![0]),
        (5, vec![3]),
        (5, vec![33]),
        (6, vec![0]),
        (7, vec![2]),
        (7, vec![4]),
        (8, 0u16.to_le_bytes().to_vec()),
        (10, 1u16.to_le_bytes().to_vec()),
        (12, 3u32.to_le_bytes().to_vec()),
        (12, 65536u32.to_le_bytes().to_vec()),
        (12, 0u32.to_le_bytes().to_vec()),
        (16, 0u32.to_le_bytes().to_vec()),
        (16, 65537u32.to_le_bytes().to_vec()),
        (20, 1u32.to_le_bytes().to_vec()),
        (24, 0u64.to_le_bytes().to_vec()),
        (24, 1000u64.to_le_bytes().to_vec()),
        (24, (1u64 << 40).to_le_bytes().to_vec()),
        (24, (1u64 << 63).to_le_bytes().to_vec()),
        (32, 2049u64.to_le_bytes().to_vec()),
        (48, 1.5f64.to_bits().to_le_bytes().to_vec()),
        (48, (-0.0f64).to_bits().to_le_bytes().to_vec()),
        (48, f64::NAN.to_bits().to_le_bytes().to_vec()),
        (56, 1u64.to_le_bytes().to_vec()),
    ];
    for (off, bytes) in &bad {
        // expansion 0 is only bad with several filters: make that case have 2.
        let r = if *off == 12 && bytes == &0u32.to_le_bytes().to_vec() {
            let mut h = base.clone();
            h[12..16].copy_from_slice(&0u32.to_le_bytes());
            h[16..20].copy_from_slice(&2u32.to_le_bytes());
            CuckooFilter::from_header(&h, NOCAP)
        } else {
            patch(*off, bytes)
        };
        assert!(r.is_err(), "offset {off} {bytes:?}");
    }
    assert_eq!(
        patch(24, &(1u64 << 40).to_le_bytes()).unwrap_err(),
        CuckooError::MemoryCap
    );
    // 2^32 buckets of 1 slot: refused by a 1 GiB cap without allocating.
    let mut h = base.clone();
    h[6] = 1;
    h[24..32].copy_from_slice(&(1u64 << 32).to_le_bytes());
    assert_eq!(
        CuckooFilter::from_header(&h, 1 << 30).unwrap_err(),
        CuckooError::MemoryCap
    );
    // Many filters with huge expansion overflow: MemoryCap, not a panic.
    let mut h = base.clone();
    h[12..16].copy_from_slice(&32768u32.to_le_bytes());
    h[16..20].copy_from_slice(&65536u32.to_le_bytes());
    assert_eq!(
        CuckooFilter::from_header(&h, NOCAP).unwrap_err(),
        CuckooError::MemoryCap
    );
    assert!(CuckooFilter::from_header(&base[..63], NOCAP).is_err());
    let mut ext = base.clone();
    ext.push(0);
    assert!(CuckooFilter::from_header(&ext, NOCAP).is_err());
    assert!(CuckooFilter::from_header(&[], NOCAP).is_err());
    // A valid running-compaction cursor is accepted.
    let mut h = base.clone();
    h[7] = FLAG_COMPACTING | FLAG_COMPACT_CONT;
    h[56..64].copy_from_slice(&3u64.to_le_bytes());
    let g = CuckooFilter::from_header(&h, NOCAP).unwrap();
    assert!(g.compaction_in_progress());
    assert_eq!(g.encode_header(), h);
}

fn dump_and_load(f: &CuckooFilter) -> CuckooFilter {
    let (mut it, hdr) = f.scandump_chunk(0).unwrap();
    assert_eq!(it, 1);
    let mut g = CuckooFilter::from_header(&hdr, NOCAP).unwrap();
    let mut chunks = 0;
    while let Some((next, data)) = f.scandump_chunk(it) {
        assert!(data.len() <= MAX_CHUNK && !data.is_empty());
        assert_eq!(next, it + data.len() as i64);
        g.load_chunk(next, &data).unwrap();
        it = next;
        chunks += 1;
    }
    assert!(chunks >= f.num_filters());
    g
}

#[test]
fn scandump_load_chunk_round_trip() {
    // Above 16 MiB: 2^24 buckets x 2 slots x 8 bits = 32 MiB.
    let mut f = CuckooFilter::new(&params(1 << 25, 2, 1, 8), NOCAP).unwrap();
    for i in 0..5000 {
        f.insert(&hash_item(&key(13, i)), 32, NOCAP).unwrap();
    }
    assert!(f.table_bytes() > MAX_CHUNK as u64);
    let g = dump_and_load(&f);
    assert_eq!(snapshot(&f), snapshot(&g));
    check_occupancy(&g);
    // Mid-sub-filter offsets are honoured.
    let (next, data) = f.scandump_chunk(1 + 1000).unwrap();
    assert_eq!(next, 1001 + MAX_CHUNK as i64);
    assert_eq!(&data[..], &f.subs[0].data[1000..1000 + MAX_CHUNK]);

    // Packed width, several sub-filters, arbitrary split.
    let mut f = CuckooFilter::new(&params(64, 3, 2, 13), NOCAP).unwrap();
    for i in 0..700 {
        f.insert(&hash_item(&key(14, i)), 64, NOCAP).unwrap();
    }
    assert!(f.num_filters() >= 3);
    let g = dump_and_load(&f);
    assert_eq!(snapshot(&f), snapshot(&g));
    check_occupancy(&g);
    for i in 0..700 {
        assert!(g.contains(&hash_item(&key(14, i))));
    }
    // Odd split points with overlapping re-loads keep occupancy exact.
    let mut g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
    let all: Vec<u8> = f.subfilter_bytes().flatten().copied().collect();
    let mut base = 0usize;
    for s in f.subfilter_bytes() {
        let mut off = 0;
        while off < s.len() {
            let len = (7 + off % 5).min(s.len() - off);
            let start = base + off;
            let p = (start + len + 1) as i64;
            g.load_chunk(p, &all[start..start + len]).unwrap();
            g.load_chunk(p, &all[start..start + len]).unwrap();
            off += len;
        }
        base += s.len();
    }
    assert_eq!(snapshot(&f), snapshot(&g));
    check_occupancy(&g);

    // Empty filter with several sub-filters still dumps (Q13).
    let mut f = CuckooFilter::new(&params(8, 2, 2, 8), NOCAP).unwrap();
    for i in 0..100 {
        f.insert(&hash_item(&key(15, i)), 64, NOCAP).unwrap();
    }
    for i in 0..100 {
        f.delete(&hash_item(&key(15, i)));
    }
    assert_eq!(f.num_items(), 0);
    let filters = f.num_filters();
    let g = dump_and_load(&f);
    assert_eq!(g.num_filters(), filters);
    assert_eq!(snapshot(&f), snapshot(&g));
    assert!(f.scandump_chunk(-1).is_none());
    let total = f.table_bytes() as i64;
    assert!(f.scandump_chunk(1 + total).is_none());
    assert!(f.scandump_chunk(i64::MAX).is_none());
}

#[test]
fn load_chunk_rejections() {
    let mut f = CuckooFilter::new(&params(16, 2, 2, 8), NOCAP).unwrap();
    for i in 0..60 {
        f.insert(&hash_item(&key(16, i)), 64, NOCAP).unwrap();
    }
    let sizes: Vec<usize> = f.subfilter_bytes().map(|s| s.len()).collect();
    assert_eq!(sizes[..2], [16, 32]);
    let total: usize = sizes.iter().sum();
    let mut g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
    let before = snapshot(&g);
    let d4 = [1u8; 4];
    for (p, data) in [
        (5i64, &[][..]),
        (0, &d4[..]),
        (1, &d4[..]),
        (4, &d4[..]),
        (-5, &d4[..]),
        (i64::MIN, &d4[..]),
        (16 + 2 + 1, &d4[..]),         // spans sub-filters 0 and 1
        ((total + 2) as i64, &d4[..]), // past the end
        (i64::MAX, &d4[..]),
    ] {
        assert!(g.load_chunk(p, data).is_err(), "{p}");
    }
    assert_eq!(before, snapshot(&g));
    assert!(g.load_chunk(5, &d4).is_ok());
    assert!(g.load_chunk((total + 1) as i64, &d4).is_ok());
    // RDB-style loads: exact lengths only.
    assert!(g.load_subfilter_bytes(0, &[0u8; 15]).is_err());
    assert!(g.load_subfilter_bytes(0, &[0u8; 17]).is_err());
    assert!(g.load_subfilter_bytes(99, &[0u8; 16]).is_err());
    let mut g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
    for (i, s) in f.subfilter_bytes().enumerate() {
        g.load_subfilter_bytes(i, s).unwrap();
    }
    assert_eq!(snapshot(&f), snapshot(&g));
    check_occupancy(&g);
}

#[test]
fn deterministic_tables() {
    let build = || {
        let mut f = CuckooFilter::new(&params(128, 2, 2, 12), NOCAP).unwrap();
        for i in 0..2000 {
            let _ = f.insert(&hash_item(&key(17, i)), 16, NOCAP);
            if i % 3 == 0 {
                f.delete(&hash_item(&key(17, i / 2)));
            }
        }
        snapshot(&f)
    };
    assert_eq!(build(), build());
}

/// A loaded header may claim more items than the table holds (LOADCHUNK or
/// RESTORE of a crafted payload); adding to it or compacting it must still
/// leave a filter whose own payload loads again.
#[test]
fn lying_item_count_stays_loadable() {
    let f = CuckooFilter::new(&params(64, 2, 2, 8), NOCAP).unwrap();
    let mut h = f.encode_header();
    let slots = f.total_slots();
    h[32..40].copy_from_slice(&slots.to_le_bytes());
    let mut f = CuckooFilter::from_header(&h, NOCAP).unwrap();
    assert_eq!(f.num_items(), slots);
    f.insert(&hash_item(b"x"), 16, NOCAP).unwrap();
    assert_eq!(f.num_items(), slots);
    assert!(CuckooFilter::from_header(&f.encode_header(), NOCAP).is_ok());
    // Grow, then let compaction drop the emptied newest sub-filter.
    let mut f = CuckooFilter::from_header(&h, NOCAP).unwrap();
    for i in 0..200 {
        f.insert(&hash_item(&key(3, i)), 16, NOCAP).unwrap();
    }
    assert!(f.num_filters() > 1);
    let big = f.num_items();
    for i in 0..200 {
        f.delete(&hash_item(&key(3, i)));
    }
    f.compact();
    assert!(f.num_items() <= f.total_slots() && f.num_items() <= big);
    assert!(CuckooFilter::from_header(&f.encode_header(), NOCAP).is_ok());
}

// ---------------------------------------------------------------------------
// RedisBloom's rules (filters migrated from RedisBloom, LAYOUT redisbloom)
// ---------------------------------------------------------------------------

fn rb_params(capacity: u64, bucket_size: u8, expansion: u32) -> CuckooParams {
    CuckooParams {
        redisbloom: true,
        ..params(capacity, bucket_size, expansion, 8)
    }
}

#[test]
fn redisbloom_fingerprint_buckets_and_header() {
    let f = CuckooFilter::new(&rb_params(1024, 2, 1), u64::MAX).unwrap();
    assert!(f.is_redisbloom());
    // MurmurHash64A("foo", 0) = 0xcdde38358fd25b01 (spec 6.1).
    let h = f.hash(b"foo");
    assert_eq!(
        h,
        CuckooHash::from_halves(0xcdde38358fd25b01, 0xcdde38358fd25b01)
    );
    assert_eq!(f.fp_of(&h), (0xcdde38358fd25b01u64 % 255) as u32 + 1);
    let header = f.encode_header();
    assert_eq!(header.len(), 38);
    let back = CuckooFilter::from_header(&header, u64::MAX).unwrap();
    assert!(back.is_redisbloom());
    assert_eq!(back.encode_header(), header);
    // ERROR (another fingerprint width) does not go with RedisBloom's layout.
    let p = CuckooParams {
        error_rate: Some(0.001),
        fp_bits: 12,
        ..rb_params(1024, 2, 1)
    };
    assert!(CuckooFilter::new(&p, u64::MAX).is_err());
}

#[test]
fn redisbloom_counts_a_bucket_that_is_both_candidates_twice() {
    // Two buckets: an even fingerprint's alternate term `fp * 0x5bd1e995` is even,
    // so both candidates are the same bucket, which RedisBloom counts twice (its
    // quirk Q10, kept for migrated filters).
    let mut f = CuckooFilter::new(&rb_params(4, 2, 1), u64::MAX).unwrap();
    assert_eq!(f.subfilter_buckets().next(), Some(2));
    let (even, odd) = {
        let fp = |f: &CuckooFilter, s: &str| f.fp_of(&f.hash(s.as_bytes()));
        let pick = |want: u32| {
            (0..100)
                .map(|i| format!("x{i}"))
                .find(|s| fp(&f, s) % 2 == want)
                .unwrap()
        };
        (pick(0), pick(1))
    };
    for (item, want) in [(even, 2), (odd, 1)] {
        let h = f.hash(item.as_bytes());
        f.insert(&h, 1, u64::MAX).unwrap();
        assert_eq!(f.count(&h), want, "{item}");
    }
}

#[test]
fn redisbloom_deletes_compact_at_once() {
    // Grow to several sub-filters, then delete past 10% of the items: RedisBloom
    // compacts in full inside the delete, so no pass is left running.
    let mut f = CuckooFilter::new(&rb_params(8, 2, 1), u64::MAX).unwrap();
    let items: Vec<String> = (0..40).map(|i| format!("item{i}")).collect();
    for i in &items {
        f.insert(&f.hash(i.as_bytes()), 64, u64::MAX).unwrap();
    }
    assert!(f.num_filters() > 1);
    let before = f.num_filters();
    let mut compacted = false;
    for i in items.iter().take(10) {
        assert!(f.delete(&f.hash(i.as_bytes())));
        assert!(!f.compaction_in_progress());
        compacted |= f.num_deletes() == 0;
    }
    assert!(compacted, "a full compaction ran and reset the count");
    assert!(f.num_filters() <= before);
    for i in items.iter().skip(10) {
        assert!(f.contains(&f.hash(i.as_bytes())), "{i} lost by compaction");
    }
}

#[test]
fn breadth_first_search_fills_a_table_before_it_grows() {
    // The load at which a table first grows: ferrobloom's breadth-first search
    // against RedisBloom's walk (same shape, bucket size 2, 20 iterations).
    let load_at_growth = |p: CuckooParams| {
        let mut f = CuckooFilter::new(&p, NOCAP).unwrap();
        let slots = f.total_slots();
        let mut inserted = Vec::new();
        for i in 0..slots {
            let h = f.hash(&key(9, i));
            f.insert(&h, 8, NOCAP).unwrap();
            if f.num_filters() > 1 {
                break;
            }
            inserted.push(h);
        }
        for h in &inserted {
            assert!(f.contains(h));
        }
        check_occupancy(&f);
        inserted.len() as f64 / slots as f64
    };
    let ours = load_at_growth(params(1 << 17, 2, 1, 8));
    let walk = load_at_growth(rb_params(1 << 17, 2, 1));
    eprintln!("load at growth: search {ours:.3}, walk {walk:.3}");
    assert!(ours >= 0.75, "{ours}");
    assert!(ours >= walk + 0.1, "{ours} vs {walk}");
}

#[test]
fn growth_stops_at_the_ceiling_every_loader_accepts() {
    // Trusted writes (replication, AOF) grow with no configured limit: a filter
    // of RedisBloom's layout stops at 65535 sub-filters, the most its header
    // loads (65536 made a filter that no RDB, RESTORE or LOADCHUNK took back).
    for (rb, ceiling) in [(true, 65535usize), (false, MAX_SUBFILTERS as usize)] {
        let p = CuckooParams {
            redisbloom: rb,
            ..params(2, 1, 1, 8)
        };
        let mut f = CuckooFilter::new(&p, NOCAP).unwrap();
        while f.num_filters() < ceiling {
            f.grow(u32::MAX, NOCAP).unwrap();
        }
        assert_eq!(f.grow(u32::MAX, NOCAP), Err(CuckooError::MaxExpansions));
        assert_eq!(f.max_subfilters() as usize, ceiling);
        let g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
        assert_eq!(g.num_filters(), ceiling, "rb {rb}");
    }
}

#[test]
fn redisbloom_layout_compaction_is_bounded_per_call() {
    // Thousands of tiny sub-filters (RedisBloom's issue #517): one delete or
    // one CF.COMPACT does at most its budget (plus one relocation), and the pass
    // completes over several calls without losing an item.
    let mut f = CuckooFilter::new(&rb_params(2, 1, 1), NOCAP).unwrap();
    let items: Vec<Vec<u8>> = (0..6000).map(|i| format!("i{i}").into_bytes()).collect();
    for i in &items {
        f.insert(&f.hash(i), u32::MAX, NOCAP).unwrap();
    }
    let n = f.num_filters();
    assert!(n > 2000, "{n}");
    let mut calls = 0;
    while !f.compact_command(1 << 12) {
        calls += 1;
        assert!(calls < 100_000);
    }
    assert!(calls > 1, "{calls}");
    for i in &items {
        assert!(f.contains(&f.hash(i)));
    }
    check_occupancy(&f);
}

#[test]
fn a_copy_copies_only_what_was_written() {
    for fp_bits in [8u8, 12, 16, 32] {
        // 2^20 buckets of 4 slots: 4-16 MiB of table.
        let mut f = CuckooFilter::new(&params(1 << 22, 4, 1, fp_bits), NOCAP).unwrap();
        let table = f.table_bytes();
        assert_eq!(f.copied_bytes(), 0, "never written");
        let empty = f.try_clone(NOCAP).unwrap();
        assert_eq!(snapshot(&empty), snapshot(&f));
        let items: Vec<Vec<u8>> = (0..10).map(|i| format!("c{i}").into_bytes()).collect();
        for i in &items {
            f.insert(&f.hash(i), 32, NOCAP).unwrap();
        }
        assert!(f.delete(&f.hash(&items[0])));
        let copied = f.copied_bytes();
        assert!(copied > 0 && copied < table, "{copied} of {table}");
        let c = f.try_clone(NOCAP).unwrap();
        assert_eq!(snapshot(&c), snapshot(&f), "fp {fp_bits}");
        check_occupancy(&c);
        for i in &items[1..] {
            assert!(c.contains(&c.hash(i)));
        }
        // A copy of a copy, after more writes to the copy.
        let mut c = c;
        c.insert(&c.hash(b"later"), 32, NOCAP).unwrap();
        let d = c.try_clone(NOCAP).unwrap();
        assert_eq!(snapshot(&d), snapshot(&c));
        // Loaded tables count as written throughout.
        let l = dump_and_load(&f);
        assert_eq!(l.copied_bytes(), table);
        assert_eq!(snapshot(&l.try_clone(NOCAP).unwrap()), snapshot(&f));
    }
}
