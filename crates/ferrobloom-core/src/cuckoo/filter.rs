//! The chain of sub-filters: creation, lookups, counting, insertion with
//! kick-outs, growth and deletion.

use super::table::*;
use super::*;

/// Sub-filters (newest first) whose buckets a batch prefetches per item.
pub(super) const PREFETCH_SUBFILTERS: usize = 4;

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
    pub(super) subs: Vec<SubFilter>,
    pub(super) layout: Layout,
    pub(super) bucket_size: u8,
    pub(super) fp_bits: u8,
    pub(super) max_iterations: u16,
    pub(super) expansion: u32,
    pub(super) base_buckets: u64,
    pub(super) num_items: u64,
    pub(super) num_deletes: u64,
    pub(super) error_rate: Option<f64>,
    pub(super) cursor: Option<CompactCursor>,
    /// Migrated from RedisBloom: its hash, fingerprint, alternate bucket, victim
    /// choice, counting and compaction rules (see `redisbloom.rs`).
    pub(super) rb: bool,
    /// Slots over all sub-filters, kept up to date as sub-filters come and go
    /// (so counting an insert is O(1), not a walk over the sub-filters).
    pub(super) total_slots: u64,
    /// Slot-storage bytes over all sub-filters, kept up to date likewise (so
    /// a growth checks the memory cap in O(1): summed per growth, filling a
    /// filter of RedisBloom's layout to its 65535 sub-filters took seconds).
    pub(super) table_bytes: u64,
    /// Fingerprint moves so far (kick-outs, compaction), in memory only: a
    /// SCANDUMP walk of ferrobloom's layout carries it in its iterator and is
    /// refused once a move happened since it began (a move can take a
    /// fingerprint from a part not read yet to one already read).
    /// RedisBloom's layout counts only the moves that can cross a SCANDUMP
    /// chunk boundary (`walk.rs`).
    pub(super) moves: u64,
    /// Open SCANDUMP walks of a filter of RedisBloom's layout (`walk.rs`).
    pub(super) walks: Vec<walk::Walk>,
    /// When the filter first handed out a SCANDUMP position iterator (`walk.rs`).
    pub(super) plain: walk::PlainAnswers,
}

/// A checked header: the filter without its tables, and each table's bucket
/// count. [`Plan::allocate`] allocates the tables (zeroed lazily by the
/// allocator); until then nothing is allocated but this list.
pub(super) struct Plan {
    pub(super) filter: CuckooFilter,
    pub(super) buckets: Vec<u64>,
}

impl Plan {
    /// `base · expansion^i` for `i < n` (sizes already checked by the caller).
    pub(super) fn bucket_counts(
        base: u64,
        expansion: u32,
        n: u32,
    ) -> Result<Vec<u64>, CuckooError> {
        let mut v = Vec::new();
        v.try_reserve_exact(n as usize)
            .map_err(|_| CuckooError::AllocFailed)?;
        let mut b = base;
        for i in 0..n {
            if i > 0 {
                b = b.saturating_mul(u64::from(expansion));
            }
            v.push(b);
        }
        Ok(v)
    }

