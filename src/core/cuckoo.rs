//! Cuckoo filter core (the CF.* family), pure Rust, no Redis.
//!
//! A filter is a chain of sub-filters ("cuckoo tables"). Sub-filter `i` has
//! `base_buckets * expansion^i` buckets of `bucket_size` slots; a slot holds an
//! `fp_bits`-wide fingerprint, `0` meaning "empty". The shape, the insertion and
//! kick-out order, the delete rule and the growth rule follow RedisBloom
//! (spec §6.4); the hash, the fingerprint width, the kick-out victim position
//! (a fixed hash instead of a cycle, see `victim_pos`), the bounded
//! incremental compaction and the on-disk header are our own.
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
//! sizes use checked `u64` arithmetic, slot offsets are 64-bit (quirk Q12),
//! indexing goes through `get`, tables are allocated fallibly and only after the
//! total size has been checked against the caller's per-filter byte cap. No
//! randomness is used: the same commands give byte-identical tables on a master
//! and its replicas.

use std::borrow::Cow;
use std::fmt;

/// Smallest supported fingerprint width, in bits.
pub const MIN_FP_BITS: u8 = 4;
/// Largest supported fingerprint width, in bits.
pub const MAX_FP_BITS: u8 = 32;
/// RedisBloom's fixed width, used when no error rate is requested.
pub const DEFAULT_FP_BITS: u8 = 8;
/// Largest accepted expansion (before rounding up to a power of two).
pub const MAX_EXPANSION: u32 = 32768;
/// Hard limit on the number of sub-filters (the range of `cf-max-expansions`).
pub const MAX_SUBFILTERS: u32 = 65536;
/// Largest piece of slot storage returned by one SCANDUMP call.
pub const MAX_CHUNK: usize = 16 * 1024 * 1024;
/// Work units (see [`CuckooFilter::compact_step`]) of the automatic compaction
/// step that a successful delete runs (about 10-20 µs at most).
pub const AUTO_COMPACT_BUDGET: u64 = 2048;
/// Length of the header produced by [`CuckooFilter::encode_header`].
pub const HEADER_LEN: usize = 64;
/// First four bytes of every header.
pub const HEADER_MAGIC: [u8; 4] = *b"FBcf";
/// Header format version written by this code.
pub const HEADER_VERSION: u8 = 1;

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

/// Hashes one item (one XXH3-128 pass, shared with Bloom filters).
#[inline]
pub fn hash_item(item: &[u8]) -> CuckooHash {
    let h = super::hash::ItemHash::of(item);
    CuckooHash::from_halves(h.lo, h.hi)
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

/// Sub-filters (newest first) whose buckets a batch prefetches per item.
const PREFETCH_SUBFILTERS: usize = 4;

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
        }
    }
}

/// Bit-packing parameters shared by all sub-filters of one filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    fp_bits: u8,
    bucket_size: u64,
    fp_mask: u64,
}

impl Layout {
    fn new(fp_bits: u8, bucket_size: u8) -> Self {
        Layout {
            fp_bits,
            bucket_size: u64::from(bucket_size),
            fp_mask: (1u64 << u32::from(fp_bits.clamp(1, MAX_FP_BITS))) - 1,
        }
    }
}

/// `u64` to `usize`; values that do not fit become `usize::MAX`, which every
/// `get` then rejects.
#[inline(always)]
fn idx(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

#[inline(always)]
fn le16(c: &[u8]) -> u32 {
    match c {
        [a, b] => u32::from(u16::from_le_bytes([*a, *b])),
        _ => 0,
    }
}

#[inline(always)]
fn le32(c: &[u8]) -> u32 {
    match c {
        [a, b, d, e] => u32::from_le_bytes([*a, *b, *d, *e]),
        _ => 0,
    }
}

/// Reads 8 bytes little-endian at `byte`; bytes past the end read as 0.
#[inline(always)]
fn load_word(data: &[u8], byte: usize) -> u64 {
    if let Some(s) = data.get(byte..byte.saturating_add(8)) {
        if let Ok(a) = <[u8; 8]>::try_from(s) {
            return u64::from_le_bytes(a);
        }
    }
    let mut buf = [0u8; 8];
    if let Some(rest) = data.get(byte..) {
        for (d, s) in buf.iter_mut().zip(rest) {
            *d = *s;
        }
    }
    u64::from_le_bytes(buf)
}

/// Writes back the bytes of `word` that lie inside `data`.
#[inline(always)]
fn store_word(data: &mut [u8], byte: usize, word: u64) {
    let bytes = word.to_le_bytes();
    if let Some(s) = data.get_mut(byte..byte.saturating_add(8)) {
        if s.len() == 8 {
            s.copy_from_slice(&bytes);
            return;
        }
    }
    if let Some(rest) = data.get_mut(byte..) {
        for (d, s) in rest.iter_mut().zip(bytes.iter()) {
            *d = *s;
        }
    }
}

/// Table bytes of a sub-filter with `buckets` buckets, `None` on overflow.
fn table_bytes(buckets: u64, bucket_size: u8, fp_bits: u8) -> Option<u64> {
    let bits = buckets
        .checked_mul(u64::from(bucket_size))?
        .checked_mul(u64::from(fp_bits))?;
    Some(bits / 8 + u64::from(bits % 8 != 0))
}

/// A zeroed byte vector, allocated fallibly.
fn alloc_zeroed(bytes: u64) -> Result<Vec<u8>, CuckooError> {
    let n = usize::try_from(bytes).map_err(|_| CuckooError::MemoryCap)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| CuckooError::AllocFailed)?;
    v.resize(n, 0);
    Ok(v)
}

/// One cuckoo table.
struct SubFilter {
    data: Vec<u8>,
    /// Bucket count, a non-zero power of two.
    buckets: u64,
    /// `buckets * bucket_size` (checked at creation).
    slots: u64,
    /// Non-empty slots, maintained on every write.
    occupied: u64,
}

impl SubFilter {
    fn new_zeroed(buckets: u64, l: &Layout) -> Result<Self, CuckooError> {
        let bytes =
            table_bytes(buckets, l.bucket_size as u8, l.fp_bits).ok_or(CuckooError::MemoryCap)?;
        let slots = buckets
            .checked_mul(l.bucket_size)
            .ok_or(CuckooError::MemoryCap)?;
        Ok(SubFilter {
            data: alloc_zeroed(bytes)?,
            buckets,
            slots,
            occupied: 0,
        })
    }

    #[inline(always)]
    fn mask(&self) -> u64 {
        self.buckets.wrapping_sub(1)
    }

    #[inline(always)]
    fn get(&self, l: &Layout, slot: u64) -> u32 {
        match l.fp_bits {
            8 => self.data.get(idx(slot)).map_or(0, |&v| u32::from(v)),
            16 => {
                let i = idx(slot.wrapping_mul(2));
                self.data.get(i..i.saturating_add(2)).map_or(0, le16)
            }
            32 => {
                let i = idx(slot.wrapping_mul(4));
                self.data.get(i..i.saturating_add(4)).map_or(0, le32)
            }
            f => {
                let bit = slot.wrapping_mul(u64::from(f));
                let word = load_word(&self.data, idx(bit / 8));
                ((word >> (bit % 8)) & l.fp_mask) as u32
            }
        }
    }

    /// Raw write (does not touch `occupied`).
    #[inline(always)]
    fn put(&mut self, l: &Layout, slot: u64, v: u32) {
        match l.fp_bits {
            8 => {
                if let Some(b) = self.data.get_mut(idx(slot)) {
                    *b = v as u8;
                }
            }
            16 => {
                let i = idx(slot.wrapping_mul(2));
                if let Some(s) = self.data.get_mut(i..i.saturating_add(2)) {
                    s.copy_from_slice(&(v as u16).to_le_bytes());
                }
            }
            32 => {
                let i = idx(slot.wrapping_mul(4));
                if let Some(s) = self.data.get_mut(i..i.saturating_add(4)) {
                    s.copy_from_slice(&v.to_le_bytes());
                }
            }
            f => {
                let bit = slot.wrapping_mul(u64::from(f));
                let byte = idx(bit / 8);
                let shift = bit % 8;
                let word = load_word(&self.data, byte);
                let m = l.fp_mask << shift;
                let word = (word & !m) | ((u64::from(v) & l.fp_mask) << shift);
                store_word(&mut self.data, byte, word);
            }
        }
    }

    /// Write that keeps `occupied` exact.
    #[inline(always)]
    fn set(&mut self, l: &Layout, slot: u64, v: u32) {
        let old = self.get(l, slot);
        self.put(l, slot, v);
        match (old == 0, v == 0) {
            (true, false) => self.occupied = self.occupied.saturating_add(1),
            (false, true) => self.occupied = self.occupied.saturating_sub(1),
            _ => {}
        }
    }

    /// Hints the CPU to fetch the cache line where `bucket` starts.
    #[inline(always)]
    fn prefetch_bucket(&self, l: &Layout, bucket: u64) {
        let bit = bucket
            .wrapping_mul(l.bucket_size)
            .wrapping_mul(u64::from(l.fp_bits));
        if let Some(b) = self.data.get(idx(bit / 8)) {
            super::bits::prefetch(b as *const u8);
        }
    }

