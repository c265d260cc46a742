//! BF.MERGE destination numkeys source [source ...] [OVERFILL] (ferrobloom's extension)
//! against real servers (overfilled unions and the per-shard recipe: `overfill.rs`): membership of every source item in RESP2 and RESP3, merges into a new key, a
//! source and an existing filter, chains of different lengths, the count estimate and the
//! false-positive rate of the result against the rate its fill predicts, every error (each
//! changing nothing), `bf.merge-max-bytes` and the memory cap at their boundaries, SLOWLOG
//! under 100 ms at the default bound, replication and AOF replay (DEBUG DIGEST), Cluster
//! CROSSSLOT, the keyspace event, `INFO bf` gauges, ACL categories, COMMAND INFO and DOCS.
//! Helpers: `common::bf`.

#[path = "../common/mod.rs"]
mod common;
mod overfill;

use common::bf::*;
use common::cluster::Cluster;
use common::rng::Rng;
use common::*;
use redis::{Connection, Value};

/// `BF.MADD` in batches of 1,000.
pub(crate) fn madd_all(con: &mut Connection, key: &str, items: &[String]) {
    for chunk in items.chunks(1000) {
        let v = rawv(con, &with_items(&format!("BF.MADD {key}"), chunk));
        assert!(matches!(v, Value::Array(_)), "{}", show(&v));
    }
}

/// How many of `items` BF.MEXISTS reports present (RESP2 integers or RESP3 booleans).
pub(crate) fn present(con: &mut Connection, key: &str, items: &[String]) -> usize {
    let mut n = 0;
    for chunk in items.chunks(1000) {
        for v in items_of(rawv(con, &with_items(&format!("BF.MEXISTS {key}"), chunk))) {
            match v {
                Value::Int(1) | Value::Boolean(true) => n += 1,
                Value::Int(0) | Value::Boolean(false) => {}
                other => panic!("BF.MEXISTS element {}", show(&other)),
            }
        }
    }
    n
}

fn items_of(v: Value) -> Vec<Value> {
    common::bf::items(v)
}

/// One BF.INFO field by its option name, in RESP2 or RESP3.
pub(crate) fn info_field(con: &mut Connection, key: &str, f: &str) -> i64 {
    let label = match f {
        "CAPACITY" => "Capacity",
        "SIZE" => "Size",
        "FILTERS" => "Number of filters",
        "ITEMS" => "Number of items inserted",
        "EXPANSION" => "Expansion rate",
        other => panic!("BF.INFO field {other}"),
    };
    match field(&rawv(con, &["BF.INFO", key]), label) {
        Value::Int(i) => i,
        other => panic!("BF.INFO {key} {label}: {}", show(&other)),
    }
}

/// The `bytes:` of every link (BF.DEBUG).
fn link_bytes(con: &mut Connection, key: &str) -> Vec<u64> {
    debug(con, key)
        .iter()
        .skip(1)
        .map(|l| {
            l.split(' ')
                .find_map(|f| f.strip_prefix("bytes:"))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("BF.DEBUG line {l}"))
        })
        .collect()
}

/// Every key's snapshot plus DBSIZE: what an error must leave unchanged.
pub(crate) fn state(
    con: &mut Connection,
    keys: &[&str],
) -> (Vec<(Vec<String>, String, Dump)>, i64) {
    (
        keys.iter().map(|k| snapshot(con, k)).collect(),
        int(con, "DBSIZE"),
    )
}

/// Sources of different lengths with the default parameters (capacity 100, 1%,
/// expansion 2): `a` 1,000 items (4 links), `b` 50 (1 link), `c` 5,000 (6 links).
fn three_sources(con: &mut Connection) -> Vec<Vec<String>> {
    let sets = vec![
        numbered("a:", 1000),
        numbered("b:", 50),
        numbered("c:", 5000),
    ];
    for (key, items) in ["a", "b", "c"].iter().zip(&sets) {
        madd_all(con, key, items);
    }
    assert_eq!(
        ["a", "b", "c"].map(|k| info_field(con, k, "FILTERS")),
        [4, 1, 6]
    );
    sets
}

