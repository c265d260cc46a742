//! Headers, SCANDUMP / LOADCHUNK chunks, lying item counts and copies.

use super::*;

/// Regression (found by crates/ferrobloom/tests/stress/): a header whose item count claims every slot
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
    // More buckets than CF.RESERVE's 2^30 capacity gives: refused as it is.
    assert_eq!(
        patch(24, &(1u64 << 40).to_le_bytes()).unwrap_err(),
        CuckooError::BadHeader(crate::cuckoo::CAPACITY_TOO_LARGE)
    );
    // 2^30 buckets of 1 slot: refused by a 512 MiB cap without allocating.
    let mut h = base.clone();
    h[6] = 1;
    h[24..32].copy_from_slice(&(1u64 << 30).to_le_bytes());
    assert_eq!(
        CuckooFilter::from_header(&h, 1 << 29).unwrap_err(),
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

    // Empty filter with several sub-filters still dumps (RedisBloom's
    // `CFScanDump_RedisCommand`, src/rebloom.c, dumps nothing without items).
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

/// Live walks of ferrobloom's layout: a walk begun before any fingerprint move
/// has position iterators; one begun after carries the move count; any move
/// since the walk began refuses its next chunk, and a walk without moves loads
/// an exact copy (positions and walk iterators both load).
#[test]
fn walks_are_refused_once_fingerprints_moved() {
    let mut f = CuckooFilter::new(&params(64, 2, 2, 8), NOCAP).unwrap();
    let mut i = 0u64;
    // A walk begun before any move hands out position iterators.
    let (plain, _) = f.walk_chunk(1).unwrap().unwrap();
    assert_eq!(plain as u64 & WALK_FLAG, 0);
    // Fill until the first kick-out (a move).
    while f.moves == 0 {
        f.insert(&hash_item(&key(1, i)), 32, NOCAP).unwrap();
        i += 1;
    }
    let (next, _) = f.walk_chunk(1).unwrap().unwrap();
    assert_ne!(next as u64 & WALK_FLAG, 0);
    // That walk's position iterator (or any other position) may be a walk
    // begun before the move: refused now.
    assert_eq!(
        f.walk_chunk(plain),
        Err(CuckooError::BadChunk("unknown walk"))
    );
    assert_eq!(f.walk_chunk(2), Err(CuckooError::BadChunk("unknown walk")));
    // A walk with no move in between is exact.
    let (_, hdr) = f.walk_chunk(0).unwrap().unwrap();
    let mut g = CuckooFilter::from_header(&hdr, NOCAP).unwrap();
    let mut it = 1;
    while let Some((n, data)) = f.walk_chunk(it).unwrap() {
        let data = data.to_vec();
        g.load_chunk(n, &data).unwrap();
        it = n;
    }
    assert!((0..i).all(|j| g.contains(&hash_item(&key(1, j)))));
    // A move during a walk refuses the rest of it.
    let (n, _) = f.walk_chunk(1).unwrap().unwrap();
    let before = f.moves;
    while f.moves == before {
        f.insert(&hash_item(&key(2, i)), 32, NOCAP).unwrap();
        i += 1;
    }
    assert_eq!(f.walk_chunk(n), Err(CuckooError::BadChunk("rearranged")));
    // The iterator carries the move count modulo 2^22: a walk begun at
    // 2^22 - 1 moves is refused after the count wraps to 0 (and one begun at
    // the wrap is exact while nothing moves).
    f.moves = (1 << 22) - 1;
    let (n, _) = f.walk_chunk(1).unwrap().unwrap();
    let before = f.moves;
    while f.moves == before {
        f.insert(&hash_item(&key(3, i)), 32, NOCAP).unwrap();
        i += 1;
    }
    assert_eq!(f.moves & ((1 << 22) - 1), f.moves - (1 << 22));
    assert_eq!(f.walk_chunk(n), Err(CuckooError::BadChunk("rearranged")));
    let (n, _) = f.walk_chunk(1).unwrap().unwrap();
    assert!(f.walk_chunk(n).is_ok());
    // RedisBloom's layout keeps RedisBloom's iterators.
    let mut p = params(64, 2, 2, 8);
    p.redisbloom = true;
    let r = CuckooFilter::new(&p, NOCAP).unwrap();
    assert_eq!(
        r.walk_chunk(1).unwrap().map(|c| c.0),
        r.scandump_chunk(1).map(|c| c.0)
    );
}
