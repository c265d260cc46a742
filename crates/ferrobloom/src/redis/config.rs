//! Module configuration: load-time arguments and run-time configs.
//!
//! Redis 7.0 and Valkey name module configs `<module>.<name>`, so RedisBloom 8's
//! `bf-error-rate` is `bf.bf-error-rate` there (CONFIG GET/SET, or a line in
//! redis.conf after `loadmodule`). On servers with unprefixed module configs
//! (Redis 8+), RedisBloom 8's eight settings are registered as RedisBloom 8
//! registers them, unprefixed (`bf-error-rate`), with `bf.bf-error-rate` as an
//! alias of the same setting (Redis 8's `name|alias`), RedisBloom 8's ranges
//! and defaults ([`REDISBLOOM8`]); ferrobloom's own settings keep their `bf.` names. Load-time arguments are RedisBloom's:
//! `ERROR_RATE`, `INITIAL_SIZE`, `CF_MAX_EXPANSIONS` or their 8.x names, in pairs,
//! case-insensitive; they set the initial values of the configs. Anything else
//! (an unknown name, an odd count, a bad or out-of-range value) refuses the load:
//! unlike CONFIG SET, module arguments bypass the server's range checks.
//! valkey-bloom 1.0's settings (`bf.bloom-capacity`, …) are accepted too, as
//! module arguments and configs, most as other names of ferrobloom's own
//! ([`valkey`]).

