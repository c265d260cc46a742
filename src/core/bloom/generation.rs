//! What windowed filters (`crate::core::window`) need of a chain: a generation
//! is an ordinary [`BloomChain`] whose links the window sizes itself, and a
//! windowed filter is a chain whose `window` holds the generations (its own
//! `links` stay empty, so every plain path sees no links and no items).

use super::*;
use crate::core::window::Window;

impl BloomChain {
    /// Wraps a windowed filter as the BLOOM type's value.
    pub fn windowed(w: Window) -> Self {
        BloomChain {
            links: Vec::new(),
            items: 0,
            expansion: 0,
            rb: None,
            opts: ChainOptions::default(),
            pending_shape: None,
            window: Some(Box::new(w)),
        }
    }

    /// The window of a windowed filter.
    #[inline]
    pub fn window(&self) -> Option<&Window> {
        self.window.as_deref()
    }

    #[inline]
    pub fn window_mut(&mut self) -> Option<&mut Window> {
        self.window.as_deref_mut()
    }

    /// Sub-filters in use: the links of a plain chain, every generation's
    /// links of a windowed one.
    pub fn link_count(&self) -> usize {
        match &self.window {
            Some(w) => w.link_count(),
            None => self.links.len(),
        }
    }

    /// Every link whose bytes SCANDUMP, RDB and AOF carry, in order: the chain's
    /// own, or each generation's (oldest first).
    pub(crate) fn data_links(&self) -> impl Iterator<Item = &Link> + '_ {
        let gens = self
            .window
            .iter()
            .flat_map(|w| w.generations().flat_map(|g| g.links.iter()));
        self.links.iter().chain(gens)
    }

    pub(crate) fn data_links_mut(&mut self) -> impl Iterator<Item = &mut Link> + '_ {
        let gens = self
            .window
            .iter_mut()
            .flat_map(|w| w.generations_mut().flat_map(|g| g.links.iter_mut()));
        self.links.iter_mut().chain(gens)
    }

    pub(super) fn from_window_header(bytes: &[u8], limits: &Limits) -> Result<Self, BloomError> {
        Window::from_header(bytes, limits).map(Self::windowed)
    }

    /// An empty generation (links are pushed by the window).
    pub(crate) fn generation(expansion: u32) -> Self {
        BloomChain {
            links: Vec::new(),
            items: 0,
            expansion,
            rb: None,
            opts: ChainOptions::default(),
            pending_shape: None,
            window: None,
        }
    }

    /// Adds a link of `shape` to a generation without checking limits (the
    /// window checks them over all of its generations first).
    pub(crate) fn push_generation_link(&mut self, shape: LinkShape) -> Result<(), BloomError> {
        self.links
            .try_reserve(1)
            .map_err(|_| BloomError::AllocFailed)?;
        self.links.push(Link::new(shape)?);
        Ok(())
    }

    /// Inserts into the newest link (the caller checked it has room).
    pub(crate) fn insert_last(&mut self, h: &ItemHash) -> Result<(), BloomError> {
        let items = self.items.checked_add(1).ok_or(BloomError::Full)?;
        match self.links.last_mut() {
            Some(last) => last.insert(h),
            None => return Err(BloomError::InvalidParams("generation has no links")),
        }
        self.items = items;
        Ok(())
    }

    /// Prefetches the first cache line an item's lookup reads in each link
    /// (a windowed filter asks up to five generations per item: prefetching
    /// every probe of each would cost more than it saves; a lookup of a
    /// never-added item stops after about two probes per link).
    #[inline]
    pub(crate) fn prefetch_head(&self, h: &ItemHash) {
        for l in &self.links {
            match l.shape.layout {
                BloomLayout::Classic => l.words.prefetch(fastrange(h.lo, l.shape.bits)),
                BloomLayout::Blocked => l.words.prefetch_line(l.block(h)),
                BloomLayout::RedisBloom => {}
            }
        }
    }

    /// `32 + 64·links + bytes` without the chain overhead: a generation's part
    /// of its window's `mem_usage`.
    pub(crate) fn links_mem(&self) -> u64 {
        self.links.iter().fold(0u64, |acc, l| {
            acc.saturating_add(LINK_OVERHEAD + l.shape.bytes())
        })
    }
}

/// The per-link overhead of `mem_usage` (RedisBloom's formula).
pub(crate) const GEN_LINK_OVERHEAD: u64 = LINK_OVERHEAD;
/// The per-filter overhead of `mem_usage` (RedisBloom's formula).
pub(crate) const GEN_CHAIN_OVERHEAD: u64 = CHAIN_OVERHEAD;
