//! How many items a new generation's first link is sized for, from the item
//! counts of the last `K` generations (`counts[0]` the last one's, 0 for a
//! generation not held): the stream's [`Regime`] ([`History::regime`]), then
//! that regime's bound ([`History::first_link_items`]). Pure functions of the
//! counts, which every replica and AOF replay holds alike (see `sizing.rs`).
//! Why each rule and value: docs/windowed.md, "Sizing".

/// A first link's headroom over a count: 5%. Above 3,600 items three
/// standard deviations of a Poisson count ([`TREND_SDS`]) are less, and a
/// stream with a window of history takes the lesser ([`settled`]); 5% is
/// their value at 3,600 items, so it caps a sparse stream's headroom.
const HEADROOM: f64 = 1.05;

/// Standard deviations of a Poisson count `n` a forecast allows for
/// (`3·sqrt(n)`: 1.2% at 60,000 items, 9% at 1,200): a one-sided 3-sigma
/// bound, so a steady stream's next count exceeds it about once in 740
/// generations (a link one item short opens a growth link).
pub(super) const TREND_SDS: f64 = 3.0;

/// A count stands out (a spike, a dip, a fall) when it differs from the one
/// it is compared with by more than this part of it (`n/8`, at least
/// `3·sqrt(n)`: [`spike_margin`]). Batches of a 22nd of the capacity every
/// `W/20` put 4, 5 or 6 batches in a generation: a sixth batch is 20% over
/// five, above an eighth; measured against `3·sqrt(n)` alone in
/// docs/windowed.md, "Why these values".
const SPIKE_PART: u64 = 8;

/// A young stream's only generation held, holding at least this part of a
/// share (781 items at a share of 50,000), may be the partial first
/// generation of a stream at the capacity: the next one gets at least a
/// share. A sparser key's next generation stays at twice it, so a sparse key
/// holds one share, not two, in its first window (measured against 8, 16 and
/// 32 in docs/windowed.md, "Why these values").
const PARTIAL_FIRST: u64 = 64;

/// [`TREND_SDS`] standard deviations of a Poisson count `n`, `3·sqrt(n)`.
pub(super) fn deviations(n: u64) -> u64 {
    ((n as f64).sqrt() * TREND_SDS).ceil() as u64
}

/// `n` with the [`HEADROOM`].
fn grow(n: u64) -> u64 {
    ((n as f64) * HEADROOM).ceil() as u64
}

/// `n` plus the lesser of the [`HEADROOM`] and three standard deviations.
fn settled(n: u64) -> u64 {
    grow(n).min(n.saturating_add(deviations(n)))
}

/// The trend of the last two generations' counts, `2·c1 - c2`, between half
/// and twice `c1`.
pub(super) fn trend(c1: u64, c2: u64) -> u64 {
    c1.saturating_mul(2)
        .saturating_sub(c2)
        .clamp(c1.div_ceil(2), c1.saturating_mul(2))
}

/// More than [`SPIKE_PART`]: `n/8`, at least `3·sqrt(n)`.
pub(super) fn spike_margin(n: u64) -> u64 {
    deviations(n).max(n / SPIKE_PART)
}

/// What the last `K` generations' counts say about the stream, in the order
/// [`History::regime`] tells them apart. A stream with *less than a window of
/// history* (young) is one whose generation `cur - K` is not held or empty:
/// a new key, or one back from a pause, whose oldest generation held may have
/// started late in its span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Regime {
    /// No item in the last `K` generations.
    Fresh,
    /// More than the capacity in the last `K` generations.
    Above,
    /// Young, within the capacity so far, but the generations held average
    /// more than a share: going over the capacity (1,200 a generation into
    /// 4,000 a window), so the room the others leave is no bound on it.
    YoungAbove,
    /// Young, the generations held averaging at most a share, with what its
    /// last counts say ([`young_bounds`]).
    Young(Option<YoungBound>),
    /// A window of history within the capacity, each generation busier than
    /// the one before by more than `3·sqrt` of it, by at least a 16th of the
    /// capacity in all: leaving the capacity, so the room is no bound on it.
    Rising,
    /// A window of history within the capacity with a lone spike
    /// ([`spike_bound`]): the busiest of the other generations.
    Spiking(u64),
    /// A window of history within the capacity.
    Settled,
}

