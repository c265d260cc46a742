//! Cuckoo filter core (the CF.* family), pure Rust, no Redis.
//!
//! A filter is a chain of sub-filters ("cuckoo tables"). Sub-filter `i` has
//! `base_buckets * expansion^i` buckets of `bucket_size` slots; a slot holds an
//! `fp_bits`-wide fingerprint, `0` meaning "empty". The shape, the insertion
//! order, the delete rule and the growth rule follow RedisBloom's `src/cuckoo.c`
//! (<https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/cuckoo.c>);
//! the hash, the fingerprint width, the breadth-first search an insert makes
//! before kicking out (`filter::bfs_place`), the kick-out victim position (a
//! fixed hash instead of a cycle, see `victim_pos`), the bounded incremental
//! compaction and the on-disk header are our own.
//!
//! # Hashing scheme
//!
//! Every item is hashed once with XXH3-128 (seed 0): `lo` = bits 0..64 and
//! `hi` = bits 64..128 of the result (the same split as `core::hash::ItemHash`;
//! [`CuckooHash::from_halves`] converts).
//!
//! * Fingerprint, `f = fp_bits`: `fp = ((hi * (2^f - 1)) >> 64) + 1` computed in
//!   128 bits (Lemire multiply-shift), i.e. near-uniform on `1 ..= 2^f - 1`;
//!   `0` never occurs, it is the empty slot.
//! * Alternate-bucket hash: `H(fp) = fmix64(fp)` (MurmurHash3's 64-bit
//!   finaliser, a bijection of `u64`).
//! * In a sub-filter of `N` buckets (`N` a power of two, `mask = N - 1`):
//!   primary bucket `i1 = lo & mask`, alternate bucket
//!   `i2 = (i1 ^ H(fp)) & mask` (partial-key cuckoo hashing, Fan et al. 2014).
//!   `alt(j) = (j ^ H(fp)) & mask` is an involution, so a fingerprint can always
//!   be moved between its two buckets knowing only the bucket it sits in.
//! * Because every sub-filter size is `base * expansion^i` with `expansion` a
//!   power of two, a smaller size divides every larger one and
//!   `(x & mask_big) & mask_small == x & mask_small`. So for a fingerprint sitting
//!   in bucket `j` of a sub-filter, its candidate buckets in any *smaller or
//!   equal* sub-filter are `j & mask_small` and `(j ^ H(fp)) & mask_small`: the
//!   item itself is not needed. Compaction relies on this.
//!
//! # Storage
//!
//! A sub-filter's slots are one bit-packed little-endian byte array: slot
//! `s = bucket * bucket_size + position` occupies bits `s*f .. s*f + f`
//! (bit `k` of the array is bit `k % 8` of byte `k / 8`). The array has
//! `ceil(buckets * bucket_size * f / 8)` bytes (1.5 bytes per slot at 12 bits);
//! for `f = 8` this is exactly RedisBloom's one byte per slot. Widths 8, 16 and 32
//! use byte-aligned fast paths; every width in `4 ..= 32` is supported.
//!
//! # Safety rules
//!
//! Nothing in here panics on any input (items, parameters, headers, chunks):
//! sizes use checked `u64` arithmetic, slot offsets are 64-bit (RedisBloom's
//! `SubCF_GetIndex` computes them in 32 bits),
//! indexing goes through `get`, tables are allocated fallibly and only after the
//! total size has been checked against the caller's per-filter byte cap. No
//! randomness is used: the same commands give byte-identical tables on a master
//! and its replicas.
//!
//! # Where things are
//!
//! - `mod.rs` (here): constants, errors, the item hash and fingerprint, the
//!   error-rate ↔ fingerprint-width rule, creation parameters;
//! - `table.rs`: one cuckoo table (`SubFilter`) and its bit-packed slots;
//! - `filter.rs`: [`CuckooFilter`], the chain of tables: lookups, counting,
//!   insertion with kick-outs, growth, deletion;
//! - `compact.rs`: the bounded incremental compaction;
//! - `encoding.rs`: the versioned SCANDUMP/RDB header and the data chunks;
//! - `walk.rs`: SCANDUMP walks of a live filter (refused once items moved);
//! - `tests/`: unit and property tests, by topic (`basics.rs`, `growth.rs`,
//!   `encoding.rs`, `redisbloom.rs`).

