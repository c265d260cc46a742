//! A windowed filter's encoding: the `FBbw` header (documented field by field on
//! [`Window::encode_header`]) and its data chunks, which are every generation's
//! links in order, written and read as a plain chain's (`bloom/encoding.rs`).

use super::{
    Generation, Window, HEADER_FIXED, MAX_PARTS, MAX_WINDOW_MS, UNBOUNDED, WINDOW_MAGIC,
    WINDOW_VERSION_BASE,
};
use crate::bloom::{
    links_fill_chunks, links_for_each_chunk, links_load_chunk, links_scandump_chunk, BloomChain,
    BloomError, BloomLayout, HeaderRole, Limits, Reader, CAPACITY_TOO_LARGE, CHAIN_OVERHEAD,
    EXPANSION_TOO_LARGE, HEADER_MAGIC, LINK_OVERHEAD, MAX_CAPACITY, MAX_EXPANSION,
    MAX_LINKS_CEILING,
};

impl Window {
    /// Encodes the window's shape, clock and generations (not their bits).
    ///
    /// Header format `FBbw` version 1, all integers little-endian, no padding:
    ///
    /// | offset | size | field |
    /// |---|---|---|
    /// | 0 | 4 | magic `FBbw` |
    /// | 4 | 1 | format version = 1 |
    /// | 5 | 1 | generations per window `K` (1..=64; 4 today) |
    /// | 6 | 1 | layout of new links (4 = classic, each link's derivation by the rule of `bloom/sizing.rs`; 0 = classic with plain double hashing, windows created before code 4; 1 = blocked, 3 = paired) |
    /// | 7 | 1 | reserved, zero |
    /// | 8 | 8 | window in milliseconds (u64, 1..=315,576,000,000) |
    /// | 16 | 8 | capacity per window (u64, 1..=2^30, BF.RESERVE's bound) |
    /// | 24 | 8 | error rate (f64 bits, strictly between 0 and 1) |
    /// | 32 | 4 | expansion (u32, 0 = non-scaling, at most 32768) |
    /// | 36 | 4 | number of generations `g` (u32, 0..=K+1) |
    /// | 40 | 8 | time of the newest change, ms since the Unix epoch (u64) |
    /// | 48 | … | `g` generation records, oldest first |
    ///
    /// Generation record: `+0` index (u64: the generation covers the times `t`
    /// with `floor(K·t/W) = index`; strictly increasing, at most the index of the
    /// newest change's time, and live at that time), `+8` length `n` (u32) of
    /// the next field, `+12` the generation's links as a plain `FBbf` version-1
    /// header of `n` bytes (documented on `BloomChain::encode_header`; its
    /// expansion field is `max(expansion, 1)`). The reader also takes a
    /// version-2 plain header (valkey-bloom's options), which no command has
    /// ever written for a generation: windows refuse those options, and their
    /// generations are created without them.
    ///
    /// Times are absolute, so a filter loaded after its window has passed answers
    /// as empty. The data chunks that follow (RDB buffers, SCANDUMP chunks, AOF
    /// LOADCHUNKs) are each generation's link bytes in order.
    pub fn encode_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_FIXED + self.gens.len() * 128);
        out.extend_from_slice(&WINDOW_MAGIC);
        out.push(WINDOW_VERSION_BASE);
        out.push(u8::try_from(self.parts).unwrap_or(u8::MAX));
        out.push(self.layout.code());
        out.push(0);
        out.extend_from_slice(&self.window_ms.to_le_bytes());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        out.extend_from_slice(&self.error.to_bits().to_le_bytes());
        out.extend_from_slice(&self.expansion.to_le_bytes());
        out.extend_from_slice(&(self.gens.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.last_ms.to_le_bytes());
        for g in &self.gens {
            let h = g.chain.encode_header();
            out.extend_from_slice(&g.index.to_le_bytes());
            out.extend_from_slice(&(h.len() as u32).to_le_bytes());
            out.extend_from_slice(&h);
        }
        out
    }

    /// Checks a header completely without allocating the generations: the
    /// window (with no generations) and each generation's index and header.
    #[allow(clippy::type_complexity)]
    fn parse<'a>(
        bytes: &'a [u8],
        limits: &Limits,
    ) -> Result<(Window, Vec<(u64, &'a [u8])>, Vec<u64>), BloomError> {
        let mut r = Reader::new(bytes);
        if r.take(4)? != WINDOW_MAGIC {
            return Err(BloomError::BadHeader("bad magic"));
        }
        if r.u8()? != WINDOW_VERSION_BASE {
            return Err(BloomError::BadHeader("unknown header version"));
        }
        let parts = u32::from(r.u8()?);
        let layout = BloomLayout::from_code(r.u8()?)
            .filter(|l| *l != BloomLayout::RedisBloom)
            .ok_or(BloomError::BadHeader("unknown link layout"))?;
        if r.u8()? != 0 {
            return Err(BloomError::BadHeader("reserved bytes set"));
        }
        let window_ms = r.u64()?;
        let capacity = r.u64()?;
        let error = r.f64()?;
        let expansion = r.u32()?;
        let count = r.u32()?;
        let last_ms = r.u64()?;
        if parts == 0 || parts > MAX_PARTS {
            return Err(BloomError::BadHeader("bad generations per window"));
        }
        if window_ms == 0 || window_ms > MAX_WINDOW_MS {
            return Err(BloomError::BadHeader("bad window"));
        }
        if capacity == 0 {
            return Err(BloomError::BadHeader("bad capacity"));
        }
        // BF.RESERVE's bound, per window (the generations' links are checked
        // as a generation's: `HeaderRole::Generation`).
        if capacity > MAX_CAPACITY {
            return Err(BloomError::BadHeader(CAPACITY_TOO_LARGE));
        }
        if !(error > 0.0 && error < 1.0) {
            return Err(BloomError::BadHeader("bad error rate"));
        }
        if expansion > MAX_EXPANSION {
            return Err(BloomError::BadHeader(EXPANSION_TOO_LARGE));
        }
        if count > parts + 1 {
            return Err(BloomError::BadHeader("too many generations"));
        }
        let w = Window {
            window_ms,
            parts,
            capacity,
            error,
            expansion,
            layout,
            last_ms,
            ahead: 0,
            gens: Vec::new(),
            retired: Vec::new(),
            shapes: Default::default(),
            grown: Default::default(),
            plan: None,
        };
        let newest = w.gen_index(last_ms);
        let mut gens = Vec::new();
        gens.try_reserve_exact(count as usize)
            .map_err(|_| BloomError::AllocFailed)?;
        let mut lengths = Vec::new();
        let mut mem = CHAIN_OVERHEAD;
        let mut prev: Option<u64> = None;
        for _ in 0..count {
            let index = r.u64()?;
            let n = r.u32()? as usize;
            let h = r.take(n)?;
            if prev.is_some_and(|p| index <= p) {
                return Err(BloomError::BadHeader("generations out of order"));
            }
            if index > newest || !w.is_live(index, last_ms) {
                return Err(BloomError::BadHeader("generation outside the window"));
            }
            prev = Some(index);
            if !h.starts_with(&HEADER_MAGIC) {
                return Err(BloomError::BadHeader("bad generation header"));
            }
            let links = BloomChain::generation_link_bytes(h, &UNBOUNDED)?;
            if expansion == 0 && links.len() > 2 {
                return Err(BloomError::BadHeader(
                    "non-scaling generation with 3+ links",
                ));
            }
            // The plain header's expansion field (offset 16).
            let gen_exp = h
                .get(16..20)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_le_bytes);
            if gen_exp != Some(expansion.max(1)) {
                return Err(BloomError::BadHeader("generation expansion mismatch"));
            }
            for b in &links {
                mem = mem.saturating_add(LINK_OVERHEAD.saturating_add(*b));
            }
            lengths
                .try_reserve(links.len())
                .map_err(|_| BloomError::AllocFailed)?;
            lengths.extend_from_slice(&links);
            gens.push((index, h));
        }
        if r.remaining() != 0 {
            return Err(BloomError::BadHeader("header length does not match"));
        }
        if lengths.len() as u64 > u64::from(limits.max_links.min(MAX_LINKS_CEILING)) {
            return Err(BloomError::MaxLinks);
        }
        if mem > limits.max_bytes {
            return Err(BloomError::MemoryCap);
        }
        Ok((w, gens, lengths))
    }

    /// The byte lengths of every link a header describes, checked as
    /// [`Window::from_header`] checks it, allocating no bit array.
    pub fn header_link_bytes(bytes: &[u8], limits: &Limits) -> Result<Vec<u64>, BloomError> {
        Self::parse(bytes, limits).map(|(_, _, l)| l)
    }

    /// Validates a header completely, then allocates its zeroed generations.
    pub fn from_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        let (mut w, gens, _) = Self::parse(bytes, limits)?;
        w.gens
            .try_reserve_exact(gens.len())
            .map_err(|_| BloomError::AllocFailed)?;
        for (index, h) in gens {
            let chain = BloomChain::from_native_header_as(h, &UNBOUNDED, HeaderRole::Generation)?;
            w.gens.push(Generation { index, chain });
        }
        Ok(w)
    }

    /// SCANDUMP data for a *position* iterator (`1 + byte offset` into every
    /// generation's links joined, oldest generation first; see
    /// [`BloomChain::scandump_chunk`]): the addressing of the AOF rewrite's
    /// LOADCHUNKs (and of releases before [`Window::walk_chunk`]), exact for a
    /// filter that does not change between the chunks. A live walk uses
    /// [`Window::walk_chunk`].
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        links_scandump_chunk(self.gens.iter().flat_map(|g| g.chain.links()), iter)
    }

    /// SCANDUMP data for iterator 1 (the walk's start, which SCANDUMP answers
    /// with the header: the oldest generation held now) or a walk iterator
    /// (see [`walk_iter`]): the next chunk
    /// of the generation it names, from its byte `pos - 1` on, or the first
    /// chunk of the next generation held after it when that generation has no
    /// more bytes or was dropped since. `Ok(None)` past the newest generation.
    /// The chunk's iterator names its generation, so a generation dropped
    /// during the walk shifts nothing: its remaining chunks are skipped (what
    /// it held is no longer inside the window), and every other chunk lands
    /// where it was read. Refused: a position iterator other than 1, one naming no
    /// generation this filter can have had, a generation past the addressable
    /// 16 TiB.
    pub fn walk_chunk(&self, iter: i64) -> Result<Option<(i64, &[u8])>, BloomError> {
        let (index, pos) = if iter == 1 {
            match self.gens.first() {
                Some(g) => (g.index, 1),
                None => return Ok(None),
            }
        } else {
            let (residue, pos) = split_walk_iter(iter).ok_or(BloomError::BadChunk)?;
            (self.resolve(residue).ok_or(BloomError::BadChunk)?, pos)
        };
        for g in self.gens.iter().filter(|g| g.index >= index) {
            let from = if g.index == index { pos } else { 1 };
            let Ok(from) = i64::try_from(from) else {
                continue;
            };
            if let Some((next, chunk)) = links_scandump_chunk(g.chain.links().iter(), from) {
                let next = u64::try_from(next).map_err(|_| BloomError::BadChunk)?;
                let it = walk_iter(g.index, next).ok_or(BloomError::ChunkTooBig)?;
                return Ok(Some((it, chunk)));
            }
        }
        Ok(None)
    }

    /// The generation a walk iterator's residue names: the newest index
    /// `<= walk_ref()` with that residue (a walk's generations are at most
    /// `WALK_GENERATIONS - 1` older than the filter's newest change).
    fn resolve(&self, residue: u64) -> Option<u64> {
        let r = self.walk_ref();
        let back = r.wrapping_sub(residue) & WALK_RESIDUE_MASK;
        r.checked_sub(back)
    }

    /// One past the generation of the newest change: no generation held is
    /// newer than it.
    fn walk_ref(&self) -> u64 {
        self.gen_index(self.last_ms).saturating_add(1)
    }

    /// Visits every SCANDUMP data chunk in order (see
    /// [`BloomChain::for_each_chunk`]).
    pub fn for_each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        links_for_each_chunk(self.gens.iter().flat_map(|g| g.chain.links()), f)
    }

    /// Fills every generation's links from chunks in SCANDUMP order (see
    /// [`BloomChain::fill_chunks`]).
    pub fn fill_chunks<E>(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        links_fill_chunks(self.gens.iter_mut().flat_map(|g| g.chain.links_mut()), read)
    }

    /// LOADCHUNK data. A position iterator (the AOF rewrite's, and every
    /// release's before walk iterators) addresses the generations' links
    /// joined (see [`BloomChain::load_chunk`]). A walk iterator (see
    /// [`Window::walk_chunk`]) addresses one generation: a chunk of a
    /// generation this filter does not hold, or past the links it holds, was
    /// written to the source after the header was taken (a new generation, a
    /// new link) and is skipped, changing nothing; a chunk of a generation it
    /// holds must lie inside one of its links.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        let Some((residue, pos)) = split_walk_iter(iter) else {
            return links_load_chunk(
                self.gens.iter_mut().flat_map(|g| g.chain.links_mut()),
                iter,
                data,
            );
        };
        let len = data.len() as u64;
        let start = pos
            .checked_sub(1)
            .and_then(|p| p.checked_sub(len))
            .ok_or(BloomError::BadChunk)?;
        let Some(index) = self.resolve(residue) else {
            return Ok(());
        };
        let Some(g) = self.gens.iter_mut().find(|g| g.index == index) else {
            return Ok(());
        };
        let held: u64 = g.chain.links().iter().map(|l| l.shape().bytes()).sum();
        if start >= held {
            return Ok(());
        }
        let pos = i64::try_from(pos).map_err(|_| BloomError::BadChunk)?;
        links_load_chunk(g.chain.links_mut(), pos, data)
    }
}

