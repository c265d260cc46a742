//! Unit and property tests of the cuckoo filter core, by topic; the helpers
//! they share.

use super::filter::*;
use super::*;

mod basics;
mod encoding;
mod growth;
mod redisbloom;
mod walk;

const NOCAP: u64 = u64::MAX;

fn params(capacity: u64, bucket_size: u8, expansion: u32, fp_bits: u8) -> CuckooParams {
    CuckooParams {
        capacity,
        bucket_size,
        max_iterations: 20,
        expansion,
        fp_bits,
        error_rate: None,
        redisbloom: false,
    }
}

fn key(tag: u64, i: u64) -> [u8; 8] {
    (i | (tag << 56)).to_le_bytes()
}

/// Header + all slot bytes, for byte-identity checks.
fn snapshot(f: &CuckooFilter) -> (Vec<u8>, Vec<Vec<u8>>) {
    (
        f.encode_header(),
        f.subfilter_bytes().map(|s| s.to_vec()).collect(),
    )
}

fn check_occupancy(f: &CuckooFilter) {
    let mut total = 0;
    for s in &f.subs {
        let real = s.count_occupied(&f.layout, 0, s.slots);
        assert_eq!(real, s.occupied);
        total += real;
    }
    assert_eq!(total, f.num_items);
    let bytes: u64 = f.subs.iter().map(|s| s.data.len() as u64).sum();
    assert_eq!(f.table_bytes(), bytes);
}

fn dump_and_load(f: &CuckooFilter) -> CuckooFilter {
    let (mut it, hdr) = f.scandump_chunk(0).unwrap();
    assert_eq!(it, 1);
    let mut g = CuckooFilter::from_header(&hdr, NOCAP).unwrap();
    let mut chunks = 0;
    while let Some((next, data)) = f.scandump_chunk(it) {
        assert!(data.len() <= MAX_CHUNK && !data.is_empty());
        assert_eq!(next, it + data.len() as i64);
        g.load_chunk(next, &data).unwrap();
        it = next;
        chunks += 1;
    }
    assert!(chunks >= f.num_filters());
    g
}

fn rb_params(capacity: u64, bucket_size: u8, expansion: u32) -> CuckooParams {
    CuckooParams {
        redisbloom: true,
        ..params(capacity, bucket_size, expansion, 8)
    }
}
