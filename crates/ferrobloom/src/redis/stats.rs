//! Operator metrics for `INFO bf` and the keyspace events of write commands.
//!
//! # Gauges (exact)
//! Per filter type: filters, memory (BF.INFO / CF.INFO `Size`), items, links or
//! sub-filters. Every value the module creates adds its figures (a command's new
//! filter, `rdb_load` for RDB/AOF/RESTORE/full sync, COPY) and every value freed
//! subtracts them (DEL, UNLINK, expiry, FLUSHALL, a replaced value, lazy free on
//! the background thread: the free callback), so the gauges equal the sum over the
//! keyspace. In between, only write commands change a value: a key opened for
//! writing (`api::Key`) takes the figures of the filter it hands out, and when
//! the command closes it, applies the difference.
//!
//! # Counters (monotonic since the module loaded)
//! Items added (accepted as new), lookups (items asked about by EXISTS, MEXISTS,
//! COUNT), and commands refused by reason (the error reply's kind).
//!
//! # Keyspace events
//! A write command that changed its key (it replicated something: every change
//! replicates) notifies once, in the module class (`notify-keyspace-events d`),
//! with the command's name in lower case as the event (`bf.add`, `cf.del`, …).

use std::ffi::CStr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use super::ctx::{Args, Ctx};

/// A filter's contribution to the gauges. Item counts are exact `u64`s (a
/// payload may carry any): each is kept as its high and low 32-bit halves, so
/// the sums never overflow (below 2^31 filters) and the total is exact;
/// `INFO` shows it saturated at `i64::MAX`, never negative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub filters: i64,
    pub memory: i64,
    /// Low and high 32 bits of the item count (sums of them, in a difference).
    items_lo: i64,
    items_hi: i64,
    pub subfilters: i64,
}

impl Figures {
    pub fn new(filters: i64, memory: i64, items: u64, subfilters: i64) -> Figures {
        Figures {
            filters,
            memory,
            items_lo: (items & 0xffff_ffff) as i64,
            items_hi: (items >> 32) as i64,
            subfilters,
        }
    }

    /// The item count (or a difference of them), exact.
    fn items(&self) -> i128 {
        (i128::from(self.items_hi) << 32) + i128::from(self.items_lo)
    }

    fn minus(self, o: Figures) -> Figures {
        Figures {
            filters: self.filters - o.filters,
            memory: self.memory - o.memory,
            items_lo: self.items_lo - o.items_lo,
            items_hi: self.items_hi - o.items_hi,
            subfilters: self.subfilters - o.subfilters,
        }
    }
}

/// A gauge's value for INFO: saturated into `0 ..= i64::MAX`.
fn gauge_value(v: i128) -> i64 {
    i64::try_from(v.max(0)).unwrap_or(i64::MAX)
}

/// One gauge set (signed sums).
struct Sums {
    filters: AtomicI64,
    memory: AtomicI64,
    items_lo: AtomicI64,
    items_hi: AtomicI64,
    subfilters: AtomicI64,
}

impl Sums {
    const fn new() -> Self {
        Sums {
            filters: AtomicI64::new(0),
            memory: AtomicI64::new(0),
            items_lo: AtomicI64::new(0),
            items_hi: AtomicI64::new(0),
            subfilters: AtomicI64::new(0),
        }
    }

    /// Each sum with the field of `f` that goes into it.
    fn with(&self, f: &Figures) -> [(&AtomicI64, i64); 5] {
        [
            (&self.filters, f.filters),
            (&self.memory, f.memory),
            (&self.items_lo, f.items_lo),
            (&self.items_hi, f.items_hi),
            (&self.subfilters, f.subfilters),
        ]
    }

    fn read(&self) -> Figures {
        Figures {
            filters: self.filters.load(Relaxed),
            memory: self.memory.load(Relaxed),
            items_lo: self.items_lo.load(Relaxed),
            items_hi: self.items_hi.load(Relaxed),
            subfilters: self.subfilters.load(Relaxed),
        }
    }
}

/// Adds `v` to a counter only the main thread writes: a plain load and store,
/// not a locked read-modify-write (which costs ~20 cycles, several times per
/// write command). Correct because no other thread writes it; INFO, which reads
/// it, runs on the main thread too.
#[inline(always)]
fn bump_main(a: &AtomicI64, v: i64) {
    a.store(a.load(Relaxed).wrapping_add(v), Relaxed);
}

#[inline(always)]
fn bump_main_u(a: &AtomicU64, v: u64) {
    a.store(a.load(Relaxed).saturating_add(v), Relaxed);
}

/// The gauges of one filter type.
pub struct Gauges {
    /// Kept by the main thread: commands, loads, copies, frees on the main thread.
    main: Sums,
    /// Subtracted by frees that may run on the lazy-free thread (atomic adds).
    freed: Sums,
    /// Counter: items accepted as new by commands (main thread).
    added: AtomicU64,
}

impl Gauges {
    const fn new() -> Self {
        Gauges {
            main: Sums::new(),
            freed: Sums::new(),
            added: AtomicU64::new(0),
        }
    }

    fn read(&self) -> Figures {
        self.main.read().minus(self.freed.read())
    }

    /// A command changed a filter from `before` to `after` (a new filter has
    /// `before` all zero). Main thread only.
    pub fn changed(&self, before: Figures, after: Figures) {
        self.add(after.minus(before));
        let added = u64::try_from(after.minus(before).items()).unwrap_or(0);
        if added > 0 {
            bump_main_u(&self.added, added);
        }
    }

    /// Adds `f` (main thread only; only the fields that change).
    pub fn add(&self, f: Figures) {
        for (g, v) in self.main.with(&f) {
            if v != 0 {
                bump_main(g, v);
            }
        }
    }

