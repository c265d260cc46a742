//! Bloom filters migrated from RedisBloom: its link sizing, bit indexing and
//! header format, so that a filter that came from RedisBloom answers, grows and
//! dumps exactly as it did there (RedisBloom 2.8.2,
//! <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/deps/bloom/bloom.c>: hashing and
//! link sizing; `src/sb.c`: the chain and its SCANDUMP header; `src/rebloom.c`:
//! the RDB encoding and `BFMemUsage`).
//!
//! # Hashing and bit indexing
//! The chain's options select the hash ([`HashScheme::Murmur64`] with FORCE64,
//! else the 32-bit [`HashScheme::Murmur32`] of RedisBloom 1.x), giving `(a, b)`.
//! Probe `i` of a link is bit `(a + i·b) mod M` (64-bit wrapping sum), byte
//! `x >> 3`, bit `x & 7`, with `M = 2^n2` when the link has `n2 > 0` (RedisBloom
//! 1.x's power-of-two links) and `M = bits` otherwise. RedisBloom's 32-bit and
//! 64-bit index functions compute the same value for every `n2 <= 63`.
//!
//! # Growth
//! A new link gets `entries_last · growth` entries at half the last error rate,
//! sized by [`LinkShape::redisbloom`] with the chain's options (NOROUND: no
//! rounding; without it, RedisBloom 1.x's power-of-two rounding whose spare bits
//! become extra capacity). NO_SCALING filters refuse items when full.
//!
//! # Header (RedisBloom's SCANDUMP header; written for these filters)
//! Packed little-endian, `20 + 53·n` bytes: `u64 total items, u32 links n,
//! u32 options, u32 growth`, then per link, oldest first: `u64 bytes, u64 bits,
//! u64 items, f64 error, f64 bpe, u32 hashes, u64 entries, u8 n2`. The data
//! chunks are the links' bytes, exactly as in ferrobloom's own format.
//!
//! Loading checks what memory safety and bounded work need, and what every
//! filter RedisBloom writes satisfies: error rate in (0, 1), `bpe` finite and
//! positive, 1 to [`RB_MAX_HASHES`] hashes, `n2 <= 63`, a modulus of at least one
//! bit that fits in the link's bytes, known options, at most
//! [`MAX_LINKS_CEILING`] links, a total equal to the links' items, and the
//! caller's limits. (RedisBloom's own LOADCHUNK also requires `bits = 8·bytes`
//! and `hashes = ceil(ln 2 · bpe)`; its RDB loader does not, and links from
//! RedisBloom 1.x files break the first, so neither is required here.)

use super::*;
use crate::rdb::RdbRead;

/// RedisBloom's option bits (`deps/bloom/bloom.h`, `src/sb.h`).
pub const OPT_NOROUND: u32 = 1;
pub const OPT_ENTS_IS_BITS: u32 = 2;
pub const OPT_FORCE64: u32 = 4;
pub const OPT_NO_SCALING: u32 = 8;
const OPT_ALL: u32 = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING;
/// Hash functions a RedisBloom link may have: its chains have no link limit,
/// and `k` grows by about one per link (about 1000 at RedisBloom's RDB limit of
/// 999 links).
pub const RB_MAX_HASHES: u32 = 1100;
const RB_HEADER_FIXED: usize = 20;
const RB_LINK_RECORD: usize = 53;

/// What a RedisBloom chain carries beyond ferrobloom's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RbChain {
    /// RedisBloom's option bits (`OPT_*`).
    pub options: u32,
    /// Growth factor (kept even for NO_SCALING filters, as RedisBloom does).
    pub growth: u32,
}

impl RbChain {
    /// The chain's hashing: [`HashScheme::Murmur64`] with `OPT_FORCE64`, else
    /// RedisBloom 1.x's [`HashScheme::Murmur32`].
    pub fn scheme(&self) -> HashScheme {
        if self.options & OPT_FORCE64 != 0 {
            HashScheme::Murmur64
        } else {
            HashScheme::Murmur32
        }
    }

    /// Whether the chain adds a link when its newest is full (`OPT_NO_SCALING`
    /// unset).
    pub fn scaling(&self) -> bool {
        self.options & OPT_NO_SCALING == 0
    }

    /// The link RedisBloom appends after a full link of `entries` at `error`.
    pub(super) fn next_link(&self, entries: u64, error: f64) -> Result<LinkShape, BloomError> {
        if !self.scaling() {
            return Err(BloomError::Full);
        }
        let entries = entries
            .checked_mul(u64::from(self.growth))
            .ok_or(BloomError::MemoryCap)?;
        LinkShape::redisbloom(entries, error * TIGHTENING_RATIO, self.options)
    }
}

