//! Filters outside a server: the operations a program (the Python package,
//! the `ferrobloom` command-line tool, a Rust program) needs to build a filter
//! in-process, ask it about items, and move it to and from a server.
//!
//! - **Build**: [`BloomChain::with_options`](crate::bloom::BloomChain::with_options)
//!   / [`BloomChain::new_redisbloom`](crate::bloom::BloomChain::new_redisbloom)
//!   (then `BloomFilter::from`), [`CuckooFilter::new`].
//! - **Batch add / contains**: [`BloomFilter::add_items`],
//!   [`BloomFilter::contains_items`], [`cuckoo_insert_items`],
//!   [`CuckooFilter::contains_items`]: the answers of `BF.MADD` / `BF.MEXISTS`
//!   and `CF.INSERT` / `CF.MEXISTS`, hashing ahead and prefetching as the server
//!   does.
//! - **Dump to chunks**: [`Scandump::scandump`], step by step as the
//!   `BF.SCANDUMP` / `CF.SCANDUMP` commands, or [`Scandump::for_each_dump_chunk`]
//!   for all of them in linear time; the same bytes as the server's, for the
//!   same parameters and the same items in the same order.
//! - **Load from chunks**: [`load_chunks`], which checks every chunk against the
//!   header before allocating the filter (and anchors a windowed filter to
//!   this machine's clock, [`clock_ms`], as a server anchors every load).
//! - **Walk a server's SCANDUMP**: [`WalkBudget`], what the walk may return
//!   after its header, so a client stops a walk that goes past it.
//! - **Time**: the add and lookup calls take this machine's clock; a windowed
//!   filter runs on from its newest change when that lies ahead of it (the
//!   server's rule, `Window::write_time`).
//! - **Merge**: [`BloomFilter::merged`] / [`BloomFilter::merge_from`], with
//!   `BF.MERGE`'s rules.
//! - **Files**: [`crate::file`], the SCANDUMP chunks in a small framing.
//!
//! `examples/local_filter.rs` uses all of them.

use std::borrow::Cow;

use crate::bloom::{BloomError, Limits, MAX_LINKS_CEILING};
use crate::cuckoo::{CuckooError, CuckooFilter, CuckooHash, MAX_SUBFILTERS};
use crate::filter::{each_kind, BloomFilter};
use crate::hash::ItemHash;
use crate::kind::FilterKind;
use crate::payload::{load_payload_as, HeaderFormat, Payload};

/// Bit 62 of a live walk's SCANDUMP iterators (the same bit for windowed and
/// cuckoo filters).
const WALK_ITER_FLAG: u64 = crate::cuckoo::WALK_FLAG;
const _: () = assert!(WALK_ITER_FLAG == crate::window::WALK_FLAG);

/// The server's default limits for a client's filters (`max-filter-memory`
/// 4 GiB, `bf-max-links` 64, `cf-max-expansions` 32): what a local filter
/// grows within, so that a server with its default configuration accepts it.
/// The module's configuration takes its defaults from here.
pub const SERVER_DEFAULT_LIMITS: Limits = Limits {
    max_bytes: 4 << 30,
    max_links: 64,
    max_filters: 32,
};

/// Limits for loading a filter whose every byte is at hand (a file, a pull):
/// only the core's hard ceilings, since [`load_chunks`] checks that the input
/// carries every byte the header describes before it allocates anything.
pub const LOAD_LIMITS: Limits = Limits {
    max_bytes: u64::MAX,
    max_links: MAX_LINKS_CEILING,
    max_filters: MAX_SUBFILTERS,
};

/// Which command family a filter belongs to (and the file format's kind byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `BF.*`: a Bloom filter of any kind (scalable, non-scaling, windowed; any layout).
    Bloom = 1,
    /// `CF.*`: a cuckoo filter (either layout).
    Cuckoo = 2,
}

impl Kind {
    /// The kind of a file's kind byte.
    pub fn from_code(code: u8) -> Option<Kind> {
        match code {
            1 => Some(Kind::Bloom),
            2 => Some(Kind::Cuckoo),
            _ => None,
        }
    }

    /// The prefix of the kind's commands (`BF` or `CF`).
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Bloom => "BF",
            Kind::Cuckoo => "CF",
        }
    }
}