use std::ffi::{c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

use redis_module::raw;

use super::load::{ConfigText, EnumConfig, LoadCtx, NumericConfig, StringConfig};
use super::server::unprefixed_configs;
use crate::cmd::cf::CuckooDefaults;
use crate::cmd::defaults::{BLOOM, CUCKOO};
use crate::cmd::params::{BloomDefaults, MAX_ERROR_RATE};
use crate::cmd::parse::parse_f64;
use ferrobloom_core::bloom::{BloomLayout, Limits, MAX_CAPACITY, MAX_EXPANSION, MAX_LINKS_CEILING};
use ferrobloom_core::dump::SERVER_DEFAULT_LIMITS;

mod args;
mod valkey;
pub use args::apply_module_args;
// `defrag_enabled`: for the data types' defrag callbacks.
#[allow(unused_imports)]
pub use valkey::defrag_enabled;

/// A numeric config: its value and its Redis-enforced range.
pub struct Numeric {
    pub name: &'static CStr,
    value: AtomicI64,
    min: i64,
    max: i64,
    memory: bool,
    /// RedisBloom 8's upper bound where it is above ferrobloom's (`cf-max-expansions`):
    /// under the unprefixed names, values up to it are accepted and stored as
    /// `max` (as RedisBloom stores error rates above 0.25 as 0.25).
    redisbloom_max: i64,
    /// The value it was registered with (see [`LOADING`]).
    registered: AtomicI64,
}

impl Numeric {
    const fn new(name: &'static CStr, default: i64, min: i64, max: i64) -> Self {
        Numeric {
            name,
            value: AtomicI64::new(default),
            min,
            max,
            memory: false,
            redisbloom_max: max,
            registered: AtomicI64::new(default),
        }
    }
    pub fn get(&self) -> i64 {
        self.value.load(Relaxed)
    }
    fn set(&self, v: i64) {
        self.value.store(v, Relaxed);
    }
    /// While the configs load, setting the registered value again is a no-op
    /// ([`LOADING`]).
    fn is_default_while_loading(&self, v: i64) -> bool {
        LOADING.load(Relaxed) && v == self.registered.load(Relaxed)
    }
}

/// True while `RedisModule_LoadConfigs` applies redis.conf's lines: the server
/// then also sets every config the file does not name to its registered
/// default. A setting with two names (RedisBloom 8's or valkey-bloom's and
/// ferrobloom's) would take the default of the name the file does not use,
/// after or before the value of the one it does; so while loading, a value
/// equal to the registered one (the value before loading) changes nothing.
static LOADING: AtomicBool = AtomicBool::new(false);

pub static BF_INITIAL_SIZE: Numeric = Numeric::new(
    c"bf-initial-size",
    BLOOM.capacity as i64,
    1,
    MAX_CAPACITY as i64,
);
pub static BF_EXPANSION: Numeric = Numeric::new(
    c"bf-expansion-factor",
    BLOOM.expansion as i64,
    0,
    MAX_EXPANSION as i64,
);
pub static BF_MAX_LINKS: Numeric = Numeric::new(
    c"bf-max-links",
    SERVER_DEFAULT_LIMITS.max_links as i64,
    1,
    MAX_LINKS_CEILING as i64,
);
pub static CF_BUCKET_SIZE: Numeric =
    Numeric::new(c"cf-bucket-size", CUCKOO.bucket_size as i64, 1, 255);
pub static CF_INITIAL_SIZE: Numeric = Numeric::new(
    c"cf-initial-size",
    CUCKOO.capacity as i64,
    4,
    MAX_CAPACITY as i64,
);
pub static CF_MAX_ITERATIONS: Numeric =
    Numeric::new(c"cf-max-iterations", CUCKOO.max_iterations as i64, 1, 65535);
pub static CF_EXPANSION: Numeric = Numeric::new(
    c"cf-expansion-factor",
    CUCKOO.expansion as i64,
    0,
    MAX_EXPANSION as i64,
);
/// At most 4096: a lookup probes every sub-filter (two buckets each), about 4-16 ns a
/// sub-filter when the tables are cached and up to ~0.1 µs when not, so one lookup stays
/// under about 1 ms even for the largest filter (RedisBloom allows 65536).
pub static CF_MAX_EXPANSIONS: Numeric = Numeric {
    redisbloom_max: 65536,
    ..Numeric::new(
        c"cf-max-expansions",
        SERVER_DEFAULT_LIMITS.max_filters as i64,
        1,
        4096,
    )
};

/// RedisBloom 8's settings (its `src/config.c`: registered with
/// `REDISMODULE_CONFIG_UNPREFIXED`, defaults 0.01, 100, 2, 2, 1024, 20, 1, 32 and
/// ranges (0, 1) capped at 0.25, [1, 2^30], [0, 32768], [1, 255], [4, 2^30],
/// [1, 65535], [0, 32768], [1, 65536]: ferrobloom's, but for `cf-max-expansions`,
/// whose values above 4096 are stored as 4096). On servers with unprefixed
/// module configs these are their primary names, `bf.<name>` their alias.
pub const REDISBLOOM8: [&str; 8] = [
    "bf-error-rate",
    "bf-initial-size",
    "bf-expansion-factor",
    "cf-bucket-size",
    "cf-initial-size",
    "cf-max-iterations",
    "cf-expansion-factor",
    "cf-max-expansions",
];

/// The name a config is registered under and the flag that goes with it:
/// `bf-error-rate|bf.bf-error-rate` unprefixed for RedisBloom 8's settings on
/// servers that have unprefixed configs, else the plain name (prefixed `bf.`
/// by the server).
fn registered_name(name: &CStr) -> (CString, u32) {
    let plain = name.to_string_lossy();
    if unprefixed_configs() && REDISBLOOM8.contains(&plain.as_ref()) {
        if let Ok(both) = CString::new(format!("{plain}|bf.{plain}")) {
            return (both, raw::REDISMODULE_CONFIG_UNPREFIXED);
        }
    }
    (name.to_owned(), 0)
}
/// Per-filter memory cap in bytes (a memory config: accepts `4gb` and the like).
pub static MAX_FILTER_MEMORY: Numeric = Numeric {
    memory: true,
    ..Numeric::new(
        c"max-filter-memory",
        SERVER_DEFAULT_LIMITS.max_bytes as i64,
        4096,
        i64::MAX,
    )
};

/// Longest item any command accepts, in bytes (a memory config).
pub static MAX_ITEM_SIZE: Numeric = Numeric {
    memory: true,
    ..Numeric::new(c"max-item-size", 1 << 20, 1, 512 << 20)
};

/// Most bytes one BF.MERGE may touch (the sources' bit arrays plus the
/// result's; a memory config). The default keeps the worst case under 100 ms of
/// server time: see docs/performance.md, "BF.MERGE".
pub static MERGE_MAX_BYTES: Numeric = Numeric {
    memory: true,
    ..Numeric::new(c"merge-max-bytes", 64 << 20, 1, i64::MAX)
};

/// Most bytes a BF.MERGE may touch; none for trusted writes (replication and
/// AOF replay apply what the primary accepted).
pub fn merge_max_bytes(trusted: bool) -> u64 {
    if trusted {
        u64::MAX
    } else {
        MERGE_MAX_BYTES.get() as u64
    }
}

static NUMERICS: [&Numeric; 11] = [
    &BF_INITIAL_SIZE,
    &BF_EXPANSION,
    &BF_MAX_LINKS,
    &CF_BUCKET_SIZE,
    &CF_INITIAL_SIZE,
    &CF_MAX_ITERATIONS,
    &CF_EXPANSION,
    &CF_MAX_EXPANSIONS,
    &MAX_FILTER_MEMORY,
    &MAX_ITEM_SIZE,
    &MERGE_MAX_BYTES,
];

/// A floating-point config, registered as a string config (module configs have
/// no floating type). Values are in (0, 1), above `clamp` stored as `clamp`;
/// `zero_ok` also admits 0 (meaning "not set").
pub struct Float {
    pub name: &'static CStr,
    bits: AtomicU64,
    /// The string CONFIG GET shows.
    text: ConfigText,
    clamp: f64,
    zero_ok: bool,
    /// The value it was registered with, as bits (see [`LOADING`]).
    registered: AtomicU64,
}

impl Float {
    const fn new(name: &'static CStr, default_bits: u64, clamp: f64, zero_ok: bool) -> Self {
        Float {
            name,
            bits: AtomicU64::new(default_bits),
            text: ConfigText::new(),
            clamp,
            zero_ok,
            registered: AtomicU64::new(default_bits),
        }
    }

    /// As [`Numeric::is_default_while_loading`].
    fn is_default_while_loading(&self, v: f64) -> bool {
        LOADING.load(Relaxed) && v.to_bits() == self.registered.load(Relaxed)
    }

    pub fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Relaxed))
    }

    /// Parses and validates a value (the clamp applies).
    fn parse(&self, b: &[u8]) -> Option<f64> {
        parse_f64(b)
            .filter(|v| (*v > 0.0 || (self.zero_ok && *v == 0.0)) && *v < 1.0)
            .map(|v| v.min(self.clamp))
    }

    fn store(&self, v: f64) {
        self.bits.store(v.to_bits(), Relaxed);
        self.text.store(&short_float(v));
    }
}