#[test]
fn every_source_item_is_a_member_resp2_and_resp3() {
    let s = Server::start();
    for resp3 in [false, true] {
        let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
        ok(&mut con, "FLUSHALL");
        let sets = three_sources(&mut con);
        // Into a missing key.
        assert_eq!(q(&mut con, "BF.MERGE d 3 a b c OVERFILL"), "+OK");
        for set in &sets {
            assert_eq!(present(&mut con, "d", set), set.len(), "resp3={resp3}");
        }
        // The longest chain's links: its capacity and link count.
        assert_eq!(info_field(&mut con, "d", "FILTERS"), 6);
        assert_eq!(
            info_field(&mut con, "d", "CAPACITY"),
            info_field(&mut con, "c", "CAPACITY")
        );
        assert_eq!(
            info_field(&mut con, "d", "SIZE"),
            info_field(&mut con, "c", "SIZE")
        );
        // Links only c has are copied as they are.
        let (dd, cd) = (scandump(&mut con, "d"), scandump(&mut con, "c"));
        let tail = |d: &Dump| d.last().unwrap().1.clone();
        assert_eq!(tail(&dd), tail(&cd));

        // Into one of the sources (listed as a source too, and listed twice).
        assert_eq!(q(&mut con, "BF.MERGE b 4 b a b c OVERFILL"), "+OK");
        for set in &sets {
            assert_eq!(present(&mut con, "b", set), set.len());
        }
        assert_eq!(info_field(&mut con, "b", "FILTERS"), 6);
        // Into an existing filter with items of its own (not a source).
        let own = numbered("e:", 300);
        madd_all(&mut con, "e", &own);
        assert_eq!(q(&mut con, "BF.MERGE e 2 a c OVERFILL"), "+OK");
        assert_eq!(present(&mut con, "e", &own), own.len());
        assert_eq!(present(&mut con, "e", &sets[0]), sets[0].len());
        assert_eq!(present(&mut con, "e", &sets[2]), sets[2].len());
        // A later add goes on growing the merged chain as usual.
        rawv(&mut con, &["BF.ADD", "e", "fresh-item"]);
        assert_eq!(present(&mut con, "e", &["fresh-item".to_string()]), 1);
        // Merging a filter into itself changes nothing.
        let before = snapshot(&mut con, "e");
        assert_eq!(q(&mut con, "BF.MERGE e 1 e"), "+OK");
        assert_eq!(snapshot(&mut con, "e"), before);
    }
}

#[test]
fn missing_destination_takes_the_first_sources_parameters() {
    let s = Server::start();
    let mut con = s.conn();
    ok(
        &mut con,
        "BF.RESERVE src 0.001 500 EXPANSION 4 LAYOUT blocked",
    );
    madd_all(&mut con, "src", &numbered("x", 3000));
    // The server's defaults differ: they must not matter.
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 1");
    ok(&mut con, "CONFIG SET bf.bf-layout classic");
    assert_eq!(q(&mut con, "BF.MERGE copy 1 src"), "+OK");
    // One source into a new key is an exact copy.
    assert_eq!(snapshot(&mut con, "copy"), snapshot(&mut con, "src"));
    assert_eq!(info_field(&mut con, "copy", "EXPANSION"), 4);
    // Non-scaling filters merge into non-scaling filters.
    ok(&mut con, "BF.RESERVE n1 0.01 1000 NONSCALING");
    ok(&mut con, "BF.RESERVE n2 0.01 1000 NONSCALING");
    madd_all(&mut con, "n1", &numbered("p", 400));
    madd_all(&mut con, "n2", &numbered("q", 400));
    assert_eq!(q(&mut con, "BF.MERGE n 2 n1 n2"), "+OK");
    assert_eq!(q(&mut con, "BF.INFO n EXPANSION"), "[nil]");
    assert_eq!(present(&mut con, "n", &numbered("p", 400)), 400);
    assert_eq!(present(&mut con, "n", &numbered("q", 400)), 400);
}

