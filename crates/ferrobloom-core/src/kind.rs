//! The kind seam: what every filter kind does, written once per kind.
//!
//! A filter *kind* is a room of the core with a struct of its own:
//! [`BloomChain`] (`bloom/`), [`Window`] (`window/`) and [`CuckooFilter`]
//! (`cuckoo/`). Each implements [`FilterKind`] (what every filter does: hash,
//! add and ask at a time, measure, copy, encode and load) and a Bloom kind also
//! [`BloomKind`] (what `BF.INFO`, `BF.MERGE` and a binding ask of a Bloom
//! filter). The public types dispatch to these impls and nowhere else:
//! [`BloomFilter`](crate::filter::BloomFilter), the value of a BLOOM key, is an
//! enum over the Bloom kinds whose every method is one `each_kind!` match;
//! [`CuckooFilter`] is its own kind. The batch loops (hash ahead, prefetch,
//! add or ask) are provided methods, so each kind gets a loop of its own,
//! monomorphic (no dynamic dispatch per item), and a kind overrides them with
//! a faster loop of its layout (`BloomChain::add_batch`).
//!
//! The traits are crate-private: the public API is the methods of
//! `BloomFilter` and `CuckooFilter` (`crate::api`), which stay the same when a
//! kind is added.

use std::borrow::Cow;

use crate::bloom::{BloomChain, BloomError, Limits, Link};
use crate::cuckoo::{CuckooError, CuckooFilter, CuckooHash};
use crate::hash::{HashAhead, HashScheme, ItemHash, LOOKAHEAD};
use crate::relocate::Pass;
use crate::window::Window;

/// The scheme word of RDB encoding version 6 (written before the buffers):
/// ferrobloom's own header and hashing.
pub const SCHEME_NATIVE: u64 = 0;
/// RedisBloom's header and hashing (a filter migrated from RedisBloom).
pub const SCHEME_REDISBLOOM: u64 = 1;
/// A windowed Bloom filter (header `FBbw`, `crate::window`): added without a
/// new RDB encoding version, so plain filters keep their payloads byte for
/// byte and an older module refuses a windowed payload cleanly ("unknown hash
/// scheme 2") instead of refusing every payload of a new version.
pub const SCHEME_WINDOWED: u64 = 2;

/// A live SCANDUMP chunk (`(next iterator, data)`), `Ok(None)` past the end.
pub(crate) type Walked<'a, E> = Result<Option<(i64, Cow<'a, [u8]>)>, E>;

/// What every filter kind does (see the module doc).
pub(crate) trait FilterKind: Sized {
    /// An item's hash under the kind's scheme.
    type Hash: Copy;
    /// What hashing depends on, detached from the filter (batches hash ahead
    /// while the filter is borrowed mutably).
    type Scheme: Copy;
    /// Why an operation is refused.
    type Error: PartialEq + std::fmt::Debug;

    fn hash_scheme(&self) -> Self::Scheme;
    fn hash_with(scheme: Self::Scheme, item: &[u8]) -> Self::Hash;
    /// Prefetches the cache lines an add or lookup of `h` touches first.
    fn prefetch_hash(&self, h: &Self::Hash);
    /// What a lookup at server time `now_ms` needs, computed once per command
    /// (a window's current generation; 0 for kinds time does not change).
    fn read_mark(&self, _now_ms: u64) -> u64 {
        0
    }
    /// The filter's time for a write at clock time `now_ms` (a window's
    /// `Window::write_time`: the clock run on from its newest change when that
    /// lies ahead; the clock itself for kinds time does not change).
    fn write_time(&mut self, now_ms: u64) -> u64 {
        now_ms
    }
    /// Anchors the filter's time to clock time `now_ms` after a load (a
    /// window's `Window::anchor`; nothing for other kinds).
    fn anchor_to(&mut self, _now_ms: u64) {}
    /// Whether the item may have been added, at a [`read_mark`](Self::read_mark).
    fn contains_marked(&self, h: &Self::Hash, mark: u64) -> bool;
    /// Adds an item at time `now_ms` (windows only): `BF.ADD` / `CF.ADD`'s
    /// answer (`true`: new).
    fn add_hash(
        &mut self,
        h: &Self::Hash,
        now_ms: u64,
        limits: &Limits,
    ) -> Result<bool, Self::Error>;
    /// Whether a batch add ends after this error (a full non-scaling filter).
    fn ends_batch(err: &Self::Error) -> bool;

