//! Bloom filter targets: RDB payloads and LOADCHUNK-then-operations sequences.

use super::checks::{check_bloom, links_of};
use super::*;

/// Operations of [`bloom_chunks`], chosen by `opcode % 6`.
enum BloomOp {
    /// `u32` iterator, buffer: BF.LOADCHUNK.
    LoadChunk,
    /// `i64` iterator, buffer: BF.LOADCHUNK with any iterator.
    LoadChunkAny,
    /// item: BF.ADD (an added item is found right after).
    Add,
    /// item: BF.EXISTS.
    Exists,
    /// `i64` iterator: BF.SCANDUMP.
    ScanDump,
    /// COPY: the copy dumps identically.
    Clone,
}

impl BloomOp {
    fn of(b: u8) -> Self {
        match b % 6 {
            0 => BloomOp::LoadChunk,
            1 => BloomOp::LoadChunkAny,
            2 => BloomOp::Add,
            3 => BloomOp::Exists,
            4 => BloomOp::ScanDump,
            _ => BloomOp::Clone,
        }
    }
}

/// RDB payload of a Bloom filter (`MBbloom--` encoding version 5).
pub fn rdb_bloom(data: &[u8]) {
    let mut input = Input::new(data);
    let mut consumed = Vec::new();
    let loaded = load_payload::<BloomFilter, _>(&limits(), || {
        let b = input.buffer()?;
        consumed.push(b);
        Some(b)
    });
    if let Ok(mut c) = loaded {
        let (header, chunks) = bloom_dump(&c);
        assert_eq!(consumed.first().copied(), Some(header.as_slice()));
        let tail: Vec<&[u8]> = chunks.iter().map(|(_, d)| d.as_slice()).collect();
        assert_eq!(consumed.get(1..), Some(tail.as_slice()));
        check_bloom(&c);
        super::after_load::exercise_bloom(&mut c);
    }
}

/// `BF.LOADCHUNK key 1 <header>`, then LOADCHUNK/ADD/EXISTS/SCANDUMP/COPY
/// operations, then the round-trip checks.
pub fn bloom_chunks(data: &[u8]) {
    let mut input = Input::new(data);
    let Some(header) = input.buffer() else {
        return;
    };
    let limits = limits();
    let mut c = match BloomFilter::from_header(header, &limits) {
        Ok(c) => c,
        Err(_) => return,
    };
    assert_eq!(c.encode_header(), header, "header does not re-encode");
    let mut ops = 0;
    while let Some(op) = input.u8() {
        ops += 1;
        if ops > 256 {
            break;
        }
        match BloomOp::of(op) {
            BloomOp::LoadChunk => {
                let it = input.u32().unwrap_or(0);
                let buf = input.buffer().unwrap_or(&[]);
                let _ = c.load_chunk(i64::from(it), buf);
            }
            BloomOp::LoadChunkAny => {
                let it = input.i64().unwrap_or(0);
                let buf = input.buffer().unwrap_or(&[]);
                let _ = c.load_chunk(it, buf);
            }
            BloomOp::Add => {
                let h = c.hash(input.item());
                // A timed (windowed) filter: at a time from the input (seconds).
                let now = if c.is_timed() {
                    u64::from(input.u32().unwrap_or(0)) * 1000
                } else {
                    0
                };
                c.prefetch(&h);
                if c.add_hash(&h, now, &limits).is_ok() {
                    let found = c.contains_marked(&h, c.read_mark(now));
                    assert!(found, "added item not found");
                }
                if let Some(w) = c.as_window_mut() {
                    drop(w.take_retired());
                }
            }
            BloomOp::Exists => {
                let h = c.hash(input.item());
                let at = c.as_window().map_or(0, |w| w.last_ms());
                let _ = c.contains_marked(&h, c.read_mark(at));
            }
            BloomOp::ScanDump => {
                let it = input.i64().unwrap_or(0);
                if let Some((next, data)) = c.scandump_chunk(it) {
                    assert!(next > it && !data.is_empty());
                }
            }
            BloomOp::Clone => {
                if let Ok(mut copy) = c.try_clone() {
                    assert!(bloom_dump(&copy) == bloom_dump(&c), "COPY differs");
                    // BF.MERGE of a filter with its copy: the same bits, a filter
                    // whose header loads back (the counts stay within their bounds).
                    if let Ok(m) = BloomFilter::merged(&[&c, &copy], &limits) {
                        check_bloom(&m);
                        let (ml, cl) = (links_of(&m), links_of(&c));
                        let same = ml.iter().zip(&cl).all(|(a, b)| a.data() == b.data());
                        assert!(same && ml.len() == cl.len(), "merge changed bits");
                    }
                    if copy.merge_from(&[&c], &limits).is_ok() {
                        check_bloom(&copy);
                    }
                }
            }
        }
    }
    check_bloom(&c);
    super::after_load::exercise_bloom(&mut c);
}
