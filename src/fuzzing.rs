//! Fuzzing entry points: deterministic functions over arbitrary bytes, one per
//! cargo-fuzz target in `fuzz/` (each target is a one-line call), and the seed
//! corpus generator. They must never panic, except on a broken invariant, which
//! is then a bug that the fuzzer reports: each function asserts what the code it
//! drives promises (a filter loaded from a payload re-encodes to the same bytes,
//! a SCANDUMP of it loads back into an equal filter, an added item is found, a
//! parsed integer is canonical, parsed options are in range).
//!
//! The committed corpus `fuzz/corpus/<target>/` is replayed by `cargo test`
//! (the tests at the end of this file), so every regression input stays fixed.
//!
//! Input formats (all integers little-endian; a length past the end of the
//! input is cut to what is left):
//! - [`rdb_bloom`] / [`rdb_cuckoo`]: a sequence of buffers, each a `u16` length
//!   and that many bytes, fed to [`load_payload`] as the RDB string buffers
//!   (header first, then one per data chunk).
//! - [`bloom_chunks`] / [`cuckoo_chunks`]: one buffer (the `u16`-prefixed
//!   header given to `BF.LOADCHUNK key 1` / `CF.LOADCHUNK key 1`), then
//!   operations, each an opcode byte and its operands (see [`BloomOp`] and
//!   [`CuckooOp`] in the source).
//! - [`args`]: a command's arguments separated by `\n` (argv[0] first).
//! - [`rdb_redisbloom`]: RedisBloom's own RDB payloads (encoding versions 0-4)
//!   of either type: byte 0 picks the type (bit 0) and the version
//!   (`byte / 2 % 5`), then the fields the loader reads, each a tag byte
//!   (`% 3`: 0 unsigned, 1 double, 2 buffer) and its value (8 bytes, 8 bytes,
//!   or a `u16` length and that many bytes); a field of another kind than the
//!   loader asks for ends the payload, as an RDB type error does.

use crate::cmd::bf::{self as cbf, InfoField};
use crate::cmd::cf::{self as ccf, CuckooDefaults};
use crate::cmd::format::format_g;
use crate::cmd::lenient::Origin;
use crate::cmd::params::{BloomDefaults, CreateParams, MAX_ERROR_RATE};
use crate::cmd::parse::{is_keyword, parse_f64, parse_i64, ArgList};
use ferrobloom_core::bloom::{BloomChain, BloomLayout, Limits, Link, MAX_LINKS_CEILING};
use ferrobloom_core::cuckoo::{hash_item, CuckooFilter};
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::hash::ItemHash;
use ferrobloom_core::payload::{load_payload, RdbRead};

/// The memory cap of every filter built while fuzzing: small enough that no
/// header makes the fuzzer run out of memory or slow down (the checks walk the
/// whole table several times, and the comparison tracing of the fuzzer build
/// costs about 10 ns a slot: with 4 MiB the cuckoo target ran 100 inputs/s),
/// large enough for several links and sub-filters. Larger headers still go
/// through every validation up to the cap check. (SCANDUMP chunks are 16 MiB,
/// so every filter here has one chunk per link or sub-filter.)
pub const MAX_BYTES: u64 = 16 << 10;
/// Sub-filter limit for cuckoo growth while fuzzing.
pub const MAX_FILTERS: u32 = 32;

/// The limits the fuzz targets load with: the trusted link ceiling, a small cap.
pub fn limits() -> Limits {
    Limits {
        max_bytes: MAX_BYTES,
        max_links: MAX_LINKS_CEILING,
        max_filters: ferrobloom_core::cuckoo::MAX_SUBFILTERS,
    }
}

/// A cursor over the fuzz input.
struct Input<'a> {
    buf: &'a [u8],
}