    /// Adds each hash in order as [`add_hash`](Self::add_hash), appending the
    /// results to `out` and ending after an error that
    /// [`ends_batch`](Self::ends_batch); prefetches [`LOOKAHEAD`] hashes ahead.
    fn add_hashes(
        &mut self,
        hashes: &[Self::Hash],
        now_ms: u64,
        limits: &Limits,
        out: &mut Vec<Result<bool, Self::Error>>,
    ) {
        for h in hashes.iter().take(LOOKAHEAD) {
            self.prefetch_hash(h);
        }
        for (i, h) in hashes.iter().enumerate() {
            if let Some(a) = hashes.get(i + LOOKAHEAD) {
                self.prefetch_hash(a);
            }
            let r = self.add_hash(h, now_ms, limits);
            let end = r.as_ref().is_err_and(Self::ends_batch);
            out.push(r);
            if end {
                break;
            }
        }
    }

    /// Appends [`contains_marked`](Self::contains_marked) of each hash to
    /// `out`, prefetching [`LOOKAHEAD`] hashes ahead.
    fn contains_hashes(&self, hashes: &[Self::Hash], mark: u64, out: &mut Vec<bool>) {
        for h in hashes.iter().take(LOOKAHEAD) {
            self.prefetch_hash(h);
        }
        for (i, h) in hashes.iter().enumerate() {
            if let Some(a) = hashes.get(i + LOOKAHEAD) {
                self.prefetch_hash(a);
            }
            out.push(self.contains_marked(h, mark));
        }
    }

    /// Applies `add` to each item's hash in order, hashing [`LOOKAHEAD`] items
    /// ahead and prefetching their lines; ends after a result `end` says ends
    /// the batch.
    fn add_stream<'a, R>(
        &mut self,
        items: impl Iterator<Item = &'a [u8]>,
        mut add: impl FnMut(&mut Self, &Self::Hash) -> R,
        end: impl Fn(&R) -> bool,
    ) -> Vec<R> {
        let scheme = self.hash_scheme();
        let mut ahead = HashAhead::new(items, |i| Self::hash_with(scheme, i));
        let mut out = Vec::new();
        while let Some(h) = ahead.next_with(|h| self.prefetch_hash(h)) {
            let r = add(self, &h);
            let stop = end(&r);
            out.push(r);
            if stop {
                break;
            }
        }
        out
    }

    /// [`contains_marked`](Self::contains_marked) of each item in order,
    /// hashing ahead as [`add_stream`](Self::add_stream).
    fn contains_stream<'a>(&self, items: impl Iterator<Item = &'a [u8]>, mark: u64) -> Vec<bool> {
        let scheme = self.hash_scheme();
        let mut ahead = HashAhead::new(items, |i| Self::hash_with(scheme, i));
        let mut out = Vec::new();
        while let Some(h) = ahead.next_with(|h| self.prefetch_hash(h)) {
            out.push(self.contains_marked(&h, mark));
        }
        out
    }

    /// Items it answers for at `now_ms` (a window: in its live generations).
    fn live_items(&self, now_ms: u64) -> u64;
    /// Links (Bloom kinds, over all generations) or sub-filters (cuckoo).
    fn parts_count(&self) -> usize;
    /// BF.INFO / CF.INFO `Size`, the quantity the memory cap bounds.
    fn memory(&self) -> u64;
    /// Every heap block the filter owns besides itself (address, requested
    /// size, alignment).
    fn each_heap_block(&self, f: &mut dyn FnMut(*const u8, usize, usize));
    /// How many blocks [`relocate`](Self::relocate) offers (about its heap
    /// blocks).
    fn blocks(&self) -> u64;
    /// Offers every heap block it owns to a relocation pass (active
    /// defragmentation, `crate::relocate`), in a fixed order.
    fn relocate(&mut self, pass: &mut Pass);
    /// A fallible deep copy (COPY).
    fn copy_of(&self) -> Result<Self, Self::Error>;
    /// Whether it keeps RedisBloom's hashing and header format.
    fn keeps_redisbloom(&self) -> bool;

    /// The SCANDUMP header, in the kind's own format.
    fn header(&self) -> Vec<u8>;
    /// Visits every SCANDUMP data chunk in order (linear time).
    fn each_chunk(&self, f: impl FnMut(i64, &[u8]));
    /// Fills the filter from chunks in SCANDUMP order.
    fn fill<E>(&mut self, read: impl FnMut(&mut [u8]) -> Result<(), E>) -> Result<(), E>;
    /// LOADCHUNK data at iterator `iter >= 1`.
    fn load_at(&mut self, iter: i64, data: &[u8]) -> Result<(), Self::Error>;
    /// SCANDUMP data for `iter >= 1` on a live filter; `Ok(None)` past the end.
    fn walk(&self, iter: i64) -> Walked<'_, Self::Error>;

    /// The reply of `SCANDUMP key iter`: the header at 0, else the live walk's
    /// chunk at the server's iterators; `None` past the end or refused.
    fn walk_reply(&self, iter: i64) -> Option<(i64, Cow<'_, [u8]>)> {
        if iter == 0 {
            return Some((1, Cow::Owned(self.header())));
        }
        self.walk(iter).ok().flatten()
    }

    /// Every reply of the SCANDUMP walk, the header `(1, header)` first.
    fn dump_all(&self, mut f: impl FnMut(i64, &[u8])) {
        f(1, &self.header());
        self.each_chunk(f)
    }
}

