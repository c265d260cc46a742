//! Cuckoo filters migrated from RedisBloom: its hashing, fingerprints, header and
//! RDB payloads, so that such a filter answers and evolves exactly as it did
//! there (RedisBloom 2.8.2, <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/cuckoo.c>:
//! the filter; `src/cf.c`: its SCANDUMP header and chunks; `src/rebloom.c`: the
//! RDB encoding and `CFMemUsage`).
//!
//! # Hashing
//! `h = MurmurHash64A(item, seed 0)` (both halves of [`CuckooHash`]); fingerprint
//! `fp = h mod 255 + 1` (8 bits, never 0); in a sub-filter of `N` buckets the
//! candidates are `h mod N` and `(h XOR fp·0x5bd1e995) mod N`. Kick-outs use
//! victim position `n mod bucket_size` at step `n`; CF.COUNT counts a bucket that
//! is both candidates twice; a delete that leaves deletes above 10% of the items
//! (with several sub-filters) compacts at once, and CF.COMPACT compacts in full.
//! Slot storage is RedisBloom's: one byte per slot, which is ferrobloom's layout
//! at 8-bit fingerprints.
//!
//! # Header (RedisBloom's CF SCANDUMP header; written for these filters)
//! Packed little-endian, 38 bytes: `u64 items, u64 buckets of the first
//! sub-filter, u64 deletes, u64 sub-filters, u16 bucket size, u16 max
//! iterations, u16 expansion`. Sub-filter `i` has `buckets · expansion^i`
//! buckets. Checked on load: 1 to 65535 sub-filters, bucket size 1 to 255, max
//! iterations at least 1, expansion 0 (one sub-filter only) or a power of two up
//! to 32768, buckets a power of two below 2^56, the total against the caller's
//! byte cap. An item count above the slots (impossible in RedisBloom's own
//! filters) is clamped to the slots.

use super::filter::*;
use super::table::*;
use super::*;
use crate::rdb::RdbRead;

/// Length of RedisBloom's cuckoo header.
pub const RB_HEADER_LEN: usize = 38;
/// RedisBloom's most sub-filters (its count is 16 bits).
pub(super) const RB_MAX_FILTERS: u32 = 65535;
/// RedisBloom's bucket count bound (56 bits).
const RB_MAX_BUCKETS: u64 = (1 << 56) - 1;
const RB_FP_BITS: u8 = 8;

/// RedisBloom's fingerprint: `h mod 255 + 1`.
#[inline(always)]
pub(super) fn fingerprint(h: &CuckooHash) -> u32 {
    (h.lo % 255) as u32 + 1
}

/// RedisBloom's alternate-bucket term: `fp · 0x5bd1e995` (64-bit).
#[inline(always)]
pub(super) fn alt_hash(fp: u32) -> u64 {
    u64::from(fp).wrapping_mul(0x5bd1_e995)
}

/// The fields of RedisBloom's header (and of its RDB payloads).
struct RbFields {
    items: u64,
    buckets: u64,
    deletes: u64,
    filters: u64,
    bucket_size: u64,
    max_iterations: u64,
    expansion: u64,
}

impl CuckooFilter {
    /// Checks RedisBloom's fields (module doc): the filter to allocate.
    fn plan_rb_fields(f: &RbFields, max_bytes: u64) -> Result<Plan, CuckooError> {
        use CuckooError::BadHeader;
        if f.filters == 0 || f.filters > u64::from(RB_MAX_FILTERS) {
            return Err(BadHeader("number of filters"));
        }
        let bucket_size = u8::try_from(f.bucket_size)
            .ok()
            .filter(|b| *b > 0)
            .ok_or(BadHeader("bucket size"))?;
        let max_iterations = u16::try_from(f.max_iterations)
            .ok()
            .filter(|m| *m > 0)
            .ok_or(BadHeader("max iterations"))?;
        let expansion = u32::try_from(f.expansion)
            .ok()
            .filter(|e| *e <= MAX_EXPANSION && (*e == 0 || e.is_power_of_two()))
            .ok_or(BadHeader("expansion"))?;
        if expansion == 0 && f.filters != 1 {
            return Err(BadHeader("expansion 0 with several filters"));
        }
        if !f.buckets.is_power_of_two() || f.buckets > RB_MAX_BUCKETS {
            return Err(BadHeader("number of buckets"));
        }
        let (mut total_bytes, mut buckets) = (0u64, f.buckets);
        for i in 0..f.filters {
            if i > 0 {
                buckets = buckets
                    .checked_mul(u64::from(expansion))
                    .filter(|b| *b <= RB_MAX_BUCKETS)
                    .ok_or(CuckooError::MemoryCap)?;
            }
            let b = table_bytes(buckets, bucket_size, RB_FP_BITS).ok_or(CuckooError::MemoryCap)?;
            total_bytes = total_bytes.checked_add(b).ok_or(CuckooError::MemoryCap)?;
            if mem_formula(i + 1, total_bytes) > max_bytes || usize::try_from(total_bytes).is_err()
            {
                return Err(CuckooError::MemoryCap);
            }
        }
        let filter = CuckooFilter {
            subs: Vec::new(),
            layout: Layout::new(RB_FP_BITS, bucket_size),
            bucket_size,
            fp_bits: RB_FP_BITS,
            max_iterations,
            expansion,
            base_buckets: f.buckets,
            num_items: f.items,
            num_deletes: f.deletes,
            error_rate: None,
            cursor: None,
            rb: true,
            total_slots: 0,
            table_bytes: 0,
            moves: 0,
            walks: Vec::new(),
            plain: walk::PlainAnswers::loaded(),
        };
        Ok(Plan {
            buckets: Plan::bucket_counts(f.buckets, expansion, f.filters as u32)?,
            filter,
        })
    }