impl<'a> Input<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Input { buf }
    }
    /// Up to `n` bytes (fewer at the end).
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.buf.split_at(n.min(self.buf.len()));
        self.buf = tail;
        head
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).first().copied()
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).try_into().ok()
    }
    fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.array().map(i64::from_le_bytes)
    }
    /// A `u16`-length-prefixed buffer; `None` when not even the length is left.
    fn buffer(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        Some(self.take(usize::from(n)))
    }
    /// A `u8`-length-prefixed item.
    fn item(&mut self) -> &'a [u8] {
        let n = self.u8().unwrap_or(0);
        self.take(usize::from(n))
    }
}

/// A filter's complete persisted form: header and SCANDUMP chunks.
type Dump = (Vec<u8>, Vec<(i64, Vec<u8>)>);

fn bloom_dump(c: &BloomFilter) -> Dump {
    let mut chunks = Vec::new();
    c.for_each_chunk(|it, data| chunks.push((it, data.to_vec())));
    (c.encode_header(), chunks)
}

fn cuckoo_dump(f: &CuckooFilter) -> Dump {
    let mut chunks = Vec::new();
    f.for_each_chunk(|it, data| chunks.push((it, data.to_vec())));
    (f.encode_header(), chunks)
}

/// Loads a dump through the RDB path.
fn reload<T: ferrobloom_core::payload::Payload>(d: &Dump) -> Result<T, String> {
    let mut bufs = std::iter::once(d.0.as_slice()).chain(d.1.iter().map(|(_, c)| c.as_slice()));
    load_payload::<T, _>(&limits(), || bufs.next())
}

// ---------------------------------------------------------------------------
// Bloom filters
// ---------------------------------------------------------------------------

/// Everything that must hold for any Bloom filter the code accepted or built:
/// SCANDUMP walks the same chunks `rdb_save` writes, and both the LOADCHUNK path
/// and the RDB path rebuild an equal filter from them.
/// Every link whose bytes the filter's chunks carry, in order.
fn links_of(c: &BloomFilter) -> Vec<&Link> {
    match c {
        BloomFilter::Chain(c) => c.links().iter().collect(),
        BloomFilter::Window(w) => w
            .generation_list()
            .flat_map(|(_, g)| g.links().iter())
            .collect(),
    }
}

fn check_bloom(c: &BloomFilter) {
    let dump = bloom_dump(c);
    // The SCANDUMP client loop: iterator 1 first, then whatever comes back.
    let mut walked = Vec::new();
    let mut it = 1i64;
    while let Some((next, data)) = c.scandump_chunk(it) {
        assert!(next > it && !data.is_empty(), "SCANDUMP must advance");
        walked.push((next, data.to_vec()));
        it = next;
    }
    assert_eq!(walked, dump.1, "SCANDUMP and RDB chunks differ");
    let bytes: u64 = links_of(c).iter().map(|l| l.shape().bytes()).sum();
    let dumped: usize = dump.1.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(bytes, dumped as u64);
    assert_eq!(
        c.items(),
        links_of(c).iter().map(|l| l.items()).sum::<u64>()
    );
    let _ = (c.capacity(), c.expansion(), c.error_rate(), c.mem_usage());

    // BF.LOADCHUNK round trip.
    let mut copy = match BloomFilter::from_header(&dump.0, &limits()) {
        Ok(copy) => copy,
        Err(e) => panic!("a filter's own header does not load: {e:?}"),
    };
    for (it, data) in &dump.1 {
        if let Err(e) = copy.load_chunk(*it, data) {
            panic!("a filter's own chunk does not load: {e:?}");
        }
    }
    assert!(bloom_dump(&copy) == dump, "LOADCHUNK round trip differs");
    // RDB round trip.
    match reload::<BloomFilter>(&dump) {
        Ok(copy) => assert!(bloom_dump(&copy) == dump, "RDB round trip differs"),
        Err(e) => panic!("a filter's own payload does not load: {e}"),
    }
}

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
    if let Ok(c) = loaded {
        let (header, chunks) = bloom_dump(&c);
        assert_eq!(consumed.first().copied(), Some(header.as_slice()));
        let tail: Vec<&[u8]> = chunks.iter().map(|(_, d)| d.as_slice()).collect();
        assert_eq!(consumed.get(1..), Some(tail.as_slice()));
        check_bloom(&c);
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
                match &mut c {
                    BloomFilter::Window(w) => {
                        // A windowed filter: at a time from the input (seconds).
                        let now = u64::from(input.u32().unwrap_or(0)) * 1000;
                        w.prefetch(&h);
                        if w.add(&h, now, &limits).is_ok() {
                            assert!(w.contains(&h, now), "added item not found");
                        }
                        drop(w.take_retired());
                    }
                    BloomFilter::Chain(c) => {
                        c.prefetch(&h);
                        if c.add(&h, &limits).is_ok() {
                            assert!(c.contains(&h), "added item not found");
                        }
                    }
                }
            }
            BloomOp::Exists => {
                let h = c.hash(input.item());
                let _ = match &c {
                    BloomFilter::Chain(c) => c.contains(&h),
                    BloomFilter::Window(w) => w.contains(&h, w.last_ms()),
                };
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
}