/// Bit `g mod m` (a mask when `m` is a power of two); `m >= 1` is checked on load.
#[inline(always)]
pub(super) fn index(g: u64, m: u64) -> u64 {
    if m.is_power_of_two() {
        g & (m - 1)
    } else {
        g % m.max(1)
    }
}

/// `logb(x)` for a positive normal or subnormal double: the unbiased exponent.
fn logb(x: f64) -> i64 {
    let exp = ((x.to_bits() >> 52) & 0x7ff) as i64;
    if exp == 0 {
        // Subnormal: the exponent of the leading mantissa bit.
        let m = x.to_bits() & ((1u64 << 52) - 1);
        -1022 - i64::from(m.leading_zeros()) + 11
    } else {
        exp - 1023
    }
}

impl LinkShape {
    /// Sizes a link exactly as RedisBloom's `bloom_init(entries, error, options)`.
    pub fn redisbloom(entries: u64, error: f64, options: u32) -> Result<Self, BloomError> {
        if entries < 1 || !(error > 0.0 && error < 1.0) {
            return Err(BloomError::InvalidParams(
                "capacity or error rate out of range",
            ));
        }
        let bpe = (error.ln() / LN2_SQUARED).abs();
        let mut entries = entries;
        let (bits, n2) = if options & OPT_ENTS_IS_BITS != 0 {
            if entries > 63 {
                return Err(BloomError::InvalidParams("bit exponent out of range"));
            }
            let bits = 1u64 << entries;
            let n2 = entries as u8;
            entries = (bits as f64 / bpe) as u64;
            (bits, n2)
        } else if options & OPT_NOROUND != 0 {
            (((entries as f64 * bpe) as u64).max(1), 0)
        } else {
            let want = entries as f64 * bpe;
            if !want.is_finite() {
                return Err(BloomError::MemoryCap);
            }
            let bn2 = logb(want);
            if bn2 >= 63 {
                return Err(BloomError::MemoryCap);
            }
            let n2 = (bn2 + 1).max(0) as u8;
            let bits = 1u64 << n2;
            let spare = (bits as f64 - want) as u64;
            entries = entries.saturating_add((spare as f64 / bpe) as u64);
            (bits, n2)
        };
        let bytes = if bits % 64 != 0 {
            (bits / 64 + 1) * 8
        } else {
            bits / 8
        };
        if bytes >= 1 << 59 {
            return Err(BloomError::MemoryCap);
        }
        let hashes = (LN2 * bpe).ceil();
        if !(hashes >= 1.0 && hashes <= f64::from(RB_MAX_HASHES)) {
            return Err(BloomError::InvalidParams("error rate too small"));
        }
        Ok(LinkShape {
            entries,
            error,
            bits: bytes * 8,
            hashes: hashes as u32,
            layout: BloomLayout::RedisBloom,
            bpe,
            n2,
            storage: bytes,
        })
    }

    /// RedisBloom's index modulus: `2^n2`, or `bits` when `n2` is 0.
    #[inline(always)]
    pub fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << (self.n2 & 63)
        } else {
            self.bits
        }
    }

    /// The checks of the module doc, for one link.
    fn check_redisbloom(&self) -> Result<(), BloomError> {
        let bad = BloomError::BadHeader;
        if !(self.error > 0.0 && self.error < 1.0) {
            return Err(bad("bad link error rate"));
        }
        if !(self.bpe.is_finite() && self.bpe > 0.0) {
            return Err(bad("bad link bits per entry"));
        }
        if self.hashes == 0 || self.hashes > RB_MAX_HASHES {
            return Err(bad("bad link hash count"));
        }
        if self.n2 > 63 {
            return Err(bad("bad link power of two"));
        }
        if self.storage >= 1 << 59 {
            return Err(BloomError::MemoryCap);
        }
        let m = self.modulus();
        if m == 0 || m > self.storage * 8 {
            return Err(bad("link bits do not fit its bytes"));
        }
        Ok(())
    }
}

/// One link as RedisBloom persists it (RDB fields or a header record).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RbLinkFields {
    pub entries: u64,
    pub error: f64,
    pub hashes: u32,
    pub bpe: f64,
    /// The stored bit count (RedisBloom 1.x stored 0 for power-of-two links).
    pub bits: u64,
    pub n2: u8,
    /// Byte length of the link's bit array.
    pub bytes: u64,
    /// Items the link accepted.
    pub items: u64,
}

impl RbLinkFields {
    fn shape(&self) -> LinkShape {
        LinkShape {
            entries: self.entries,
            error: self.error,
            bits: self.bits,
            hashes: self.hashes,
            layout: BloomLayout::RedisBloom,
            bpe: self.bpe,
            n2: self.n2,
            storage: self.bytes,
        }
    }
}

