//! Core microbenchmarks, no Redis: ns per add / contains of one non-scaling
//! Bloom filter (`BloomChain`, per layout) and one cuckoo filter
//! (`CuckooFilter`, 8-bit fingerprints, bucket size 2) from L1-resident sizes to
//! 1 GiB, and the hashing cost per item for item lengths 8-256 bytes.
//!
//! Method (own loop, `std::time::Instant` + `black_box`; no criterion):
//! - Filters are created, then every byte is written once (page faults are not
//!   timed). Item hashes are precomputed (16-byte items); hashing is measured
//!   separately in the `hash` part.
//! - Per round: `n = min(capacity / 2, --ops)` fresh items are added to an empty
//!   filter (so adds run from 0 to 50% fill), then `n` members, `n`
//!   non-members and `n` mixed items (half members) are looked up, the mixed
//!   set once item by item and once in batches of `--batch` with every item's
//!   first line prefetched before the batch is probed (`BloomChain::prefetch`).
//!   The adds and the mixed lookups are timed once more through the batch API
//!   (`BloomFilter::add_hashes` / `contains_hashes`, what BF.MADD, BF.MEXISTS
//!   and the Python package run: one pass per item, prefetching ahead), in
//!   calls of `--batch` items; each row says how many cache lines an add and
//!   a mixed lookup must read (`lines_add`, `lines_mixed`), the multiplier of
//!   the memory floor, which each round measures too, on a buffer of the
//!   filter's size (`floor_read_ns`, `floor_rmw_ns`: `bench_memref.rs`'s
//!   loops; `bench/run.py` divides by it, round by round).
//!   Small filters repeat each step (fresh filters for adds) until `--min-ops`
//!   operations are timed. `--rounds` rounds give min / median / max.
//!
//! Run: `cargo run --release -p ferrobloom-core --example bench_core --
//!       [--parts bloom,cuckoo,hash] [--sizes 16K,256K,4M,64M,1G] [--ops 1000000]
//!       [--min-ops 1000000] [--rounds 3] [--error 0.01] [--layouts classic]
//!       [--lengths 8,16,32,64,128,256]`
//! Output: one JSON object per row on stdout (`bench/run.py` reads it).

#[path = "common/bench.rs"]
mod common;
#[path = "common/layouts.rs"]
mod layouts;

use std::hint::black_box;
use std::time::Instant;

use common::{Args, Json, SplitMix};
use ferrobloom_core::cuckoo::{self, CuckooFilter, CuckooHash, CuckooParams};
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::hash::ItemHash;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64_with_seed};

const TAG_MEMBER: u64 = 0x4d45_4d42; // per round: TAG_MEMBER + round
const TAG_ABSENT: u64 = 0xab5e_0000_0000;

fn hashes(tag: u64, n: u64) -> Vec<ItemHash> {
    (0..n)
        .map(|i| ItemHash::of(&common::item16(tag, i)))
        .collect()
}

/// Half members, half non-members, interleaved.
fn mixed(members: &[ItemHash], absent: &[ItemHash]) -> Vec<ItemHash> {
    members
        .iter()
        .zip(absent)
        .flat_map(|(a, b)| [*a, *b])
        .take(members.len())
        .collect()
}

/// Runs `f` (which does `per_call` operations) until at least `min_ops`
/// operations are done; returns ns per operation.
fn timed(per_call: u64, min_ops: u64, mut f: impl FnMut()) -> f64 {
    let reps = min_ops.div_ceil(per_call.max(1)).max(1);
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    t.elapsed().as_nanos() as f64 / (reps * per_call) as f64
}

/// ns per independent random read, and per read-modify-write, of one word
/// per 64-byte line of a pre-faulted buffer of `bytes` (`bench_memref.rs`'s
/// method), over `n` reads in batches of `batch`.
fn floor(bytes: u64, n: u64, batch: usize, seed: u64) -> (f64, f64) {
    const LINE_WORDS: usize = 8;
    let lines = (bytes as usize / 64).max(1);
    let mut buf: Vec<u64> = vec![0; lines * LINE_WORDS];
    for (i, w) in buf.iter_mut().enumerate().step_by(LINE_WORDS) {
        *w = i as u64;
    }
    let mut rng = SplitMix(seed ^ bytes ^ 0xf100);
    let idx: Vec<usize> = (0..n.max(batch as u64))
        .map(|_| ((rng.next() as u128 * lines as u128) >> 64) as usize * LINE_WORDS)
        .collect();
    let t = Instant::now();
    let mut sum = 0u64;
    for chunk in idx.chunks(batch.max(1)) {
        let mut s = 0u64;
        for &i in chunk {
            s = s.wrapping_add(buf.get(i).copied().unwrap_or(0));
        }
        sum = sum.wrapping_add(black_box(s));
    }
    let read = t.elapsed().as_nanos() as f64 / idx.len() as f64;
    let t = Instant::now();
    for chunk in idx.chunks(batch.max(1)) {
        for &i in chunk {
            if let Some(w) = buf.get_mut(i) {
                *w = black_box(*w | 1);
            }
        }
    }
    let rmw = t.elapsed().as_nanos() as f64 / idx.len() as f64;
    black_box(sum);
    (read, rmw)
}