/// A filter that dumps as the SCANDUMP commands do.
pub trait Scandump: Payload {
    /// The filter's command family.
    const KIND: Kind;

    /// The reply of `SCANDUMP key iter`: iterator 0 gives `(1, header)`, an
    /// iterator a previous reply gave gives the next data chunk with the
    /// iterator to ask for next (and to give `LOADCHUNK` with it); `None` past
    /// the end (where the server answers `[0, ""]`).
    fn scandump(&self, iter: i64) -> Option<(i64, Cow<'_, [u8]>)>;

    /// Every reply of the SCANDUMP walk in order, the header `(1, header)`
    /// first, in time linear in the filter's size.
    fn for_each_dump_chunk(&self, f: impl FnMut(i64, &[u8]));
}

impl Scandump for BloomFilter {
    const KIND: Kind = Kind::Bloom;

    fn scandump(&self, iter: i64) -> Option<(i64, Cow<'_, [u8]>)> {
        each_kind!(self, k => k.walk_reply(iter))
    }

    fn for_each_dump_chunk(&self, f: impl FnMut(i64, &[u8])) {
        each_kind!(self, k => k.dump_all(f))
    }
}

impl Scandump for CuckooFilter {
    const KIND: Kind = Kind::Cuckoo;

    fn scandump(&self, iter: i64) -> Option<(i64, Cow<'_, [u8]>)> {
        self.walk_reply(iter)
    }

    fn for_each_dump_chunk(&self, f: impl FnMut(i64, &[u8])) {
        self.dump_all(f)
    }
}

/// Rebuilds a filter from its SCANDUMP replies in order (`(1, header)` first,
/// then every data chunk with the iterator SCANDUMP returned with it; the final
/// `(0, "")` may be left out). Every iterator and length is checked against the
/// header before the filter is allocated, so nothing larger than the chunks
/// given is allocated; `limits` bound the filter the header describes. A
/// windowed filter is anchored to this machine's clock ([`clock_ms`]) as a
/// server anchors every load: when its newest change lies ahead of the clock,
/// its time goes on from that change at the clock's rate.
pub fn load_chunks<T: Payload>(chunks: &[(i64, &[u8])], limits: &Limits) -> Result<T, String> {
    let chunks = match chunks.split_last() {
        Some(((0, []), rest)) => rest,
        _ => chunks,
    };
    let Some(((first, header), data)) = chunks.split_first() else {
        return Err("no chunks (the header is missing)".into());
    };
    if *first != 1 {
        return Err(format!(
            "the first chunk is not a header (iterator {first}, not 1)"
        ));
    }
    // Data chunk i ends where the next one starts: its iterator is 1 + the bytes
    // of every data chunk up to and including it. A live walk's iterators
    // (bit 62: a windowed filter's name their generation, a cuckoo filter's
    // carry its move count; see `Window::walk_chunk`, `CuckooFilter::walk_chunk`)
    // hold no offset into the whole stream: their chunks are taken in order,
    // and the loader checks every chunk's length against the header.
    let mut at: i64 = 1;
    for (i, (iter, d)) in data.iter().enumerate() {
        check_data_iterator(i + 1, *iter, d.len(), &mut at)?;
    }
    let mut bufs = std::iter::once(*header).chain(data.iter().map(|(_, d)| *d));
    let mut value: T = load_payload_as(limits, HeaderFormat::Any, || bufs.next())?;
    if bufs.next().is_some() {
        return Err("more data chunks than the header describes".into());
    }
    value.anchor_clock(clock_ms());
    Ok(value)
}

/// This machine's clock in milliseconds since the Unix epoch: the time the
/// local loaders ([`load_chunks`], `crate::file`) anchor a windowed filter
/// to, and the time the local add and lookup calls expect.
pub fn clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Checks data chunk `i` (from 1) of a SCANDUMP walk, `len` bytes with
/// iterator `iter`, `at` being where the previous chunk ended (1 + the data
/// bytes before it; advanced past this chunk): a walk's chunk is never empty
/// and its iterator is where it ends, or a live walk's (bit 62). The check of
/// [`load_chunks`] and of the file readers (`crate::file`).
pub(crate) fn check_data_iterator(
    i: usize,
    iter: i64,
    len: usize,
    at: &mut i64,
) -> Result<(), String> {
    let len = i64::try_from(len).map_err(|_| "chunk too large")?;
    *at = at.checked_add(len).ok_or("chunk offsets overflow")?;
    let walk = iter > 0 && (iter as u64) & WALK_ITER_FLAG != 0;
    if (iter != *at && !walk) || len == 0 {
        return Err(format!(
            "data chunk {i} has iterator {iter}, expected {at} (chunks missing, reordered or resized)"
        ));
    }
    Ok(())
}

/// What a SCANDUMP walk may return after the header it began with: a client
/// that walks a server's filter (a pull) stops with an error once the walk
/// goes past it, so a broken or hostile server (iterators that cycle or
/// repeat, empty or endless data) cannot make the walk run or grow without
/// end. The header's links or sub-filters give the data bytes exactly and
/// the chunks within a margin (a server may cut its chunks smaller than
/// ferrobloom's 16 MiB: RedisBloom's are 10 or 16 MiB; [`WALK_MIN_CHUNK`]).
/// A walk that goes past it read a filter that changed since the header (a
/// write that grew it) or a server that does not follow SCANDUMP: walk again
/// from the header, a bounded number of times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkBudget {
    /// Data chunks the walk may still return.
    pub chunks: u64,
    /// Data bytes the walk may still return.
    pub bytes: u64,
}

