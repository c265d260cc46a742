//! The memory-latency reference for the batch-command benchmark: the cost of
//! one random cache miss per item, measured on a buffer of the same size as the
//! filter under test.
//!
//! For each size: allocate a buffer, touch every page (so no page fault is
//! timed), precompute random 64-byte-line indices, then time batches of
//! `--batch` (1000) independent reads, one word per line, summed (the CPU may
//! overlap the misses, as a batch command's probes can). Reported:
//! - `ns_per_read`: independent reads (the reference of the batch targets);
//! - `ns_per_rmw`: independent read-modify-writes, one word per line (the
//!   reference of adds, which write each line they read: the line comes in,
//!   and later goes back to memory dirty);
//! - `ns_dependent`: dependent reads, each index derived from the previous
//!   read's value (the full latency of one miss, for context).
//!
//! Transparent huge pages are disabled for this process, as redis-server does
//! when the kernel mode is `always`, so page sizes match the server's.
//!
//! Run: `cargo run --release -p ferrobloom-core --example bench_memref --
//!       --sizes 16K,1G [--reads 2000000] [--batch 1000] [--rounds 3]`
//! Output: one JSON object per size on stdout (`bench/run.py` reads it).

#[path = "common/bench.rs"]
mod common;

use std::hint::black_box;
use std::time::Instant;

use common::{Args, Json, SplitMix};

const LINE_WORDS: usize = 8; // 64-byte lines of u64

fn measure(bytes: u64, reads: u64, batch: usize, rounds: u64, seed: u64) {
    let lines = (bytes as usize / 64).max(1);
    let words = lines * LINE_WORDS;
    let t0 = Instant::now();
    let mut buf: Vec<u64> = vec![0; words];
    // Touch every page (and every line, to have known contents).
    for (i, w) in buf.iter_mut().enumerate().step_by(LINE_WORDS) {
        *w = i as u64;
    }
    let touch_s = t0.elapsed().as_secs_f64();
    let mut rng = SplitMix(seed ^ bytes);
    // Reads per round: a whole number of batches.
    let batches = (reads as usize).div_ceil(batch).max(1);
    let n = batches * batch;
    let idx: Vec<u32> = (0..n)
        .map(|_| ((rng.next() as u128 * lines as u128) >> 64) as u32)
        .collect();
    let mut indep = Vec::new();
    let mut rmw = Vec::new();
    let mut dep = Vec::new();
    let mut sum = 0u64;
    for _ in 0..rounds {
        // Independent: indices known in advance, batch by batch.
        let t = Instant::now();
        for chunk in idx.chunks_exact(batch) {
            let mut s = 0u64;
            for &i in chunk {
                // SAFETY-free indexing: i < lines, so i * 8 < words.
                s = s.wrapping_add(buf[i as usize * LINE_WORDS]);
            }
            sum = sum.wrapping_add(black_box(s));
        }
        indep.push(t.elapsed().as_nanos() as f64 / n as f64);
        // Read-modify-write: the same indices, each line's first word changed.
        let t = Instant::now();
        for chunk in idx.chunks_exact(batch) {
            for &i in chunk {
                let w = &mut buf[i as usize * LINE_WORDS];
                *w = black_box(*w | 1);
            }
        }
        rmw.push(t.elapsed().as_nanos() as f64 / n as f64);
        // Dependent: the next index needs the value just read.
        let dn = (n / 4).max(batch);
        let t = Instant::now();
        let mut x = rng.next();
        for _ in 0..dn {
            let i = ((x as u128 * lines as u128) >> 64) as usize;
            let v = buf[i * LINE_WORDS];
            x = (x ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        }
        sum = sum.wrapping_add(black_box(x));
        dep.push(t.elapsed().as_nanos() as f64 / dn as f64);
    }
    black_box(sum);
    Json::new("memref")
        .int("bytes", bytes)
        .int("reads", n as u64)
        .int("batch", batch as u64)
        .str("thp", &common::thp_mode())
        .num("touch_s", touch_s)
        .stats("ns_per_read", &indep)
        .stats("ns_per_rmw", &rmw)
        .stats("ns_dependent", &dep)
        .emit();
    eprintln!(
        "memref {}: {:.1} ns/read independent, {:.1} ns/read-modify-write, {:.1} ns/read dependent",
        common::fmt_size(bytes),
        common::median(&indep),
        common::median(&rmw),
        common::median(&dep)
    );
}

fn main() {
    let a = Args::parse();
    common::disable_thp_like_redis();
    let sizes = a.sizes("sizes", "16K,256K,4M,64M,1G");
    let reads = a.u64("reads", 2_000_000);
    let batch = a.u64("batch", 1000).max(1) as usize;
    let rounds = a.u64("rounds", 3).max(1);
    let seed = a.u64("seed", 42);
    for bytes in sizes {
        measure(bytes, reads, batch, rounds, seed);
    }
}
