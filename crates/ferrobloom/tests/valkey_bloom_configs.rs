//! valkey-bloom 1.0's settings (`bf.bloom-capacity`, `bf.bloom-fp-rate`,
//! `bf.bloom-expansion`, `bf.bloom-tightening-ratio`, `bf.bloom-use-random-seed`,
//! `bf.bloom-memory-usage-limit`, `bf.bloom-defrag-enabled`), on every server:
//!
//! - a server started with them as module arguments (valkey-bloom's bare names
//!   or `bf.` ones) or in a config file starts, and shows them;
//! - the four that are ferrobloom's own settings under another name show the
//!   same value under both names, whichever was set; the others have
//!   valkey-bloom's defaults, but `bloom-use-random-seed` (no) and
//!   `bloom-memory-usage-limit`, which is `bf.max-filter-memory` (4 GiB);
//! - CONFIG SET refuses what valkey-bloom refuses, with its texts, and stores
//!   values valkey-bloom accepts beyond ferrobloom's ranges at the nearest bound;
//! - creation uses them (capacity, error rate, expansion, tightening, a random
//!   seed per filter, the memory limit), a replica builds the same filters
//!   whatever its own settings, and RedisBloom's layout and windowed filters
//!   keep RedisBloom's tightening and no seed.

mod common;

use std::collections::HashMap;

use common::bf::*;
use common::*;
use redis::{Connection, Value};

/// valkey-bloom's name, a value, ferrobloom's name for the same setting, the
/// value shown.
const SETTINGS: [(&str, &str, Option<&str>, &str); 7] = [
    ("bloom-capacity", "500", Some("bf-initial-size"), "500"),
    ("bloom-fp-rate", "0.001", Some("bf-error-rate"), "0.001"),
    ("bloom-expansion", "4", Some("bf-expansion-factor"), "4"),
    ("bloom-tightening-ratio", "0.7", None, "0.7"),
    ("bloom-use-random-seed", "yes", None, "yes"),
    (
        "bloom-memory-usage-limit",
        "134217728",
        Some("max-filter-memory"),
        "134217728",
    ),
    ("bloom-defrag-enabled", "no", None, "no"),
];

/// The defaults: valkey-bloom's, but the two that are ferrobloom's.
const DEFAULTS: [(&str, &str); 7] = [
    ("bloom-capacity", "100"),
    ("bloom-fp-rate", "0.01"),
    ("bloom-expansion", "2"),
    ("bloom-tightening-ratio", "0.5"),
    ("bloom-use-random-seed", "no"),
    ("bloom-memory-usage-limit", "4294967296"),
    ("bloom-defrag-enabled", "yes"),
];

fn config_get(con: &mut Connection, name: &str) -> Option<String> {
    let v: HashMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query(con)
        .unwrap();
    v.get(name).cloned()
}

fn config_set(con: &mut Connection, name: &str, value: &str) -> Result<(), String> {
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query::<()>(con)
        .map_err(|e| err_text::<()>(Err(e)))
}

/// Both names of every setting show `shown`.
fn assert_shown(con: &mut Connection, how: &str) {
    for (name, _, ours, shown) in SETTINGS {
        let v = format!("bf.{name}");
        assert_eq!(config_get(con, &v).as_deref(), Some(shown), "{how}: {v}");
        if let Some(o) = ours {
            let o = format!("bf.{o}");
            assert_eq!(config_get(con, &o).as_deref(), Some(shown), "{how}: {o}");
        }
    }
}

