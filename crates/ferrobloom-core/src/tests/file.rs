//! The file format (`crate::file`): every kind and layout round-trips byte for
//! byte; truncated, corrupted, lying and foreign inputs are refused with an
//! error and never allocate what they do not carry (property test over fixed
//! seeds: every truncation, random byte flips, and mutations with the checksum
//! recomputed so that the checks behind it are reached).

use super::*;
use crate::api::{Scandump, LOAD_LIMITS, SERVER_DEFAULT_LIMITS};
use crate::bloom::{BloomChain, BloomError, BloomLayout, ChainOptions};
use crate::cuckoo::{CuckooFilter, CuckooParams};
use crate::filter::BloomFilter;
use crate::hash::ItemHash;
use crate::test_rng::SplitMix;

pub(super) fn blooms() -> Vec<BloomFilter> {
    let l = SERVER_DEFAULT_LIMITS;
    let mut out: Vec<BloomFilter> = Vec::new();
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        for expansion in [0, 2] {
            let c =
                BloomChain::with_options(100, 0.01, expansion, layout, ChainOptions::default(), &l)
                    .unwrap();
            out.push(c.into());
        }
    }
    out.push(
        BloomChain::new_redisbloom(100, 0.01, 2, 2, &l)
            .unwrap()
            .into(),
    );
    out.push(
        BloomChain::new_redisbloom(100, 0.01, 0, 2, &l)
            .unwrap()
            .into(),
    );
    for f in &mut out {
        // Scaling filters grow a few links; non-scaling ones fill up.
        let items: Vec<Vec<u8>> = (0..300).map(|i| format!("item{i}").into_bytes()).collect();
        f.add_items(items.iter().map(|v| &v[..]), 0, &l);
    }
    out
}

pub(super) fn cuckoos() -> Vec<CuckooFilter> {
    let l = SERVER_DEFAULT_LIMITS;
    [false, true]
        .into_iter()
        .map(|rb| {
            let p = CuckooParams {
                capacity: 64,
                redisbloom: rb,
                ..CuckooParams::default()
            };
            let mut f = CuckooFilter::new(&p, l.max_bytes).unwrap();
            let items: Vec<Vec<u8>> = (0..200).map(|i| format!("item{i}").into_bytes()).collect();
            crate::api::cuckoo_insert_items(&mut f, items.iter().map(|v| &v[..]), false, &l);
            f
        })
        .collect()
}

fn chunks_of<T: Scandump>(f: &T) -> Vec<(i64, Vec<u8>)> {
    let mut v = Vec::new();
    f.for_each_dump_chunk(|i, d| v.push((i, d.to_vec())));
    v
}

/// The SCANDUMP walk step by step (what a client sees) equals the linear walk.
fn walked<T: Scandump>(f: &T) -> Vec<(i64, Vec<u8>)> {
    let mut v = Vec::new();
    let mut it = 0;
    while let Some((next, d)) = f.scandump(it) {
        v.push((next, d.to_vec()));
        it = next;
    }
    v
}

pub(super) fn file_of<T: Scandump>(f: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write(f, &mut out).unwrap();
    out
}

#[test]
fn every_kind_round_trips_byte_for_byte() {
    for f in blooms() {
        assert_eq!(chunks_of(&f), walked(&f));
        let bytes = file_of(&f);
        let g: BloomFilter = read(&bytes, &LOAD_LIMITS).unwrap();
        assert_eq!(chunks_of(&f), chunks_of(&g));
        assert_eq!(file_of(&g), bytes);
        assert!(err(read::<CuckooFilter>(&bytes, &LOAD_LIMITS)).contains("holds a BF filter"));
        assert!(matches!(
            read_any(&bytes, &LOAD_LIMITS),
            Ok(AnyFilter::Bloom(_))
        ));
    }
    for f in cuckoos() {
        // The same bytes; the walk's iterators carry the filter's move count
        // once fingerprints moved (as the server's SCANDUMP), the file's are
        // positions.
        let bytes_only = |c: Vec<(i64, Vec<u8>)>| c.into_iter().map(|(_, d)| d).collect::<Vec<_>>();
        assert_eq!(bytes_only(chunks_of(&f)), bytes_only(walked(&f)));
        let bytes = file_of(&f);
        let g: CuckooFilter = read(&bytes, &LOAD_LIMITS).unwrap();
        assert_eq!(chunks_of(&f), chunks_of(&g));
        assert_eq!(file_of(&g), bytes);
        assert!(read::<BloomFilter>(&bytes, &LOAD_LIMITS).is_err());
    }
}

