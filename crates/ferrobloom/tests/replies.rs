//! Strict clients parse RedisBloom's default replies exactly: go-redis' `CFInfo` and
//! `BFInfo` fail on any key they do not know, and its `CFScanDump` fails on a `nil`
//! data element. These tests pin, for every kind of filter ferrobloom makes (each
//! layout, non-scaling, auto-created, migrated from RedisBloom, loaded from a
//! SCANDUMP, copied, with valkey-bloom's options), in RESP2 and RESP3:
//! BF.INFO = RedisBloom's five keys and CF.INFO = its eight, in its order, with
//! integer values (nil only for a non-scaling filter's expansion), and the types of
//! every other default reply, side by side with the live RedisBloom 2.8.2.

mod common;

use common::bf::{pairs, rawv, show, text};
use common::redisbloom::{redisbloom_so, start_redisbloom, unhex};
use common::*;
use redis::{Connection, Value};

const CF_KEYS: [&str; 8] = [
    "Size",
    "Number of buckets",
    "Number of filters",
    "Number of items inserted",
    "Number of items deleted",
    "Bucket size",
    "Expansion rate",
    "Max iterations",
];

fn run(con: &mut Connection, args: &[&[u8]]) -> Value {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        c.arg(*a);
    }
    let mut p = redis::pipe();
    p.add_command(c).ignore_errors();
    let mut v: Vec<Value> = p.query(con).expect("query");
    v.pop().unwrap()
}

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn cmd_items(con: &mut Connection, head: &[&str], items: &[String]) -> Value {
    let mut v: Vec<&str> = head.to_vec();
    v.extend(items.iter().map(String::as_str));
    rawv(con, &v)
}

/// The whole SCANDUMP stream and the final reply.
fn scandump(con: &mut Connection, prefix: &str, key: &str) -> (Vec<(i64, Vec<u8>)>, Value) {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let v = rawv(con, &[&format!("{prefix}.SCANDUMP"), key, &it.to_string()]);
        match &v {
            Value::Array(a) if a.len() == 2 => match (&a[0], &a[1]) {
                (Value::Int(0), _) => return (out, v),
                (Value::Int(n), Value::BulkString(d)) => {
                    out.push((*n, d.clone()));
                    it = *n;
                }
                _ => panic!("{prefix}.SCANDUMP {key} {it}: {}", show(&v)),
            },
            _ => panic!("{prefix}.SCANDUMP {key} {it}: {}", show(&v)),
        }
    }
}

/// RedisBloom's DUMP payloads (committed fixture), by key.
fn redisbloom_payloads() -> Vec<(String, Vec<u8>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/redisbloom/dumps.tsv"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, hex) = l.split_once('\t').unwrap();
            (k.to_string(), unhex(hex))
        })
        .collect()
}