/// What a Bloom kind answers besides (`BF.INFO`, `BF.MERGE`, the bindings).
pub(crate) trait BloomKind:
    FilterKind<Hash = ItemHash, Scheme = HashScheme, Error = BloomError>
{
    /// Item capacity: a chain's links' sum, a window's items per window.
    fn capacity_of(&self) -> u64;
    /// Items accepted as new (a window: in the generations it holds).
    fn items_held(&self) -> u64;
    /// The growth factor; `None` for non-scaling filters.
    fn expansion_of(&self) -> Option<u32>;
    /// The error rate the filter was created with.
    fn error_of(&self) -> f64;
    /// The name of its bit layout (`classic`, `blocked`, `paired`, `redisbloom`).
    fn layout_name(&self) -> &'static str;
    /// A windowed filter's window in milliseconds.
    fn window_of(&self) -> Option<u64> {
        None
    }
    /// Its RDB scheme word with ferrobloom's header (`SCHEME_*`; a RedisBloom chain writes `SCHEME_REDISBLOOM` instead).
    fn scheme_word(&self) -> u64 {
        SCHEME_NATIVE
    }
    /// Whether its answers depend on the time (its reads take a
    /// [`read_mark`](FilterKind::read_mark) of the clock, its writes a time
    /// that a server replicates with them).
    fn timed(&self) -> bool {
        false
    }
    /// Every link whose bytes its chunks carry, in chunk order.
    fn link_list(&self) -> Vec<&Link>;
    /// SCANDUMP data for a position iterator `iter >= 1`.
    fn position_chunk(&self, iter: i64) -> Option<(i64, &[u8])>;
    /// SCANDUMP data for `iter >= 1` on a live filter (the server's
    /// iterators); `Ok(None)` past the end.
    fn live_chunk(&self, iter: i64) -> Result<Option<(i64, &[u8])>, BloomError>;
    /// Why BF.MERGE can never take it, whatever the others are (`None`: it can).
    fn unmergeable(&self) -> Option<&'static str> {
        None
    }
    /// Whether MEXISTS answers a batch at once ([`contains_bits`](Self::contains_bits))
    /// rather than item by item.
    fn answers_in_bulk(&self) -> bool {
        false
    }
    /// Sets bit `i` of `found` (zeroed by the caller) for each `hashes[i]` it
    /// holds at `mark`, all at once.
    fn contains_bits(&self, hashes: &[ItemHash], mark: u64, found: &mut [u64]) {
        for (i, h) in hashes.iter().enumerate() {
            if self.contains_marked(h, mark) {
                if let Some(w) = found.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
    }
}

impl FilterKind for BloomChain {
    type Hash = ItemHash;
    type Scheme = HashScheme;
    type Error = BloomError;

    fn hash_scheme(&self) -> HashScheme {
        self.scheme()
    }
    #[inline]
    fn hash_with(scheme: HashScheme, item: &[u8]) -> ItemHash {
        scheme.bloom(item)
    }
    #[inline]
    fn prefetch_hash(&self, h: &ItemHash) {
        self.prefetch(h)
    }
    #[inline]
    fn contains_marked(&self, h: &ItemHash, _mark: u64) -> bool {
        self.contains(h)
    }
    #[inline]
    fn add_hash(
        &mut self,
        h: &ItemHash,
        _now_ms: u64,
        limits: &Limits,
    ) -> Result<bool, BloomError> {
        self.add(h, limits)
    }
    fn ends_batch(err: &BloomError) -> bool {
        *err == BloomError::Full
    }
    /// A chain of one link tests and sets each item in one pass, in a loop of
    /// its layout that prefetches a group of items at a time.
    fn add_hashes(
        &mut self,
        hashes: &[ItemHash],
        _now_ms: u64,
        limits: &Limits,
        out: &mut Vec<Result<bool, BloomError>>,
    ) {
        let ahead = self.prefetch_distance();
        self.add_batch(hashes, ahead, limits, out)
    }
    fn contains_hashes(&self, hashes: &[ItemHash], _mark: u64, out: &mut Vec<bool>) {
        self.contains_batch(hashes, self.prefetch_distance(), out)
    }
    fn live_items(&self, _now_ms: u64) -> u64 {
        self.items()
    }
    fn parts_count(&self) -> usize {
        self.link_count()
    }
    fn memory(&self) -> u64 {
        self.mem_usage()
    }
    fn each_heap_block(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        self.heap_blocks(f)
    }
    fn blocks(&self) -> u64 {
        self.block_count()
    }
    fn relocate(&mut self, pass: &mut Pass) {
        self.relocate_blocks(pass)
    }
    fn copy_of(&self) -> Result<Self, BloomError> {
        self.try_clone()
    }
    fn keeps_redisbloom(&self) -> bool {
        self.is_redisbloom()
    }
    fn header(&self) -> Vec<u8> {
        self.encode_header()
    }
    fn each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        self.for_each_chunk(f)
    }
    fn fill<E>(&mut self, read: impl FnMut(&mut [u8]) -> Result<(), E>) -> Result<(), E> {
        self.fill_chunks(read)
    }
    fn load_at(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        self.load_chunk(iter, data)
    }
    fn walk(&self, iter: i64) -> Walked<'_, BloomError> {
        borrowed(self.live_chunk(iter))
    }
}