/// The smallest chunk [`WalkBudget`] expects of a server inside a link or
/// sub-filter (its last chunk aside).
pub const WALK_MIN_CHUNK: u64 = 64 << 10;

impl WalkBudget {
    /// The budget of a walk whose first reply was `header` (a filter of
    /// type `T`); an invalid header is refused as a load would refuse it.
    pub fn of<T: Payload>(header: &[u8]) -> Result<Self, String> {
        let lengths = T::data_lengths(header, &LOAD_LIMITS, HeaderFormat::Any)
            .map_err(|e| format!("invalid header: {e}"))?;
        Ok(WalkBudget {
            chunks: lengths
                .iter()
                .fold(0u64, |n, l| n.saturating_add(l.div_ceil(WALK_MIN_CHUNK))),
            bytes: lengths.iter().fold(0u64, |n, l| n.saturating_add(*l)),
        })
    }

    /// Takes a data chunk of `len` bytes off the budget; refused once the
    /// walk returned more chunks or bytes than the header describes.
    pub fn take(&mut self, len: u64) -> Result<(), String> {
        if self.chunks == 0 || len > self.bytes {
            return Err(format!(
                "the SCANDUMP walk went past what its header describes (a {len}-byte chunk with \
                 {} chunks and {} bytes left): the key changed during the walk, or the server \
                 does not follow SCANDUMP",
                self.chunks, self.bytes
            ));
        }
        self.chunks -= 1;
        self.bytes -= len;
        Ok(())
    }
}

/// What one item of a batch add did, as an element of the `BF.MADD` reply.
pub type AddResult = Result<bool, BloomError>;

impl BloomFilter {
    /// Adds one item at clock time `now_ms` (used by windowed filters only):
    /// `BF.ADD`'s answer (`true`: the item is new). A windowed filter takes
    /// the clock as a server takes its own ([`write_time`]): its time is the
    /// clock run on from its newest change when that lies ahead of it, so a
    /// filter dated ahead (a pull from a server whose clock is ahead, a file)
    /// keeps rotating its generations and takes items as the server would.
    ///
    /// [`write_time`]: crate::window::Window::write_time
    pub fn add_item(&mut self, item: &[u8], now_ms: u64, limits: &Limits) -> AddResult {
        let h = self.hash(item);
        each_kind!(self, k => {
            let now = k.write_time(now_ms);
            k.add_hash(&h, now, limits)
        })
    }

    /// Adds an item already hashed with this filter's [`scheme`](Self::scheme)
    /// at the filter's time `now_ms` (windowed filters only; unlike
    /// [`add_item`](Self::add_item), the clock rule is the caller's):
    /// `BF.ADD`'s answer.
    pub fn add_hash(&mut self, h: &ItemHash, now_ms: u64, limits: &Limits) -> AddResult {
        each_kind!(self, k => k.add_hash(h, now_ms, limits))
    }

