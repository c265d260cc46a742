//! ferrobloom's Bloom header (versioned, documented on `encode_header`), which
//! RDB payloads and SCANDUMP/LOADCHUNK share, and the data chunks.

use super::*;

// ---------------------------------------------------------------------------
// Persistence: the header shared by RDB and SCANDUMP/LOADCHUNK.
// ---------------------------------------------------------------------------

/// Magic bytes that open a ferrobloom Bloom header.
pub const HEADER_MAGIC: [u8; 4] = *b"FBbf";
/// Header format version 1, the first (the shape, counters and link records):
/// written for every filter with RedisBloom's tightening ratio and no seed.
pub const HEADER_VERSION_BASE: u8 = 1;
/// Header format version 2, which introduced valkey-bloom's options: written for
/// filters with a tightening ratio or seed of their own.
pub const HEADER_VERSION_OPTIONS: u8 = 2;
pub(super) const HEADER_FIXED: usize = 24;
/// Version 2's fields after version 1's fixed part: tightening (8), flags (1),
/// reserved (7), seed (32).
pub(super) const HEADER_OPTIONS: usize = 48;
/// Version 2's flag bit: the filter has a seed.
const FLAG_SEEDED: u8 = 1;
pub(super) const LINK_RECORD: usize = 40;
/// Bit-position layout 0: classic double hashing over the whole link
/// ([`BloomLayout::ClassicDouble`], `bloom/link.rs`). Every classic link of
/// releases before [`LAYOUT_CLASSIC_MIXED`]; since the derivation rule
/// (`bloom/sizing.rs`, "Which classic derivation"), also every new classic link
/// large enough for plain double hashing to keep its rate (the faster one).
pub const LAYOUT_CLASSIC: u8 = 0;
/// Bit-position layout 1: all probes in one 512-bit block (module doc).
pub const LAYOUT_BLOCKED: u8 = 1;
/// RedisBloom's layout (the configuration's value for it): never written in a
/// ferrobloom header (such chains are written in RedisBloom's header format),
/// refused when read from one.
pub const LAYOUT_REDISBLOOM: u8 = 2;
/// Bit-position layout 3: an item's probes in two 512-bit blocks (module doc of
/// `bloom.rs`). Written by this release and later; older releases refuse it as
/// an unknown layout, with an error and nothing changed.
pub const LAYOUT_PAIRED: u8 = 3;
/// Bit-position layout 4: classic sizing, each probe an independent position
/// (each double-hashing value mixed before it is mapped to a bit;
/// [`BloomLayout::Classic`], `bloom/link.rs`): new classic links the
/// derivation rule (`bloom/sizing.rs`) gives it, small links and links at
/// tight error rates. Older releases refuse it as an unknown layout, with an
/// error and nothing changed.
pub const LAYOUT_CLASSIC_MIXED: u8 = 4;

/// What a ferrobloom Bloom header is read as: a plain chain's (the value of a
/// key, a SCANDUMP, a file), or one generation of a windowed filter, whose
/// links the window sizes from its own history (so its first link may exceed
/// BF.RESERVE's capacity and its growth links follow no single expansion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderRole {
    /// A plain chain: its first link at most [`MAX_CAPACITY`], each later one
    /// at most the expansion times the one before.
    Chain,
    /// A windowed filter's generation (`window/encoding.rs`).
    Generation,
}

/// Refusals of a header no command sequence writes. The limits' texts are the
/// commands' (`BF.RESERVE`'s `ERR (capacity should be at most 1073741824)`,
/// `ERR expansion should be at most 32768`), without their `ERR` prefix.
pub const CAPACITY_TOO_LARGE: &str = "capacity should be at most 1073741824";
/// See [`CAPACITY_TOO_LARGE`].
pub const EXPANSION_TOO_LARGE: &str = "expansion should be at most 32768";
/// A link whose capacity its bits cannot hold at its error rate.
pub const CAPACITY_ABOVE_BITS: &str = "link capacity above what its bits hold at its error rate";
/// A plain chain's link larger than the expansion times the link before it.
pub const LINK_ABOVE_GROWTH: &str = "link capacity above the expansion times the link before it";

