//! A Bloom filter of any kind: the value a BLOOM key holds, a local filter, a
//! file's content. Each kind is a room of its own that implements the kind
//! seam (`crate::kind`), and this type dispatches to it:
//!
//! - [`BloomChain`] (`bloom/`): a scalable or non-scaling chain of links, in
//!   ferrobloom's layouts or RedisBloom's (a filter migrated from RedisBloom);
//! - [`Window`] (`window/`): a windowed filter (`WINDOW seconds`), generations of
//!   chains that it sizes and drops itself.
//!
//! The kinds are told apart by their header's magic (`FBbf` and RedisBloom's
//! header for a chain, `FBbw` for a window) in [`BloomFilter::from_header`] and
//! its siblings, here and nowhere else; every other method is one match, the
//! one in `each_kind!`. A new Bloom kind is a variant, its row in that macro,
//! its `From`, and its magic in the header readers (docs/design.md, "A new
//! filter kind").

use crate::bloom::{BloomChain, BloomError, Limits, Link, MergeError, MergePlan, Overfill};
use crate::hash::{HashScheme, ItemHash};
use crate::kind::{BloomKind, FilterKind};
use crate::relocate::Pass;
use crate::window::{Window, WINDOW_MAGIC};

/// A Bloom filter of any kind (see the module doc).
pub enum BloomFilter {
    /// A scalable or non-scaling chain of links.
    Chain(BloomChain),
    /// A windowed filter (boxed: a plain chain, by far the most common value,
    /// stays as small as it is).
    Window(Box<Window>),
}

/// `each_kind!(filter, k => expr)`: `expr` with `k` bound to the filter's kind
/// (a reference to a type implementing `crate::kind::BloomKind`; a boxed kind
/// is reached through its box by method calls). The one match over the kinds.
macro_rules! each_kind {
    ($f:expr, $k:ident => $e:expr) => {
        match $f {
            $crate::filter::BloomFilter::Chain($k) => $e,
            $crate::filter::BloomFilter::Window($k) => $e,
        }
    };
}
pub(crate) use each_kind;

impl From<BloomChain> for BloomFilter {
    fn from(c: BloomChain) -> Self {
        BloomFilter::Chain(c)
    }
}

impl From<Window> for BloomFilter {
    fn from(w: Window) -> Self {
        BloomFilter::Window(Box::new(w))
    }
}

impl BloomFilter {
    /// The chain, unless the filter is of another kind.
    pub fn as_chain(&self) -> Option<&BloomChain> {
        match self {
            BloomFilter::Chain(c) => Some(c),
            _ => None,
        }
    }

    /// The chain, mutably, unless the filter is of another kind.
    pub fn as_chain_mut(&mut self) -> Option<&mut BloomChain> {
        match self {
            BloomFilter::Chain(c) => Some(c),
            _ => None,
        }
    }

    /// The window of a windowed filter.
    pub fn as_window(&self) -> Option<&Window> {
        match self {
            BloomFilter::Window(w) => Some(w),
            _ => None,
        }
    }

    /// The window of a windowed filter, mutably.
    pub fn as_window_mut(&mut self) -> Option<&mut Window> {
        match self {
            BloomFilter::Window(w) => Some(w),
            _ => None,
        }
    }

    /// How this filter hashes items.
    pub fn scheme(&self) -> HashScheme {
        each_kind!(self, k => k.hash_scheme())
    }

