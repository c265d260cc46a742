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
//! SCANDUMP walk, and that the header describes exactly the data present. A
//! new version gets a new number and a reader for every older one.
//!
//! One reader of the framing (`Frames`) and one loader (`load`) serve
//! every entry point: [`read`] / [`read_any`] over bytes in memory (the
//! checksum checked first), [`read_from`] / [`read_any_from`] over a
//! [`std::io::Read`] as its bytes arrive (the checksum at the end; the Python
//! package's file objects), and [`parse`] (the framing alone). A header's
//! sizes are checked against the chunk count, and against the input's length
//! when known, before the filter is allocated; without a known length the
//! data chunks are held as they arrive and the filter built after the
//! checksum. Data chunks are checked as [`crate::api::load_chunks`] checks
//! them (`check_data_iterator`).

use std::io::{ErrorKind, Read, Take};

use xxhash_rust::xxh3::Xxh3;

use crate::api::{check_data_iterator, Kind, Scandump};
use crate::bloom::{Limits, SCANDUMP_CHUNK};
use crate::payload::{HeaderFormat, Payload};

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

/// The checksum a file ends with, of every byte before it (`bytes`).
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// [`write`]'s refusal when memory for the file's bytes cannot be had (the
/// Python package raises `MemoryError` for it).
pub const OUT_OF_MEMORY: &str = "out of memory";

