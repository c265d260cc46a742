//! valkey-bloom 1.0's settings, so that a valkey.conf (or module arguments)
//! written for it starts the server with ferrobloom loaded: `bf.bloom-capacity`,
//! `bf.bloom-fp-rate`, `bf.bloom-expansion`, `bf.bloom-tightening-ratio`,
//! `bf.bloom-use-random-seed`, `bf.bloom-memory-usage-limit` and
//! `bf.bloom-defrag-enabled` (docs/migration.md, "From valkey-bloom").
//!
//! Ranges and defaults are valkey-bloom 1.0's (`src/configs.rs` and the
//! `configurations` list of `src/lib.rs` in
//! <https://github.com/valkey-io/valkey-bloom/blob/1.0.0/src/configs.rs>):
//!
//! | setting | valkey-bloom 1.0 | here |
//! |---|---|---|
//! | `bloom-capacity` | 100, [1, i64::MAX] | `bf.bf-initial-size`; above 2^30 stored as 2^30 |
//! | `bloom-expansion` | 2, [0, u32::MAX] (0: non-scaling) | `bf.bf-expansion-factor`; above 32768 stored as 32768 |
//! | `bloom-fp-rate` | "0.01", (0, 1) | `bf.bf-error-rate`; above 0.25 stored as 0.25 |
//! | `bloom-memory-usage-limit` | 128 MiB, [0, i64::MAX] | `bf.max-filter-memory` (default 4 GiB); below 4096 stored as 4096 |
//! | `bloom-tightening-ratio` | "0.5", (0, 1) | its own setting, for filters created without `TIGHTENING` |
//! | `bloom-use-random-seed` | yes | its own setting, default **no**: RedisBloom's unseeded hashing |
//! | `bloom-defrag-enabled` | yes | its own setting ([`defrag_enabled`]) |
//!
//! The aliases share their setting's value: CONFIG GET of either name shows the
//! same value, CONFIG SET of either changes both. Out-of-range values are
//! refused with valkey-bloom's texts (`Invalid floating-point value`,
//! `ERR (0 < error rate range < 1)`, `ERR (0 < tightening ratio range < 1)`;
//! the server's own range error for the integers).

use std::ffi::{CStr, CString};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use redis_module::raw;

use super::{Float, Numeric, BF_ERROR_RATE, BF_EXPANSION, BF_INITIAL_SIZE, MAX_FILTER_MEMORY};
use crate::cmd::parse::{parse_f64, parse_i64};
use crate::redis::load::{BoolConfig, ConfigText, LoadCtx, NumericConfig, StringConfig};
use ferrobloom_core::bloom::{ChainOptions, TIGHTENING_RATIO};

/// An integer setting of valkey-bloom's that is one of ferrobloom's under
/// another name and range: values within valkey-bloom's range are accepted and
/// stored within ferrobloom's (the nearest bound).
struct Alias {
    name: &'static CStr,
    target: &'static Numeric,
    min: i64,
    max: i64,
}

impl Alias {
    fn store(&self, v: i64) {
        self.target.set(v.clamp(self.target.min, self.target.max));
    }
}

static ALIASES: [Alias; 3] = [
    Alias {
        name: c"bloom-capacity",
        target: &BF_INITIAL_SIZE,
        min: 1,
        max: i64::MAX,
    },
    Alias {
        name: c"bloom-expansion",
        target: &BF_EXPANSION,
        min: 0,
        max: u32::MAX as i64,
    },
    Alias {
        name: c"bloom-memory-usage-limit",
        target: &MAX_FILTER_MEMORY,
        min: 0,
        max: i64::MAX,
    },
];

/// `bf.bloom-tightening-ratio`: each new link's error rate is the previous
/// link's times this, for filters created without `TIGHTENING` (0.5 is
/// RedisBloom's fixed ratio).
pub static BF_TIGHTENING: Float = Float::new(
    c"bloom-tightening-ratio",
    0x3FE0000000000000, // 0.5
    1.0,
    false,
);

/// A floating-point setting under valkey-bloom's name, with its range text.
struct FloatAlias {
    name: &'static CStr,
    target: &'static Float,
    range: &'static str,
}

static FLOAT_ALIASES: [FloatAlias; 2] = [
    FloatAlias {
        name: c"bloom-fp-rate",
        target: &BF_ERROR_RATE,
        range: "ERR (0 < error rate range < 1)",
    },
    FloatAlias {
        name: c"bloom-tightening-ratio",
        target: &BF_TIGHTENING,
        range: "ERR (0 < tightening ratio range < 1)",
    },
];

