//! Fuzzing entry points: deterministic functions over arbitrary bytes, one per
//! cargo-fuzz target in `fuzz/` (each target is a one-line call), and the seed
//! corpus generator. They must never panic, except on a broken invariant, which
//! is then a bug that the fuzzer reports: each function asserts what the code it
//! drives promises (a filter loaded from a payload re-encodes to the same bytes,
//! a SCANDUMP of it loads back into an equal filter, an added item is found, a
//! parsed integer is canonical, parsed options are in range), and every
//! filter a target loads then takes items, lookups and (windowed) the passing
//! of time without a panic (`after_load.rs`).
//!
//! The committed corpus `fuzz/corpus/<target>/` is replayed by `cargo test`
//! (`fuzzing/tests.rs`), so every regression input stays fixed. One file per
//! target family: `bloom.rs`, `cuckoo.rs`, `args.rs`, `redisbloom.rs`; the seed
//! corpus generator in `seeds.rs`.
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
//! - [`file`]: a filter file (`ferrobloom_core::file`), read as it is and
//!   sealed with its own checksum (its last 8 bytes replaced).
//! - [`args`]: a command's arguments separated by `\n` (argv[0] first).
//! - [`rdb_redisbloom`]: RedisBloom's own RDB payloads (encoding versions 0-4)
//!   of either type: byte 0 picks the type (bit 0) and the version
//!   (`byte / 2 % 5`), then the fields the loader reads, each a tag byte
//!   (`% 3`: 0 unsigned, 1 double, 2 buffer) and its value (8 bytes, 8 bytes,
//!   or a `u16` length and that many bytes); a field of another kind than the
//!   loader asks for ends the payload, as an RDB type error does.

use crate::cmd::bf as cbf;
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

mod after_load;
mod args;
mod bloom;
mod checks;
mod cuckoo;
mod file;
mod redisbloom;
mod seeds;
#[cfg(test)]
mod tests;

pub use args::args;
pub use bloom::{bloom_chunks, rdb_bloom};
pub use cuckoo::{cuckoo_chunks, rdb_cuckoo};
pub use file::file;
pub use redisbloom::rdb_redisbloom;
pub use seeds::{seeds, Seed};

/// A fuzz target: directory name under `fuzz/corpus/` and entry function.
pub type Target = (&'static str, fn(&[u8]));

/// Every fuzz target.
pub const TARGETS: [Target; 7] = [
    ("rdb_bloom", rdb_bloom),
    ("rdb_cuckoo", rdb_cuckoo),
    ("bloom_chunks", bloom_chunks),
    ("cuckoo_chunks", cuckoo_chunks),
    ("args", args),
    ("rdb_redisbloom", rdb_redisbloom),
    ("file", file),
];

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
