use super::sizing::{blocked_fpr, paired_fpr};
use super::*;

pub(crate) use crate::test_rng::SplitMix;

fn h(s: &str) -> ItemHash {
    ItemHash::of(s.as_bytes())
}

#[test]
fn link_sizes_match_redisbloom_table() {
    // (error, capacity) -> (link bytes, hashes, BF.INFO Size), spec 6.2 and 5.1.
    let cases: &[(f64, u64, u64, u32, u64)] = &[
        (0.01, 10, 16, 8, 112),
        (0.001, 100, 200, 11, 296),
        (0.01, 100, 144, 8, 240),
        (0.05, 1000, 960, 6, 1056),
        (0.001, 50000, 98880, 11, 98976),
        (0.000001, 300_000_000, 1_132_420_136, 21, 1_132_420_232),
    ];
    for &(err, cap, bytes, k, size) in cases {
        let shape = LinkShape::new(cap, err / 2.0).unwrap();
        assert_eq!(shape.bytes(), bytes, "bytes for {err} {cap}");
        assert_eq!(shape.bits, bytes * 8);
        assert_eq!(shape.hashes, k, "hashes for {err} {cap}");
        assert_eq!(32 + 64 + shape.bytes(), size);
    }
    // BF.INSERT x CAPACITY 3 NONSCALING: 8 bytes, 7 hashes, Size 104.
    let chain = BloomChain::new(3, 0.01, 0, &Limits::default()).unwrap();
    assert_eq!(chain.mem_usage(), 104);
    assert_eq!(chain.links()[0].shape().hashes, 7);
    let big = BloomChain::new(300_000_000, 0.000001, 2, &Limits::default());
    // 1.13 GB is within the default 4 GiB cap: only check the arithmetic here.
    drop(big);
}

#[test]
fn blocked_links_cost_the_predicted_extra_bits() {
    // (link error, extra bits over classic): module doc, and the FPR test below
    // checks that the extra bits are enough.
    for &(err, lo, hi) in &[
        (0.05, 0.005, 0.03),
        (0.005, 0.03, 0.06),
        (0.0005, 0.08, 0.11),
        (0.00005, 0.15, 0.19),
    ] {
        let classic = LinkShape::new(1_000_000, err).unwrap();
        let blocked = LinkShape::with_layout(1_000_000, err, BloomLayout::Blocked, false).unwrap();
        assert_eq!(blocked.layout, BloomLayout::Blocked);
        assert_eq!(blocked.bits % 512, 0);
        assert!(blocked.hashes <= classic.hashes);
        let extra = blocked.bits as f64 / classic.bits as f64 - 1.0;
        assert!(extra > lo && extra < hi, "{err}: +{extra}");
        assert!(blocked_fpr(blocked.bits as f64 / 1e6, blocked.hashes) <= err);
    }
    // Tiny links are whole blocks; the shape survives the header.
    let limits = Limits::default();
    let c = BloomChain::with_layout(3, 0.01, 0, BloomLayout::Blocked, &limits).unwrap();
    assert_eq!(c.links()[0].shape().bits, 512);
    let d = BloomChain::from_header(&c.encode_header(), &limits).unwrap();
    assert_eq!(d.links()[0].shape(), c.links()[0].shape());
    // Growth keeps the layout.
    let mut g = BloomChain::with_layout(10, 0.01, 2, BloomLayout::Blocked, &limits).unwrap();
    for i in 0..100 {
        g.add(&h(&i.to_string()), &limits).unwrap();
    }
    assert!(g.links().len() >= 3);
    assert!(g
        .links()
        .iter()
        .all(|l| l.shape().layout == BloomLayout::Blocked));
    for i in 0..100 {
        assert!(g.contains(&h(&i.to_string())));
    }
}

#[test]
fn guaranteed_sizing_adds_bits_only_where_needed() {
    for &(err, cap) in &[(0.1, 1_000_000u64), (0.01, 1_000_000), (0.0001, 1000)] {
        let rb = LinkShape::new(cap, err).unwrap();
        let g = LinkShape::guaranteed(cap, err).unwrap();
        assert_eq!(rb.hashes, g.hashes);
        assert!(g.bits >= rb.bits);
        let extra = g.bits as f64 / rb.bits as f64 - 1.0;
        assert!(extra < 0.04, "{err}: {} vs {}", g.bits, rb.bits);
        if err == 0.1 {
            assert!(extra > 0.03, "10% needs about 3.7% more bits: {extra}");
        }
    }
}

