//! Shape plans: the links a write adds, recorded where it runs and given,
//! as data, to where it is replayed (a replica, an AOF replay).
//!
//! A new link's shape (bits, hash count, capacity, error rate, layout) comes
//! from sizing rules over floating-point functions (`ln`, `exp`, `powf`: the
//! C library's at run time, so results may differ between builds) and from
//! rules that change between releases (`window/sizing.rs`, `forecast.rs`,
//! `bloom/sizing.rs`). A replica that ran the rules again could build other
//! links than its primary. So a write that adds links carries their shapes
//! ([`encode_shapes`]: a ferrobloom header whose link records are the new
//! links), and the replay takes them instead of computing
//! ([`ShapePlan::replay`]). The plan is consulted only where a link is added,
//! never per item; with no plan the rules run as always.

use super::encoding::{HeaderRole, HEADER_FIXED, HEADER_MAGIC, HEADER_VERSION_BASE};
use super::*;

/// The most links one write may carry (a chain or a window holds at most
/// [`MAX_LINKS_CEILING`]).
pub const MAX_PLANNED_LINKS: usize = MAX_LINKS_CEILING as usize;

/// The links one write adds: given (replay) and/or recorded (every write).
#[derive(Clone, Debug, Default)]
pub struct ShapePlan {
    /// Shapes to take, in order, at the next new links (a replay).
    given: Vec<LinkShape>,
    /// How many of `given` were taken or passed over.
    next: usize,
    /// The shapes of the links the write added, in order.
    added: Vec<LinkShape>,
    /// A given shape did not fit where it was offered (computed instead).
    misfit: bool,
}

impl ShapePlan {
    /// A plan that gives nothing and records what the write adds (a primary).
    pub fn record() -> Self {
        Self::default()
    }

    /// A plan that gives `shapes` to the write's new links, in order.
    pub fn replay(shapes: Vec<LinkShape>) -> Self {
        ShapePlan {
            given: shapes,
            ..Self::default()
        }
    }

    /// The shapes of the links the write added, in order.
    pub fn added(&self) -> &[LinkShape] {
        &self.added
    }

    /// True when a given shape was not used: it did not fit where it was
    /// offered, or the write added fewer links than were given (the replay
    /// then computed, as without a plan).
    pub fn diverged(&self) -> bool {
        self.misfit || self.next < self.given.len()
    }

    /// The shape of the next new link: the next given one when `fits` accepts
    /// it, else `compute`'s. The given one is used up either way.
    pub(crate) fn next_shape(
        &mut self,
        fits: impl FnOnce(&LinkShape) -> bool,
        compute: impl FnOnce() -> Result<LinkShape, BloomError>,
    ) -> Result<LinkShape, BloomError> {
        if let Some(s) = self.given.get(self.next).copied() {
            self.next += 1;
            if fits(&s) {
                return Ok(s);
            }
            self.misfit = true;
        }
        compute()
    }

    /// Records a link the write added.
    pub(crate) fn note_added(&mut self, s: LinkShape) {
        if self.added.try_reserve(1).is_ok() {
            self.added.push(s);
        }
    }
}

/// Whether a link of `given`'s layout may follow one of `layout` in a chain
/// (the classic derivations are one family: the rule picks per link).
pub(crate) fn same_family(given: BloomLayout, layout: BloomLayout) -> bool {
    given == layout || (given.is_classic() && layout.is_classic())
}

/// Encodes shapes as a ferrobloom header (format version 1, `encode_header`)
/// with zero counters, expansion 1 and the shapes as its link records.
pub fn encode_shapes(shapes: &[LinkShape]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_FIXED + 40 * shapes.len());
    out.extend_from_slice(&HEADER_MAGIC);
    out.push(HEADER_VERSION_BASE);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(shapes.len() as u32).to_le_bytes());
    for s in shapes {
        encoding::write_link_record(&mut out, s, 0);
    }
    out
}

