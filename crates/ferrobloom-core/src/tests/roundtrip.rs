//! Property: whatever a filter can grow into, its encodings load back (issue 19,
//! "anything the server holds, it can move"). Every way a filter grows (Bloom:
//! classic, blocked, paired and RedisBloom layouts, scaling or not; cuckoo: ferrobloom's
//! and RedisBloom's layouts, with deletes and compaction steps in between), under
//! growth limits at small boundaries and at the module's defaults, is encoded as
//! an RDB payload (header + chunks, read back by `load_payload_as` like the
//! `rdb_load` callback) and as a SCANDUMP sequence (read back by LOADCHUNK's
//! `from_header*` + `load_chunk`), both checked with the limits the growth ran
//! under *and* with the default limits a client payload is held to; the copy
//! must be byte-identical and answer every lookup identically.

use super::bloom::{BloomChain, BloomLayout, Limits};
use super::cuckoo::{CuckooFilter, CuckooParams};
use super::filter::BloomFilter;
use super::payload::{load_payload_as, HeaderFormat};

/// The module's default client limits (`max-filter-memory` 4 GiB,
/// `bf-max-links` 64, `cf-max-expansions` 32).
const DEFAULTS: Limits = Limits {
    max_bytes: 4 << 30,
    max_links: 64,
    max_filters: 32,
};

use super::test_rng::SplitMix;

fn item(tag: u64, i: u64) -> Vec<u8> {
    format!("t{tag}-{i}").into_bytes()
}

fn format_of(redisbloom: bool) -> HeaderFormat {
    if redisbloom {
        HeaderFormat::RedisBloom
    } else {
        HeaderFormat::Native
    }
}

// ----- Bloom -----

fn bloom_rdb(c: &BloomChain, limits: &Limits) -> Result<BloomChain, String> {
    let mut bufs = vec![c.encode_header()];
    c.for_each_chunk(|_, d| bufs.push(d.to_vec()));
    let mut it = bufs.into_iter();
    match load_payload_as::<BloomFilter, _>(limits, format_of(c.is_redisbloom()), || it.next())? {
        BloomFilter::Chain(c) => Ok(c),
        _ => Err("loaded another kind".into()),
    }
}

fn bloom_scandump(c: &BloomChain, limits: &Limits) -> Result<BloomChain, String> {
    let mut g =
        BloomChain::from_header(&c.encode_header(), limits).map_err(|e| format!("{e:?}"))?;
    let mut it = 1;
    while let Some((next, data)) = c.scandump_chunk(it) {
        g.load_chunk(next, data).map_err(|e| format!("{e:?}"))?;
        it = next;
    }
    Ok(g)
}

fn same_bloom(a: &BloomChain, b: &BloomChain, items: &[Vec<u8>], what: &str) {
    assert_eq!(a.encode_header(), b.encode_header(), "{what}: header");
    let (mut x, mut y) = (Vec::new(), Vec::new());
    a.for_each_chunk(|i, d| x.push((i, d.to_vec())));
    b.for_each_chunk(|i, d| y.push((i, d.to_vec())));
    assert!(x == y, "{what}: data");
    for i in items
        .iter()
        .chain((0..500).map(|i| item(999, i)).collect::<Vec<_>>().iter())
    {
        assert_eq!(
            a.contains(&a.hash(i)),
            b.contains(&b.hash(i)),
            "{what}: answer"
        );
    }
}

fn check_bloom(c: &BloomChain, grown_under: &Limits, items: &[Vec<u8>], what: &str) {
    for (lname, l) in [("growth limits", grown_under), ("defaults", &DEFAULTS)] {
        let r = bloom_rdb(c, l).unwrap_or_else(|e| panic!("{what}: RDB with {lname}: {e}"));
        same_bloom(c, &r, items, &format!("{what} RDB {lname}"));
        let s =
            bloom_scandump(c, l).unwrap_or_else(|e| panic!("{what}: SCANDUMP with {lname}: {e}"));
        same_bloom(c, &s, items, &format!("{what} SCANDUMP {lname}"));
    }
}

