//! SCANDUMP walks of a live filter: a walk that could miss an item because
//! fingerprints moved since it began is refused, never answered with a copy
//! that silently differs (docs/operations.md, "Live copies").
//!
//! A chunk is read in one call, so a move inside one chunk cannot hurt; a move
//! from a part not read yet into one already read can. Each chunk of a
//! sub-filter of at most [`MAX_CHUNK`] bytes is the whole sub-filter in
//! RedisBloom's layout (and in ferrobloom's, for the walks it answers).
//!
//! - **ferrobloom's layout** counts every move (kick-outs, compaction) and a
//!   walk carries the count in its iterators ([`CuckooFilter::walk_chunk`]).
//! - **RedisBloom's layout** must keep RedisBloom's position iterators
//!   (RedisBloom's CF.LOADCHUNK reads them as offsets), so the filter keeps its
//!   walks instead ([`CuckooFilter::walk_chunk_of`]): who asked for the header
//!   (a walker id: the server passes the client's id), where that walk is and
//!   the move count when it began. It counts only the moves that can cross a
//!   chunk boundary: compaction, and kick-outs in a sub-filter larger than one
//!   chunk.
//!
//! A position iterator the filter cannot tie to a walk (ferrobloom's layout:
//! one without the walk mark once items moved; RedisBloom's: one that is not
//! the next call of a walk it keeps) is answered as RedisBloom answers any
//! position (`CF_GetEncodedChunk` in
//! <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/cf.c>: RedisBloom's
//! flow tests `test_scandump_random_scan_small` / `test_scandump_scan_big` call
//! random positions), unless the filter handed out such iterators before its
//! latest move ([`PlainAnswers`]): then it may be a walk that began before the
//! move, and it is refused (`BadChunk("unknown walk")`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::*;

/// A SCANDUMP data chunk and the iterator it is answered with.
pub type Chunk<'a> = (i64, Cow<'a, [u8]>);

/// Bit 62 of a walk iterator of a ferrobloom-layout cuckoo filter (see
/// [`CuckooFilter::walk_chunk`]); position iterators stay below it.
pub const WALK_FLAG: u64 = 1 << 62;
/// Bits of a walk iterator's position (a filter of up to 1 TiB of tables; a
/// larger one's walk is refused, never cut short).
const WALK_POS_BITS: u32 = 40;
pub(super) const WALK_POS_MASK: u64 = (1 << WALK_POS_BITS) - 1;
/// The move count's bits a walk iterator carries (bits 40..62): a walk is
/// missed as rearranged only if a multiple of 2^22 (4,194,304) moves happened
/// between two of its calls.
const WALK_EPOCH_MASK: u64 = (1 << 22) - 1;

/// Open walks a filter of RedisBloom's layout keeps; a new one evicts the
/// oldest, whose next call is then answered as a walk the filter does not
/// know.
pub const MAX_WALKS: usize = 16;

/// The filter's move count when it first handed out a SCANDUMP iterator that
/// carries no move count (a position iterator, `1 + offset`), in memory only:
/// no walk of such iterators can have begun before a move if the count is
/// still this one (or none was ever handed out). An atomic, so that
/// [`CuckooFilter::walk_chunk`] keeps taking `&self`.
#[derive(Debug)]
pub(super) struct PlainAnswers(AtomicU64);

const NEVER: u64 = u64::MAX;

impl Default for PlainAnswers {
    fn default() -> Self {
        PlainAnswers(AtomicU64::new(NEVER))
    }
}

impl PlainAnswers {
    /// For a filter loaded from a payload (RDB, RESTORE, LOADCHUNK): a walk
    /// may have begun on the filter it was saved from, so its iterators are
    /// refused once this one moves items (as if handed out at count 0).
    pub(super) fn loaded() -> Self {
        PlainAnswers(AtomicU64::new(0))
    }

    /// A position iterator is handed out at move count `moves`.
    fn note(&self, moves: u64) {
        let _ = self.0.compare_exchange(NEVER, moves, Relaxed, Relaxed);
    }

    /// Whether a position iterator handed out earlier may belong to a walk
    /// that began before a move (one was handed out at another count).
    fn stale(&self, moves: u64) -> bool {
        let first = self.0.load(Relaxed);
        first != NEVER && first != moves
    }
}

/// An open SCANDUMP walk of a filter of RedisBloom's layout (in memory only:
/// never saved, copied or replicated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Walk {
    /// Who asked for the header.
    walker: u64,
    /// The iterator its next call sends.
    next: i64,
    /// The filter's move count when it began.
    began: u64,
}