/// `bf.bloom-use-random-seed`: filters created without `SEED` get a random
/// 32-byte seed (valkey-bloom's default is yes; ferrobloom's is no, so that a
/// filter hashes as RedisBloom's and as every filter of ferrobloom's before).
static RANDOM_SEED: AtomicBool = AtomicBool::new(false);
/// `bf.bloom-defrag-enabled`: whether the defrag callbacks move this module's
/// values (default yes, as valkey-bloom).
static DEFRAG_ENABLED: AtomicBool = AtomicBool::new(true);

struct Flag {
    name: &'static CStr,
    value: &'static AtomicBool,
}

static FLAGS: [Flag; 2] = [
    Flag {
        name: c"bloom-use-random-seed",
        value: &RANDOM_SEED,
    },
    Flag {
        name: c"bloom-defrag-enabled",
        value: &DEFRAG_ENABLED,
    },
];

/// Whether active defragmentation may move this module's values
/// (`bf.bloom-defrag-enabled`, valkey-bloom's setting; default yes).
pub fn defrag_enabled() -> bool {
    DEFRAG_ENABLED.load(Relaxed)
}

/// The tightening ratio and seed of a Bloom filter created without
/// `TIGHTENING` or `SEED` by a client's command (`bf.bloom-tightening-ratio`,
/// `bf.bloom-use-random-seed`). Replicated creations spell both out.
pub fn chain_defaults() -> ChainOptions {
    let t = BF_TIGHTENING.get();
    ChainOptions {
        tightening: if t > 0.0 && t < 1.0 {
            t
        } else {
            TIGHTENING_RATIO
        },
        seed: RANDOM_SEED.load(Relaxed).then(random_seed),
    }
}

/// 32 unpredictable bytes: SipHash-1-3 under the process's random keys (the
/// standard library's `RandomState`, seeded from the operating system) over a
/// counter. A seed changes a filter's hashing, so that an attacker who does not
/// know it cannot pick items that collide.
fn random_seed() -> [u8; 32] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let n = COUNTER.fetch_add(1, Relaxed);
    let mut seed = [0u8; 32];
    for (i, part) in seed.chunks_exact_mut(8).enumerate() {
        let mut h = state.build_hasher();
        h.write_u64(n);
        h.write_usize(i);
        part.copy_from_slice(&h.finish().to_le_bytes());
    }
    seed
}

/// A module argument with one of valkey-bloom's names (`bloom-capacity 1000`,
/// as valkey-bloom reads them, or `bf.bloom-capacity 1000`): `None` for
/// another name, else whether the value was valid (and is now set).
pub(super) fn module_arg(lname: &str, value: &[u8]) -> Option<Result<(), ()>> {
    let name = lname.strip_prefix("bf.").unwrap_or(lname);
    if let Some(a) = ALIASES
        .iter()
        .find(|a| a.name.to_bytes() == name.as_bytes())
    {
        return Some(match parse_i64(value) {
            Some(v) if (a.min..=a.max).contains(&v) => {
                a.store(v);
                Ok(())
            }
            _ => Err(()),
        });
    }
    if let Some(f) = FLOAT_ALIASES
        .iter()
        .find(|f| f.name.to_bytes() == name.as_bytes())
    {
        return Some(match f.target.parse(value) {
            Some(v) if super::unusable_rate(f.target, v).is_none() => {
                f.target.bits.store(v.to_bits(), Relaxed);
                Ok(())
            }
            _ => Err(()),
        });
    }
    let flag = FLAGS
        .iter()
        .find(|f| f.name.to_bytes() == name.as_bytes())?;
    Some(match value.to_ascii_lowercase().as_slice() {
        b"yes" | b"true" | b"1" => {
            flag.value.store(true, Relaxed);
            Ok(())
        }
        b"no" | b"false" | b"0" => {
            flag.value.store(false, Relaxed);
            Ok(())
        }
        _ => Err(()),
    })
}

impl NumericConfig for Alias {
    fn get(&self) -> i64 {
        self.target.get()
    }

    fn set(&self, val: i64) -> Result<(), String> {
        if (self.min..=self.max).contains(&val) {
            let v = val.clamp(self.target.min, self.target.max);
            if !self.target.is_default_while_loading(v) {
                self.target.set(v);
            }
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

impl StringConfig for FloatAlias {
    fn text(&self) -> &ConfigText {
        &self.target.text
    }

    fn set(&self, bytes: &[u8]) -> Result<(), String> {
        if parse_f64(bytes).is_none() {
            return Err("Invalid floating-point value".into());
        }
        let Some(v) = self.target.parse(bytes) else {
            return Err(self.range.into());
        };
        if let Some(why) = super::unusable_rate(self.target, v) {
            return Err(why);
        }
        if !self.target.is_default_while_loading(v) {
            self.target.store(v);
        }
        Ok(())
    }
}

impl BoolConfig for Flag {
    fn get(&self) -> bool {
        self.value.load(Relaxed)
    }

    fn set(&self, v: bool) -> Result<(), String> {
        self.value.store(v, Relaxed);
        Ok(())
    }
}

fn registered(ok: bool, name: &CStr) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!(
            "could not register config {}",
            name.to_string_lossy()
        ))
    }
}

