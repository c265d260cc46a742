//! Operator metrics for `INFO bf` and the keyspace events of write commands.
//!
//! # Gauges (exact)
//! Per filter type: filters, memory (BF.INFO / CF.INFO `Size`), items, links or
//! sub-filters. Every value the module creates adds its figures (a command's new
//! filter, `rdb_load` for RDB/AOF/RESTORE/full sync, COPY) and every value freed
//! subtracts them (DEL, UNLINK, expiry, FLUSHALL, a replaced value, lazy free on
//! the background thread: the free callback), so the gauges equal the sum over the
//! keyspace. In between, only write commands change a value: the command
//! trampoline takes the key's figures before and after each write command and
//! applies the difference.
//!
//! # Counters (monotonic since the module loaded)
//! Items added (accepted as new), lookups (items asked about by EXISTS, MEXISTS,
//! COUNT), and commands refused by reason (the error reply's kind).
//!
//! # Keyspace events
//! A write command that changed its key (it replicated something: every change
//! replicates) notifies once, in the module class (`notify-keyspace-events d`),
//! with the command's name in lower case as the event (`bf.add`, `cf.del`, …).

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

use redis_module::raw;

use super::api::{api, Args, Ctx, Key, Lookup};
use super::types::{FilterValue, BLOOM, CUCKOO};

/// A filter's contribution to the gauges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub filters: i64,
    pub memory: i64,
    pub items: i64,
    pub subfilters: i64,
}

impl Figures {
    fn minus(self, o: Figures) -> Figures {
        Figures {
            filters: self.filters - o.filters,
            memory: self.memory - o.memory,
            items: self.items - o.items,
            subfilters: self.subfilters - o.subfilters,
        }
    }
}

/// The gauges of one filter type.
pub struct Gauges {
    filters: AtomicI64,
    memory: AtomicI64,
    items: AtomicI64,
    subfilters: AtomicI64,
}

impl Gauges {
    const fn new() -> Self {
        Gauges {
            filters: AtomicI64::new(0),
            memory: AtomicI64::new(0),
            items: AtomicI64::new(0),
            subfilters: AtomicI64::new(0),
        }
    }

    pub fn add(&self, f: Figures) {
        self.filters.fetch_add(f.filters, Relaxed);
        self.memory.fetch_add(f.memory, Relaxed);
        self.items.fetch_add(f.items, Relaxed);
        self.subfilters.fetch_add(f.subfilters, Relaxed);
    }

    pub fn sub(&self, f: Figures) {
        self.add(Figures::default().minus(f));
    }

    fn read(&self) -> Figures {
        Figures {
            filters: self.filters.load(Relaxed),
            memory: self.memory.load(Relaxed),
            items: self.items.load(Relaxed),
            subfilters: self.subfilters.load(Relaxed),
        }
    }
}

pub static BLOOM_GAUGES: Gauges = Gauges::new();
pub static CUCKOO_GAUGES: Gauges = Gauges::new();

/// Counters.
static BLOOM_ADDED: AtomicU64 = AtomicU64::new(0);
static CUCKOO_ADDED: AtomicU64 = AtomicU64::new(0);
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

/// Set by every replication call of the running command (see `Ctx::replicate*`).
static CHANGED: AtomicBool = AtomicBool::new(false);

/// Notes that the running command changed its key.
pub fn mark_changed() {
    CHANGED.store(true, Relaxed);
}

/// The key's figures (either filter type), if it holds a filter.
fn figures_of(ctx: Ctx, args: &Args) -> Option<(bool, Figures)> {
    let name = args.raw(1)?;
    let mut key = Key::open(ctx, name, false);
    if let Lookup::Found(c) = key.lookup(&BLOOM) {
        return Some((true, c.figures()));
    }
    if let Lookup::Found(f) = key.lookup(&CUCKOO) {
        return Some((false, f.figures()));
    }
    None
}

/// What the trampoline remembers across a command.
pub struct Before {
    write: bool,
    figures: Option<(bool, Figures)>,
}

