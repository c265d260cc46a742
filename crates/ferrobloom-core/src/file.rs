//! The filter file format: a filter's SCANDUMP replies (header first, then the
//! data chunks, each with its iterator) in a small framing. The Python
//! package's `to_bytes`/`save`/pickling and the `ferrobloom` command-line tool
//! write and read it; docs/clients.md, "File format", describes it for other
//! readers.
//!
//! Version 1, every integer little-endian:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0      | 8    | magic `89 46 42 46 0D 0A 1A 0A` (`\x89FBF\r\n\x1a\n`: a high bit, CR LF and ^Z expose a transfer that altered the bytes) |
//! | 8      | 2    | format version, `1` |
//! | 10     | 1    | kind: `1` Bloom (`BF.SCANDUMP` / `BF.LOADCHUNK`), `2` cuckoo (`CF.*`) |
//! | 11     | 1    | flags, `0` (a reader refuses any other value) |
//! | 12     | 4    | chunk count `n` (`n >= 1`: the header is chunk 1) |
//! | 16     | ...  | `n` chunks, each: iterator (i64), length `len` (u32), `len` bytes |
//! | end-8  | 8    | XXH3-64 (seed 0) of every byte before it |
//!
//! The chunks are exactly the `[iterator, bytes]` replies of `SCANDUMP key 0`,
//! `SCANDUMP key <previous iterator>`, ... up to (not including) the final
//! `[0, ""]`: chunk 1 is `(1, header)` in the filter's own header format
//! (ferrobloom's `FBbf`/`FBbw`/`FBcf` or RedisBloom's, each documented beside
//! the code that writes it), and each data chunk is at most 16 MiB, so pushing
//! a file is one `LOADCHUNK key iterator bytes` per chunk.
//!
//! Readers check, before allocating anything the input does not carry: the
//! magic, the version (a later version is refused with its number), the
//! kind and flags, the checksum, that every length fits in the input and
//! the chunks end exactly at the checksum, that the iterators are those of a
//! SCANDUMP walk, and that the header describes exactly the data present
//! ([`crate::dump::load_chunks`]). A new version gets a new number and a
//! reader for every older one.

use crate::bloom::Limits;
use crate::dump::{load_chunks, Kind, Scandump};

/// The first 8 bytes of every filter file.
pub const MAGIC: [u8; 8] = *b"\x89FBF\r\n\x1a\n";
/// The format version this code writes (and the newest it reads).
pub const VERSION: u16 = 1;
/// Bytes before the first chunk.
pub const PREAMBLE: usize = 16;
/// Bytes of a chunk's iterator and length.
pub const CHUNK_PREFIX: usize = 12;
/// Bytes of the trailing checksum.
pub const CHECKSUM: usize = 8;
/// The longest chunk a reader accepts: SCANDUMP's chunks are at most 16 MiB,
/// headers far less.
pub const MAX_CHUNK: usize = 16 << 20;