/// Bit 62 of a walk iterator (SCANDUMP's iterators for windowed filters):
/// position iterators (`1 + byte offset`, the AOF rewrite's) stay below it.
pub const WALK_FLAG: u64 = 1 << 62;
/// Bits of a walk iterator's position (`1 + byte offset` inside one
/// generation's links joined, so a generation is addressable up to 16 TiB).
const WALK_POS_BITS: u32 = 44;
const WALK_POS_MASK: u64 = (1 << WALK_POS_BITS) - 1;
/// Generations a walk iterator's residue tells apart: a walk must end within
/// this many generations of its header (65,536 windows at `K = 4`).
pub const WALK_GENERATIONS: u64 = 1 << 18;
const WALK_RESIDUE_MASK: u64 = WALK_GENERATIONS - 1;

/// A walk iterator (a positive `i64`): bit 62 set, bits 44..62 the
/// generation's index modulo [`WALK_GENERATIONS`], bits 0..44 the position
/// `pos` (`1 + byte offset` in the generation's links joined; 1 ..= 2^44 - 1).
/// `None` for a position out of range.
pub fn walk_iter(index: u64, pos: u64) -> Option<i64> {
    if pos == 0 || pos > WALK_POS_MASK {
        return None;
    }
    i64::try_from(WALK_FLAG | ((index & WALK_RESIDUE_MASK) << WALK_POS_BITS) | pos).ok()
}

/// A walk iterator's `(residue, pos)`; `None` for a position iterator.
pub fn split_walk_iter(iter: i64) -> Option<(u64, u64)> {
    let u = u64::try_from(iter).ok()?;
    if u & WALK_FLAG == 0 {
        return None;
    }
    Some(((u >> WALK_POS_BITS) & WALK_RESIDUE_MASK, u & WALK_POS_MASK))
}

#[cfg(test)]
#[path = "tests/walk.rs"]
mod walk_tests;
