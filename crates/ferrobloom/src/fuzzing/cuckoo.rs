//! Cuckoo filter targets: RDB payloads and LOADCHUNK-then-operations sequences.

use super::checks::check_cuckoo;
use super::*;

/// Operations of [`cuckoo_chunks`], chosen by `opcode % 10`.
enum CuckooOp {
    /// `u32` iterator, buffer: CF.LOADCHUNK.
    LoadChunk,
    /// `i64` iterator, buffer: CF.LOADCHUNK with any iterator.
    LoadChunkAny,
    /// item: CF.ADD (an added item is found right after).
    Add,
    /// item: CF.ADDNX.
    AddNx,
    /// item: CF.DEL.
    Del,
    /// item: CF.EXISTS and CF.COUNT (they agree).
    Exists,
    /// `u16` budget: one incremental compaction step.
    CompactStep,
    /// CF.COMPACT.
    Compact,
    /// `i64` iterator: CF.SCANDUMP.
    ScanDump,
    /// COPY: the copy dumps identically.
    Clone,
}

impl CuckooOp {
    fn of(b: u8) -> Self {
        match b % 10 {
            0 => CuckooOp::LoadChunk,
            1 => CuckooOp::LoadChunkAny,
            2 => CuckooOp::Add,
            3 => CuckooOp::AddNx,
            4 => CuckooOp::Del,
            5 => CuckooOp::Exists,
            6 => CuckooOp::CompactStep,
            7 => CuckooOp::Compact,
            8 => CuckooOp::ScanDump,
            _ => CuckooOp::Clone,
        }
    }
}

/// RDB payload of a cuckoo filter (`MBbloomCF` encoding version 5).
pub fn rdb_cuckoo(data: &[u8]) {
    let mut input = Input::new(data);
    let mut consumed = Vec::new();
    let loaded = load_payload::<CuckooFilter, _>(&limits(), || {
        let b = input.buffer()?;
        consumed.push(b);
        Some(b)
    });
    if let Ok(mut f) = loaded {
        let (header, chunks) = cuckoo_dump(&f);
        assert_eq!(consumed.first().copied(), Some(header.as_slice()));
        let tail: Vec<&[u8]> = chunks.iter().map(|(_, d)| d.as_slice()).collect();
        assert_eq!(consumed.get(1..), Some(tail.as_slice()));
        check_cuckoo(&f);
        super::after_load::exercise_cuckoo(&mut f);
    }
}

/// `CF.LOADCHUNK key 1 <header>`, then LOADCHUNK/ADD/ADDNX/DEL/EXISTS/COUNT/
/// compaction/SCANDUMP/COPY operations, then the round-trip checks.
pub fn cuckoo_chunks(data: &[u8]) {
    let mut input = Input::new(data);
    let Some(header) = input.buffer() else {
        return;
    };
    let mut f = match CuckooFilter::from_header(header, MAX_BYTES) {
        Ok(f) => f,
        Err(_) => return,
    };
    assert_eq!(f.encode_header(), header, "header does not re-encode");
    let mut ops = 0;
    while let Some(op) = input.u8() {
        ops += 1;
        if ops > 256 {
            break;
        }
        match CuckooOp::of(op) {
            CuckooOp::LoadChunk => {
                let it = input.u32().unwrap_or(0);
                let buf = input.buffer().unwrap_or(&[]);
                let _ = f.load_chunk(i64::from(it), buf);
            }
            CuckooOp::LoadChunkAny => {
                let it = input.i64().unwrap_or(0);
                let buf = input.buffer().unwrap_or(&[]);
                let _ = f.load_chunk(it, buf);
            }
            CuckooOp::Add => {
                let h = f.hash(input.item());
                if f.insert(&h, MAX_FILTERS, MAX_BYTES).is_ok() {
                    assert!(f.contains(&h) && f.count(&h) >= 1, "added item not found");
                }
            }
            CuckooOp::AddNx => {
                let h = f.hash(input.item());
                let before = f.contains(&h);
                match f.insert_unique(&h, MAX_FILTERS, MAX_BYTES) {
                    Ok(added) => {
                        assert_eq!(added, !before);
                        assert!(f.contains(&h), "added item not found");
                    }
                    Err(_) => assert!(!before),
                }
            }
            CuckooOp::Del => {
                let h = f.hash(input.item());
                let present = f.contains(&h);
                assert_eq!(f.delete(&h), present);
            }
            CuckooOp::Exists => {
                let h = f.hash(input.item());
                assert_eq!(f.contains(&h), f.count(&h) > 0);
            }
            CuckooOp::CompactStep => {
                let budget = input.u16().unwrap_or(0);
                let done = f.compact_step(u64::from(budget));
                assert_eq!(done, !f.compaction_in_progress());
            }
            CuckooOp::Compact => {
                f.compact();
                assert!(!f.compaction_in_progress() && f.num_deletes() == 0);
            }
            CuckooOp::ScanDump => {
                let it = input.i64().unwrap_or(0);
                let plain = f.scandump_chunk(it).map(|(n, d)| (n, d.into_owned()));
                if let Some((next, data)) = &plain {
                    assert!(*next > it && !data.is_empty());
                }
                // The same call as a walk of one of four walkers (the
                // iterator's low bits): RedisBloom's layout answers the
                // same chunk or refuses; its walks stay bounded.
                let rb = f.is_redisbloom();
                let walked = f
                    .walk_chunk_of(it as u64 & 3, it)
                    .map(|c| c.map(|(n, d)| (n, d.into_owned())));
                if rb {
                    if let Ok(w) = walked {
                        assert!(w == plain, "a walk answered another chunk");
                    }
                }
                assert!(f.open_walks() <= ferrobloom_core::cuckoo::MAX_WALKS);
            }
            CuckooOp::Clone => {
                if let Ok(copy) = f.try_clone(MAX_BYTES) {
                    assert!(cuckoo_dump(&copy) == cuckoo_dump(&f), "COPY differs");
                }
            }
        }
    }
    check_cuckoo(&f);
}
