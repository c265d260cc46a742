//! Generation sizing: how many items and what error rate each link of a
//! generation gets (the numbers and their costs are in the module doc of
//! `window/mod.rs` and in docs/windowed.md).
//!
//! Every decision is a pure function of the filter's own state (its
//! generations' link shapes and item counts) and of the write's time, which
//! replicas and AOF replays receive with every write (`AT`): a primary, its
//! replicas and a replay size every link alike. Nothing here is persisted: the
//! shapes a generation got are stored in its links, so old payloads load and
//! grow by these rules.

use super::forecast::{deviations, spike_bound, spike_margin, trend, young_bounds, YoungBound};
use super::Window;
use crate::bits::LINE_BITS;
use crate::bloom::{BloomError, BloomLayout, LinkShape};
use std::cell::{Cell, RefCell};

/// The live generations' rates, as [`link_fpr`] estimates them from the items
/// each link holds, sum to at most this part of the error rate: the estimate
/// is an expectation by the same model the links are sized with, and the
/// measured rate of a full steady window came to about 0.97 of the sum.
pub(super) const MARGIN: f64 = 0.97;
/// Blocked links measure above the Poisson model by up to 8.5% (0.1%, full
/// steady window, 2 million probes; classic and paired links within 2%): their
/// estimate is scaled by this.
const BLOCKED_MODEL: f64 = 1.1;
/// Part of the per-generation budget `B = p/(K+1)` each generation keeps for
/// the links it opens after its first (halved per link: `r/2`, `r/4`, ...).
pub(super) const RESERVE: f64 = 0.1;
/// The least error a generation is left, as a part of `B` (see
/// [`Window::limit`]).
const FLOOR: f64 = 0.4;
/// The part of what the older generations leave unused that a new one may
/// take (see [`Window::target`]).
const SLACK_SHARE: f64 = 0.25;
/// A first link's items: the most any of the last `K` generations received,
/// times this (with a full window of history, or above the capacity, at most
/// that count plus [`TREND_SDS`](super::forecast::TREND_SDS) standard deviations of it).
const HEADROOM: f64 = 1.05;
/// A growth link's items: the current generation's rate so far over the rest
/// of its span, times this (1.25 before: with growth links at the steady
/// error per item, a link too small for the rest costs one more small link,
/// and unused entries are paid for until the generation expires; the worst
/// phase from the start at 1%, batches of capacity/52 1.68x -> 1.65x,
/// swinging ±30% 1.73x -> 1.71x: docs/windowed.md).
const PROJECTION_HEADROOM: f64 = 1.1;
/// A generation's second, third and fourth links hold at least this part of
/// its first: a batch that arrives late in its generation projects almost no
/// rate, and links at least this big, the fifth on doubling, take any batch
/// in a few links.
const SECOND_LINK_PART: u64 = 16;
/// A young stream's only generation held, if it holds at least this part of
/// a share, may be the partial first generation of a stream at the capacity:
/// the next one gets at least a share (see `Window::first_link`). Below it
/// (a sparse key: 781 items at a share of 50,000) the next one stays at
/// twice it, so a sparse new key holds one share, not two, in its first
/// window.
const PARTIAL_FIRST: u64 = 64;
/// Error rates are rounded down to a grid of this many steps per halving
/// (1.1% apart), so that the few rates in use are sized once each.
const GRID_STEPS: f64 = 64.0;
/// Size of the cache of error rates sized for blocked and paired links.
const CACHE: usize = 16;
/// The item count a blocked or paired template is sized for: bits per item
/// exact to 5e-7, rounded up.
const TEMPLATE_ENTRIES: u64 = 1 << 30;

/// Bits per item and hash count of a blocked or paired link at an error rate
/// (its bisection costs 0.3-2 ms; a window sizes a few error rates once).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Template {
    error: f64,
    bits_per_item: f64,
    hashes: u32,
    bpe: f64,
}

/// Derived, never persisted: the error rates sized so far, and the last
/// [`Window::limit`] and [`Window::target`] (a generation at a memory limit is asked again for every
/// refused item, with the same older generations held: keyed by the
/// generation, how many are held and the oldest's index).
#[derive(Default)]
pub(super) struct SizeCache {
    templates: RefCell<Vec<Template>>,
    limit: Cell<Option<(LimitKey, (f64, f64))>>,
}

