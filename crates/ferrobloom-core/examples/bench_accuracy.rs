//! Accuracy and memory, pure core: measured false-positive rate and bits per
//! item, beside the requested rate and RedisBloom's sizing.
//!
//! Bloom (per layout, per error rate in `--errors`): a scaling chain
//! (expansion 2) reserved for `--capacity` items, measured after `1x` and `4x`
//! that many distinct items; a non-scaling filter filled until it refuses
//! items (`full`). Each measurement probes `--probes` items never added.
//! bits/item = storage bits of every link / distinct items added; RedisBloom's
//! bits/item is its formula (`bloom_init` in RedisBloom's deps/bloom/bloom.c:
//! `floor(entries * |ln e| / ln(2)^2)` bits rounded up to 64 per link; scaling
//! links at e/2, e/4, ...; non-scaling at e) for the same links and items; the
//! textbook value is `|ln e| / ln(2)^2`.
//!
//! Cuckoo (each fingerprint width in `--fp-bits` x bucket size in
//! `--bucket-sizes`): one non-growing table of `--cf-slots` slots with
//! `--cf-max-iterations` (500) kicks, filled until an insert fails (its
//! reachable load), then `--probes` non-member probes, beside the bound
//! `2b / (2^f - 1)` (`core::cuckoo::fpr_bound`). The load at the first failure
//! with RedisBloom's default of 20 kicks is reported too.
//!
//! Fixed seeds: the same build prints the same numbers.
//!
//! Run: `cargo run --release -p ferrobloom-core --example bench_accuracy --
//!       [--parts bloom,cuckoo] [--errors 0.1,0.01,0.001,0.0001] [--capacity 1000000]
//!       [--probes 1000000] [--layouts classic] [--fp-bits 8,12,16,32]
//!       [--bucket-sizes 1,2,4] [--cf-slots 262144] [--cf-max-iterations 500]
//!       [--modes scaling,non-scaling] [--max-fill 4]` (`--max-fill 1`: the
//!       scaling chain at 1x only, as for `--capacity 1073741824`)
//! Output: one JSON object per row on stdout (`bench/run.py` reads it).

#[path = "common/bench.rs"]
mod common;
#[path = "common/layouts.rs"]
mod layouts;

use std::time::Instant;

use common::{Args, Json};
use ferrobloom_core::bloom::{BloomChain, BloomError};
use ferrobloom_core::cuckoo::{self, CuckooFilter, CuckooHash, CuckooParams};
use ferrobloom_core::hash::ItemHash;

const LN2_SQUARED: f64 = 0.480453013918201;
const TAG_PROBE: u64 = 0x5052_4f42_0000_0000;

/// RedisBloom's bit count for one link (`bloom_init`, deps/bloom/bloom.c, with
/// NOROUND: rounded up to 64).
fn rb_link_bits(entries: u64, error: f64) -> u64 {
    let bits = ((entries as f64 * error.ln().abs() / LN2_SQUARED).floor() as u64).max(1);
    bits.div_ceil(64) * 64
}

/// RedisBloom's bits for a filter of `links` links (scaling: capacity
/// `cap * 2^i` at `error / 2^(i+1)`; non-scaling: one link at `error`).
fn rb_bits(cap: u64, error: f64, scaling: bool, links: usize) -> u64 {
    if !scaling {
        return rb_link_bits(cap, error);
    }
    (0..links)
        .map(|i| rb_link_bits(cap << i, error / f64::from(1u32 << (i + 1))))
        .sum()
}

fn h(tag: u64, i: u64) -> ItemHash {
    ItemHash::of(&common::item16(tag, i))
}

fn probe(f: &BloomChain, probes: u64, seed: u64) -> u64 {
    (0..probes)
        .filter(|&i| f.contains(&h(TAG_PROBE ^ seed, i)))
        .count() as u64
}

struct Row<'a> {
    layout: &'a str,
    error: f64,
    mode: &'a str,
    fill: &'a str,
    capacity: u64,
    items: u64,
    probes: u64,
    fps: u64,
}