/// Recomputes the checksum so that a mutation reaches the checks behind it.
pub(super) fn reseal(b: &mut [u8]) {
    if b.len() >= PREAMBLE + CHECKSUM {
        let end = b.len() - CHECKSUM;
        let sum = xxhash_rust::xxh3::xxh3_64(&b[..end]);
        b[end..].copy_from_slice(&sum.to_le_bytes());
    }
}

fn err<T>(r: Result<T, String>) -> String {
    match r {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    }
}

fn load_any(b: &[u8]) -> Result<(), String> {
    read_any(b, &LOAD_LIMITS).map(|_| ())
}

#[test]
fn truncations_flips_and_lies_are_refused() {
    let mut rng = SplitMix(29);
    let mut files: Vec<Vec<u8>> = blooms().iter().map(file_of).collect();
    files.extend(cuckoos().iter().map(file_of));
    for f in &files {
        // Every truncation, sealed or not.
        for cut in 0..f.len() {
            assert!(load_any(&f[..cut]).is_err(), "cut at {cut}");
            let mut t = f[..cut].to_vec();
            reseal(&mut t);
            assert!(load_any(&t).is_err(), "sealed cut at {cut}");
        }
        // Random flips: the checksum catches them.
        for _ in 0..200 {
            let mut m = f.clone();
            let at = rng.below(m.len() as u64) as usize;
            m[at] ^= 1 << rng.below(8);
            assert!(load_any(&m).is_err());
        }
        // Sealed mutations of the framing and the header: an error or a filter,
        // never a panic; lengths, counts and iterators that lie are refused.
        for _ in 0..400 {
            let mut m = f.clone();
            let span = (f.len() - CHECKSUM).min(PREAMBLE + CHUNK_PREFIX + 120);
            let at = rng.below(span as u64) as usize;
            m[at] = rng.next() as u8;
            reseal(&mut m);
            let _ = load_any(&m);
        }
        for (at, v) in [(12usize, u32::MAX), (12, 0), (24, u32::MAX), (24, 1 << 24)] {
            let mut m = f.clone();
            m[at..at + 4].copy_from_slice(&v.to_le_bytes());
            reseal(&mut m);
            assert!(load_any(&m).is_err(), "field at {at} = {v}");
        }
        // A wrong iterator on the first data chunk.
        let hlen = u32::from_le_bytes(f[24..28].try_into().unwrap()) as usize;
        let d = PREAMBLE + CHUNK_PREFIX + hlen;
        if d + 8 < f.len() - CHECKSUM {
            let mut m = f.clone();
            m[d] ^= 0x10;
            reseal(&mut m);
            assert!(err(load_any(&m)).contains("iterator"));
        }
        // A later version and unknown flags and kinds.
        for (at, v, what) in [(8, 2u8, "version 2"), (11, 1, "flags"), (10, 9, "kind")] {
            let mut m = f.clone();
            m[at] = v;
            reseal(&mut m);
            assert!(err(load_any(&m)).contains(what), "{what}");
        }
        // Trailing bytes.
        let mut m = f.clone();
        m.splice(f.len() - CHECKSUM..f.len() - CHECKSUM, [0u8; 3]);
        reseal(&mut m);
        assert!(err(load_any(&m)).contains("after the last chunk"));
    }
    assert!(load_any(b"").is_err());
    assert!(err(load_any(b"FBbf....")).contains("magic"));
}

/// A header whose data is missing or shorter than it says is refused before
/// the filter is allocated (`load_payload_as` checks every length first).
#[test]
fn a_header_without_its_data_is_refused() {
    for f in blooms() {
        let header = f.encode_header();
        for chunks in [
            vec![(1, &header[..])],
            vec![(1, &header[..]), (2, &b"x"[..])],
        ] {
            let e = err(crate::api::load_chunks::<BloomFilter>(
                &chunks,
                &LOAD_LIMITS,
            ));
            assert!(
                e.contains("does not match") || e.contains("truncated"),
                "{e}"
            );
        }
    }
}

