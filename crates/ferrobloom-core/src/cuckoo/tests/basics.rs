//! Shapes, parameters, insert / delete / count, the no-false-negatives
//! property and measured false-positive rates.

use super::*;
use crate::test_rng::SplitMix;
use std::collections::HashMap;

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
    // Both candidate buckets coincide: count must not double (RedisBloom's
    // `subFilterCount`, src/cuckoo.c, counts such a bucket twice).
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