fn emit_bloom(r: &Row, f: &BloomChain) {
    let bits = layouts::bits_of(f);
    let scaling = f.expansion().is_some();
    let rb = rb_bits(r.capacity, r.error, scaling, f.links().len());
    let fpr = r.fps as f64 / r.probes as f64;
    // Sampling tolerance: 3 standard deviations of a binomial at the target.
    let sigma = (r.error * (1.0 - r.error) / r.probes as f64).sqrt();
    Json::new("acc_bloom")
        .str("layout", r.layout)
        .num("error", r.error)
        .str("mode", r.mode)
        .str("fill", r.fill)
        .int("capacity", r.capacity)
        .int("items", r.items)
        .int("accepted", f.items())
        .int("links", f.links().len() as u64)
        .int(
            "hashes_first_link",
            f.links().first().map_or(0, |l| u64::from(l.shape().hashes)),
        )
        .int("bits", bits)
        .int("size_bytes", f.mem_usage())
        .num("bits_per_item", bits as f64 / r.items as f64)
        .num("rb_bits_per_item", rb as f64 / r.items as f64)
        .num("textbook_bits_per_item", r.error.ln().abs() / LN2_SQUARED)
        .int("probes", r.probes)
        .int("false_positives", r.fps)
        .num("fpr", fpr)
        .num("fpr_limit_3sigma", r.error + 3.0 * sigma)
        .emit();
    eprintln!(
        "bloom {} e={} {} {}: fpr {:.3e} (target {}), {:.2} bits/item (RedisBloom {:.2}), {} links",
        r.layout,
        r.error,
        r.mode,
        r.fill,
        fpr,
        r.error,
        bits as f64 / r.items as f64,
        rb as f64 / r.items as f64,
        f.links().len()
    );
}

/// Which Bloom rows to measure (`--modes`, `--max-fill`).
struct BloomModes {
    scaling: bool,
    nonscaling: bool,
    max_fill: u64,
}

fn bloom(layout: &str, error: f64, cap: u64, probes: u64, seed: u64, m: &BloomModes) {
    let tag = seed.wrapping_mul(1000) ^ (error.to_bits() >> 8);
    let lim = layouts::limits();
    // Scaling, expansion 2: 1x then 4x the reserved capacity.
    let mut f = layouts::new_chain(layout, cap, error, 2);
    let mut added = 0u64;
    let fills = [("1x", 1u64), ("4x", 4)]
        .into_iter()
        .filter(|&(_, x)| m.scaling && x <= m.max_fill);
    for (fill, upto) in fills.map(|(n, x)| (n, x * cap)) {
        while added < upto {
            f.add(&h(tag, added), &lim)
                .unwrap_or_else(|e| panic!("scaling add: {e:?}"));
            added += 1;
        }
        let fps = probe(&f, probes, tag);
        emit_bloom(
            &Row {
                layout,
                error,
                mode: "scaling x2",
                fill,
                capacity: cap,
                items: added,
                probes,
                fps,
            },
            &f,
        );
    }
    if !m.nonscaling {
        return;
    }
    // Non-scaling: add distinct items until the filter refuses one.
    let mut f = layouts::new_chain(layout, cap, error, 0);
    let ntag = tag ^ 0x4e53;
    let mut added = 0u64;
    loop {
        match f.add(&h(ntag, added), &lim) {
            Ok(_) => added += 1,
            Err(BloomError::Full) => break,
            Err(e) => panic!("non-scaling add: {e:?}"),
        }
    }
    let fps = probe(&f, probes, ntag);
    emit_bloom(
        &Row {
            layout,
            error,
            mode: "non-scaling",
            fill: "full",
            capacity: cap,
            items: added,
            probes,
            fps,
        },
        &f,
    );
}

/// A non-growing table filled until an insert fails; returns it.
fn cuckoo_fill(fp_bits: u8, b: u8, slots: u64, max_iterations: u16, tag: u64) -> CuckooFilter {
    let p = CuckooParams {
        capacity: slots,
        bucket_size: b,
        max_iterations,
        expansion: 0,
        fp_bits,
        error_rate: None,
        redisbloom: false,
    };
    let mut f = CuckooFilter::new(&p, u64::MAX).unwrap_or_else(|e| panic!("cuckoo: {e}"));
    let mut i = 0u64;
    loop {
        let x = ItemHash::of(&common::item16(tag, i));
        if f.insert(&CuckooHash::from_halves(x.lo, x.hi), 1, u64::MAX)
            .is_err()
        {
            return f;
        }
        i += 1;
    }
}