/// Before a command runs: the key's figures (write commands only).
pub fn before(ctx: Ctx, args: &Args, write: bool) -> Before {
    CHANGED.store(false, Relaxed);
    Before {
        write,
        figures: if write { figures_of(ctx, args) } else { None },
    }
}

/// After a command ran: gauges, counters and the keyspace event.
pub fn after(ctx: Ctx, args: &Args, b: Before, ok: bool) {
    let name = args.bytes(0).to_ascii_lowercase();
    if !b.write {
        if ok
            && matches!(
                name.as_slice(),
                b"bf.exists" | b"bf.mexists" | b"cf.exists" | b"cf.mexists" | b"cf.count"
            )
        {
            let n = args.len().saturating_sub(2) as u64;
            let c = if name.starts_with(b"bf.") {
                &BLOOM_LOOKUPS
            } else {
                &CUCKOO_LOOKUPS
            };
            c.fetch_add(n, Relaxed);
        }
        return;
    }
    // Gauges: the key's old figures out, its new ones in (whether or not the
    // command reports a change: a refused command changes nothing, and then the
    // two are equal).
    let now = figures_of(ctx, args);
    if let Some((bloom, f)) = b.figures {
        gauges(bloom).sub(f);
    }
    if let Some((bloom, f)) = now {
        gauges(bloom).add(f);
        let old_items = match b.figures {
            Some((same, o)) if same == bloom => o.items,
            _ => 0,
        };
        let added = u64::try_from(f.items - old_items).unwrap_or(0);
        let c = if bloom { &BLOOM_ADDED } else { &CUCKOO_ADDED };
        c.fetch_add(added, Relaxed);
    }
    if CHANGED.load(Relaxed) {
        notify(ctx, args, &name);
    }
}

fn gauges(bloom: bool) -> &'static Gauges {
    if bloom {
        &BLOOM_GAUGES
    } else {
        &CUCKOO_GAUGES
    }
}

fn notify(ctx: Ctx, args: &Args, event: &[u8]) {
    let (Some(f), Some(key)) = (api!(RedisModule_NotifyKeyspaceEvent), args.raw(1)) else {
        return;
    };
    let Ok(event) = CString::new(event) else {
        return;
    };
    // SAFETY: valid context, NUL-terminated event name, the command's key.
    unsafe {
        f(
            ctx.ptr,
            raw::REDISMODULE_NOTIFY_MODULE,
            event.as_ptr() as *const c_char,
            key,
        )
    };
}

/// Adds a value that came into existence outside a command (`rdb_load`, COPY).
pub fn created<T: FilterValue>(v: &T) {
    T::gauges().add(v.figures());
}

/// Removes a value being freed.
pub fn freed<T: FilterValue>(v: &T) {
    T::gauges().sub(v.figures());
}

/// The `INFO bf` fields: `(name, value)`.
pub fn info_fields() -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for (prefix, g, added, lookups, sub) in [
        (
            "bloom",
            &BLOOM_GAUGES,
            &BLOOM_ADDED,
            &BLOOM_LOOKUPS,
            "links",
        ),
        (
            "cuckoo",
            &CUCKOO_GAUGES,
            &CUCKOO_ADDED,
            &CUCKOO_LOOKUPS,
            "subfilters",
        ),
    ] {
        let f = g.read();
        out.push((format!("{prefix}_filters"), f.filters));
        out.push((format!("{prefix}_memory"), f.memory));
        out.push((format!("{prefix}_items"), f.items));
        out.push((format!("{prefix}_{sub}"), f.subfilters));
        out.push((format!("{prefix}_items_added"), added.load(Relaxed) as i64));
        out.push((format!("{prefix}_lookups"), lookups.load(Relaxed) as i64));
    }
    for (reason, c) in REASONS.iter().zip(&REFUSED) {
        out.push((format!("refused_{reason}"), c.load(Relaxed) as i64));
    }
    out
}
