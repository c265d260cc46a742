//! Growth into new sub-filters, its limits, and compaction of trailing ones.

use super::*;

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