#[test]
fn scaling_chain_grows_like_redisbloom() {
    // spec 3.8: BF.RESERVE bf 0.01 10, then 100 adds: links of capacity
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

#[test]
fn header_round_trip_and_scandump_load_chunk() {
    let limits = Limits::default();
    let mut c = BloomChain::new(1000, 0.01, 2, &limits).unwrap();
    for i in 0..5000 {
        c.add(&h(&format!("item{i}")), &limits).unwrap();
    }
    let header = c.encode_header();
    let mut d = BloomChain::from_header(&header, &limits).unwrap();
    assert_eq!(d.encode_header(), header);
    let mut iter = 1;
    let mut chunks = 0;
    while let Some((next, data)) = c.scandump_chunk(iter) {
        d.load_chunk(next, data).unwrap();
        iter = next;
        chunks += 1;
    }
    assert_eq!(chunks, c.links().len(), "small links come back whole");
    for (a, b) in c.links().iter().zip(d.links()) {
        assert_eq!(a.data(), b.data());
    }
    for i in 0..5000 {
        assert!(d.contains(&h(&format!("item{i}"))));
    }
    assert_eq!(d.items(), c.items());
    assert!(c.scandump_chunk(0).is_none());
    assert!(c.scandump_chunk(-5).is_none());
    assert!(c.scandump_chunk(i64::MAX).is_none());
}

#[test]
fn scandump_splits_links_larger_than_a_chunk() {
    // 20M entries at 1% (scaling, 0.5%): ~27.6 MB, two chunks.
    let limits = Limits::default();
    let mut c = BloomChain::new(20_000_000, 0.01, 2, &limits).unwrap();
    for i in 0..1000 {
        c.add(&h(&format!("big{i}")), &limits).unwrap();
    }
    let mut d = BloomChain::from_header(&c.encode_header(), &limits).unwrap();
    let mut iter = 1;
    let mut lens = vec![];
    while let Some((next, data)) = c.scandump_chunk(iter) {
        lens.push(data.len() as u64);
        d.load_chunk(next, data).unwrap();
        iter = next;
    }
    let total = c.links()[0].shape().bytes();
    assert_eq!(lens, vec![SCANDUMP_CHUNK, total - SCANDUMP_CHUNK]);
    assert!(c.links()[0].data() == d.links()[0].data());
    for i in 0..1000 {
        assert!(d.contains(&h(&format!("big{i}"))));
    }
}

#[test]
fn load_chunk_rejects_bad_chunks() {
    let limits = Limits::default();
    let mut c = BloomChain::new(100, 0.01, 2, &limits).unwrap(); // 144 bytes
                                                                 // As RedisBloom 2.8: an empty chunk inside a link loads nothing, one past
                                                                 // the end has no link; an iterator equal to the length ends before byte 1.
    let before = c.links()[0].data().to_vec();
    assert_eq!(c.load_chunk(10, &[]), Ok(()));
    assert!(c.links()[0].data() == &before[..]);
    assert_eq!(c.load_chunk(145, &[]), Err(BloomError::NoLinkForOffset));
    assert_eq!(c.load_chunk(0, &[]), Err(BloomError::BadChunk));
    assert_eq!(c.load_chunk(0, &[1]), Err(BloomError::BadChunk));
    assert_eq!(c.load_chunk(-1, &[1]), Err(BloomError::BadChunk));
    assert_eq!(c.load_chunk(2, &[1, 2, 3]), Err(BloomError::BadChunk));
    assert_eq!(
        c.load_chunk(3, &[1, 2, 3]),
        Err(BloomError::NoLinkForOffset)
    );
    assert_eq!(
        c.load_chunk(146, &[1]),
        Err(BloomError::NoLinkForOffset),
        "offset 144 is past the only link"
    );
    assert_eq!(
        c.load_chunk(i64::MAX, &[1]),
        Err(BloomError::NoLinkForOffset)
    );
    assert_eq!(c.load_chunk(146, &[1, 2]), Err(BloomError::ChunkTooBig));
    assert_eq!(c.load_chunk(145, &[7; 144]), Ok(()));
    assert_eq!(c.links()[0].data(), &[7u8; 144][..]);
}

#[test]
fn from_header_rejects_corruption() {
    let limits = Limits::default();
    let mut c = BloomChain::new(100, 0.01, 2, &limits).unwrap();
    for i in 0..300 {
        c.add(&h(&i.to_string()), &limits).unwrap();
    }
    let good = c.encode_header();
    assert!(BloomChain::from_header(&good, &limits).is_ok());
    // Truncations and extensions.
    for n in 0..good.len() {
        assert!(
            BloomChain::from_header(&good[..n], &limits).is_err(),
            "len {n}"
        );
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(BloomChain::from_header(&longer, &limits).is_err());
    // Field-by-field corruption.
    let patch = |off: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[off..off + bytes.len()].copy_from_slice(bytes);
        BloomChain::from_header(&b, &limits)
    };
    assert!(patch(0, b"XXXX").is_err(), "magic");
    assert!(patch(4, &[2]).is_err(), "version");
    assert!(patch(5, &[1]).is_err(), "reserved");
    assert!(patch(8, &0u64.to_le_bytes()).is_err(), "total != sum");
    assert!(patch(16, &40000u32.to_le_bytes()).is_err(), "expansion");
    assert!(
        patch(16, &0u32.to_le_bytes()).is_err(),
        "non-scaling with links"
    );
    assert!(patch(20, &0u32.to_le_bytes()).is_err(), "zero links");
    assert!(
        patch(20, &u32::MAX.to_le_bytes()).is_err(),
        "huge link count"
    );
    let l = 24; // first link record
    assert!(patch(l, &0u64.to_le_bytes()).is_err(), "entries 0");
    assert!(
        patch(l + 8, &u64::MAX.to_le_bytes()).is_err(),
        "items > entries"
    );
    assert!(
        patch(l + 16, &1.5f64.to_bits().to_le_bytes()).is_err(),
        "error"
    );
    assert!(
        patch(l + 16, &f64::NAN.to_bits().to_le_bytes()).is_err(),
        "nan"
    );
    assert!(patch(l + 24, &0u64.to_le_bytes()).is_err(), "bits 0");
    assert!(patch(l + 24, &100u64.to_le_bytes()).is_err(), "bits % 64");
    assert_eq!(
        patch(l + 24, &(1u64 << 61).to_le_bytes()).err(),
        Some(BloomError::MemoryCap),
        "2^61 bits must be refused before allocating"
    );
    assert!(patch(l + 32, &0u32.to_le_bytes()).is_err(), "hashes 0");
    assert!(patch(l + 32, &500u32.to_le_bytes()).is_err(), "hashes huge");
    assert!(patch(l + 36, &[1]).is_err(), "layout");
    assert!(patch(l + 37, &[1]).is_err(), "reserved in link");
}

/// Fills `instances` independent filters (different seeds) to each level of
/// `fills` (multiples of the capacity) and returns, per level, the fraction of
/// `probes` non-members per filter that test positive, averaged over the filters.
/// Small filters need many instances: one 1,000-item filter's FPR varies by about
/// 5% around its expectation with the particular set of bits that happen to be set.
fn measured_fpr(
    cap: u64,
    p: f64,
    expansion: u32,
    layout: BloomLayout,
    fills: &[u64],
    instances: u64,
    probes: u64,
) -> Vec<(f64, usize, u64, u64)> {
    let limits = Limits::default();
    let mut out = vec![(0.0, 0usize, 0u64, 0u64); fills.len()];
    for inst in 0..instances {
        let mut c = BloomChain::with_layout(cap, p, expansion, layout, &limits).unwrap();
        let mut gen = SplitMix(0x5eed ^ cap ^ p.to_bits() ^ (inst << 32));
        let mut probe = SplitMix(0xfa15e ^ inst);
        let mut kept = Vec::new();
        let mut done = 0u64;
        for (slot, &fill) in fills.iter().enumerate() {
            while done < fill * cap {
                let item = gen.item(1);
                match c.add(&ItemHash::of(&item), &limits) {
                    Ok(_) => {}
                    Err(BloomError::Full) if expansion == 0 => {}
                    Err(e) => panic!("{e:?}"),
                }
                if kept.len() < 1000 {
                    kept.push(item);
                }
                done += 1;
            }
            let fp = (0..probes)
                .filter(|_| c.contains(&ItemHash::of(&probe.item(2))))
                .count();
            let o = &mut out[slot];
            o.0 += fp as f64 / (probes * instances) as f64;
            o.1 = c.links().len();
            o.2 = c.items();
            o.3 = c.mem_usage();
        }
        for item in &kept {
            assert!(c.contains(&ItemHash::of(item)), "false negative");
        }
    }
    out
}

/// The measured false-positive rate stays at or below the requested rate, for
/// every rate, capacity and scaling mode, with the chain filled to 1x and 4x its
/// initial capacity (a non-scaling filter refuses what does not fit, so its 4x
/// row measures the full filter again). Each estimate uses 1,000,000 probes of
/// non-members; the margin is 4 binomial standard errors at the requested rate,
/// `4 * sqrt(p (1 - p) / 1e6)` (a correct filter exceeds it with probability
/// about 3e-5 per row). Seeds are fixed, so the run is repeatable.
#[test]
fn false_positive_rate_stays_below_requested() {
    const PROBES: u64 = 1_000_000;
    let mut report = String::new();
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        for &p in &[0.1, 0.01, 0.001, 0.0001] {
            for &cap in &[1000u64, 1_000_000] {
                // Small filters: 1,000 filters x 1,000 probes; large: 1 x 1,000,000.
                let instances = if cap < 100_000 { 1000 } else { 1 };
                for &expansion in &[2u32, 0] {
                    let rows = measured_fpr(
                        cap,
                        p,
                        expansion,
                        layout,
                        &[1, 4],
                        instances,
                        PROBES / instances,
                    );
                    for (&(rate, links, items, mem), fill) in rows.iter().zip([1, 4]) {
                        let margin = 4.0 * (p * (1.0 - p) / PROBES as f64).sqrt();
                        report.push_str(&format!(
                            "| {} | {p} | {cap} | {} | {fill}x | {links} | {rate:.6} | {:.2} |\n",
                            layout.name(),
                            if expansion == 0 {
                                "non-scaling"
                            } else {
                                "scaling x2"
                            },
                            (mem * 8) as f64 / items as f64,
                        ));
                        assert!(
                        rate <= p + margin,
                        "{layout:?} p={p} cap={cap} expansion={expansion} fill={fill}x: measured {rate} > {p} + {margin}"
                    );
                    }
                }
            }
        }
    }
    println!("| layout | error | capacity | mode | fill | links | measured FPR | bits/item |\n|---|---|---|---|---|---|---|---|\n{report}");
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

// ---------------------------------------------------------------------------
// RedisBloom layout (filters migrated from RedisBloom, LAYOUT redisbloom)
// ---------------------------------------------------------------------------

fn rb_chain(cap: u64, error: f64, expansion: u32) -> BloomChain {
    BloomChain::with_layout(
        cap,
        error,
        expansion,
        BloomLayout::RedisBloom,
        &Limits::default(),
    )
    .unwrap()
}

#[test]
fn redisbloom_layout_sizes_and_scandump_example() {
    // Spec 6.2's worked sizes (link bytes, bits, hashes, BF.INFO Size).
    for (err, cap, bytes, k, size) in [
        (0.01, 10, 16, 8, 112),
        (0.001, 100, 200, 11, 296),
        (0.01, 100, 144, 8, 240),
        (0.05, 1000, 960, 6, 1056),
    ] {
        let c = rb_chain(cap, err, 2);
        let s = c.links()[0].shape();
        assert_eq!((s.bytes(), s.bits, s.hashes), (bytes, bytes * 8, k));
        assert_eq!(c.mem_usage(), size);
    }
    let c = rb_chain(3, 0.01, 0);
    assert_eq!(c.links()[0].shape().bytes(), 8);
    assert_eq!(c.links()[0].shape().hashes, 7);
    assert_eq!(c.expansion(), None);
    // Spec 7.1's documented SCANDUMP: BF.RESERVE bf 0.1 10; BF.ADD bf item1.
    let mut c = rb_chain(10, 0.1, 2);
    let l = Limits::default();
    assert_eq!(c.add(&c.hash(b"item1"), &l), Ok(true));
    let header = c.encode_header();
    assert_eq!(header.len(), 73);
    assert_eq!(
        &header[12..20],
        &[5, 0, 0, 0, 2, 0, 0, 0],
        "options 5, growth 2"
    );
    assert_eq!(c.links()[0].data(), b"\x01\x08\x00\x80\x00\x04 \x00");
    // The header reads back as RedisBloom's, into the same filter.
    let back = BloomChain::from_header(&header, &l).unwrap();
    assert!(back.is_redisbloom());
    assert_eq!(back.encode_header(), header);
}

#[test]
fn redisbloom_legacy_links_round_to_powers_of_two() {
    // bloom_init without NOROUND: 100 entries at 1% want 958.5 bits, get 2^10,
    // and the spare bits become 6 more entries.
    let s = LinkShape::redisbloom(100, 0.01, 0).unwrap();
    assert_eq!((s.n2, s.bits, s.storage, s.entries), (10, 1024, 128, 106));
    assert_eq!(s.modulus(), 1024);
    // Tiny links: the modulus stays 2^n2 below the 64-bit storage.
    let s = LinkShape::redisbloom(1, 0.5, 0).unwrap();
    assert_eq!((s.n2, s.bits, s.modulus()), (1, 64, 2));
    assert!(LinkShape::redisbloom(0, 0.01, 5).is_err());
    assert!(LinkShape::redisbloom(10, 0.0, 5).is_err());
    // The smallest double still needs fewer hashes than the bound.
    let s = LinkShape::redisbloom(1, 5e-324, 5).unwrap();
    assert!(s.hashes > 1000 && s.hashes <= RB_MAX_HASHES);
}

/// RedisBloom RDB fields from memory.
struct Fields(Vec<Field>);
enum Field {
    U(u64),
    D(f64),
    B(Vec<u8>),
}
impl crate::payload::RdbRead for Fields {
    type Buf = Vec<u8>;
    fn unsigned(&mut self) -> Option<u64> {
        match (!self.0.is_empty()).then(|| self.0.remove(0))? {
            Field::U(v) => Some(v),
            _ => None,
        }
    }
    fn double(&mut self) -> Option<f64> {
        match (!self.0.is_empty()).then(|| self.0.remove(0))? {
            Field::D(v) => Some(v),
            _ => None,
        }
    }
    fn buffer(&mut self) -> Option<Vec<u8>> {
        match (!self.0.is_empty()).then(|| self.0.remove(0))? {
            Field::B(v) => Some(v),
            _ => None,
        }
    }
}

#[test]
fn redisbloom_rdb_versions_and_their_checks() {
    use Field::{B, D, U};
    let l = Limits::default();
    let e = 0.01f64;
    let bpe = (e.ln() / LN2_SQUARED).abs();
    let link = |items: u64| {
        vec![
            U(100),
            D(e),
            U(7),
            D(bpe),
            U(960),
            U(0),
            B(vec![0; 120]),
            U(items),
        ]
    };
    let v4 = |total: u64, items: u64| {
        let mut f = vec![U(total), U(1), U(5), U(4)];
        f.extend(link(items));
        Fields(f)
    };
    let c = BloomChain::from_redisbloom_rdb(4, &mut v4(3, 3), &l).unwrap();
    assert_eq!(
        (c.items(), c.expansion(), c.scheme()),
        (3, Some(4), HashScheme::Murmur64)
    );
    assert!(
        BloomChain::from_redisbloom_rdb(4, &mut v4(4, 3), &l).is_err(),
        "total != link items"
    );
    assert!(BloomChain::from_redisbloom_rdb(5, &mut v4(3, 3), &l).is_err());
    let mut truncated = v4(3, 3);
    truncated.0.pop();
    assert!(BloomChain::from_redisbloom_rdb(4, &mut truncated, &l).is_err());
    // Version 0: no options (32-bit hashing), growth 2, bits = entries * bpe.
    let mut v0 = Fields(vec![
        U(0),
        U(1),
        U(100),
        D(e),
        U(7),
        D(bpe),
        B(vec![0; 120]),
        U(0),
    ]);
    let c = BloomChain::from_redisbloom_rdb(0, &mut v0, &l).unwrap();
    assert_eq!(c.scheme(), HashScheme::Murmur32);
    assert_eq!(c.scheme().width(), 32);
    assert_eq!(c.links()[0].shape().modulus(), 958);
    assert_eq!(c.expansion(), Some(2));
    // The memory cap applies to what the payload carries.
    let small = Limits {
        max_bytes: 100,
        ..l
    };
    assert_eq!(
        BloomChain::from_redisbloom_rdb(4, &mut v4(3, 3), &small).err(),
        Some(BloomError::MemoryCap)
    );
}

fn opts(tightening: f64, seed: Option<[u8; 32]>) -> ChainOptions {
    ChainOptions { tightening, seed }
}

#[test]
fn tightening_sets_each_new_links_error_and_default_keeps_redisbloom() {
    let limits = Limits::default();
    for r in [0.5, 0.9, 0.1] {
        let mut c =
            BloomChain::with_options(10, 0.01, 2, BloomLayout::Classic, opts(r, None), &limits)
                .unwrap();
        for i in 0..200 {
            c.add(&h(&format!("t{i}")), &limits).unwrap();
        }
        assert!(c.links().len() >= 4);
        // The first link keeps RedisBloom's error / 2; each next one is r times the previous.
        assert_eq!(c.links()[0].shape().error, 0.005);
        for w in c.links().windows(2) {
            let want = w[0].shape().error * r;
            assert_eq!(w[1].shape().error, want);
            assert_eq!(
                *w[1].shape(),
                LinkShape::new(w[0].shape().entries * 2, want).unwrap()
            );
        }
        assert_eq!(c.error_rate(), 0.01);
    }
    // The defaults are exactly BloomChain::new's chain, written as header version 1.
    let a = BloomChain::new(100, 0.01, 2, &limits).unwrap();
    let b = BloomChain::with_options(
        100,
        0.01,
        2,
        BloomLayout::Classic,
        ChainOptions::default(),
        &limits,
    )
    .unwrap();
    assert_eq!(a.encode_header(), b.encode_header());
    assert_eq!(a.encode_header()[4], HEADER_VERSION);
    for bad in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(BloomChain::with_options(
            10,
            0.01,
            2,
            BloomLayout::Classic,
            opts(bad, None),
            &limits
        )
        .is_err());
    }
    // RedisBloom's layout takes neither.
    for o in [opts(0.9, None), opts(0.5, Some([1; 32]))] {
        assert!(
            BloomChain::with_options(10, 0.01, 2, BloomLayout::RedisBloom, o, &limits).is_err()
        );
    }
}