/// Builds every kind of filter; returns `(bloom keys, cuckoo keys)`.
fn build_every_kind(con: &mut Connection) -> (Vec<String>, Vec<String>) {
    let mut bf = Vec::new();
    let mut cf = Vec::new();
    let grow = items("i", 700);
    for (key, reserve) in [
        ("bf:classic", vec!["0.01", "100"]),
        ("bf:nonscaling", vec!["0.01", "1000", "NONSCALING"]),
        ("bf:exp0", vec!["0.01", "1000", "EXPANSION", "0"]),
        ("bf:blocked", vec!["0.01", "100", "LAYOUT", "blocked"]),
        ("bf:paired", vec!["0.01", "100", "LAYOUT", "paired"]),
        (
            "bf:blocked-ns",
            vec!["0.01", "1000", "LAYOUT", "blocked", "NONSCALING"],
        ),
        ("bf:rb", vec!["0.01", "100", "LAYOUT", "redisbloom"]),
        (
            "bf:rb-ns",
            vec!["0.01", "1000", "LAYOUT", "redisbloom", "NONSCALING"],
        ),
        (
            "bf:valkey",
            vec![
                "0.01",
                "100",
                "TIGHTENING",
                "0.8",
                "SEED",
                "0123456789abcdef0123456789abcdef",
            ],
        ),
        ("bf:empty", vec!["0.001", "10"]),
        // Windowed filters (WINDOW seconds): the same five keys.
        ("bf:window", vec!["0.01", "100", "WINDOW", "600"]),
        (
            "bf:window-ns",
            vec![
                "0.01",
                "1000",
                "NONSCALING",
                "LAYOUT",
                "blocked",
                "WINDOW",
                "60",
            ],
        ),
    ] {
        let mut args = vec!["BF.RESERVE", key];
        args.extend(reserve);
        assert_eq!(show(&rawv(con, &args)), "+OK", "{args:?}");
        if key != "bf:empty" {
            cmd_items(con, &["BF.MADD", key], &grow);
        }
        bf.push(key.to_string());
    }
    rawv(con, &["BF.ADD", "bf:auto", "x"]);
    cmd_items(
        con,
        &[
            "BF.INSERT",
            "bf:insert",
            "CAPACITY",
            "50",
            "EXPANSION",
            "3",
            "ITEMS",
        ],
        &grow,
    );
    bf.extend(["bf:auto".to_string(), "bf:insert".to_string()]);

    for (key, reserve) in [
        ("cf:default", vec!["1000"]),
        ("cf:error", vec!["1000", "ERROR", "0.0001"]),
        ("cf:bs4", vec!["64", "BUCKETSIZE", "4", "EXPANSION", "2"]),
        ("cf:x0", vec!["1000", "EXPANSION", "0"]),
        ("cf:rb", vec!["64", "LAYOUT", "redisbloom"]),
        ("cf:empty", vec!["100"]),
    ] {
        let mut args = vec!["CF.RESERVE", key];
        args.extend(reserve);
        assert_eq!(show(&rawv(con, &args)), "+OK", "{args:?}");
        if key != "cf:empty" {
            cmd_items(con, &["CF.INSERT", key, "ITEMS"], &grow);
        }
        cf.push(key.to_string());
    }
    rawv(con, &["CF.ADD", "cf:auto", "x"]);
    cmd_items(
        con,
        &["CF.INSERTNX", "cf:nx", "CAPACITY", "100", "ITEMS"],
        &grow[..50],
    );
    rawv(con, &["CF.ADD", "cf:deleted", "x"]);
    rawv(con, &["CF.DEL", "cf:deleted", "x"]);
    cf.extend(["cf:auto", "cf:nx", "cf:deleted"].map(String::from));

    // Migrated from RedisBloom (its DUMP payloads of every encoding version).
    for (key, payload) in redisbloom_payloads() {
        let to = format!("m:{key}");
        let r = run(con, &[b"RESTORE", to.as_bytes(), b"0", &payload]);
        assert_eq!(r, Value::Okay, "RESTORE {key}");
        if key.starts_with("bf:") {
            bf.push(to);
        } else {
            cf.push(to);
        }
    }

    // Loaded from a SCANDUMP stream, and copied.
    for (prefix, list) in [("BF", &mut bf), ("CF", &mut cf)] {
        let from: Vec<String> = list.clone();
        for key in from.iter().filter(|k| !k.starts_with("m:")).take(6) {
            let (chunks, _) = scandump(con, prefix, key);
            let to = format!("loaded:{key}");
            for (it, data) in &chunks {
                let r = run(
                    con,
                    &[
                        format!("{prefix}.LOADCHUNK").as_bytes(),
                        to.as_bytes(),
                        it.to_string().as_bytes(),
                        data,
                    ],
                );
                assert_eq!(r, Value::Okay, "LOADCHUNK {to}");
            }
            list.push(to);
        }
        let to = format!("copy:{}", from[0]);
        assert_eq!(rawv(con, &["COPY", &from[0], &to]), Value::Int(1));
        list.push(to);
    }
    (bf, cf)
}