#[test]
fn module_args_and_config_files_with_valkey_blooms_names_start() {
    // Module arguments as valkey-bloom reads them (bare names), and `bf.` ones.
    for prefix in ["", "bf."] {
        let args: Vec<String> = SETTINGS
            .iter()
            .flat_map(|(n, v, _, _)| [format!("{prefix}{n}"), v.to_string()])
            .collect();
        let s = Server::builder().module_args(&args).start();
        assert_shown(&mut s.conn(), &format!("module args {prefix}"));
    }
    // Bad values refuse the load, as valkey-bloom's do.
    for (name, bad) in [
        ("bloom-capacity", "0"),
        ("bloom-expansion", "-1"),
        ("bloom-fp-rate", "1"),
        ("bloom-tightening-ratio", "0"),
        ("bloom-memory-usage-limit", "-1"),
    ] {
        let (status, log) = start_with_module_args(&[name, bad]);
        assert!(!status.success(), "{name} {bad} started:\n{log}");
    }
    // A config file (valkey.conf / redis.conf) naming all seven.
    let dir = std::env::temp_dir().join(format!("ferrobloom-vbconf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("valkey-bloom.conf");
    let text: String = SETTINGS
        .iter()
        .map(|(n, v, _, _)| format!("bf.{n} {v}\n"))
        .collect();
    std::fs::write(&conf, text).unwrap();
    let s = Server::builder()
        .args(&["--include", conf.to_str().unwrap()])
        .start();
    let _ = std::fs::remove_dir_all(&dir);
    let mut con = s.conn();
    assert_shown(&mut con, "config file");
    drop(con);
    drop(s);
    // A file naming only ferrobloom's names: valkey-bloom's show the same
    // values (the server also applies the defaults of the names a file does
    // not use; those change nothing).
    let dir = std::env::temp_dir().join(format!("ferrobloom-fbconf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("ferrobloom.conf");
    let own = [
        ("bf-initial-size", "bloom-capacity", "700"),
        ("bf-error-rate", "bloom-fp-rate", "0.003"),
        ("bf-expansion-factor", "bloom-expansion", "3"),
        ("max-filter-memory", "bloom-memory-usage-limit", "1048576"),
    ];
    let text: String = own
        .iter()
        .map(|(n, _, v)| format!("bf.{n} {v}\n"))
        .collect();
    std::fs::write(&conf, text).unwrap();
    let s = Server::builder()
        .args(&["--include", conf.to_str().unwrap()])
        .start();
    let _ = std::fs::remove_dir_all(&dir);
    let mut con = s.conn();
    for (ours, theirs, v) in own {
        for n in [ours, theirs] {
            let n = format!("bf.{n}");
            assert_eq!(config_get(&mut con, &n).as_deref(), Some(v), "{n}");
        }
    }
    drop(con);
    drop(s);
    // And the defaults.
    let s = Server::start();
    let mut con = s.conn();
    for (name, want) in DEFAULTS {
        assert_eq!(
            config_get(&mut con, &format!("bf.{name}")).as_deref(),
            Some(want),
            "{name}"
        );
    }
}

#[test]
fn config_set_under_either_name_with_valkey_blooms_ranges() {
    let s = Server::start();
    let mut con = s.conn();
    // One setting, two names.
    for (name, _, ours, _) in SETTINGS {
        let Some(ours) = ours else { continue };
        let (v, o) = (format!("bf.{name}"), format!("bf.{ours}"));
        let before = config_get(&mut con, &o).unwrap();
        let value = if name == "bloom-fp-rate" {
            "0.002"
        } else {
            "8192"
        };
        config_set(&mut con, &v, value).unwrap();
        assert_eq!(config_get(&mut con, &o).as_deref(), Some(value), "{o}");
        config_set(&mut con, &o, &before).unwrap();
        assert_eq!(config_get(&mut con, &v), Some(before), "{v}");
    }
    // What valkey-bloom refuses.
    for (name, bad) in [
        ("bloom-capacity", "0"),
        ("bloom-capacity", "-5"),
        ("bloom-capacity", "abc"),
        ("bloom-expansion", "-1"),
        ("bloom-expansion", "4294967296"),
        ("bloom-memory-usage-limit", "-1"),
        ("bloom-use-random-seed", "maybe"),
        ("bloom-defrag-enabled", "2"),
    ] {
        assert!(
            config_set(&mut con, &format!("bf.{name}"), bad).is_err(),
            "{name} {bad}"
        );
    }
    for (name, bad, why) in [
        ("bloom-fp-rate", "abc", "Invalid floating-point value"),
        ("bloom-fp-rate", "0", "ERR (0 < error rate range < 1)"),
        ("bloom-fp-rate", "1", "ERR (0 < error rate range < 1)"),
        ("bloom-fp-rate", "-0.5", "ERR (0 < error rate range < 1)"),
        (
            "bloom-tightening-ratio",
            "x",
            "Invalid floating-point value",
        ),
        (
            "bloom-tightening-ratio",
            "0",
            "ERR (0 < tightening ratio range < 1)",
        ),
        (
            "bloom-tightening-ratio",
            "1",
            "ERR (0 < tightening ratio range < 1)",
        ),
    ] {
        let n = format!("bf.{name}");
        assert_eq!(
            config_set(&mut con, &n, bad),
            Err(config_failed(&n, why)),
            "{name} {bad}"
        );
    }
    for (name, _) in DEFAULTS {
        let n = format!("bf.{name}");
        let want = DEFAULTS.iter().find(|d| d.0 == name).unwrap().1;
        assert_eq!(config_get(&mut con, &n).as_deref(), Some(want), "{n}");
    }
    // What valkey-bloom accepts beyond ferrobloom's ranges: the nearest bound.
    for (name, value, shown) in [
        ("bloom-capacity", "9223372036854775807", "1073741824"),
        ("bloom-expansion", "4294967295", "32768"),
        ("bloom-memory-usage-limit", "0", "4096"),
        (
            "bloom-memory-usage-limit",
            "9223372036854775807",
            "9223372036854775807",
        ),
        ("bloom-fp-rate", "0.9", "0.25"),
        ("bloom-tightening-ratio", "0.999", "0.999"),
    ] {
        let n = format!("bf.{name}");
        config_set(&mut con, &n, value).unwrap();
        assert_eq!(config_get(&mut con, &n).as_deref(), Some(shown), "{n}");
    }
    for (name, value) in DEFAULTS {
        config_set(&mut con, &format!("bf.{name}"), value).unwrap();
    }
    config_set(&mut con, "bf.bloom-use-random-seed", "yes").unwrap();
    assert_eq!(
        config_get(&mut con, "bf.bloom-use-random-seed").as_deref(),
        Some("yes")
    );
    config_set(&mut con, "bf.bloom-defrag-enabled", "no").unwrap();
    assert_eq!(
        config_get(&mut con, "bf.bloom-defrag-enabled").as_deref(),
        Some("no")
    );
}

/// A double single-field reply of BF.INFO, either protocol.
fn info_f64(con: &mut Connection, key: &str, field: &str) -> f64 {
    let inner = match rawv(con, &["BF.INFO", key, field]) {
        Value::Array(a) if a.len() == 1 => a.into_iter().next().unwrap(),
        Value::Map(m) if m.len() == 1 => m.into_iter().next().unwrap().1,
        other => panic!("BF.INFO {key} {field}: {}", show(&other)),
    };
    redis::from_redis_value(inner).unwrap()
}

fn digest(con: &mut Connection, key: &str) -> String {
    qv(con, &["DEBUG", "DIGEST-VALUE", key])
}

#[test]
fn creation_uses_valkey_blooms_settings_and_replicas_agree() {
    let s = Server::start();
    let mut con = s.conn();
    let r = Server::builder().replica_of(&s).start();
    s.wait_for_sync(&r);
    let mut rcon = r.conn();
    // The replica's own settings differ: it builds the primary's filters anyway.
    config_set(&mut rcon, "bf.bloom-tightening-ratio", "0.9").unwrap();
    config_set(&mut rcon, "bf.bloom-use-random-seed", "no").unwrap();
    for (name, value, _, _) in SETTINGS {
        if name != "bloom-memory-usage-limit" {
            config_set(&mut con, &format!("bf.{name}"), value).unwrap();
        }
    }
    let items = numbered("i", 3000);
    // Auto-created by BF.ADD / BF.MADD / BF.INSERT, and reserved without options.
    let _ = rawv(&mut con, &with_items("BF.MADD madd", &items));
    let _ = rawv(&mut con, &with_items("BF.INSERT insert ITEMS", &items));
    okv(&mut con, &["BF.RESERVE", "reserve", "0.01", "1000"]);
    let _ = rawv(&mut con, &with_items("BF.MADD reserve", &items));
    assert_eq!(int(&mut con, "BF.ADD add x"), 1);
    // Links of 500, 2000 and 8000 items (capacity 500, expansion 4).
    for (key, capacity) in [("madd", 10_500), ("insert", 10_500), ("add", 500)] {
        assert_eq!(
            info_f64(&mut con, key, "CAPACITY"),
            capacity as f64,
            "{key}"
        );
        assert_eq!(info_f64(&mut con, key, "EXPANSION"), 4.0, "{key}");
        assert_eq!(info_f64(&mut con, key, "ERROR"), 0.001, "{key}");
    }
    for key in ["madd", "insert", "add", "reserve"] {
        assert_eq!(info_f64(&mut con, key, "TIGHTENING"), 0.7, "{key}");
    }
    assert_eq!(info_f64(&mut con, "madd", "FILTERS"), 3.0);
    // A random seed per filter: the same items set other bits.
    let _ = rawv(&mut con, &with_items("BF.MADD madd2", &items));
    assert_ne!(digest(&mut con, "madd"), digest(&mut con, "madd2"));
    // Given options win: TIGHTENING 0.5 and a SEED.
    let seed = "0123456789abcdef0123456789abcdef";
    okv(
        &mut con,
        &[
            "BF.RESERVE",
            "given",
            "0.01",
            "100",
            "TIGHTENING",
            "0.5",
            "SEED",
            seed,
        ],
    );
    okv(
        &mut con,
        &[
            "BF.RESERVE",
            "given2",
            "0.01",
            "100",
            "TIGHTENING",
            "0.5",
            "SEED",
            seed,
        ],
    );
    assert_eq!(info_f64(&mut con, "given", "TIGHTENING"), 0.5);
    assert_eq!(digest(&mut con, "given"), digest(&mut con, "given2"));
    // RedisBloom's layout and windowed filters have no place for them.
    okv(
        &mut con,
        &["BF.RESERVE", "rb", "0.01", "100", "LAYOUT", "redisbloom"],
    );
    okv(
        &mut con,
        &["BF.RESERVE", "rb2", "0.01", "100", "LAYOUT", "redisbloom"],
    );
    assert_eq!(info_f64(&mut con, "rb", "TIGHTENING"), 0.5);
    assert_eq!(digest(&mut con, "rb"), digest(&mut con, "rb2"));
    okv(
        &mut con,
        &["BF.RESERVE", "w", "0.01", "100", "WINDOW", "60"],
    );
    assert_eq!(int(&mut con, "BF.ADD w x"), 1);
    config_set(&mut con, "bf.bf-layout", "redisbloom").unwrap();
    assert_eq!(int(&mut con, "BF.ADD rbadd x"), 1);
    config_set(&mut con, "bf.bf-layout", "classic").unwrap();
    // The memory limit applies to creation.
    config_set(&mut con, "bf.bloom-memory-usage-limit", "65536").unwrap();
    assert_eq!(
        errv(&mut con, &["BF.RESERVE", "huge", "0.001", "1000000"]),
        "ERR Insufficient memory to create filter"
    );
    config_set(&mut con, "bf.bloom-memory-usage-limit", "4294967296").unwrap();
    // The replica holds the same filters.
    s.wait_for_offset(&r);
    for key in [
        "madd", "madd2", "insert", "reserve", "add", "given", "rb", "w", "rbadd",
    ] {
        assert_eq!(digest(&mut rcon, key), digest(&mut con, key), "{key}");
    }
    assert_eq!(int(&mut rcon, "EXISTS huge"), 0);
    // Back to the defaults: filters hash as RedisBloom's again.
    config_set(&mut con, "bf.bloom-use-random-seed", "no").unwrap();
    config_set(&mut con, "bf.bloom-tightening-ratio", "0.5").unwrap();
    for key in ["p1", "p2"] {
        okv(&mut con, &["BF.RESERVE", key, "0.01", "100"]);
        let _ = rawv(
            &mut con,
            &with_items(&format!("BF.MADD {key}"), &items[..50]),
        );
    }
    assert_eq!(digest(&mut con, "p1"), digest(&mut con, "p2"));
    assert_eq!(info_f64(&mut con, "p1", "TIGHTENING"), 0.5);
}
