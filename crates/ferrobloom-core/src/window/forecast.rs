//! Forecasts from a window's history: what the next generation may receive,
//! from the item counts of the last `K` generations (`counts[0]` the last
//! one's). Pure functions of the counts, which every replica and AOF replay
//! holds alike (see `sizing.rs`).

/// Over the capacity, a first link holds the trend plus this many standard
/// deviations of a Poisson count of it (`3·sqrt(n)`: 1.2% at 60,000 items,
/// 9% at 1,200): generations of the same size differ by a few items (an item
/// the generation already holds counts once), and a link one item short of a
/// steady stream opens a growth link.
pub(super) const TREND_SDS: f64 = 3.0;

/// [`TREND_SDS`] standard deviations of a Poisson count `n`, `3·sqrt(n)`.
pub(super) fn deviations(n: u64) -> u64 {
    ((n as f64).sqrt() * TREND_SDS).ceil() as u64
}

/// The trend of the last two generations' counts, `2·c1 - c2`, between half
/// and twice `c1`.
pub(super) fn trend(c1: u64, c2: u64) -> u64 {
    c1.saturating_mul(2)
        .saturating_sub(c2)
        .clamp(c1.div_ceil(2), c1.saturating_mul(2))
}

/// The busiest of the last `K` generations is a spike when it is above every
/// other by more than this part of the next busiest (`n/8`, at least
/// `3·sqrt(n)`; see [`spike_bound`]).
const SPIKE_PART: u64 = 8;

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
/// Batches of `capacity/22` once per `W/20` at a random time within the slot
/// put 4, 5 or 6 batches in a generation: its 4 whole slots plus the batches
/// of the two slots straddling its boundaries, each on either side. A sixth
/// (both straddling batches inside) leaves the next generation's first slot
/// without its batch: after a 6 come 5s until a 4. Sized for the busiest,
/// the five-batch generations after a sixth batch carried its entries unused
/// (18% of their links). A stream swinging with the window's period brings
/// next what the generation `K` back got, never the spike (counts mirror
/// half a period apart); a stream rising into a spike rose before it or dips
/// (more than `3·sqrt`) after it.
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

/// More than [`spike_bound`]'s spike part: `n/8`, at least `3·sqrt(n)`.
pub(super) fn spike_margin(n: u64) -> u64 {
    deviations(n).max(n / SPIKE_PART)
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
    /// (the last one's count alone sized the next one for the dip).
    Dip(u64),
    /// Only the stream's partial first generation before the last, and the
    /// last above a share by at most a tenth (at least `3·sqrt`): a share.
    Share,
}

/// A young stream within the capacity whose last generations stand out
/// (issue #27, seventh round). Batches at random times within their slots
/// put one or two more or fewer in a generation: a generation of six batches
/// of capacity/22 among fives (a young stream's counts `[54,514, 45,442,
/// 9,090 partial]`) sized the next one 55,215 for 36,359; one of fourteen
/// batches of capacity/52 after a partial first generation sized the next
/// one 54,524 for 42,301, and that dip sized the one after it 42,919 for
/// 49,981 (three links). A stream over the capacity, or rising by more than
/// a tenth of a share over a partial first generation (peaks of 1.3x: 56,088
/// after 2,681), or swinging ±30% (its first two full generations over two
/// shares) is not bounded.
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