/// Two non-scaling filters of capacity 20,000 holding items 0..6,000 and 3,000..9,000 of
/// one stream: the merged count estimates the 9,000 distinct items (not the 12,000 the
/// sum would give), within 2% (module doc of `core::bloom::merge`; the estimator's spread
/// at this size is about 0.3%). Both layouts. Then the false-positive rate of the merged
/// filter, measured with 200,000 never-added items, matches `(X/m)^k` for the classic
/// layout (X set bits read from SCANDUMP, k from BF.DEBUG) within 4 binomial standard
/// errors plus 5%.
#[test]
fn count_estimate_and_false_positive_rate_of_the_result() {
    let s = Server::start();
    let mut con = s.conn();
    let all = numbered("item:", 9000);
    for layout in ["classic", "blocked", "paired"] {
        ok(&mut con, "FLUSHALL");
        for k in ["a", "b"] {
            ok(
                &mut con,
                &format!("BF.RESERVE {k} 0.01 20000 NONSCALING LAYOUT {layout}"),
            );
        }
        madd_all(&mut con, "a", &all[..6000]);
        madd_all(&mut con, "b", &all[3000..]);
        ok(&mut con, "BF.MERGE d 2 a b");
        let est = card(&mut con, "d") as f64;
        eprintln!("{layout}: BF.CARD of the union of 9000 items: {est}");
        assert!((est / 9000.0 - 1.0).abs() < 0.02, "{layout}: {est}");
        assert_eq!(info_field(&mut con, "d", "ITEMS") as f64, est);
    }
    // FP rate of a fuller classic union (a: 15,000, b: 15,000 others).
    ok(&mut con, "FLUSHALL");
    for k in ["a", "b"] {
        ok(&mut con, &format!("BF.RESERVE {k} 0.01 20000 NONSCALING"));
    }
    madd_all(&mut con, "a", &numbered("fa:", 15000));
    madd_all(&mut con, "b", &numbered("fb:", 15000));
    ok(&mut con, "BF.MERGE d 2 a b OVERFILL");
    let dump = scandump(&mut con, "d");
    let ones: u64 = dump[1..]
        .iter()
        .flat_map(|(_, d)| d.iter())
        .map(|b| u64::from(b.count_ones()))
        .sum();
    let line = &debug(&mut con, "d")[1];
    let num = |name: &str| -> f64 {
        line.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    let (m, k) = (num("bits:"), num("hashes:"));
    let predicted = (ones as f64 / m).powi(k as i32);
    const PROBES: usize = 200_000;
    let fp = numbered("never-added:", PROBES);
    let measured = present(&mut con, "d", &fp) as f64 / PROBES as f64;
    let margin = 4.0 * (predicted * (1.0 - predicted) / PROBES as f64).sqrt() + 0.05 * predicted;
    eprintln!("merged FP rate: measured {measured:.5}, predicted from fill {predicted:.5}");
    assert!(
        (measured - predicted).abs() <= margin,
        "measured {measured}, predicted {predicted} ± {margin}"
    );
}

#[test]
fn every_error_changes_nothing() {
    let s = Server::start();
    let mut con = s.conn();
    // a: 6 links, 11.6 KB (above the smallest memory cap, 4096).
    madd_all(&mut con, "a", &numbered("a", 5000));
    madd_all(&mut con, "dst", &numbered("d", 20));
    ok(&mut con, "SET str x");
    ok(&mut con, "CF.RESERVE cf 1000");
    ok(&mut con, "BF.RESERVE rate 0.02 100");
    ok(&mut con, "BF.RESERVE cap 0.01 101");
    ok(&mut con, "BF.RESERVE exp 0.01 100 EXPANSION 4");
    ok(&mut con, "BF.RESERVE ns 0.01 100 NONSCALING");
    ok(&mut con, "BF.RESERVE blk 0.01 100 LAYOUT blocked");
    ok(&mut con, "BF.RESERVE rb 0.01 100 LAYOUT redisbloom");
    ok(&mut con, "BF.RESERVE win 0.01 100 WINDOW 600");
    ok(
        &mut con,
        "BF.RESERVE seeded 0.01 100 SEED 0123456789abcdef0123456789abcdef",
    );
    ok(&mut con, "BF.RESERVE tight 0.01 100 TIGHTENING 0.9");
    redis::cmd("BF.ADD")
        .arg("win")
        .arg("w")
        .query::<i64>(&mut con)
        .unwrap();
    let keys = [
        "a", "dst", "rate", "cap", "exp", "ns", "blk", "rb", "win", "seeded", "tight",
    ];
    let before = state(&mut con, &keys);
    let arity_err = arity("bf.merge");
    let cases: Vec<(&str, String)> = vec![
        ("BF.MERGE", arity_err.clone()),
        ("BF.MERGE dst", arity_err.clone()),
        ("BF.MERGE dst 1", arity_err.clone()),
        (
            "BF.MERGE dst 0 a",
            "ERR numkeys must be a positive integer".into(),
        ),
        (
            "BF.MERGE dst -1 a",
            "ERR numkeys must be a positive integer".into(),
        ),
        (
            "BF.MERGE dst x a",
            "ERR numkeys must be a positive integer".into(),
        ),
        (
            "BF.MERGE dst 1.0 a",
            "ERR numkeys must be a positive integer".into(),
        ),
        (
            "BF.MERGE dst 2 a",
            "ERR numkeys does not match the number of sources".into(),
        ),
        (
            "BF.MERGE dst 1 a a",
            "ERR numkeys does not match the number of sources".into(),
        ),
        ("BF.MERGE dst 2 a nope", "ERR not found".into()),
        ("BF.MERGE new 2 a new", "ERR not found".into()),
        ("BF.MERGE dst 2 a str", WRONGTYPE.into()),
        ("BF.MERGE dst 2 cf a", WRONGTYPE.into()),
        ("BF.MERGE str 1 a", WRONGTYPE.into()),
        ("BF.MERGE cf 1 a", WRONGTYPE.into()),
        // A missing source is reported before a wrong-type destination.
        ("BF.MERGE str 1 nope", "ERR not found".into()),
        (
            "BF.MERGE dst 2 a rate",
            "ERR incompatible filters: source 2 differs in the bit count of sub-filter 1".into(),
        ),
        (
            "BF.MERGE dst 2 a cap",
            "ERR incompatible filters: source 2 differs in the capacity of sub-filter 1".into(),
        ),
        (
            "BF.MERGE dst 2 a exp",
            "ERR incompatible filters: source 2 differs in expansion".into(),
        ),
        (
            "BF.MERGE dst 2 a ns",
            "ERR incompatible filters: source 2 differs in expansion".into(),
        ),
        (
            "BF.MERGE dst 2 a blk",
            "ERR incompatible filters: source 2 differs in the layout of sub-filter 1".into(),
        ),
        (
            "BF.MERGE dst 2 a rb",
            "ERR incompatible filters: source 2 differs in hash scheme".into(),
        ),
        (
            "BF.MERGE rb 1 a",
            "ERR incompatible filters: the destination differs in hash scheme".into(),
        ),
        (
            "BF.MERGE exp 2 a a",
            "ERR incompatible filters: the destination differs in expansion".into(),
        ),
        // Windowed filters are refused (their generations start at different times);
        // a seed or a tightening ratio must match (valkey-bloom's options).
        (
            "BF.MERGE dst 2 a win",
            "ERR cannot merge source 2: a windowed filter".into(),
        ),
        (
            "BF.MERGE win 1 a",
            "ERR cannot merge the destination: a windowed filter".into(),
        ),
        (
            "BF.MERGE new 1 win",
            "ERR cannot merge source 1: a windowed filter".into(),
        ),
        (
            "BF.MERGE dst 2 a seeded",
            "ERR incompatible filters: source 2 differs in hash scheme".into(),
        ),
        (
            "BF.MERGE dst 2 a tight",
            "ERR incompatible filters: source 2 differs in tightening".into(),
        ),
        // Positions count every listed source (duplicates and the destination too).
        (
            "BF.MERGE dst 4 dst a a blk",
            "ERR incompatible filters: source 4 differs in the layout of sub-filter 1".into(),
        ),
    ];
    for (line, want) in &cases {
        assert_eq!(&err(&mut con, line), want, "{line}");
    }
    // Bounds: bf.merge-max-bytes and the memory cap (each naming its config), the link limit.
    ok(&mut con, "CONFIG SET bf.merge-max-bytes 1000");
    let e = err(&mut con, "BF.MERGE dst 1 a");
    assert!(
        e.starts_with("ERR merge would touch ") && e.ends_with("above bf.merge-max-bytes (1000)"),
        "{e}"
    );
    ok(&mut con, "CONFIG SET bf.merge-max-bytes 64mb");
    ok(&mut con, "CONFIG SET bf.max-filter-memory 4096");
    assert_eq!(
        err(&mut con, "BF.MERGE dst 1 a"),
        "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)"
    );
    assert_eq!(
        err(&mut con, "BF.MERGE fresh 1 a"),
        "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)"
    );
    ok(&mut con, "CONFIG SET bf.max-filter-memory 4gb");
    ok(&mut con, "CONFIG SET bf.bf-max-links 2");
    assert_eq!(
        err(&mut con, "BF.MERGE dst 1 a"),
        "ERR filter reached its maximum number of sub-filters (bf.bf-max-links)"
    );
    ok(&mut con, "CONFIG SET bf.bf-max-links 64");
    assert_eq!(state(&mut con, &keys), before);
    assert_eq!(q(&mut con, "EXISTS new fresh"), "0");
}

/// `bf.merge-max-bytes` counts the sources' bytes plus the result's, and refuses one byte
/// above; the memory cap refuses a result one byte above it. Both at the boundary.
#[test]
fn limits_at_the_boundary() {
    let s = Server::start();
    let mut con = s.conn();
    // a: 7 links, above the smallest memory cap (4096).
    madd_all(&mut con, "a", &numbered("a", 10_000));
    madd_all(&mut con, "b", &numbered("b", 100));
    madd_all(&mut con, "d", &numbered("d", 10));
    let data = |con: &mut Connection, k: &str| link_bytes(con, k).iter().sum::<u64>();
    let (da, db) = (data(&mut con, "a"), data(&mut con, "b"));
    // Into a new key: both sources read, the result (a's shape, the longest) written.
    let touched_new = da + db + da;
    // Into b: a read, the result (b grown to a's shape) written.
    let touched_into_b = da + da;
    for (line, touched) in [
        ("BF.MERGE n 2 a b OVERFILL", touched_new),
        ("BF.MERGE b 1 a OVERFILL", touched_into_b),
    ] {
        ok(
            &mut con,
            &format!("CONFIG SET bf.merge-max-bytes {}", touched - 1),
        );
        assert_eq!(
            err(&mut con, line),
            format!(
                "ERR merge would touch {touched} bytes, above bf.merge-max-bytes ({})",
                touched - 1
            )
        );
        ok(
            &mut con,
            &format!("CONFIG SET bf.merge-max-bytes {touched}"),
        );
        ok(&mut con, line);
    }
    // The memory cap: the result's BF.INFO Size.
    ok(&mut con, "CONFIG SET bf.merge-max-bytes 64mb");
    let size = info_field(&mut con, "a", "SIZE");
    ok(
        &mut con,
        &format!("CONFIG SET bf.max-filter-memory {}", size - 1),
    );
    assert_eq!(
        err(&mut con, "BF.MERGE d 1 a"),
        "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)"
    );
    ok(&mut con, &format!("CONFIG SET bf.max-filter-memory {size}"));
    ok(&mut con, "BF.MERGE d 1 a OVERFILL");
    assert_eq!(info_field(&mut con, "d", "SIZE"), size);
    // The config and module argument are validated.
    assert!(err(&mut con, "CONFIG SET bf.merge-max-bytes 0").contains("merge-max-bytes"));
    assert!(err(&mut con, "CONFIG SET bf.merge-max-bytes -1").contains("merge-max-bytes"));
    assert_eq!(config_get(&mut con, "bf.merge-max-bytes"), "67108864");
    let (status, log) = start_with_module_args(&["merge-max-bytes", "0"]);
    assert!(!status.success(), "{log}");
    assert!(log.contains("merge-max-bytes"), "{log}");
}

/// Server-side time from the SLOWLOG of the last `BF.MERGE`.
fn merge_usec(con: &mut Connection, line: &str) -> u64 {
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(con).unwrap();
    ok(con, line);
    let log: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").arg(16).query(con).unwrap();
    for e in log {
        let Value::Array(f) = e else { continue };
        if let (Some(Value::Int(us)), Some(Value::Array(argv))) = (f.get(2), f.get(3)) {
            if matches!(argv.first(), Some(Value::BulkString(a)) if a.eq_ignore_ascii_case(b"BF.MERGE"))
            {
                return *us as u64;
            }
        }
    }
    panic!("BF.MERGE not in the SLOWLOG")
}

/// A filter of `capacity` at 1% whose bits are random bytes (its own SCANDUMP header
/// loaded into a fresh key, then random LOADCHUNKs).
fn random_filter(con: &mut Connection, key: &str, capacity: u64, seed: u64) -> u64 {
    ok(con, &format!("BF.RESERVE tmp 0.01 {capacity}"));
    let header = scandump(con, "tmp")[0].1.clone();
    assert_eq!(int(con, "DEL tmp"), 1);
    let v = raw_bytes(con, &[b"BF.LOADCHUNK", key.as_bytes(), b"1", &header]);
    assert_eq!(show(&v), "+OK");
    let total: u64 = link_bytes(con, key).iter().sum();
    let mut r = Rng(seed);
    let mut off = 0u64;
    while off < total {
        let n = (total - off).min(16 << 20);
        let data = r.bytes(n as usize);
        let it = (off + n + 1).to_string();
        let v = raw_bytes(
            con,
            &[b"BF.LOADCHUNK", key.as_bytes(), it.as_bytes(), &data],
        );
        assert_eq!(show(&v), "+OK");
        off += n;
    }
    total
}

/// The largest merges the default `bf.merge-max-bytes` (64 MiB) admits finish in under
/// 100 ms of server time: two 22 MB filters of random bits into a new key (66 MB
/// touched: the worst case, the result's pages are new) and into one of them; a merge
/// just above the default is refused.
#[test]
fn default_bound_keeps_merges_under_100_ms() {
    let s = Server::builder()
        .args(&["--slowlog-log-slower-than", "0"])
        .start();
    let mut con = s.conn();
    con.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let default: u64 = config_get(&mut con, "bf.merge-max-bytes").parse().unwrap();
    assert_eq!(default, 64 << 20);
    let da = random_filter(&mut con, "a", 16_000_000, 1);
    let db = random_filter(&mut con, "b", 16_000_000, 2);
    assert!(3 * da <= default && 3 * da > default * 9 / 10, "{da}");
    let data = |con: &mut Connection, k: &str| -> Vec<u8> {
        scandump(con, k)[1..]
            .iter()
            .flat_map(|(_, d)| d.clone())
            .collect()
    };
    let union: Vec<u8> = data(&mut con, "a")
        .iter()
        .zip(data(&mut con, "b"))
        .map(|(x, y)| x | y)
        .collect();
    for (line, key) in [
        ("BF.MERGE d 2 a b OVERFILL", "d"),
        ("BF.MERGE a 2 a b OVERFILL", "a"),
    ] {
        let us = merge_usec(&mut con, line);
        eprintln!("{line}: {us} µs (sources of {da} and {db} bytes)");
        assert!(us < 100_000, "{line} took {us} µs");
        // The bits are the OR of the sources' (a new key's pages are populated and
        // its first source copied rather than OR-ed: same result).
        assert!(
            data(&mut con, key) == union,
            "{line}: bits differ from a | b"
        );
    }
    random_filter(&mut con, "c", 16_000_000, 3);
    assert_eq!(
        err(&mut con, "BF.MERGE d2 3 a b c OVERFILL"),
        format!(
            "ERR merge would touch {} bytes, above bf.merge-max-bytes ({default})",
            4 * da
        )
    );
}

#[test]
fn replication_and_aof_replay_give_identical_filters() {
    let primary = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    common::rdb::wait_aof_rewrite_idle(&primary);
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    // The replica applies what the primary accepted, whatever its own limits.
    let mut rcon = replica.conn();
    ok(&mut rcon, "CONFIG SET bf.merge-max-bytes 1");
    ok(&mut rcon, "CONFIG SET bf.max-filter-memory 4096");
    let mut con = primary.conn();
    let sets = three_sources(&mut con);
    ok(&mut con, "BF.RESERVE blk 0.01 100 LAYOUT blocked");
    madd_all(&mut con, "blk", &numbered("k", 700));
    ok(&mut con, "BF.RESERVE blk2 0.01 100 LAYOUT blocked");
    madd_all(&mut con, "blk2", &numbered("k", 1500)[350..]);
    ok(&mut con, "BF.MERGE new 3 a b c OVERFILL");
    ok(&mut con, "BF.MERGE b 2 a c OVERFILL");
    ok(&mut con, "BF.MERGE blk 1 blk2 OVERFILL");
    madd_all(&mut con, "e", &numbered("e", 100));
    ok(&mut con, "BF.MERGE e 2 e a OVERFILL");
    err(&mut con, "BF.MERGE e 1 blk");
    primary.wait_for_offset(&replica);
    let digest = primary.digest();
    assert_eq!(replica.digest(), digest, "replica");
    assert_eq!(present(&mut rcon, "new", &sets[2]), sets[2].len());
    // AOF replay (the command log holds the BF.MERGE commands) rebuilds the same data.
    drop(con);
    drop(rcon);
    let mut primary = primary;
    primary.restart();
    assert_eq!(primary.digest(), digest, "AOF replay");
}

#[test]
fn cluster_refuses_keys_of_several_slots() {
    let c = Cluster::start(3, false);
    let mut cc = c.client();
    for k in ["{t}a", "{t}b", "x", "y"] {
        let _: Value = redis::cmd("BF.MADD")
            .arg(k)
            .arg("one")
            .arg("two")
            .query(&mut cc)
            .unwrap();
    }
    let v: String = redis::cmd("BF.MERGE")
        .arg("{t}d")
        .arg(2)
        .arg("{t}a")
        .arg("{t}b")
        .query(&mut cc)
        .unwrap();
    assert_eq!(v, "OK");
    // Sent straight to the node owning the destination's slot.
    let owner = c.owner_of("x");
    let mut con = c.primaries[owner].conn();
    assert_ne!(c.key_slot("x"), c.key_slot("y"));
    let e = err_text(
        redis::cmd("BF.MERGE")
            .arg("x")
            .arg(2)
            .arg("x")
            .arg("y")
            .query::<Value>(&mut con),
    );
    assert_eq!(e, "CROSSSLOT Keys in request don't hash to the same slot");
}

#[test]
fn keyspace_event_and_info_gauges() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET notify-keyspace-events Ed");
    let mut sub = s.conn();
    sub.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@*__:bf.merge").unwrap();
    madd_all(&mut con, "a", &numbered("a", 1000));
    madd_all(&mut con, "b", &numbered("b", 200));
    ok(&mut con, "BF.MERGE d 2 a b OVERFILL");
    err(&mut con, "BF.MERGE d 1 nope");
    ok(&mut con, "BF.MERGE b 1 a OVERFILL");
    ok(&mut con, "BF.MERGE b 1 b");
    let mut events = Vec::new();
    while let Ok(m) = pubsub.get_message() {
        events.push((
            m.get_channel_name().to_string(),
            m.get_payload::<String>().unwrap(),
        ));
    }
    assert_eq!(
        events,
        vec![
            ("__keyevent@0__:bf.merge".to_string(), "d".to_string()),
            ("__keyevent@0__:bf.merge".to_string(), "b".to_string()),
        ],
        "one event per merge that changed its destination"
    );
    // The gauges equal the sums over the keyspace.
    let info = s.info("bf_ferrobloom");
    let keys = ["a", "b", "d"];
    let sum =
        |f: &str, con: &mut Connection| -> i64 { keys.iter().map(|k| info_field(con, k, f)).sum() };
    assert_eq!(info["bf_bloom_filters"], "3");
    assert_eq!(info["bf_bloom_memory"], sum("SIZE", &mut con).to_string());
    assert_eq!(info["bf_bloom_items"], sum("ITEMS", &mut con).to_string());
    assert_eq!(info["bf_bloom_links"], sum("FILTERS", &mut con).to_string());
}