    /// Allocates the zeroed tables.
    pub(super) fn allocate(self) -> Result<CuckooFilter, CuckooError> {
        let Plan {
            mut filter,
            buckets,
        } = self;
        let l = filter.layout;
        filter
            .subs
            .try_reserve_exact(buckets.len())
            .map_err(|_| CuckooError::AllocFailed)?;
        for b in buckets {
            let sub = SubFilter::new_zeroed(b, &l)?;
            filter.total_slots = filter.total_slots.saturating_add(sub.slots);
            filter.table_bytes = filter.table_bytes.saturating_add(sub.data.len() as u64);
            filter.subs.push(sub);
        }
        filter.num_items = filter.num_items.min(filter.total_slots);
        Ok(filter)
    }
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

pub(super) fn valid_error_rate(e: f64) -> bool {
    e > 0.0 && e < 1.0
}

/// Rounds the expansion up to a power of two; 0 stays 0.
pub(super) fn round_expansion(e: u32) -> u32 {
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
        if p.redisbloom && (p.fp_bits != DEFAULT_FP_BITS || p.error_rate.is_some()) {
            return Err(CuckooError::InvalidParams(
                "RedisBloom's layout has 8-bit fingerprints and no error rate",
            ));
        }
        if let Some(e) = p.error_rate {
            if !valid_error_rate(e) {
                return Err(CuckooError::InvalidParams("error rate must be in (0, 1)"));
            }
        }
        let b = u64::from(p.bucket_size);
        // What the native header's reader refuses (`encoding.rs`): no filter
        // the core creates fails to load back.
        if !p.redisbloom && p.capacity > MAX_CAPACITY {
            return Err(CuckooError::InvalidParams(CAPACITY_TOO_LARGE));
        }
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
        if mem_formula(1, bytes) > max_bytes {
            return Err(CuckooError::MemoryCap);
        }
        let mut subs = Vec::new();
        subs.try_reserve(1).map_err(|_| CuckooError::AllocFailed)?;
        subs.push(SubFilter::new_zeroed(base, &layout)?);
        let total_slots = subs.first().map_or(0, |s| s.slots);
        let table_bytes = subs.first().map_or(0, |s| s.data.len() as u64);
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
            rb: p.redisbloom,
            total_slots,
            table_bytes,
            moves: 0,
            walks: Vec::new(),
            plain: Default::default(),
        })
    }

    /// A deep copy, allocated fallibly (for COPY), checked against `max_bytes`.
    /// Copies only what was ever written of each table (`SubFilter::try_clone`):
    /// a never-written 512 MB filter copies in microseconds and no RSS.
    pub fn try_clone(&self, max_bytes: u64) -> Result<Self, CuckooError> {
        if self.mem_usage() as u64 > max_bytes {
            return Err(CuckooError::MemoryCap);
        }
        let mut subs = Vec::new();
        subs.try_reserve_exact(self.subs.len())
            .map_err(|_| CuckooError::AllocFailed)?;
        for s in &self.subs {
            subs.push(s.try_clone()?);
        }
        Ok(CuckooFilter {
            subs,
            layout: self.layout,
            bucket_size: self.bucket_size,
            fp_bits: self.fp_bits,
            max_iterations: self.max_iterations,
            expansion: self.expansion,
            base_buckets: self.base_buckets,
            num_items: self.num_items,
            num_deletes: self.num_deletes,
            error_rate: self.error_rate,
            cursor: self.cursor,
            rb: self.rb,
            total_slots: self.total_slots,
            table_bytes: self.table_bytes,
            moves: 0,
            walks: Vec::new(),
            plain: Default::default(),
        })
    }

    /// Bytes [`try_clone`](Self::try_clone) copies (for tests and diagnostics).
    pub fn copied_bytes(&self) -> u64 {
        self.subs.iter().fold(0u64, |a, s| {
            a.saturating_add(s.written.copied_bytes(s.data.len()))
        })
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
        self.total_slots
    }
    /// Total slot-storage bytes over all sub-filters.
    pub fn table_bytes(&self) -> u64 {
        self.table_bytes
    }
    /// Every heap block the filter owns besides itself (address, requested
    /// size), for memory accounting (see `BloomChain::heap_blocks`).
    pub fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        if self.subs.capacity() > 0 {
            f(
                self.subs.as_ptr() as *const u8,
                self.subs.capacity() * std::mem::size_of::<SubFilter>(),
                std::mem::align_of::<SubFilter>(),
            );
        }
        for s in &self.subs {
            if s.data.capacity() > 0 {
                f(s.data.as_ptr(), s.data.capacity(), 1);
            }
            if let Some((p, n, a)) = s.written.heap_block() {
                f(p, n, a);
            }
        }
        if self.walks.capacity() > 0 {
            f(
                self.walks.as_ptr() as *const u8,
                self.walks.capacity() * std::mem::size_of::<walk::Walk>(),
                std::mem::align_of::<walk::Walk>(),
            );
        }
    }

    /// Block numbers [`relocate_blocks`](Self::relocate_blocks) takes.
    pub fn block_count(&self) -> u64 {
        2 + 2 * self.subs.len() as u64
    }

    /// Offers every heap block to a relocation pass (active defragmentation,
    /// `crate::relocate`): the sub-filter list, each table and its
    /// written-chunk map, the open walks.
    pub fn relocate_blocks(&mut self, pass: &mut crate::relocate::Pass) {
        pass.vec(&mut self.subs);
        pass.items(
            &mut self.subs,
            |_| 2,
            |p, s| {
                p.vec(&mut s.data);
                s.written.relocate_blocks(p)
            },
        );
        pass.vec(&mut self.walks);
    }

    /// Whether an incremental compaction pass is under way.
    pub fn compaction_in_progress(&self) -> bool {
        self.cursor.is_some()
    }
    /// `40 + 16 * sub-filters + table bytes`: RedisBloom's formula at 8 bits
    /// (`buckets_i * bucket_size` bytes per sub-filter), the packed size otherwise.
    pub fn mem_usage(&self) -> usize {
        let total = mem_formula(self.subs.len() as u64, self.table_bytes());
        usize::try_from(total).unwrap_or(usize::MAX)
    }

    // ----- operations -----

    #[inline(always)]
    pub(super) fn fp_of(&self, h: &CuckooHash) -> u32 {
        if self.rb {
            redisbloom::fingerprint(h)
        } else {
            h.fingerprint(self.fp_bits)
        }
    }

    /// Whether the filter came from RedisBloom (and keeps its hashing and formats).
    pub fn is_redisbloom(&self) -> bool {
        self.rb
    }

    /// The item's hash under this filter's scheme.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> CuckooHash {
        hash_for(self.rb, item)
    }

    /// Adds an item (duplicates allowed). On `Err` the filter is unchanged.
    pub fn insert(
        &mut self,
        h: &CuckooHash,
        max_filters: u32,
        max_bytes: u64,
    ) -> Result<(), CuckooError> {
        let fp = self.fp_of(h);
        let ah = alt_of(self.rb, fp);
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
    pub(super) fn count_insert(&mut self) {
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
    pub(super) fn place(&mut self, lo: u64, fp: u32, ah: u64) -> bool {
        let l = self.layout;
        for sub in self.subs.iter_mut().rev() {
            // A full table has no empty slot to find (same answer, no probes:
            // a saturated filter refuses each item cheaply).
            if sub.occupied >= sub.slots {
                continue;
            }
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

    /// Kick-out in the newest sub-filter (RedisBloom's `Filter_KOInsert` in
    /// src/cuckoo.c, with our victim position): start at bucket i1; at
    /// step `n` swap with the slot at [`victim_pos`]`(bucket, n)`, move the
    /// evicted fingerprint to its alternate bucket, stop at the first empty
    /// slot. On failure the swaps are undone in reverse order (no path is
    /// stored: `alt` is an involution and the victim position depends only on
    /// `(bucket, n)`), so the table is byte-identical to before.
    ///
    /// Filters of ferrobloom's layout first search breadth-first
    /// ([`bfs_place`]) for the shortest chain of moves that frees a slot in
    /// bucket i1 or i2, over up to `4 · max_iterations` buckets (at most
    /// [`BFS_MAX`]), and only walk when that finds none. RedisBloom's walk alone
    /// fails (and grows the filter) well below the load cuckoo hashing can
    /// reach: with bucket size 2 and 20 steps at 56-62% of the slots (the
    /// larger the table, the earlier); the search fills a table further before
    /// it grows, so a filter holds more items per byte and a lookup checks
    /// fewer sub-filters. Filters of RedisBloom's layout keep its walk exactly.
    pub(super) fn kick(&mut self, lo: u64, fp: u32) -> bool {
        let l = self.layout;
        let iters = u64::from(self.max_iterations);
        let b = l.bucket_size;
        let rb = self.rb;
        let Some(sub) = self.subs.last_mut() else {
            return false;
        };
        if sub.occupied >= sub.slots {
            // No empty slot for any walk or search to end in: it would fail and
            // be undone (the same answer, without the work).
            return false;
        }
        let mask = sub.mask();
        let mut bucket = lo & mask;
        let mut cur = fp;
        // RedisBloom's layout answers a sub-filter of one chunk in one piece,
        // so only a kick-out in a larger one can cross a chunk (`walk.rs`).
        let counted = u64::from(!rb || sub.data.len() > MAX_CHUNK);
        if !rb {
            let nodes = (4 * iters as usize).clamp(2, BFS_MAX);
            if bfs_place(
                sub,
                &l,
                bucket,
                (bucket ^ alt_hash(fp)) & mask,
                fp,
                mask,
                nodes,
            ) {
                self.moves = self.moves.wrapping_add(1);
                return true;
            }
        }
        for n in 0..iters {
            let slot = bucket
                .wrapping_mul(b)
                .wrapping_add(victim_of(self.rb, bucket, n, b));
            let victim = sub.get(&l, slot);
            sub.put(&l, slot, cur);
            cur = victim;
            bucket = (bucket ^ alt_of(self.rb, cur)) & mask;
            if let Some(s) = sub.find(&l, bucket, 0) {
                sub.set(&l, s, cur);
                self.moves = self.moves.wrapping_add(counted);
                return true;
            }
        }
        for n in (0..iters).rev() {
            bucket = (bucket ^ alt_of(self.rb, cur)) & mask;
            let slot = bucket
                .wrapping_mul(b)
                .wrapping_add(victim_of(self.rb, bucket, n, b));
            let back = sub.get(&l, slot);
            sub.put(&l, slot, cur);
            cur = back;
        }
        false
    }

    /// The hard ceiling on sub-filters, the most any loader accepts for this
    /// filter's header format: [`MAX_SUBFILTERS`], or 65535 for RedisBloom's
    /// layout (its header's count is checked to RedisBloom's 16 bits). Growth
    /// never passes it, so whatever grows loads again.
    pub fn max_subfilters(&self) -> u32 {
        if self.rb {
            redisbloom::RB_MAX_FILTERS
        } else {
            MAX_SUBFILTERS
        }
    }

    /// Appends sub-filter `n` with `base * expansion^n` buckets.
    pub(super) fn grow(&mut self, max_filters: u32, max_bytes: u64) -> Result<(), CuckooError> {
        if self.expansion == 0 {
            return Err(CuckooError::Full);
        }
        let n = self.subs.len() as u64;
        if n >= u64::from(max_filters.min(self.max_subfilters())) {
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
        if mem_formula(n + 1, total) > max_bytes {
            return Err(CuckooError::MemoryCap);
        }
        self.subs
            .try_reserve(1)
            .map_err(|_| CuckooError::AllocFailed)?;
        let sub = SubFilter::new_zeroed(buckets, &self.layout)?;
        self.total_slots = self.total_slots.saturating_add(sub.slots);
        self.table_bytes = self.table_bytes.saturating_add(sub.data.len() as u64);
        self.subs.push(sub);
        Ok(())
    }

    /// Prefetches both candidate buckets of `h` in the newest sub-filters (at
    /// most `PREFETCH_SUBFILTERS` = 4), for batches (see `core::hash::HashAhead`).
    #[inline]
    pub fn prefetch(&self, h: &CuckooHash) {
        let l = self.layout;
        let ah = alt_of(self.rb, self.fp_of(h));
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
        let ah = alt_of(self.rb, fp);
        self.subs.iter().any(|sub| {
            let mask = sub.mask();
            let i1 = h.lo & mask;
            let i2 = (h.lo ^ ah) & mask;
            sub.find(&l, i1, fp).is_some() || (i2 != i1 && sub.find(&l, i2, fp).is_some())
        })
    }

    /// Matching fingerprints over both candidate buckets of every sub-filter; a
    /// bucket that is both candidates is counted once (RedisBloom's
    /// `subFilterCount`, src/cuckoo.c, counts it twice).
    pub fn count(&self, h: &CuckooHash) -> u64 {
        let l = self.layout;
        let fp = self.fp_of(h);
        let ah = alt_of(self.rb, fp);
        self.subs.iter().fold(0u64, |acc, sub| {
            let mask = sub.mask();
            let i1 = h.lo & mask;
            let i2 = (h.lo ^ ah) & mask;
            let mut c = sub.count_in(&l, i1, fp);
            // RedisBloom counts a bucket that is both candidates twice (its
            // `subFilterCount`), and a migrated filter keeps its answers.
            if i2 != i1 || self.rb {
                c = c.saturating_add(sub.count_in(&l, i2, fp));
            }
            acc.saturating_add(c)
        })
    }

    /// Removes one copy (newest sub-filter first, bucket i1 before i2). Returns
    /// whether a fingerprint was cleared. A successful delete advances a running
    /// compaction pass, or starts one (stop-at-first-failure, like RedisBloom)
    /// when there is more than one sub-filter and deletes exceed 10% of the
    /// items; each call does at most [`AUTO_COMPACT_BUDGET`] units of work
    /// ([`RB_AUTO_COMPACT_BUDGET`] for RedisBloom's layout).
    pub fn delete(&mut self, h: &CuckooHash) -> bool {
        let l = self.layout;
        let fp = self.fp_of(h);
        let ah = alt_of(self.rb, fp);
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
        // RedisBloom compacts (stop at the first sub-filter that cannot be
        // emptied) when deletes exceed 10% of the items, in full, inside the
        // delete: a filter of its layout does the same pass, within
        // [`RB_AUTO_COMPACT_BUDGET`] (so it completes in this call, exactly as
        // RedisBloom's, unless the filter holds about a million slots past its
        // first sub-filter; then later deletes and CF.COMPACT continue it).
        let (due, budget) = if self.rb {
            (
                self.num_deletes as f64 > self.num_items as f64 * 0.10,
                RB_AUTO_COMPACT_BUDGET,
            )
        } else {
            (
                self.num_deletes.saturating_mul(10) > self.num_items,
                AUTO_COMPACT_BUDGET,
            )
        };
        if self.cursor.is_none() && self.subs.len() > 1 && due {
            self.start_pass(false);
        }
        if self.cursor.is_some() {
            self.compact_step(budget);
        }
        true
    }
}

/// Most buckets a breadth-first insertion search visits.
pub(super) const BFS_MAX: usize = 256;

/// Breadth-first insertion (cuckoo hashing's shortest eviction path): explores
/// the buckets the occupants of i1 and i2 could move to, then theirs, up to
/// `nodes` buckets; at the first bucket found with an empty slot it moves each
/// fingerprint of the chain one step (from the end, so no fingerprint is ever
/// outside its two candidate buckets) and puts `fp` in the freed slot of i1 or
/// i2. Returns false, with nothing changed, when no chain is found. A bucket
/// already on a node's chain is not queued below it, so a chain never passes a
/// bucket twice (other branches may repeat it: rare, and harmless). A bucket is
/// prefetched when queued and read when its turn comes, so the cache misses of
/// one level overlap.
fn bfs_place(
    sub: &mut SubFilter,
    l: &Layout,
    i1: u64,
    i2: u64,
    fp: u32,
    mask: u64,
    nodes: usize,
) -> bool {
    /// No parent: a root (i1 or i2, both full).
    const ROOT: usize = usize::MAX;
    // (bucket, index of the parent node, slot of the parent whose occupant
    // moves into this bucket)
    let mut q = [(0u64, ROOT, 0u64); BFS_MAX];
    let nodes = nodes.clamp(2, BFS_MAX);
    let mut n = 1;
    q[0] = (i1, ROOT, 0);
    if i2 != i1 {
        q[1] = (i2, ROOT, 0);
        n = 2;
    }
    let bs = l.bucket_size;
    let mut head = 0;
    while let Some(&(bucket, parent, _)) = q.get(head).filter(|_| head < n) {
        if parent != ROOT {
            if let Some(empty) = sub.find(l, bucket, 0) {
                // Walk the chain back to its root, moving each parent's
                // occupant into the slot just freed below it.
                let (mut free, mut at) = (empty, head);
                while let Some(&(_, parent, from)) = q.get(at) {
                    if parent == ROOT {
                        sub.set(l, free, fp);
                        return true;
                    }
                    let moving = sub.get(l, from);
                    sub.set(l, free, moving);
                    free = from;
                    at = parent;
                }
                return false;
            }
        }
        let first = bucket.wrapping_mul(bs);
        for p in 0..bs {
            let slot = first.wrapping_add(p);
            let other = (bucket ^ alt_hash(sub.get(l, slot))) & mask;
            if n < nodes && other != bucket && !on_chain(&q, head, other) {
                sub.prefetch_bucket(l, other);
                if let Some(e) = q.get_mut(n) {
                    *e = (other, head, slot);
                    n += 1;
                }
            }
        }
        head += 1;
    }
    false
}

/// Whether `bucket` is node `at` or one of its ancestors (a chain is at most a
/// few nodes long: the queue holds at most [`BFS_MAX`] nodes, each with two or
/// more children).
fn on_chain(q: &[(u64, usize, u64)], mut at: usize, bucket: u64) -> bool {
    while let Some(&(b, parent, _)) = q.get(at) {
        if b == bucket {
            return true;
        }
        at = parent;
    }
    false
}

/// Where an incremental compaction pass stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CompactCursor {
    /// Sub-filter being emptied (passes run newest → 1).
    pub(super) filter: u32,
    /// Next slot of that sub-filter to examine.
    pub(super) slot: u64,
    /// Continue past a sub-filter that could not be emptied (CF.COMPACT) or stop
    /// there (automatic compaction after deletes, like RedisBloom).
    pub(super) cont: bool,
}