/// The shortest text that reads back as `v`, without 300 digits for tiny
/// values (`1e-300`, `0.01`).
pub fn short_float(v: f64) -> String {
    if v == 0.0 || v >= 1e-4 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// Why a parsed error rate cannot serve as a default: every auto-created
/// filter would fail. `None` when it can.
fn unusable_rate(f: &Float, v: f64) -> Option<String> {
    let name = f.name.to_string_lossy();
    if !std::ptr::eq(f, &BF_ERROR_RATE) && !std::ptr::eq(f, &CF_ERROR_RATE) {
        return None;
    }
    if std::ptr::eq(f, &BF_ERROR_RATE) {
        // A scaling filter's first link has half the rate (the stricter case).
        if ferrobloom_core::bloom::LinkShape::new(1, v * 0.5).is_err() {
            return Some(format!(
                "Value for `{name}` is too small: a filter would need more than {} hash functions",
                ferrobloom_core::bloom::MAX_HASHES
            ));
        }
    } else if v > 0.0 {
        let b = CF_BUCKET_SIZE.get().clamp(1, 255) as u8;
        if ferrobloom_core::cuckoo::fp_bits_for_error(v, b).is_none() {
            return Some(format!(
                "Value for `{name}` is too small even for 32-bit fingerprints at bucket size {b}"
            ));
        }
    }
    None
}

/// Default error rate of auto-created Bloom filters.
pub static BF_ERROR_RATE: Float = Float::new(
    c"bf-error-rate",
    BLOOM.error.to_bits(),
    MAX_ERROR_RATE,
    false,
);
/// Default error rate of cuckoo filters; 0 = RedisBloom's 8-bit fingerprints.
pub static CF_ERROR_RATE: Float = Float::new(
    c"cf-error-rate",
    match CUCKOO.error {
        Some(e) => e.to_bits(),
        None => 0,
    },
    1.0,
    true,
);
static FLOATS: [&Float; 2] = [&BF_ERROR_RATE, &CF_ERROR_RATE];

pub fn bf_error_rate() -> f64 {
    BF_ERROR_RATE.get()
}

/// `bf.bf-layout`: the bit layout of new Bloom filters (an enum config; the
/// value is the layout's header code).
static BF_LAYOUT: AtomicI64 = AtomicI64::new(LAYOUT_DEFAULT.code() as i64);
const LAYOUT_DEFAULT: BloomLayout = BLOOM.layout;

pub fn bf_layout() -> BloomLayout {
    BloomLayout::from_code(BF_LAYOUT.load(Relaxed) as u8).unwrap_or(LAYOUT_DEFAULT)
}

/// Defaults for BF commands that do not say. `client`: a client's command
/// (a replicated or replayed creation spells out its tightening and seed, so
/// those defaults stay RedisBloom's for it).
pub fn bloom_defaults(client: bool) -> BloomDefaults {
    BloomDefaults {
        error: bf_error_rate(),
        capacity: BF_INITIAL_SIZE.get() as u64,
        expansion: BF_EXPANSION.get() as u32,
        layout: bf_layout(),
        opts: if client {
            valkey::chain_defaults()
        } else {
            ferrobloom_core::bloom::ChainOptions::REDISBLOOM
        },
    }
}

/// Defaults for CF commands that do not say.
pub fn cuckoo_defaults() -> CuckooDefaults {
    let e = CF_ERROR_RATE.get();
    CuckooDefaults {
        capacity: CF_INITIAL_SIZE.get() as u64,
        bucket_size: CF_BUCKET_SIZE.get() as u8,
        max_iterations: CF_MAX_ITERATIONS.get() as u16,
        expansion: CF_EXPANSION.get() as u32,
        error: (e > 0.0).then_some(e),
        redisbloom: CF_LAYOUT.load(Relaxed) == CF_LAYOUT_REDISBLOOM,
    }
}

/// Longest accepted item; none for trusted writes (loading, replication), so a
/// lowered limit never refuses what the primary or the AOF already accepted.
pub fn max_item_bytes(trusted: bool) -> u64 {
    if trusted {
        u64::MAX
    } else {
        MAX_ITEM_SIZE.get() as u64
    }
}

/// Per-filter memory cap in bytes; none for trusted writes (see `Ctx::trusted`).
pub fn max_filter_bytes(trusted: bool) -> u64 {
    if trusted {
        u64::MAX
    } else {
        MAX_FILTER_MEMORY.get() as u64
    }
}

/// Per-filter bounds: the configured ones for client commands, only the hard
/// ceilings for trusted writes (loading, replication stream).
pub fn bloom_limits(trusted: bool) -> Limits {
    Limits {
        max_bytes: max_filter_bytes(trusted),
        max_links: if trusted {
            MAX_LINKS_CEILING
        } else {
            BF_MAX_LINKS.get() as u32
        },
        max_filters: cf_max_filters(trusted),
    }
}

/// Most sub-filters a cuckoo filter may grow to (the core's own ceiling still
/// applies to trusted writes).
pub fn cf_max_filters(trusted: bool) -> u32 {
    if trusted {
        u32::MAX
    } else {
        CF_MAX_EXPANSIONS.get() as u32
    }
}

impl NumericConfig for Numeric {
    fn get(&self) -> i64 {
        Numeric::get(self)
    }

    fn set(&self, val: i64) -> Result<(), String> {
        if self.is_default_while_loading(val) {
            Ok(())
        } else if (self.min..=self.max).contains(&val) {
            Numeric::set(self, val);
            Ok(())
        } else if val > self.max && val <= self.redisbloom_max && unprefixed_configs() {
            Numeric::set(self, self.max);
            Ok(())
        } else {
            Err(format!(
                "Value for `{}` must be in the range [{}, {}]",
                self.name.to_string_lossy(),
                self.min,
                self.max
            ))
        }
    }
}

impl StringConfig for Float {
    fn text(&self) -> &ConfigText {
        &self.text
    }

    fn set(&self, bytes: &[u8]) -> Result<(), String> {
        let name = self.name.to_string_lossy();
        if parse_f64(bytes).is_none() {
            return Err(format!("Invalid value for `{name}`"));
        }
        match self.parse(bytes) {
            Some(v) => {
                if let Some(why) = unusable_rate(self, v) {
                    return Err(why);
                }
                if !self.is_default_while_loading(v) {
                    self.store(v);
                }
                Ok(())
            }
            None => Err(format!(
                "Value for `{name}` must be in the range {}0.000000, 1.000000)",
                if self.zero_ok { "[" } else { "(" }
            )),
        }
    }
}

/// `bf.cf-layout`: `ferrobloom` (0) or `redisbloom` (1) for new cuckoo filters.
static CF_LAYOUT: AtomicI64 = AtomicI64::new(CUCKOO.redisbloom as i64);
const CF_LAYOUT_REDISBLOOM: i64 = 1;

/// The `bf.cf-layout` enum config.
struct CfLayout;

impl EnumConfig for CfLayout {
    fn get(&self) -> c_int {
        CF_LAYOUT.load(Relaxed) as c_int
    }

    fn set(&self, val: c_int) -> Result<(), String> {
        if val == 0 || i64::from(val) == CF_LAYOUT_REDISBLOOM {
            CF_LAYOUT.store(i64::from(val), Relaxed);
            Ok(())
        } else {
            Err("Invalid value for `cf-layout`".into())
        }
    }
}

/// The `bf.bf-layout` enum config.
struct BfLayout;

impl EnumConfig for BfLayout {
    fn get(&self) -> c_int {
        BF_LAYOUT.load(Relaxed) as c_int
    }

    fn set(&self, val: c_int) -> Result<(), String> {
        // Redis only passes values from the registered list; check anyway.
        match u8::try_from(val).ok().and_then(BloomLayout::from_code) {
            Some(l) => {
                BF_LAYOUT.store(i64::from(l.code()), Relaxed);
                Ok(())
            }
            None => Err("Invalid value for `bf-layout`".into()),
        }
    }
}

/// Registers an enum config (`values`: name and value of each choice).
fn register_enum<T: EnumConfig>(
    ctx: LoadCtx,
    name: &CStr,
    default: c_int,
    values: &[(&CStr, u8)],
    config: &'static T,
) -> Result<(), String> {
    if !ctx.has_config_api() {
        return Err("this Redis has no module configuration API (needs 7.0+)".into());
    }
    let values: Vec<(&CStr, c_int)> = values.iter().map(|(n, v)| (*n, c_int::from(*v))).collect();
    if !ctx.register_enum(
        name,
        default,
        raw::REDISMODULE_CONFIG_DEFAULT,
        &values,
        config,
    ) {
        return Err(format!(
            "could not register config {}",
            name.to_string_lossy()
        ));
    }
    Ok(())
}

/// Registers every config (with the current values, which module arguments may
/// have set, as defaults) and applies the `bf.*` lines of redis.conf.
pub fn register(ctx: LoadCtx) -> Result<(), String> {
    for n in NUMERICS {
        n.registered.store(n.get(), Relaxed);
    }
    for f in FLOATS.iter().copied().chain([&valkey::BF_TIGHTENING]) {
        f.registered.store(f.get().to_bits(), Relaxed);
    }
    LOADING.store(true, Relaxed);
    let done = register_all(ctx);
    LOADING.store(false, Relaxed);
    done?;
    ctx.log(
        c"notice",
        &format!(
            "ferrobloom configs: bf-layout {} bf-error-rate {} bf-initial-size {} bf-expansion-factor {} bf-max-links {} max-filter-memory {} max-item-size {} merge-max-bytes {} cf-max-expansions {} cf-error-rate {} {}",
            bf_layout().name(),
            bf_error_rate(),
            BF_INITIAL_SIZE.get(),
            BF_EXPANSION.get(),
            BF_MAX_LINKS.get(),
            MAX_FILTER_MEMORY.get(),
            MAX_ITEM_SIZE.get(),
            MERGE_MAX_BYTES.get(),
            CF_MAX_EXPANSIONS.get(),
            CF_ERROR_RATE.get(),
            valkey::describe()
        ),
    );
    Ok(())
}

/// Registers every config and loads redis.conf's lines for them.
fn register_all(ctx: LoadCtx) -> Result<(), String> {
    if !ctx.has_config_api() {
        return Err("this Redis has no module configuration API (needs 7.0+)".into());
    }
    for n in NUMERICS {
        let (name, unprefixed) = registered_name(n.name);
        let flags = if n.memory {
            raw::REDISMODULE_CONFIG_MEMORY
        } else {
            raw::REDISMODULE_CONFIG_DEFAULT
        };
        let max = if unprefixed != 0 {
            n.max.max(n.redisbloom_max)
        } else {
            n.max
        };
        if !ctx.register_numeric(&name, n.get(), flags | unprefixed, (n.min, max), n) {
            return Err(format!(
                "could not register config {}",
                n.name.to_string_lossy()
            ));
        }
    }
    for f in FLOATS {
        let (name, unprefixed) = registered_name(f.name);
        let current = CString::new(format!("{}", f.get())).unwrap_or_default();
        f.store(f.get());
        if !ctx.register_string(
            &name,
            &current,
            raw::REDISMODULE_CONFIG_DEFAULT | unprefixed,
            f,
        ) {
            return Err(format!(
                "could not register config {}",
                f.name.to_string_lossy()
            ));
        }
    }
    register_enum(
        ctx,
        c"bf-layout",
        BfLayout.get(),
        &[
            (c"classic", BloomLayout::Classic.code()),
            (c"blocked", BloomLayout::Blocked.code()),
            (c"paired", BloomLayout::Paired.code()),
            (c"redisbloom", BloomLayout::RedisBloom.code()),
        ],
        &BfLayout,
    )?;
    register_enum(
        ctx,
        c"cf-layout",
        0,
        &[
            (c"ferrobloom", 0),
            (c"redisbloom", CF_LAYOUT_REDISBLOOM as u8),
        ],
        &CfLayout,
    )?;
    valkey::register(ctx)?;
    if !ctx.load_configs() {
        return Err("could not apply the module's configs from redis.conf".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