/// The single value of a single-field reply, and its label (RESP3 only).
fn single(v: &Value) -> (Option<String>, Value) {
    match v {
        Value::Array(a) if a.len() == 1 => (None, a[0].clone()),
        Value::Map(m) if m.len() == 1 => (Some(text(&m[0].0)), m[0].1.clone()),
        other => panic!("single field: {}", show(other)),
    }
}

#[test]
fn default_info_replies_have_exactly_redisblooms_keys_for_every_filter_kind() {
    let s = Server::start();
    let (bf, cf) = build_every_kind(&mut s.conn());
    assert!(bf.len() >= 25 && cf.len() >= 20, "{bf:?} {cf:?}");
    for resp3 in [false, true] {
        let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
        for key in &bf {
            let v = rawv(&mut con, &["BF.INFO", key]);
            assert_eq!(matches!(v, Value::Map(_)), resp3, "{key}: {}", show(&v));
            let p = pairs(&v);
            let keys: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, BF_INFO_KEYS, "BF.INFO {key} (resp3 {resp3})");
            let nonscaling = p[4].1 == Value::Nil;
            for (k, v) in &p {
                let ok = matches!(v, Value::Int(n) if *n >= 0)
                    || (k == "Expansion rate" && *v == Value::Nil);
                assert!(ok, "BF.INFO {key} {k}: {}", show(v));
            }
            // The single-field forms: one value of the same type, RedisBloom's label.
            for (i, f) in ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"]
                .iter()
                .enumerate()
            {
                let (label, value) = single(&rawv(&mut con, &["BF.INFO", key, f]));
                assert_eq!(value, p[i].1, "BF.INFO {key} {f}");
                assert_eq!(label.as_deref(), resp3.then_some(BF_INFO_KEYS[i]));
            }
            // Cardinality and the end of SCANDUMP.
            assert!(matches!(rawv(&mut con, &["BF.CARD", key]), Value::Int(_)));
            let (chunks, end) = scandump(&mut con, "BF", key);
            assert!(!chunks.is_empty());
            assert_eq!(
                end,
                Value::Array(vec![Value::Int(0), Value::BulkString(vec![])])
            );
            // valkey-bloom's single fields exist for every kind, as doubles / integers.
            let (_, e) = single(&rawv(&mut con, &["BF.INFO", key, "ERROR"]));
            let e: f64 = redis::from_redis_value(e).unwrap();
            assert!(e > 0.0 && e < 1.0, "{key}: {e}");
            if key.starts_with("bf:window") {
                // A windowed filter's window sizes it: no valkey-bloom growth fields.
                for f in ["TIGHTENING", "MAXSCALEDCAPACITY"] {
                    let v = rawv(&mut con, &["BF.INFO", key, f]);
                    assert_eq!(show(&v), "!Invalid information value", "{key} {f}");
                }
            } else if !nonscaling {
                let (_, m) = single(&rawv(&mut con, &["BF.INFO", key, "MAXSCALEDCAPACITY"]));
                let capacity = match p[0].1 {
                    Value::Int(n) => n,
                    _ => unreachable!(),
                };
                assert!(matches!(m, Value::Int(n) if n >= capacity), "{key}");
            }
        }
        for key in &cf {
            let v = rawv(&mut con, &["CF.INFO", key]);
            assert_eq!(matches!(v, Value::Map(_)), resp3, "{key}: {}", show(&v));
            let p = pairs(&v);
            let keys: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, CF_KEYS, "CF.INFO {key} (resp3 {resp3})");
            for (k, v) in &p {
                assert!(
                    matches!(v, Value::Int(n) if *n >= 0),
                    "CF.INFO {key} {k}: {}",
                    show(v)
                );
            }
            let (chunks, end) = scandump(&mut con, "CF", key);
            assert!(!chunks.is_empty(), "{key}: the header is always sent");
            assert_eq!(
                end,
                Value::Array(vec![Value::Int(0), Value::BulkString(vec![])]),
                "{key}"
            );
            // ferrobloom's own facts are in CF.DEBUG, only where RedisBloom's are not.
            let d = text(&rawv(&mut con, &["CF.DEBUG", key]));
            let rb = key.starts_with("m:") || key.ends_with("cf:rb");
            assert!(
                !(rb && (d.contains("fpsize:") || d.contains(" error:"))),
                "{key}: {d}"
            );
            if key.ends_with("cf:error") {
                assert!(d.ends_with(" fpsize:16 error:0.0001"), "{key}: {d}");
            }
        }
    }
}