/// Registers valkey-bloom's seven settings (`bf.<name>` on every server), with
/// the current values (module arguments may have set them) as defaults.
pub(super) fn register(ctx: LoadCtx) -> Result<(), String> {
    if !ctx.has_config_api() {
        return Err("this Redis has no module configuration API (needs 7.0+)".into());
    }
    for a in &ALIASES {
        let ok = ctx.register_numeric(
            a.name,
            a.target.get(),
            raw::REDISMODULE_CONFIG_DEFAULT,
            (a.min, a.max),
            a,
        );
        registered(ok, a.name)?;
    }
    BF_TIGHTENING.store(BF_TIGHTENING.get());
    for a in &FLOAT_ALIASES {
        let current = CString::new(format!("{}", a.target.get())).unwrap_or_default();
        let ok = ctx.register_string(a.name, &current, raw::REDISMODULE_CONFIG_DEFAULT, a);
        registered(ok, a.name)?;
    }
    for f in &FLAGS {
        let ok = ctx.register_bool(
            f.name,
            f.value.load(Relaxed),
            raw::REDISMODULE_CONFIG_DEFAULT,
            f,
        );
        registered(ok, f.name)?;
    }
    Ok(())
}

/// The valkey-bloom settings as a log line.
pub(super) fn describe() -> String {
    format!(
        "bloom-tightening-ratio {} bloom-use-random-seed {} bloom-defrag-enabled {}",
        BF_TIGHTENING.get(),
        if RANDOM_SEED.load(Relaxed) {
            "yes"
        } else {
            "no"
        },
        if defrag_enabled() { "yes" } else { "no" }
    )
}

/// Module arguments with valkey-bloom's names (called by `config`'s test: the
/// settings are process-wide statics, so their checks run in one sequence).
#[cfg(test)]
pub(super) fn module_args_with_valkey_blooms_names() {
    assert_eq!(module_arg("nope", b"1"), None);
    assert_eq!(module_arg("bloom-capacity", b"0"), Some(Err(())));
    assert_eq!(module_arg("bf.bloom-capacity", b"5000"), Some(Ok(())));
    assert_eq!(BF_INITIAL_SIZE.get(), 5000);
    assert_eq!(
        module_arg("bloom-capacity", b"9223372036854775807"),
        Some(Ok(()))
    );
    assert_eq!(
        BF_INITIAL_SIZE.get(),
        1 << 30,
        "stored within ferrobloom's range"
    );
    assert_eq!(module_arg("bloom-capacity", b"100"), Some(Ok(())));
    assert_eq!(module_arg("bloom-expansion", b"-1"), Some(Err(())));
    assert_eq!(module_arg("bloom-expansion", b"4294967296"), Some(Err(())));
    assert_eq!(module_arg("bloom-memory-usage-limit", b"0"), Some(Ok(())));
    assert_eq!(MAX_FILTER_MEMORY.get(), 4096);
    assert_eq!(
        module_arg("bloom-memory-usage-limit", b"4294967296"),
        Some(Ok(()))
    );
    assert_eq!(module_arg("bloom-fp-rate", b"1"), Some(Err(())));
    assert_eq!(module_arg("bloom-fp-rate", b"abc"), Some(Err(())));
    assert_eq!(module_arg("bloom-tightening-ratio", b"0"), Some(Err(())));
    assert_eq!(module_arg("bloom-tightening-ratio", b"0.7"), Some(Ok(())));
    assert_eq!(chain_defaults().tightening, 0.7);
    assert_eq!(module_arg("bloom-tightening-ratio", b"0.5"), Some(Ok(())));
    assert_eq!(module_arg("bloom-use-random-seed", b"maybe"), Some(Err(())));
    assert_eq!(chain_defaults().seed, None);
    assert_eq!(module_arg("bloom-use-random-seed", b"YES"), Some(Ok(())));
    let (a, b) = (chain_defaults().seed, chain_defaults().seed);
    assert!(a.is_some() && a != b, "a fresh seed each time");
    assert_eq!(module_arg("bloom-use-random-seed", b"no"), Some(Ok(())));
    assert_eq!(module_arg("bloom-defrag-enabled", b"no"), Some(Ok(())));
    assert!(!defrag_enabled());
    assert_eq!(module_arg("bloom-defrag-enabled", b"yes"), Some(Ok(())));
    assert!(defrag_enabled());
}