    /// Slot index of the first slot of `bucket` holding `fp` (0 = first empty).
    #[inline(always)]
    fn find(&self, l: &Layout, bucket: u64, fp: u32) -> Option<u64> {
        let b = l.bucket_size;
        let first = bucket.wrapping_mul(b);
        let pos = match l.fp_bits {
            8 => {
                let s = idx(first);
                self.data
                    .get(s..s.saturating_add(b as usize))?
                    .iter()
                    .position(|&x| u32::from(x) == fp)
            }
            16 => {
                let s = idx(first.wrapping_mul(2));
                self.data
                    .get(s..s.saturating_add(2 * b as usize))?
                    .chunks_exact(2)
                    .position(|c| le16(c) == fp)
            }
            32 => {
                let s = idx(first.wrapping_mul(4));
                self.data
                    .get(s..s.saturating_add(4 * b as usize))?
                    .chunks_exact(4)
                    .position(|c| le32(c) == fp)
            }
            _ => {
                return (0..b)
                    .map(|p| first.wrapping_add(p))
                    .find(|&s| s < self.slots && self.get(l, s) == fp)
            }
        };
        pos.map(|p| first.wrapping_add(p as u64))
    }

    /// Number of slots of `bucket` holding `fp`.
    fn count_in(&self, l: &Layout, bucket: u64, fp: u32) -> u64 {
        let first = bucket.wrapping_mul(l.bucket_size);
        (0..l.bucket_size)
            .map(|p| first.wrapping_add(p))
            .filter(|&s| s < self.slots && self.get(l, s) == fp)
            .count() as u64
    }

    /// Non-empty slots among `from .. to` (clamped to the table).
    fn count_occupied(&self, l: &Layout, from: u64, to: u64) -> u64 {
        let to = to.min(self.slots);
        if from >= to {
            return 0;
        }
        if l.fp_bits == 8 {
            return self
                .data
                .get(idx(from)..idx(to))
                .map_or(0, |s| s.iter().filter(|&&x| x != 0).count() as u64);
        }
        (from..to).filter(|&s| self.get(l, s) != 0).count() as u64
    }
}

/// Where an incremental compaction pass stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CompactCursor {
    /// Sub-filter being emptied (passes run newest → 1).
    filter: u32,
    /// Next slot of that sub-filter to examine.
    slot: u64,
    /// Continue past a sub-filter that could not be emptied (CF.COMPACT) or stop
    /// there (automatic compaction after deletes, like RedisBloom).
    cont: bool,
}

/// A scalable cuckoo filter.
///
/// # Compaction invariant
///
/// Every fingerprint of an item sits in one of the item's two candidate
/// buckets of the sub-filter holding it. Compaction only ever *copies* a
/// fingerprint from bucket `j` of sub-filter `k` into an empty slot of bucket
/// `j & mask_m` or `(j ^ H(fp)) & mask_m` of an older sub-filter `m < k`
/// (exactly that item's candidates in `m`, see the module docs), and clears the
/// source slot in the same call. Between any two public calls every inserted,
/// not deleted item is therefore findable (no false negatives mid-pass), and
/// `num_items` equals the number of occupied slots. A pass walks sub-filters
/// from the newest down to 1, a bounded number of slots per
/// [`CuckooFilter::compact_step`] call; a trailing sub-filter is freed as soon
/// as the pass finds it empty. Inserts and deletes may happen between steps:
/// they keep the invariant by themselves, and the per-sub-filter occupancy
/// counters let the pass decide emptiness without rescanning. `num_deletes`
/// resets to 0 when a pass completes.
pub struct CuckooFilter {
    subs: Vec<SubFilter>,
    layout: Layout,
    bucket_size: u8,
    fp_bits: u8,
    max_iterations: u16,
    expansion: u32,
    base_buckets: u64,
    num_items: u64,
    num_deletes: u64,
    error_rate: Option<f64>,
    cursor: Option<CompactCursor>,
}

impl fmt::Debug for CuckooFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuckooFilter")
            .field("num_filters", &self.subs.len())
            .field("base_buckets", &self.base_buckets)
            .field("bucket_size", &self.bucket_size)
            .field("fp_bits", &self.fp_bits)
            .field("max_iterations", &self.max_iterations)
            .field("expansion", &self.expansion)
            .field("num_items", &self.num_items)
            .field("num_deletes", &self.num_deletes)
            .field("error_rate", &self.error_rate)
            .field("cursor", &self.cursor)
            .finish()
    }
}

fn valid_error_rate(e: f64) -> bool {
    e > 0.0 && e < 1.0
}

/// Rounds the expansion up to a power of two; 0 stays 0.
fn round_expansion(e: u32) -> u32 {
    if e == 0 {
        0
    } else {
        e.next_power_of_two()
    }
}

impl CuckooFilter {
    /// Creates an empty filter with one sub-filter of
    /// `next_power_of_two(capacity / bucket_size)` buckets (min 1). Fails with
    /// `InvalidParams` on out-of-range parameters, `MemoryCap` if the table
    /// would exceed `max_bytes`, `AllocFailed` if the allocator refuses.
    pub fn new(p: &CuckooParams, max_bytes: u64) -> Result<Self, CuckooError> {
        if p.bucket_size == 0 {
            return Err(CuckooError::InvalidParams(
                "bucket size must be in [1, 255]",
            ));
        }
        if p.max_iterations == 0 {
            return Err(CuckooError::InvalidParams(
                "max iterations must be in [1, 65535]",
            ));
        }
        if p.expansion > MAX_EXPANSION {
            return Err(CuckooError::InvalidParams(
                "expansion must be in [0, 32768]",
            ));
        }
        if !(MIN_FP_BITS..=MAX_FP_BITS).contains(&p.fp_bits) {
            return Err(CuckooError::InvalidParams(
                "fingerprint width must be in [4, 32]",
            ));
        }
        if let Some(e) = p.error_rate {
            if !valid_error_rate(e) {
                return Err(CuckooError::InvalidParams("error rate must be in (0, 1)"));
            }
        }
        let b = u64::from(p.bucket_size);
        if p.capacity < 2 * b {
            return Err(CuckooError::InvalidParams(
                "capacity must be at least 2 * bucket size",
            ));
        }
        let base = (p.capacity / b)
            .max(1)
            .checked_next_power_of_two()
            .ok_or(CuckooError::MemoryCap)?;
        let layout = Layout::new(p.fp_bits, p.bucket_size);
        let bytes = table_bytes(base, p.bucket_size, p.fp_bits).ok_or(CuckooError::MemoryCap)?;
        if bytes > max_bytes {
            return Err(CuckooError::MemoryCap);
        }
        let mut subs = Vec::new();
        subs.try_reserve(1).map_err(|_| CuckooError::AllocFailed)?;
        subs.push(SubFilter::new_zeroed(base, &layout)?);
        Ok(CuckooFilter {
            subs,
            layout,
            bucket_size: p.bucket_size,
            fp_bits: p.fp_bits,
            max_iterations: p.max_iterations,
            expansion: round_expansion(p.expansion),
            base_buckets: base,
            num_items: 0,
            num_deletes: 0,
            error_rate: p.error_rate,
            cursor: None,
        })
    }

    /// A deep copy, allocated fallibly (for COPY), checked against `max_bytes`.
    pub fn try_clone(&self, max_bytes: u64) -> Result<Self, CuckooError> {
        let mut c = Self::from_header(&self.encode_header(), max_bytes)?;
        for (i, data) in self.subfilter_bytes().enumerate() {
            c.load_subfilter_bytes(i, data)?;
        }
        Ok(c)
    }

    // ----- info -----