struct Cfg {
    ops: u64,
    min_ops: u64,
    rounds: u64,
    batch: usize,
    error: f64,
}

fn bloom(layout: &str, target: u64, c: &Cfg) {
    let capacity = ((target as f64 / layouts::bytes_per_item(layout, c.error)) as u64).max(16);
    let n = (capacity / 2).min(c.ops).max(1);
    let (mut add, mut hit, mut miss, mut mix, mut mix_batch) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut add_api, mut mix_api) = (vec![], vec![]);
    let (mut lines_add, mut lines_mixed) = (1.0, 1.0);
    let (mut floor_read, mut floor_rmw) = (vec![], vec![]);
    let mut bytes = 0;
    let mut hashes_k = 0;
    let mut sink = 0u64;
    for round in 0..c.rounds {
        let members = hashes(TAG_MEMBER + round, n);
        let absent = hashes(TAG_ABSENT + round, n);
        let mixed = mixed(&members, &absent);
        // Adds: a fresh, pre-faulted filter per repetition (creation untimed).
        let reps = c.min_ops.div_ceil(n).max(1);
        let mut ns = 0.0;
        let mut chain = None;
        for _ in 0..reps {
            let mut f = layouts::new_chain(layout, capacity, c.error, 0);
            layouts::prefault(&mut f);
            let lim = layouts::limits();
            let t = Instant::now();
            for h in &members {
                sink += matches!(f.add(black_box(h), &lim), Ok(true)) as u64;
            }
            ns += t.elapsed().as_nanos() as f64;
            chain = Some(f);
        }
        add.push(ns / (reps * n) as f64);
        // The same adds through the batch API (`add_hashes`: what BF.MADD and
        // the Python package's `update` run, prefetching ahead).
        let mut ns = 0.0;
        let mut out = Vec::with_capacity(c.batch);
        for _ in 0..reps {
            let mut f = layouts::new_chain(layout, capacity, c.error, 0);
            layouts::prefault(&mut f);
            let mut f = BloomFilter::from(f);
            let lim = layouts::limits();
            let t = Instant::now();
            for chunk in members.chunks(c.batch) {
                out.clear();
                f.add_hashes(black_box(chunk), 0, &lim, &mut out);
                sink += out.len() as u64;
            }
            ns += t.elapsed().as_nanos() as f64;
        }
        add_api.push(ns / (reps * n) as f64);
        let Some(f) = chain else { return };
        bytes = f.mem_usage();
        hashes_k = f.links().first().map_or(0, |l| l.shape().hashes);
        hit.push(timed(n, c.min_ops, || {
            for h in &members {
                sink += f.contains(black_box(h)) as u64;
            }
        }));
        miss.push(timed(n, c.min_ops, || {
            for h in &absent {
                sink += f.contains(black_box(h)) as u64;
            }
        }));
        mix.push(timed(n, c.min_ops, || {
            for h in &mixed {
                sink += f.contains(black_box(h)) as u64;
            }
        }));
        mix_batch.push(timed(n, c.min_ops, || {
            for chunk in mixed.chunks(c.batch) {
                for h in chunk {
                    f.prefetch(black_box(h));
                }
                for h in chunk {
                    sink += f.contains(black_box(h)) as u64;
                }
            }
        }));
        // Lines each operation must read (the memory floor's multiplier): a
        // blocked item one; a classic add k, a classic lookup k for a member
        // and, for a non-member, the probes up to the first clear bit
        // (`(1 - p^k) / (1 - p)` at the link's measured share p of set bits).
        let k = f64::from(hashes_k);
        let p = f.links().first().map_or(0.0, |l| {
            let ones: u64 = l.data().iter().map(|b| u64::from(b.count_ones())).sum();
            ones as f64 / (l.data().len() as f64 * 8.0).max(1.0)
        });
        (lines_add, lines_mixed) = if layout == "blocked" {
            (1.0, 1.0)
        } else {
            (k, (k + (1.0 - p.powf(k)) / (1.0 - p).max(1e-9)) / 2.0)
        };
        let api = BloomFilter::from(f);
        let mut out = Vec::with_capacity(c.batch);
        mix_api.push(timed(n, c.min_ops, || {
            for chunk in mixed.chunks(c.batch) {
                out.clear();
                api.contains_hashes(black_box(chunk), 0, &mut out);
                sink += out.iter().filter(|&&b| b).count() as u64;
            }
        }));
        // The memory floor in the same round, on a buffer of the filter's
        // size (bench_memref's loops: independent random lines, one word read,
        // or read and written, per line, in batches of `--batch`), so that each
        // round's ratio pairs measurements taken moments apart.
        let (read, rmw) = floor(bytes, n, c.batch, round);
        floor_read.push(read);
        floor_rmw.push(rmw);
    }
    black_box(sink);
    Json::new("core_bloom")
        .str("layout", layout)
        .int("target_bytes", target)
        .int("bytes", bytes)
        .int("capacity", capacity)
        .int("items", n)
        .int("hashes", u64::from(hashes_k))
        .num("error", c.error)
        .stats("add_ns", &add)
        .stats("contains_member_ns", &hit)
        .stats("contains_absent_ns", &miss)
        .stats("contains_mixed_ns", &mix)
        .stats("contains_mixed_batch_prefetch_ns", &mix_batch)
        .stats("add_batch_api_ns", &add_api)
        .stats("contains_mixed_batch_api_ns", &mix_api)
        .stats("floor_read_ns", &floor_read)
        .stats("floor_rmw_ns", &floor_rmw)
        .num("lines_add", lines_add)
        .num("lines_mixed", lines_mixed)
        .emit();
    eprintln!(
        "bloom {layout} {}: add {:.1} ns, contains member {:.1} / absent {:.1} / mixed {:.1} / batch+prefetch {:.1} ns; batch API add {:.1} / mixed {:.1} ns",
        common::fmt_size(bytes),
        common::median(&add),
        common::median(&hit),
        common::median(&miss),
        common::median(&mix),
        common::median(&mix_batch),
        common::median(&add_api),
        common::median(&mix_api)
    );
}