    /// The item's hash under this filter's scheme.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.scheme().bloom(item)
    }

    /// Whether the filter came from RedisBloom (and keeps its formats).
    pub fn is_redisbloom(&self) -> bool {
        each_kind!(self, k => k.keeps_redisbloom())
    }

    /// Item capacity: a chain's links' sum, a window's items per window.
    pub fn capacity(&self) -> u64 {
        each_kind!(self, k => k.capacity_of())
    }

    /// Items accepted as new (a window: in the generations it holds).
    pub fn items(&self) -> u64 {
        each_kind!(self, k => k.items_held())
    }

    /// Items it answers for at `now_ms` (BF.CARD, BF.INFO `Number of items
    /// inserted`): a window's in its live generations, a chain's all.
    pub fn live_items(&self, now_ms: u64) -> u64 {
        each_kind!(self, k => k.live_items(now_ms))
    }

    /// The growth factor; `None` for non-scaling filters.
    pub fn expansion(&self) -> Option<u32> {
        each_kind!(self, k => k.expansion_of())
    }

    /// The error rate the filter was created with.
    pub fn error_rate(&self) -> f64 {
        each_kind!(self, k => k.error_of())
    }

    /// The name of its bit layout: `classic`, `blocked`, `paired` or `redisbloom`.
    pub fn layout_name(&self) -> &'static str {
        each_kind!(self, k => k.layout_name())
    }

    /// A windowed filter's window in milliseconds (`None`: not windowed).
    pub fn window_ms(&self) -> Option<u64> {
        each_kind!(self, k => k.window_of())
    }

    /// Whether its answers depend on the time: reads need a
    /// [`read_mark`](Self::read_mark) of the clock (a windowed filter); for
    /// any other filter the clock need not be read.
    pub fn is_timed(&self) -> bool {
        each_kind!(self, k => k.timed())
    }

    /// Every link whose bytes its SCANDUMP chunks carry, in chunk order (a
    /// window: over its generations, oldest first).
    pub fn links(&self) -> Vec<&Link> {
        each_kind!(self, k => k.link_list())
    }

    /// Links in use (a window: over all its generations).
    pub fn link_count(&self) -> usize {
        each_kind!(self, k => k.parts_count())
    }

    /// Memory estimate in bytes: RedisBloom's formula `32 + 64 * links + bytes`
    /// (BF.INFO `Size`, MEMORY USAGE, and the quantity the memory cap bounds).
    pub fn mem_usage(&self) -> u64 {
        each_kind!(self, k => k.memory())
    }

    /// Every heap block the filter owns besides itself (address, requested
    /// size, alignment): a boxed kind's box, then the kind's own.
    pub fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        if let BloomFilter::Window(b) = self {
            boxed_block::<Window>(b, f);
        }
        each_kind!(self, k => k.each_heap_block(f))
    }

    /// Block numbers [`relocate_blocks`](Self::relocate_blocks) takes: about the
    /// allocations the value owns besides itself (a boxed kind's box, then the
    /// kind's own).
    pub fn block_count(&self) -> u64 {
        let boxed = u64::from(matches!(self, BloomFilter::Window(_)));
        boxed + each_kind!(self, k => k.blocks())
    }

    /// Offers every heap block the value owns besides itself to a relocation
    /// pass (active defragmentation, `crate::relocate`): the same blocks as
    /// [`heap_blocks`](Self::heap_blocks), in a fixed order (a boxed kind's
    /// box first).
    pub fn relocate_blocks(&mut self, pass: &mut Pass) {
        if let BloomFilter::Window(w) = self {
            pass.boxed(w);
        }
        each_kind!(self, k => k.relocate(pass))
    }

    /// A fallible deep copy (for COPY).
    pub fn try_clone(&self) -> Result<Self, BloomError> {
        each_kind!(self, k => k.copy_of().map(BloomFilter::from))
    }

    /// The SCANDUMP header: the kind's own format (`FBbf`, RedisBloom's, `FBbw`).
    pub fn encode_header(&self) -> Vec<u8> {
        each_kind!(self, k => k.header())
    }

    /// Prefetches the cache lines an add or lookup of `h` touches first.
    #[inline]
    pub fn prefetch(&self, h: &ItemHash) {
        each_kind!(self, k => k.prefetch_hash(h))
    }

    /// What lookups at server time `now_ms` need, computed once per command
    /// (a window's current generation; 0 for a chain).
    #[inline]
    pub fn read_mark(&self, now_ms: u64) -> u64 {
        each_kind!(self, k => k.read_mark(now_ms))
    }

    /// Whether the item may have been added, at a [`read_mark`](Self::read_mark).
    #[inline]
    pub fn contains_marked(&self, h: &ItemHash, mark: u64) -> bool {
        each_kind!(self, k => k.contains_marked(h, mark))
    }

    /// Whether MEXISTS answers a batch at once, with
    /// [`contains_bits`](Self::contains_bits) (a window: generation by
    /// generation), rather than item by item.
    pub fn answers_in_bulk(&self) -> bool {
        each_kind!(self, k => k.answers_in_bulk())
    }

    /// Sets bit `i` of `found` (zeroed by the caller, one bit per item) for
    /// each `hashes[i]` the filter holds at `mark`.
    pub fn contains_bits(&self, hashes: &[ItemHash], mark: u64, found: &mut [u64]) {
        each_kind!(self, k => k.contains_bits(hashes, mark, found))
    }

    /// Validates a header of any kind completely, then allocates the zeroed
    /// filter it describes (see [`BloomChain::from_header`]).
    pub fn from_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        if bytes.starts_with(&WINDOW_MAGIC) {
            return Window::from_header(bytes, limits).map(Self::from);
        }
        BloomChain::from_header(bytes, limits).map(Self::Chain)
    }

    /// [`from_header`](Self::from_header) for ferrobloom's own headers only
    /// (RDB payloads record which format their header has).
    pub fn from_native_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        if bytes.starts_with(&WINDOW_MAGIC) {
            return Window::from_header(bytes, limits).map(Self::from);
        }
        BloomChain::from_native_header(bytes, limits).map(Self::Chain)
    }

    /// [`from_header`](Self::from_header) for RedisBloom's header only.
    pub fn from_rb_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        BloomChain::from_rb_header(bytes, limits).map(Self::Chain)
    }

    /// The byte lengths of the links a header describes (`redisbloom`: which
    /// format it must be, `None` for either), checked completely without
    /// allocating them.
    pub fn header_link_bytes(
        bytes: &[u8],
        limits: &Limits,
        redisbloom: Option<bool>,
    ) -> Result<Vec<u64>, BloomError> {
        if redisbloom != Some(true) && bytes.starts_with(&WINDOW_MAGIC) {
            return Window::header_link_bytes(bytes, limits);
        }
        BloomChain::header_link_bytes(bytes, limits, redisbloom)
    }

    /// SCANDUMP data for a position iterator `iter >= 1` (see
    /// [`BloomChain::scandump_chunk`]).
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        each_kind!(self, k => k.position_chunk(iter))
    }

    /// SCANDUMP data for `iter >= 1` on a live filter: a chain's chunk at a
    /// RedisBloom iterator ([`BloomChain::scandump_chunk`]), a window's at 1 or
    /// a walk iterator ([`Window::walk_chunk`]; other position iterators are
    /// refused there: they shift when a generation is dropped). `Ok(None)`
    /// past the end.
    pub fn scandump_walk(&self, iter: i64) -> Result<Option<(i64, &[u8])>, BloomError> {
        each_kind!(self, k => k.live_chunk(iter))
    }

    /// Visits every SCANDUMP data chunk in order.
    pub fn for_each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        each_kind!(self, k => k.each_chunk(f))
    }

    /// Fills the filter from chunks in SCANDUMP order.
    pub fn fill_chunks<E>(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        each_kind!(self, k => k.fill(read))
    }

    /// LOADCHUNK data (see [`BloomChain::load_chunk`]).
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        each_kind!(self, k => k.load_at(iter, data))
    }

    /// Why the filter can never be merged, whatever the others are (`None`: it
    /// can).
    fn unmergeable(&self) -> Option<&'static str> {
        each_kind!(self, k => k.unmergeable())
    }

    /// The chains of a merge's inputs (sources in order, then the destination).
    /// An input of a kind no merge takes is refused where the chain checks would
    /// reach it: the inputs before it are checked first, as
    /// [`BloomChain::merge_plan`] checks them.
    fn merge_chains<'a>(
        dest: Option<&'a BloomFilter>,
        sources: &[&'a BloomFilter],
    ) -> Result<(Option<&'a BloomChain>, Vec<&'a BloomChain>), MergeError> {
        let mut chains = Vec::new();
        chains
            .try_reserve_exact(sources.len())
            .map_err(|_| BloomError::AllocFailed)?;
        let inputs = sources
            .iter()
            .enumerate()
            .map(|(i, f)| (Some(i), *f))
            .chain(dest.map(|d| (None, d)));
        for (input, f) in inputs {
            let (Some(c), None) = (f.as_chain(), f.unmergeable()) else {
                if !chains.is_empty() {
                    BloomChain::merge_plan(None, &chains)?;
                }
                let why = f.unmergeable().unwrap_or("a filter of another kind");
                return Err(MergeError::Unmergeable { input, why });
            };
            if input.is_some() {
                chains.push(c);
            }
        }
        Ok((dest.and_then(BloomFilter::as_chain), chains))
    }

    /// [`BloomChain::merge_plan`] over filters of any kind.
    pub fn merge_plan(
        dest: Option<&BloomFilter>,
        sources: &[&BloomFilter],
    ) -> Result<MergePlan, MergeError> {
        let (d, s) = Self::merge_chains(dest, sources)?;
        BloomChain::merge_plan(d, &s)
    }

    /// [`BloomChain::merge_from`]: ORs the sources into this filter; an
    /// overfilled union is refused ([`Overfill::Refuse`]).
    pub fn merge_from(
        &mut self,
        sources: &[&BloomFilter],
        limits: &Limits,
    ) -> Result<(), MergeError> {
        self.merge_from_with(sources, limits, Overfill::Refuse)
    }

    /// [`BloomChain::merge_from_with`]: [`merge_from`](Self::merge_from) with
    /// a choice for overfilled unions.
    pub fn merge_from_with(
        &mut self,
        sources: &[&BloomFilter],
        limits: &Limits,
        overfill: Overfill,
    ) -> Result<(), MergeError> {
        let (_, s) = Self::merge_chains(None, sources)?;
        if let Some(why) = self.unmergeable() {
            return Err(MergeError::Unmergeable { input: None, why });
        }
        match self.as_chain_mut() {
            Some(c) => c.merge_from_with(&s, limits, overfill),
            None => Err(BloomError::InvalidParams("not a chain").into()),
        }
    }

    /// [`BloomChain::merged`]: a new filter holding the union of the sources;
    /// an overfilled union is refused ([`Overfill::Refuse`]).
    pub fn merged(sources: &[&BloomFilter], limits: &Limits) -> Result<BloomFilter, MergeError> {
        Self::merged_with(sources, limits, Overfill::Refuse)
    }

    /// [`BloomChain::merged_with`]: [`merged`](Self::merged) with a choice for
    /// overfilled unions.
    pub fn merged_with(
        sources: &[&BloomFilter],
        limits: &Limits,
        overfill: Overfill,
    ) -> Result<BloomFilter, MergeError> {
        let (_, s) = Self::merge_chains(None, sources)?;
        BloomChain::merged_with(&s, limits, overfill).map(BloomFilter::Chain)
    }
}

/// Reports the box a large kind is kept in (its address, size and alignment).
fn boxed_block<T>(b: &T, f: &mut dyn FnMut(*const u8, usize, usize)) {
    f(
        b as *const T as *const u8,
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    );
}
