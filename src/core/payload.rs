//! Loading a filter from its persisted payload (RDB encoding version 5: one
//! header buffer, then the SCANDUMP data chunks as one buffer each), written
//! once and shared: the Redis `rdb_load` callback (RDB files, RESTORE, full
//! sync) calls [`load_payload`] with a closure that reads RDB string buffers,
//! and the fuzz targets call it with buffers cut from arbitrary bytes.

use super::bloom::{BloomChain, Limits};
use super::cuckoo::CuckooFilter;

/// A filter that can be rebuilt from a header and its data chunks.
pub trait Payload: Sized {
    /// Validates a header completely and allocates the zeroed filter it
    /// describes, within `limits` (Cuckoo filters use `limits.max_bytes` only).
    fn from_header(bytes: &[u8], limits: &Limits) -> Result<Self, String>;
    /// Fills the data from chunks in SCANDUMP order (linear time): `read` is
    /// called with each chunk's destination.
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String>;
}

impl Payload for BloomChain {
    fn from_header(bytes: &[u8], limits: &Limits) -> Result<Self, String> {
        BloomChain::from_header(bytes, limits).map_err(|e| format!("{e:?}"))
    }
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        BloomChain::fill_chunks(self, read)
    }
}

impl Payload for CuckooFilter {
    fn from_header(bytes: &[u8], limits: &Limits) -> Result<Self, String> {
        CuckooFilter::from_header(bytes, limits.max_bytes).map_err(|e| e.to_string())
    }
    fn fill_chunks(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        CuckooFilter::fill_chunks(self, read)
    }
}

/// Rebuilds a filter from its payload: `next_buffer` yields the header, then
/// one buffer per data chunk (`None` = the payload ended or could not be read).
/// Every buffer's length is checked against the header; the buffers after the
/// last chunk are not read. The error text says what was wrong.
pub fn load_payload<T: Payload, B: AsRef<[u8]>>(
    limits: &Limits,
    mut next_buffer: impl FnMut() -> Option<B>,
) -> Result<T, String> {
    let header = next_buffer().ok_or("truncated payload (header)")?;
    let mut value =
        T::from_header(header.as_ref(), limits).map_err(|e| format!("invalid header: {e}"))?;
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
