//! RedisBloom's rules (filters migrated from RedisBloom, `LAYOUT redisbloom`):
//! fingerprints, buckets, header, counting and compaction.

use super::*;

#[test]
fn redisbloom_fingerprint_buckets_and_header() {
    let f = CuckooFilter::new(&rb_params(1024, 2, 1), u64::MAX).unwrap();
    assert!(f.is_redisbloom());
    // MurmurHash64A("foo", 0) = 0xcdde38358fd25b01 (RedisBloom's `CUCKOO_GEN_HASH`,
    // src/cuckoo.h; `MurmurHash64A_Bloom` in deps/murmur2/MurmurHash2.c).
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

/// A RedisBloom header whose item count exceeds its slots is refused, as
/// ferrobloom's own header's is: the header written back caps the count, so
/// the filter would not dump as the header that loaded it (fuzz finding,
/// `fuzz/corpus/cuckoo_chunks/regression-rb-header-item-count`).
#[test]
fn redisbloom_header_with_more_items_than_slots_is_refused() {
    let f = CuckooFilter::new(&rb_params(1024, 2, 1), u64::MAX).unwrap();
    let header = f.encode_header();
    let word = |o: usize| u64::from_le_bytes(header[o..o + 8].try_into().unwrap());
    assert_eq!(word(24), 1, "one sub-filter");
    let slots = word(8) * 2;
    let with_items = |n: u64| {
        let mut h = header.clone();
        h[..8].copy_from_slice(&n.to_le_bytes());
        h
    };
    let full = with_items(slots);
    let back = CuckooFilter::from_header(&full, u64::MAX).unwrap();
    assert_eq!(back.num_items(), slots);
    assert_eq!(back.encode_header(), full);
    let lying = with_items(slots + 1);
    assert!(matches!(
        CuckooFilter::from_header(&lying, u64::MAX),
        Err(CuckooError::BadHeader("number of items"))
    ));
    assert!(CuckooFilter::from_rb_header(&lying, u64::MAX).is_err());
}

#[test]
fn redisbloom_counts_a_bucket_that_is_both_candidates_twice() {
    // Two buckets: an even fingerprint's alternate term `fp * 0x5bd1e995` is even,
    // so both candidates are the same bucket, which RedisBloom counts twice (its
    // `subFilterCount` in src/cuckoo.c, kept for migrated filters).
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