impl BloomKind for BloomChain {
    fn capacity_of(&self) -> u64 {
        self.capacity()
    }
    fn items_held(&self) -> u64 {
        self.items()
    }
    fn expansion_of(&self) -> Option<u32> {
        self.expansion()
    }
    fn error_of(&self) -> f64 {
        self.error_rate()
    }
    fn layout_name(&self) -> &'static str {
        if self.is_redisbloom() {
            return "redisbloom";
        }
        self.links()
            .first()
            .map_or("classic", |l| l.shape().layout.name())
    }
    fn link_list(&self) -> Vec<&Link> {
        self.links().iter().collect()
    }
    fn position_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        self.scandump_chunk(iter)
    }
    /// A chain's chunk at a RedisBloom iterator.
    fn live_chunk(&self, iter: i64) -> Result<Option<(i64, &[u8])>, BloomError> {
        Ok(self.scandump_chunk(iter))
    }
}

impl FilterKind for Window {
    type Hash = ItemHash;
    type Scheme = HashScheme;
    type Error = BloomError;

    fn hash_scheme(&self) -> HashScheme {
        self.scheme()
    }
    #[inline]
    fn hash_with(scheme: HashScheme, item: &[u8]) -> ItemHash {
        scheme.bloom(item)
    }
    #[inline]
    fn prefetch_hash(&self, h: &ItemHash) {
        self.prefetch(h)
    }
    #[inline]
    fn read_mark(&self, now_ms: u64) -> u64 {
        Window::read_mark(self, now_ms)
    }
    fn write_time(&mut self, now_ms: u64) -> u64 {
        Window::write_time(self, now_ms)
    }
    fn anchor_to(&mut self, now_ms: u64) {
        self.anchor(now_ms)
    }
    #[inline]
    fn contains_marked(&self, h: &ItemHash, mark: u64) -> bool {
        Window::contains_marked(self, h, mark)
    }
    #[inline]
    fn add_hash(&mut self, h: &ItemHash, now_ms: u64, limits: &Limits) -> Result<bool, BloomError> {
        self.add(h, now_ms, limits).map(|a| a.is_new())
    }
    fn ends_batch(err: &BloomError) -> bool {
        *err == BloomError::Full
    }
    fn live_items(&self, now_ms: u64) -> u64 {
        self.items_at(now_ms)
    }
    fn parts_count(&self) -> usize {
        self.link_count()
    }
    fn memory(&self) -> u64 {
        self.mem_usage()
    }
    fn each_heap_block(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        self.heap_blocks(f)
    }
    fn blocks(&self) -> u64 {
        self.block_count()
    }
    fn relocate(&mut self, pass: &mut Pass) {
        self.relocate_blocks(pass)
    }
    fn copy_of(&self) -> Result<Self, BloomError> {
        self.try_clone()
    }
    fn keeps_redisbloom(&self) -> bool {
        false
    }
    fn header(&self) -> Vec<u8> {
        self.encode_header()
    }
    fn each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        self.for_each_chunk(f)
    }
    fn fill<E>(&mut self, read: impl FnMut(&mut [u8]) -> Result<(), E>) -> Result<(), E> {
        self.fill_chunks(read)
    }
    fn load_at(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        self.load_chunk(iter, data)
    }
    fn walk(&self, iter: i64) -> Walked<'_, BloomError> {
        borrowed(self.live_chunk(iter))
    }
}

