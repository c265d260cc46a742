//! SCANDUMP walks of a filter of RedisBloom's layout (`walk.rs`): RedisBloom's
//! iterators, walks kept by walker, refused once a move could hide an item.

use super::*;

fn items(tag: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{tag}{i}").into_bytes()).collect()
}

fn insert_all(f: &mut CuckooFilter, items: &[Vec<u8>]) {
    for i in items {
        f.insert(&f.hash(i), u32::MAX, NOCAP).unwrap();
    }
}

/// Walks `f` as `walker` into a new filter, calling `between` after each data
/// chunk; a chunk the copy's header lacks a sub-filter for is skipped (the
/// server's LOADCHUNK refuses it).
fn copy_walk(
    f: &mut CuckooFilter,
    walker: u64,
    mut between: impl FnMut(&mut CuckooFilter, usize),
) -> Result<CuckooFilter, CuckooError> {
    let (mut it, hdr) = f.walk_chunk_of(walker, 0)?.unwrap();
    let hdr = hdr.to_vec();
    let mut g = CuckooFilter::from_header(&hdr, NOCAP).unwrap();
    let mut step = 0;
    while let Some((next, data)) = f.walk_chunk_of(walker, it)? {
        let data = data.to_vec();
        let _ = g.load_chunk(next, &data);
        it = next;
        between(f, step);
        step += 1;
    }
    Ok(g)
}

/// Compaction after deletes moves fingerprints of newer sub-filters into the
/// first one, already read: the walk's next call is refused, then answered as
/// a walk the filter does not know; a walk begun again is exact.
#[test]
fn redisbloom_walks_are_refused_once_compaction_moved_items() {
    let mut f = CuckooFilter::new(&rb_params(8, 2, 1), NOCAP).unwrap();
    let all = items("item", 40);
    insert_all(&mut f, &all);
    assert!(f.num_filters() > 2);
    assert_eq!(
        f.moves, 0,
        "kick-outs in one-chunk sub-filters are not counted"
    );
    let (mut it, _) = f.walk_chunk_of(7, 0).unwrap().unwrap();
    let (next, _) = f.walk_chunk_of(7, it).unwrap().unwrap();
    it = next;
    for i in &all[..10] {
        assert!(f.delete(&f.hash(i)));
    }
    assert!(f.moves > 0, "the deletes compacted");
    assert_eq!(
        f.walk_chunk_of(7, it).err(),
        Some(CuckooError::BadChunk("rearranged"))
    );
    assert_eq!(f.open_walks(), 0);
    assert_eq!(
        f.walk_chunk_of(7, it).err(),
        Some(CuckooError::BadChunk("unknown walk"))
    );
    // Another walker that never asked for the header, once items moved.
    assert_eq!(
        f.walk_chunk_of(8, 1).err(),
        Some(CuckooError::BadChunk("unknown walk"))
    );
    let g = copy_walk(&mut f, 7, |_, _| {}).unwrap();
    assert!(all[10..].iter().all(|i| g.contains(&g.hash(i))));
    assert_eq!(snapshot(&g), snapshot(&f));
    assert_eq!(f.open_walks(), 0, "the end closes the walk");
}

/// Inserts during a walk (kick-outs inside one-chunk sub-filters, growth)
/// count no move: the walk goes on, and every item the filter held when it
/// began is in the copy. A fresh filter that never moved answers walkers it
/// does not know (RedisBloom's walks from a pool of connections).
#[test]
fn redisbloom_kick_outs_and_growth_do_not_refuse_walks() {
    let mut f = CuckooFilter::new(&rb_params(1000, 2, 2), NOCAP).unwrap();
    let before = items("before", 700);
    insert_all(&mut f, &before);
    let during = items("during", 3000);
    let subs = f.num_filters();
    let g = copy_walk(&mut f, 1, |f, step| {
        if step == 0 {
            insert_all(f, &during);
        }
    })
    .unwrap();
    assert!(f.num_filters() > subs, "it grew during the walk");
    assert_eq!(f.moves, 0);
    assert!(before.iter().all(|i| g.contains(&g.hash(i))));
    assert!(
        f.walk_chunk_of(2, 1).is_ok(),
        "a fresh filter that never moved"
    );
}