use std::borrow::Cow;
use std::fmt;

mod compact;
mod encoding;
mod filter;
mod redisbloom;
mod table;
#[cfg(test)]
mod tests;
mod walk;

pub use filter::CuckooFilter;
pub use redisbloom::RB_HEADER_LEN;
pub use walk::{Chunk, MAX_WALKS, WALK_FLAG};

/// Smallest supported fingerprint width, in bits.
pub const MIN_FP_BITS: u8 = 4;
/// Largest supported fingerprint width, in bits.
pub const MAX_FP_BITS: u8 = 32;
/// RedisBloom's fixed width, used when no error rate is requested.
pub const DEFAULT_FP_BITS: u8 = 8;
/// Largest accepted expansion (before rounding up to a power of two).
pub const MAX_EXPANSION: u32 = 32768;
/// The largest capacity CF.RESERVE takes (as BF.RESERVE's,
/// [`crate::bloom::MAX_CAPACITY`]): a filter of ferrobloom's layout never has
/// a first sub-filter larger than this capacity gives, and its readers refuse
/// one ([`CAPACITY_TOO_LARGE`]).
pub const MAX_CAPACITY: u64 = crate::bloom::MAX_CAPACITY;
/// CF.RESERVE's text for a capacity above [`MAX_CAPACITY`] (a header's
/// refusal of a first sub-filter larger than it gives).
pub const CAPACITY_TOO_LARGE: &str = "Capacity must be at most 1073741824";

/// The most buckets the first sub-filter of a ferrobloom-layout filter has:
/// `next_power_of_two(MAX_CAPACITY / bucket_size)` ([`CuckooFilter::new`]).
pub(crate) fn max_base_buckets(bucket_size: u8) -> u64 {
    (MAX_CAPACITY / u64::from(bucket_size.max(1)))
        .max(1)
        .next_power_of_two()
}
/// Hard limit on the number of sub-filters (the range of `cf-max-expansions`).
pub const MAX_SUBFILTERS: u32 = 65536;
/// Largest piece of slot storage returned by one SCANDUMP call.
pub const MAX_CHUNK: usize = 16 * 1024 * 1024;
/// Work units (see [`CuckooFilter::compact_step`]) of the automatic compaction
/// step that a successful delete runs (about 10-20 µs at most).
pub const AUTO_COMPACT_BUDGET: u64 = 2048;
/// Work units of the compaction pass a delete runs on a filter of RedisBloom's
/// layout (RedisBloom runs the whole pass inside the delete). As large as one
/// CF.COMPACT call (`redis::cf::COMPACT_BUDGET`), so a filter in RedisBloom's
/// normal range compacts exactly when and as RedisBloom's does, yet a filter
/// with thousands of sub-filters no longer stalls the server in one CF.DEL.
pub const RB_AUTO_COMPACT_BUDGET: u64 = 1 << 20;
/// Length of the header produced by [`CuckooFilter::encode_header`].
pub const HEADER_LEN: usize = 64;
/// First four bytes of every header.
pub const HEADER_MAGIC: [u8; 4] = *b"FBcf";
/// Header format version 1, the first (and the one written).
pub const HEADER_VERSION_BASE: u8 = 1;

const FLAG_COMPACTING: u8 = 1;
const FLAG_COMPACT_CONT: u8 = 2;