impl Regime {
    /// Whether the stream keeps to the capacity, so that its next generation
    /// cannot hold more than the room the last `K - 1` leave in a window.
    pub(super) fn keeps_to_capacity(self) -> bool {
        matches!(
            self,
            Regime::Young(_) | Regime::Spiking(_) | Regime::Settled
        )
    }
}

/// The last `K` generations' counts, newest first, and the figures every
/// regime's bound reads.
pub(super) struct History<'a> {
    counts: &'a [u64],
    capacity: u64,
    /// `K`.
    parts: u64,
    /// A share of the capacity, `capacity / K` rounded up (at least 1).
    share: u64,
    /// Items of the last `K` generations (saturating).
    total: u64,
    /// The busiest of them.
    most: u64,
}

impl<'a> History<'a> {
    /// The history `counts` (newest first, `K` of them) of a filter of
    /// `capacity` items per window of `parts` generations.
    pub(super) fn new(counts: &'a [u64], capacity: u64, parts: u32) -> Self {
        let parts = u64::from(parts.max(1));
        History {
            counts,
            capacity,
            parts,
            share: capacity.div_ceil(parts).max(1),
            total: counts.iter().fold(0u64, |a, &c| a.saturating_add(c)),
            most: counts.iter().copied().max().unwrap_or(0),
        }
    }

    /// The stream's regime (see [`Regime`], whose variants are checked in order).
    pub(super) fn regime(&self) -> Regime {
        if self.total == 0 {
            Regime::Fresh
        } else if self.total > self.capacity {
            Regime::Above
        } else if self.young() {
            if self.above_share() {
                Regime::YoungAbove
            } else {
                Regime::Young(young_bounds(self.counts, self.share))
            }
        } else if self.rising() {
            Regime::Rising
        } else if let Some(others) = spike_bound(self.counts) {
            Regime::Spiking(others)
        } else {
            Regime::Settled
        }
    }

    /// The items of the next generation's first link in `regime` (this
    /// history's [`History::regime`]): the regime's bound, then, for a stream
    /// that keeps to the capacity, at most the room (at least half a share).
    pub(super) fn first_link_items(&self, regime: Regime) -> u64 {
        let items = match regime {
            Regime::Fresh => self.share,
            Regime::Above => self.above(),
            Regime::YoungAbove => self.young_above(),
            Regime::Young(bound) => self.young_items(bound),
            Regime::Rising => settled(self.most),
            Regime::Spiking(others) => settled(self.most).min(grow(others)),
            Regime::Settled => settled(self.most),
        };
        if regime.keeps_to_capacity() {
            items.min(self.room().max(self.share.div_ceil(2)))
        } else {
            items
        }
    }

    /// The count of the generation `i + 1` before the new one (0 if not held).
    fn count(&self, i: usize) -> u64 {
        self.counts.get(i).copied().unwrap_or(0)
    }

    /// Generation `cur - K` is not held or empty.
    fn young(&self) -> bool {
        self.counts.last().is_none_or(|&c| c == 0)
    }

    /// Generations held that hold items.
    fn held(&self) -> usize {
        self.counts.iter().filter(|&&c| c > 0).count()
    }

    /// The generations held average more than a share.
    fn above_share(&self) -> bool {
        let held = self.held() as u128;
        u128::from(self.total) * u128::from(self.parts) > u128::from(self.capacity) * held
    }

    /// What a stream within the capacity can still put in a window with the
    /// last `K - 1` generations: the capacity less their items (exact: no
    /// headroom).
    fn room(&self) -> u64 {
        let oldest = self.counts.last().copied().unwrap_or(0);
        self.capacity
            .saturating_sub(self.total.saturating_sub(oldest))
    }