    /// Removes a freed value's figures; safe on any thread (the free callback
    /// runs on the lazy-free thread for UNLINK, FLUSHALL ASYNC, …).
    pub fn sub(&self, f: Figures) {
        for (g, v) in self.freed.with(&f) {
            if v != 0 {
                g.fetch_add(v, Relaxed);
            }
        }
    }
}

pub static BLOOM_GAUGES: Gauges = Gauges::new();
pub static CUCKOO_GAUGES: Gauges = Gauges::new();

/// Counters.
static BLOOM_LOOKUPS: AtomicU64 = AtomicU64::new(0);
static CUCKOO_LOOKUPS: AtomicU64 = AtomicU64::new(0);

/// Why a command was refused, for the `refused_*` counters.
const REASONS: [&str; 7] = [
    "memory",
    "links",
    "expansions",
    "full",
    "item_size",
    "payload",
    "other",
];
static REFUSED: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

fn reason_of(error: &str) -> usize {
    let e = error.to_ascii_lowercase();
    let is = |words: &[&str]| words.iter().any(|w| e.contains(w));
    if is(&["memory", "max-filter-memory"]) {
        0
    } else if is(&["bf-max-links"]) {
        1
    } else if is(&["maximum expansions"]) {
        2
    } else if is(&["is full", "filter is full"]) {
        3
    } else if is(&["item too large"]) {
        4
    } else if is(&[
        "bad data",
        "invalid header",
        "couldn't load chunk",
        "no link found",
        "too big for current filter",
    ]) {
        5
    } else {
        6
    }
}

/// Counts a refused command (called with its error reply).
pub fn refused(error: &str) {
    if let Some(c) = REFUSED.get(reason_of(error)) {
        c.fetch_add(1, Relaxed);
    }
}

/// What the trampoline knows of a command, statically.
pub struct Meta {
    /// Registered `write` (its key is opened for writing).
    pub write: bool,
    /// Items asked about are counted as lookups of this family (`Some(true)`: Bloom).
    pub lookups: Option<bool>,
    /// The keyspace event (the command's name in lower case).
    pub event: &'static CStr,
    /// The handler's name (`bf_add`), for the log line of a contained panic.
    pub name: &'static str,
}

/// Before a command runs.
pub fn before() {
    let _ = super::ctx::take_changed();
    super::trust::forget_trusted();
}

/// After a command ran: the lookup counters and the keyspace event (the gauges
/// are kept by `Key`, which sees every filter a command reads for writing).
pub fn after(ctx: Ctx, args: &Args, m: &Meta, ok: bool) {
    if let (Some(bloom), true) = (m.lookups, ok) {
        let n = args.len().saturating_sub(2) as u64;
        let c = if bloom {
            &BLOOM_LOOKUPS
        } else {
            &CUCKOO_LOOKUPS
        };
        bump_main_u(c, n);
    }
    if m.write && super::ctx::take_changed() {
        notify(ctx, args, m.event);
    }
}

fn notify(ctx: Ctx, args: &Args, event: &CStr) {
    if let Some(key) = args.string(1) {
        ctx.notify_keyspace_event(event, key);
    }
}

/// The `INFO bf` fields: `(name, value)`.
pub fn info_fields() -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for (prefix, g, lookups, sub) in [
        ("bloom", &BLOOM_GAUGES, &BLOOM_LOOKUPS, "links"),
        ("cuckoo", &CUCKOO_GAUGES, &CUCKOO_LOOKUPS, "subfilters"),
    ] {
        let f = g.read();
        out.push((format!("{prefix}_filters"), gauge_value(f.filters.into())));
        out.push((format!("{prefix}_memory"), gauge_value(f.memory.into())));
        out.push((format!("{prefix}_items"), gauge_value(f.items())));
        out.push((format!("{prefix}_{sub}"), gauge_value(f.subfilters.into())));
        out.push((
            format!("{prefix}_items_added"),
            gauge_value(g.added.load(Relaxed).into()),
        ));
        out.push((
            format!("{prefix}_lookups"),
            gauge_value(lookups.load(Relaxed).into()),
        ));
    }
    for (reason, c) in REASONS.iter().zip(&REFUSED) {
        out.push((
            format!("refused_{reason}"),
            gauge_value(c.load(Relaxed).into()),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_gauges_stay_exact_or_saturate_never_negative() {
        let g = Gauges::new();
        let big = Figures::new(1, 100, 1 << 63, 1);
        let max = Figures::new(1, 100, u64::MAX, 1);
        g.changed(Figures::default(), big);
        assert_eq!(g.read().items(), 1 << 63);
        g.changed(Figures::default(), max);
        assert_eq!(g.read().items(), (1i128 << 63) + i128::from(u64::MAX));
        assert_eq!(gauge_value(g.read().items()), i64::MAX);
        // A command adds one item to the u64::MAX - 1 filter, another is freed.
        let before = Figures::new(1, 100, u64::MAX - 1, 1);
        g.changed(Figures::default(), before);
        g.changed(before, max);
        g.sub(big);
        assert_eq!(
            g.read().items(),
            2 * i128::from(u64::MAX),
            "exact after every change"
        );
        g.sub(max);
        g.sub(max);
        assert_eq!(g.read(), Figures::default());
        assert_eq!(gauge_value(-5), 0);
        assert_eq!(gauge_value(7), 7);
        // The counter of added items saturates too.
        assert_eq!(g.added.load(Relaxed), u64::MAX);
        assert_eq!(gauge_value(g.added.load(Relaxed).into()), i64::MAX);
    }
}
