//! The filter file format (`ferrobloom_core::file`, issue 29): [`file`] reads
//! arbitrary bytes as a file; whatever loads must write back to the same bytes
//! (the file is the filter's SCANDUMP in a fixed framing, so a file that loads
//! and re-encodes differently would be a second encoding of one filter).

use super::*;
use ferrobloom_core::cuckoo::CuckooParams;
use ferrobloom_core::dump::cuckoo_insert_items;
use ferrobloom_core::file::{self as ffile, AnyFilter};

/// Reads `data` as a filter file under the fuzzing limits.
pub fn file(data: &[u8]) {
    let loaded = match ffile::read_any(data, &limits()) {
        Ok(f) => f,
        Err(_) => return,
    };
    let mut out = Vec::new();
    let written = match &loaded {
        AnyFilter::Bloom(f) => ffile::write(f, &mut out),
        AnyFilter::Cuckoo(f) => ffile::write(f, &mut out),
    };
    assert!(written.is_ok(), "a loaded filter does not write");
    assert!(out == data, "a loaded file writes back to other bytes");
}

/// Seeds: files of filters of both kinds in several shapes and layouts.
pub fn file_seeds() -> Vec<Seed> {
    let big = Limits::default();
    let mut out = Vec::new();
    let layouts = [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
        BloomLayout::RedisBloom,
    ];
    for (i, layout) in layouts.into_iter().enumerate() {
        let opts = ferrobloom_core::bloom::ChainOptions::default();
        let c = if layout == BloomLayout::RedisBloom {
            BloomChain::new_redisbloom(10, 0.01, 2, 2, &big)
        } else {
            BloomChain::with_options(10, 0.01, 2, layout, opts, &big)
        };
        let Ok(c) = c else { continue };
        let mut f = BloomFilter::from(c);
        let items: Vec<String> = (0..40).map(|k| format!("item{k}")).collect();
        f.add_items(items.iter().map(|s| s.as_bytes()), 0, &big);
        let mut bytes = Vec::new();
        if ffile::write(&f, &mut bytes).is_ok() {
            out.push(("file", format!("seed-bloom-{i}"), bytes));
        }
    }
    for (i, rb) in [false, true].into_iter().enumerate() {
        let p = CuckooParams {
            capacity: 16,
            redisbloom: rb,
            ..CuckooParams::default()
        };
        let Ok(mut f) = CuckooFilter::new(&p, big.max_bytes) else {
            continue;
        };
        let items: Vec<String> = (0..40).map(|k| format!("item{k}")).collect();
        cuckoo_insert_items(&mut f, items.iter().map(|s| s.as_bytes()), false, &big);
        let mut bytes = Vec::new();
        if ffile::write(&f, &mut bytes).is_ok() {
            out.push(("file", format!("seed-cuckoo-{i}"), bytes));
        }
    }
    out
}