impl BloomChain {
    /// Encodes the filter's shape and counters (not its bits).
    ///
    /// Header format version 1, all integers little-endian, no padding:
    ///
    /// | offset | size | field |
    /// |---|---|---|
    /// | 0 | 4 | magic `FBbf` |
    /// | 4 | 1 | format version = 1 |
    /// | 5 | 3 | reserved, zero |
    /// | 8 | 8 | total items (u64) = sum of the link items |
    /// | 16 | 4 | expansion (u32, 0 = non-scaling, at most 32768) |
    /// | 20 | 4 | number of links `n` (u32, 1..=1024) |
    /// | 24 | 40·n | link records, oldest first |
    ///
    /// Link record (40 bytes): `+0` entries (u64, >= 1), `+8` items (u64, <=
    /// entries, except in a link of a merge that accepted an overfilled union,
    /// `BF.MERGE … OVERFILL`, whose count is the union's estimate; releases
    /// before that option refuse such a header), `+16` error rate (f64 bits, strictly between 0 and 1), `+24` bits
    /// (u64, a non-zero multiple of 64; of 512 for blocked links), `+32` hashes
    /// (u32, 1..=128), `+36` layout (u8: 0 = classic with double hashing, 1 =
    /// blocked, 3 = paired, 4 = classic with mixed probes; see `bloom/link.rs`),
    /// `+37` 3 reserved zero bytes. Layouts 1, 3 and 4 were added without a new
    /// header version: headers written before them only hold the older codes,
    /// which still load unchanged (a filter with code 0 keeps code 0 for the
    /// links it adds later).
    ///
    /// Header format version 2 is written only for a filter whose tightening
    /// ratio is not RedisBloom's 0.5 or that has a seed (one created with
    /// valkey-bloom's `TIGHTENING` or `SEED` option); every other filter keeps
    /// writing version 1, which earlier ferrobloom releases read. Version 2 is
    /// version 1 with the version byte = 2 and 48 bytes before the link records:
    ///
    /// | offset | size | field |
    /// |---|---|---|
    /// | 24 | 8 | tightening ratio (f64 bits, strictly between 0 and 1): each new link's error rate is the previous link's times this |
    /// | 32 | 1 | flags: bit 0 = seeded; other bits zero |
    /// | 33 | 7 | reserved, zero |
    /// | 40 | 32 | seed (all zero when not seeded): the XXH3 seed is the XXH3-64 of these 32 bytes |
    /// | 72 | 40·n | link records, as in version 1 |
    ///
    /// A version 2 header with version 1's options (0.5, no seed) is refused.
    ///
    /// The bit arrays follow separately: in RDB as string buffers of at most
    /// [`SCANDUMP_CHUNK`] bytes each, link by link; over SCANDUMP as data chunks.
    /// Each link's bytes are its bits, least significant bit first.
    ///
    /// A filter migrated from RedisBloom is written in RedisBloom's own header
    /// format instead (`encode_rb_header`, documented in `redisbloom.rs`), the
    /// only one that describes it and the one RedisBloom's LOADCHUNK takes.
    pub fn encode_header(&self) -> Vec<u8> {
        if let Some(rb) = &self.rb {
            return self.encode_rb_header(rb);
        }
        let v2 = !self.opts.is_default();
        let fixed = HEADER_FIXED + if v2 { HEADER_OPTIONS } else { 0 };
        let mut out = Vec::with_capacity(fixed + LINK_RECORD * self.links.len());
        out.extend_from_slice(&HEADER_MAGIC);
        out.push(if v2 {
            HEADER_VERSION_OPTIONS
        } else {
            HEADER_VERSION_BASE
        });
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&self.items.to_le_bytes());
        out.extend_from_slice(&self.expansion.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        if v2 {
            out.extend_from_slice(&self.opts.tightening.to_bits().to_le_bytes());
            out.push(if self.opts.seed.is_some() {
                FLAG_SEEDED
            } else {
                0
            });
            out.extend_from_slice(&[0; 7]);
            out.extend_from_slice(&self.opts.seed.unwrap_or([0; 32]));
        }
        for l in &self.links {
            write_link_record(&mut out, &l.shape, l.items);
        }
        out
    }