impl BloomChain {
    /// Checks a RedisBloom chain's own fields.
    fn rb_fields(
        options: u64,
        growth: u64,
        nlinks: u64,
        limits: &Limits,
    ) -> Result<RbChain, BloomError> {
        let options = u32::try_from(options)
            .ok()
            .filter(|o| o & !OPT_ALL == 0)
            .ok_or(BloomError::BadHeader("unknown options"))?;
        let growth = u32::try_from(growth).map_err(|_| BloomError::BadHeader("bad growth"))?;
        if nlinks == 0 || nlinks > u64::from(MAX_LINKS_CEILING) {
            return Err(BloomError::BadHeader("bad number of links"));
        }
        if nlinks > u64::from(limits.max_links.min(MAX_LINKS_CEILING)) {
            return Err(BloomError::MaxLinks);
        }
        Ok(RbChain { options, growth })
    }

    /// A new filter as RedisBloom's `SB_NewChain` makes it for BF.RESERVE /
    /// BF.ADD / BF.INSERT (options NOROUND | FORCE64, plus NO_SCALING when
    /// `expansion` is 0, then recording `nonscaling_growth`: RedisBloom's
    /// default 2, or the EXPANSION its BF.INSERT got beside NONSCALING).
    pub fn new_redisbloom(
        capacity: u64,
        error: f64,
        expansion: u32,
        nonscaling_growth: u32,
        limits: &Limits,
    ) -> Result<Self, BloomError> {
        let scaling = expansion != 0;
        let rb = RbChain {
            options: OPT_NOROUND | OPT_FORCE64 | if scaling { 0 } else { OPT_NO_SCALING },
            growth: if scaling {
                expansion
            } else {
                nonscaling_growth
            },
        };
        let error = if scaling {
            error * TIGHTENING_RATIO
        } else {
            error
        };
        let shape = LinkShape::redisbloom(capacity, error, rb.options)?;
        let mut chain = Self::rb_finish(rb, 0, Vec::new());
        chain.push_link(shape, limits)?;
        Ok(chain)
    }

    /// RedisBloom keeps the total equal to the sum of its links' items (its
    /// LOADCHUNK checks it); so does every chain here, whatever path it came by.
    fn check_total(total: u64, links: &[Link]) -> Result<(), BloomError> {
        let sum = links
            .iter()
            .try_fold(0u64, |acc, l| acc.checked_add(l.items))
            .ok_or(BloomError::BadHeader("item count overflow"))?;
        if sum != total {
            return Err(BloomError::BadHeader("link items do not add up"));
        }
        Ok(())
    }

    fn rb_finish(rb: RbChain, total: u64, links: Vec<Link>) -> Self {
        BloomChain {
            links,
            items: total,
            expansion: if rb.scaling() { rb.growth } else { 0 },
            rb: Some(rb),
            opts: ChainOptions::default(),
            pending_shape: None,
            plan: None,
        }
    }

    /// Loads RedisBloom's RDB payload of `MBbloom--` encoding version 0-4, as
    /// its `BFRdbLoad` reads it: `total, nlinks`, then `options` from version 2,
    /// `growth` from version 4 (else 2), then per link `entries, error, hashes,
    /// bpe`, then `bits, n2` from version 1 (version 0: `bits = entries·bpe`),
    /// then `buffer, items`. Each link is checked before its storage (the size
    /// of the buffer received) is allocated.
    pub fn from_redisbloom_rdb<R: RdbRead>(
        encver: i32,
        r: &mut R,
        limits: &Limits,
    ) -> Result<Self, BloomError> {
        let trunc = BloomError::BadHeader("truncated payload");
        if !(0..=4).contains(&encver) {
            return Err(BloomError::BadHeader("unknown encoding version"));
        }
        let total = r.unsigned().ok_or(trunc.clone())?;
        let nlinks = r.unsigned().ok_or(trunc.clone())?;
        let options = if encver >= 2 {
            r.unsigned().ok_or(trunc.clone())?
        } else {
            0
        };
        let growth = if encver >= 4 {
            r.unsigned().ok_or(trunc.clone())?
        } else {
            2
        };
        let rb = Self::rb_fields(options, growth, nlinks, limits)?;
        let mut links = Vec::new();
        links
            .try_reserve_exact(nlinks as usize)
            .map_err(|_| BloomError::AllocFailed)?;
        let mut mem = CHAIN_OVERHEAD;
        for _ in 0..nlinks {
            let entries = r.unsigned().ok_or(trunc.clone())?;
            let error = r.double().ok_or(trunc.clone())?;
            let hashes = r.unsigned().ok_or(trunc.clone())?;
            let bpe = r.double().ok_or(trunc.clone())?;
            let (bits, n2) = if encver == 0 {
                ((entries as f64 * bpe) as u64, 0)
            } else {
                let bits = r.unsigned().ok_or(trunc.clone())?;
                let n2 = r.unsigned().ok_or(trunc.clone())?;
                (bits, n2)
            };
            let buf = r.buffer().ok_or(trunc.clone())?;
            let data = buf.as_ref();
            let items = r.unsigned().ok_or(trunc.clone())?;
            let fields = RbLinkFields {
                entries,
                error,
                hashes: u32::try_from(hashes).unwrap_or(u32::MAX),
                bpe,
                bits,
                n2: u8::try_from(n2).unwrap_or(u8::MAX),
                bytes: data.len() as u64,
                items,
            };
            let shape = fields.shape();
            shape.check_redisbloom()?;
            mem = mem.saturating_add(LINK_OVERHEAD + shape.storage);
            if mem > limits.max_bytes {
                return Err(BloomError::MemoryCap);
            }
            let mut link = Link::new(shape)?;
            link.items = items;
            link.data_mut().copy_from_slice(data);
            links.push(link);
        }
        Self::check_total(total, &links)?;
        Ok(Self::rb_finish(rb, total, links))
    }

