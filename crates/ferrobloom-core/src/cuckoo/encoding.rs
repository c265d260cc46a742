//! The SCANDUMP/RDB header (versioned, documented on `encode_header`) and
//! the data chunks: dumping and loading slot storage.

use super::filter::*;
use super::redisbloom::RB_HEADER_LEN;
use super::table::*;
use super::walk::WALK_POS_MASK;
use super::*;

impl CuckooFilter {
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
    /// | 24 | 8 | base bucket count u64 (first sub-filter), non-zero power of two, at most `next_power_of_two(2^30 / bucket_size)` (CF.RESERVE's capacity bound) |
    /// | 32 | 8 | num_items u64, <= total slots (written capped at the total) |
    /// | 40 | 8 | num_deletes u64 |
    /// | 48 | 8 | requested error rate, f64 bits; all-zero bits = not given, else in (0, 1) |
    /// | 56 | 8 | compaction cursor: next slot u64 (<= that sub-filter's slots; 0 when no pass) |
    ///
    /// Sub-filter `i` has `base * expansion^i` buckets and
    /// `ceil(buckets_i * bucket_size * fp_bits / 8)` bytes of slot storage.
    ///
    /// A filter migrated from RedisBloom is written in RedisBloom's 38-byte
    /// header instead (documented in `redisbloom.rs`), which RedisBloom's
    /// LOADCHUNK takes.
    pub fn encode_header(&self) -> Vec<u8> {
        if self.rb {
            return self.encode_rb_header();
        }
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(&HEADER_MAGIC);
        h.push(HEADER_VERSION_BASE);
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
    ///
    /// RedisBloom's header is told apart by its length (38 bytes, against 64).
    pub fn from_header(bytes: &[u8], max_bytes: u64) -> Result<Self, CuckooError> {
        Self::from_header_within(bytes, max_bytes, MAX_SUBFILTERS)
    }

    /// [`from_header`](Self::from_header) with a bound on the number of
    /// sub-filters (`cf-max-expansions` for what a client sends).
    pub fn from_header_within(
        bytes: &[u8],
        max_bytes: u64,
        max_filters: u32,
    ) -> Result<Self, CuckooError> {
        Self::plan(bytes, max_bytes, max_filters, None)?.allocate()
    }

    /// Reads ferrobloom's own header only.
    pub fn from_native_header(bytes: &[u8], max_bytes: u64) -> Result<Self, CuckooError> {
        Self::plan(bytes, max_bytes, MAX_SUBFILTERS, Some(false))?.allocate()
    }

    /// The slot-storage bytes of each sub-filter a header describes, checked
    /// completely, without allocating them (so a payload's data can be checked
    /// against its header first). `redisbloom`: which format; `None` = by length.
    pub fn header_table_bytes(
        bytes: &[u8],
        max_bytes: u64,
        max_filters: u32,
        redisbloom: Option<bool>,
    ) -> Result<Vec<u64>, CuckooError> {
        let plan = Self::plan(bytes, max_bytes, max_filters, redisbloom)?;
        let (b, f) = (plan.filter.bucket_size, plan.filter.fp_bits);
        plan.buckets
            .iter()
            .map(|n| table_bytes(*n, b, f).ok_or(CuckooError::MemoryCap))
            .collect()
    }

    /// Checks a header of either format completely (module docs).
    pub(super) fn plan(
        bytes: &[u8],
        max_bytes: u64,
        max_filters: u32,
        redisbloom: Option<bool>,
    ) -> Result<Plan, CuckooError> {
        let rb = redisbloom.unwrap_or(bytes.len() == RB_HEADER_LEN);
        let plan = if rb {
            Self::plan_rb_header(bytes, max_bytes)?
        } else {
            Self::plan_native_header(bytes, max_bytes)?
        };
        if plan.buckets.len() as u64 > u64::from(max_filters.min(MAX_SUBFILTERS)) {
            return Err(CuckooError::MaxExpansions);
        }
        Ok(plan)
    }

    fn plan_native_header(bytes: &[u8], max_bytes: u64) -> Result<Plan, CuckooError> {
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
        if version != HEADER_VERSION_BASE {
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
        if base > max_base_buckets(bucket_size) {
            return Err(BadHeader(CAPACITY_TOO_LARGE));
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
            if mem_formula(u64::from(i) + 1, total_bytes) > max_bytes
                || usize::try_from(total_bytes).is_err()
            {
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
        let filter = CuckooFilter {
            subs: Vec::new(),
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
            rb: false,
            total_slots: 0,
            table_bytes: 0,
            moves: 0,
            walks: Vec::new(),
            plain: walk::PlainAnswers::loaded(),
        };
        Ok(Plan {
            buckets: Plan::bucket_counts(base, expansion, nfilters)?,
            filter,
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
        sub.written.mark_all();
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
            sub.written.mark_all();
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
    /// zero items dump too (RedisBloom's `CFScanDump_RedisCommand` in
    /// src/rebloom.c answers them with the end). A filter with RedisBloom's layout
    /// answers as RedisBloom's `CF_GetEncodedChunk`: an offset inside a
    /// sub-filter of at most [`MAX_CHUNK`] bytes gets the whole sub-filter, from
    /// its start, as `(p + its length, bytes)`.
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, Cow<'_, [u8]>)> {
        if iter == 0 {
            return Some((1, Cow::Owned(self.encode_header())));
        }
        let mut off = u64::try_from(iter).ok()?.checked_sub(1)?;
        for sub in &self.subs {
            let len = sub.data.len() as u64;
            if off < len && self.rb && len <= MAX_CHUNK as u64 {
                let next = iter.checked_add(i64::try_from(len).ok()?)?;
                return Some((next, Cow::Borrowed(&sub.data[..])));
            }
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
        // A walk iterator (see `walk_chunk`) loads at its position.
        let iter = match u64::try_from(iter) {
            Ok(u) if u & WALK_FLAG != 0 => (u & WALK_POS_MASK) as i64,
            _ => iter,
        };
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
                sub.written.mark_range(idx(a), idx(c));
                let after = sub.count_occupied(&l, first_slot, end_slot);
                sub.occupied = sub.occupied.saturating_sub(before).saturating_add(after);
                return Ok(());
            }
            base = sub_end;
        }
        Err(BadChunk("out of bounds"))
    }
}