impl BloomKind for Window {
    fn capacity_of(&self) -> u64 {
        self.capacity()
    }
    fn items_held(&self) -> u64 {
        self.items()
    }
    fn expansion_of(&self) -> Option<u32> {
        self.expansion()
    }
    fn error_of(&self) -> f64 {
        self.error()
    }
    fn layout_name(&self) -> &'static str {
        self.layout().name()
    }
    fn window_of(&self) -> Option<u64> {
        Some(self.window_ms())
    }
    fn timed(&self) -> bool {
        true
    }
    fn scheme_word(&self) -> u64 {
        SCHEME_WINDOWED
    }
    fn link_list(&self) -> Vec<&Link> {
        self.generation_list()
            .flat_map(|(_, g)| g.links().iter())
            .collect()
    }
    fn position_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        self.scandump_chunk(iter)
    }
    /// A window's chunk at 1 or a walk iterator ([`Window::walk_chunk`]; other
    /// position iterators are refused: they shift when a generation is dropped).
    fn live_chunk(&self, iter: i64) -> Result<Option<(i64, &[u8])>, BloomError> {
        self.walk_chunk(iter)
    }
    // Generations of different filters start at different times: no
    // link-by-link union keeps every item's lifetime (docs/windowed.md).
    fn unmergeable(&self) -> Option<&'static str> {
        Some("a windowed filter")
    }
    /// Generation by generation (`Window::contains_batch`).
    fn answers_in_bulk(&self) -> bool {
        true
    }
    fn contains_bits(&self, hashes: &[ItemHash], mark: u64, found: &mut [u64]) {
        self.contains_batch(hashes, mark, found)
    }
}

fn borrowed(c: Result<Option<(i64, &[u8])>, BloomError>) -> Walked<'_, BloomError> {
    c.map(|o| o.map(|(n, d)| (n, Cow::Borrowed(d))))
}

impl FilterKind for CuckooFilter {
    type Hash = CuckooHash;
    /// Whether the filter hashes as RedisBloom's.
    type Scheme = bool;
    type Error = CuckooError;

    fn hash_scheme(&self) -> bool {
        self.is_redisbloom()
    }
    #[inline]
    fn hash_with(redisbloom: bool, item: &[u8]) -> CuckooHash {
        crate::cuckoo::hash_for(redisbloom, item)
    }
    #[inline]
    fn prefetch_hash(&self, h: &CuckooHash) {
        self.prefetch(h)
    }
    #[inline]
    fn contains_marked(&self, h: &CuckooHash, _mark: u64) -> bool {
        self.contains(h)
    }
    #[inline]
    fn add_hash(
        &mut self,
        h: &CuckooHash,
        _now_ms: u64,
        limits: &Limits,
    ) -> Result<bool, CuckooError> {
        self.insert(h, limits.max_filters, limits.max_bytes)
            .map(|()| true)
    }
    /// No room for one item is an element of `CF.INSERT`'s reply (`-1`); the
    /// next item may still fit (an expansion limit is per item).
    fn ends_batch(_err: &CuckooError) -> bool {
        false
    }
    fn live_items(&self, _now_ms: u64) -> u64 {
        self.num_items()
    }
    fn parts_count(&self) -> usize {
        self.num_filters()
    }
    fn memory(&self) -> u64 {
        self.mem_usage() as u64
    }
    fn each_heap_block(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        self.heap_blocks(f)
    }
    fn blocks(&self) -> u64 {
        self.block_count()
    }
    fn relocate(&mut self, pass: &mut Pass) {
        self.relocate_blocks(pass)
    }
    fn copy_of(&self) -> Result<Self, CuckooError> {
        self.try_clone(u64::MAX)
    }
    fn keeps_redisbloom(&self) -> bool {
        self.is_redisbloom()
    }
    fn header(&self) -> Vec<u8> {
        self.encode_header()
    }
    fn each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        self.for_each_chunk(f)
    }
    fn fill<E>(&mut self, read: impl FnMut(&mut [u8]) -> Result<(), E>) -> Result<(), E> {
        self.fill_chunks(read)
    }
    fn load_at(&mut self, iter: i64, data: &[u8]) -> Result<(), CuckooError> {
        self.load_chunk(iter, data)
    }
    /// The server's iterators (they carry the filter's move count once
    /// fingerprints moved).
    fn walk(&self, iter: i64) -> Walked<'_, CuckooError> {
        self.walk_chunk(iter)
    }
}
