//! Loading a filter from its persisted payload (RDB encoding versions 5 and 6:
//! one header buffer, then the SCANDUMP data chunks as one buffer each), written
//! once and shared: the Redis `rdb_load` callback (RDB files, RESTORE, full
//! sync) calls [`load_payload`] with a closure that reads RDB string buffers,
//! and the fuzz targets call it with buffers cut from arbitrary bytes.

use super::bloom::{Limits, SCANDUMP_CHUNK};
use super::cuckoo::CuckooFilter;
use super::filter::{each_kind, BloomFilter};
use super::kind::BloomKind;
pub use super::rdb::RdbRead;

/// Which header format a payload carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderFormat {
    /// Either, told apart by the header itself (LOADCHUNK, fuzz targets).
    Any,
    /// ferrobloom's own (`FBbf` / `FBcf`).
    Native,
    /// RedisBloom's SCANDUMP header (filters migrated from RedisBloom).
    RedisBloom,
}

/// The scheme words of RDB encoding version 6 (each kind names its own in
/// `crate::kind`).
pub use super::kind::{SCHEME_NATIVE, SCHEME_REDISBLOOM, SCHEME_WINDOWED};

/// A filter that can be rebuilt from a header and its data chunks.
pub trait Payload: Sized {
    /// Its RDB scheme word (`SCHEME_*`).
    fn rdb_scheme(&self) -> u64;
    /// The header format a payload of scheme word `scheme` carries, `None`
    /// for a scheme this type has no kind of (refused: "unknown hash scheme").
    fn scheme_format(scheme: u64) -> Option<HeaderFormat>;
    /// Validates a header completely and allocates the zeroed filter it
    /// describes, within `limits` (Cuckoo filters use `limits.max_bytes` only).
    fn from_header(bytes: &[u8], limits: &Limits, format: HeaderFormat) -> Result<Self, String>;
    /// The data bytes of each link / sub-filter the header describes, after the
    /// same checks as [`from_header`](Self::from_header), allocating nothing.
    fn data_lengths(
        bytes: &[u8],
        limits: &Limits,
        format: HeaderFormat,
    ) -> Result<Vec<u64>, String>;
    /// Fills the data from chunks in SCANDUMP order (linear time): `read` is
    /// called with each chunk's destination.
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String>;
    /// Whether the filter keeps RedisBloom's hashing and header format.
    fn is_redisbloom(&self) -> bool;
    /// Loads RedisBloom's own RDB payload (encoding versions 0-4).
    fn from_redisbloom_rdb<R: RdbRead>(
        encver: i32,
        r: &mut R,
        limits: &Limits,
    ) -> Result<Self, String>;
    /// After a load, at clock time `now_ms`: a windowed filter whose newest
    /// change lies ahead of the clock goes on from it at the clock's rate
    /// (`Window::anchor`, the rule a server applies to every load); other
    /// filters have no time.
    fn anchor_clock(&mut self, _now_ms: u64) {}
}

impl Payload for BloomFilter {
    fn rdb_scheme(&self) -> u64 {
        if self.is_redisbloom() {
            SCHEME_REDISBLOOM
        } else {
            each_kind!(self, k => k.scheme_word())
        }
    }
    fn scheme_format(scheme: u64) -> Option<HeaderFormat> {
        match scheme {
            SCHEME_NATIVE | SCHEME_WINDOWED => Some(HeaderFormat::Native),
            SCHEME_REDISBLOOM => Some(HeaderFormat::RedisBloom),
            _ => None,
        }
    }
    fn from_header(bytes: &[u8], limits: &Limits, format: HeaderFormat) -> Result<Self, String> {
        match format {
            HeaderFormat::Any => BloomFilter::from_header(bytes, limits),
            HeaderFormat::Native => BloomFilter::from_native_header(bytes, limits),
            HeaderFormat::RedisBloom => BloomFilter::from_rb_header(bytes, limits),
        }
        .map_err(|e| format!("{e:?}"))
    }
    fn data_lengths(
        bytes: &[u8],
        limits: &Limits,
        format: HeaderFormat,
    ) -> Result<Vec<u64>, String> {
        BloomFilter::header_link_bytes(bytes, limits, format.redisbloom())
            .map_err(|e| format!("{e:?}"))
    }
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        BloomFilter::fill_chunks(self, read)
    }
    fn is_redisbloom(&self) -> bool {
        BloomFilter::is_redisbloom(self)
    }
    fn from_redisbloom_rdb<R: RdbRead>(
        encver: i32,
        r: &mut R,
        limits: &Limits,
    ) -> Result<Self, String> {
        crate::bloom::BloomChain::from_redisbloom_rdb(encver, r, limits)
            .map(BloomFilter::Chain)
            .map_err(|e| format!("{e:?}"))
    }
    fn anchor_clock(&mut self, now_ms: u64) {
        BloomFilter::anchor_clock(self, now_ms)
    }
}