/// Files written by format version 1 (committed; `python/ferrobloom` wrote them
/// with the same parameters and items as [`blooms`] and [`cuckoos`]) load in
/// this version, and the same filters still write them byte for byte.
#[test]
fn committed_version_1_files_load_and_are_rewritten_identically() {
    let bloom = blooms();
    let cuckoo = cuckoos();
    // The classic file was written before classic links mixed their probes
    // (link layout code 4): it holds code-0 links, which a filter created with
    // that derivation still writes byte for byte.
    let l = SERVER_DEFAULT_LIMITS;
    let mut classic_double: BloomFilter = BloomChain::with_options(
        100,
        0.01,
        2,
        BloomLayout::ClassicDouble,
        ChainOptions::default(),
        &l,
    )
    .unwrap()
    .into();
    let items: Vec<Vec<u8>> = (0..300).map(|i| format!("item{i}").into_bytes()).collect();
    classic_double.add_items(items.iter().map(|v| &v[..]), 0, &l);
    let cases: [(&[u8], Vec<u8>); 4] = [
        (
            include_bytes!("../../tests/fixtures/files/bloom-classic-v1.fbf"),
            file_of(&classic_double),
        ),
        (
            include_bytes!("../../tests/fixtures/files/bloom-redisbloom-v1.fbf"),
            file_of(&bloom[6]),
        ),
        (
            include_bytes!("../../tests/fixtures/files/cuckoo-ferrobloom-v1.fbf"),
            file_of(&cuckoo[0]),
        ),
        (
            include_bytes!("../../tests/fixtures/files/cuckoo-redisbloom-v1.fbf"),
            file_of(&cuckoo[1]),
        ),
    ];
    for (i, (committed, now)) in cases.iter().enumerate() {
        assert_eq!(parse(committed).map(|p| p.version), Ok(1), "case {i}");
        match read_any(committed, &LOAD_LIMITS) {
            Ok(AnyFilter::Bloom(f)) => assert_eq!(&file_of(&f), committed, "case {i}"),
            Ok(AnyFilter::Cuckoo(f)) => assert_eq!(&file_of(&f), committed, "case {i}"),
            Err(e) => panic!("case {i}: {e}"),
        }
        assert!(
            &now[..] == *committed,
            "case {i}: a filter no longer writes its v1 file"
        );
    }
}

#[test]
fn batches_of_hashes_answer_and_dump_as_batches_of_items() {
    // add_hashes/contains_hashes (the Python package's batch path) must leave
    // the filter byte for byte as add_items does, with the same replies, for
    // every kind: scaling, non-scaling (which fills up: the reply ends after
    // "full"), RedisBloom's hashing, a window, and one-link chains large
    // enough for the batch to prefetch (`BloomChain::prefetch_distance`).
    let l = SERVER_DEFAULT_LIMITS;
    let kinds = || {
        let mut k = blooms();
        for layout in [BloomLayout::Classic, BloomLayout::Blocked] {
            let big = BloomChain::with_layout(4_000_000, 0.01, 0, layout, &l).unwrap();
            assert!(big.prefetch_distance() > 0);
            k.push(big.into());
        }
        k.push(
            crate::window::Window::new(100, 0.01, 2, BloomLayout::Blocked, 60_000, &l)
                .unwrap()
                .into(),
        );
        k
    };
    let items: Vec<Vec<u8>> = (0..400).map(|i| format!("x{i}").into_bytes()).collect();
    let probes: Vec<Vec<u8>> = (0..800)
        .map(|i| format!("{}{}", ["x", "y"][i % 2], i / 2).into_bytes())
        .collect();
    let (mut yes, mut all) = (0, 0);
    for (mut a, mut b) in kinds().into_iter().zip(kinds()) {
        let want = a.add_items(items.iter().map(|v| &v[..]), 1_000, &l);
        let hashes: Vec<_> = items.iter().map(|i| b.scheme().bloom(i)).collect();
        let mut got = Vec::new();
        b.add_hashes(&hashes, 1_000, &l, &mut got);
        assert_eq!(got, want);
        assert_eq!(file_of(&a), file_of(&b));
        let want = a.contains_items(probes.iter().map(|v| &v[..]), 2_000);
        let hashes: Vec<_> = probes.iter().map(|i| b.scheme().bloom(i)).collect();
        let mut got = vec![true];
        b.contains_hashes(&hashes, 2_000, &mut got);
        assert_eq!(got[1..], want[..]);
        yes += want.iter().filter(|x| **x).count();
        all += want.len();
    }
    assert!(yes > 0 && yes < all, "{yes} of {all}");
}