impl SizeCache {
    /// Offers the templates' block to a relocation pass (one block number).
    pub(super) fn relocate_blocks(&mut self, pass: &mut crate::relocate::Pass) {
        pass.vec(self.templates.get_mut());
    }
}

/// The generation, how many generations are held and the oldest's index.
type LimitKey = (u64, usize, u64);

/// The false-positive rate a link answers with the items it holds, by the
/// model its layout is sized with (`bloom/sizing.rs`): classic
/// `(1 - e^(-k·n/m))^k`; blocked, the average over 512-bit blocks holding
/// Poisson(`512·n/m`) items; paired, the product of two blocks' rates, each
/// block holding Poisson(`2·512·n/m`) groups of `k/2` probes. 0 when empty.
pub(super) fn link_fpr(l: &crate::bloom::Link) -> f64 {
    let n = l.items() as f64;
    let s = l.shape();
    if n == 0.0 || s.bits == 0 {
        return 0.0;
    }
    let (m, k) = (s.bits as f64, f64::from(s.hashes));
    let line = LINE_BITS as f64;
    // Blocks holding this many items on average are saturated (a full link's
    // hold 30-130): rate 1, without summing over a payload's arbitrary load.
    if 2.0 * line * n / m > 4096.0 {
        return 1.0;
    }
    let rate = match s.layout {
        BloomLayout::Blocked => BLOCKED_MODEL * block_moments(line * n / m, k, k, 0.0).0,
        BloomLayout::Paired => {
            let (a, b) = block_moments(
                2.0 * line * n / m,
                k / 2.0,
                f64::from(s.hashes.div_ceil(2)),
                f64::from(s.hashes / 2),
            );
            a * b
        }
        _ => (1.0 - (-k * n / m).exp()).powf(k),
    };
    rate.clamp(0.0, 1.0)
}

/// `(E[fill^j1], E[fill^j2])` over 512-bit blocks receiving Poisson(`lambda`)
/// groups of `per_group` probes, `fill = 1 - (1 - 1/512)^(per_group·groups)`.
fn block_moments(lambda: f64, per_group: f64, j1: f64, j2: f64) -> (f64, f64) {
    let ln_keep = (1.0 - 1.0 / LINE_BITS as f64).ln();
    let last = (lambda + 12.0 * lambda.sqrt() + 40.0).ceil();
    let (mut ln_p, mut a, mut b) = (-lambda, 0.0, 0.0);
    let mut g = 0.0;
    while g <= last {
        let fill = 1.0 - (ln_keep * per_group * g).exp();
        if fill > 0.0 {
            let lf = fill.ln();
            a += (ln_p + j1 * lf).exp();
            b += (ln_p + j2 * lf).exp();
        }
        g += 1.0;
        ln_p += (lambda / g).ln();
    }
    (a, b)
}

impl Window {
    /// What the live generations' rates may sum to: `p` less a margin of
    /// [`MARGIN`] for the model's error.
    fn union(&self) -> f64 {
        self.error * MARGIN
    }

    /// The per-generation budget `B = 0.97·p / (K + 1)`.
    fn budget(&self) -> f64 {
        self.union() / (f64::from(self.parts) + 1.0)
    }

    /// The error rate of a steady generation's first link, `(T - r)·B`
    /// (`0.98·B` at `K = 4`; the grid's base, and what creation checks the
    /// limits with).
    pub(super) fn steady_error(&self) -> f64 {
        (Self::steady_part(self.parts) - RESERVE) * self.budget()
    }

    /// `T` in parts of `B`: the part of the budget every generation's links
    /// may take when all fill their first link exactly: `K·(T - r) + T = K + 1`,
    /// so `T = (K + 1 + K·r)/(K + 1)` (1.08 at `K = 4`).
    fn steady_part(parts: u32) -> f64 {
        let k = f64::from(parts.max(1));
        (k + 1.0 + k * RESERVE) / (k + 1.0)
    }