    /// Validates a header completely, then allocates a zeroed filter of its shape.
    /// Nothing is allocated for a header that fails any check.
    ///
    /// Takes ferrobloom's header and RedisBloom's: a header is ferrobloom's when it
    /// opens with the magic `FBbf` and passes every check of that format; anything
    /// else is read as RedisBloom's (exactly `20 + 53·n` bytes, see `redisbloom.rs`).
    /// The two formats' lengths coincide only at 1504 bytes (28 RedisBloom links,
    /// 37 ferrobloom links), where a RedisBloom header would also need a total item
    /// count whose low bytes spell the magic and version.
    pub fn from_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        if bytes.starts_with(&HEADER_MAGIC) {
            match Self::from_native_header(bytes, limits) {
                Ok(c) => return Ok(c),
                Err(e) => return Self::from_rb_header(bytes, limits).map_err(|_| e),
            }
        }
        Self::from_rb_header(bytes, limits)
    }

    /// Reads ferrobloom's own header only (RDB payloads record which format
    /// their header has).
    pub fn from_native_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        Self::from_native_header_as(bytes, limits, HeaderRole::Chain)
    }

    /// [`from_native_header`](Self::from_native_header) for a header of the
    /// given role.
    pub(crate) fn from_native_header_as(
        bytes: &[u8],
        limits: &Limits,
        role: HeaderRole,
    ) -> Result<Self, BloomError> {
        let (total, expansion, opts, shapes) = Self::parse_native_header(bytes, limits, role)?;
        let mut chain = Self::build(total, expansion, None, shapes)?;
        chain.opts = opts;
        Ok(chain)
    }

    /// The byte lengths of the links of a windowed filter's generation header
    /// (ferrobloom's format, checked as a generation's: see [`HeaderRole`]).
    pub(crate) fn generation_link_bytes(
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<Vec<u64>, BloomError> {
        Self::parse_native_header(bytes, limits, HeaderRole::Generation)
            .map(|(_, _, _, s)| s.iter().map(|(s, _)| s.storage).collect())
    }

    /// The byte lengths of the links a header describes, checked completely as
    /// [`from_header`](Self::from_header) checks it, without allocating them
    /// (so a payload's data can be checked against its header first).
    pub fn header_link_bytes(
        bytes: &[u8],
        limits: &Limits,
        redisbloom: Option<bool>,
    ) -> Result<Vec<u64>, BloomError> {
        let native =
            || Self::parse_native_header(bytes, limits, HeaderRole::Chain).map(|(_, _, _, s)| s);
        let rb = || Self::parse_rb_header(bytes, limits).map(|(_, _, s)| s);
        let shapes = match redisbloom {
            Some(false) => native()?,
            Some(true) => rb()?,
            None if bytes.starts_with(&HEADER_MAGIC) => {
                native().or_else(|e| rb().map_err(|_| e))?
            }
            None => rb()?,
        };
        Ok(shapes.iter().map(|(s, _)| s.storage).collect())
    }

    /// Allocates the zeroed links of a checked header.
    pub(super) fn build(
        total: u64,
        expansion: u32,
        rb: Option<RbChain>,
        shapes: Vec<(LinkShape, u64)>,
    ) -> Result<Self, BloomError> {
        let mut links = Vec::new();
        links
            .try_reserve_exact(shapes.len())
            .map_err(|_| BloomError::AllocFailed)?;
        for (shape, items) in shapes {
            let mut link = Link::new(shape)?;
            link.items = items;
            links.push(link);
        }
        Ok(BloomChain {
            links,
            items: total,
            expansion,
            rb,
            opts: ChainOptions::default(),
            pending_shape: None,
            plan: None,
        })
    }

    /// Checks ferrobloom's header (version 1 or 2) completely:
    /// `(total, expansion, options, links)`.
    #[allow(clippy::type_complexity)]
    pub(super) fn parse_native_header(
        bytes: &[u8],
        limits: &Limits,
        role: HeaderRole,
    ) -> Result<(u64, u32, ChainOptions, Vec<(LinkShape, u64)>), BloomError> {
        let mut r = Reader::new(bytes);
        if r.take(4)? != HEADER_MAGIC {
            return Err(BloomError::BadHeader("bad magic"));
        }
        let version = r.u8()?;
        if version != HEADER_VERSION_BASE && version != HEADER_VERSION_OPTIONS {
            return Err(BloomError::BadHeader("unknown header version"));
        }
        if r.take(3)? != [0, 0, 0] {
            return Err(BloomError::BadHeader("reserved bytes set"));
        }
        let total = r.u64()?;
        let expansion = r.u32()?;
        let n = r.u32()?;
        let mut opts = ChainOptions::default();
        let mut fixed = HEADER_FIXED;
        if version == HEADER_VERSION_OPTIONS {
            fixed += HEADER_OPTIONS;
            let tightening = r.f64()?;
            if !(tightening > 0.0 && tightening < 1.0) {
                return Err(BloomError::BadHeader("bad tightening ratio"));
            }
            let flags = r.u8()?;
            if flags & !FLAG_SEEDED != 0 || r.take(7)? != [0; 7] {
                return Err(BloomError::BadHeader("reserved bytes set"));
            }
            let mut seed = [0u8; 32];
            seed.copy_from_slice(r.take(32)?);
            if flags & FLAG_SEEDED == 0 && seed != [0; 32] {
                return Err(BloomError::BadHeader("seed bytes without the seeded flag"));
            }
            opts = ChainOptions {
                tightening,
                seed: (flags & FLAG_SEEDED != 0).then_some(seed),
            };
            if opts.is_default() {
                return Err(BloomError::BadHeader(
                    "version 2 header with version 1 options",
                ));
            }
        }
        if expansion > MAX_EXPANSION {
            return Err(BloomError::BadHeader(EXPANSION_TOO_LARGE));
        }
        if n == 0 || n > MAX_LINKS_CEILING {
            return Err(BloomError::BadHeader("bad number of links"));
        }
        if expansion == 0 && n != 1 {
            return Err(BloomError::BadHeader(
                "non-scaling filter with several links",
            ));
        }
        if bytes.len() != fixed + LINK_RECORD * n as usize {
            return Err(BloomError::BadHeader("header length does not match links"));
        }
        let mut shapes = Vec::new();
        shapes
            .try_reserve_exact(n as usize)
            .map_err(|_| BloomError::AllocFailed)?;
        let mut sum_items: u64 = 0;
        let mut mem = CHAIN_OVERHEAD;
        let mut prev_entries: Option<u64> = None;
        for _ in 0..n {
            let entries = r.u64()?;
            let items = r.u64()?;
            let error = f64::from_bits(r.u64()?);
            let bits = r.u64()?;
            let hashes = r.u32()?;
            let layout = r.u8()?;
            if r.take(3)? != [0, 0, 0] {
                return Err(BloomError::BadHeader("reserved bytes set"));
            }
            // Counts are replied as signed 64-bit integers: no real filter
            // holds 2^63 items. A link's items exceed its entries only after
            // a merge that accepted an overfilled union (`bloom/merge.rs`).
            if entries == 0 || entries > i64::MAX as u64 || items > i64::MAX as u64 {
                return Err(BloomError::BadHeader("bad link capacity or fill"));
            }
            if !(error > 0.0 && error < 1.0) {
                return Err(BloomError::BadHeader("bad link error rate"));
            }
            if bits == 0 || bits % 64 != 0 || bits >= 1 << 62 {
                return Err(BloomError::BadHeader("bad link bit count"));
            }
            if hashes == 0 || hashes > MAX_HASHES {
                return Err(BloomError::BadHeader("bad link hash count"));
            }
            let layout = BloomLayout::from_code(layout)
                .filter(|l| *l != BloomLayout::RedisBloom)
                .ok_or(BloomError::BadHeader("unknown link layout"))?;
            if matches!(layout, BloomLayout::Blocked | BloomLayout::Paired) && bits % LINE_BITS != 0
            {
                return Err(BloomError::BadHeader("blocked link with a partial block"));
            }
            // What no command creates: a link whose capacity its bits cannot
            // hold at its error rate (every layout's sizing gives at least
            // `floor(entries · |ln error| / ln² 2)` bits), a plain chain's
            // first link above BF.RESERVE's capacity, or a later link more
            // than the expansion times the one before it (module doc of
            // `bloom.rs`, "Bounds"). Such a header would make the filter's
            // growth size links from a count it never held.
            let bpe = error.ln().abs() / LN2_SQUARED;
            if entries as f64 * bpe > bits as f64 * (1.0 + 1e-9) + 64.0 {
                return Err(BloomError::BadHeader(CAPACITY_ABOVE_BITS));
            }
            if role == HeaderRole::Chain {
                match prev_entries {
                    None if entries > MAX_CAPACITY => {
                        return Err(BloomError::BadHeader(CAPACITY_TOO_LARGE));
                    }
                    Some(p) if entries > p.saturating_mul(u64::from(expansion.max(1))) => {
                        return Err(BloomError::BadHeader(LINK_ABOVE_GROWTH));
                    }
                    _ => {}
                }
            }
            prev_entries = Some(entries);
            sum_items = sum_items
                .checked_add(items)
                .ok_or(BloomError::BadHeader("item count overflow"))?;
            mem = mem.saturating_add(LINK_OVERHEAD + bits / 8);
            shapes.push((
                LinkShape {
                    entries,
                    error,
                    bits,
                    hashes,
                    layout,
                    bpe,
                    n2: 0,
                    storage: bits / 8,
                },
                items,
            ));
        }
        if sum_items != total {
            return Err(BloomError::BadHeader("link items do not add up"));
        }
        if n > limits.max_links.min(MAX_LINKS_CEILING) {
            return Err(BloomError::MaxLinks);
        }
        if mem > limits.max_bytes {
            return Err(BloomError::MemoryCap);
        }
        Ok((total, expansion, opts, shapes))
    }

    /// SCANDUMP data: for iterator `iter >= 1`, the chunk starting at byte
    /// `iter - 1` of the concatenated link bytes, never spanning two links and at
    /// most [`SCANDUMP_CHUNK`] long, with the iterator to ask for next
    /// (`iter + len`). `None` past the end (and for `iter < 1`).
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        links_scandump_chunk(self.links.iter(), iter)
    }

    /// Visits every SCANDUMP data chunk in order, as `(iterator returned with
    /// the chunk, bytes)`, in time linear in the filter's size.
    pub fn for_each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        links_for_each_chunk(self.links.iter(), f)
    }

    /// Fills every link from a stream of chunks in SCANDUMP order: `read` is
    /// called with each chunk's destination (its length is the chunk's).
    pub fn fill_chunks<E>(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        links_fill_chunks(self.links.iter_mut(), read)
    }

    /// LOADCHUNK data: `iter` is the iterator SCANDUMP returned *with* `data`, so
    /// the data covers bytes `iter - 1 - len .. iter - 1`.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        links_load_chunk(self.links.iter_mut(), iter, data)
    }
}