fn ch(h: &ItemHash) -> CuckooHash {
    CuckooHash::from_halves(h.lo, h.hi)
}

fn cuckoo_filter(capacity: u64, prefault: bool) -> CuckooFilter {
    let p = CuckooParams {
        capacity,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
        fp_bits: cuckoo::DEFAULT_FP_BITS,
        error_rate: None,
        redisbloom: false,
    };
    let mut f = CuckooFilter::new(&p, u64::MAX).unwrap_or_else(|e| panic!("cuckoo: {e}"));
    if !prefault {
        return f;
    }
    let _ = f.fill_chunks(|piece| {
        piece.fill(0);
        Ok::<(), ()>(())
    });
    f
}

fn cuckoo_bench(target: u64, c: &Cfg) {
    // 8-bit fingerprints: one byte per slot, so capacity = bytes.
    let capacity = target.max(8);
    let slots = cuckoo_filter(capacity, false).total_slots();
    let n = (slots / 2).min(c.ops).max(1);
    let (mut add, mut hit, mut miss, mut mix) = (vec![], vec![], vec![], vec![]);
    let mut bytes = 0;
    let mut filters = 0;
    let mut sink = 0u64;
    for round in 0..c.rounds {
        let members: Vec<CuckooHash> = hashes(TAG_MEMBER + round, n).iter().map(ch).collect();
        let absent: Vec<CuckooHash> = hashes(TAG_ABSENT + round, n).iter().map(ch).collect();
        let mixed: Vec<CuckooHash> = members
            .iter()
            .zip(&absent)
            .flat_map(|(a, b)| [*a, *b])
            .take(members.len())
            .collect();
        let reps = c.min_ops.div_ceil(n).max(1);
        let mut ns = 0.0;
        let mut last = None;
        for _ in 0..reps {
            let mut f = cuckoo_filter(capacity, true);
            let t = Instant::now();
            for h in &members {
                sink += f.insert(black_box(h), 64, u64::MAX).is_ok() as u64;
            }
            ns += t.elapsed().as_nanos() as f64;
            last = Some(f);
        }
        add.push(ns / (reps * n) as f64);
        let Some(f) = last else { return };
        bytes = f.mem_usage() as u64;
        filters = f.num_filters() as u64;
        for (set, out) in [
            (&members, &mut hit),
            (&absent, &mut miss),
            (&mixed, &mut mix),
        ] {
            out.push(timed(n, c.min_ops, || {
                for h in set {
                    sink += f.contains(black_box(h)) as u64;
                }
            }));
        }
    }
    black_box(sink);
    Json::new("core_cuckoo")
        .int("target_bytes", target)
        .int("bytes", bytes)
        .int("slots", slots)
        .int("items", n)
        .int("subfilters", filters)
        .stats("add_ns", &add)
        .stats("contains_member_ns", &hit)
        .stats("contains_absent_ns", &miss)
        .stats("contains_mixed_ns", &mix)
        .emit();
    eprintln!(
        "cuckoo {}: add {:.1} ns, contains member {:.1} / absent {:.1} / mixed {:.1} ns",
        common::fmt_size(bytes),
        common::median(&add),
        common::median(&hit),
        common::median(&miss),
        common::median(&mix)
    );
}