// ---------------------------------------------------------------------------
// Cuckoo filters
// ---------------------------------------------------------------------------

/// What must hold for any cuckoo filter the code accepted or built (see
/// [`check_bloom`]); CF.SCANDUMP starts at iterator 0 with the header.
fn check_cuckoo(f: &CuckooFilter) {
    let dump = cuckoo_dump(f);
    match f.scandump_chunk(0) {
        Some((1, h)) => assert_eq!(*h, *dump.0, "SCANDUMP 0 is not the header"),
        other => panic!("SCANDUMP 0 returned {other:?}"),
    }
    let mut walked = Vec::new();
    let mut it = 1i64;
    while let Some((next, data)) = f.scandump_chunk(it) {
        assert!(next > it && !data.is_empty(), "SCANDUMP must advance");
        walked.push((next, data.to_vec()));
        it = next;
    }
    assert_eq!(walked, dump.1, "SCANDUMP and RDB chunks differ");
    let dumped: usize = dump.1.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(f.table_bytes(), dumped as u64);
    let _ = (
        f.num_items(),
        f.num_deletes(),
        f.num_filters(),
        f.base_buckets(),
        f.bucket_size(),
        f.expansion(),
        f.max_iterations(),
        f.fp_bits(),
        f.error_rate(),
        f.subfilter_buckets().count(),
        f.total_slots(),
        f.compaction_in_progress(),
        f.mem_usage(),
    );

    // CF.LOADCHUNK round trip.
    let mut copy = match CuckooFilter::from_header(&dump.0, MAX_BYTES) {
        Ok(copy) => copy,
        Err(e) => panic!("a filter's own header does not load: {e}"),
    };
    for (it, data) in &dump.1 {
        if let Err(e) = copy.load_chunk(*it, data) {
            panic!("a filter's own chunk does not load: {e}");
        }
    }
    assert!(cuckoo_dump(&copy) == dump, "LOADCHUNK round trip differs");
    // RDB round trip.
    match reload::<CuckooFilter>(&dump) {
        Ok(copy) => assert!(cuckoo_dump(&copy) == dump, "RDB round trip differs"),
        Err(e) => panic!("a filter's own payload does not load: {e}"),
    }
}

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
    if let Ok(f) = loaded {
        let (header, chunks) = cuckoo_dump(&f);
        assert_eq!(consumed.first().copied(), Some(header.as_slice()));
        let tail: Vec<&[u8]> = chunks.iter().map(|(_, d)| d.as_slice()).collect();
        assert_eq!(consumed.get(1..), Some(tail.as_slice()));
        check_cuckoo(&f);
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
                if let Some((next, data)) = f.scandump_chunk(it) {
                    assert!(next > it && !data.is_empty());
                }
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

// ---------------------------------------------------------------------------
// Argument parsers
// ---------------------------------------------------------------------------

/// The module's default configuration and a deliberately odd one.
const BLOOM_DEFAULTS: [BloomDefaults; 2] = [
    BloomDefaults {
        error: 0.01,
        capacity: 100,
        expansion: 2,
        layout: BloomLayout::Classic,
    },
    BloomDefaults {
        error: 0.25,
        capacity: 1 << 30,
        expansion: 0,
        layout: BloomLayout::Blocked,
    },
];
const CUCKOO_DEFAULTS: [CuckooDefaults; 2] = [
    CuckooDefaults {
        capacity: 1024,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
        error: None,
        redisbloom: false,
    },
    CuckooDefaults {
        capacity: 1 << 30,
        bucket_size: 255,
        max_iterations: 65535,
        expansion: 32768,
        error: Some(1e-9),
        redisbloom: true,
    },
];

/// A small cap for filters created from parsed parameters (sizing runs in full
/// before the cap is checked; a small cap keeps the allocations cheap).
const CREATE_LIMITS: Limits = Limits {
    max_bytes: 64 << 10,
    max_links: 64,
    max_filters: 64,
};

/// Every argument parser over one argument vector (`\n`-separated, argv[0]
/// first), with the checks of what each promises; parameters that parse are
/// also used to size a filter (under a 64 KiB cap), as BF.RESERVE/CF.RESERVE do.
pub fn args(data: &[u8]) {
    let argv: Vec<&[u8]> = data.split(|&b| b == b'\n').take(1024).collect();
    let args = argv.as_slice();
    for a in args {
        if let Some(v) = parse_i64(a) {
            // Redis' string2ll accepts only the canonical spelling.
            assert_eq!(
                v.to_string().as_bytes(),
                *a,
                "non-canonical integer accepted"
            );
        }
        if let Some(v) = parse_f64(a) {
            assert!(!v.is_nan() && a.len() <= 128);
            let _ = format_g(v);
        }
        if let Ok(f) = InfoField::parse(a) {
            // The default reply's five fields, or valkey-bloom's single fields.
            assert!(
                InfoField::ALL.contains(&f)
                    || matches!(
                        f,
                        InfoField::Error
                            | InfoField::Tightening
                            | InfoField::MaxScaledCapacity
                            | InfoField::Window
                    )
            );
            let _ = f.label();
        }
        if let Ok(p) = ccf::parse_position(a) {
            assert!(p >= 0);
        }
        let _ = is_keyword(a, "ITEMS");
    }
    let n = args.count();
    for d in &BLOOM_DEFAULTS {
        if let Ok(p) = cbf::parse_reserve(&args, d) {
            // The arity parse_reserve allows: key, rate, capacity and each option of
            // the option table once, in any order, a repeated one counting.
            assert!((4..=crate::cmd::options::RESERVE_MAX_ARGS).contains(&n));
            // The replicated BF.RESERVE parses back to the same filter, on a
            // replica with any defaults (VALIDATESCALETO is the primary's check).
            let mut back: Vec<Vec<u8>> = vec![b"BF.RESERVE".to_vec(), b"k".to_vec()];
            back.extend(crate::cmd::options::reserve_args(&p));
            let back: Vec<&[u8]> = back.iter().map(Vec::as_slice).collect();
            assert!(
                back.iter().all(|a| a.len() <= 128),
                "an argument parse_f64 cannot read"
            );
            for e in &BLOOM_DEFAULTS {
                let again = cbf::parse_reserve_from(&back.as_slice(), e, Origin::Trusted);
                assert_eq!(
                    again,
                    Ok(CreateParams {
                        scale_to: None,
                        ..p
                    })
                );
            }
            assert!(p.opts.tightening > 0.0 && p.opts.tightening < 1.0);
            assert!(p.scale_to.is_none_or(|t| t > 0 && p.expansion > 0));
            assert!(p.error > 0.0 && p.error <= MAX_ERROR_RATE);
            assert!((1..=ferrobloom_core::bloom::MAX_CAPACITY).contains(&p.capacity));
            assert!(p.expansion <= ferrobloom_core::bloom::MAX_EXPANSION);
            let _ = BloomChain::new(p.capacity, p.error, p.expansion, &CREATE_LIMITS);
            if let Ok(c) = BloomChain::with_options(
                p.capacity,
                p.error,
                p.expansion,
                p.layout,
                p.opts,
                &CREATE_LIMITS,
            ) {
                let _ = c.scale_to(p.scale_to, &CREATE_LIMITS);
            }
        }
        if let Ok(a) = cbf::parse_insert(&args, d) {
            assert!(a.items_from >= 3 && a.items_from < n);
            assert!(args
                .arg(a.items_from - 1)
                .is_some_and(|k| is_keyword(k, "ITEMS")));
            if let Some(p) = a.create {
                assert!(p.error > 0.0 && p.error <= d.error.max(MAX_ERROR_RATE));
                let _ = BloomChain::new(p.capacity, p.error, p.expansion, &CREATE_LIMITS);
            }
        }
    }
    if let Ok(k) = crate::cmd::merge::parse_merge(&args) {
        // BF.MERGE: numkeys is canonical, positive and counts argv[3..].
        assert!(k >= 1 && n == k + 3);
        assert_eq!(args.arg(2), Some(k.to_string().as_bytes()));
    }
    for d in &CUCKOO_DEFAULTS {
        if let Ok(p) = ccf::parse_reserve(&args, d) {
            assert!(n >= 3 && n % 2 == 1);
            assert!(p.bucket_size >= 1 && p.max_iterations >= 1);
            assert!(p.capacity >= 2 * u64::from(p.bucket_size));
            assert!(p.capacity <= ferrobloom_core::bloom::MAX_CAPACITY);
            let _ = CuckooFilter::new(&p, CREATE_LIMITS.max_bytes);
        }
        if let Ok(a) = ccf::parse_insert(&args, d) {
            assert!(a.items_from >= 3 && a.items_from < n);
            if let Some(p) = a.create {
                let _ = CuckooFilter::new(&p, CREATE_LIMITS.max_bytes);
            }
        }
        // What a primary or an AOF wrote (ferrobloom's or RedisBloom 2.x's parse).
        if let Ok(p) = ccf::parse_reserve_from(&args, d, Origin::Trusted) {
            assert!(p.bucket_size >= 1 && p.max_iterations >= 1);
            assert!(p.capacity >= 2 * u64::from(p.bucket_size));
            let _ = CuckooFilter::new(&p, CREATE_LIMITS.max_bytes);
        }
        if let Ok(a) = ccf::parse_insert_from(&args, d, Origin::Trusted) {
            assert!(a.items_from >= 3 && a.items_from < n);
        }
    }
    for d in &BLOOM_DEFAULTS {
        if let Ok(p) = cbf::parse_reserve_from(&args, d, Origin::Trusted) {
            assert!(p.error > 0.0 && p.error < 1.0 && p.capacity >= 1);
            if p.layout == BloomLayout::RedisBloom {
                let _ = BloomChain::new_redisbloom(
                    p.capacity,
                    p.error,
                    p.expansion,
                    p.nonscaling_growth,
                    &CREATE_LIMITS,
                );
            }
        }
        if let Ok(a) = cbf::parse_insert_from(&args, d, Origin::Trusted) {
            assert!(a.items_from >= 3 && a.items_from < n);
        }
    }
}

// ---------------------------------------------------------------------------
// Seeds and corpus replay
// ---------------------------------------------------------------------------

/// A fuzz target: directory name under `fuzz/corpus/` and entry function.
pub type Target = (&'static str, fn(&[u8]));

/// Every fuzz target.
pub const TARGETS: [Target; 6] = [
    ("rdb_bloom", rdb_bloom),
    ("rdb_cuckoo", rdb_cuckoo),
    ("bloom_chunks", bloom_chunks),
    ("cuckoo_chunks", cuckoo_chunks),
    ("args", args),
    ("rdb_redisbloom", rdb_redisbloom),
];

/// RedisBloom's RDB fields read from the fuzz input (see the module doc).
struct FuzzRdb<'a> {
    input: Input<'a>,
}

impl<'a> FuzzRdb<'a> {
    fn tagged(&mut self, tag: u8) -> Option<()> {
        (self.input.u8()? % 3 == tag).then_some(())
    }
}

impl<'a> RdbRead for FuzzRdb<'a> {
    type Buf = &'a [u8];
    fn unsigned(&mut self) -> Option<u64> {
        self.tagged(0)?;
        Some(u64::from_le_bytes(self.input.array::<8>()?))
    }
    fn double(&mut self) -> Option<f64> {
        self.tagged(1)?;
        Some(f64::from_le_bytes(self.input.array::<8>()?))
    }
    fn buffer(&mut self) -> Option<&'a [u8]> {
        self.tagged(2)?;
        self.input.buffer()
    }
}