impl CuckooFilter {
    /// CF.SCANDUMP on a live filter. A filter of RedisBloom's layout answers
    /// [`scandump_chunk`](Self::scandump_chunk) here, unchecked (RedisBloom's
    /// iterators, which RedisBloom's CF.LOADCHUNK reads as offsets): the
    /// server calls [`walk_chunk_of`](Self::walk_chunk_of), which keeps its
    /// walks and refuses one that items moved under. One of ferrobloom's layout
    /// answers iterator 1 (the walk's start, which the header is answered
    /// with) and iterators that carry the filter's fingerprint moves
    /// (kick-outs, compaction) when the walk began, modulo 2^22: a walk that
    /// began with that count 0 has RedisBloom's position iterators (`1 +
    /// offset`), any other [`WALK_FLAG`], the count in bits 40..62 and the
    /// position in bits 0..40. An iterator whose count is not the filter's
    /// now is refused (`BadChunk("rearranged")`): a fingerprint moved since
    /// the walk began, maybe from a part not read yet to a part already read,
    /// so the copy could miss it. A position iterator once the count is not 0
    /// is answered as a walk beginning there (its next iterator carries the
    /// count), unless the filter handed out position iterators before its
    /// latest move (`BadChunk("unknown walk")`: it may be one of them).
    pub fn walk_chunk(&self, iter: i64) -> Result<Option<Chunk<'_>>, CuckooError> {
        if self.rb || iter == 0 {
            return Ok(self.scandump_chunk(iter));
        }
        let epoch = self.moves & WALK_EPOCH_MASK;
        let u = u64::try_from(iter).map_err(|_| CuckooError::BadChunk("position"))?;
        let (began, pos) = match u {
            1 => (epoch, 1),
            u if u & WALK_FLAG == 0 => {
                if epoch != 0 && self.plain.stale(self.moves) {
                    return Err(CuckooError::BadChunk("unknown walk"));
                }
                (epoch, u)
            }
            u => ((u >> WALK_POS_BITS) & WALK_EPOCH_MASK, u & WALK_POS_MASK),
        };
        if began != epoch {
            return Err(CuckooError::BadChunk("rearranged"));
        }
        let pos = i64::try_from(pos).map_err(|_| CuckooError::BadChunk("position"))?;
        let Some((next, data)) = self.scandump_chunk(pos) else {
            return Ok(None);
        };
        if epoch == 0 {
            self.plain.note(self.moves);
            return Ok(Some((next, data)));
        }
        let next = u64::try_from(next)
            .ok()
            .filter(|&n| n <= WALK_POS_MASK)
            .ok_or(CuckooError::BadChunk("position"))?;
        let it = i64::try_from(WALK_FLAG | (epoch << WALK_POS_BITS) | next)
            .map_err(|_| CuckooError::BadChunk("position"))?;
        Ok(Some((it, data)))
    }

    /// CF.SCANDUMP on a live filter by `walker` (the server passes the
    /// client's id). ferrobloom's layout answers [`walk_chunk`](Self::walk_chunk).
    /// RedisBloom's layout answers RedisBloom's iterators and keeps the walk:
    ///
    /// - iterator 0 (the header) opens a walk of `walker` (replacing one of its
    ///   walks still at the header: that one has read no data);
    /// - a walk of `walker` at `iter` is answered if nothing moved since it
    ///   began, else refused (`BadChunk("rearranged")`) and forgotten; its
    ///   last call (the end) closes it;
    /// - any other call (another connection, a forgotten walk, a position of
    ///   the caller's own) is answered as RedisBloom answers it unless the
    ///   filter answered SCANDUMP before its latest move (it may be a walk
    ///   that began before: `BadChunk("unknown walk")`). The count is in
    ///   memory only: a walk that goes on across a restart, a failover or a
    ///   MIGRATE of the key is checked against the moves since the load only,
    ///   as in ferrobloom's layout (docs/operations.md).
    pub fn walk_chunk_of(
        &mut self,
        walker: u64,
        iter: i64,
    ) -> Result<Option<Chunk<'_>>, CuckooError> {
        if !self.rb {
            return self.walk_chunk(iter);
        }
        if iter == 0 {
            self.walks.retain(|w| !(w.walker == walker && w.next == 1));
            if self.walks.len() >= MAX_WALKS {
                self.walks.remove(0);
            }
            // Without room the walk is simply not kept: its next call is
            // answered as an unknown walk's.
            if self.walks.try_reserve(1).is_ok() {
                self.walks.push(Walk {
                    walker,
                    next: 1,
                    began: self.moves,
                });
            }
            self.plain.note(self.moves);
            return Ok(self.scandump_chunk(0));
        }
        let moves = self.moves;
        let mine = |w: &Walk| w.walker == walker && w.next == iter;
        let known = self.walks.iter().any(mine);
        // Two walks of one walker at one position are not told apart: either
        // having begun before a move refuses both.
        let stale = self.walks.iter().any(|w| mine(w) && w.began != moves);
        if stale || (!known && self.plain.stale(moves)) {
            self.walks.retain(|w| !mine(w));
            return Err(CuckooError::BadChunk(if known {
                "rearranged"
            } else {
                "unknown walk"
            }));
        }
        let next = self.scandump_chunk(iter).map_or(0, |(n, _)| n);
        for w in self.walks.iter_mut().filter(|w| mine(w)) {
            w.next = next;
        }
        self.walks.retain(|w| w.next != 0);
        self.plain.note(moves);
        Ok(self.scandump_chunk(iter))
    }

    /// Open walks of a filter of RedisBloom's layout (for tests).
    pub fn open_walks(&self) -> usize {
        self.walks.len()
    }
}
