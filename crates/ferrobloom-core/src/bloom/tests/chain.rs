//! Chains: growth, non-scaling filters, the bounds (links, hashes, memory, item
//! count), `scale_to` and copies.

use super::*;

#[test]
fn scaling_chain_grows_like_redisbloom() {
    // RedisBloom's chain (`SBChain_Add` in src/sb.c, links sized by `bloom_init`
    // in deps/bloom/bloom.c) for BF.RESERVE bf 0.01 10, then 100 adds: links of capacity
    // 10/20/40/80 with 16/32/72/160 bytes and 8/9/10/11 hashes.
    let limits = Limits::default();
    let mut c = BloomChain::new(10, 0.01, 2, &limits).unwrap();
    let mut added = 0;
    for i in 0..100 {
        if c.add(&h(&i.to_string()), &limits).unwrap() {
            added += 1;
        }
    }
    assert_eq!(c.items(), added);
    assert!(
        added >= 95,
        "too many false positives while adding: {added}"
    );
    let shapes: Vec<(u64, u64, u32)> = c
        .links()
        .iter()
        .map(|l| (l.shape().entries, l.shape().bytes(), l.shape().hashes))
        .collect();
    assert_eq!(
        shapes,
        vec![(10, 16, 8), (20, 32, 9), (40, 72, 10), (80, 160, 11)]
    );
    assert_eq!(c.links()[3].shape().error, 0.000625);
    assert_eq!(c.capacity(), 150);
    assert_eq!(c.error_rate(), 0.01);
    assert_eq!(c.expansion(), Some(2));
    let fills: u64 = c.links().iter().map(|l| l.items()).sum();
    assert_eq!(fills, c.items());
    for i in 0..100 {
        assert!(c.contains(&h(&i.to_string())), "false negative for {i}");
    }
}

#[test]
fn expansion_one_keeps_link_capacity() {
    let limits = Limits::default();
    let mut c = BloomChain::new(5, 0.1, 1, &limits).unwrap();
    for i in 0..40 {
        c.add(&h(&format!("x{i}")), &limits).unwrap();
    }
    assert!(c.links().len() >= 7);
    assert!(c.links().iter().all(|l| l.shape().entries == 5));
}

#[test]
fn nonscaling_filter_refuses_new_items_when_full() {
    let limits = Limits::default();
    let mut c = BloomChain::new(3, 0.01, 0, &limits).unwrap();
    assert_eq!(c.expansion(), None);
    for s in ["a", "b", "c"] {
        assert_eq!(c.add(&h(s), &limits), Ok(true));
    }
    // Present items still answer 0 when full; new ones get Full.
    assert_eq!(c.add(&h("a"), &limits), Ok(false));
    let before = c.encode_header();
    assert_eq!(c.add(&h("d"), &limits), Err(BloomError::Full));
    assert_eq!(c.encode_header(), before);
    assert_eq!(c.items(), 3);
}

