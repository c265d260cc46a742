//! Measures the bit-storage choice for Bloom links: `bitvec::BitVec<u64, Lsb0>`
//! against plain `u64` words with shift/mask (what `core::bits::Words` does), for
//! the Bloom access pattern (k = 7 probes per item from one XXH3-128 hash, fastrange
//! positions) at cache-resident and memory-bound sizes.
//!
//! Run: `cargo run --release --example bitvec_vs_words`
//! (Self-contained: examples cannot link the module crate, whose global allocator
//! needs a running Redis.)

use std::hint::black_box;
use std::time::Instant;

use bitvec::prelude::*;
use xxhash_rust::xxh3::xxh3_128;

const K: u64 = 7;

#[inline(always)]
fn positions(item: u64, bits: u64) -> impl Iterator<Item = u64> {
    let h = xxh3_128(&item.to_le_bytes());
    let (lo, hi) = (h as u64, (h >> 64) as u64);
    (0..K).map(move |i| ((lo.wrapping_add(i.wrapping_mul(hi)) as u128 * bits as u128) >> 64) as u64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(label: &str, bytes: usize, items: u64) {
    let bits = (bytes * 8) as u64;
    // Both arrays are written before timing, so no page faults are measured.
    let mut words = vec![1u64; bytes / 8];
    words.iter_mut().for_each(|w| *w = 0);
    let mut bv: BitVec<u64, Lsb0> = BitVec::repeat(false, bits as usize);
    let (mut w_ins, mut b_ins, mut w_q, mut b_q) = (vec![], vec![], vec![], vec![]);
    let mut hits = 0u64;
    let per = |t: Instant| t.elapsed().as_nanos() as f64 / items as f64;
    // Alternate the two layouts over several rounds (rounds re-set the same
    // bits, which costs the same memory traffic).
    for _round in 0..3 {
        let t = Instant::now();
        for i in 0..items {
            for p in positions(i, bits) {
                words[(p >> 6) as usize] |= 1 << (p & 63);
            }
        }
        w_ins.push(per(t));
        let t = Instant::now();
        for i in 0..items {
            for p in positions(i, bits) {
                bv.set(p as usize, true);
            }
        }
        b_ins.push(per(t));
        let t = Instant::now();
        for i in 0..items {
            hits +=
                positions(i, bits).all(|p| words[(p >> 6) as usize] >> (p & 63) & 1 == 1) as u64;
        }
        w_q.push(per(t));
        let t = Instant::now();
        for i in 0..items {
            hits += positions(i, bits).all(|p| bv[p as usize]) as u64;
        }
        b_q.push(per(t));
    }
    black_box(hits);
    assert_eq!(words.as_slice(), bv.as_raw_slice(), "same bits either way");
    println!(
        "| {label} | {:.1} | {:.1} | {:.1} | {:.1} |",
        median(w_ins),
        median(b_ins),
        median(w_q),
        median(b_q)
    );
}

fn main() {
    println!("| filter (k = 7) | insert ns/item: u64 words | insert: bitvec | query (members) ns/item: u64 words | query: bitvec |");
    println!("|---|---|---|---|---|");
    bench("1 MiB (~870k items at 1%)", 1 << 20, 1_000_000);
    bench(
        "64 MiB (~55M items at 1%, memory-bound)",
        64 << 20,
        4_000_000,
    );
}