/// What can go wrong. The Redis layer maps these to RedisBloom's error texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CuckooError {
    /// No room and the filter may not grow (expansion 0): `Filter is full`.
    Full,
    /// Growth needed but the filter already has `max_filters` sub-filters.
    MaxExpansions,
    /// The table(s) would exceed the caller's per-filter byte cap (or overflow).
    MemoryCap,
    /// The allocator refused the memory.
    AllocFailed,
    /// Parameters out of range (should have been caught by the command parser).
    InvalidParams(&'static str),
    /// A SCANDUMP/RDB header failed validation.
    BadHeader(&'static str),
    /// A LOADCHUNK data chunk or an RDB sub-filter buffer failed validation.
    BadChunk(&'static str),
}

impl fmt::Display for CuckooError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CuckooError::Full => f.write_str("filter is full"),
            CuckooError::MaxExpansions => f.write_str("maximum expansions reached"),
            CuckooError::MemoryCap => f.write_str("filter would exceed the memory cap"),
            CuckooError::AllocFailed => f.write_str("insufficient memory"),
            CuckooError::InvalidParams(m) => write!(f, "invalid parameters: {m}"),
            CuckooError::BadHeader(m) => write!(f, "invalid header: {m}"),
            CuckooError::BadChunk(m) => write!(f, "invalid chunk: {m}"),
        }
    }
}

impl std::error::Error for CuckooError {}

/// An item's hash, computed once and usable with any filter (any width or size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuckooHash {
    lo: u64,
    hi: u64,
}

impl CuckooHash {
    /// Builds the hash from the two halves of an XXH3-128 value already computed
    /// elsewhere (`lo` = bits 0..64, `hi` = bits 64..128).
    #[inline]
    pub fn from_halves(lo: u64, hi: u64) -> Self {
        CuckooHash { lo, hi }
    }

    /// The fingerprint of width `fp_bits` (clamped to 1..=32), in `1 ..= 2^f - 1`.
    #[inline]
    pub fn fingerprint(&self, fp_bits: u8) -> u32 {
        let f = u32::from(fp_bits.clamp(1, MAX_FP_BITS));
        let range = (1u128 << f) - 1;
        // < range <= u32::MAX - 0, so the +1 cannot overflow.
        (((u128::from(self.hi) * range) >> 64) as u32).wrapping_add(1)
    }
}

/// RedisBloom's memory formula, `40 + 16 · sub-filters + table bytes` (CF.INFO
/// `Size`, MEMORY USAGE, and the quantity `max-filter-memory` bounds).
pub(super) fn mem_formula(subfilters: u64, table_bytes: u64) -> u64 {
    40u64
        .saturating_add(subfilters.saturating_mul(16))
        .saturating_add(table_bytes)
}

/// Hashes one item (one XXH3-128 pass, shared with Bloom filters).
#[inline]
pub fn hash_item(item: &[u8]) -> CuckooHash {
    let h = super::hash::ItemHash::of(item);
    CuckooHash::from_halves(h.lo, h.hi)
}

/// Hashes one item for a filter of either scheme: ferrobloom's ([`hash_item`])
/// or, for filters migrated from RedisBloom, `MurmurHash64A(item, seed 0)` in
/// both halves (see `redisbloom.rs`).
#[inline]
pub fn hash_for(redisbloom: bool, item: &[u8]) -> CuckooHash {
    if redisbloom {
        let h = super::hash::murmur64a(item, 0);
        CuckooHash::from_halves(h, h)
    } else {
        hash_item(item)
    }
}

/// The alternate-bucket hash of a fingerprint under the filter's scheme.
#[inline(always)]
fn alt_of(redisbloom: bool, fp: u32) -> u64 {
    if redisbloom {
        redisbloom::alt_hash(fp)
    } else {
        alt_hash(fp)
    }
}

/// The kick-out victim position under the filter's scheme.
#[inline(always)]
fn victim_of(redisbloom: bool, bucket: u64, n: u64, b: u64) -> u64 {
    if redisbloom {
        n % b.max(1)
    } else {
        victim_pos(bucket, n, b)
    }
}