    /// What a new generation's links may take together: `T(1)·B` plus a
    /// quarter of what the generations held before it left of their own
    /// `T(1)·B` (each answers with [`link_fpr`] of its links), at most the
    /// limit ([`Window::limit`]). Generations that got fewer items than their
    /// first link was sized for answer with less than its rate; a quarter of
    /// what they leave goes to each new one, so no generation takes all of it
    /// (bits go with `ln(1/error)`: even parts are the cheapest, and a part
    /// taken now is missing for `K` generations). Generations not held
    /// (a new filter, a pause) leave nothing: a new filter's first
    /// generations get `T(1)·B` like any other.
    fn target(&self, cur: u64) -> f64 {
        self.budgets(cur).1
    }

    /// The most error the links of generation `cur` may ever take together,
    /// from the generations held before it (live during it, never changed
    /// again). Each of their links counts the false-positive rate it answers
    /// with the items it holds ([`link_fpr`]): a generation that got fewer
    /// items than its links were sized for leaves the rest to the next ones.
    /// With `f = 0.4·B`, `est(g)` a generation's rate and `R = p - Σ est` over
    /// the older ones:
    ///
    /// `L = min(R, p - (K+1-j)·f - Σ est(cur-j+1 .. cur-1) for j = 1..=K)`
    ///
    /// - `L <= R`: the union of the live generations stays within `p` at every
    ///   moment (the newest one's links sum to at most `L`).
    /// - The `j` terms keep every run of `j` consecutive generations within
    ///   `p - (K+1-j)·f`, so by induction `L >= f` for every generation: one
    ///   that took much never leaves the next one starving.
    ///
    /// A generation's first link takes `T - r` of its target
    /// ([`Window::target`]; even parts are the cheapest: bits go with
    /// `ln(1/error)`, and uneven parts circulate: each generation inherits
    /// what the one `K + 1` before it left); its growth links half of what
    /// the limit leaves each.
    pub(super) fn limit(&self, cur: u64) -> f64 {
        self.budgets(cur).0
    }

    /// [`Window::limit`] and [`Window::target`] of generation `cur`, computed
    /// once while the same older generations are held.
    fn budgets(&self, cur: u64) -> (f64, f64) {
        let key = (
            cur,
            self.gens.len(),
            self.gens.first().map_or(0, |g| g.index),
        );
        if let Some((k, lt)) = self.shapes.limit.get() {
            if k == key {
                return lt;
            }
        }
        let b = self.budget();
        let f = FLOOR * b;
        let k = u64::from(self.parts.max(1));
        let ests: Vec<(u64, f64)> = self
            .gens
            .iter()
            .filter(|g| g.index < cur)
            .map(|g| (g.index, g.chain.links().iter().map(link_fpr).sum::<f64>()))
            .collect();
        let since = |from: u64| -> f64 {
            ests.iter()
                .filter(|(i, _)| *i >= from)
                .map(|(_, e)| e)
                .sum()
        };
        let p = self.union();
        let mut l = p - since(0);
        for j in 1..=k {
            let term = p - (k + 1 - j) as f64 * f - since(cur.saturating_sub(j - 1));
            l = l.min(term);
        }
        // The terms keep `l >= f` (a payload written by other rules may not).
        let l = l.max(f);
        let t = Self::steady_part(self.parts) * b;
        let slack: f64 = ests.iter().map(|(_, e)| (t - e).max(0.0)).sum();
        let lt = (l, (t + SLACK_SHARE * slack).min(l));
        self.shapes.limit.set(Some((key, lt)));
        lt
    }