/// Writes `f` as a file into `out` (appended), chunk by chunk.
pub fn write<T: Scandump>(f: &T, out: &mut Vec<u8>) -> Result<(), String> {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(T::KIND as u8);
    out.push(0);
    let count_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut count: u64 = 0;
    let mut bad = None;
    f.for_each_dump_chunk(|iter, data| {
        let Ok(len) = u32::try_from(data.len()) else {
            bad = Some("chunk longer than 4 GiB");
            return;
        };
        if out.try_reserve(CHUNK_PREFIX + data.len()).is_err() {
            bad = Some("out of memory");
            return;
        }
        out.extend_from_slice(&iter.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(data);
        count += 1;
    });
    if let Some(why) = bad {
        out.truncate(start);
        return Err(why.into());
    }
    let count = u32::try_from(count).map_err(|_| "more than 2^32 chunks")?;
    out[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
    let sum = xxhash_rust::xxh3::xxh3_64(&out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(())
}

/// A file's content, checked and cut into its chunks (borrowed from the input).
#[derive(Debug)]
pub struct Parsed<'a> {
    /// The kind byte.
    pub kind: Kind,
    /// The format version read.
    pub version: u16,
    /// The SCANDUMP replies, `(1, header)` first.
    pub chunks: Vec<(i64, &'a [u8])>,
}

fn le<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

/// Checks a file's framing and cuts it into chunks. Allocates only the list
/// of chunk slices, whose length is bounded by the input's (12 bytes a chunk).
pub fn parse(bytes: &[u8]) -> Result<Parsed<'_>, String> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err("not a ferrobloom filter file (bad magic)".into());
    }
    if bytes.len() < PREAMBLE + CHECKSUM {
        return Err("truncated file (preamble)".into());
    }
    let version = u16::from_le_bytes(le(bytes, 8).ok_or("truncated file")?);
    if version != VERSION {
        return Err(format!(
            "unsupported file format version {version} (this reader knows version {VERSION})"
        ));
    }
    let kind = Kind::from_code(bytes[10]).ok_or_else(|| format!("unknown kind {}", bytes[10]))?;
    if bytes[11] != 0 {
        return Err(format!("unknown flags {:#04x}", bytes[11]));
    }
    let body_end = bytes.len() - CHECKSUM;
    let stored = u64::from_le_bytes(le(bytes, body_end).ok_or("truncated file")?);
    if xxhash_rust::xxh3::xxh3_64(&bytes[..body_end]) != stored {
        return Err("checksum mismatch (the file is truncated or corrupted)".into());
    }
    let count = u32::from_le_bytes(le(bytes, 12).ok_or("truncated file")?) as usize;
    if count == 0 {
        return Err("no chunks (the header is missing)".into());
    }
    if count > (body_end - PREAMBLE) / CHUNK_PREFIX {
        return Err(format!("chunk count {count} larger than the file can hold"));
    }
    let mut chunks = Vec::new();
    chunks
        .try_reserve_exact(count)
        .map_err(|_| "out of memory")?;
    let mut at = PREAMBLE;
    for i in 0..count {
        let iter = i64::from_le_bytes(le(bytes, at).ok_or("truncated chunk")?);
        let len = u32::from_le_bytes(le(bytes, at + 8).ok_or("truncated chunk")?) as usize;
        if len > MAX_CHUNK {
            return Err(format!(
                "chunk {} claims {len} bytes (at most {MAX_CHUNK})",
                i + 1
            ));
        }
        let start = at + CHUNK_PREFIX;
        let data = bytes
            .get(start..start + len)
            .filter(|_| start + len <= body_end)
            .ok_or_else(|| format!("chunk {} runs past the end of the file", i + 1))?;
        chunks.push((iter, data));
        at = start + len;
    }
    if at != body_end {
        return Err(format!("{} bytes after the last chunk", body_end - at));
    }
    Ok(Parsed {
        kind,
        version,
        chunks,
    })
}

/// Reads a file of kind `T` (a file of the other kind is refused by name).
pub fn read<T: Scandump>(bytes: &[u8], limits: &Limits) -> Result<T, String> {
    let p = parse(bytes)?;
    if p.kind != T::KIND {
        return Err(format!(
            "the file holds a {} filter, not a {} filter",
            p.kind.prefix(),
            T::KIND.prefix()
        ));
    }
    load_chunks(&p.chunks, limits)
}

/// A filter of either kind, as a file may hold.
pub enum AnyFilter {
    /// A Bloom filter.
    Bloom(crate::filter::BloomFilter),
    /// A cuckoo filter.
    Cuckoo(crate::cuckoo::CuckooFilter),
}

/// Reads a file of either kind.
pub fn read_any(bytes: &[u8], limits: &Limits) -> Result<AnyFilter, String> {
    let p = parse(bytes)?;
    Ok(match p.kind {
        Kind::Bloom => AnyFilter::Bloom(load_chunks(&p.chunks, limits)?),
        Kind::Cuckoo => AnyFilter::Cuckoo(load_chunks(&p.chunks, limits)?),
    })
}

#[cfg(test)]
#[path = "tests/file.rs"]
mod tests;