/// Decodes [`encode_shapes`]'s bytes, each link checked exactly as a loaded
/// windowed generation's link is (layout known and not RedisBloom's, bits,
/// hashes, capacity against bits, error rate in range); counters must be zero.
pub fn decode_shapes(bytes: &[u8]) -> Result<Vec<LinkShape>, BloomError> {
    const ANY: Limits = Limits {
        max_bytes: u64::MAX,
        max_links: MAX_LINKS_CEILING,
        max_filters: u32::MAX,
    };
    let (total, expansion, opts, links) =
        BloomChain::parse_native_header(bytes, &ANY, HeaderRole::Generation)?;
    if total != 0 || expansion != 1 || !opts.is_default() {
        return Err(BloomError::BadHeader("shapes with counters or options"));
    }
    Ok(links.into_iter().map(|(s, _)| s).collect())
}

impl BloomChain {
    /// Gives the next writes a plan (see the module doc); the caller takes it
    /// back with [`take_plan`](Self::take_plan) once the write is done.
    pub fn set_plan(&mut self, plan: ShapePlan) {
        self.plan = Some(Box::new(plan));
    }

    /// Takes back the plan [`set_plan`](Self::set_plan) gave.
    pub fn take_plan(&mut self) -> Option<ShapePlan> {
        self.plan.take().map(|b| *b)
    }

    /// The link that follows a full link of `(entries, error, layout)` under
    /// `plan`: its next given shape when it may follow in this chain (same
    /// layout family, at most the expansion times the full link, as a loaded
    /// header's links), else the computed one. A chain in RedisBloom's layout
    /// always computes (its links follow RedisBloom's own formula and header).
    pub(super) fn planned_shape(
        &self,
        plan: &mut ShapePlan,
        (entries, error, layout): (u64, f64, BloomLayout),
    ) -> Result<LinkShape, BloomError> {
        let compute = || match self.pending_shape {
            Some(shape) => Ok(shape),
            None => self.next_shape(entries, error, layout),
        };
        if self.rb.is_some() {
            return compute();
        }
        let growth = u64::from(self.expansion);
        plan.next_shape(
            |s| {
                growth != 0
                    && same_family(s.layout, layout)
                    && s.entries <= entries.saturating_mul(growth)
            },
            compute,
        )
    }
}

/// The sizing rules' result as this build applies it: unchanged, except in
/// builds with the test-only `sizing-variant` feature, whose rules give every
/// computed growth link and windowed link one more 512-bit block (a release
/// with other sizing rules, for the mixed-version replication tests).
#[inline]
pub(crate) fn variant(shape: LinkShape) -> LinkShape {
    #[cfg(feature = "sizing-variant")]
    {
        let mut shape = shape;
        if shape.layout != BloomLayout::RedisBloom && shape.n2 == 0 {
            shape.bits += 512;
            shape.storage = shape.bits / 8;
        }
        shape
    }
    #[cfg(not(feature = "sizing-variant"))]
    shape
}

impl BloomChain {
    /// Replaces the first link of a chain just created (one empty link) with
    /// `shape`, the first link its primary created (a replicated BF.RESERVE's
    /// `SHAPES`), when it fits as a loaded header's first link would: the
    /// same layout family, at most BF.RESERVE's capacity bound, within the
    /// limits. False (the chain unchanged) when it does not.
    pub fn adopt_first_link(&mut self, shape: LinkShape, limits: &Limits) -> bool {
        let first = match &self.links[..] {
            [l] if self.items == 0 && self.rb.is_none() => *l.shape(),
            _ => return false,
        };
        if shape == first {
            return true;
        }
        if !same_family(shape.layout, first.layout) || shape.entries > MAX_CAPACITY {
            return false;
        }
        let old = std::mem::take(&mut self.links);
        if self.push_link(shape, limits).is_err() {
            self.links = old;
            return false;
        }
        true
    }
}
