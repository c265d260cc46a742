//! The seed corpus: inputs for every target built from real encodings.

use super::redisbloom::redisbloom_seeds;
use super::*;

/// One seed: target, file name, contents.
pub type Seed = (&'static str, String, Vec<u8>);
/// Capacity, bucket size, max iterations, expansion, fingerprint bits, error
/// rate, items inserted, whether to leave a compaction pass under way.
type CuckooSeed = (u64, u8, u16, u32, u8, Option<f64>, usize, bool);

/// Seed inputs for every target, built from real encodings: filters of both
/// types in several shapes (scaling and not, several links or sub-filters, other
/// fingerprint widths and bucket sizes, a compaction pass under way) holding
/// items, and valid argument vectors of every command with options.
pub fn seeds() -> Vec<Seed> {
    let mut out = Vec::new();
    let big = Limits::default();
    // Bloom filters.
    let blooms: [(u64, f64, u32, usize); 5] = [
        (10, 0.01, 2, 0),
        (10, 0.01, 2, 60),
        (8, 0.1, 0, 5),
        (4, 0.001, 1, 25),
        (100, 0.2, 4, 300),
    ];
    for (i, (cap, err, exp, n)) in blooms.into_iter().enumerate() {
        let Ok(mut c) = BloomChain::new(cap, err, exp, &big) else {
            continue;
        };
        for k in 0..n {
            let _ = c.add(&ItemHash::of(format!("item{k}").as_bytes()), &big);
        }
        let d = bloom_dump(&BloomFilter::from(c));
        out.push(("rdb_bloom", format!("seed-{i}"), rdb_seed(&d)));
        out.push((
            "bloom_chunks",
            format!("seed-{i}"),
            chunks_seed(&d, &[2, 3, 4, 5], 8),
        ));
    }
    // Link layout code 0 (classic links before code 4, which every classic
    // filter created today has): still decoded.
    if let Ok(mut c) = BloomChain::with_layout(10, 0.01, 2, BloomLayout::ClassicDouble, &big) {
        for k in 0..60 {
            let _ = c.add(&ItemHash::of(format!("item{k}").as_bytes()), &big);
        }
        let d = bloom_dump(&BloomFilter::from(c));
        out.push(("rdb_bloom", "seed-classic-code0".to_string(), rdb_seed(&d)));
        out.push((
            "bloom_chunks",
            "seed-classic-code0".to_string(),
            chunks_seed(&d, &[2, 3, 4, 5], 8),
        ));
    }
    // Bloom header version 2: valkey-bloom's TIGHTENING and SEED, both layouts.
    for (i, layout) in [BloomLayout::Classic, BloomLayout::Blocked]
        .into_iter()
        .enumerate()
    {
        let opts = ferrobloom_core::bloom::ChainOptions {
            tightening: 0.7,
            seed: Some([i as u8 + 5; 32]),
        };
        let Ok(mut c) = BloomChain::with_options(10, 0.01, 2, layout, opts, &big) else {
            continue;
        };
        for k in 0..60 {
            let h = c.hash(format!("item{k}").as_bytes());
            let _ = c.add(&h, &big);
        }
        let d = bloom_dump(&BloomFilter::from(c));
        out.push(("rdb_bloom", format!("seed-v2-{i}"), rdb_seed(&d)));
        out.push((
            "bloom_chunks",
            format!("seed-v2-{i}"),
            chunks_seed(&d, &[2, 3, 4, 5], 8),
        ));
    }
    // Cuckoo filters.
    let cuckoos: [CuckooSeed; 6] = [
        (8, 2, 20, 1, 8, None, 0, false),
        (8, 2, 20, 1, 8, None, 40, false),
        (16, 4, 5, 2, 12, Some(0.001), 70, false),
        (4, 1, 1, 0, 4, None, 3, false),
        (8, 3, 50, 4, 32, Some(1e-9), 100, false),
        (4, 2, 20, 1, 8, None, 30, true),
    ];
    for (i, (cap, bs, mi, exp, fp, err, n, deletes)) in cuckoos.into_iter().enumerate() {
        let p = ferrobloom_core::cuckoo::CuckooParams {
            capacity: cap,
            bucket_size: bs,
            max_iterations: mi,
            expansion: exp,
            fp_bits: fp,
            error_rate: err,
            redisbloom: false,
        };
        let Ok(mut f) = CuckooFilter::new(&p, u64::MAX) else {
            continue;
        };
        for k in 0..n {
            let _ = f.insert(&hash_item(format!("item{k}").as_bytes()), 64, u64::MAX);
        }
        if deletes {
            // Leave a compaction pass under way.
            for k in 0..n / 3 {
                f.delete(&hash_item(format!("item{k}").as_bytes()));
            }
            f.compact_step(1);
        }
        let d = cuckoo_dump(&f);
        out.push(("rdb_cuckoo", format!("seed-{i}"), rdb_seed(&d)));
        out.push((
            "cuckoo_chunks",
            format!("seed-{i}"),
            chunks_seed(&d, &[2, 3, 5, 4, 6, 7, 8, 9], 10),
        ));
    }
    // Argument vectors of every command.
    let argvs: &[&str] = &[
        "BF.RESERVE k 0.01 100",
        "BF.RESERVE k 0.001 1000 EXPANSION 4",
        "BF.RESERVE k 0.1 50 NONSCALING",
        "BF.RESERVE k 1e-3 1073741824 expansion 0 nonscaling",
        "BF.ADD k item",
        "BF.MADD k a b c",
        "BF.EXISTS k item",
        "BF.MEXISTS k a b",
        "BF.INSERT k CAPACITY 1000 ERROR 0.001 EXPANSION 2 ITEMS a b",
        "BF.INSERT k NOCREATE ITEMS a",
        "BF.INSERT k NONSCALING CAPACITY 10 ITEMS ITEMS",
        "BF.INFO k",
        "BF.INFO k CAPACITY",
        "BF.INFO k expansion",
        "BF.CARD k",
        "BF.SCANDUMP k 0",
        "BF.SCANDUMP k 9223372036854775807",
        "BF.LOADCHUNK k 1 data",
        "BF.DEBUG k",
        "CF.RESERVE k 1000",
        "CF.RESERVE k 1000 BUCKETSIZE 4 MAXITERATIONS 50 EXPANSION 2",
        "CF.RESERVE k 64 ERROR 0.001 bucketsize 255",
        "CF.ADD k item",
        "CF.ADDNX k item",
        "CF.INSERT k CAPACITY 1000 ITEMS a b",
        "CF.INSERTNX k ERROR 0.01 NOCREATE ITEMS a",
        "CF.INSERT k NOCREATE ITEMS NOCREATE",
        "CF.EXISTS k item",
        "CF.MEXISTS k a b",
        "CF.COUNT k item",
        "CF.DEL k item",
        "CF.COMPACT k",
        "CF.INFO k",
        "CF.SCANDUMP k 0",
        "CF.LOADCHUNK k 1 data",
        "CF.LOADCHUNK k -1 data",
        "CF.DEBUG k",
        "BF.INSERT k TIGHTENING 0.7 SEED 0123456789abcdef0123456789abcdef VALIDATESCALETO 5000 ITEMS a",
        "BF.RESERVE k 0.01 100 TIGHTENING 0.9 SEED 0123456789abcdef0123456789abcdef LAYOUT blocked",
        "BF.INFO k MAXSCALEDCAPACITY",
    ];
    for (i, a) in argvs.iter().enumerate() {
        out.push((
            "args",
            format!("seed-{i}"),
            a.replace(' ', "\n").into_bytes(),
        ));
    }
    out.extend(window_seeds());
    out.extend(redisbloom_seeds());
    out.extend(super::file::file_seeds());
    out
}

/// Windowed filters: each layout, scaling and not, one generation with
/// several links and several generations; and two headers no command writes:
/// a link that claims 2^49 + 25 items in the bits of 25 (refused), and a
/// generation whose first link is far larger than the links after it (its
/// bits hold it: accepted, and its next growth link is sized from it). The
/// first is a regression input (`regression-*`), not a valid encoding.
pub(super) fn window_seeds() -> Vec<Seed> {
    use ferrobloom_core::bloom::LinkShape;
    use ferrobloom_core::window::Window;
    const T0: u64 = 1_764_000_000_000;
    let big = Limits::default();
    let mut out = Vec::new();
    let shapes = [
        (BloomLayout::Paired, 2, 100, 30, 1),
        (BloomLayout::Blocked, 2, 40, 30, 3),
        (BloomLayout::Classic, 4, 100, 60, 2),
        (BloomLayout::Paired, 0, 100, 60, 1),
        (BloomLayout::ClassicDouble, 1, 16, 40, 5),
    ];
    let mut first = None;
    for (i, (layout, exp, cap, n, gens)) in shapes.into_iter().enumerate() {
        let Ok(mut w) = Window::new(cap, 0.01, exp, layout, 1000, &big) else {
            continue;
        };
        for g in 0..gens {
            for k in 0..n {
                let h = w.hash(format!("item{g}-{k}").as_bytes());
                let _ = w.add(&h, T0 + g * 250, &big);
            }
        }
        let f = BloomFilter::from(w);
        let d = bloom_dump(&f);
        if first.is_none() {
            first = Some(d.clone());
        }
        out.push(("rdb_bloom", format!("seed-window-{i}"), rdb_seed(&d)));
        out.push((
            "bloom_chunks",
            format!("seed-window-{i}"),
            chunks_seed(&d, &[2, 3, 4, 5], 8),
        ));
        let mut bytes = Vec::new();
        if ferrobloom_core::file::write(&f, &mut bytes).is_ok() {
            out.push(("file", format!("seed-window-{i}"), bytes));
        }
    }
    // The first seed's oldest generation's first link: the fixed header (48
    // bytes), the generation's index and length (12), the plain header (24).
    const LINK: usize = 48 + 12 + 24;
    if let Some((h, chunks)) = first {
        let mut lie = h.clone();
        lie[LINK..LINK + 8].copy_from_slice(&((1u64 << 49) + 25).to_le_bytes());
        let d = (lie, chunks.clone());
        out.push((
            "rdb_bloom",
            "regression-window-lying-link".to_string(),
            rdb_seed(&d),
        ));
        out.push((
            "bloom_chunks",
            "regression-window-lying-link".to_string(),
            chunks_seed(&d, &[2, 3], 8),
        ));
        let error = h
            .get(LINK + 16..LINK + 24)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(|b| f64::from_bits(u64::from_le_bytes(b)));
        if let Some(Ok(s)) =
            error.map(|e| LinkShape::with_layout(1_000, e, BloomLayout::Paired, false))
        {
            let mut odd = h;
            odd[LINK..LINK + 8].copy_from_slice(&s.entries.to_le_bytes());
            odd[LINK + 24..LINK + 32].copy_from_slice(&s.bits.to_le_bytes());
            odd[LINK + 32..LINK + 36].copy_from_slice(&s.hashes.to_le_bytes());
            // Its first link's data grows to the new size (zeros after).
            let mut chunks = chunks;
            if let Some((_, c)) = chunks.first_mut() {
                c.resize(usize::try_from(s.bits / 8).unwrap_or(0), 0);
            }
            let mut at = 1i64;
            for (it, c) in chunks.iter_mut() {
                at += c.len() as i64;
                *it = at;
            }
            let d = (odd, chunks);
            out.push((
                "rdb_bloom",
                "seed-window-large-first-link".to_string(),
                rdb_seed(&d),
            ));
            out.push((
                "bloom_chunks",
                "seed-window-large-first-link".to_string(),
                chunks_seed(&d, &[2, 3], 8),
            ));
        }
    }
    out
}