#[test]
fn link_count_is_bounded() {
    let limits = Limits {
        max_bytes: 1 << 30,
        max_links: 4,
        ..Limits::default()
    };
    let mut c = BloomChain::new(1, 0.5, 1, &limits).unwrap();
    let mut errors = 0;
    for i in 0..1000 {
        match c.add(&h(&i.to_string()), &limits) {
            Ok(_) => {}
            Err(BloomError::MaxLinks) => errors += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(c.links().len(), 4);
    assert!(errors > 900);
    // Lookups and items still work.
    assert!(c.items() >= 4);
}

#[test]
fn hash_count_is_bounded() {
    // Error rates needing more than MAX_HASHES hash functions are refused...
    assert!(matches!(
        BloomChain::new(100, 1e-60, 2, &Limits::default()),
        Err(BloomError::TooManyHashes)
    ));
    // ... and so is growth past it: capacity 1, expansion 1 at 1e-30 grows until
    // the halved error needs more than 128 hashes.
    let limits = Limits {
        max_bytes: 1 << 30,
        max_links: 1024,
        ..Limits::default()
    };
    let mut c = BloomChain::new(1, 1e-30, 1, &limits).unwrap();
    let mut last = Ok(true);
    for i in 0..1000 {
        last = c.add(&h(&i.to_string()), &limits);
        if last.is_err() {
            break;
        }
    }
    assert!(matches!(last, Err(BloomError::TooManyHashes)));
    assert!(c.links().iter().all(|l| l.shape().hashes <= MAX_HASHES));
}

#[test]
fn memory_cap_is_enforced_before_allocating() {
    let small = Limits {
        max_bytes: 10_000,
        max_links: 64,
        ..Limits::default()
    };
    assert_eq!(
        BloomChain::new(1_000_000, 0.01, 2, &small).err(),
        Some(BloomError::MemoryCap)
    );
    // An absurd capacity never reaches the allocator.
    assert_eq!(
        BloomChain::new(u64::MAX, 1e-9, 2, &Limits::default()).err(),
        Some(BloomError::InvalidParams(crate::bloom::CAPACITY_TOO_LARGE))
    );
    // The largest capacity BF.RESERVE takes, at a tight error: above the cap.
    assert_eq!(
        BloomChain::new(crate::bloom::MAX_CAPACITY, 1e-9, 2, &small).err(),
        Some(BloomError::MemoryCap)
    );
    // Growth stops at the cap with an error and leaves the filter intact.
    let mut c = BloomChain::new(100, 0.01, 2, &small).unwrap();
    let mut capped = false;
    for i in 0..10_000 {
        match c.add(&h(&i.to_string()), &small) {
            Ok(_) => {}
            Err(BloomError::MemoryCap) => {
                capped = true;
                break;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert!(capped);
    assert!(c.mem_usage() <= small.max_bytes);
}

/// A crafted header can give links capacities their bits do not bound, so the
/// total item count could reach `u64::MAX`; adding must then fail instead of
/// wrapping the count, and the filter stays loadable (before, the total
/// wrapped and the next save no longer loaded; found writing the fuzz targets).
/// ferrobloom's own header refuses counts above `i64::MAX`; RedisBloom's, whose
/// counts are unsigned, can still carry them.
#[test]
fn item_count_never_wraps() {
    let limits = Limits::default();
    let c = BloomChain::new(8, 0.01, 2, &limits).unwrap();
    let mut hdr = c.encode_header();
    hdr[HEADER_FIXED..HEADER_FIXED + 8].copy_from_slice(&(1u64 << 63).to_le_bytes());
    assert!(BloomChain::from_header(&hdr, &limits).is_err());
    // RedisBloom's header: total at 0, link 0's items at 36 and entries at 64.
    let c = rb_chain(8, 0.01, 2);
    let mut hdr = c.encode_header();
    hdr[0..8].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    hdr[36..44].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    hdr[64..72].copy_from_slice(&u64::MAX.to_le_bytes());
    let mut c = BloomChain::from_header(&hdr, &limits).unwrap();
    assert!(c.is_redisbloom());
    let mut added = 0;
    for i in 0..10 {
        match c.add(&c.hash(format!("x{i}").as_bytes()), &limits) {
            Ok(true) => added += 1,
            Ok(false) => {}
            // The full link's successor would need 2 · u64::MAX entries.
            Err(e) => assert_eq!(e, BloomError::MemoryCap),
        }
    }
    assert_eq!(added, 3);
    assert_eq!(c.items(), u64::MAX);
    assert!(BloomChain::from_header(&c.encode_header(), &limits).is_ok());
}

#[test]
fn scale_to_stops_at_every_limit() {
    let limits = Limits::default();
    let c = BloomChain::new(100, 0.01, 2, &limits).unwrap();
    // Capacity of n links: 100 * (2^n - 1).
    assert_eq!(c.scale_to(Some(100), &limits), Ok(100));
    assert_eq!(c.scale_to(Some(101), &limits), Ok(300));
    assert_eq!(c.scale_to(Some(1000), &limits), Ok(1500));
    // bf-max-links 3 (100 + 200 + 400).
    let few = Limits {
        max_links: 3,
        ..limits
    };
    assert_eq!(c.scale_to(None, &few), Ok(700));
    assert_eq!(c.scale_to(Some(701), &few), Err(ScaleLimit::Links));
    // A memory cap: the chain stops before the link that would cross it.
    let small = Limits {
        max_bytes: 10_000,
        ..limits
    };
    let reach = c.scale_to(None, &small).unwrap();
    assert!((100..100_000).contains(&reach), "{reach}");
    assert_eq!(c.scale_to(Some(reach), &small), Ok(reach));
    assert_eq!(c.scale_to(Some(reach + 1), &small), Err(ScaleLimit::Memory));
    // A tight ratio runs out of hash functions (error below ~2^-128) first.
    let t = BloomChain::with_options(1, 0.01, 1, BloomLayout::Classic, opts(0.001, None), &limits)
        .unwrap();
    assert_eq!(t.scale_to(Some(1_000), &limits), Err(ScaleLimit::ErrorRate));
    let max = t.scale_to(None, &limits).unwrap();
    assert!((5..40).contains(&max), "{max}");
    // Non-scaling filters do not scale.
    let n = BloomChain::new(100, 0.01, 0, &limits).unwrap();
    assert_eq!(n.scale_to(Some(100), &limits), Ok(100));
    assert_eq!(n.scale_to(Some(101), &limits), Err(ScaleLimit::NonScaling));
    assert_eq!(n.scale_to(None, &limits), Ok(100));
    // RedisBloom chains scale with RedisBloom's links.
    let rb = rb_chain(100, 0.01, 2);
    assert_eq!(rb.scale_to(Some(1000), &limits), Ok(1500));
}

#[test]
fn copies_of_sparse_links_copy_their_written_pages_only() {
    // 2^25 bits (4 MiB, 1024 pages), 7 hashes: tracked while sparse, then not
    // (writes past four per page), and every copy answers as the original.
    let limits = Limits::default();
    let mut c = BloomChain::with_layout(3_000_000, 0.01, 0, BloomLayout::Classic, &limits).unwrap();
    let copied = |c: &BloomChain| -> u64 { c.links().iter().map(|l| l.copied_bytes()).sum() };
    assert_eq!(copied(&c), 0);
    let items: Vec<Vec<u8>> = (0..2000).map(|i| format!("s{i}").into_bytes()).collect();
    for (n, i) in items.iter().enumerate() {
        c.add(&c.hash(i), &limits).unwrap();
        if n == 9 || n == 1999 {
            let d = c.try_clone().unwrap();
            for j in &items {
                assert_eq!(d.contains(&d.hash(j)), c.contains(&c.hash(j)));
            }
            assert!(d.links()[0].data() == c.links()[0].data());
        }
        if n == 9 {
            let bytes = copied(&c);
            assert!(bytes > 0 && bytes <= 70 * 4096, "{bytes}");
        }
    }
    let total = c.links()[0].data().len() as u64;
    assert!(
        copied(&c) >= total,
        "tracking stopped: a copy copies it all"
    );
}

#[test]
fn one_pass_add_matches_lookup_then_insert() {
    // `add` tests and sets the newest link's bits in one pass; the two-pass
    // path (a lookup over every link, then the insert) must give the same
    // answers, counts, links, bits and written pages, in every layout, for
    // new items, repeated items and false positives, across link growth
    // (small classic links take mixed probes, large ones plain double hashing).
    let limits = Limits::default();
    let layouts = [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
        BloomLayout::RedisBloom,
    ];
    for layout in layouts {
        for (cap, error, expansion) in [(50, 0.01, 2), (3000, 0.01, 2), (200, 0.2, 0)] {
            let make = || BloomChain::with_layout(cap, error, expansion, layout, &limits).unwrap();
            let (mut one, mut two) = (make(), make());
            let mut rng = SplitMix(cap ^ layout as u64);
            for i in 0..20_000u64 {
                // Every third item repeats one added before.
                let n = if i % 3 == 2 { rng.next() % i } else { i };
                let h = h(&format!("item-{n}"));
                let a = one.add(&h, &limits);
                let b = two.add_two_pass(&h, &limits);
                assert_eq!(a, b, "{layout:?} {cap}: item {n}");
            }
            assert_eq!(one.items(), two.items());
            assert_eq!(one.links().len(), two.links().len());
            for (x, y) in one.links().iter().zip(two.links()) {
                assert_eq!(x.shape(), y.shape());
                assert_eq!(x.items(), y.items());
                assert!(x.data() == y.data(), "{layout:?} {cap}: bits differ");
                assert_eq!(x.copied_bytes(), y.copied_bytes());
            }
            assert!(one.links().len() > 1 || expansion == 0);
        }
    }
}

#[test]
fn prefetching_batch_lookups_answer_as_item_by_item_at_every_fill() {
    // The prefetching batch loops of a one-link chain (`contains_batch` with
    // a lookahead: blocked in groups, with the probe loop unrolled for 3 to
    // 14 probes (6 at 0.01) or not (2 at 0.3); classic in two stages that
    // fetch the rest of an item's lines only when its first probes pass, one
    // probe while the link is under half full and two after) must answer as
    // `contains` does, members, non-members and false positives alike
    // (error 0.3: about a third of never-added items pass every probe, more
    // pass the first ones), in batches longer than a stage (256 items).
    let limits = Limits::default();
    let layouts = [
        BloomLayout::ClassicDouble,
        BloomLayout::Classic,
        BloomLayout::Blocked,
    ];
    for (layout, error) in layouts.iter().flat_map(|&l| [(l, 0.3), (l, 0.01)]) {
        for fill in [0, 300, 999, 1000, 1990, 2000] {
            let mut c = BloomChain::with_layout(2000, error, 0, layout, &limits).unwrap();
            for i in 0..fill {
                let _ = c.add(&h(&format!("m{i}")), &limits);
            }
            let probes: Vec<ItemHash> = (0..1500)
                .map(|i| h(&format!("{}{}", ["m", "n"][i % 2], i / 2)))
                .collect();
            let want: Vec<bool> = probes.iter().map(|p| c.contains(p)).collect();
            for ahead in [0, 1, 16] {
                let mut got = vec![true];
                c.contains_batch(&probes, ahead, &mut got);
                assert_eq!(
                    got[1..],
                    want[..],
                    "{layout:?} {error} fill {fill} ahead {ahead}"
                );
            }
            let hits = want.iter().filter(|&&b| b).count();
            if fill >= 1990 && error > 0.1 {
                // All 750 members, and false positives (about 225) answer yes.
                assert!(hits > 750 + 100 && hits < 1400, "{layout:?} {fill}: {hits}");
            }
        }
    }
}

#[test]
fn batch_adds_fill_and_grow_as_item_by_item_adds() {
    // `add_batch` of a one-link chain runs a loop of its layout (blocked
    // links of 6 and 7 probes without per-item checks while the link has room
    // and its writes are not tracked) and hands the rest to `add`: answers,
    // counts, "full" and growth must be those of item-by-item adds, with the
    // same bits, filled past the capacity, with and without prefetching, in
    // calls of uneven sizes (some straddling the moment the link fills).
    let limits = Limits::default();
    for layout in [BloomLayout::Blocked, BloomLayout::Classic] {
        for error in [0.01, 0.005, 0.001] {
            for expansion in [0, 2] {
                for ahead in [0, 16] {
                    let make = || {
                        BloomChain::with_layout(3000, error, expansion, layout, &limits).unwrap()
                    };
                    let (mut one, mut batch) = (make(), make());
                    let hashes: Vec<ItemHash> =
                        (0..4000).map(|i| h(&format!("i{}", i % 3700))).collect();
                    let (mut want, mut got) = (Vec::new(), Vec::new());
                    for h in &hashes {
                        let r = one.add(h, &limits);
                        let full = r == Err(BloomError::Full);
                        want.push(r);
                        if full {
                            break;
                        }
                    }
                    let mut at = 0;
                    for n in [1usize, 999, 1500, 7, 2000].iter().cycle() {
                        let Some(chunk) = hashes.get(at..(at + n).min(hashes.len())) else {
                            break;
                        };
                        if chunk.is_empty() {
                            break;
                        }
                        let before = got.len();
                        batch.add_batch(chunk, ahead, &limits, &mut got);
                        at += n;
                        if got.get(before..).unwrap().contains(&Err(BloomError::Full)) {
                            break;
                        }
                    }
                    let what = format!("{layout:?} {error} x{expansion} ahead {ahead}");
                    assert_eq!(got, want, "{what}");
                    assert_eq!(one.items(), batch.items(), "{what}");
                    assert_eq!(one.links().len(), batch.links().len(), "{what}");
                    for (x, y) in one.links().iter().zip(batch.links()) {
                        assert_eq!(x.items(), y.items(), "{what}");
                        assert!(x.data() == y.data(), "{what}: bits differ");
                    }
                    assert!(expansion == 0 || one.links().len() > 1, "{what}");
                    assert!(
                        expansion > 0 || want.last() == Some(&Err(BloomError::Full)),
                        "{what}"
                    );
                }
            }
        }
    }
}