// The chunk stream of a sequence of links, written once for every filter made of
// links: a chain's own, and a windowed filter's generations' links in order.

/// [`BloomChain::scandump_chunk`] over `links` in order.
/// Appends one link record (40 bytes, see [`BloomChain::encode_header`]).
pub(super) fn write_link_record(out: &mut Vec<u8>, shape: &LinkShape, items: u64) {
    out.extend_from_slice(&shape.entries.to_le_bytes());
    out.extend_from_slice(&items.to_le_bytes());
    out.extend_from_slice(&shape.error.to_bits().to_le_bytes());
    out.extend_from_slice(&shape.bits.to_le_bytes());
    out.extend_from_slice(&shape.hashes.to_le_bytes());
    out.push(shape.layout.code());
    out.extend_from_slice(&[0, 0, 0]);
}

pub(crate) fn links_scandump_chunk<'a>(
    links: impl Iterator<Item = &'a Link>,
    iter: i64,
) -> Option<(i64, &'a [u8])> {
    let mut offset = u64::try_from(iter.checked_sub(1)?).ok()?;
    for link in links {
        let b = link.shape().bytes();
        if offset >= b {
            offset -= b;
            continue;
        }
        let start = usize::try_from(offset).ok()?;
        let rest = link.data().get(start..)?;
        let len = rest.len().min(SCANDUMP_CHUNK as usize);
        let chunk = rest.get(..len)?;
        let next = iter.checked_add(i64::try_from(len).ok()?)?;
        return Some((next, chunk));
    }
    None
}