    /// Items currently stored (inserts minus deletes).
    pub fn num_items(&self) -> u64 {
        self.num_items
    }
    /// Deletes since the last completed compaction pass.
    pub fn num_deletes(&self) -> u64 {
        self.num_deletes
    }
    /// Number of sub-filters.
    pub fn num_filters(&self) -> usize {
        self.subs.len()
    }
    /// Buckets of the first sub-filter (CF.INFO "Number of buckets").
    pub fn base_buckets(&self) -> u64 {
        self.base_buckets
    }
    /// Slots per bucket.
    pub fn bucket_size(&self) -> u8 {
        self.bucket_size
    }
    /// Expansion after rounding up to a power of two (0 = no growth).
    pub fn expansion(&self) -> u32 {
        self.expansion
    }
    /// Kick-outs tried before growing.
    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }
    /// Fingerprint width in bits.
    pub fn fp_bits(&self) -> u8 {
        self.fp_bits
    }
    /// The error rate requested at creation, `None` if not given.
    pub fn error_rate(&self) -> Option<f64> {
        self.error_rate
    }
    /// Bucket count of each sub-filter, oldest first.
    pub fn subfilter_buckets(&self) -> impl Iterator<Item = u64> + '_ {
        self.subs.iter().map(|s| s.buckets)
    }
    /// Total slots over all sub-filters.
    pub fn total_slots(&self) -> u64 {
        self.subs
            .iter()
            .fold(0u64, |a, s| a.saturating_add(s.slots))
    }
    /// Total slot-storage bytes over all sub-filters.
    pub fn table_bytes(&self) -> u64 {
        self.subs
            .iter()
            .fold(0u64, |a, s| a.saturating_add(s.data.len() as u64))
    }
    /// Whether an incremental compaction pass is under way.
    pub fn compaction_in_progress(&self) -> bool {
        self.cursor.is_some()
    }
    /// `40 + 16 * sub-filters + table bytes`: RedisBloom's formula at 8 bits
    /// (`buckets_i * bucket_size` bytes per sub-filter), the packed size otherwise.
    pub fn mem_usage(&self) -> usize {
        let n = self.subs.len() as u64;
        let total = 40u64
            .saturating_add(n.saturating_mul(16))
            .saturating_add(self.table_bytes());
        usize::try_from(total).unwrap_or(usize::MAX)
    }

    // ----- operations -----

    #[inline(always)]
    fn fp_of(&self, h: &CuckooHash) -> u32 {
        h.fingerprint(self.fp_bits)
    }

    /// Adds an item (duplicates allowed). On `Err` the filter is unchanged.
    pub fn insert(
        &mut self,
        h: &CuckooHash,
        max_filters: u32,
        max_bytes: u64,
    ) -> Result<(), CuckooError> {
        let fp = self.fp_of(h);
        let ah = alt_hash(fp);
        if self.place(h.lo, fp, ah) || self.kick(h.lo, fp) {
            self.count_insert();
            return Ok(());
        }
        self.grow(max_filters, max_bytes)?;
        if self.place(h.lo, fp, ah) {
            self.count_insert();
            Ok(())
        } else {
            // Unreachable: the new sub-filter is empty.
            Err(CuckooError::Full)
        }
    }

    /// Counts an inserted item. `num_items` never exceeds the slots, even when a
    /// loaded header's count disagrees with the loaded table: the header check
    /// refuses a count above the slots, so a filter must never save one (found
    /// by fuzzing: LOADCHUNK a header claiming a full table, add, save, and the
    /// payload no longer loaded).
    fn count_insert(&mut self) {
        self.num_items = self.num_items.saturating_add(1).min(self.total_slots());
    }

    /// Adds an item unless it tests present (CF.ADDNX): `Ok(false)` = present.
    pub fn insert_unique(
        &mut self,
        h: &CuckooHash,
        max_filters: u32,
        max_bytes: u64,
    ) -> Result<bool, CuckooError> {
        if self.contains(h) {
            return Ok(false);
        }
        self.insert(h, max_filters, max_bytes).map(|()| true)
    }

    /// First empty slot of bucket i1, else i2, newest sub-filter first.
    fn place(&mut self, lo: u64, fp: u32, ah: u64) -> bool {
        let l = self.layout;
        for sub in self.subs.iter_mut().rev() {
            let mask = sub.mask();
            let i1 = lo & mask;
            let i2 = (lo ^ ah) & mask;
            if let Some(s) = sub.find(&l, i1, 0).or_else(|| sub.find(&l, i2, 0)) {
                sub.set(&l, s, fp);
                return true;
            }
        }
        false
    }

    /// Kick-out in the newest sub-filter (spec 6.4): start at bucket i1; at
    /// step `n` swap with the slot at [`victim_pos`]`(bucket, n)`, move the
    /// evicted fingerprint to its alternate bucket, stop at the first empty
    /// slot. On failure the swaps are undone in reverse order (no path is
    /// stored: `alt` is an involution and the victim position depends only on
    /// `(bucket, n)`), so the table is byte-identical to before.
    fn kick(&mut self, lo: u64, fp: u32) -> bool {
        let l = self.layout;
        let iters = u64::from(self.max_iterations);
        let b = l.bucket_size;
        let Some(sub) = self.subs.last_mut() else {
            return false;
        };
        let mask = sub.mask();
        let mut bucket = lo & mask;
        let mut cur = fp;
        for n in 0..iters {
            let slot = bucket
                .wrapping_mul(b)
                .wrapping_add(victim_pos(bucket, n, b));
            let victim = sub.get(&l, slot);
            sub.put(&l, slot, cur);
            cur = victim;
            bucket = (bucket ^ alt_hash(cur)) & mask;
            if let Some(s) = sub.find(&l, bucket, 0) {
                sub.set(&l, s, cur);
                return true;
            }
        }
        for n in (0..iters).rev() {
            bucket = (bucket ^ alt_hash(cur)) & mask;
            let slot = bucket
                .wrapping_mul(b)
                .wrapping_add(victim_pos(bucket, n, b));
            let back = sub.get(&l, slot);
            sub.put(&l, slot, cur);
            cur = back;
        }
        false
    }

    /// Appends sub-filter `n` with `base * expansion^n` buckets.
    fn grow(&mut self, max_filters: u32, max_bytes: u64) -> Result<(), CuckooError> {
        if self.expansion == 0 {
            return Err(CuckooError::Full);
        }
        let n = self.subs.len() as u64;
        if n >= u64::from(max_filters.min(MAX_SUBFILTERS)) {
            return Err(CuckooError::MaxExpansions);
        }
        let last = self.subs.last().map_or(self.base_buckets, |s| s.buckets);
        let buckets = last
            .checked_mul(u64::from(self.expansion))
            .ok_or(CuckooError::MemoryCap)?;
        let bytes =
            table_bytes(buckets, self.bucket_size, self.fp_bits).ok_or(CuckooError::MemoryCap)?;
        let total = self
            .table_bytes()
            .checked_add(bytes)
            .ok_or(CuckooError::MemoryCap)?;
        if total > max_bytes {
            return Err(CuckooError::MemoryCap);
        }
        self.subs
            .try_reserve(1)
            .map_err(|_| CuckooError::AllocFailed)?;
        let sub = SubFilter::new_zeroed(buckets, &self.layout)?;
        self.subs.push(sub);
        Ok(())
    }

    /// Prefetches both candidate buckets of `h` in the newest sub-filters (at
    /// most [`PREFETCH_SUBFILTERS`]), for batches (see `core::hash::HashAhead`).
    #[inline]
    pub fn prefetch(&self, h: &CuckooHash) {
        let l = self.layout;
        let ah = alt_hash(self.fp_of(h));
        for sub in self.subs.iter().rev().take(PREFETCH_SUBFILTERS) {
            let mask = sub.mask();
            sub.prefetch_bucket(&l, h.lo & mask);
            sub.prefetch_bucket(&l, (h.lo ^ ah) & mask);
        }
    }

    /// Whether the item may be present (no false negatives).
    pub fn contains(&self, h: &CuckooHash) -> bool {
        let l = self.layout;
        let fp = self.fp_of(h);
        let ah = alt_hash(fp);
        self.subs.iter().any(|sub| {
            let mask = sub.mask();
            let i1 = h.lo & mask;
            let i2 = (h.lo ^ ah) & mask;
            sub.find(&l, i1, fp).is_some() || (i2 != i1 && sub.find(&l, i2, fp).is_some())
        })
    }

    /// Matching fingerprints over both candidate buckets of every sub-filter; a
    /// bucket that is both candidates is counted once (fixes quirk Q10).
    pub fn count(&self, h: &CuckooHash) -> u64 {
        let l = self.layout;
        let fp = self.fp_of(h);
        let ah = alt_hash(fp);
        self.subs.iter().fold(0u64, |acc, sub| {
            let mask = sub.mask();
            let i1 = h.lo & mask;
            let i2 = (h.lo ^ ah) & mask;
            let mut c = sub.count_in(&l, i1, fp);
            if i2 != i1 {
                c = c.saturating_add(sub.count_in(&l, i2, fp));
            }
            acc.saturating_add(c)
        })
    }

    /// Removes one copy (newest sub-filter first, bucket i1 before i2). Returns
    /// whether a fingerprint was cleared. A successful delete advances a running
    /// compaction pass, or starts one (stop-at-first-failure, like RedisBloom)
    /// when there is more than one sub-filter and deletes exceed 10% of the
    /// items; each call does at most [`AUTO_COMPACT_BUDGET`] units of work.
    pub fn delete(&mut self, h: &CuckooHash) -> bool {
        let l = self.layout;
        let fp = self.fp_of(h);
        let ah = alt_hash(fp);
        let mut found = false;
        for sub in self.subs.iter_mut().rev() {
            let mask = sub.mask();
            let i1 = h.lo & mask;
            let i2 = (h.lo ^ ah) & mask;
            if let Some(s) = sub.find(&l, i1, fp).or_else(|| sub.find(&l, i2, fp)) {
                sub.set(&l, s, 0);
                found = true;
                break;
            }
        }
        if !found {
            return false;
        }
        self.num_items = self.num_items.saturating_sub(1);
        self.num_deletes = self.num_deletes.saturating_add(1);
        if self.cursor.is_none()
            && self.subs.len() > 1
            && self.num_deletes.saturating_mul(10) > self.num_items
        {
            self.start_pass(false);
        }
        if self.cursor.is_some() {
            self.compact_step(AUTO_COMPACT_BUDGET);
        }
        true
    }

    fn start_pass(&mut self, cont: bool) {
        let newest = self.subs.len().saturating_sub(1);
        self.cursor = Some(CompactCursor {
            filter: u32::try_from(newest).unwrap_or(0),
            slot: 0,
            cont,
        });
    }

    fn finish_pass(&mut self) {
        self.cursor = None;
        self.num_deletes = 0;
    }

    /// Full compaction (CF.COMPACT): restarts any running pass as a
    /// continue-on-failure pass and runs it to completion. The work is
    /// proportional to the slots of sub-filters 1.. (about 50 ms for 4 MiB of
    /// tables over 32 sub-filters); call [`compact_step`](Self::compact_step)
    /// repeatedly instead to bound the time per call.
    pub fn compact(&mut self) {
        self.start_pass(true);
        while !self.compact_step(u64::MAX) {}
    }

    /// Runs the current compaction pass for at most `budget` units of work,
    /// starting a continue-on-failure pass if none is running. One unit = one
    /// slot examined, one older sub-filter probed while relocating a
    /// fingerprint (two buckets), or one sub-filter boundary. A call may
    /// overrun the budget by at most one slot's relocation (`< num_filters`
    /// units); it always does at least one unit. Returns `true` when the pass
    /// has completed (then `num_deletes` is 0).
    pub fn compact_step(&mut self, budget: u64) -> bool {
        if self.cursor.is_none() {
            self.start_pass(true);
        }
        let l = self.layout;
        let mut budget = budget.max(1);
        loop {
            let Some(mut c) = self.cursor else {
                return true;
            };
            let k = c.filter as usize;
            if k == 0 || k >= self.subs.len() {
                self.finish_pass();
                return true;
            }
            if budget == 0 {
                return false;
            }
            let (slots, occupied) = match self.subs.get(k) {
                Some(s) => (s.slots, s.occupied),
                None => (0, 0),
            };
            if occupied > 0 && c.slot < slots {
                while c.slot < slots && budget > 0 {
                    let cost = self.relocate(&l, k, c.slot);
                    c.slot = c.slot.saturating_add(1);
                    budget = budget.saturating_sub(cost);
                    if self.subs.get(k).is_none_or(|x| x.occupied == 0) {
                        break;
                    }
                }
                self.cursor = Some(c);
                continue;
            }
            // Sub-filter k fully examined (or found empty).
            budget = budget.saturating_sub(1);
            if occupied == 0 && k.saturating_add(1) == self.subs.len() {
                self.subs.pop();
                // Fewer slots: keep a loaded count that disagrees with the table
                // loadable (see `count_insert`).
                self.num_items = self.num_items.min(self.total_slots());
            } else if occupied != 0 && !c.cont {
                self.finish_pass();
                return true;
            }
            c.filter = c.filter.saturating_sub(1);
            c.slot = 0;
            self.cursor = Some(c);
        }
    }

    /// Moves the fingerprint in slot `s` of sub-filter `k` to an empty slot of
    /// one of its candidate buckets in an older sub-filter (oldest first), if
    /// any. Returns the work done: 1 + older sub-filters probed.
    fn relocate(&mut self, l: &Layout, k: usize, s: u64) -> u64 {
        let Some(src) = self.subs.get(k) else {
            return 1;
        };
        let fp = src.get(l, s);
        if fp == 0 {
            return 1;
        }
        let j = s / l.bucket_size;
        let ah = alt_hash(fp);
        let (older, rest) = self.subs.split_at_mut(k);
        let mut cost = 1u64;
        for dst in older.iter_mut() {
            cost = cost.saturating_add(1);
            let mask = dst.mask();
            let c1 = j & mask;
            let c2 = (j ^ ah) & mask;
            if let Some(t) = dst.find(l, c1, 0).or_else(|| dst.find(l, c2, 0)) {
                dst.set(l, t, fp);
                if let Some(src) = rest.first_mut() {
                    src.set(l, s, 0);
                }
                break;
            }
        }
        cost
    }

    // ----- persistence -----

    /// Encodes the filter's shape and counters (not the slots).
    ///
    /// Layout, version 1, 64 bytes, integers little-endian:
    ///
    /// | offset | size | field |
    /// |---|---|---|
    /// | 0  | 4 | magic `b"FBcf"` |
    /// | 4  | 1 | format version = 1 |
    /// | 5  | 1 | fp_bits, 4..=32 |
    /// | 6  | 1 | bucket_size, 1..=255 |
    /// | 7  | 1 | flags: bit 0 = compaction pass running, bit 1 = that pass is continue-on-failure; other bits 0 |
    /// | 8  | 2 | max_iterations u16, >= 1 |
    /// | 10 | 2 | reserved, 0 |
    /// | 12 | 4 | expansion u32: 0 or a power of two <= 32768 (0 only with one sub-filter) |
    /// | 16 | 4 | number of sub-filters u32, 1..=65536 |
    /// | 20 | 4 | compaction cursor: sub-filter index u32 (< sub-filters; 0 when no pass) |
    /// | 24 | 8 | base bucket count u64 (first sub-filter), non-zero power of two |
    /// | 32 | 8 | num_items u64, <= total slots (written capped at the total) |
    /// | 40 | 8 | num_deletes u64 |
    /// | 48 | 8 | requested error rate, f64 bits; all-zero bits = not given, else in (0, 1) |
    /// | 56 | 8 | compaction cursor: next slot u64 (<= that sub-filter's slots; 0 when no pass) |
    ///
    /// Sub-filter `i` has `base * expansion^i` buckets and
    /// `ceil(buckets_i * bucket_size * fp_bits / 8)` bytes of slot storage.
    pub fn encode_header(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(&HEADER_MAGIC);
        h.push(HEADER_VERSION);
        h.push(self.fp_bits);
        h.push(self.bucket_size);
        let (flags, cf, cs) = match self.cursor {
            Some(c) => (
                FLAG_COMPACTING | if c.cont { FLAG_COMPACT_CONT } else { 0 },
                c.filter,
                c.slot,
            ),
            None => (0, 0, 0),
        };
        h.push(flags);
        h.extend_from_slice(&self.max_iterations.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(&self.expansion.to_le_bytes());
        h.extend_from_slice(&(self.subs.len() as u32).to_le_bytes());
        h.extend_from_slice(&cf.to_le_bytes());
        h.extend_from_slice(&self.base_buckets.to_le_bytes());
        // A count loaded from a header is not checked against the slots it arrives with, so
        // it can exceed them later (CF.ADD into the free slots of a filter whose header
        // claimed it full, or compaction freeing sub-filters such a count still covers).
        // Capped here, so every header this writes passes `from_header`: an RDB payload,
        // DUMP, COPY or SCANDUMP of any filter always loads back.
        let items = self.num_items.min(self.total_slots());
        h.extend_from_slice(&items.to_le_bytes());
        h.extend_from_slice(&self.num_deletes.to_le_bytes());
        h.extend_from_slice(&self.error_rate.map_or(0, f64::to_bits).to_le_bytes());
        h.extend_from_slice(&cs.to_le_bytes());
        h
    }

    /// Rebuilds a filter (zeroed slots) from [`encode_header`](Self::encode_header)
    /// output. Every field, and the total table size against `max_bytes`, is
    /// validated before anything is allocated.
    pub fn from_header(bytes: &[u8], max_bytes: u64) -> Result<Self, CuckooError> {
        use CuckooError::BadHeader;
        let hdr: &[u8; HEADER_LEN] = bytes.try_into().map_err(|_| BadHeader("length"))?;
        let u16_at = |o: usize| -> u16 {
            match hdr.get(o..o + 2) {
                Some([a, b]) => u16::from_le_bytes([*a, *b]),
                _ => 0,
            }
        };
        let u32_at = |o: usize| -> u32 { hdr.get(o..o + 4).map_or(0, le32) };
        let u64_at = |o: usize| -> u64 { load_word(hdr, o) };
        if hdr.get(0..4) != Some(&HEADER_MAGIC[..]) {
            return Err(BadHeader("magic"));
        }
        let [_, _, _, _, version, fp_bits, bucket_size, flags, ..] = *hdr;
        if version != HEADER_VERSION {
            return Err(BadHeader("version"));
        }
        if !(MIN_FP_BITS..=MAX_FP_BITS).contains(&fp_bits) {
            return Err(BadHeader("fingerprint width"));
        }
        if bucket_size == 0 {
            return Err(BadHeader("bucket size"));
        }
        if flags & !(FLAG_COMPACTING | FLAG_COMPACT_CONT) != 0
            || (flags & FLAG_COMPACTING == 0 && flags != 0)
        {
            return Err(BadHeader("flags"));
        }
        let max_iterations = u16_at(8);
        if max_iterations == 0 {
            return Err(BadHeader("max iterations"));
        }
        if u16_at(10) != 0 {
            return Err(BadHeader("reserved"));
        }
        let expansion = u32_at(12);
        if expansion > MAX_EXPANSION || (expansion != 0 && !expansion.is_power_of_two()) {
            return Err(BadHeader("expansion"));
        }
        let nfilters = u32_at(16);
        if nfilters == 0 || nfilters > MAX_SUBFILTERS {
            return Err(BadHeader("number of filters"));
        }
        if expansion == 0 && nfilters != 1 {
            return Err(BadHeader("expansion 0 with several filters"));
        }
        let cursor_filter = u32_at(20);
        let base = u64_at(24);
        if !base.is_power_of_two() {
            return Err(BadHeader("number of buckets"));
        }
        let num_items = u64_at(32);
        let num_deletes = u64_at(40);
        let err_bits = u64_at(48);
        let error_rate = if err_bits == 0 {
            None
        } else {
            let e = f64::from_bits(err_bits);
            if !valid_error_rate(e) {
                return Err(BadHeader("error rate"));
            }
            Some(e)
        };
        let cursor_slot = u64_at(56);

        // Shapes and sizes, all checked, before any allocation.
        let mut total_bytes = 0u64;
        let mut total_slots = 0u64;
        let mut buckets = base;
        let mut cursor_filter_slots = None;
        for i in 0..nfilters {
            if i > 0 {
                buckets = buckets
                    .checked_mul(u64::from(expansion))
                    .ok_or(CuckooError::MemoryCap)?;
            }
            let slots = buckets
                .checked_mul(u64::from(bucket_size))
                .ok_or(CuckooError::MemoryCap)?;
            let b = table_bytes(buckets, bucket_size, fp_bits).ok_or(CuckooError::MemoryCap)?;
            total_bytes = total_bytes.checked_add(b).ok_or(CuckooError::MemoryCap)?;
            total_slots = total_slots.saturating_add(slots);
            if total_bytes > max_bytes || usize::try_from(total_bytes).is_err() {
                return Err(CuckooError::MemoryCap);
            }
            if i == cursor_filter {
                cursor_filter_slots = Some(slots);
            }
        }
        if num_items > total_slots {
            return Err(BadHeader("number of items"));
        }
        let cursor = if flags & FLAG_COMPACTING != 0 {
            match cursor_filter_slots {
                Some(slots) if cursor_slot <= slots => Some(CompactCursor {
                    filter: cursor_filter,
                    slot: cursor_slot,
                    cont: flags & FLAG_COMPACT_CONT != 0,
                }),
                _ => return Err(BadHeader("compaction cursor")),
            }
        } else {
            if cursor_filter != 0 || cursor_slot != 0 {
                return Err(BadHeader("compaction cursor"));
            }
            None
        };

        let layout = Layout::new(fp_bits, bucket_size);
        let mut subs = Vec::new();
        subs.try_reserve_exact(nfilters as usize)
            .map_err(|_| CuckooError::AllocFailed)?;
        let mut buckets = base;
        for i in 0..nfilters {
            if i > 0 {
                buckets = buckets.saturating_mul(u64::from(expansion));
            }
            subs.push(SubFilter::new_zeroed(buckets, &layout)?);
        }
        Ok(CuckooFilter {
            subs,
            layout,
            bucket_size,
            fp_bits,
            max_iterations,
            expansion,
            base_buckets: base,
            num_items,
            num_deletes,
            error_rate,
            cursor,
        })
    }

    /// Raw slot storage of each sub-filter, oldest first (for RDB save).
    pub fn subfilter_bytes(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.subs.iter().map(|s| s.data.as_slice())
    }

    /// Replaces sub-filter `index`'s slot storage (RDB load); `data` must have
    /// exactly that sub-filter's length.
    pub fn load_subfilter_bytes(&mut self, index: usize, data: &[u8]) -> Result<(), CuckooError> {
        let l = self.layout;
        let sub = self
            .subs
            .get_mut(index)
            .ok_or(CuckooError::BadChunk("no such sub-filter"))?;
        if sub.data.len() != data.len() {
            return Err(CuckooError::BadChunk("length"));
        }
        sub.data.copy_from_slice(data);
        sub.occupied = sub.count_occupied(&l, 0, sub.slots);
        Ok(())
    }

    /// Visits every SCANDUMP data chunk in order, as `(iterator returned with
    /// the chunk, bytes)`, in time linear in the filter's size (a SCANDUMP
    /// client loop looks each chunk up; whole-filter callbacks must not).
    pub fn for_each_chunk(&self, mut f: impl FnMut(i64, &[u8])) {
        let mut iter = 1i64;
        for sub in &self.subs {
            for piece in sub.data.chunks(MAX_CHUNK) {
                iter = iter.saturating_add(piece.len() as i64);
                f(iter, piece);
            }
        }
    }

    /// Fills the whole table from a stream of chunks in SCANDUMP order: `read`
    /// is called with each chunk's destination (its length is the chunk's), then
    /// occupancy is recounted. Linear in the filter's size.
    pub fn fill_chunks<E>(
        &mut self,
        mut read: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let l = self.layout;
        for sub in &mut self.subs {
            for piece in sub.data.chunks_mut(MAX_CHUNK) {
                read(piece)?;
            }
            sub.occupied = sub.count_occupied(&l, 0, sub.slots);
        }
        Ok(())
    }

    /// CF.SCANDUMP step. Iterator 0 → `(1, header)`. Iterator `p >= 1` → the
    /// slot bytes at offset `p - 1` of the concatenation of all sub-filters,
    /// at most [`MAX_CHUNK`] bytes and never crossing a sub-filter boundary, as
    /// `(p + len, bytes)`. Past the end (or `p < 0`) → `None`. Filters with
    /// zero items dump too (fixes quirk Q13).
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, Cow<'_, [u8]>)> {
        if iter == 0 {
            return Some((1, Cow::Owned(self.encode_header())));
        }
        let mut off = u64::try_from(iter).ok()?.checked_sub(1)?;
        for sub in &self.subs {
            let len = sub.data.len() as u64;
            if off < len {
                let end = len.min(off.saturating_add(MAX_CHUNK as u64));
                let chunk = sub.data.get(idx(off)..idx(end))?;
                let next = iter.checked_add(i64::try_from(chunk.len()).ok()?)?;
                return Some((next, Cow::Borrowed(chunk)));
            }
            off -= len;
        }
        None
    }

    /// CF.LOADCHUNK with iterator `p > 1`: `data` covers offsets
    /// `[p - 1 - len, p - 1)` of the concatenated slot storage and must lie
    /// inside one sub-filter.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), CuckooError> {
        use CuckooError::BadChunk;
        if data.is_empty() {
            return Err(BadChunk("empty"));
        }
        let end = u64::try_from(iter)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .ok_or(BadChunk("position"))?;
        let start = end
            .checked_sub(data.len() as u64)
            .ok_or(BadChunk("position"))?;
        let l = self.layout;
        let mut base = 0u64;
        for sub in self.subs.iter_mut() {
            let len = sub.data.len() as u64;
            let sub_end = base.saturating_add(len);
            if start < sub_end {
                if end > sub_end {
                    return Err(BadChunk("chunk spans sub-filters"));
                }
                let (a, c) = (start - base, end - base);
                let f = u64::from(l.fp_bits);
                let first_slot = a.saturating_mul(8) / f;
                let end_slot = c.saturating_mul(8).div_ceil(f);
                let before = sub.count_occupied(&l, first_slot, end_slot);
                let dst = sub
                    .data
                    .get_mut(idx(a)..idx(c))
                    .ok_or(BadChunk("out of bounds"))?;
                dst.copy_from_slice(data);
                let after = sub.count_occupied(&l, first_slot, end_slot);
                sub.occupied = sub.occupied.saturating_sub(before).saturating_add(after);
                return Ok(());
            }
            base = sub_end;
        }
        Err(BadChunk("out of bounds"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const NOCAP: u64 = u64::MAX;

    struct SplitMix(u64);
    impl SplitMix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn params(capacity: u64, bucket_size: u8, expansion: u32, fp_bits: u8) -> CuckooParams {
        CuckooParams {
            capacity,
            bucket_size,
            max_iterations: 20,
            expansion,
            fp_bits,
            error_rate: None,
        }
    }

    fn key(tag: u64, i: u64) -> [u8; 8] {
        (i | (tag << 56)).to_le_bytes()
    }

    /// Header + all slot bytes, for byte-identity checks.
    fn snapshot(f: &CuckooFilter) -> (Vec<u8>, Vec<Vec<u8>>) {
        (
            f.encode_header(),
            f.subfilter_bytes().map(|s| s.to_vec()).collect(),
        )
    }

    fn check_occupancy(f: &CuckooFilter) {
        let mut total = 0;
        for s in &f.subs {
            let real = s.count_occupied(&f.layout, 0, s.slots);
            assert_eq!(real, s.occupied);
            total += real;
        }
        assert_eq!(total, f.num_items);
    }

    #[test]
    fn shapes_match_redisbloom() {
        for (cap, bs, buckets) in [
            (1000, 2, 512),
            (10, 2, 8),
            (10000, 2, 8192),
            (64, 1, 64),
            (256, 4, 64),
            (2, 1, 2),
        ] {
            let f = CuckooFilter::new(&params(cap, bs, 1, 8), NOCAP).unwrap();
            assert_eq!(f.base_buckets(), buckets, "{cap}/{bs}");
        }
        let f = CuckooFilter::new(&CuckooParams::default(), NOCAP).unwrap();
        assert_eq!(f.mem_usage(), 40 + 16 + 1024);
        let f = CuckooFilter::new(&params(1000, 2, 1, 8), NOCAP).unwrap();
        assert_eq!(f.mem_usage(), 1080);
        let f = CuckooFilter::new(&params(1000, 2, 1, 12), NOCAP).unwrap();
        assert_eq!(f.mem_usage(), 40 + 16 + 1536);
        let f = CuckooFilter::new(&params(1000, 2, 3, 8), NOCAP).unwrap();
        assert_eq!(f.expansion(), 4);
        let f = CuckooFilter::new(&params(1000, 2, 0, 8), NOCAP).unwrap();
        assert_eq!(f.expansion(), 0);
    }

    #[test]
    fn new_rejects_nonsense() {
        let bad = [
            params(0, 2, 1, 8),
            params(3, 2, 1, 8),
            params(1000, 0, 1, 8),
            params(1000, 2, 32769, 8),
            params(1000, 2, 1, 3),
            params(1000, 2, 1, 33),
            params(u64::MAX, 1, 1, 8),
            CuckooParams {
                max_iterations: 0,
                ..params(1000, 2, 1, 8)
            },
            CuckooParams {
                error_rate: Some(f64::NAN),
                ..params(1000, 2, 1, 8)
            },
            CuckooParams {
                error_rate: Some(1.0),
                ..params(1000, 2, 1, 8)
            },
        ];
        for p in bad {
            assert!(CuckooFilter::new(&p, NOCAP).is_err(), "{p:?}");
        }
        assert_eq!(
            CuckooFilter::new(&params(1 << 30, 1, 1, 32), 1 << 20).unwrap_err(),
            CuckooError::MemoryCap
        );
    }

    #[test]
    fn round_trips_all_widths() {
        for fp_bits in [4u8, 5, 7, 8, 9, 12, 13, 16, 20, 31, 32] {
            for bs in [1u8, 2, 3, 4, 7] {
                let mut f = CuckooFilter::new(&params(4000, bs, 1, fp_bits), NOCAP).unwrap();
                let n = 1500u64;
                for i in 0..n {
                    f.insert(&hash_item(&key(1, i)), 64, NOCAP).unwrap();
                }
                check_occupancy(&f);
                for i in 0..n {
                    assert!(
                        f.contains(&hash_item(&key(1, i))),
                        "f={fp_bits} b={bs} i={i}"
                    );
                }
                for i in 0..n / 2 {
                    assert!(f.delete(&hash_item(&key(1, i))));
                }
                for i in n / 2..n {
                    assert!(f.contains(&hash_item(&key(1, i))));
                }
                assert_eq!(f.num_items(), n - n / 2);
                check_occupancy(&f);
            }
        }
    }

    #[test]
    fn count_duplicates_and_coinciding_buckets() {
        let mut f = CuckooFilter::new(&params(1024, 4, 1, 8), NOCAP).unwrap();
        let h = hash_item(b"dup");
        for i in 1..=5 {
            f.insert(&h, 32, NOCAP).unwrap();
            assert_eq!(f.count(&h), i);
        }
        assert!(!f.insert_unique(&h, 32, NOCAP).unwrap());
        assert!(f.insert_unique(&hash_item(b"new"), 32, NOCAP).unwrap());
        for i in (0..5).rev() {
            assert!(f.delete(&h));
            assert_eq!(f.count(&h), i);
        }
        assert!(!f.delete(&h));
        // Both candidate buckets coincide: count must not double (Q10).
        let mut f = CuckooFilter::new(&params(8, 4, 1, 8), NOCAP).unwrap();
        assert_eq!(f.base_buckets(), 2);
        let h = (0u64..)
            .map(|i| hash_item(&key(0, i)))
            .find(|h| alt_hash(h.fingerprint(8)) & 1 == 0)
            .unwrap();
        f.insert(&h, 32, NOCAP).unwrap();
        assert_eq!(f.count(&h), 1);
        f.insert(&h, 32, NOCAP).unwrap();
        assert_eq!(f.count(&h), 2);
        assert!(f.delete(&h));
        assert_eq!(f.count(&h), 1);
    }

    #[test]
    fn delete_absent_changes_nothing() {
        for fp_bits in [8u8, 12, 16] {
            let mut f = CuckooFilter::new(&params(64, 2, 1, fp_bits), NOCAP).unwrap();
            for i in 0..300 {
                f.insert(&hash_item(&key(1, i)), 64, NOCAP).unwrap();
            }
            assert!(f.num_filters() > 1);
            let before = snapshot(&f);
            let mut misses = 0;
            for i in 0..2000 {
                let h = hash_item(&key(2, i));
                if !f.contains(&h) {
                    assert!(!f.delete(&h));
                    misses += 1;
                }
            }
            assert!(misses > 1000);
            assert_eq!(before, snapshot(&f));
        }
    }

    #[test]
    fn failed_insert_leaves_table_identical() {
        for (bs, fp_bits) in [(1u8, 8u8), (2, 8), (4, 12), (3, 16), (2, 5)] {
            let mut f = CuckooFilter::new(
                &CuckooParams {
                    max_iterations: 50,
                    ..params(256, bs, 0, fp_bits)
                },
                NOCAP,
            )
            .unwrap();
            let mut failures = 0;
            let mut inserted = Vec::new();
            for i in 0..2000 {
                let h = hash_item(&key(3, i));
                let before = snapshot(&f);
                match f.insert(&h, 32, NOCAP) {
                    Ok(()) => inserted.push(h),
                    Err(e) => {
                        assert_eq!(e, CuckooError::Full);
                        assert_eq!(before, snapshot(&f));
                        failures += 1;
                    }
                }
            }
            assert!(failures > 100);
            for h in &inserted {
                assert!(f.contains(h));
            }
            check_occupancy(&f);
        }
    }

    #[test]
    fn growth_and_max_expansions_per_growth() {
        // 2 buckets x 2 slots per sub-filter, expansion 1 (RedisBloom's `CF.RESERVE cf 4`).
        let mut f = CuckooFilter::new(&params(4, 2, 1, 8), NOCAP).unwrap();
        let mut added = 0u64;
        let err = loop {
            match f.insert(&hash_item(added.to_string().as_bytes()), 32, NOCAP) {
                Ok(()) => added += 1,
                Err(e) => break e,
            }
            assert!(f.num_filters() <= 32);
        };
        assert_eq!(err, CuckooError::MaxExpansions);
        assert_eq!(f.num_filters(), 32);
        assert!(added > 100 && added <= 128, "{added}");
        // Expansion 2: sizes double; the limit is enforced per growth.
        let mut f = CuckooFilter::new(&params(8, 2, 2, 8), NOCAP).unwrap();
        let mut i = 0u64;
        let err = loop {
            if let Err(e) = f.insert(&hash_item(&key(4, i)), 5, NOCAP) {
                break e;
            }
            i += 1;
        };
        assert_eq!(err, CuckooError::MaxExpansions);
        assert_eq!(
            f.subfilter_buckets().collect::<Vec<_>>(),
            vec![4, 8, 16, 32, 64]
        );
        // Memory cap on growth.
        let mut f = CuckooFilter::new(&params(8, 2, 2, 8), 8 + 16).unwrap();
        let mut i = 0u64;
        let err = loop {
            if let Err(e) = f.insert(&hash_item(&key(5, i)), 100, 8 + 16) {
                break e;
            }
            i += 1;
        };
        assert_eq!(err, CuckooError::MemoryCap);
        assert_eq!(f.num_filters(), 2);
        // Expansion 0 never grows.
        let mut f = CuckooFilter::new(&params(8, 2, 0, 8), NOCAP).unwrap();
        let mut i = 0u64;
        let err = loop {
            if let Err(e) = f.insert(&hash_item(&key(6, i)), 100, NOCAP) {
                break e;
            }
            i += 1;
        };
        assert_eq!(err, CuckooError::Full);
        assert_eq!(f.num_filters(), 1);
    }

    #[test]
    fn compaction_frees_trailing_subfilters() {
        let mut f = CuckooFilter::new(&params(64, 2, 2, 12), NOCAP).unwrap();
        for i in 0..1000 {
            f.insert(&hash_item(&key(7, i)), 64, NOCAP).unwrap();
        }
        let grown = f.num_filters();
        assert!(grown >= 4);
        for i in 0..950 {
            assert!(f.delete(&hash_item(&key(7, i))));
        }
        f.compact();
        assert!(!f.compaction_in_progress());
        assert_eq!(f.num_deletes(), 0);
        assert!(f.num_filters() < grown, "{} {}", f.num_filters(), grown);
        for i in 950..1000 {
            assert!(f.contains(&hash_item(&key(7, i))));
        }
        check_occupancy(&f);
        // Incremental steps are bounded, keep everything findable, and finish.
        // Deleting < 10% of the items does not trigger automatic compaction.
        let mut f = CuckooFilter::new(&params(64, 2, 1, 8), NOCAP).unwrap();
        for i in 0..2000 {
            f.insert(&hash_item(&key(8, i)), 1000, NOCAP).unwrap();
        }
        let grown = f.num_filters();
        for i in 0..150 {
            assert!(f.delete(&hash_item(&key(8, i))));
        }
        assert!(!f.compaction_in_progress());
        let mut steps = 0;
        while !f.compact_step(16) {
            steps += 1;
            for i in (150..2000).step_by(7) {
                assert!(f.contains(&hash_item(&key(8, i))));
            }
        }
        assert!(steps > 50, "{steps}");
        for i in 150..2000 {
            assert!(f.contains(&hash_item(&key(8, i))));
        }
        assert_eq!(f.num_deletes(), 0);
        assert!(f.num_filters() < grown, "{} {grown}", f.num_filters());
        check_occupancy(&f);
        // Automatic compaction after many deletes frees sub-filters by itself.
        for i in 150..1900 {
            assert!(f.delete(&hash_item(&key(8, i))));
        }
        while f.compaction_in_progress() {
            assert!(f.delete(&hash_item(&key(8, 1999))));
            f.insert(&hash_item(&key(8, 1999)), 1000, NOCAP).unwrap();
        }
        assert!(f.num_filters() <= 4, "{}", f.num_filters());
        for i in 1900..2000 {
            assert!(f.contains(&hash_item(&key(8, i))));
        }
        check_occupancy(&f);
    }

    #[test]
    fn no_false_negatives_property() {
        for seed in 0..200u64 {
            let mut rng = SplitMix(seed.wrapping_mul(0x1234_5678_9abc_def1) ^ 0xfeed);
            let bs = [1u8, 2, 3, 4][rng.below(4) as usize];
            let fp_bits = [8u8, 12, 16, 5, 32][rng.below(5) as usize];
            let expansion = [1u32, 2, 4][rng.below(3) as usize];
            let p = CuckooParams {
                max_iterations: [1u16, 5, 20, 100][rng.below(4) as usize],
                ..params(2 * u64::from(bs) + rng.below(64), bs, expansion, fp_bits)
            };
            let mut f = CuckooFilter::new(&p, NOCAP).unwrap();
            let universe = 50 + rng.below(400);
            let mut model: HashMap<u64, u64> = HashMap::new();
            let ops = 2500;
            for op in 0..ops {
                let r = rng.below(100);
                if r < 55 {
                    let x = rng.below(universe);
                    let h = hash_item(&key(9, x));
                    if f.insert(&h, 40, 1 << 24).is_ok() {
                        *model.entry(x).or_default() += 1;
                    }
                } else if r < 95 {
                    if model.is_empty() {
                        continue;
                    }
                    let nth = rng.below(model.len() as u64) as usize;
                    let x = *model.keys().nth(nth).unwrap();
                    assert!(f.delete(&hash_item(&key(9, x))), "seed {seed} op {op}");
                    let c = model.get_mut(&x).unwrap();
                    *c -= 1;
                    if *c == 0 {
                        model.remove(&x);
                    }
                } else if r < 99 {
                    f.compact_step(1 + rng.below(64));
                } else {
                    f.compact();
                }
                if op % 50 == 0 || op == ops - 1 {
                    for (&x, &c) in &model {
                        let h = hash_item(&key(9, x));
                        assert!(f.count(&h) >= c, "seed {seed} op {op} item {x}");
                        assert!(f.contains(&h));
                    }
                    check_occupancy(&f);
                }
            }
        }
    }

    #[test]
    fn fp_bits_for_error_choices() {
        assert_eq!(fp_bits_for_error(0.02, 2), Some(8));
        assert_eq!(fp_bits_for_error(0.5, 2), Some(8));
        assert_eq!(fp_bits_for_error(0.001, 2), Some(12));
        assert_eq!(fp_bits_for_error(0.0001, 2), Some(16));
        assert!(fp_bits_for_error(0.01, 2).unwrap() > 8);
        assert!(fp_bits_for_error(1e-6, 4).unwrap() > 16);
        assert_eq!(fp_bits_for_error(1e-12, 2), None);
        assert_eq!(fp_bits_for_error(0.0, 2), None);
        assert_eq!(fp_bits_for_error(1.0, 2), None);
        assert_eq!(fp_bits_for_error(f64::NAN, 2), None);
        assert_eq!(fp_bits_for_error(0.01, 0), None);
        for b in [1u8, 2, 4, 255] {
            let mut last = 8;
            for e in [0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
                if let Some(f) = fp_bits_for_error(e, b) {
                    assert!(fpr_bound(f, b) <= e);
                    assert!(f == 8 || fpr_bound(f - 1, b) > e);
                    assert!(f >= last);
                    last = f;
                }
            }
        }
    }

    /// Fills to the target load (or the first failure) and measures the FPR
    /// over 10^6 non-members.
    #[test]
    fn measured_fpr_within_bound() {
        const PROBES: u64 = 1_000_000;
        let mut table = String::new();
        for fp_bits in [8u8, 12, 16, 32] {
            for bs in [1u8, 2, 4] {
                let slots = 1u64 << 16;
                let mut f = CuckooFilter::new(
                    &CuckooParams {
                        max_iterations: 2000,
                        ..params(slots, bs, 0, fp_bits)
                    },
                    NOCAP,
                )
                .unwrap();
                // Fill to the target load, skipping items whose insert fails
                // (a failed insert leaves the table unchanged), or give up
                // after `slots` failures.
                let target_load = match bs {
                    1 => 0.50,
                    2 => 0.90,
                    _ => 0.95,
                };
                let target = (slots as f64 * target_load) as u64;
                let (mut n, mut tried, mut first_fail) = (0u64, 0u64, None);
                let mut members = Vec::new();
                while n < target && tried - n < slots {
                    let h = hash_item(&key(10, tried));
                    tried += 1;
                    if f.insert(&h, 1, NOCAP).is_ok() {
                        n += 1;
                        members.push(h);
                    } else if first_fail.is_none() {
                        first_fail = Some(n);
                    }
                }
                let load = n as f64 / slots as f64;
                let first_fail = first_fail.map_or("none".to_string(), |x| {
                    format!("{:.3}", x as f64 / slots as f64)
                });
                for h in &members {
                    assert!(f.contains(h));
                }
                let fp = (0..PROBES)
                    .filter(|&i| f.contains(&hash_item(&key(11, i))))
                    .count() as u64;
                let rate = fp as f64 / PROBES as f64;
                let bound = fpr_bound(fp_bits, bs);
                let margin = 4.0 * (bound * (1.0 - bound) / PROBES as f64).sqrt();
                let bytes_per_item = f.table_bytes() as f64 / n as f64;
                table.push_str(&format!(
                    "f={fp_bits:2} b={bs} first-failure-load={first_fail} load={load:.3} \
                     fpr={rate:.3e} bound={bound:.3e} bytes/item={bytes_per_item:.3}\n"
                ));
                if fp_bits == 32 {
                    assert!(fp <= 1, "{fp}");
                } else {
                    assert!(
                        rate <= bound + margin,
                        "f={fp_bits} b={bs}: {rate} > {bound}"
                    );
                }
                if bs == 4 {
                    assert!(load >= 0.949, "b=4 should reach 95%: {load}");
                }
            }
        }
        println!("{table}");
    }

    /// Regression (found by tests/stress.rs): a header whose item count claims every slot
    /// while the tables are empty, then inserts (and a compaction that frees sub-filters):
    /// the encoded header must still decode, or the filter's own RDB payload is refused.
    #[test]
    fn a_lying_item_count_never_makes_an_undecodable_header() {
        let mut f = CuckooFilter::new(&params(4, 2, 1, 8), NOCAP).unwrap();
        let slots = f.total_slots();
        let mut h = f.encode_header();
        h[32..40].copy_from_slice(&slots.to_le_bytes());
        f = CuckooFilter::from_header(&h, NOCAP).unwrap();
        assert_eq!(f.num_items(), slots);
        for i in 0..slots {
            f.insert(&hash_item(&i.to_le_bytes()), 32, NOCAP).unwrap();
        }
        let h = f.encode_header();
        let g = CuckooFilter::from_header(&h, NOCAP).unwrap();
        assert_eq!(g.num_items(), f.total_slots());
        assert!(f.try_clone(NOCAP).is_ok());

        // Three sub-filters, a count of all their slots, nothing stored: compaction frees
        // sub-filters 1 and 2, and the count still encodes within the one left.
        let mut f = CuckooFilter::new(&params(4, 2, 1, 8), NOCAP).unwrap();
        let mut i = 0u64;
        while f.num_filters() < 3 {
            f.insert(&hash_item(&i.to_le_bytes()), 32, NOCAP).unwrap();
            i += 1;
        }
        let mut h = f.encode_header();
        h[32..40].copy_from_slice(&f.total_slots().to_le_bytes());
        let mut f = CuckooFilter::from_header(&h, NOCAP).unwrap();
        f.compact();
        assert_eq!(f.num_filters(), 1);
        assert!(CuckooFilter::from_header(&f.encode_header(), NOCAP).is_ok());
    }

    #[test]
    fn header_round_trip_and_rejections() {
        let mut f = CuckooFilter::new(
            &CuckooParams {
                error_rate: Some(0.001),
                max_iterations: 77,
                ..params(64, 4, 2, 12)
            },
            NOCAP,
        )
        .unwrap();
        for i in 0..500 {
            f.insert(&hash_item(&key(12, i)), 64, NOCAP).unwrap();
        }
        for i in 0..100 {
            f.delete(&hash_item(&key(12, i)));
        }
        let h = f.encode_header();
        assert_eq!(h.len(), HEADER_LEN);
        let g = CuckooFilter::from_header(&h, NOCAP).unwrap();
        assert_eq!(g.encode_header(), h);
        assert_eq!(g.error_rate(), Some(0.001));
        assert_eq!(g.max_iterations(), 77);
        assert_eq!(
            g.subfilter_buckets().collect::<Vec<_>>(),
            f.subfilter_buckets().collect::<Vec<_>>()
        );
        let c = f.try_clone(NOCAP).unwrap();
        assert_eq!(snapshot(&c), snapshot(&f));
        check_occupancy(&c);

        let base = {
            let mut f = CuckooFilter::new(&params(1024, 2, 2, 8), NOCAP).unwrap();
            f.insert(&hash_item(b"x"), 32, NOCAP).unwrap();
            f.encode_header()
        };
        assert!(CuckooFilter::from_header(&base, NOCAP).is_ok());
        let patch = |off: usize, bytes: &[u8]| {
            let mut h = base.clone();
            h[off..off + bytes.len()].copy_from_slice(bytes);
            CuckooFilter::from_header(&h, 1 << 30)
        };
        let bad: Vec<(usize, Vec<u8>)> = vec![
            (0, b"RBcf".to_vec()),
            (4, vec![2]),
            (4, vec![0]),
            (5, vec![3]),
            (5, vec![33]),
            (6, vec![0]),
            (7, vec![2]),
            (7, vec![4]),
            (8, 0u16.to_le_bytes().to_vec()),
            (10, 1u16.to_le_bytes().to_vec()),
            (12, 3u32.to_le_bytes().to_vec()),
            (12, 65536u32.to_le_bytes().to_vec()),
            (12, 0u32.to_le_bytes().to_vec()),
            (16, 0u32.to_le_bytes().to_vec()),
            (16, 65537u32.to_le_bytes().to_vec()),
            (20, 1u32.to_le_bytes().to_vec()),
            (24, 0u64.to_le_bytes().to_vec()),
            (24, 1000u64.to_le_bytes().to_vec()),
            (24, (1u64 << 40).to_le_bytes().to_vec()),
            (24, (1u64 << 63).to_le_bytes().to_vec()),
            (32, 2049u64.to_le_bytes().to_vec()),
            (48, 1.5f64.to_bits().to_le_bytes().to_vec()),
            (48, (-0.0f64).to_bits().to_le_bytes().to_vec()),
            (48, f64::NAN.to_bits().to_le_bytes().to_vec()),
            (56, 1u64.to_le_bytes().to_vec()),
        ];
        for (off, bytes) in &bad {
            // expansion 0 is only bad with several filters: make that case have 2.
            let r = if *off == 12 && bytes == &0u32.to_le_bytes().to_vec() {
                let mut h = base.clone();
                h[12..16].copy_from_slice(&0u32.to_le_bytes());
                h[16..20].copy_from_slice(&2u32.to_le_bytes());
                CuckooFilter::from_header(&h, NOCAP)
            } else {
                patch(*off, bytes)
            };
            assert!(r.is_err(), "offset {off} {bytes:?}");
        }
        assert_eq!(
            patch(24, &(1u64 << 40).to_le_bytes()).unwrap_err(),
            CuckooError::MemoryCap
        );
        // 2^32 buckets of 1 slot: refused by a 1 GiB cap without allocating.
        let mut h = base.clone();
        h[6] = 1;
        h[24..32].copy_from_slice(&(1u64 << 32).to_le_bytes());
        assert_eq!(
            CuckooFilter::from_header(&h, 1 << 30).unwrap_err(),
            CuckooError::MemoryCap
        );
        // Many filters with huge expansion overflow: MemoryCap, not a panic.
        let mut h = base.clone();
        h[12..16].copy_from_slice(&32768u32.to_le_bytes());
        h[16..20].copy_from_slice(&65536u32.to_le_bytes());
        assert_eq!(
            CuckooFilter::from_header(&h, NOCAP).unwrap_err(),
            CuckooError::MemoryCap
        );
        assert!(CuckooFilter::from_header(&base[..63], NOCAP).is_err());
        let mut ext = base.clone();
        ext.push(0);
        assert!(CuckooFilter::from_header(&ext, NOCAP).is_err());
        assert!(CuckooFilter::from_header(&[], NOCAP).is_err());
        // A valid running-compaction cursor is accepted.
        let mut h = base.clone();
        h[7] = FLAG_COMPACTING | FLAG_COMPACT_CONT;
        h[56..64].copy_from_slice(&3u64.to_le_bytes());
        let g = CuckooFilter::from_header(&h, NOCAP).unwrap();
        assert!(g.compaction_in_progress());
        assert_eq!(g.encode_header(), h);
    }

    fn dump_and_load(f: &CuckooFilter) -> CuckooFilter {
        let (mut it, hdr) = f.scandump_chunk(0).unwrap();
        assert_eq!(it, 1);
        let mut g = CuckooFilter::from_header(&hdr, NOCAP).unwrap();
        let mut chunks = 0;
        while let Some((next, data)) = f.scandump_chunk(it) {
            assert!(data.len() <= MAX_CHUNK && !data.is_empty());
            assert_eq!(next, it + data.len() as i64);
            g.load_chunk(next, &data).unwrap();
            it = next;
            chunks += 1;
        }
        assert!(chunks >= f.num_filters());
        g
    }

    #[test]
    fn scandump_load_chunk_round_trip() {
        // Above 16 MiB: 2^24 buckets x 2 slots x 8 bits = 32 MiB.
        let mut f = CuckooFilter::new(&params(1 << 25, 2, 1, 8), NOCAP).unwrap();
        for i in 0..5000 {
            f.insert(&hash_item(&key(13, i)), 32, NOCAP).unwrap();
        }
        assert!(f.table_bytes() > MAX_CHUNK as u64);
        let g = dump_and_load(&f);
        assert_eq!(snapshot(&f), snapshot(&g));
        check_occupancy(&g);
        // Mid-sub-filter offsets are honoured.
        let (next, data) = f.scandump_chunk(1 + 1000).unwrap();
        assert_eq!(next, 1001 + MAX_CHUNK as i64);
        assert_eq!(&data[..], &f.subs[0].data[1000..1000 + MAX_CHUNK]);

        // Packed width, several sub-filters, arbitrary split.
        let mut f = CuckooFilter::new(&params(64, 3, 2, 13), NOCAP).unwrap();
        for i in 0..700 {
            f.insert(&hash_item(&key(14, i)), 64, NOCAP).unwrap();
        }
        assert!(f.num_filters() >= 3);
        let g = dump_and_load(&f);
        assert_eq!(snapshot(&f), snapshot(&g));
        check_occupancy(&g);
        for i in 0..700 {
            assert!(g.contains(&hash_item(&key(14, i))));
        }
        // Odd split points with overlapping re-loads keep occupancy exact.
        let mut g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
        let all: Vec<u8> = f.subfilter_bytes().flatten().copied().collect();
        let mut base = 0usize;
        for s in f.subfilter_bytes() {
            let mut off = 0;
            while off < s.len() {
                let len = (7 + off % 5).min(s.len() - off);
                let start = base + off;
                let p = (start + len + 1) as i64;
                g.load_chunk(p, &all[start..start + len]).unwrap();
                g.load_chunk(p, &all[start..start + len]).unwrap();
                off += len;
            }
            base += s.len();
        }
        assert_eq!(snapshot(&f), snapshot(&g));
        check_occupancy(&g);

        // Empty filter with several sub-filters still dumps (Q13).
        let mut f = CuckooFilter::new(&params(8, 2, 2, 8), NOCAP).unwrap();
        for i in 0..100 {
            f.insert(&hash_item(&key(15, i)), 64, NOCAP).unwrap();
        }
        for i in 0..100 {
            f.delete(&hash_item(&key(15, i)));
        }
        assert_eq!(f.num_items(), 0);
        let filters = f.num_filters();
        let g = dump_and_load(&f);
        assert_eq!(g.num_filters(), filters);
        assert_eq!(snapshot(&f), snapshot(&g));
        assert!(f.scandump_chunk(-1).is_none());
        let total = f.table_bytes() as i64;
        assert!(f.scandump_chunk(1 + total).is_none());
        assert!(f.scandump_chunk(i64::MAX).is_none());
    }

    #[test]
    fn load_chunk_rejections() {
        let mut f = CuckooFilter::new(&params(16, 2, 2, 8), NOCAP).unwrap();
        for i in 0..60 {
            f.insert(&hash_item(&key(16, i)), 64, NOCAP).unwrap();
        }
        let sizes: Vec<usize> = f.subfilter_bytes().map(|s| s.len()).collect();
        assert_eq!(sizes[..2], [16, 32]);
        let total: usize = sizes.iter().sum();
        let mut g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
        let before = snapshot(&g);
        let d4 = [1u8; 4];
        for (p, data) in [
            (5i64, &[][..]),
            (0, &d4[..]),
            (1, &d4[..]),
            (4, &d4[..]),
            (-5, &d4[..]),
            (i64::MIN, &d4[..]),
            (16 + 2 + 1, &d4[..]),         // spans sub-filters 0 and 1
            ((total + 2) as i64, &d4[..]), // past the end
            (i64::MAX, &d4[..]),
        ] {
            assert!(g.load_chunk(p, data).is_err(), "{p}");
        }
        assert_eq!(before, snapshot(&g));
        assert!(g.load_chunk(5, &d4).is_ok());
        assert!(g.load_chunk((total + 1) as i64, &d4).is_ok());
        // RDB-style loads: exact lengths only.
        assert!(g.load_subfilter_bytes(0, &[0u8; 15]).is_err());
        assert!(g.load_subfilter_bytes(0, &[0u8; 17]).is_err());
        assert!(g.load_subfilter_bytes(99, &[0u8; 16]).is_err());
        let mut g = CuckooFilter::from_header(&f.encode_header(), NOCAP).unwrap();
        for (i, s) in f.subfilter_bytes().enumerate() {
            g.load_subfilter_bytes(i, s).unwrap();
        }
        assert_eq!(snapshot(&f), snapshot(&g));
        check_occupancy(&g);
    }

    #[test]
    fn deterministic_tables() {
        let build = || {
            let mut f = CuckooFilter::new(&params(128, 2, 2, 12), NOCAP).unwrap();
            for i in 0..2000 {
                let _ = f.insert(&hash_item(&key(17, i)), 16, NOCAP);
                if i % 3 == 0 {
                    f.delete(&hash_item(&key(17, i / 2)));
                }
            }
            snapshot(&f)
        };
        assert_eq!(build(), build());
    }

    /// A loaded header may claim more items than the table holds (LOADCHUNK or
    /// RESTORE of a crafted payload); adding to it or compacting it must still
    /// leave a filter whose own payload loads again.
    #[test]
    fn lying_item_count_stays_loadable() {
        let f = CuckooFilter::new(&params(64, 2, 2, 8), NOCAP).unwrap();
        let mut h = f.encode_header();
        let slots = f.total_slots();
        h[32..40].copy_from_slice(&slots.to_le_bytes());
        let mut f = CuckooFilter::from_header(&h, NOCAP).unwrap();
        assert_eq!(f.num_items(), slots);
        f.insert(&hash_item(b"x"), 16, NOCAP).unwrap();
        assert_eq!(f.num_items(), slots);
        assert!(CuckooFilter::from_header(&f.encode_header(), NOCAP).is_ok());
        // Grow, then let compaction drop the emptied newest sub-filter.
        let mut f = CuckooFilter::from_header(&h, NOCAP).unwrap();
        for i in 0..200 {
            f.insert(&hash_item(&key(3, i)), 16, NOCAP).unwrap();
        }
        assert!(f.num_filters() > 1);
        let big = f.num_items();
        for i in 0..200 {
            f.delete(&hash_item(&key(3, i)));
        }
        f.compact();
        assert!(f.num_items() <= f.total_slots() && f.num_items() <= big);
        assert!(CuckooFilter::from_header(&f.encode_header(), NOCAP).is_ok());
    }
}