#[test]
fn acl_categories_and_command_table() {
    let s = Server::start();
    let mut con = s.conn();
    if s.kind().has_acl_categories() {
        for cat in ["bloom", "write"] {
            let cmds: Vec<String> = exec(&mut con, &["ACL", "CAT", cat]).unwrap();
            assert!(cmds.contains(&"bf.merge".to_string()), "{cat}: {cmds:?}");
        }
        ok(&mut con, "ACL SETUSER reader on >pw ~* +@bloom -@write");
    } else {
        ok(&mut con, "ACL SETUSER reader on >pw ~* +bf.madd +bf.exists");
    }
    ok(&mut con, "ACL SETUSER writer on >pw ~* +bf.merge +bf.madd");
    let login = |user: &str| {
        let mut c = s.conn();
        let _: () = redis::cmd("AUTH")
            .arg(user)
            .arg("pw")
            .query(&mut c)
            .unwrap();
        c
    };
    let mut w = login("writer");
    madd_all(&mut w, "a", &numbered("a", 10));
    ok(&mut w, "BF.MERGE d 1 a");
    let mut r = login("reader");
    assert!(err(&mut r, "BF.MERGE d2 1 a").starts_with("NOPERM"));

    // COMMAND INFO: arity, flags, both key specs; GETKEYS finds every key.
    let info = items_of(rawv(&mut con, &["COMMAND", "INFO", "bf.merge"]));
    let [Value::Array(info)] = info.as_slice() else {
        panic!("{info:?}")
    };
    assert_eq!(info[1], Value::Int(-4));
    let mut flags: Vec<String> = items_of(info[2].clone()).iter().map(text).collect();
    flags.sort();
    assert_eq!(flags, ["denyoom", "module", "movablekeys", "write"]);
    let specs = items_of(info[8].clone());
    assert_eq!(specs.len(), 2);
    let spec_flags = |v: &Value| {
        let mut f: Vec<String> = items_of(field(v, "flags")).iter().map(text).collect();
        f.sort();
        f
    };
    assert_eq!(spec_flags(&specs[0]), ["RW", "access", "insert"]);
    assert_eq!(spec_flags(&specs[1]), ["RO", "access"]);
    assert_eq!(
        text(&field(&field(&specs[1], "find_keys"), "type")),
        "keynum"
    );
    assert_eq!(
        q(&mut con, "COMMAND GETKEYS BF.MERGE d 3 a b c"),
        "[\"d\",\"a\",\"b\",\"c\"]"
    );
    // OVERFILL is no key (numkeys says so).
    assert_eq!(
        q(&mut con, "COMMAND GETKEYS BF.MERGE d 2 a b OVERFILL"),
        "[\"d\",\"a\",\"b\"]"
    );
    // COMMAND DOCS.
    let mut con3 = s.conn_resp3();
    let docs = field(
        &rawv(&mut con3, &["COMMAND", "DOCS", "bf.merge"]),
        "bf.merge",
    );
    assert!(text(&field(&docs, "summary")).contains("ferrobloom extension"));
    assert_eq!(text(&field(&docs, "module")), "bf");
    let args = items_of(field(&docs, "arguments"));
    let names: Vec<String> = args.iter().map(|a| text(&field(a, "name"))).collect();
    assert_eq!(names, ["destination", "numkeys", "source", "overfill"]);
    assert_eq!(text(&field(&args[3], "token")), "OVERFILL");
    assert!(items_of(field(&args[3], "flags"))
        .iter()
        .any(|f| text(f) == "optional"));
    assert_eq!(text(&field(&args[0], "type")), "key");
    assert_eq!(field(&args[0], "key_spec_index"), Value::Int(0));
    assert_eq!(text(&field(&args[1], "type")), "integer");
    assert_eq!(field(&args[2], "key_spec_index"), Value::Int(1));
    assert!(items_of(field(&args[2], "flags"))
        .iter()
        .any(|f| text(f) == "multiple"));
}