    /// RedisBloom's SCANDUMP header (module doc).
    pub(super) fn encode_rb_header(&self, rb: &RbChain) -> Vec<u8> {
        let mut out = Vec::with_capacity(RB_HEADER_FIXED + RB_LINK_RECORD * self.links.len());
        out.extend_from_slice(&self.items.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        out.extend_from_slice(&rb.options.to_le_bytes());
        out.extend_from_slice(&rb.growth.to_le_bytes());
        for l in &self.links {
            let s = &l.shape;
            out.extend_from_slice(&s.storage.to_le_bytes());
            out.extend_from_slice(&s.bits.to_le_bytes());
            out.extend_from_slice(&l.items.to_le_bytes());
            out.extend_from_slice(&s.error.to_bits().to_le_bytes());
            out.extend_from_slice(&s.bpe.to_bits().to_le_bytes());
            out.extend_from_slice(&s.hashes.to_le_bytes());
            out.extend_from_slice(&s.entries.to_le_bytes());
            out.push(s.n2);
        }
        out
    }

    /// Reads RedisBloom's SCANDUMP header (module doc) into a zeroed chain;
    /// every link is checked, and the total size bounded, before allocating.
    pub fn from_rb_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        let (rb, total, shapes) = Self::parse_rb_header(bytes, limits)?;
        let expansion = if rb.scaling() { rb.growth } else { 0 };
        Self::build(total, expansion, Some(rb), shapes)
    }

    /// Checks RedisBloom's header completely: `(chain fields, total, links)`.
    #[allow(clippy::type_complexity)]
    pub(super) fn parse_rb_header(
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<(RbChain, u64, Vec<(LinkShape, u64)>), BloomError> {
        let mut r = Reader::new(bytes);
        let total = r.u64()?;
        let nlinks = r.u32()?;
        let options = r.u32()?;
        let growth = r.u32()?;
        let expected = (nlinks as usize)
            .checked_mul(RB_LINK_RECORD)
            .and_then(|n| n.checked_add(RB_HEADER_FIXED));
        if expected != Some(bytes.len()) {
            return Err(BloomError::BadHeader("header length does not match links"));
        }
        let rb = Self::rb_fields(
            u64::from(options),
            u64::from(growth),
            u64::from(nlinks),
            limits,
        )?;
        let mut shapes = Vec::new();
        shapes
            .try_reserve_exact(nlinks as usize)
            .map_err(|_| BloomError::AllocFailed)?;
        let mut mem = CHAIN_OVERHEAD;
        for _ in 0..nlinks {
            let f = RbLinkFields {
                bytes: r.u64()?,
                bits: r.u64()?,
                items: r.u64()?,
                error: r.f64()?,
                bpe: r.f64()?,
                hashes: r.u32()?,
                entries: r.u64()?,
                n2: r.u8()?,
            };
            let shape = f.shape();
            shape.check_redisbloom()?;
            mem = mem.saturating_add(LINK_OVERHEAD + shape.storage);
            shapes.push((shape, f.items));
        }
        if mem > limits.max_bytes {
            return Err(BloomError::MemoryCap);
        }
        let sum = shapes
            .iter()
            .try_fold(0u64, |acc, (_, items)| acc.checked_add(*items));
        if sum != Some(total) {
            return Err(BloomError::BadHeader("link items do not add up"));
        }
        Ok((rb, total, shapes))
    }
}