/// Writes `f` as a file into `out` (appended), chunk by chunk; every byte
/// is reserved fallibly ([`OUT_OF_MEMORY`] when the allocator refuses, `out`
/// as it was).
pub fn write<T: Scandump>(f: &T, out: &mut Vec<u8>) -> Result<(), String> {
    let start = out.len();
    out.try_reserve(PREAMBLE + CHECKSUM)
        .map_err(|_| OUT_OF_MEMORY)?;
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
        if out
            .try_reserve(CHUNK_PREFIX + data.len() + CHECKSUM)
            .is_err()
        {
            bad = Some(OUT_OF_MEMORY);
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
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(())
}

/// A filter's file made piece by piece, [`write`]'s bytes in bounded pieces,
/// for a writer that lets go of the filter between pieces (the Java binding
/// writes each piece to a Java stream with the filter's lock released, so a
/// file of any size takes one piece of memory). Every call must be given the
/// filter in the state [`Pieces::new`] saw (the caller keeps it unchanged
/// meanwhile, or keeps a copy of that state); a filter that changed anyway
/// is refused once the chunks no longer match. Each [`next`](Pieces::next)
/// walks the chunks from the first (without copying those it skips: a walk
/// step per chunk of the filter), so a piece of a few MiB keeps the whole
/// file linear in practice.
pub struct Pieces {
    /// Chunks in the file (the header is chunk 0).
    count: u32,
    /// The file's length in bytes.
    len: u64,
    /// The chunk whose framed bytes (prefix, then data) come next.
    chunk: u32,
    /// Bytes of that chunk's framing and data already given.
    at: usize,
    /// The checksum of every byte given so far; `None` once it was written.
    hash: Option<Xxh3>,
    /// Whether the preamble was given.
    started: bool,
}

impl Pieces {
    /// The file of `f` (its chunks counted, none copied).
    pub fn new<T: Scandump>(f: &T) -> Result<Self, String> {
        let (mut count, mut len, mut long) = (0u64, (PREAMBLE + CHECKSUM) as u64, false);
        f.for_each_dump_chunk(|_, data| {
            long |= u32::try_from(data.len()).is_err();
            count += 1;
            len = len.saturating_add((CHUNK_PREFIX + data.len()) as u64);
        });
        if long {
            return Err("chunk longer than 4 GiB".into());
        }
        let count = u32::try_from(count).map_err(|_| "more than 2^32 chunks")?;
        Ok(Pieces {
            count,
            len,
            chunk: 0,
            at: 0,
            hash: Some(Xxh3::new()),
            started: false,
        })
    }

    /// The file's length in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Whether the whole file was given.
    pub fn is_done(&self) -> bool {
        self.hash.is_none()
    }

    /// Appends the file's next bytes to `out`: at most `max` (at least 1) of
    /// its chunks, after the preamble on the first call and followed by the
    /// checksum on the last. Returns whether bytes are left to give. Every
    /// byte is reserved fallibly ([`OUT_OF_MEMORY`], `out` as it was).
    pub fn next<T: Scandump>(
        &mut self,
        f: &T,
        max: usize,
        out: &mut Vec<u8>,
    ) -> Result<bool, String> {
        let Some(mut hash) = self.hash.take() else {
            return Ok(false);
        };
        let start = out.len();
        let before = (self.chunk, self.at, self.started);
        let got = self.fill(f, max.max(1), out).and_then(|()| {
            if self.chunk < self.count {
                return Ok(());
            }
            out.try_reserve(CHECKSUM)
                .map_err(|_| OUT_OF_MEMORY.to_string())
        });
        if let Err(why) = got {
            out.truncate(start);
            (self.chunk, self.at, self.started) = before;
            self.hash = Some(hash);
            return Err(why);
        }
        hash.update(&out[start..]);
        if self.chunk < self.count {
            self.hash = Some(hash);
            return Ok(true);
        }
        out.extend_from_slice(&hash.digest().to_le_bytes());
        Ok(false)
    }

    /// [`next`](Self::next)'s bytes before the checksum.
    fn fill<T: Scandump>(&mut self, f: &T, max: usize, out: &mut Vec<u8>) -> Result<(), String> {
        if !self.started {
            out.try_reserve(PREAMBLE).map_err(|_| OUT_OF_MEMORY)?;
            out.extend_from_slice(&MAGIC);
            out.extend_from_slice(&VERSION.to_le_bytes());
            out.push(T::KIND as u8);
            out.push(0);
            out.extend_from_slice(&self.count.to_le_bytes());
            self.started = true;
        }
        let mut room = max;
        let (mut index, mut bad) = (0u32, None);
        f.for_each_dump_chunk(|iter, data| {
            let this = index;
            index = index.saturating_add(1);
            if this != self.chunk || room == 0 || bad.is_some() {
                return;
            }
            let mut prefix = [0u8; CHUNK_PREFIX];
            prefix[..8].copy_from_slice(&iter.to_le_bytes());
            prefix[8..].copy_from_slice(&(data.len() as u32).to_le_bytes());
            let framed = CHUNK_PREFIX + data.len();
            while self.at < framed && room > 0 {
                let rest = match self.at.checked_sub(CHUNK_PREFIX) {
                    None => &prefix[self.at..],
                    Some(d) => &data[d..],
                };
                let n = rest.len().min(room);
                if out.try_reserve(n).is_err() {
                    bad = Some(OUT_OF_MEMORY.to_string());
                    return;
                }
                out.extend_from_slice(&rest[..n]);
                self.at += n;
                room -= n;
            }
            if self.at == framed {
                self.chunk += 1;
                self.at = 0;
            }
        });
        if let Some(why) = bad {
            return Err(why);
        }
        if index != self.count {
            return Err("the filter changed while its file was written".into());
        }
        Ok(())
    }
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

/// Checks a file's framing and cuts it into chunks. Allocates only the list
/// of chunk slices, whose length is bounded by the input's (12 bytes a chunk).
pub fn parse(bytes: &[u8]) -> Result<Parsed<'_>, String> {
    let mut fr = Frames::of_slice(bytes)?;
    let mut chunks = Vec::new();
    chunks
        .try_reserve_exact(fr.count as usize)
        .map_err(|_| "out of memory")?;
    for _ in 0..fr.count {
        let (iter, len) = fr.prefix()?;
        chunks.push((iter, fr.inp.borrow(len)?));
    }
    let (kind, version) = (fr.kind, fr.version);
    fr.finish()?;
    Ok(Parsed {
        kind,
        version,
        chunks,
    })
}

/// Reads a file of kind `T` (a file of the other kind is refused by name).
pub fn read<T: Scandump>(bytes: &[u8], limits: &Limits) -> Result<T, String> {
    load_as(Frames::of_slice(bytes)?, limits)
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
    load_any(Frames::of_slice(bytes)?, limits)
}

/// Reads a file of kind `T` from `r` as its bytes arrive, with the checks of
/// [`read`] made in stream order: the framing and the header, then every
/// chunk as it arrives, the checksum at the end (a mismatch drops the filter).
///
/// `len`: the bytes `r` holds, when the caller knows them (a file's size from
/// its position); no more are read. Then the header's sizes are checked
/// against it and the filter is allocated before its data arrives, which is
/// read straight into it. Without it, data chunks are held as they arrive
/// (buffers grown with the bytes read, never to a size the header merely
/// claims) and the filter is built once the checksum matched; `r` must end
/// at the checksum. A `len` larger than what `r` holds makes the reader
/// allocate what the header describes before finding the file truncated.
/// A reader's error is refused as `read error: ...`.
pub fn read_from<T: Scandump>(
    r: &mut impl Read,
    len: Option<u64>,
    limits: &Limits,
) -> Result<T, String> {
    load_as(of_reader(r, len)?, limits)
}

/// [`read_from`] for a file of either kind.
pub fn read_any_from(
    r: &mut impl Read,
    len: Option<u64>,
    limits: &Limits,
) -> Result<AnyFilter, String> {
    load_any(of_reader(r, len)?, limits)
}

fn load_as<T: Scandump, R: Read>(fr: Frames<R>, limits: &Limits) -> Result<T, String> {
    if fr.kind != T::KIND {
        return Err(format!(
            "the file holds a {} filter, not a {} filter",
            fr.kind.prefix(),
            T::KIND.prefix()
        ));
    }
    load(fr, limits)
}

fn load_any<R: Read>(fr: Frames<R>, limits: &Limits) -> Result<AnyFilter, String> {
    Ok(match fr.kind {
        Kind::Bloom => AnyFilter::Bloom(load(fr, limits)?),
        Kind::Cuckoo => AnyFilter::Cuckoo(load(fr, limits)?),
    })
}

/// The bytes of a file after its preamble.
struct Input<R> {
    r: R,
    /// Bytes `r` still holds, when known (checksum included).
    left: Option<u64>,
    /// The checksum of the bytes so far; `None` when it was checked up front.
    hash: Option<Xxh3>,
}

fn io_error(e: std::io::Error) -> String {
    format!("read error: {e}")
}

impl<R: Read> Input<R> {
    fn consumed(&mut self, b: &[u8]) {
        if let Some(h) = &mut self.hash {
            h.update(b);
        }
        if let Some(l) = &mut self.left {
            *l = l.saturating_sub(b.len() as u64);
        }
    }

    /// Fills `dst`; the input's end first is a truncated file.
    fn fill(&mut self, dst: &mut [u8]) -> Result<(), String> {
        let mut at = 0;
        while at < dst.len() {
            match self.r.read(&mut dst[at..]) {
                Ok(0) => return Err("truncated file".into()),
                Ok(n) => at += n.min(dst.len() - at),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
        self.consumed(dst);
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut b = [0u8; N];
        self.fill(&mut b)?;
        Ok(b)
    }

    /// The next `len` bytes in a buffer grown as they arrive.
    fn fill_vec(&mut self, len: usize) -> Result<Vec<u8>, String> {
        let mut v = Vec::new();
        (&mut self.r)
            .take(len as u64)
            .read_to_end(&mut v)
            .map_err(io_error)?;
        if v.len() != len {
            return Err("truncated file".into());
        }
        self.consumed(&v);
        Ok(v)
    }
}

impl<'a> Input<&'a [u8]> {
    /// The next `len` bytes, borrowed.
    fn borrow(&mut self, len: usize) -> Result<&'a [u8], String> {
        if self.r.len() < len {
            return Err("truncated file".into());
        }
        let (b, rest) = self.r.split_at(len);
        self.r = rest;
        self.consumed(b);
        Ok(b)
    }
}

/// A file's framing, read in order: the preamble's fields, then each chunk's
/// iterator and length (checked against the input's size when known), then
/// the checksum. The one reader of the framing, for slices and streams.
struct Frames<R> {
    inp: Input<R>,
    kind: Kind,
    version: u16,
    count: u32,
    /// The chunks whose prefix was read.
    read: u32,
}

/// The preamble's checks, on its first bytes (`p`, up to [`PREAMBLE`]) and
/// the file's length when known.
fn check_preamble(p: &[u8], len: Option<u64>) -> Result<(u16, Kind, u32), String> {
    if p.get(..MAGIC.len()) != Some(&MAGIC[..]) {
        return Err("not a ferrobloom filter file (bad magic)".into());
    }
    let short = len.is_some_and(|n| n < (PREAMBLE + CHECKSUM) as u64);
    let Some(p) = p.get(..PREAMBLE).filter(|_| !short) else {
        return Err("truncated file (preamble)".into());
    };
    let version = u16::from_le_bytes([p[8], p[9]]);
    if version != VERSION {
        return Err(format!(
            "unsupported file format version {version} (this reader knows version {VERSION})"
        ));
    }
    let kind = Kind::from_code(p[10]).ok_or_else(|| format!("unknown kind {}", p[10]))?;
    if p[11] != 0 {
        return Err(format!("unknown flags {:#04x}", p[11]));
    }
    Ok((
        version,
        kind,
        u32::from_le_bytes([p[12], p[13], p[14], p[15]]),
    ))
}

impl<'a> Frames<&'a [u8]> {
    /// A file in memory: its checksum is checked first.
    fn of_slice(bytes: &'a [u8]) -> Result<Self, String> {
        let p = bytes.get(..PREAMBLE).unwrap_or(bytes);
        let pre = check_preamble(p, Some(bytes.len() as u64))?;
        let body_end = bytes.len() - CHECKSUM;
        let (body, sum) = bytes.split_at(body_end);
        if sum != checksum(body).to_le_bytes() {
            return Err("checksum mismatch (the file is truncated or corrupted)".into());
        }
        let inp = Input {
            r: &bytes[PREAMBLE..],
            left: Some((bytes.len() - PREAMBLE) as u64),
            hash: None,
        };
        Frames::new(inp, pre)
    }
}

/// A file read from `r` (`len`: its bytes, when known; no more are read).
fn of_reader<R: Read>(r: R, len: Option<u64>) -> Result<Frames<Take<R>>, String> {
    let mut r = r.take(len.unwrap_or(u64::MAX));
    let mut p = [0u8; PREAMBLE];
    let mut got = 0;
    while got < PREAMBLE {
        match r.read(&mut p[got..]) {
            Ok(0) => break,
            Ok(n) => got += n.min(PREAMBLE - got),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(e)),
        }
    }
    let pre = check_preamble(&p[..got], len)?;
    let mut hash = Xxh3::new();
    hash.update(&p);
    let inp = Input {
        r,
        left: len.map(|n| n.saturating_sub(PREAMBLE as u64)),
        hash: Some(hash),
    };
    Frames::new(inp, pre)
}

impl<R: Read> Frames<R> {
    fn new(inp: Input<R>, (version, kind, count): (u16, Kind, u32)) -> Result<Self, String> {
        if count == 0 {
            return Err("no chunks (the header is missing)".into());
        }
        if let Some(left) = inp.left {
            if u64::from(count) > (left - CHECKSUM as u64) / CHUNK_PREFIX as u64 {
                return Err(format!("chunk count {count} larger than the file can hold"));
            }
        }
        Ok(Frames {
            inp,
            kind,
            version,
            count,
            read: 0,
        })
    }

    /// Bytes of chunks the input still holds, when known.
    fn room(&self) -> Option<u64> {
        self.inp.left.map(|l| l.saturating_sub(CHECKSUM as u64))
    }

    /// The next chunk's iterator and length (its bytes are the caller's to
    /// read next).
    fn prefix(&mut self) -> Result<(i64, usize), String> {
        let i = self.read + 1;
        if self.read == self.count {
            return Err("more chunks asked than the file holds".into());
        }
        if self.room().is_some_and(|r| r < CHUNK_PREFIX as u64) {
            return Err("truncated chunk".into());
        }
        let b: [u8; CHUNK_PREFIX] = self.inp.array()?;
        self.read = i;
        let mut it = [0u8; 8];
        it.copy_from_slice(&b[..8]);
        let iter = i64::from_le_bytes(it);
        let len = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
        if len > MAX_CHUNK {
            return Err(format!(
                "chunk {i} claims {len} bytes (at most {MAX_CHUNK})"
            ));
        }
        if self.room().is_some_and(|r| r < len as u64) {
            return Err(format!("chunk {i} runs past the end of the file"));
        }
        Ok((iter, len))
    }

    /// After the last chunk: the chunks end at the checksum, which matches.
    fn finish(mut self) -> Result<(), String> {
        if self.read != self.count {
            return Err("fewer chunks read than the file holds".into());
        }
        if let Some(extra) = self.room().filter(|r| *r > 0) {
            return Err(format!("{extra} bytes after the last chunk"));
        }
        let Some(hash) = self.inp.hash.take() else {
            return Ok(());
        };
        let digest = hash.digest();
        let stored: [u8; CHECKSUM] = self.inp.array()?;
        if u64::from_le_bytes(stored) != digest {
            return Err("checksum mismatch (the file is truncated or corrupted)".into());
        }
        if self.inp.left.is_none() {
            // A stream of unknown length ends at the checksum.
            let mut one = [0u8; 1];
            loop {
                match self.inp.r.read(&mut one) {
                    Ok(0) => break,
                    Ok(_) => return Err("bytes after the checksum".into()),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_error(e)),
                }
            }
        }
        Ok(())
    }
}