/// RedisBloom's own RDB payload of either type (input format in the module doc).
pub fn rdb_redisbloom(data: &[u8]) {
    let mut input = Input::new(data);
    let Some(sel) = input.u8() else {
        return;
    };
    let encver = i32::from(sel / 2 % 5);
    let mut r = FuzzRdb { input };
    if sel & 1 == 0 {
        if let Ok(c) = BloomChain::from_redisbloom_rdb(encver, &mut r, &limits()) {
            assert!(c.is_redisbloom());
            check_bloom(&BloomFilter::from(c));
        }
    } else if let Ok(f) = CuckooFilter::from_redisbloom_rdb(encver, &mut r, MAX_BYTES, MAX_FILTERS)
    {
        assert!(f.is_redisbloom());
        check_cuckoo(&f);
    }
}

/// One RedisBloom RDB field of a [`rdb_redisbloom`] seed.
enum RbField {
    U(u64),
    D(f64),
    B(Vec<u8>),
}

fn rb_seed(sel: u8, fields: &[RbField]) -> Vec<u8> {
    let mut out = vec![sel];
    for f in fields {
        match f {
            RbField::U(v) => {
                out.push(0);
                out.extend_from_slice(&v.to_le_bytes());
            }
            RbField::D(v) => {
                out.push(1);
                out.extend_from_slice(&v.to_le_bytes());
            }
            RbField::B(b) => {
                out.push(2);
                put_buffer(&mut out, b);
            }
        }
    }
    out
}