    /// Every generation busier than the one before by more than `3·sqrt` of
    /// it, and the last above the oldest by at least a quarter of a share.
    /// Steady generations a few items apart, and a partial first one, are no
    /// rise.
    fn rising(&self) -> bool {
        self.counts.windows(2).all(|w| match (w.first(), w.get(1)) {
            (Some(&a), Some(&b)) => a > b.saturating_add(deviations(b)),
            _ => false,
        }) && self
            .counts
            .first()
            .zip(self.counts.last())
            .is_some_and(|(&c1, &ck)| c1.saturating_sub(ck) >= (self.share / 4).max(1))
    }

    /// [`Regime::Above`]: the trend of the last two counts plus three
    /// standard deviations of it; the busiest with the headroom when the last
    /// generation is not held.
    fn above(&self) -> u64 {
        let c1 = self.count(0);
        let c2 = self.counts.get(1).copied().unwrap_or(c1);
        if c1 == 0 {
            grow(self.most)
        } else {
            let t = trend(c1, c2);
            t.saturating_add(deviations(t))
        }
    }

    /// [`Regime::YoungAbove`]: the busiest, but when the last two generations
    /// hold items no more than their trend or the room, whichever is more
    /// (a swing's peak generation, followed by lower ones), each settled.
    fn young_above(&self) -> u64 {
        let (c1, c2) = (self.count(0), self.count(1));
        if c1 > 0 && c2 > 0 {
            settled(self.most).min(settled(trend(c1, c2).max(self.room())))
        } else {
            settled(self.most)
        }
    }

    /// [`Regime::Young`]: twice the busiest, at most a share (a sparse stream
    /// stays small) but at least the busiest, with the headroom (at least a
    /// share after a partial first generation, see [`PARTIAL_FIRST`]), and
    /// once the last two generations hold items at most the last one's
    /// count, settled. Then what the last counts say: after a dip below a
    /// share, the mean of the dip and the one before it; after a fall of more
    /// than the spike part from two generations above two shares, the trend
    /// (at least half a share); after a spike, the one before it (at least a
    /// share); after a partial first generation, a share for a last one just
    /// above it.
    fn young_items(&self, bound: Option<YoungBound>) -> u64 {
        let (c1, c2) = (self.count(0), self.count(1));
        let twice = grow(self.most.saturating_mul(2).min(self.share).max(self.most));
        let twice = if self.held() == 1 && self.most.saturating_mul(PARTIAL_FIRST) >= self.share {
            twice.max(self.share)
        } else {
            twice
        };
        let items = if c1 > 0 && c2 > 0 {
            let last = match bound {
                Some(YoungBound::Dip(mean)) => grow(mean).max(settled(c1)),
                _ => settled(c1),
            };
            let fell = c1.saturating_add(c2) > self.share.saturating_mul(2)
                && c2 > c1.saturating_add(spike_margin(c2));
            let last = if fell {
                last.min(settled(trend(c1, c2)).max(self.share.div_ceil(2)))
            } else {
                last
            };
            twice.min(last)
        } else {
            twice
        };
        match bound {
            Some(YoungBound::Spike(before)) => items.min(grow(before).max(self.share)),
            Some(YoungBound::Share) => items.min(self.share),
            _ => items,
        }
    }
}

