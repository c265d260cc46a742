//! What must hold for any filter the code accepted or built (a loaded one,
//! one after operations, one after the adds of `after_load.rs`): its SCANDUMP
//! walk, its RDB chunks and its LOADCHUNK and RDB round trips agree.

use super::*;

/// Every link whose bytes the filter's chunks carry, in order.
pub(super) fn links_of(c: &BloomFilter) -> Vec<&Link> {
    c.links()
}

/// Everything that must hold for any Bloom filter the code accepted or built:
/// SCANDUMP walks the same chunks `rdb_save` writes, and both the LOADCHUNK path
/// and the RDB path rebuild an equal filter from them.
pub(super) fn check_bloom(c: &BloomFilter) {
    let dump = bloom_dump(c);
    // The SCANDUMP client loop: iterator 1 first, then whatever comes back.
    let mut walked = Vec::new();
    let mut it = 1i64;
    while let Some((next, data)) = c.scandump_chunk(it) {
        assert!(next > it && !data.is_empty(), "SCANDUMP must advance");
        walked.push((next, data.to_vec()));
        it = next;
    }
    assert_eq!(walked, dump.1, "SCANDUMP and RDB chunks differ");
    let bytes: u64 = links_of(c).iter().map(|l| l.shape().bytes()).sum();
    let dumped: usize = dump.1.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(bytes, dumped as u64);
    assert_eq!(
        c.items(),
        links_of(c).iter().map(|l| l.items()).sum::<u64>()
    );
    let _ = (c.capacity(), c.expansion(), c.error_rate(), c.mem_usage());

    // BF.LOADCHUNK round trip.
    let mut copy = match BloomFilter::from_header(&dump.0, &limits()) {
        Ok(copy) => copy,
        Err(e) => panic!("a filter's own header does not load: {e:?}"),
    };
    for (it, data) in &dump.1 {
        if let Err(e) = copy.load_chunk(*it, data) {
            panic!("a filter's own chunk does not load: {e:?}");
        }
    }
    assert!(bloom_dump(&copy) == dump, "LOADCHUNK round trip differs");
    // RDB round trip.
    match reload::<BloomFilter>(&dump) {
        Ok(copy) => assert!(bloom_dump(&copy) == dump, "RDB round trip differs"),
        Err(e) => panic!("a filter's own payload does not load: {e}"),
    }
}

/// What must hold for any cuckoo filter the code accepted or built (see
/// [`check_bloom`]); CF.SCANDUMP starts at iterator 0 with the header.
pub(super) fn check_cuckoo(f: &CuckooFilter) {
    let dump = cuckoo_dump(f);
    match f.scandump_chunk(0) {
        Some((1, h)) => assert_eq!(*h, *dump.0, "SCANDUMP 0 is not the header"),
        other => panic!("SCANDUMP 0 returned {other:?}"),
    }
    let mut walked = Vec::new();
    let mut it = 1i64;
    while let Some((next, data)) = f.scandump_chunk(it) {
        assert!(next > it && !data.is_empty(), "SCANDUMP must advance");
        walked.push((next, data.to_vec()));
        it = next;
    }
    assert_eq!(walked, dump.1, "SCANDUMP and RDB chunks differ");
    let dumped: usize = dump.1.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(f.table_bytes(), dumped as u64);
    let _ = (
        f.num_items(),
        f.num_deletes(),
        f.num_filters(),
        f.base_buckets(),
        f.bucket_size(),
        f.expansion(),
        f.max_iterations(),
        f.fp_bits(),
        f.error_rate(),
        f.subfilter_buckets().count(),
        f.total_slots(),
        f.compaction_in_progress(),
        f.mem_usage(),
    );

    // CF.LOADCHUNK round trip.
    let mut copy = match CuckooFilter::from_header(&dump.0, MAX_BYTES) {
        Ok(copy) => copy,
        Err(e) => panic!("a filter's own header does not load: {e}"),
    };
    for (it, data) in &dump.1 {
        if let Err(e) = copy.load_chunk(*it, data) {
            panic!("a filter's own chunk does not load: {e}");
        }
    }
    assert!(cuckoo_dump(&copy) == dump, "LOADCHUNK round trip differs");
    // RDB round trip.
    match reload::<CuckooFilter>(&dump) {
        Ok(copy) => assert!(cuckoo_dump(&copy) == dump, "RDB round trip differs"),
        Err(e) => panic!("a filter's own payload does not load: {e}"),
    }
}
