//! RedisBloom 8's configuration names (`bf-error-rate`, …, unprefixed) on servers with
//! unprefixed module configs (Redis 8), asserted per server:
//!
//! - Redis 8: the names work on the command line; a redis.conf (included with
//!   `--include`) setting all eight starts, every value shows under both names (`bf-initial-size` and `bf.bf-initial-size`, one setting)
//!   and applies to auto-created filters (BF.INFO / CF.INFO); CONFIG SET under either name
//!   changes both and keeps RedisBloom 8's ranges (out of range refused; an error rate above
//!   0.25 stored as 0.25, `cf-max-expansions` above 4096 as 4096); ferrobloom's own
//!   settings keep only their `bf.` names;
//! - Redis 7.0 and Valkey: the unprefixed names are unknown (a redis.conf line stops the
//!   server, as for any unknown directive); the `bf.` names work as always.

mod common;

use std::collections::HashMap;

use common::bf::start_with_module_args;
use common::*;
use redis::{Connection, Value};

const SETTINGS: [(&str, &str, &str); 8] = [
    // name, value written, value shown
    ("bf-error-rate", "0.001", "0.001"),
    ("bf-initial-size", "500", "500"),
    ("bf-expansion-factor", "4", "4"),
    ("cf-bucket-size", "4", "4"),
    ("cf-initial-size", "2048", "2048"),
    ("cf-max-iterations", "30", "30"),
    ("cf-expansion-factor", "2", "2"),
    ("cf-max-expansions", "10000", "4096"),
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

fn info(con: &mut Connection, cmd: &str, key: &str) -> HashMap<String, Value> {
    redis::cmd(cmd).arg(key).query(con).unwrap()
}

#[test]
fn redisbloom8_config_names() {
    let probe = Server::start();
    let kind = probe.kind();
    drop(probe);
    if !kind.has_unprefixed_configs() {
        let (status, log) = start_with_module_args(&["--bf-error-rate", "0.001"]);
        assert!(
            !status.success(),
            "{kind:?} started with bf-error-rate:\n{log}"
        );
        let s = Server::builder()
            .args(&["--bf.bf-error-rate", "0.001"])
            .start();
        let mut con = s.conn();
        assert_eq!(
            config_get(&mut con, "bf.bf-error-rate").as_deref(),
            Some("0.001")
        );
        assert_eq!(config_get(&mut con, "bf-error-rate"), None);
        assert!(config_set(&mut con, "bf-initial-size", "5").is_err());
        return;
    }
    // On the command line.
    let s = Server::builder()
        .args(&["--bf-error-rate", "0.002", "--cf-bucket-size", "3"])
        .start();
    let mut con = s.conn();
    assert_eq!(
        config_get(&mut con, "bf.bf-error-rate").as_deref(),
        Some("0.002")
    );
    assert_eq!(config_get(&mut con, "cf-bucket-size").as_deref(), Some("3"));
    drop(s);
    // A redis.conf with every RedisBloom 8 setting.
    let dir = std::env::temp_dir().join(format!("ferrobloom-rb8conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("redisbloom8.conf");
    let text: String = SETTINGS
        .iter()
        .map(|(n, v, _)| format!("{n} {v}\n"))
        .collect();
    std::fs::write(&conf, text).unwrap();
    let s = Server::builder()
        .args(&["--include", conf.to_str().unwrap()])
        .start();
    let _ = std::fs::remove_dir_all(&dir);
    let mut con = s.conn();
    for (name, _, shown) in SETTINGS {
        assert_eq!(config_get(&mut con, name).as_deref(), Some(shown), "{name}");
        assert_eq!(
            config_get(&mut con, &format!("bf.{name}")).as_deref(),
            Some(shown),
            "bf.{name}"
        );
    }
    // They apply to auto-created filters.
    let _: Value = redis::cmd("BF.ADD")
        .arg("b")
        .arg("x")
        .query(&mut con)
        .unwrap();
    let bf = info(&mut con, "BF.INFO", "b");
    assert_eq!(bf["Capacity"], Value::Int(500));
    assert_eq!(bf["Expansion rate"], Value::Int(4));
    let _: Value = redis::cmd("CF.ADD")
        .arg("c")
        .arg("x")
        .query(&mut con)
        .unwrap();
    let cf = info(&mut con, "CF.INFO", "c");
    assert_eq!(cf["Bucket size"], Value::Int(4));
    assert_eq!(cf["Max iterations"], Value::Int(30));
    assert_eq!(cf["Expansion rate"], Value::Int(2));
    assert_eq!(cf["Number of buckets"], Value::Int(512));
    // One setting under two names, RedisBloom 8's ranges.
    config_set(&mut con, "bf.bf-initial-size", "700").unwrap();
    assert_eq!(
        config_get(&mut con, "bf-initial-size").as_deref(),
        Some("700")
    );
    config_set(&mut con, "cf-max-iterations", "40").unwrap();
    assert_eq!(
        config_get(&mut con, "bf.cf-max-iterations").as_deref(),
        Some("40")
    );
    for (name, bad) in [
        ("bf-initial-size", "0"),
        ("bf-initial-size", "1073741825"),
        ("bf-expansion-factor", "32769"),
        ("cf-bucket-size", "256"),
        ("cf-initial-size", "3"),
        ("cf-max-iterations", "65536"),
        ("cf-expansion-factor", "-1"),
        ("cf-max-expansions", "65537"),
        ("bf-error-rate", "0"),
        ("bf-error-rate", "1"),
    ] {
        assert!(config_set(&mut con, name, bad).is_err(), "{name} {bad}");
    }
    config_set(&mut con, "bf-error-rate", "0.5").unwrap();
    assert_eq!(
        config_get(&mut con, "bf-error-rate").as_deref(),
        Some("0.25")
    );
    config_set(&mut con, "cf-max-expansions", "65536").unwrap();
    assert_eq!(
        config_get(&mut con, "cf-max-expansions").as_deref(),
        Some("4096")
    );
    // ferrobloom's own settings keep their prefixed names only.
    for own in [
        "bf-layout",
        "max-item-size",
        "bf-max-links",
        "cf-error-rate",
    ] {
        assert_eq!(config_get(&mut con, own), None, "{own}");
        assert!(
            config_get(&mut con, &format!("bf.{own}")).is_some(),
            "bf.{own}"
        );
    }
    assert!(s
        .info("bf_ferrobloom")
        .get("bf_server_features")
        .is_some_and(|f| f.contains("unprefixed-configs")));
}
