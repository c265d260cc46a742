//! What the Redis layer needs of a filter value of either type: its type name,
//! its persisted form, memory and its figures for the `INFO bf` gauges.

use std::ffi::CStr;

use super::stats::{Figures, Gauges, BLOOM_GAUGES, CUCKOO_GAUGES};
use ferrobloom_core::cuckoo::CuckooFilter;
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::payload::Payload;
use ferrobloom_core::relocate::Pass;

/// What the data-type callbacks need from a filter (loading is [`Payload`],
/// and so is the clock rule after a load: `Payload::anchor_clock`, the core's,
/// which the local loaders apply too).
pub trait FilterValue: Payload {
    /// RedisBloom's type name (9 characters).
    const TYPE_NAME: &'static CStr;
    /// The command that loads SCANDUMP chunks (AOF rewrite emits it).
    const LOADCHUNK: &'static CStr;
    fn header(&self) -> Vec<u8>;
    /// Visits the SCANDUMP data chunks in order (linear time).
    fn for_each_chunk(&self, f: impl FnMut(i64, &[u8]));
    fn mem_usage(&self) -> usize;
    /// Every heap block besides the value itself (see `BloomFilter::heap_blocks`).
    fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize));
    /// The blocks a relocation pass numbers (about the allocations besides
    /// the value itself).
    fn block_count(&self) -> u64;
    /// Offers every heap block to a relocation pass (active defragmentation).
    fn relocate_blocks(&mut self, pass: &mut Pass);
    fn try_clone(&self) -> Option<Self>;
    /// Its contribution to the `INFO bf` gauges.
    fn figures(&self) -> Figures;
    /// The gauges of its type.
    fn gauges() -> &'static Gauges;
}

impl FilterValue for BloomFilter {
    const TYPE_NAME: &'static CStr = c"MBbloom--";
    const LOADCHUNK: &'static CStr = c"BF.LOADCHUNK";
    fn header(&self) -> Vec<u8> {
        self.encode_header()
    }
    fn for_each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        BloomFilter::for_each_chunk(self, f)
    }
    fn mem_usage(&self) -> usize {
        BloomFilter::mem_usage(self) as usize
    }
    fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        BloomFilter::heap_blocks(self, f)
    }
    fn block_count(&self) -> u64 {
        BloomFilter::block_count(self)
    }
    fn relocate_blocks(&mut self, pass: &mut Pass) {
        BloomFilter::relocate_blocks(self, pass)
    }
    fn try_clone(&self) -> Option<Self> {
        BloomFilter::try_clone(self).ok()
    }
    fn figures(&self) -> Figures {
        Figures::new(
            1,
            i64::try_from(BloomFilter::mem_usage(self)).unwrap_or(i64::MAX),
            self.items(),
            self.link_count() as i64,
        )
    }
    fn gauges() -> &'static Gauges {
        &BLOOM_GAUGES
    }
}

impl FilterValue for CuckooFilter {
    const TYPE_NAME: &'static CStr = c"MBbloomCF";
    const LOADCHUNK: &'static CStr = c"CF.LOADCHUNK";
    fn header(&self) -> Vec<u8> {
        self.encode_header()
    }
    fn for_each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        CuckooFilter::for_each_chunk(self, f)
    }
    fn mem_usage(&self) -> usize {
        CuckooFilter::mem_usage(self)
    }
    fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        CuckooFilter::heap_blocks(self, f)
    }
    fn block_count(&self) -> u64 {
        CuckooFilter::block_count(self)
    }
    fn relocate_blocks(&mut self, pass: &mut Pass) {
        CuckooFilter::relocate_blocks(self, pass)
    }
    fn try_clone(&self) -> Option<Self> {
        CuckooFilter::try_clone(self, u64::MAX).ok()
    }
    fn figures(&self) -> Figures {
        Figures::new(
            1,
            i64::try_from(CuckooFilter::mem_usage(self)).unwrap_or(i64::MAX),
            self.num_items(),
            self.num_filters() as i64,
        )
    }
    fn gauges() -> &'static Gauges {
        &CUCKOO_GAUGES
    }
}

/// Adds a value that came into existence outside a command (`rdb_load`, COPY).
pub fn created<T: FilterValue>(v: &T) {
    T::gauges().add(v.figures());
}

/// Removes a value being freed.
pub fn freed<T: FilterValue>(v: &T) {
    T::gauges().sub(v.figures());
}