    /// RedisBloom's 38-byte header (module doc).
    pub(super) fn encode_rb_header(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(RB_HEADER_LEN);
        h.extend_from_slice(&self.num_items.min(self.total_slots()).to_le_bytes());
        h.extend_from_slice(&self.base_buckets.to_le_bytes());
        h.extend_from_slice(&self.num_deletes.to_le_bytes());
        h.extend_from_slice(&(self.subs.len() as u64).to_le_bytes());
        h.extend_from_slice(&u16::from(self.bucket_size).to_le_bytes());
        h.extend_from_slice(&self.max_iterations.to_le_bytes());
        h.extend_from_slice(&(self.expansion.min(u32::from(u16::MAX)) as u16).to_le_bytes());
        h
    }

    /// Reads RedisBloom's 38-byte header into a zeroed filter.
    pub fn from_rb_header(bytes: &[u8], max_bytes: u64) -> Result<Self, CuckooError> {
        Self::plan(bytes, max_bytes, MAX_SUBFILTERS, Some(true))?.allocate()
    }

    pub(super) fn plan_rb_header(bytes: &[u8], max_bytes: u64) -> Result<Plan, CuckooError> {
        if bytes.len() != RB_HEADER_LEN {
            return Err(CuckooError::BadHeader("length"));
        }
        let u16_at = |o: usize| u64::from(le16(bytes.get(o..o + 2).unwrap_or(&[])));
        let f = RbFields {
            items: load_word(bytes, 0),
            buckets: load_word(bytes, 8),
            deletes: load_word(bytes, 16),
            filters: load_word(bytes, 24),
            bucket_size: u16_at(32),
            max_iterations: u16_at(34),
            expansion: u16_at(36),
        };
        let plan = Self::plan_rb_fields(&f, max_bytes)?;
        // A count above the slots is refused, as in ferrobloom's own header
        // (RedisBloom's LOADCHUNK takes it; no filter it writes has one):
        // `encode_rb_header` writes the count capped at the slots, so such a
        // header came back different from a SCANDUMP of what it loaded
        // (found by the `cuckoo_chunks` fuzz target).
        let slots = plan.buckets.iter().fold(0u64, |s, b| {
            s.saturating_add(b.saturating_mul(f.bucket_size))
        });
        if f.items > slots {
            return Err(CuckooError::BadHeader("number of items"));
        }
        Ok(plan)
    }

    /// Loads RedisBloom's RDB payload of `MBbloomCF` encoding version 0-4, as its
    /// `CFRdbLoad` reads it: `filters, buckets, items`, then from version 4
    /// `deletes, bucket size, max iterations, expansion` (before: 0, 2, 20, 1),
    /// then per sub-filter `[its bucket count, from version 4]` and its slots
    /// (`buckets · bucket size` bytes). Every count and length is checked.
    pub fn from_redisbloom_rdb<R: RdbRead>(
        encver: i32,
        r: &mut R,
        max_bytes: u64,
        max_filters: u32,
    ) -> Result<Self, CuckooError> {
        let trunc = CuckooError::BadChunk("truncated payload");
        if !(0..=4).contains(&encver) {
            return Err(CuckooError::BadHeader("unknown encoding version"));
        }
        let filters = r.unsigned().ok_or(trunc)?;
        let buckets = r.unsigned().ok_or(trunc)?;
        let items = r.unsigned().ok_or(trunc)?;
        let mut f = RbFields {
            items,
            buckets,
            deletes: 0,
            filters,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
        };
        if encver >= 4 {
            f.deletes = r.unsigned().ok_or(trunc)?;
            f.bucket_size = r.unsigned().ok_or(trunc)?;
            f.max_iterations = r.unsigned().ok_or(trunc)?;
            f.expansion = r.unsigned().ok_or(trunc)?;
        }
        let plan = Self::plan_rb_fields(&f, max_bytes)?;
        if plan.buckets.len() as u64 > u64::from(max_filters.min(MAX_SUBFILTERS)) {
            return Err(CuckooError::MaxExpansions);
        }
        // Every table's bytes are read, and their lengths checked, before the
        // filter is allocated: a payload can only make this allocate what it
        // carries.
        let mut tables = Vec::new();
        tables
            .try_reserve_exact(plan.buckets.len())
            .map_err(|_| CuckooError::AllocFailed)?;
        for want in &plan.buckets {
            if encver >= 4 && r.unsigned().ok_or(trunc)? != *want {
                return Err(CuckooError::BadChunk("sub-filter bucket count"));
            }
            let buf = r.buffer().ok_or(trunc)?;
            let bytes = table_bytes(*want, plan.filter.bucket_size, RB_FP_BITS);
            if Some(buf.as_ref().len() as u64) != bytes {
                return Err(CuckooError::BadChunk("length"));
            }
            tables.push(buf);
        }
        let mut cf = plan.allocate()?;
        for (i, buf) in tables.iter().enumerate() {
            cf.load_subfilter_bytes(i, buf.as_ref())?;
        }
        Ok(cf)
    }
}