/// Seeds of [`rdb_redisbloom`]: Bloom payloads of versions 0, 1 and 4 and cuckoo
/// payloads of versions 2 and 4, as RedisBloom writes them.
fn redisbloom_seeds() -> Vec<Seed> {
    use RbField::{B, D, U};
    let e: f64 = 0.01;
    let bpe = (e.ln() / 0.480453013918201).abs();
    let k = 7u64; // ceil(ln 2 · bpe) at 1%
    let mut set = vec![0u8; 120];
    set[3] = 0x41;
    vec![
        (
            "bloom-v4",
            rb_seed(
                8,
                &[
                    U(1),
                    U(1),
                    U(5),
                    U(2),
                    U(100),
                    D(e),
                    U(k),
                    D(bpe),
                    U(960),
                    U(0),
                    B(set.clone()),
                    U(1),
                ],
            ),
        ),
        (
            "bloom-v0",
            rb_seed(
                0,
                &[
                    U(0),
                    U(1),
                    U(100),
                    D(e),
                    U(k),
                    D(bpe),
                    B(vec![0; 120]),
                    U(0),
                ],
            ),
        ),
        (
            "bloom-v1-pow2",
            rb_seed(
                2,
                &[
                    U(0),
                    U(1),
                    U(100),
                    D(e),
                    U(k),
                    D(bpe),
                    U(1024),
                    U(10),
                    B(vec![0; 128]),
                    U(0),
                ],
            ),
        ),
        (
            "cuckoo-v4",
            rb_seed(
                9,
                &[
                    U(2),
                    U(8),
                    U(1),
                    U(0),
                    U(2),
                    U(20),
                    U(2),
                    U(8),
                    B(vec![0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                    U(16),
                    B(vec![0; 32]),
                ],
            ),
        ),
        (
            "cuckoo-v2",
            rb_seed(5, &[U(1), U(16), U(0), B(vec![0; 32])]),
        ),
    ]
    .into_iter()
    .map(|(name, data)| ("rdb_redisbloom", name.to_string(), data))
    .collect()
}

fn put_buffer(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    out.extend_from_slice(b);
}

fn rdb_seed(d: &Dump) -> Vec<u8> {
    let mut out = Vec::new();
    put_buffer(&mut out, &d.0);
    for (_, c) in &d.1 {
        put_buffer(&mut out, c);
    }
    out
}

/// A chunks seed: the header, one LOADCHUNK per chunk, then a few operations
/// (`ops` holds opcodes from `cycle`, each followed by an item).
fn chunks_seed(d: &Dump, ops: &[u8], items: usize) -> Vec<u8> {
    let mut out = Vec::new();
    put_buffer(&mut out, &d.0);
    for (it, c) in &d.1 {
        out.push(0);
        out.extend_from_slice(&(*it as u32).to_le_bytes());
        put_buffer(&mut out, c);
    }
    for i in 0..items {
        let op = ops.get(i % ops.len().max(1)).copied().unwrap_or(2);
        out.push(op);
        let item = format!("item{i}");
        out.push(item.len() as u8);
        out.extend_from_slice(item.as_bytes());
    }
    out
}

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
    out.extend(redisbloom_seeds());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn corpus_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus")
    }

    /// Every file of the committed corpus (seeds, minimized finds, regression
    /// inputs) goes through its target again: what the fuzzers found stays fixed.
    #[test]
    fn corpus_replays_without_panics() {
        // Fewer files than this means the corpus was lost or emptied.
        const MIN_FILES: usize = 5;
        for (name, run) in TARGETS {
            let dir = corpus_dir().join(name);
            let mut files = 0;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    let data = std::fs::read(&path).unwrap();
                    let r = std::panic::catch_unwind(|| run(&data));
                    assert!(r.is_ok(), "{} panics", path.display());
                    files += 1;
                }
            }
            assert!(
                files >= MIN_FILES,
                "{name}: only {files} corpus files replayed from {}",
                dir.display()
            );
        }
    }

    /// The seeds are valid encodings: each loads and passes the checks, and the
    /// argument seeds parse.
    #[test]
    fn seeds_load() {
        let seeds = seeds();
        for (target, name, data) in &seeds {
            let (_, run) = TARGETS.iter().find(|(t, _)| t == target).unwrap();
            run(data);
            match *target {
                "rdb_bloom" => {
                    let mut i = Input::new(data);
                    assert!(load_payload::<BloomFilter, _>(&limits(), || i.buffer()).is_ok());
                }
                "rdb_cuckoo" => {
                    let mut i = Input::new(data);
                    assert!(load_payload::<CuckooFilter, _>(&limits(), || i.buffer()).is_ok());
                }
                _ => {}
            }
            assert!(!name.is_empty());
        }
        for t in [
            "rdb_bloom",
            "rdb_cuckoo",
            "bloom_chunks",
            "cuckoo_chunks",
            "rdb_redisbloom",
        ] {
            assert!(seeds.iter().filter(|s| s.0 == t).count() >= 5, "{t}");
        }
    }

    /// Writes the seeds into `fuzz/corpus/<target>/` (run by hand:
    /// `cargo test --release --lib write_seed_corpus -- --ignored`).
    #[test]
    #[ignore]
    fn write_seed_corpus() {
        for (target, name, data) in seeds() {
            let dir = corpus_dir().join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name), data).unwrap();
        }
    }
}