    /// The first link of a new generation `cur` (the other generations held
    /// are the ones live during it).
    pub(super) fn first_link(&self, cur: u64) -> Result<LinkShape, BloomError> {
        let k = u64::from(self.parts.max(1));
        let share = self.capacity.div_ceil(k).max(1);
        let counts = self.history(cur);
        let total = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
        let grow = |n: u64| ((n as f64) * HEADROOM).ceil() as u64;
        // A full window of history (or a young stream above the capacity):
        // the busiest plus the lesser of 5% and `3·sqrt` of it (671 items at
        // 50,000: 1.3%; below 3,600 items 5% is the lesser). An oversized
        // first link answers with less than its rate and leaves the rest to
        // the next generations (`SLACK_SHARE`), so this saves less than the
        // headroom: batches of a 22nd of the capacity 1.72x -> 1.68x at 1%.
        let settled = |n: u64| grow(n).min(n.saturating_add(deviations(n)));
        let most = counts.iter().copied().max().unwrap_or(0);
        // Less than a window of history (generation cur-K not held or
        // empty: a new stream, or one back from a pause, whose oldest
        // generation may have started late): twice the busiest, at most a
        // share (a sparse stream stays small).
        let young = counts.last().is_none_or(|&c| c == 0);
        // A young stream whose generations held so far average more than a
        // share is over the capacity though its total is not (yet): the room
        // the others leave is no bound on this one (1,200 a generation into
        // 4,000 a window would leave the fourth 400, and a batch the rest
        // in growth links).
        let held = counts.iter().filter(|&&c| c > 0).count() as u128;
        let over = young && u128::from(total) * u128::from(k) > u128::from(self.capacity) * held;
        let entries = if total == 0 {
            // No history inside the window: a share of the capacity.
            share
        } else if total <= self.capacity {
            // The stream kept to the capacity: the busiest of the last K
            // generations with headroom, but no more than the room the last
            // K - 1 leave in a window (a stream that keeps to the capacity
            // cannot put more in this one: that bound is exact, no headroom),
            // and at least half a share: a stream that is going over the
            // capacity (its partial first generation counted as history) got
            // a first link of a 13th of what came and the rest in growth
            // links at a 15th of its error (peaks of 1.3x: 2.00x -> 1.96x
            // from the start; a quarter of a share before).
            let last = counts.last().copied().unwrap_or(0);
            let room = self.capacity - (total - last);
            // The last two generations' counts (a young stream's first
            // generation may be partial: both must hold items).
            let (c1, c2) = (
                counts.first().copied().unwrap_or(0),
                counts.get(1).copied().unwrap_or(0),
            );
            let recent = c1 > 0 && c2 > 0;
            let guess = if over {
                // Above a share on average, young: the busiest, but no more
                // than the trend or the room, whichever is more (a stream
                // swinging ±30% around 0.99x the capacity averages above a
                // share over its peak: sized by the busiest, its fourth
                // generation got 60,700 for 39,000 items; the worst phase
                // from the start at 1%, 1.79x -> 1.71x).
                let t = trend(c1, c2);
                if recent {
                    settled(most).min(settled(t.max(room)))
                } else {
                    settled(most)
                }
            } else if young {
                // No more than the last generation's count (with the
                // headroom of a settled one): the busiest of a young stream
                // that falls (±30% within the window) gave a generation
                // 64,000 for 38,000 items (the worst phase from the start
                // at 1%, 1.78x -> 1.71x).
                //
                // With a single generation held (the stream's first, which
                // began somewhere in its span: a pure function of the counts,
                // no time is stored) that holds at least a 64th of a share
                // (`PARTIAL_FIRST`), at least a share, as a generation
                // without history gets: twice a partial first generation
                // split the next one in two or three links whose errors go
                // with their items (swinging ±30%: 19,470 + 41,016 + 1,217
                // entries for 61,000 items; steady at the bench's phase:
                // 18,900 + 34,448 for 50,000, now one link of 50,000).
                // Issue #27's fourth round, from the start at the
                // worst of 30 phases (`--windows 3`, every 500 ms), 1% /
                // 0.1%: steady 1.540x -> 1.526x / 1.482x -> 1.468x, swinging
                // ±20% 1.530x -> 1.481x / 1.473x -> 1.428x, Poisson 1.489x ->
                // 1.467x / 1.435x -> 1.419x, batches of capacity/52 1.597x
                // -> 1.576x / 1.542x -> 1.534x; swinging ±30% and the rest
                // unchanged. A stream at half the capacity: the worst phase
                // unchanged (1.084x / 1.043x of the full capacity), 0.97x ->
                // 1.08x at the bench's phase (its second generation gets a
                // share for half of it).
                let g = grow(most.saturating_mul(2).min(share).max(most));
                let single = counts.iter().filter(|&&c| c > 0).count() == 1;
                let g = if single && most.saturating_mul(PARTIAL_FIRST) >= share {
                    g.max(share)
                } else {
                    g
                };
                if recent {
                    // A dip after a spike (see `young_bounds`): the mean of
                    // the two, with the headroom.
                    let last = match young_bounds(&counts, share) {
                        Some(YoungBound::Dip(mean)) => grow(mean).max(settled(c1)),
                        _ => settled(c1),
                    };
                    // A young stream that fell by more than the spike part
                    // (an eighth, at least `3·sqrt`) from a pair above two
                    // shares: its trend `2·c1 - c2` (with the headroom, at
                    // least half a share). Swinging ±30% from the start fell
                    // 62,699 -> 51,381 and got 36,263 in a link of 52,062
                    // (the bench at 11.5 s: from the start 1.708x -> 1.655x
                    // at 1%; settled, the worst of 30 phases, 1.587x ->
                    // 1.580x; issue #27, eighth round). Batches of
                    // capacity/22 never put more than two shares in two
                    // generations (6 + 5 batches), and capacity/52 fall by a
                    // 14th (14 -> 13 batches): both keep the last count.
                    let fell = c1.saturating_add(c2) > share.saturating_mul(2)
                        && c2 > c1.saturating_add(spike_margin(c2));
                    let last = if fell {
                        last.min(settled(trend(c1, c2)).max(share.div_ceil(2)))
                    } else {
                        last
                    };
                    g.min(last)
                } else {
                    g
                }
            } else {
                settled(most)
            };
            // A stream that rose through the last K generations (each busier
            // than the one before by more than `3·sqrt` of it, by at least a
            // quarter of a share in all) is leaving the capacity, not keeping
            // to it: the room is no bound on it, the busiest is (with its
            // headroom). Peaks of 1.3x (windows of 1.19x) got a rising
            // generation sized 3,915 by the room for 6,384 items, and its
            // growth link of 2,843 got 0.011% (capacity 20,000, 100 steps a
            // window, 1%: 2.018x -> 1.909x at the server test's start, the
            // worst of 15 phases 2.002x -> 1.921x). A stream swinging within
            // the window never rises through a whole window; one that does
            // and keeps to the capacity is sized by its busiest, as before
            // the room bound (the room held it exactly). Rises of a few
            // items (steady generations, a partial first one) do not count:
            // they cost batches of capacity/22 0.3% from the start.
            let rising = !young
                && counts.windows(2).all(|w| match (w.first(), w.get(1)) {
                    (Some(&a), Some(&b)) => a > b.saturating_add(deviations(b)),
                    _ => false,
                })
                && counts
                    .first()
                    .zip(counts.last())
                    .is_some_and(|(&c1, &ck)| c1.saturating_sub(ck) >= (share / 4).max(1));
            // A lone spike among the last K generations (see `spike_bound`):
            // the busiest of the others with the headroom (batches of
            // capacity/22, the worst of 8 phases settled at 1%: 1.650x ->
            // 1.572x; docs/windowed.md).
            let guess = match spike_bound(&counts) {
                Some(s) if !young && !over && !rising => guess.min(grow(s)),
                _ => guess,
            };
            // A young stream's spike over the one before it, or over a
            // share after a partial first generation (see `young_bounds`).
            let guess = match young_bounds(&counts, share) {
                Some(YoungBound::Spike(b)) if young && !over => guess.min(grow(b).max(share)),
                Some(YoungBound::Share) if young && !over => guess.min(share),
                _ => guess,
            };
            if over || rising {
                guess
            } else {
                guess.min(room.max(share.div_ceil(2)))
            }
        } else {
            // Over the capacity: the last generation's count and its trend
            // (`2·c1 - c2`, between half and twice `c1`), plus `3·sqrt` of it.
            let c1 = counts.first().copied().unwrap_or(0);
            let c2 = counts.get(1).copied().unwrap_or(c1);
            if c1 == 0 {
                grow(most)
            } else {
                let t = trend(c1, c2);
                t.saturating_add(deviations(t))
            }
        };
        let mut error = self.target(cur) - RESERVE * self.budget();
        if young && !over && total > 0 {
            // A young generation's first link is a guess from less than a
            // window: its error goes with its items, the steady error per
            // share (at least the floor `0.4·B`), as a growth link's does.
            // A first link of twice a partial first generation took the
            // whole `T·B - r` for a fifth of what came (batches of
            // capacity/22, the worst phase at 1%: 1.68x -> 1.63x).
            let per_item = self.steady_error() * entries as f64 / share as f64;
            error = error.min(per_item.max(FLOOR * self.budget()));
        }
        let error = self.on_grid(error);
        self.shape(entries.max(1), error)
    }