/// The type of a reply, with the labels of maps and flat INFO arrays (their
/// simple strings) spelled out: what a strict client checks.
fn signature(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(_) => "int".into(),
        Value::BulkString(_) => "bulk".into(),
        Value::SimpleString(s) => format!("+{s}"),
        Value::Okay => "+OK".into(),
        Value::Double(_) => "double".into(),
        Value::Boolean(_) => "bool".into(),
        Value::ServerError(_) => "error".into(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(signature).collect::<Vec<_>>().join(",")
        ),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}:{}", signature(k), signature(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => format!("{other:?}"),
    }
}

/// Every BF/CF command's reply types, ferrobloom against the live RedisBloom 2.8.2,
/// in RESP2 and RESP3, on filters both can make. The only difference allowed is the
/// documented end of CF.SCANDUMP (`[0, ""]` here, `[0, nil]` in RedisBloom).
#[test]
fn every_reply_has_redisblooms_types() {
    let Some(so) = redisbloom_so() else { return };
    let rbs = start_redisbloom(&so);
    let fbs = Server::start();
    let script: Vec<Vec<&str>> = vec![
        vec!["BF.RESERVE", "b1", "0.01", "100"],
        vec!["BF.RESERVE", "b1", "0.01", "100"],
        vec!["BF.RESERVE", "b2", "0.001", "1000", "NONSCALING"],
        vec!["BF.ADD", "b1", "a"],
        vec!["BF.ADD", "b1", "a"],
        vec!["BF.ADD", "b3", "a"],
        vec!["BF.MADD", "b1", "a", "b", "c"],
        vec!["BF.INSERT", "b4", "CAPACITY", "10", "ITEMS", "a", "b"],
        vec!["BF.INSERT", "b5", "NOCREATE", "ITEMS", "a"],
        vec!["BF.EXISTS", "b1", "a"],
        vec!["BF.EXISTS", "b1", "zz"],
        vec!["BF.EXISTS", "missing", "zz"],
        vec!["BF.MEXISTS", "b1", "a", "zz"],
        vec!["BF.CARD", "b1"],
        vec!["BF.CARD", "missing"],
        vec!["BF.INFO", "b1"],
        vec!["BF.INFO", "b2"],
        vec!["BF.INFO", "b3"],
        vec!["BF.INFO", "b1", "CAPACITY"],
        vec!["BF.INFO", "b1", "SIZE"],
        vec!["BF.INFO", "b1", "FILTERS"],
        vec!["BF.INFO", "b1", "ITEMS"],
        vec!["BF.INFO", "b1", "EXPANSION"],
        vec!["BF.INFO", "b2", "EXPANSION"],
        vec!["BF.INFO", "missing"],
        vec!["BF.DEBUG", "b1"],
        vec!["BF.SCANDUMP", "b1", "0"],
        vec!["CF.RESERVE", "c1", "1000"],
        vec!["CF.RESERVE", "c1", "1000"],
        vec![
            "CF.RESERVE",
            "c2",
            "64",
            "BUCKETSIZE",
            "4",
            "EXPANSION",
            "0",
        ],
        vec!["CF.ADD", "c1", "a"],
        vec!["CF.ADD", "c3", "a"],
        vec!["CF.ADDNX", "c1", "a"],
        vec!["CF.ADDNX", "c1", "b"],
        vec!["CF.INSERT", "c1", "ITEMS", "a", "c"],
        vec!["CF.INSERTNX", "c1", "ITEMS", "a", "d"],
        vec!["CF.INSERT", "c4", "NOCREATE", "ITEMS", "a"],
        vec!["CF.EXISTS", "c1", "a"],
        vec!["CF.EXISTS", "missing", "a"],
        vec!["CF.MEXISTS", "c1", "a", "zz"],
        vec!["CF.COUNT", "c1", "a"],
        vec!["CF.COUNT", "missing", "a"],
        vec!["CF.DEL", "c1", "a"],
        vec!["CF.DEL", "c1", "zz"],
        vec!["CF.INFO", "c1"],
        vec!["CF.INFO", "c2"],
        vec!["CF.INFO", "c3"],
        vec!["CF.INFO", "missing"],
        vec!["CF.DEBUG", "c1"],
        vec!["CF.SCANDUMP", "c1", "0"],
        vec!["CF.COMPACT", "c1"],
    ];
    for resp3 in [false, true] {
        let mut rb = if resp3 { rbs.conn_resp3() } else { rbs.conn() };
        let mut fb = if resp3 { fbs.conn_resp3() } else { fbs.conn() };
        let _ = rawv(&mut rb, &["FLUSHALL"]);
        let _ = rawv(&mut fb, &["FLUSHALL"]);
        for c in &script {
            let (r, f) = (rawv(&mut rb, c), rawv(&mut fb, c));
            assert_eq!(
                signature(&f),
                signature(&r),
                "{c:?} (resp3 {resp3}): ferrobloom {} vs RedisBloom {}",
                show(&f),
                show(&r)
            );
        }
        // The end of the dumps: BF.SCANDUMP alike, CF.SCANDUMP deliberately not nil.
        let (_, r) = scandump(&mut rb, "BF", "b1");
        let (_, f) = scandump(&mut fb, "BF", "b1");
        assert_eq!(signature(&f), signature(&r));
        let (_, r) = scandump(&mut rb, "CF", "c1");
        let (_, f) = scandump(&mut fb, "CF", "c1");
        assert_eq!(signature(&r), "[int,nil]");
        assert_eq!(signature(&f), "[int,bulk]");
    }
}