/// What comes next after a lone spike among the last `K` generations, from
/// their counts (`counts[0]` the last generation's): the busiest of the
/// others, when
///
/// - the last generation is the spike and the one before it did not rise
///   over the one before that (by more than `3·sqrt`), or
/// - the spike was the generation before the last or the one before that,
///   and every generation since came within `3·sqrt` of the busiest of the
///   others (back to the stream's level, not below it);
///
/// and when the last generation and the one two before it are the busiest
/// (within `3·sqrt` of each other) and the two others are below both by the
/// spike part, the older of those above the newer by it: the older one.
///
/// Batches at random times within slots of `W/20` put 4, 5 or 6 batches in a
/// generation: its 4 whole slots plus the batches of the two slots
/// straddling its boundaries. A sixth (both straddling batches inside)
/// leaves the next generation's first slot without its batch: after a 6 come
/// 5s until a 4, so the busiest would size generations for a batch they do
/// not get. A stream swinging with the window's period brings next what the
/// generation `K` back got, never the spike (counts mirror half a period
/// apart); a stream rising into a spike rose before it or dips (more than
/// `3·sqrt`) after it.
pub(super) fn spike_bound(counts: &[u64]) -> Option<u64> {
    let (j, &top) = counts
        .iter()
        .enumerate()
        .max_by_key(|&(i, &c)| (c, std::cmp::Reverse(i)))?;
    let second = counts
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != j)
        .map(|(_, &c)| c)
        .max()?;
    let (c1, c2, c3) = (*counts.first()?, *counts.get(1)?, *counts.get(2)?);
    if second > 0 && top > second.saturating_add(spike_margin(second)) {
        let since = counts.get(..j)?;
        let calm = j == 0 && c2 <= c3.saturating_add(deviations(c3));
        let level = (1..=2).contains(&j)
            && since
                .iter()
                .all(|&c| c.saturating_add(deviations(second)) >= second);
        return (calm || level).then_some(second);
    }
    // Alternating: the last and the one two before the busiest, the two
    // between and before them below by the spike part, the older above the
    // newer by it.
    let c4 = *counts.get(3)?;
    let near = |a: u64, b: u64| a.saturating_add(deviations(a)) >= b;
    let low = c2.max(c4);
    let alternating = near(c1, top)
        && near(c1, c3)
        && near(c3, c1)
        && c4 > c2.saturating_add(spike_margin(c2))
        && low.saturating_add(spike_margin(low)) < c1.min(c3);
    (alternating && low > 0).then_some(low)
}

/// What bounds a young generation (less than a window of history) whose last
/// counts stand out, from the counts of the last `K` ([`young_bounds`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum YoungBound {
    /// The last generation above the one before it by the spike part, both
    /// full (the one before them holds items) and within two shares
    /// together: the one before it (with the headroom), at least a share.
    Spike(u64),
    /// The last generation below a share by the spike part and the one
    /// before it above a share, both full and within two shares: their mean
    /// (the last one's count alone would size the next one for the dip).
    Dip(u64),
    /// Only the stream's partial first generation before the last, and the
    /// last above a share by at most a tenth (at least `3·sqrt`): a share.
    Share,
}

/// A young stream within the capacity whose last generations stand out.
/// Batches at random times within their slots put one or two more or fewer
/// in a generation: a generation of six batches of capacity/22 among fives
/// (a young stream's counts `[54,514, 45,442, 9,090 partial]`) would size
/// the next one 55,215 for 36,359; one of fourteen batches of capacity/52
/// after a partial first generation 54,524 for 42,301, and that dip the one
/// after it 42,919 for 49,981. A stream over the capacity, or rising by more
/// than a tenth of a share over a partial first generation (peaks of 1.3x:
/// 56,088 after 2,681), or swinging ±30% (its first two full generations over
/// two shares) is not bounded.
pub(super) fn young_bounds(counts: &[u64], share: u64) -> Option<YoungBound> {
    let (c1, c2, c3) = (*counts.first()?, *counts.get(1)?, *counts.get(2)?);
    if c1 == 0 || c2 == 0 {
        return None;
    }
    if c3 == 0 {
        let near = share.saturating_add(deviations(share).max(share / 10));
        return (c1 > share && c1 <= near).then_some(YoungBound::Share);
    }
    if c1.saturating_add(c2) > share.saturating_mul(2) {
        return None;
    }
    if c1 > c2.saturating_add(spike_margin(c2)) {
        Some(YoungBound::Spike(c2))
    } else if c2 > share && share > c1.saturating_add(spike_margin(c1)) {
        Some(YoungBound::Dip(c1.saturating_add(c2).div_ceil(2)))
    } else {
        None
    }
}