    /// The link after `last` (the generation's `n`-th) when a write at `now`
    /// finds it full; the generation holds `items`. Non-scaling: the rest of a
    /// window's capacity at the whole reserve. Scaling: the generation's rate so
    /// far projected over the rest of its span (with headroom), at least a
    /// 16th of the first link for the second, the previous link for the third
    /// and fourth, and the previous link times the expansion from the fifth on
    /// (as a plain chain grows: a batch that fills links at one instant
    /// projects no rate; `B` items at once into a first link of `F` take at
    /// most `3 + log2(16·(B - F)/F)` growth links at expansion 2, 4 for
    /// `B = 1.2·F`), at most a share (then the previous link times the
    /// expansion; the second link of a generation without history, whose
    /// first is a share, at most half of it: a batch at one instant projects
    /// a whole share, and 0.3x the capacity in one batch filled a 44,700-item
    /// second link with 10,000), at half of what the generation's limit leaves
    /// (at least half the previous link's part of the reserve).
    pub(super) fn next_link(
        &self,
        cur: u64,
        now: u64,
        last: &LinkShape,
        n: usize,
        items: u64,
    ) -> Result<LinkShape, BloomError> {
        let r = RESERVE * self.budget();
        if self.expansion == 0 {
            let rest = self.capacity.saturating_sub(items).max(1);
            return self.shape(rest, r);
        }
        let share = self.capacity.div_ceil(u64::from(self.parts.max(1))).max(1);
        let (floor, ceiling) = if n <= 1 {
            (
                last.entries.div_ceil(SECOND_LINK_PART),
                if self.fresh(cur) {
                    last.entries.div_ceil(2)
                } else {
                    share.max(last.entries)
                },
            )
        } else {
            let grown = last
                .entries
                .checked_mul(u64::from(self.expansion.max(1)))
                .ok_or(BloomError::MemoryCap)?;
            // The third and fourth links at least a 16th of the first, as
            // the second (at least the previous one before: a second link
            // sized by a rise left a third as big for the last few items,
            // swinging ±30% from the start, the worst phase at 1%: 1.94x ->
            // 1.71x with growth links at the steady error per item; doubling
            // earlier cost 2% for batches of a twentieth of the capacity);
            // then geometric.
            let first = self
                .gens
                .last()
                .and_then(|g| g.chain.links().first())
                .map_or(last.entries, |l| l.shape().entries);
            let least = if n <= 3 {
                first.div_ceil(SECOND_LINK_PART)
            } else {
                grown
            };
            (least, grown.max(share))
        };
        let (start, end) = (self.gen_start(cur), self.gen_start(cur.saturating_add(1)));
        let elapsed = now.saturating_sub(start).saturating_add(1) as f64;
        let left = end.saturating_sub(now) as f64;
        let projected = (items as f64 * left / elapsed * PROJECTION_HEADROOM).ceil();
        let entries = if projected >= ceiling as f64 {
            ceiling
        } else {
            (projected as u64).clamp(floor.max(1), ceiling.max(1))
        };
        // Half of what the generation's limit leaves after its links (at least
        // the reserve's halves, `r/2`, `r/4`, ...: the first link took at
        // most the limit less `r`).
        let own: f64 = self.gens.last().map_or(0.0, |g| {
            g.chain.links().iter().map(|l| l.shape().error).sum()
        });
        let halvings = i32::try_from(n).unwrap_or(i32::MAX);
        let spare = (self.limit(cur) - own) / 2.0;
        // At most the steady error per item (`T·B - r` per share): a growth
        // link at half of what the limit leaves took budget the next
        // generations needed (batches of capacity/22 at the bench's phase:
        // 1.67x -> 1.60x at 1%).
        let per_item = self.steady_error() * entries as f64 / share as f64;
        let error = self.on_grid(spare.min(per_item).max(r * 0.5f64.powi(halvings)));
        self.shape(entries, error)
    }