fn cuckoo_row(fp_bits: u8, b: u8, slots: u64, max_iterations: u16, probes: u64) {
    let tag = 0xcf00 + u64::from(fp_bits) * 16 + u64::from(b);
    let at20 = cuckoo_fill(fp_bits, b, slots, 20, tag);
    let load_at_20 = at20.num_items() as f64 / at20.total_slots() as f64;
    drop(at20);
    let f = cuckoo_fill(fp_bits, b, slots, max_iterations, tag);
    let fps = (0..probes)
        .filter(|&j| {
            let x = ItemHash::of(&common::item16(TAG_PROBE ^ tag, j));
            f.contains(&CuckooHash::from_halves(x.lo, x.hi))
        })
        .count() as u64;
    let items = f.num_items();
    let total = f.total_slots();
    let bound = cuckoo::fpr_bound(fp_bits, b);
    // The ERROR values that select this width: [bound(f), bound(f - 1)).
    let err_hi = if fp_bits > cuckoo::DEFAULT_FP_BITS {
        cuckoo::fpr_bound(fp_bits - 1, b)
    } else {
        1.0
    };
    Json::new("acc_cuckoo")
        .int("fp_bits", u64::from(fp_bits))
        .int("bucket_size", u64::from(b))
        .int("slots", total)
        .int("items", items)
        .num("load", items as f64 / total as f64)
        .num("load_at_20", load_at_20)
        .int("max_iterations", u64::from(max_iterations))
        .int("table_bytes", f.table_bytes())
        .num("bits_per_item", f.table_bytes() as f64 * 8.0 / items as f64)
        .int("probes", probes)
        .int("false_positives", fps)
        .num("fpr", fps as f64 / probes as f64)
        .num("bound", bound)
        .num("error_option_min", bound)
        .num("error_option_max", err_hi)
        .int(
            "width_for_error_bound",
            u64::from(cuckoo::fp_bits_for_error(bound, b).unwrap_or(0)),
        )
        .emit();
    eprintln!(
        "cuckoo f={fp_bits} b={b}: load {:.3}, fpr {:.3e} (bound {:.3e}), {:.2} bits/item",
        items as f64 / total as f64,
        fps as f64 / probes as f64,
        bound,
        f.table_bytes() as f64 * 8.0 / items as f64
    );
}

fn main() {
    let a = Args::parse();
    let t = Instant::now();
    let parts = a.list("parts", "bloom,cuckoo");
    let probes = a.u64("probes", 1_000_000).max(1);
    let cap = a.u64("capacity", 1_000_000).max(1);
    let seed = a.u64("seed", 1);
    let slots = a.u64("cf-slots", 1 << 18);
    let max_iter = a.u64("cf-max-iterations", 500).clamp(1, 65535) as u16;
    Json::new("acc_meta")
        .int("capacity", cap)
        .int("cf_slots", slots)
        .int("cf_max_iterations", u64::from(max_iter))
        .int("probes", probes)
        .int("seed", seed)
        .emit();
    if parts.iter().any(|p| p == "bloom") {
        let errors: Vec<f64> = a
            .list("errors", "0.1,0.01,0.001,0.0001")
            .iter()
            .map(|e| {
                e.parse()
                    .unwrap_or_else(|_| panic!("--errors: bad rate {e:?}"))
            })
            .collect();
        let modes = a.list("modes", "scaling,non-scaling");
        let m = BloomModes {
            scaling: modes.iter().any(|x| x == "scaling"),
            nonscaling: modes.iter().any(|x| x == "non-scaling"),
            max_fill: a.u64("max-fill", 4),
        };
        for l in a.list("layouts", &layouts::LAYOUTS.join(",")) {
            for &e in &errors {
                bloom(&l, e, cap, probes, seed, &m);
            }
        }
    }
    if parts.iter().any(|p| p == "cuckoo") {
        for f in a.sizes("fp-bits", "8,12,16,32") {
            for b in a.sizes("bucket-sizes", "1,2,4") {
                cuckoo_row(f as u8, b as u8, slots, max_iter, probes);
            }
        }
    }
    eprintln!("accuracy: {:.1} s", t.elapsed().as_secs_f64());
}
