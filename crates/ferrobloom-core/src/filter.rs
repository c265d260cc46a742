//! A Bloom filter of any kind: the value a BLOOM key holds, a local filter, a
//! file's content. Each kind is a room of its own that this type dispatches to:
//!
//! - [`BloomChain`] (`bloom/`): a scalable or non-scaling chain of links, in
//!   ferrobloom's layouts or RedisBloom's (a filter migrated from RedisBloom);
//! - [`Window`] (`window/`): a windowed filter (`WINDOW seconds`), generations of
//!   chains that it sizes and drops itself.
//!
//! The kinds are told apart by their header's magic (`FBbf` and RedisBloom's
//! header for a chain, `FBbw` for a window), here and nowhere else. A new kind
//! gets a variant, a magic, and an arm in each `match` below (docs/design.md,
//! "A new filter kind").

use crate::bloom::{BloomChain, BloomError, Limits, MergeError, MergePlan, Overfill};
use crate::hash::{HashScheme, ItemHash};
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
            BloomFilter::Window(_) => None,
        }
    }

    /// The chain, mutably, unless the filter is of another kind.
    pub fn as_chain_mut(&mut self) -> Option<&mut BloomChain> {
        match self {
            BloomFilter::Chain(c) => Some(c),
            BloomFilter::Window(_) => None,
        }
    }

    /// The window of a windowed filter.
    pub fn as_window(&self) -> Option<&Window> {
        match self {
            BloomFilter::Window(w) => Some(w),
            BloomFilter::Chain(_) => None,
        }
    }

    /// The window of a windowed filter, mutably.
    pub fn as_window_mut(&mut self) -> Option<&mut Window> {
        match self {
            BloomFilter::Window(w) => Some(w),
            BloomFilter::Chain(_) => None,
        }
    }

    /// How this filter hashes items.
    pub fn scheme(&self) -> HashScheme {
        match self {
            BloomFilter::Chain(c) => c.scheme(),
            BloomFilter::Window(w) => w.scheme(),
        }
    }

    /// The item's hash under this filter's scheme.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        self.scheme().bloom(item)
    }

    /// Whether the filter came from RedisBloom (and keeps its formats).
    pub fn is_redisbloom(&self) -> bool {
        self.as_chain().is_some_and(BloomChain::is_redisbloom)
    }

    /// Item capacity: a chain's links' sum, a window's items per window.
    pub fn capacity(&self) -> u64 {
        match self {
            BloomFilter::Chain(c) => c.capacity(),
            BloomFilter::Window(w) => w.capacity(),
        }
    }

    /// Items accepted as new (a window: in the generations it holds).
    pub fn items(&self) -> u64 {
        match self {
            BloomFilter::Chain(c) => c.items(),
            BloomFilter::Window(w) => w.items(),
        }
    }

    /// The growth factor; `None` for non-scaling filters.
    pub fn expansion(&self) -> Option<u32> {
        match self {
            BloomFilter::Chain(c) => c.expansion(),
            BloomFilter::Window(w) => w.expansion(),
        }
    }

    /// The error rate the filter was created with.
    pub fn error_rate(&self) -> f64 {
        match self {
            BloomFilter::Chain(c) => c.error_rate(),
            BloomFilter::Window(w) => w.error(),
        }
    }

    /// Links in use (a window: over all its generations).
    pub fn link_count(&self) -> usize {
        match self {
            BloomFilter::Chain(c) => c.link_count(),
            BloomFilter::Window(w) => w.link_count(),
        }
    }

    /// Memory estimate in bytes: RedisBloom's formula `32 + 64 * links + bytes`
    /// (BF.INFO `Size`, MEMORY USAGE, and the quantity the memory cap bounds).
    pub fn mem_usage(&self) -> u64 {
        match self {
            BloomFilter::Chain(c) => c.mem_usage(),
            BloomFilter::Window(w) => w.mem_usage(),
        }
    }

    /// Every heap block the filter owns besides itself (address, requested
    /// size, alignment).
    pub fn heap_blocks(&self, f: &mut dyn FnMut(*const u8, usize, usize)) {
        match self {
            BloomFilter::Chain(c) => c.heap_blocks(f),
            BloomFilter::Window(w) => {
                let w: &Window = w;
                f(
                    w as *const Window as *const u8,
                    std::mem::size_of::<Window>(),
                    std::mem::align_of::<Window>(),
                );
                w.heap_blocks(f)
            }
        }
    }

    /// Block numbers [`relocate_blocks`](Self::relocate_blocks) takes: about the
    /// allocations the value owns besides itself.
    pub fn block_count(&self) -> u64 {
        match self {
            BloomFilter::Chain(c) => c.block_count(),
            BloomFilter::Window(w) => 1 + w.block_count(),
        }
    }

    /// Offers every heap block the value owns besides itself to a relocation
    /// pass (active defragmentation, `crate::relocate`): the same blocks as
    /// [`heap_blocks`](Self::heap_blocks), in a fixed order.
    pub fn relocate_blocks(&mut self, pass: &mut Pass) {
        match self {
            BloomFilter::Chain(c) => c.relocate_blocks(pass),
            BloomFilter::Window(w) => {
                pass.boxed(w);
                w.relocate_blocks(pass)
            }
        }
    }

    /// A fallible deep copy (for COPY).
    pub fn try_clone(&self) -> Result<Self, BloomError> {
        Ok(match self {
            BloomFilter::Chain(c) => BloomFilter::Chain(c.try_clone()?),
            BloomFilter::Window(w) => BloomFilter::from(w.try_clone()?),
        })
    }

    /// The SCANDUMP header: the kind's own format (`FBbf`, RedisBloom's, `FBbw`).
    pub fn encode_header(&self) -> Vec<u8> {
        match self {
            BloomFilter::Chain(c) => c.encode_header(),
            BloomFilter::Window(w) => w.encode_header(),
        }
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

    /// SCANDUMP data for iterator `iter >= 1` (see [`BloomChain::scandump_chunk`]).
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        match self {
            BloomFilter::Chain(c) => c.scandump_chunk(iter),
            BloomFilter::Window(w) => w.scandump_chunk(iter),
        }
    }

    /// SCANDUMP data for `iter >= 1` on a live filter: a chain's chunk at a
    /// RedisBloom iterator ([`BloomChain::scandump_chunk`]), a window's at 1 or
    /// a walk iterator ([`Window::walk_chunk`]; other position iterators are
    /// refused there: they shift when a generation is dropped). `Ok(None)`
    /// past the end.
    pub fn scandump_walk(&self, iter: i64) -> Result<Option<(i64, &[u8])>, BloomError> {
        match self {
            BloomFilter::Chain(c) => Ok(c.scandump_chunk(iter)),
            BloomFilter::Window(w) => w.walk_chunk(iter),
        }
    }

    /// Visits every SCANDUMP data chunk in order.
    pub fn for_each_chunk(&self, f: impl FnMut(i64, &[u8])) {
        match self {
            BloomFilter::Chain(c) => c.for_each_chunk(f),
            BloomFilter::Window(w) => w.for_each_chunk(f),
        }
    }

    /// Fills the filter from chunks in SCANDUMP order.
    pub fn fill_chunks<E>(
        &mut self,
        read: impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            BloomFilter::Chain(c) => c.fill_chunks(read),
            BloomFilter::Window(w) => w.fill_chunks(read),
        }
    }

    /// LOADCHUNK data (see [`BloomChain::load_chunk`]).
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), BloomError> {
        match self {
            BloomFilter::Chain(c) => c.load_chunk(iter, data),
            BloomFilter::Window(w) => w.load_chunk(iter, data),
        }
    }

    /// Why the filter can never be merged, whatever the others are (`None`: it
    /// can). One line per kind BF.MERGE refuses.
    fn unmergeable(&self) -> Option<&'static str> {
        match self {
            BloomFilter::Chain(_) => None,
            // Generations of different filters start at different times: no
            // link-by-link union keeps every item's lifetime (docs/windowed.md).
            BloomFilter::Window(_) => Some("a windowed filter"),
        }
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
        match self {
            BloomFilter::Chain(c) => c.merge_from_with(&s, limits, overfill),
            BloomFilter::Window(_) => Err(BloomError::InvalidParams("not a chain").into()),
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