    /// Items of generations `cur-1, cur-2, ..., cur-K` (0 for one not held).
    fn history(&self, cur: u64) -> Vec<u64> {
        (1..=u64::from(self.parts.max(1)))
            .map(|d| {
                cur.checked_sub(d).map_or(0, |i| {
                    self.gens
                        .iter()
                        .find(|g| g.index == i)
                        .map_or(0, |g| g.chain.items())
                })
            })
            .collect()
    }

    /// Whether generation `cur` has no history: none of the `K` generations
    /// before it holds an item (its first link was a share of the capacity).
    fn fresh(&self, cur: u64) -> bool {
        self.history(cur).iter().all(|&c| c == 0)
    }

    /// The first millisecond of generation `index`: `ceil(index·W / K)`.
    fn gen_start(&self, index: u64) -> u64 {
        let k = u128::from(self.parts.max(1));
        let t = (u128::from(index) * u128::from(self.window_ms)).div_ceil(k);
        u64::try_from(t).unwrap_or(u64::MAX)
    }

    /// `error` rounded down to the grid `steady_error · 2^(-j/16)`.
    fn on_grid(&self, error: f64) -> f64 {
        let base = self.steady_error();
        if error.is_nan() || error <= 0.0 {
            return base * 0.5;
        }
        let j = ((error / base).log2() * GRID_STEPS + 1e-9).floor();
        (base * (j / GRID_STEPS).exp2()).min(error)
    }

