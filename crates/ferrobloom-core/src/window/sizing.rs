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

use super::forecast::{History, Regime};
use super::Window;
use crate::bits::LINE_BITS;
use crate::bloom::{poisson_sum_end, BloomError, BloomLayout, LinkShape};
use std::cell::{Cell, RefCell};

/// The live generations' rates, as [`link_fpr`] estimates them from the items
/// each link holds, sum to at most this part of the error rate: the estimate
/// is an expectation by the model the links are sized with, and 3% covers its
/// error (the tests `window_guarantees_over_26_windows_*` measure every
/// moment), for 0.5% more bits (`ln(1/0.97)` against `ln(1/B)` at 1%).
pub(super) const MARGIN: f64 = 0.97;
/// Blocked links' estimate is scaled by this, and they are sized for it:
/// they measure up to 8.5% above the Poisson model (0.1%, a full steady
/// window, 2 million probes; classic and paired links within 2%).
const BLOCKED_MODEL: f64 = 1.1;
/// Part of the per-generation budget `B = p/(K+1)` each generation keeps for
/// the links it opens after its first (halved per link: `r/2`, `r/4`, ...,
/// which sum to at most `r`). Its cost: a steady generation's first link
/// gets `(T - r)·B = 0.98·B` instead of `B`, 0.3% more bits at 1%.
pub(super) const RESERVE: f64 = 0.1;
/// The least error any generation is left, as a part of `B` (see
/// [`Window::limit`]): a generation after one that took much still gets a
/// usable link. Measured at 0.4, 0.6 and 0.8 (docs/windowed.md, "Why these
/// values"): the higher floors cost 1-5% from the start.
const FLOOR: f64 = 0.4;
/// The part of what the older generations leave unused that a new one may
/// take (see [`Window::target`]). Measured at 0, 1/8, 1/4, 0.35 and 1/2
/// (docs/windowed.md, "Why these values"): a quarter is the least memory over
/// the streams of the bench.
const SLACK_SHARE: f64 = 0.25;
/// A growth link's items: the current generation's rate so far over the rest
/// of its span, times this. Measured at 1.1 and 1.25 (docs/windowed.md, "Why
/// these values"): 1.1 costs batches and swinging streams 1-2% less.
const PROJECTION_HEADROOM: f64 = 1.1;
/// A generation's second, third and fourth links hold at least this part of
/// its first: a batch that arrives late in its generation projects almost no
/// rate, and with these floors and doubling from the fifth, `B` items at once
/// into a first link of `F` take at most `3 + log2(16·(B - F)/F)` growth
/// links (4 for `B = 1.2·F`). Measured at 16, 32 and 64 (docs/windowed.md).
const SECOND_LINK_PART: u64 = 16;
/// Error rates are rounded down to a grid of this many steps per halving
/// (`2^(1/64)`: 1.1% apart), so that the few rates in use are sized once
/// each, for at most 1.1% tighter errors (0.2% more bits at 1%).
const GRID_STEPS: f64 = 64.0;
/// Size of the cache of error rates sized for blocked and paired links (a
/// bisection of 0.3-2 ms each): the live generations use a first-link rate
/// and a few growth-link rates each, and a miss costs only time.
const CACHE: usize = 16;
/// The item count a blocked or paired template is sized for: its bits are
/// whole 512-bit blocks, so its bits per item are exact to `512/2^30` (5e-7),
/// rounded up.
const TEMPLATE_ENTRIES: u64 = 1 << 30;
/// Blocks holding more items than this on average (in groups of probes) are
/// saturated (a full link's hold 30-130): the link answers with rate 1,
/// without summing over a payload's arbitrary load.
const SATURATED_GROUPS: f64 = 4096.0;

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
    if 2.0 * line * n / m > SATURATED_GROUPS {
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
    let last = poisson_sum_end(lambda);
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
    /// are the ones live during it): the stream's regime from the last `K`
    /// generations' counts, that regime's items (`window/forecast.rs`), and
    /// the generation's target less the reserve as its error.
    pub(super) fn first_link(&self, cur: u64) -> Result<LinkShape, BloomError> {
        let counts = self.history(cur);
        let history = History::new(&counts, self.capacity, self.parts);
        let regime = history.regime();
        let items = history.first_link_items(regime);
        let mut error = self.target(cur) - RESERVE * self.budget();
        if let Regime::Young(_) = regime {
            // A young generation's first link is a guess from less than a
            // window: its error goes with its items, as a growth link's does.
            error = error.min(self.steady_error_for(items).max(FLOOR * self.budget()));
        }
        let error = self.on_grid(error);
        self.shape(items.max(1), error)
    }

    /// The link after `last` (the generation's `n`-th) when a write at `now`
    /// finds it full; the generation holds `items`. Non-scaling: the rest of
    /// a window's capacity at the whole reserve. Scaling: items by
    /// [`Window::growth_items`], at half of what the generation's limit
    /// leaves after its links, at most the steady error per item and at least
    /// the reserve's halves (`r/2`, `r/4`, ...: the first link took at most
    /// the limit less `r`).
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
        let entries = self.growth_items(cur, now, last, n, items)?;
        let own: f64 = self.gens.last().map_or(0.0, |g| {
            g.chain.links().iter().map(|l| l.shape().error).sum()
        });
        let halvings = i32::try_from(n).unwrap_or(i32::MAX);
        let spare = (self.limit(cur) - own) / 2.0;
        let per_item = self.steady_error_for(entries);
        let error = self.on_grid(spare.min(per_item).max(r * 0.5f64.powi(halvings)));
        self.shape(entries, error)
    }

    /// A growth link's items: the generation's rate so far projected over the
    /// rest of its span (with [`PROJECTION_HEADROOM`]), between a floor and a
    /// ceiling. The second link: at least a 16th of the first, at most the
    /// larger of a share and the first (half the first when the generation
    /// has no history: its first is a share, and a batch at one instant
    /// projects a whole share). The third and fourth: at least a 16th of the
    /// first, at most the larger of a share and the previous link times the
    /// expansion. From the fifth: at least the previous link times the
    /// expansion (as a plain chain grows), at most the larger of that and a
    /// share.
    fn growth_items(
        &self,
        cur: u64,
        now: u64,
        last: &LinkShape,
        n: usize,
        items: u64,
    ) -> Result<u64, BloomError> {
        let share = self.share();
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
        // Every state a command sequence builds has `floor <= ceiling`; a
        // loaded one need not (a first link far larger than the links after
        // it): the ceiling wins, so such a state sizes small links and never
        // panics.
        let ceiling = ceiling.max(1);
        let floor = floor.clamp(1, ceiling);
        Ok(if projected >= ceiling as f64 {
            ceiling
        } else {
            (projected as u64).clamp(floor, ceiling)
        })
    }

    /// A share of the capacity, `capacity / K` (at least 1).
    fn share(&self) -> u64 {
        self.capacity.div_ceil(u64::from(self.parts.max(1))).max(1)
    }

    /// The steady error per item for a link of `entries`: `T·B - r` per
    /// share. Growth links and young first links get at most this, so a link
    /// sized for few items does not take the budget the next generations
    /// need.
    fn steady_error_for(&self, entries: u64) -> f64 {
        self.steady_error() * entries as f64 / self.share() as f64
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

    /// `error` rounded down to the grid `steady_error · 2^(j/64)` (integer `j`).
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