#[test]
fn every_grown_bloom_filter_loads_back_under_the_limits_it_grew_in() {
    let mut refusals = [0u32; 3];
    for seed in 0..160u64 {
        let mut rng = SplitMix(seed ^ 0xb100_f11e);
        let layout = rng.pick(&[
            BloomLayout::Classic,
            BloomLayout::Blocked,
            BloomLayout::Paired,
            BloomLayout::RedisBloom,
        ]);
        let expansion = rng.pick(&[0u32, 1, 2, 4]);
        // 1e-37: about 123 hashes, so tightened links reach MAX_HASHES (128).
        let error = rng.pick(&[0.5, 0.1, 0.01, 1e-5, 1e-37]);
        let capacity = 1 + rng.below(40);
        let mut limits = Limits {
            max_bytes: DEFAULTS.max_bytes,
            max_links: rng.pick(&[1u32, 2, 3, 5, 64]),
            max_filters: 32,
        };
        let Ok(mut c) = BloomChain::with_layout(capacity, error, expansion, layout, &limits) else {
            continue;
        };
        if rng.below(2) == 0 {
            // A memory cap at the boundary: what it holds now plus a bit.
            limits.max_bytes = c.mem_usage() + rng.below(4 * c.mem_usage().max(64));
        }
        let mut items = Vec::new();
        let n = 50 + rng.below(1500);
        for i in 0..n {
            let it = item(seed, i);
            match c.add(&c.hash(&it), &limits) {
                Ok(_) => items.push(it),
                Err(e) => {
                    let k = match e {
                        super::bloom::BloomError::MaxLinks => 0,
                        super::bloom::BloomError::MemoryCap => 1,
                        _ => 2,
                    };
                    refusals[k] += 1;
                }
            }
            if i % 400 == 399 {
                check_bloom(&c, &limits, &items, &format!("seed {seed} after {i}"));
            }
        }
        check_bloom(&c, &limits, &items, &format!("seed {seed}"));
    }
    // The boundaries were reached (links, memory, hashes or non-scaling full).
    assert!(refusals.iter().all(|r| *r > 0), "{refusals:?}");
}

// ----- Cuckoo -----

fn cuckoo_rdb(f: &CuckooFilter, limits: &Limits) -> Result<CuckooFilter, String> {
    let mut bufs = vec![f.encode_header()];
    f.for_each_chunk(|_, d| bufs.push(d.to_vec()));
    let mut it = bufs.into_iter();
    load_payload_as::<CuckooFilter, _>(limits, format_of(f.is_redisbloom()), || it.next())
}

fn cuckoo_scandump(f: &CuckooFilter, limits: &Limits) -> Result<CuckooFilter, String> {
    let (mut it, hdr) = f.scandump_chunk(0).ok_or("no header")?;
    let mut g = CuckooFilter::from_header_within(&hdr, limits.max_bytes, limits.max_filters)
        .map_err(|e| e.to_string())?;
    while let Some((next, data)) = f.scandump_chunk(it) {
        g.load_chunk(next, &data).map_err(|e| e.to_string())?;
        it = next;
    }
    Ok(g)
}

fn same_cuckoo(a: &CuckooFilter, b: &CuckooFilter, items: &[Vec<u8>], what: &str) {
    if !a.is_redisbloom() {
        // RedisBloom's header has no room for a running compaction pass.
        assert_eq!(a.encode_header(), b.encode_header(), "{what}: header");
    }
    assert_eq!(a.num_items(), b.num_items(), "{what}: items");
    assert_eq!(a.num_deletes(), b.num_deletes(), "{what}: deletes");
    assert_eq!(a.num_filters(), b.num_filters(), "{what}: filters");
    assert!(
        a.subfilter_bytes().eq(b.subfilter_bytes()),
        "{what}: slot bytes"
    );
    for i in items
        .iter()
        .chain((0..500).map(|i| item(999, i)).collect::<Vec<_>>().iter())
    {
        let (ha, hb) = (a.hash(i), b.hash(i));
        assert_eq!(a.contains(&ha), b.contains(&hb), "{what}: answer");
        assert_eq!(a.count(&ha), b.count(&hb), "{what}: count");
    }
}