/// Loads the filter of a file whose preamble was read: the header chunk, its
/// sizes against the chunk count (and the input's size when known) before
/// the filter is allocated, each data chunk's iterator and length against
/// the header as it arrives, SCANDUMP's final `(0, "")` if the count has
/// room for it, and the checksum.
fn load<T: Payload, R: Read>(mut fr: Frames<R>, limits: &Limits) -> Result<T, String> {
    let (first, hlen) = fr.prefix()?;
    if first != 1 {
        return Err(format!(
            "the first chunk is not a header (iterator {first}, not 1)"
        ));
    }
    let header = fr.inp.fill_vec(hlen)?;
    let lengths = T::data_lengths(&header, limits, HeaderFormat::Any)
        .map_err(|e| format!("invalid header: {e}"))?;
    let pieces = lengths
        .iter()
        .fold(0u64, |n, l| n.saturating_add(l.div_ceil(SCANDUMP_CHUNK)));
    let data_chunks = u64::from(fr.count) - 1;
    if data_chunks < pieces {
        return Err("truncated payload (data)".into());
    }
    if data_chunks > pieces.saturating_add(1) {
        return Err("more data chunks than the header describes".into());
    }
    let trailer = data_chunks > pieces;
    let mut at: i64 = 1;
    let mut i = 0;
    let mut next = |fr: &mut Frames<R>, want: usize| -> Result<(), String> {
        let (iter, len) = fr.prefix()?;
        i += 1;
        check_data_iterator(i, iter, len, &mut at)?;
        if len != want {
            return Err("data length does not match the header".into());
        }
        Ok(())
    };
    let value = if let Some(room) = fr.room() {
        // The input's size is known: the data the header describes must fit
        // in it before the filter is allocated; then it is read in place.
        let need = lengths
            .iter()
            .fold(0u64, |n, l| n.saturating_add(*l))
            .saturating_add(pieces.saturating_mul(CHUNK_PREFIX as u64));
        if need > room {
            return Err("data length does not match the header".into());
        }
        let mut value = T::from_header(&header, limits, HeaderFormat::Any)
            .map_err(|e| format!("invalid header: {e}"))?;
        drop(header);
        value.fill_chunks(|dst| {
            next(&mut fr, dst.len())?;
            fr.inp.fill(dst)
        })?;
        if i as u64 != pieces {
            return Err("data length does not match the header".into());
        }
        if trailer {
            check_trailer(&mut fr)?;
        }
        fr.finish()?;
        value
    } else {
        // Unknown size: hold the data chunks as they arrive, and build the
        // filter once the checksum matched.
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for len in &lengths {
            let mut left = *len;
            while left > 0 {
                let want = left.min(SCANDUMP_CHUNK);
                next(&mut fr, want as usize)?;
                bufs.push(fr.inp.fill_vec(want as usize)?);
                left -= want;
            }
        }
        if trailer {
            check_trailer(&mut fr)?;
        }
        fr.finish()?;
        let mut value = T::from_header(&header, limits, HeaderFormat::Any)
            .map_err(|e| format!("invalid header: {e}"))?;
        drop(header);
        let mut bufs = bufs.into_iter();
        value.fill_chunks(|dst| {
            let src = bufs.next().ok_or("truncated payload (data)")?;
            if src.len() != dst.len() {
                return Err("data length does not match the header".into());
            }
            dst.copy_from_slice(&src);
            Ok(())
        })?;
        if bufs.next().is_some() {
            return Err("more data chunks than the header describes".into());
        }
        value
    };
    let mut value = value;
    value.anchor_clock(crate::dump::clock_ms());
    Ok(value)
}

/// SCANDUMP's final `(0, "")`, which a file may end with.
fn check_trailer<R: Read>(fr: &mut Frames<R>) -> Result<(), String> {
    if fr.prefix()? != (0, 0) {
        return Err("more data chunks than the header describes".into());
    }
    Ok(())
}
#[cfg(test)]
#[path = "tests/file.rs"]
mod tests;

#[cfg(test)]
#[path = "tests/file_stream.rs"]
mod stream_tests;