#[test]
fn a_seed_changes_the_bit_positions_and_is_persisted_in_header_version_2() {
    let limits = Limits::default();
    let make = |seed: Option<[u8; 32]>, tightening: f64, layout: BloomLayout| {
        BloomChain::with_options(1000, 0.01, 2, layout, opts(tightening, seed), &limits).unwrap()
    };
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        let plain = make(None, 0.5, layout);
        let s1 = make(Some([7; 32]), 0.5, layout);
        let s2 = make(Some([8; 32]), 0.5, layout);
        assert_eq!(plain.scheme(), HashScheme::Xxh3);
        assert_ne!(s1.scheme(), s2.scheme());
        assert!(!plain.same_hashing(&s1) && !s1.same_hashing(&s2));
        assert!(s1.same_hashing(&make(Some([7; 32]), 0.9, layout)));
        assert_ne!(s1.hash(b"x"), plain.hash(b"x"));
        assert_ne!(s1.hash(b"x"), s2.hash(b"x"));

        let mut c = make(Some([7; 32]), 0.75, layout);
        for i in 0..3000 {
            let h = c.hash(format!("s{i}").as_bytes());
            c.add(&h, &limits).unwrap();
        }
        let header = c.encode_header();
        assert_eq!(header[4], HEADER_VERSION_OPTIONS);
        assert_eq!(header.len(), 72 + 40 * c.links().len());
        let mut d = BloomChain::from_header(&header, &limits).unwrap();
        c.for_each_chunk(|it, data| d.load_chunk(it, data).unwrap());
        assert_eq!(d.options(), c.options());
        assert_eq!(d.scheme(), c.scheme());
        assert_eq!(d.encode_header(), header);
        for i in 0..3000 {
            assert!(d.contains(&d.hash(format!("s{i}").as_bytes())));
        }
        // Only the tightening ratio: version 2, not seeded.
        let t = make(None, 0.75, layout);
        let th = t.encode_header();
        assert_eq!((th[4], th[32]), (HEADER_VERSION_OPTIONS, 0));
        assert_eq!(
            BloomChain::from_header(&th, &limits).unwrap().options(),
            t.options()
        );

        // Corrupt version 2 fields are refused.
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = header.clone();
            f(&mut b);
            assert!(BloomChain::from_native_header(&b, &limits).is_err());
        };
        bad(&|b| b[24..32].copy_from_slice(&1.0f64.to_bits().to_le_bytes()));
        bad(&|b| b[24..32].copy_from_slice(&0.0f64.to_bits().to_le_bytes()));
        bad(&|b| b[32] = 2);
        bad(&|b| b[33] = 1);
        bad(&|b| b[32] = 0); // seed bytes without the flag
        bad(&|b| b.truncate(b.len() - 1));
        bad(&|b| b[4] = 3);
        let mut v1_opts = make(None, 0.5, layout).encode_header();
        v1_opts[4] = HEADER_VERSION_OPTIONS;
        assert!(BloomChain::from_native_header(&v1_opts, &limits).is_err());
    }
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
fn fast_blocked_sizing_gives_the_full_sizing_bits() {
    let mut rng = SplitMix(42);
    for _ in 0..300 {
        let entries = 1 + rng.next() % 50_000_000;
        let error = 10f64.powf(-(1.0 + (rng.next() % 1_000_000) as f64 / 100_000.0));
        let Ok(classic) = LinkShape::new(entries, error) else {
            continue;
        };
        for blocks in [Blocks::One, Blocks::Two] {
            let full = LinkShape::blocked(classic, false, blocks).unwrap();
            assert_eq!(
                blocked_scaling_bits(&classic, blocks).unwrap(),
                full.bits,
                "{entries} at {error}, {blocks:?}"
            );
        }
    }
    // Each link the simulation sizes is the link the chain then adds.
    let limits = Limits::default();
    let mut c =
        BloomChain::with_options(7, 0.02, 3, BloomLayout::Blocked, opts(0.7, None), &limits)
            .unwrap();
    for i in 0..20_000 {
        c.add(&h(&format!("b{i}")), &limits).unwrap();
    }
    let n = c.links().len();
    let capacity = c.capacity();
    let bytes: u64 = c.links().iter().map(|l| l.shape().bytes()).sum();
    let fit = Limits {
        max_links: n as u32,
        max_bytes: c.mem_usage(),
        ..limits
    };
    assert_eq!(
        c.scale_to(None, &fit),
        Ok(capacity),
        "{n} links, {bytes} bytes"
    );
    let short = Limits {
        max_bytes: c.mem_usage() - 1,
        ..fit
    };
    assert!(c.scale_to(None, &short).unwrap() < capacity);
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
fn paired_links_meet_their_error_with_a_few_percent_over_classic() {
    // (error, lowest and highest extra bits over a classic link)
    for &(err, lo, hi) in &[
        (0.01, 0.0, 0.012),
        (0.0016, 0.008, 0.018),
        (0.00016, 0.02, 0.035),
        (0.000001, 0.06, 0.09),
    ] {
        let classic = LinkShape::new(262_144, err).unwrap();
        let paired = LinkShape::with_layout(262_144, err, BloomLayout::Paired, false).unwrap();
        assert_eq!(paired.layout, BloomLayout::Paired);
        assert_eq!(paired.bits % 512, 0);
        let extra = paired.bits as f64 / classic.bits as f64 - 1.0;
        assert!(extra >= lo && extra < hi, "{err}: +{extra}");
        assert!(paired_fpr(paired.bits as f64 / 262_144.0, paired.hashes) <= err);
    }
}

#[test]
fn paired_links_measure_their_error_rate() {
    // A full link at 0.16% (a windowed generation's first link at 1%): the
    // rate measured over 400,000 never-added items stays within 4 standard
    // deviations of the bound, and every added item answers present.
    let limits = Limits::default();
    let mut c = BloomChain::with_layout(100_000, 0.0032, 0, BloomLayout::Paired, &limits).unwrap();
    let mut rng = SplitMix(7);
    let added: Vec<u64> = (0..100_000).map(|_| rng.next()).collect();
    for x in &added {
        c.add(&ItemHash::of(&x.to_le_bytes()), &limits).unwrap();
    }
    assert!(added
        .iter()
        .all(|x| c.contains(&ItemHash::of(&x.to_le_bytes()))));
    let n = 400_000u32;
    let fp = (0..n)
        .filter(|_| c.contains(&ItemHash::of(&rng.next().to_le_bytes())))
        .count() as f64;
    let p = c.links()[0].shape().error;
    let bound = f64::from(n) * p + 4.0 * (f64::from(n) * p * (1.0 - p)).sqrt();
    assert!(fp <= bound, "{fp} false positives, bound {bound} (p = {p})");
    assert!(
        fp > 0.2 * f64::from(n) * p,
        "{fp}: the link is not sized for {p}"
    );
}