/// redis-py (the reference client of the compatibility suite) parses the new end of
/// CF.SCANDUMP, and its dump/load loop round-trips a cuckoo filter, an empty one
/// (whose header is still sent) included.
#[test]
fn redis_py_scandump_loop_round_trips_cuckoo_filters() {
    let s = Server::start();
    let mut con = s.conn();
    rawv(&mut con, &["CF.RESERVE", "src", "1000", "BUCKETSIZE", "4"]);
    cmd_items(&mut con, &["CF.INSERT", "src", "ITEMS"], &items("p", 900));
    rawv(&mut con, &["CF.RESERVE", "empty", "500", "ERROR", "0.001"]);
    let code = r#"
import os, redis
r = redis.Redis(unix_socket_path=os.environ["REDIS_SOCKET"])
for src, dst in (("src", "dst"), ("empty", "empty2")):
    it, chunks = 0, []
    while True:
        it, data = r.cf().scandump(src, it)
        if it == 0:
            assert data == b"", data
            break
        chunks.append((it, data))
    assert chunks, src
    for it, data in chunks:
        r.cf().loadchunk(dst, it, data)
    assert r.cf().info(dst).size == r.cf().info(src).size
    print(src, len(chunks), r.execute_command("CF.DEBUG", dst).decode())
"#;
    let out = s.python(code, &[]);
    let text = out.assert_success().to_string();
    assert!(text.contains("src "), "{text}");
    for (a, b) in [("src", "dst"), ("empty", "empty2")] {
        assert_eq!(
            rawv(&mut con, &["CF.DEBUG", a]),
            rawv(&mut con, &["CF.DEBUG", b])
        );
        assert_eq!(
            rawv(&mut con, &["DEBUG", "DIGEST-VALUE", a]),
            rawv(&mut con, &["DEBUG", "DIGEST-VALUE", b])
        );
    }
    let members = cmd_items(&mut con, &["CF.MEXISTS", "dst"], &items("p", 900));
    assert!(
        matches!(&members, Value::Array(a) if a.iter().all(|v| *v == Value::Int(1))),
        "{}",
        show(&members)
    );
}