    /// [`Payload::anchor_clock`](crate::payload::Payload::anchor_clock): what
    /// a server does to a windowed filter it loads, at clock time `now_ms`.
    pub fn anchor_clock(&mut self, now_ms: u64) {
        each_kind!(self, k => k.anchor_to(now_ms))
    }

    /// Whether the item may have been added (for a windowed filter: within the
    /// window at `now_ms`), `BF.EXISTS`'s answer.
    pub fn contains_item(&self, item: &[u8], now_ms: u64) -> bool {
        let h = self.hash(item);
        self.contains_marked(&h, self.read_mark(now_ms))
    }

    /// Adds items in order at clock time `now_ms` (as [`add_item`](Self::add_item)),
    /// `BF.MADD`'s reply: one element per item up to the
    /// first "full" error of a non-scaling filter, which ends it (as the
    /// server's reply ends there); other errors are elements and the batch
    /// goes on.
    pub fn add_items<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a [u8]>,
        now_ms: u64,
        limits: &Limits,
    ) -> Vec<AddResult> {
        let items = items.into_iter();
        each_kind!(self, k => {
            let now_ms = k.write_time(now_ms);
            k.add_stream(
                items,
                |k, h| k.add_hash(h, now_ms, limits),
                |r| *r == Err(BloomError::Full),
            )
        })
    }

    /// `BF.MEXISTS`'s reply: whether each item may have been added.
    pub fn contains_items<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        now_ms: u64,
    ) -> Vec<bool> {
        let mark = self.read_mark(now_ms);
        each_kind!(self, k => k.contains_stream(items.into_iter(), mark))
    }

    /// [`add_items`](Self::add_items) for items already hashed with this
    /// filter's [`scheme`](Self::scheme) (a caller that reads items from
    /// memory it cannot keep, such as the Python package hashing straight from
    /// Python's buffers, hashes first and adds later). The results are appended
    /// to `out`, ending after a "full" error as `add_items`' do; the filter
    /// lines of the hashes [`LOOKAHEAD`](crate::hash::LOOKAHEAD) ahead are
    /// prefetched (for a classic filter below
    /// [`PREFETCH_FROM`](crate::bloom::PREFETCH_FROM) bytes, none). A filter of
    /// one link tests and sets each item in one pass, in a loop of its layout
    /// that prefetches a group of items at a time (`BloomChain::add_batch`).
    pub fn add_hashes(
        &mut self,
        hashes: &[ItemHash],
        now_ms: u64,
        limits: &Limits,
        out: &mut Vec<AddResult>,
    ) {
        out.reserve(hashes.len());
        each_kind!(self, k => {
            let now_ms = k.write_time(now_ms);
            k.add_hashes(hashes, now_ms, limits, out)
        })
    }

    /// [`contains_items`](Self::contains_items) for items already hashed with
    /// this filter's [`scheme`](Self::scheme); answers are appended to `out`
    /// (prefetching as [`add_hashes`](Self::add_hashes); a filter of one
    /// blocked or classic link in a loop of its layout,
    /// `BloomChain::contains_batch`).
    pub fn contains_hashes(&self, hashes: &[ItemHash], now_ms: u64, out: &mut Vec<bool>) {
        out.reserve(hashes.len());
        let mark = self.read_mark(now_ms);
        each_kind!(self, k => k.contains_hashes(hashes, mark, out))
    }
}

/// `CF.INSERT`'s (`nx`: `CF.INSERTNX`'s) reply: per item `Ok(true)` added,
/// `Ok(false)` already present (NX only), `Err` no room (the server's `-1`).
pub fn cuckoo_insert_items<'a>(
    f: &mut CuckooFilter,
    items: impl IntoIterator<Item = &'a [u8]>,
    nx: bool,
    limits: &Limits,
) -> Vec<Result<bool, CuckooError>> {
    let add = |f: &mut CuckooFilter, h: &CuckooHash| {
        if nx {
            f.insert_unique(h, limits.max_filters, limits.max_bytes)
        } else {
            f.add_hash(h, 0, limits)
        }
    };
    f.add_stream(items.into_iter(), add, |_| false)
}

impl CuckooFilter {
    /// `CF.MEXISTS`'s reply: whether each item may have been added.
    pub fn contains_items<'a>(&self, items: impl IntoIterator<Item = &'a [u8]>) -> Vec<bool> {
        self.contains_stream(items.into_iter(), 0)
    }
}