impl Payload for CuckooFilter {
    fn rdb_scheme(&self) -> u64 {
        if self.is_redisbloom() {
            SCHEME_REDISBLOOM
        } else {
            SCHEME_NATIVE
        }
    }
    fn scheme_format(scheme: u64) -> Option<HeaderFormat> {
        match scheme {
            SCHEME_NATIVE => Some(HeaderFormat::Native),
            SCHEME_REDISBLOOM => Some(HeaderFormat::RedisBloom),
            _ => None,
        }
    }
    fn from_header(bytes: &[u8], limits: &Limits, format: HeaderFormat) -> Result<Self, String> {
        let (max, filters) = (limits.max_bytes, limits.max_filters);
        match format {
            HeaderFormat::Any => CuckooFilter::from_header_within(bytes, max, filters),
            HeaderFormat::Native => {
                CuckooFilter::from_native_header(bytes, max).and_then(|f| within(f, filters))
            }
            HeaderFormat::RedisBloom => {
                CuckooFilter::from_rb_header(bytes, max).and_then(|f| within(f, filters))
            }
        }
        .map_err(|e| e.to_string())
    }
    fn data_lengths(
        bytes: &[u8],
        limits: &Limits,
        format: HeaderFormat,
    ) -> Result<Vec<u64>, String> {
        CuckooFilter::header_table_bytes(
            bytes,
            limits.max_bytes,
            limits.max_filters,
            format.redisbloom(),
        )
        .map_err(|e| e.to_string())
    }
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        CuckooFilter::fill_chunks(self, read)
    }
    fn is_redisbloom(&self) -> bool {
        CuckooFilter::is_redisbloom(self)
    }
    fn from_redisbloom_rdb<R: RdbRead>(
        encver: i32,
        r: &mut R,
        limits: &Limits,
    ) -> Result<Self, String> {
        CuckooFilter::from_redisbloom_rdb(encver, r, limits.max_bytes, limits.max_filters)
            .map_err(|e| e.to_string())
    }
}

impl HeaderFormat {
    /// `Some(true)` for RedisBloom's, `Some(false)` for ferrobloom's, `None` for either.
    fn redisbloom(self) -> Option<bool> {
        match self {
            HeaderFormat::Any => None,
            HeaderFormat::Native => Some(false),
            HeaderFormat::RedisBloom => Some(true),
        }
    }
}

/// A cuckoo filter within `max_filters` sub-filters (the count is only known
/// after the header is read; nothing large is allocated before this check runs
/// on a payload: see [`load_payload_as`]).
fn within(f: CuckooFilter, max_filters: u32) -> Result<CuckooFilter, super::cuckoo::CuckooError> {
    if f.num_filters() as u64 > u64::from(max_filters) {
        return Err(super::cuckoo::CuckooError::MaxExpansions);
    }
    Ok(f)
}

/// Rebuilds a filter from its payload: `next_buffer` yields the header, then
/// one buffer per data chunk (`None` = the payload ended or could not be read).
/// Every buffer's length is checked against the header; the buffers after the
/// last chunk are not read. The error text says what was wrong.
pub fn load_payload<T: Payload, B: AsRef<[u8]>>(
    limits: &Limits,
    next_buffer: impl FnMut() -> Option<B>,
) -> Result<T, String> {
    load_payload_as(limits, HeaderFormat::Any, next_buffer)
}

/// [`load_payload`] for a payload whose header format is known.
///
/// The header is checked first, then every data buffer is read and its length
/// checked against it, and only then is the filter allocated and filled: a
/// payload whose header claims more than it carries is refused having
/// allocated nothing but the buffers that did arrive.
pub fn load_payload_as<T: Payload, B: AsRef<[u8]>>(
    limits: &Limits,
    format: HeaderFormat,
    mut next_buffer: impl FnMut() -> Option<B>,
) -> Result<T, String> {
    let header = next_buffer().ok_or("truncated payload (header)")?;
    let lengths = T::data_lengths(header.as_ref(), limits, format)
        .map_err(|e| format!("invalid header: {e}"))?;
    let mut chunks: Vec<B> = Vec::new();
    for len in lengths {
        let mut left = len;
        while left > 0 {
            let want = left.min(SCANDUMP_CHUNK);
            let buf = next_buffer().ok_or("truncated payload (data)")?;
            if buf.as_ref().len() as u64 != want {
                return Err("data length does not match the header".into());
            }
            chunks.try_reserve(1).map_err(|_| "out of memory")?;
            chunks.push(buf);
            left -= want;
        }
    }
    let mut value = T::from_header(header.as_ref(), limits, format)
        .map_err(|e| format!("invalid header: {e}"))?;
    drop(header);
    let mut bufs = chunks.into_iter();
    value.fill_chunks(|dst| {
        let buf = bufs.next().ok_or("truncated payload (data)")?;
        let src = buf.as_ref();
        if src.len() != dst.len() {
            return Err("data length does not match the header".into());
        }
        dst.copy_from_slice(src);
        Ok(())
    })?;
    Ok(value)
}