/// `H(fp)`: MurmurHash3's fmix64, a bijection with good avalanche.
#[inline(always)]
fn alt_hash(fp: u32) -> u64 {
    let mut k = u64::from(fp);
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// Victim slot position for kick-out step `n` in `bucket`: a fixed hash of
/// `(bucket, n)`, deterministic (replicas rebuild identical tables) yet free of
/// the trap of RedisBloom's `n % bucket_size`: with 2 slots per bucket a walk
/// bouncing between two buckets always hits the same position in each and can
/// never escape (measured: first failure at 64-71% load with b = 2, against
/// 87-89% with this choice, 2000 iterations).
#[inline(always)]
fn victim_pos(bucket: u64, n: u64, b: u64) -> u64 {
    if b <= 1 {
        return 0;
    }
    let mut k = bucket ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k % b
}

/// Upper bound on the false-positive rate of ONE sub-filter: a lookup compares
/// the fingerprint with at most `2 * b` stored fingerprints, each equal with
/// probability `1 / (2^f - 1)`.
pub fn fpr_bound(fp_bits: u8, bucket_size: u8) -> f64 {
    let f = u32::from(fp_bits.clamp(1, 63));
    let values = ((1u64 << f) - 1) as f64;
    2.0 * f64::from(bucket_size) / values
}

/// Smallest fingerprint width in `8 ..= 32` whose per-sub-filter bound
/// [`fpr_bound`]` = 2b / (2^f - 1)` is `<= error`, or `None` when `error` is not
/// in `(0, 1)` (NaN included), `bucket_size` is 0, or even 32 bits are not
/// enough.
///
/// Widths below 8 are never chosen: the default stays RedisBloom's 8 bits and a
/// requested rate never makes the filter worse than the default (tiny widths
/// also give partial-key cuckoo hashing too few alternate buckets to fill well).
///
/// **Guarantee.** The bound holds for each sub-filter at any load. A lookup
/// probes every sub-filter, so a filter that has grown to `k` sub-filters has a
/// false-positive rate of at most `k * bound` (union bound; each full older
/// sub-filter contributes about `0.95 * bound` at b = 4). The requested rate is
/// therefore guaranteed while all items fit in the first sub-filter, i.e. within
/// the reserved capacity; after growth it degrades linearly with the number of
/// sub-filters (`CF.INFO` reports both the rate and the filter count). Reserve
/// enough capacity, or ask for `error / k` to allow `k` sub-filters.
pub fn fp_bits_for_error(error: f64, bucket_size: u8) -> Option<u8> {
    if !(error > 0.0 && error < 1.0) || bucket_size == 0 {
        return None;
    }
    (DEFAULT_FP_BITS..=MAX_FP_BITS).find(|&f| fpr_bound(f, bucket_size) <= error)
}

/// Creation parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CuckooParams {
    /// Requested capacity in items, `>= 2 * bucket_size`.
    pub capacity: u64,
    /// Slots per bucket, `1 ..= 255`.
    pub bucket_size: u8,
    /// Kick-outs tried before growing, `>= 1`.
    pub max_iterations: u16,
    /// Growth factor `0 ..= 32768`; rounded up to a power of two (0 = no growth).
    pub expansion: u32,
    /// Fingerprint width, `4 ..= 32`.
    pub fp_bits: u8,
    /// Requested error rate (kept for CF.INFO only); `None` = not given.
    pub error_rate: Option<f64>,
    /// RedisBloom's hashing and formats (`LAYOUT redisbloom`; 8-bit
    /// fingerprints, no error rate), as filters migrated from RedisBloom have.
    pub redisbloom: bool,
}

impl Default for CuckooParams {
    /// RedisBloom's defaults: capacity 1024, bucket size 2, 20 iterations,
    /// expansion 1, 8-bit fingerprints.
    fn default() -> Self {
        CuckooParams {
            capacity: 1024,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
            fp_bits: DEFAULT_FP_BITS,
            error_rate: None,
            redisbloom: false,
        }
    }
}