#[test]
#[cfg_attr(
    not(feature = "slow-tests"),
    ignore = "800k items twice, seconds unoptimized: `make test` runs it (--features slow-tests)"
)]
fn a_prefetching_batch_that_fills_its_filter_stops_where_item_by_item_adds_do() {
    // A one-link filter large enough to prefetch (4.3 MiB and more at 1e-9 for 800k
    // items) filled past its capacity by batches of 10,000 hashes: the batch
    // loop (groups of prefetched lines, `Link::add_run`) must answer and stop
    // as `add` item by item does, with the same bits.
    let l = SERVER_DEFAULT_LIMITS;
    for layout in [BloomLayout::Classic, BloomLayout::Blocked] {
        let make = || BloomChain::with_layout(800_000, 1e-9, 0, layout, &l).unwrap();
        let (mut a, b) = (make(), make());
        assert!(b.prefetch_distance() > 0, "{layout:?}");
        let mut b = BloomFilter::from(b);
        let hashes: Vec<_> = (0..810_005u32)
            .map(|i| ItemHash::of(&i.to_le_bytes()))
            .collect();
        let (mut want, mut got) = (Vec::new(), Vec::new());
        for chunk in hashes.chunks(10_000) {
            for h in chunk {
                let r = a.add(h, &l);
                let full = r == Err(BloomError::Full);
                want.push(r);
                if full {
                    break;
                }
            }
            b.add_hashes(chunk, 0, &l, &mut got);
        }
        assert!(
            want.contains(&Err(BloomError::Full)),
            "{layout:?}: never full"
        );
        assert_eq!(got, want, "{layout:?}");
        assert_eq!(file_of(&BloomFilter::from(a)), file_of(&b), "{layout:?}");
    }
}

/// The file in pieces of `max` bytes.
fn in_pieces<T: Scandump>(f: &T, max: usize) -> Vec<u8> {
    let mut p = Pieces::new(f).unwrap();
    let mut out = Vec::new();
    let mut calls = 0;
    loop {
        let before = out.len();
        let more = p.next(f, max, &mut out).unwrap();
        calls += 1;
        // A piece is at most `max` bytes of chunks, plus the preamble and
        // the checksum.
        assert!(out.len() - before <= max.max(1).saturating_add(PREAMBLE + CHECKSUM));
        if !more {
            break;
        }
    }
    assert!(p.is_done());
    assert!(!p.next(f, max, &mut out).unwrap(), "nothing after the end");
    assert_eq!(out.len() as u64, p.file_len());
    assert!(calls >= 1);
    out
}

/// `Pieces` gives `write`'s bytes, in pieces of any size: every kind and
/// layout, and a filter of several 16 MiB chunks cut inside and across them.
#[test]
fn pieces_are_the_file() {
    let check = |whole: Vec<u8>, pieces: &dyn Fn(usize) -> Vec<u8>| {
        for max in [0, 1, 7, 12, 13, 100, 4096, 1 << 20, usize::MAX] {
            assert_eq!(pieces(max), whole, "pieces of {max} bytes");
        }
    };
    for f in blooms() {
        check(file_of(&f), &|m| in_pieces(&f, m));
    }
    for f in cuckoos() {
        check(file_of(&f), &|m| in_pieces(&f, m));
    }
    let l = SERVER_DEFAULT_LIMITS;
    let mut big: BloomFilter = BloomChain::new(30_000_000, 0.01, 2, &l).unwrap().into();
    let items: Vec<Vec<u8>> = (0..1000).map(|i| format!("item{i}").into_bytes()).collect();
    big.add_items(items.iter().map(|v| &v[..]), 0, &l);
    assert!(chunks_of(&big).len() > 2, "several data chunks");
    let whole = file_of(&big);
    for max in [1 << 20, 3 << 20, (16 << 20) + 5, usize::MAX] {
        assert_eq!(in_pieces(&big, max), whole, "pieces of {max} bytes");
    }
}

/// A filter that changed between pieces (the caller's error) is refused
/// once its chunks no longer match, never written as a file of both states.
#[test]
fn pieces_of_a_filter_that_grew_are_refused() {
    let l = SERVER_DEFAULT_LIMITS;
    let mut f: BloomFilter = BloomChain::new(10, 0.01, 2, &l).unwrap().into();
    let mut p = Pieces::new(&f).unwrap();
    let mut out = Vec::new();
    assert!(p.next(&f, 20, &mut out).unwrap());
    let items: Vec<Vec<u8>> = (0..100).map(|i| format!("item{i}").into_bytes()).collect();
    f.add_items(items.iter().map(|v| &v[..]), 0, &l);
    let n = out.len();
    assert!(p.next(&f, 20, &mut out).unwrap_err().contains("changed"));
    assert_eq!(out.len(), n, "nothing appended");
}