/// [`BloomChain::for_each_chunk`] over `links` in order.
pub(crate) fn links_for_each_chunk<'a>(
    links: impl Iterator<Item = &'a Link>,
    mut f: impl FnMut(i64, &[u8]),
) {
    let mut iter = 1i64;
    for link in links {
        for piece in link.data().chunks(SCANDUMP_CHUNK as usize) {
            iter = iter.saturating_add(piece.len() as i64);
            f(iter, piece);
        }
    }
}

/// [`BloomChain::fill_chunks`] over `links` in order.
pub(crate) fn links_fill_chunks<'a, E>(
    links: impl Iterator<Item = &'a mut Link>,
    mut read: impl FnMut(&mut [u8]) -> Result<(), E>,
) -> Result<(), E> {
    for link in links {
        for piece in link.data_mut().chunks_mut(SCANDUMP_CHUNK as usize) {
            read(piece)?;
        }
    }
    Ok(())
}

/// [`BloomChain::load_chunk`] over `links` in order.
pub(crate) fn links_load_chunk<'a>(
    links: impl Iterator<Item = &'a mut Link>,
    iter: i64,
    data: &[u8],
) -> Result<(), BloomError> {
    // RedisBloom 2.8's checks, in its order (`SBChain_LoadEncodedChunk`):
    // an iterator below the chunk's length is bad data; a chunk ending
    // before byte 1 has no link; an empty chunk inside a link loads nothing.
    let len = data.len() as u64;
    let iter = u64::try_from(iter)
        .ok()
        .filter(|&i| i > 0 && i >= len)
        .ok_or(BloomError::BadChunk)?;
    let mut offset = (iter - len)
        .checked_sub(1)
        .ok_or(BloomError::NoLinkForOffset)?;
    for link in links {
        let b = link.shape().bytes();
        if offset >= b {
            offset -= b;
            continue;
        }
        let start = usize::try_from(offset).map_err(|_| BloomError::ChunkTooBig)?;
        let stop = start
            .checked_add(data.len())
            .ok_or(BloomError::ChunkTooBig)?;
        let dst = link
            .data_mut()
            .get_mut(start..stop)
            .ok_or(BloomError::ChunkTooBig)?;
        dst.copy_from_slice(data);
        return Ok(());
    }
    Err(BloomError::NoLinkForOffset)
}

/// A bounds-checked little-endian reader for headers.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], BloomError> {
        if self.buf.len() < n {
            return Err(BloomError::BadHeader("header truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }
    pub(crate) fn u8(&mut self) -> Result<u8, BloomError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, BloomError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, BloomError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    pub(crate) fn f64(&mut self) -> Result<f64, BloomError> {
        Ok(f64::from_bits(self.u64()?))
    }
}
