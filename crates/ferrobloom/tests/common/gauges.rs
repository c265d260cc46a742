//! The `INFO bf` gauges and the same figures recomputed from the keyspace
//! (`crates/ferrobloom/tests/servers.rs`, the cluster's slot migration, async replica loading).

use std::collections::HashMap;

use redis::{Connection, Value};

use super::Server;

/// The `INFO bf` gauges.
pub fn gauges(s: &Server) -> HashMap<String, i64> {
    s.info("bf_ferrobloom")
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("bf_")?.to_string(), v.parse().ok()?)))
        .collect()
}

/// The same figures summed over the keyspace (SCAN, then BF.INFO / CF.INFO).
pub fn recomputed(con: &mut Connection) -> HashMap<String, i64> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).unwrap();
    let mut out: HashMap<String, i64> = HashMap::new();
    for name in [
        "bloom_filters",
        "bloom_memory",
        "bloom_items",
        "bloom_links",
        "cuckoo_filters",
        "cuckoo_memory",
        "cuckoo_items",
        "cuckoo_subfilters",
    ] {
        out.insert(name.into(), 0);
    }
    for k in keys {
        let t: String = redis::cmd("TYPE").arg(&k).query(con).unwrap();
        let (prefix, cmd, items, subs) = match t.as_str() {
            "MBbloom--" => ("bloom", "BF.INFO", "Number of items inserted", "links"),
            "MBbloomCF" => (
                "cuckoo",
                "CF.INFO",
                "Number of items inserted",
                "subfilters",
            ),
            _ => continue,
        };
        let info: HashMap<String, Value> = redis::cmd(cmd).arg(&k).query(con).unwrap();
        let int = |f: &str| match info.get(f) {
            Some(Value::Int(n)) => *n,
            other => panic!("{cmd} {k} {f}: {other:?}"),
        };
        *out.get_mut(&format!("{prefix}_filters")).unwrap() += 1;
        *out.get_mut(&format!("{prefix}_memory")).unwrap() += int("Size");
        *out.get_mut(&format!("{prefix}_items")).unwrap() += int(items);
        *out.get_mut(&format!("{prefix}_{subs}")).unwrap() += int("Number of filters");
    }
    out
}

pub fn assert_gauges_exact(s: &Server, what: &str) {
    let mut con = s.conn();
    let want = recomputed(&mut con);
    let got = gauges(s);
    for (k, v) in &want {
        assert_eq!(got.get(k), Some(v), "{what}: {k} (INFO bf {got:?})");
    }
}

/// [`assert_gauges_exact`] once the gauges have settled, waiting up to
/// `timeout`: after a replica discards a half-loaded dataset, the server frees
/// it in a background thread ("Discarding temporary DB in background"), and
/// the gauges drop when each filter is freed, a moment after the load ends.
pub fn assert_gauges_settle(s: &Server, what: &str, timeout: std::time::Duration) {
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        let want = recomputed(&mut s.conn());
        let got = gauges(s);
        if want.iter().all(|(k, v)| got.get(k) == Some(v)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_gauges_exact(s, what);
}
