//! Loading a filter from its persisted payload (RDB encoding versions 5 and 6:
//! one header buffer, then the SCANDUMP data chunks as one buffer each), written
//! once and shared: the Redis `rdb_load` callback (RDB files, RESTORE, full
//! sync) calls [`load_payload`] with a closure that reads RDB string buffers,
//! and the fuzz targets call it with buffers cut from arbitrary bytes.

use super::bloom::{BloomChain, Limits};
use super::cuckoo::CuckooFilter;

/// Reads RedisBloom's RDB primitives, in the order its loaders read them (the
/// Redis layer reads a `RedisModuleIO`; tests and fuzz targets read memory).
pub trait RdbRead {
    type Buf: AsRef<[u8]>;
    fn unsigned(&mut self) -> Option<u64>;
    fn double(&mut self) -> Option<f64>;
    fn buffer(&mut self) -> Option<Self::Buf>;
}

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

/// A filter that can be rebuilt from a header and its data chunks.
pub trait Payload: Sized {
    /// Validates a header completely and allocates the zeroed filter it
    /// describes, within `limits` (Cuckoo filters use `limits.max_bytes` only).
    fn from_header(bytes: &[u8], limits: &Limits, format: HeaderFormat) -> Result<Self, String>;
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
}

impl Payload for BloomChain {
    fn from_header(bytes: &[u8], limits: &Limits, format: HeaderFormat) -> Result<Self, String> {
        match format {
            HeaderFormat::Any => BloomChain::from_header(bytes, limits),
            HeaderFormat::Native => BloomChain::from_native_header(bytes, limits),
            HeaderFormat::RedisBloom => BloomChain::from_rb_header(bytes, limits),
        }
        .map_err(|e| format!("{e:?}"))
    }
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        BloomChain::fill_chunks(self, read)
    }
    fn is_redisbloom(&self) -> bool {
        BloomChain::is_redisbloom(self)
    }
    fn from_redisbloom_rdb<R: RdbRead>(
        encver: i32,
        r: &mut R,
        limits: &Limits,
    ) -> Result<Self, String> {
        BloomChain::from_redisbloom_rdb(encver, r, limits).map_err(|e| format!("{e:?}"))
    }
}

impl Payload for CuckooFilter {
    fn from_header(bytes: &[u8], limits: &Limits, format: HeaderFormat) -> Result<Self, String> {
        let max = limits.max_bytes;
        match format {
            HeaderFormat::Any => CuckooFilter::from_header(bytes, max),
            HeaderFormat::Native => CuckooFilter::from_native_header(bytes, max),
            HeaderFormat::RedisBloom => CuckooFilter::from_rb_header(bytes, max),
        }
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
        CuckooFilter::from_redisbloom_rdb(encver, r, limits.max_bytes).map_err(|e| e.to_string())
    }
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
pub fn load_payload_as<T: Payload, B: AsRef<[u8]>>(
    limits: &Limits,
    format: HeaderFormat,
    mut next_buffer: impl FnMut() -> Option<B>,
) -> Result<T, String> {
    let header = next_buffer().ok_or("truncated payload (header)")?;
    let mut value = T::from_header(header.as_ref(), limits, format)
        .map_err(|e| format!("invalid header: {e}"))?;
    drop(header);
    value.fill_chunks(|dst| {
        let buf = next_buffer().ok_or("truncated payload (data)")?;
        let src = buf.as_ref();
        if src.len() != dst.len() {
            return Err("data length does not match the header".into());
        }
        dst.copy_from_slice(src);
        Ok(())
    })?;
    Ok(value)
}