fn check_cuckoo(f: &CuckooFilter, grown_under: &Limits, items: &[Vec<u8>], what: &str) {
    for (lname, l) in [("growth limits", grown_under), ("defaults", &DEFAULTS)] {
        let r = cuckoo_rdb(f, l).unwrap_or_else(|e| panic!("{what}: RDB with {lname}: {e}"));
        same_cuckoo(f, &r, items, &format!("{what} RDB {lname}"));
        let s =
            cuckoo_scandump(f, l).unwrap_or_else(|e| panic!("{what}: SCANDUMP with {lname}: {e}"));
        same_cuckoo(f, &s, items, &format!("{what} SCANDUMP {lname}"));
    }
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "statistical, seconds: `make test` runs it (--features slow-tests)"
)]
fn every_grown_cuckoo_filter_loads_back_under_the_limits_it_grew_in() {
    let (mut max_exp, mut mem_cap) = (0u32, 0u32);
    for seed in 0..240u64 {
        let mut rng = SplitMix(seed ^ 0xc0c0_f11e);
        let redisbloom = rng.below(2) == 0;
        let bs = rng.pick(&[1u8, 2, 4]);
        let p = CuckooParams {
            capacity: 2 * u64::from(bs) + rng.below(40),
            bucket_size: bs,
            max_iterations: rng.pick(&[1u16, 20]),
            expansion: rng.pick(&[0u32, 1, 2, 4]),
            fp_bits: if redisbloom {
                8
            } else {
                rng.pick(&[8u8, 12, 16])
            },
            error_rate: None,
            redisbloom,
        };
        let mut limits = Limits {
            max_bytes: DEFAULTS.max_bytes,
            max_links: 64,
            max_filters: rng.pick(&[1u32, 2, 3, 5, 32]),
        };
        let mut f = CuckooFilter::new(&p, limits.max_bytes).unwrap();
        if rng.below(2) == 0 {
            limits.max_bytes = f.mem_usage() as u64 + rng.below(8 * f.mem_usage() as u64);
        }
        let mut items: Vec<Vec<u8>> = Vec::new();
        let universe = 20 + rng.below(400);
        let ops = 1200;
        for op in 0..ops {
            let r = rng.below(100);
            if r < 70 {
                // Duplicates too: they force growth fastest.
                let it = item(seed, rng.below(universe));
                match f.insert(&f.hash(&it), limits.max_filters, limits.max_bytes) {
                    Ok(()) => items.push(it),
                    Err(super::cuckoo::CuckooError::MaxExpansions) => max_exp += 1,
                    Err(super::cuckoo::CuckooError::MemoryCap) => mem_cap += 1,
                    Err(_) => {}
                }
            } else if r < 95 {
                if !items.is_empty() {
                    let at = rng.below(items.len() as u64) as usize;
                    let it = items.swap_remove(at);
                    assert!(f.delete(&f.hash(&it)), "seed {seed} op {op}: lost");
                }
            } else if r < 99 {
                f.compact_step(1 + rng.below(64));
            } else {
                f.compact_command(u64::MAX);
            }
            assert!(
                f.num_filters() as u64 <= u64::from(limits.max_filters),
                "seed {seed} op {op}: grew past the limit"
            );
            if op % 300 == 299 {
                check_cuckoo(&f, &limits, &items, &format!("seed {seed} op {op}"));
            }
        }
        check_cuckoo(&f, &limits, &items, &format!("seed {seed}"));
    }
    assert!(max_exp > 0 && mem_cap > 0, "{max_exp} {mem_cap}");
}
