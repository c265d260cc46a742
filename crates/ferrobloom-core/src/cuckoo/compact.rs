//! Incremental compaction: moving fingerprints of newer sub-filters into
//! older ones a bounded number of slots per step, and freeing emptied
//! trailing sub-filters.

use super::filter::*;
use super::table::*;
use super::*;

impl CuckooFilter {
    pub(super) fn start_pass(&mut self, cont: bool) {
        let newest = self.subs.len().saturating_sub(1);
        self.cursor = Some(CompactCursor {
            filter: u32::try_from(newest).unwrap_or(0),
            slot: 0,
            cont,
        });
    }

    pub(super) fn finish_pass(&mut self) {
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

    /// CF.COMPACT: [`compact_step`](Self::compact_step) within `budget`. For a
    /// filter of RedisBloom's layout a running automatic (stop-at-failure) pass
    /// first becomes a continue-on-failure one, as RedisBloom's CF.COMPACT always
    /// continues past a sub-filter it cannot empty.
    pub fn compact_command(&mut self, budget: u64) -> bool {
        if self.rb {
            if let Some(c) = self.cursor.as_mut() {
                c.cont = true;
            }
        }
        self.compact_step(budget)
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
                if let Some(gone) = self.subs.pop() {
                    self.total_slots = self.total_slots.saturating_sub(gone.slots);
                    self.table_bytes = self.table_bytes.saturating_sub(gone.data.len() as u64);
                }
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
    pub(super) fn relocate(&mut self, l: &Layout, k: usize, s: u64) -> u64 {
        let Some(src) = self.subs.get(k) else {
            return 1;
        };
        let fp = src.get(l, s);
        if fp == 0 {
            return 1;
        }
        let j = s / l.bucket_size;
        let ah = alt_of(self.rb, fp);
        let (older, rest) = self.subs.split_at_mut(k);
        let mut cost = 1u64;
        let moves = &mut self.moves;
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
                *moves = moves.wrapping_add(1);
                break;
            }
        }
        cost
    }
}