/// Walks are bounded: the oldest of more than `MAX_WALKS` is forgotten, and a
/// walker's second header replaces its walk still at the header. A loaded
/// filter answers any walker until it moves items, then only its walks.
#[test]
fn redisbloom_walks_are_bounded_and_kept_per_walker() {
    let mut f = CuckooFilter::new(&rb_params(8, 2, 1), NOCAP).unwrap();
    let all = items("x", 40);
    insert_all(&mut f, &all);
    let mut g = dump_and_load(&f);
    assert!(g.walk_chunk_of(1, 1).is_ok());
    for i in &all[..10] {
        assert!(g.delete(&g.hash(i)));
    }
    assert!(g.moves > 0);
    assert_eq!(
        g.walk_chunk_of(1, 1).err(),
        Some(CuckooError::BadChunk("unknown walk"))
    );
    let h = copy_walk(&mut g, 1, |_, _| {}).unwrap();
    assert!(all[10..].iter().all(|i| h.contains(&h.hash(i))));
    for w in 0..=MAX_WALKS as u64 {
        g.walk_chunk_of(w, 0).unwrap();
        g.walk_chunk_of(w, 0).unwrap();
    }
    assert_eq!(g.open_walks(), MAX_WALKS);
    assert_eq!(
        g.walk_chunk_of(0, 1).err(),
        Some(CuckooError::BadChunk("unknown walk"))
    );
    assert!(g.walk_chunk_of(MAX_WALKS as u64, 1).is_ok());
    let c = g.try_clone(NOCAP).unwrap();
    assert_eq!(c.open_walks(), 0, "a copy (COPY) takes no walks");
}

/// Positions the filter never handed out (RedisBloom's flow tests
/// `test_scandump_random_scan_small` / `test_scandump_scan_big` call every
/// position of a filled filter) are answered as RedisBloom answers them, in
/// both layouts, although items moved before: nothing moved since the filter
/// first answered a SCANDUMP. Once something moves after that, they may be a
/// walk that began before the move and are refused.
#[test]
fn positions_never_handed_out_are_answered_until_a_move_follows_an_answer() {
    // RedisBloom's layout: compaction after deletes is a move.
    let mut f = CuckooFilter::new(&rb_params(8, 2, 1), NOCAP).unwrap();
    let all = items("r", 40);
    insert_all(&mut f, &all);
    for i in &all[..10] {
        assert!(f.delete(&f.hash(i)));
    }
    assert!(f.moves > 0);
    let total = f.table_bytes() as i64;
    f.walk_chunk_of(5, 0).unwrap();
    for pos in 1..total + 10 {
        let want = f.scandump_chunk(pos).map(|(n, d)| (n, d.to_vec()));
        for walker in [5, 6] {
            let got = f.walk_chunk_of(walker, pos).unwrap();
            assert_eq!(got.map(|(n, d)| (n, d.to_vec())), want, "{pos}");
        }
    }
    for i in &all[10..20] {
        assert!(f.delete(&f.hash(i)));
    }
    assert_eq!(
        f.walk_chunk_of(6, 3).err(),
        Some(CuckooError::BadChunk("unknown walk"))
    );
    // ferrobloom's layout: kick-outs are moves; positions are answered as
    // walks that begin there (their next iterator carries the move count).
    let mut g = CuckooFilter::new(&params(64, 2, 2, 8), NOCAP).unwrap();
    let mut n = 0;
    while g.moves == 0 || g.num_filters() < 3 {
        let _ = g.insert(&g.hash(format!("k{n}").as_bytes()), 32, NOCAP);
        n += 1;
    }
    let total = g.table_bytes() as i64;
    for pos in 1..total + 10 {
        let want = g.scandump_chunk(pos).map(|(n, d)| (n, d.to_vec()));
        let got = g.walk_chunk_of(1, pos).unwrap();
        let got = got.map(|(n, d)| ((n as u64 & ((1 << 40) - 1)) as i64, n, d.to_vec()));
        match (got, want) {
            (Some((at, it, d)), Some((wn, wd))) => {
                assert_eq!((at, d), (wn, wd), "{pos}");
                assert_ne!(it as u64 & WALK_FLAG, 0, "{pos}");
            }
            (None, None) => {}
            (got, want) => panic!("{pos}: {got:?} {want:?}"),
        }
    }
    // A loaded filter answers positions until it moves (a walk may have
    // begun on the filter it was saved from), then refuses them.
    let mut h = dump_and_load(&g);
    assert!(h.walk_chunk_of(1, 2).unwrap().is_some());
    while h.moves == 0 {
        let _ = h.insert(&h.hash(format!("k{n}").as_bytes()), 32, NOCAP);
        n += 1;
    }
    assert_eq!(
        h.walk_chunk_of(1, 2).err(),
        Some(CuckooError::BadChunk("unknown walk"))
    );
    let (it, _) = h.walk_chunk_of(1, 1).unwrap().unwrap();
    assert!(h.walk_chunk_of(1, it).is_ok(), "a walk begun now");
}
