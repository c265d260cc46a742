//! The filter file format (`ferrobloom_core::file`, issue 29): [`file`] reads
//! arbitrary bytes as a file with every reader (the slice reader, and the
//! streaming reader with the length known and not, fed in odd-sized reads),
//! which must agree: all refuse, or all load a filter that writes the same
//! bytes. Whatever loads must write back to the same data chunks (the file is
//! the filter's SCANDUMP in a fixed framing), with the same iterators but for
//! a live walk's (bit 62), written back as positions, without SCANDUMP's final
//! `(0, "")` if the file had it, and its header to the
//! same bytes or to a normalized one, and what it writes reads back to itself
//! (a RedisBloom cuckoo header's item count above the table's slots is taken,
//! as RedisBloom's RDB loader takes it, and written capped at the slots).
//!
//! The checksum makes almost every mutation a checksum error, so each input
//! is also read sealed with its own checksum (its last 8 bytes replaced), to
//! reach the checks behind it.

use super::*;
use ferrobloom_core::cuckoo::CuckooParams;
use ferrobloom_core::dump::cuckoo_insert_items;
use ferrobloom_core::file::{self as ffile, AnyFilter, CHECKSUM, PREAMBLE};

/// A reader that gives at most `step` bytes a call.
struct Trickle<'a>(&'a [u8], usize);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.1.min(buf.len()).min(self.0.len());
        let (now, rest) = self.0.split_at(n);
        buf[..n].copy_from_slice(now);
        self.0 = rest;
        Ok(n)
    }
}

/// A chunk of a parsed file: its iterator and bytes.
type Chunk<'a> = (i64, &'a [u8]);

fn written(f: Result<AnyFilter, String>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let w = match f.ok()? {
        AnyFilter::Bloom(f) => ffile::write(&f, &mut out),
        AnyFilter::Cuckoo(f) => ffile::write(&f, &mut out),
    };
    assert!(w.is_ok(), "a loaded filter does not write");
    Some(out)
}

/// Reads `data` as a filter file under the fuzzing limits, as it is and
/// sealed with its own checksum.
pub fn file(data: &[u8]) {
    every_reader(data);
    if data.len() >= PREAMBLE + CHECKSUM {
        let mut sealed = data.to_vec();
        let end = sealed.len() - CHECKSUM;
        let sum = ffile::checksum(&sealed[..end]);
        sealed[end..].copy_from_slice(&sum.to_le_bytes());
        if sealed != data {
            every_reader(&sealed);
        }
    }
}

fn every_reader(data: &[u8]) {
    let l = limits();
    let n = Some(data.len() as u64);
    // Read sizes from the input, so that chunk boundaries fall anywhere.
    let step = 1 + usize::from(data.last().copied().unwrap_or(0) % 64);
    let slice = written(ffile::read_any(data, &l));
    let known = written(ffile::read_any_from(&mut Trickle(data, step), n, &l));
    let unknown = written(ffile::read_any_from(&mut Trickle(data, step + 3), None, &l));
    assert!(known == slice, "the slice and streaming readers disagree");
    assert!(
        unknown == slice,
        "the slice and unknown-length readers disagree"
    );
    // What loaded takes items afterwards (`after_load.rs`).
    match ffile::read_any(data, &l) {
        Ok(AnyFilter::Bloom(mut f)) => super::after_load::exercise_bloom(&mut f),
        Ok(AnyFilter::Cuckoo(mut f)) => super::after_load::exercise_cuckoo(&mut f),
        Err(_) => {}
    }
    let Some(out) = slice else { return };
    if out != data {
        let (a, b) = (ffile::parse(data), ffile::parse(&out));
        let (Ok(mut a), Ok(b)) = (a, b) else {
            panic!("a loaded file writes an unreadable file");
        };
        // SCANDUMP's final `(0, "")`, which a file may end with, is not written.
        if a.chunks.len() > 1 && a.chunks.last() == Some(&(0, &[][..])) {
            a.chunks.pop();
        }
        // A live walk's iterators (bit 62) are written back as positions.
        let walk = |i: i64| i > 0 && i & (1 << 62) != 0;
        let same = |(a, b): (&Chunk, &Chunk)| a.1 == b.1 && (a.0 == b.0 || walk(a.0));
        assert!(
            a.chunks.len() == b.chunks.len() && a.chunks.iter().zip(&b.chunks).skip(1).all(same),
            "a loaded file writes back other data chunks"
        );
        let again = written(ffile::read_any(&out, &l));
        assert!(
            again.as_ref() == Some(&out),
            "a rewritten file rewrites to other bytes"
        );
    }
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