    /// A link of `entries` items at `error` in the window's layout: a classic
    /// one sized directly, a blocked or paired one from the error rate's
    /// template (the same bits per item and hashes `LinkShape::with_layout`
    /// finds, never fewer bits).
    pub(super) fn shape(&self, entries: u64, error: f64) -> Result<LinkShape, BloomError> {
        if self.layout.is_classic() {
            return LinkShape::with_layout(entries, error, self.layout, false);
        }
        let t = self.template(error)?;
        let bits_f = (entries as f64 * t.bits_per_item).ceil();
        if bits_f.is_nan() || bits_f >= (1u64 << 62) as f64 {
            return Err(BloomError::MemoryCap);
        }
        let bits = (bits_f as u64).max(1).div_ceil(LINE_BITS) * LINE_BITS;
        Ok(LinkShape {
            entries,
            error,
            bits,
            hashes: t.hashes,
            layout: self.layout,
            bpe: t.bpe,
            n2: 0,
            storage: bits / 8,
        })
    }

    fn template(&self, error: f64) -> Result<Template, BloomError> {
        if let Some(t) = self.grown.get().filter(|t| t.error == error) {
            return Ok(t);
        }
        let hit = self
            .shapes
            .templates
            .borrow()
            .iter()
            .find(|t| t.error == error)
            .copied();
        let t = match hit {
            Some(t) => t,
            None => {
                // Blocked links are sized for their measured rate (see
                // `BLOCKED_MODEL`); the link records the rate it answers with.
                let model = if self.layout == BloomLayout::Blocked {
                    error / BLOCKED_MODEL
                } else {
                    error
                };
                let s = LinkShape::with_layout(TEMPLATE_ENTRIES, model, self.layout, false)?;
                let t = Template {
                    error,
                    bits_per_item: s.bits as f64 / TEMPLATE_ENTRIES as f64,
                    hashes: s.hashes,
                    bpe: s.bpe,
                };
                let mut cache = self.shapes.templates.borrow_mut();
                if cache.len() >= CACHE {
                    cache.remove(0);
                }
                if cache.try_reserve(1).is_ok() {
                    cache.push(t);
                }
                t
            }
        };
        self.grown.set(Some(t));
        Ok(t)
    }
}
