//! The memory a windowed filter could reach with perfect foresight, for
//! `bench_window_memory --bound` (included with `#[path]`; not an example
//! itself).
//!
//! The structure is today's: generations of `W/4`, each held from its first
//! item until a window after its end (five live at a time), links sized when
//! they open, and the rates the live generations' links answer with summing to
//! at most the budget `P` at every moment. A policy that knew every
//! generation's item count `n_g` in advance would give each generation one
//! link of exactly `n_g` items at an error `e_g` (more links cost more bits for
//! the same rate), and a link filled to its items answers with its error. The
//! memory held while generation `c` is current is then
//! `M_c = Σ_{g=c-4..c} bytes(n_g, e_g)`, and the rates of the five
//! generations live at the end of `c` must sum to at most `P`.
//!
//! - **Lower bound** (no policy does better): each `M_c` is at least the least
//!   memory of its five generations under their own sum `Σ e_g <= P` alone
//!   (the coupling with the neighbouring windows only adds constraints); the
//!   bound is the largest of these over the moments measured. Solved exactly
//!   (Lagrange: each `e_g` minimises `n_g·bits(e) + ν·e`, `ν` bisected).
//! - **Reached** (one assignment that keeps every window's sum within `P`):
//!   the better of `e_g = P·n_g / max N_c` over the windows `c` holding `g`
//!   (`N_c` their items; the classic optimum of one window is `e ∝ n`) and the
//!   least of the windows' own optima. The true optimum lies between.
//!
//! `bits(e)` is the bits per item the window's sizing gives a link at error
//! `e` (`LinkShape::with_layout` for 2^30 items; blocked links at `e/1.1`, as
//! `window/sizing.rs` sizes them); bytes round up to 64-byte blocks plus the
//! link's 64 bytes of overhead, as `mem_usage` counts them.

use ferrobloom_core::bloom::{BloomLayout, LinkShape};

const LINK_OVERHEAD: f64 = 64.0;
const CHAIN_OVERHEAD: f64 = 32.0;

/// Bits per item over `u = ln(error)`, interpolated linearly.
pub struct Bits {
    lo: f64,
    step: f64,
    table: Vec<f64>,
}

impl Bits {
    pub fn new(layout: BloomLayout) -> Bits {
        let (lo, hi, n) = (1e-9f64.ln(), 0.5f64.ln(), 400usize);
        let step = (hi - lo) / n as f64;
        let entries = 1u64 << 30;
        let table = (0..=n)
            .map(|i| {
                let e = (lo + step * i as f64).exp();
                let model = if layout == BloomLayout::Blocked {
                    e / 1.1
                } else {
                    e
                };
                let s = LinkShape::with_layout(entries, model, layout, false).expect("shape");
                s.bits as f64 / entries as f64
            })
            .collect();
        Bits { lo, step, table }
    }

    fn hi(&self) -> f64 {
        self.lo + self.step * (self.table.len() - 1) as f64
    }

    /// Bits per item at `ln(error) = u`.
    pub fn at_ln(&self, u: f64) -> f64 {
        let x = ((u - self.lo) / self.step).clamp(0.0, (self.table.len() - 1) as f64);
        let i = (x.floor() as usize).min(self.table.len() - 2);
        let f = x - i as f64;
        self.table[i] * (1.0 - f) + self.table[i + 1] * f
    }

    /// Bytes of a link of `n` items at `error`, with its overhead.
    pub fn bytes(&self, n: u64, error: f64) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let bits = (n as f64 * self.at_ln(error.ln())).ceil();
        (bits / 512.0).ceil() * 64.0 + LINK_OVERHEAD
    }

    /// The error `e` minimising `n·bits(e) + nu·e` (golden section on `ln e`).
    fn argmin(&self, n: u64, nu: f64) -> f64 {
        let f = |u: f64| n as f64 * self.at_ln(u) + nu * u.exp();
        let (mut a, mut b) = (self.lo, self.hi());
        let g = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..100 {
            let (c, d) = (b - g * (b - a), a + g * (b - a));
            if f(c) < f(d) {
                b = d;
            } else {
                a = c;
            }
        }
        ((a + b) / 2.0).exp()
    }

    /// The errors minimising `Σ n_g·bits(e_g)` under `Σ e_g <= p`.
    pub fn split(&self, ns: &[u64], p: f64) -> Vec<f64> {
        let sum = |nu: f64| -> f64 {
            ns.iter()
                .filter(|&&n| n > 0)
                .map(|&n| self.argmin(n, nu))
                .sum()
        };
        // The sum of the errors falls as `nu` grows: bisect `ln nu`.
        let (mut a, mut b) = (0f64, 60f64);
        for _ in 0..100 {
            let m = (a + b) / 2.0;
            if sum(m.exp()) > p {
                a = m;
            } else {
                b = m;
            }
        }
        let nu = b.exp();
        ns.iter()
            .map(|&n| if n > 0 { self.argmin(n, nu) } else { 0.0 })
            .collect()
    }
}

/// Lower bound and reached memory (bytes) over the windows `c` (generation
/// indices into `counts`) for which `measured(c)` holds.
pub fn bound(
    bits: &Bits,
    counts: &[u64],
    parts: usize,
    p: f64,
    measured: impl Fn(usize) -> bool,
) -> (f64, f64) {
    let win = |c: usize| c.saturating_sub(parts)..=c;
    let windows: Vec<usize> = (0..counts.len()).filter(|&c| counts[c] > 0).collect();
    // The lower bound: each window alone.
    let mut lower = 0f64;
    let mut own: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    for &c in &windows {
        let ns: Vec<u64> = win(c).map(|g| counts[g]).collect();
        let es = bits.split(&ns, p);
        let m: f64 = ns.iter().zip(&es).map(|(&n, &e)| bits.bytes(n, e)).sum();
        if measured(c) {
            lower = lower.max(m + CHAIN_OVERHEAD);
        }
        own[c] = es;
    }
    // Reached: two assignments that keep every window within `p`.
    let n_window = |c: usize| -> u64 { win(c).map(|g| counts[g]).sum() };
    let by_items: Vec<f64> = (0..counts.len())
        .map(|g| {
            let most = (g..=(g + parts).min(counts.len() - 1))
                .map(n_window)
                .max()
                .unwrap_or(1)
                .max(1);
            p * counts[g] as f64 / most as f64
        })
        .collect();
    let by_least: Vec<f64> = (0..counts.len())
        .map(|g| {
            (g..=(g + parts).min(counts.len() - 1))
                .filter(|&c| counts[c] > 0)
                .map(|c| own[c][g + own[c].len() - 1 - c])
                .fold(p, f64::min)
        })
        .collect();
    let worst = |es: &[f64]| -> f64 {
        windows
            .iter()
            .filter(|&&c| measured(c))
            .map(|&c| {
                debug_assert!(win(c).map(|g| es[g]).sum::<f64>() <= p * (1.0 + 1e-9));
                win(c).map(|g| bits.bytes(counts[g], es[g])).sum::<f64>() + CHAIN_OVERHEAD
            })
            .fold(0.0, f64::max)
    };
    (lower, worst(&by_items).min(worst(&by_least)))
}