fn hash_bench(len: usize, ops: u64, rounds: u64) {
    const ITEMS: usize = 1024;
    let mut rng = SplitMix(7 + len as u64);
    let buf: Vec<u8> = (0..ITEMS * len).map(|_| rng.next() as u8).collect();
    let items: Vec<&[u8]> = buf.chunks_exact(len).collect();
    let per = (ops as usize / ITEMS).max(1);
    let n = (per * ITEMS) as f64;
    let (mut ours, mut one, mut two) = (vec![], vec![], vec![]);
    let mut sink = 0u64;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..per {
            for it in &items {
                let h = ItemHash::of(black_box(it));
                sink = sink.wrapping_add(h.lo ^ h.hi);
            }
        }
        ours.push(t.elapsed().as_nanos() as f64 / n);
        let t = Instant::now();
        for _ in 0..per {
            for it in &items {
                let h = xxh3_128(black_box(it));
                sink = sink.wrapping_add((h as u64) ^ (h >> 64) as u64);
            }
        }
        one.push(t.elapsed().as_nanos() as f64 / n);
        let t = Instant::now();
        for _ in 0..per {
            for it in &items {
                let a = xxh3_64_with_seed(black_box(it), 0);
                let b = xxh3_64_with_seed(black_box(it), a);
                sink = sink.wrapping_add(a ^ b);
            }
        }
        two.push(t.elapsed().as_nanos() as f64 / n);
    }
    black_box(sink);
    Json::new("core_hash")
        .int("len", len as u64)
        .stats("itemhash_ns", &ours)
        .stats("xxh3_128_ns", &one)
        .stats("two_pass_xxh3_64_ns", &two)
        .emit();
    eprintln!(
        "hash {len} B: ItemHash::of {:.2} ns, xxh3_128 {:.2} ns, 2x xxh3_64 {:.2} ns",
        common::median(&ours),
        common::median(&one),
        common::median(&two)
    );
}

fn main() {
    let a = Args::parse();
    common::disable_thp_like_redis();
    let parts = a.list("parts", "bloom,cuckoo,hash");
    let sizes = a.sizes("sizes", "16K,256K,4M,64M,1G");
    let cfg = Cfg {
        ops: a.u64("ops", 1_000_000),
        min_ops: a.u64("min-ops", 1_000_000),
        rounds: a.u64("rounds", 3).max(1),
        batch: a.u64("batch", 1000).max(1) as usize,
        error: a.f64("error", 0.01),
    };
    let layouts = a.list("layouts", &layouts::LAYOUTS.join(","));
    Json::new("core_meta")
        .str("thp", &common::thp_mode())
        .int("ops", cfg.ops)
        .int("min_ops", cfg.min_ops)
        .int("rounds", cfg.rounds)
        .int("batch", cfg.batch as u64)
        .num("error", cfg.error)
        .emit();
    if parts.iter().any(|p| p == "bloom") {
        for &bytes in &sizes {
            for l in &layouts {
                bloom(l, bytes, &cfg);
            }
        }
    }
    if parts.iter().any(|p| p == "cuckoo") {
        for &bytes in &sizes {
            cuckoo_bench(bytes, &cfg);
        }
    }
    if parts.iter().any(|p| p == "hash") {
        for len in a.sizes("lengths", "8,16,32,64,128,256") {
            hash_bench(len as usize, a.u64("hash-ops", 4_000_000), cfg.rounds);
        }
    }
}
