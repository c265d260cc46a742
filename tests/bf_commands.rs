//! Integration tests of the BF.* commands against a real redis-server with the module:
//! replies in RESP2 and RESP3, exact error texts, key rules, configuration, limits and the
//! command table (spec sections 2, 3, 5.1, 6.2, 6.3, 7.1 and 9).
//!
//! Replies are compared through `show()`, a compact rendering of a raw `Value` that keeps
//! every type distinction the tests care about: `1` integer, `#t`/`#f` boolean, `nil`,
//! `+OK`/`+text` simple string, `"text"` bulk string, `!text` error (also inside arrays),
//! `[a,b]` array, `{k:v}` map.

mod common;
use common::*;

use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use redis::{Connection, ConnectionLike, Value};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const LOAD_FAILED: &str = "ERR Error loading the extension. Please check the server logs.";
const MAX_LINKS_ERR: &str =
    "ERR filter reached its maximum number of sub-filters (bf.bf-max-links)";
const MEMORY_ERR: &str =
    "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)";
const NO_MEMORY_CREATE: &str = "ERR Insufficient memory to create filter";

/// Sends a command and returns the raw reply: errors stay values (top-level and nested),
/// unlike `exec`, which turns any error inside an array into an `Err`.
fn raw_bytes(con: &mut Connection, args: &[&[u8]]) -> Value {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name).expect("command name"));
    for a in rest {
        c.arg(*a);
    }
    con.req_command(&c)
        .unwrap_or_else(|e| panic!("{:?}: client error {e}", show_args(args)))
}

fn show_args(args: &[&[u8]]) -> Vec<String> {
    args.iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Compact rendering of a reply (see the file doc).
fn show(v: &Value) -> String {
    let list = |items: &[Value]| items.iter().map(show).collect::<Vec<_>>().join(",");
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => i.to_string(),
        Value::Boolean(b) => if *b { "#t" } else { "#f" }.into(),
        Value::Okay => "+OK".into(),
        Value::SimpleString(s) => format!("+{s}"),
        Value::BulkString(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Value::ServerError(_) => format!("!{}", value_err_text(v).unwrap_or_default()),
        Value::Array(a) => format!("[{}]", list(a)),
        Value::Set(a) => format!("~[{}]", list(a)),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}:{}", show(k), show(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Double(d) => format!("{d}"),
        other => format!("{other:?}"),
    }
}

// Command runners. The plain ones take a command line split at spaces
// (`q(&mut con, "BF.ADD k a")`); the `*v` ones take the arguments one by one, for
// arguments that are empty, contain spaces or are computed.

fn rawv(con: &mut Connection, args: &[&str]) -> Value {
    let b: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    raw_bytes(con, &b)
}

/// `show()` of the reply.
fn qv(con: &mut Connection, args: &[&str]) -> String {
    show(&rawv(con, args))
}

/// The command must answer OK.
fn okv(con: &mut Connection, args: &[&str]) {
    assert_eq!(qv(con, args), "+OK", "{args:?}");
}

/// The command must answer an integer.
fn intv(con: &mut Connection, args: &[&str]) -> i64 {
    match rawv(con, args) {
        Value::Int(i) => i,
        other => panic!("{args:?}: expected an integer, got {}", show(&other)),
    }
}

/// The command must answer an error; returns its exact wire text.
fn errv(con: &mut Connection, args: &[&str]) -> String {
    let v = rawv(con, args);
    value_err_text(&v).unwrap_or_else(|| panic!("{args:?}: expected an error, got {}", show(&v)))
}

fn err_bytes(con: &mut Connection, args: &[&[u8]]) -> String {
    let v = raw_bytes(con, args);
    value_err_text(&v)
        .unwrap_or_else(|| panic!("{:?}: expected an error, got {}", show_args(args), show(&v)))
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

fn raw(con: &mut Connection, line: &str) -> Value {
    rawv(con, &words(line))
}

fn q(con: &mut Connection, line: &str) -> String {
    qv(con, &words(line))
}

fn ok(con: &mut Connection, line: &str) {
    okv(con, &words(line))
}

fn int(con: &mut Connection, line: &str) -> i64 {
    intv(con, &words(line))
}

fn err(con: &mut Connection, line: &str) -> String {
    errv(con, &words(line))
}

/// A command line followed by many items: `with_items("BF.MADD k", &items)`.
fn with_items<'a>(line: &'a str, items: &'a [String]) -> Vec<&'a str> {
    let mut v = words(line);
    v.extend(items.iter().map(String::as_str));
    v
}

fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Text of a bulk or simple string.
fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        other => panic!("expected a string, got {}", show(other)),
    }
}

fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        other => panic!("expected an array, got {}", show(&other)),
    }
}

/// Name/value pairs of a RESP3 map or a RESP2 flat array.
fn pairs(v: &Value) -> Vec<(String, Value)> {
    match v {
        Value::Map(m) => m.iter().map(|(k, v)| (text(k), v.clone())).collect(),
        Value::Array(a) => {
            assert!(a.len() % 2 == 0, "odd flat map: {}", show(v));
            a.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
        }
        other => panic!("expected a map, got {}", show(other)),
    }
}

fn field(v: &Value, name: &str) -> Value {
    pairs(v)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no field {name} in {}", show(v)))
}

/// `BF.DEBUG key` as lines.
fn debug(con: &mut Connection, key: &str) -> Vec<String> {
    items(rawv(con, &["BF.DEBUG", key]))
        .iter()
        .map(text)
        .collect()
}

/// One numeric BF.INFO field (RESP2 single-field form `[value]`).
fn info_num(con: &mut Connection, key: &str, f: &str) -> i64 {
    match items(rawv(con, &["BF.INFO", key, f])).as_slice() {
        [Value::Int(i)] => *i,
        other => panic!("BF.INFO {key} {f}: {other:?}"),
    }
}

fn card(con: &mut Connection, key: &str) -> i64 {
    intv(con, &["BF.CARD", key])
}

/// The whole filter as SCANDUMP gives it: `(iterator, bytes)` pairs up to the end marker.
fn scandump(con: &mut Connection, key: &str) -> Dump {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let reply = items(rawv(con, &["BF.SCANDUMP", key, &it.to_string()]));
        let (next, data) = match reply.as_slice() {
            [Value::Int(n), Value::BulkString(d)] => (*n, d.clone()),
            other => panic!("BF.SCANDUMP {key} {it}: {other:?}"),
        };
        if next == 0 {
            assert!(data.is_empty(), "end marker carries data");
            return out;
        }
        assert!(out.len() < 10_000, "SCANDUMP does not end");
        out.push((next, data));
        it = next;
    }
}

/// A SCANDUMP: `(iterator, data)` pairs, header first.
type Dump = Vec<(i64, Vec<u8>)>;

/// Everything observable about a filter (to check that an error changed nothing).
fn snapshot(con: &mut Connection, key: &str) -> (Vec<String>, String, Dump) {
    (
        debug(con, key),
        qv(con, &["BF.INFO", key]),
        scandump(con, key),
    )
}

fn arity(cmd: &str) -> String {
    format!("ERR wrong number of arguments for '{cmd}' command")
}

/// RESP2 integer / RESP3 boolean rendering of an "added/exists" answer.
fn b(resp3: bool, v: bool) -> &'static str {
    match (resp3, v) {
        (false, false) => "0",
        (false, true) => "1",
        (true, false) => "#f",
        (true, true) => "#t",
    }
}

/// `[b, b, ...]` for the given protocol.
fn bools(resp3: bool, vs: &[bool]) -> String {
    let parts: Vec<&str> = vs.iter().map(|v| b(resp3, *v)).collect();
    format!("[{}]", parts.join(","))
}

fn config_get(con: &mut Connection, name: &str) -> String {
    let v = rawv(con, &["CONFIG", "GET", name]);
    match pairs(&v).as_slice() {
        [(k, val)] if k == name => text(val),
        _ => panic!("CONFIG GET {name}: {}", show(&v)),
    }
}

/// Expected BF.INFO Size of a one-link filter per spec 6.2 (RedisBloom's sizing).
fn redisbloom_size(entries: u64, link_error: f64) -> u64 {
    let bpe = link_error.ln().abs() / 0.480453013918201;
    let bits = ((entries as f64 * bpe).floor() as u64).max(1);
    32 + 64 + bits.div_ceil(64) * 8
}

/// A numeric single-field BF.INFO value in either protocol.
fn info_num_any(con: &mut Connection, resp3: bool, key: &str, f: &str) -> i64 {
    let v = rawv(con, &["BF.INFO", key, f]);
    let inner = if resp3 {
        match pairs(&v).as_slice() {
            [(_, val)] => val.clone(),
            _ => panic!("BF.INFO {key} {f}: {}", show(&v)),
        }
    } else {
        match items(v).as_slice() {
            [val] => val.clone(),
            other => panic!("BF.INFO {key} {f}: {other:?}"),
        }
    };
    match inner {
        Value::Int(i) => i,
        other => panic!("BF.INFO {key} {f}: {}", show(&other)),
    }
}

/// Loads a dump into `key` with BF.LOADCHUNK.
fn load_dump(con: &mut Connection, key: &str, dump: &[(i64, Vec<u8>)]) {
    for (it, data) in dump {
        let it = it.to_string();
        let v = raw_bytes(con, &[b"BF.LOADCHUNK", key.as_bytes(), it.as_bytes(), data]);
        assert_eq!(show(&v), "+OK", "LOADCHUNK {key} {it}");
    }
}

fn mixed_case(name: &str) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

/// `ERR CONFIG SET failed (possibly related to argument '<name>') - <why>`
fn config_failed(name: &str, why: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
}

/// Starts `redis-server --loadmodule <so> <args>` directly; returns its exit status and log
/// once it exits (panics if it is still running after 10 s).
fn start_with_module_args(args: &[&str]) -> (ExitStatus, String) {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir: PathBuf =
        std::env::temp_dir().join(format!("ferrobloom-badargs-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create dir");
    let log = dir.join("redis.log");
    let so = module_path().expect("module path");
    let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let mut child = Command::new(bin)
        .arg("--port")
        .arg("0")
        .arg("--save")
        .arg("")
        .arg("--dir")
        .arg(&dir)
        .arg("--unixsocket")
        .arg(dir.join("redis.sock"))
        .arg("--logfile")
        .arg(&log)
        .arg("--loadmodule")
        .arg(&so)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redis-server");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_dir_all(&dir);
            panic!("redis-server with module args {args:?} kept running:\n{text}");
        }
        sleep(Duration::from_millis(10));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (status, text)
}

// ---------------------------------------------------------------------------------------------
// BF.RESERVE
// ---------------------------------------------------------------------------------------------

#[test]
fn reserve_creates_filters_with_redisbloom_sizes() {
    let s = Server::start();
    let mut con = s.conn();

    ok(&mut con, "BF.RESERVE bf 0.001 100");
    assert_eq!(
        q(&mut con, "BF.INFO bf"),
        "[+Capacity,100,+Size,296,+Number of filters,1,+Number of items inserted,0,\
         +Expansion rate,2]"
    );
    assert_eq!(q(&mut con, "TYPE bf"), "+MBbloom--");

    // Spec 6.2 table: scaling filters are sized exactly like RedisBloom's.
    for (error, cap, size, line) in [
        (
            "0.01",
            "10",
            112,
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:0 ratio:0.005",
        ),
        (
            "0.01",
            "100",
            240,
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005",
        ),
        (
            "0.05",
            "1000",
            1056,
            "bytes:960 bits:7680 hashes:6 hashwidth:64 capacity:1000 size:0 ratio:0.025",
        ),
        (
            "0.001",
            "50000",
            98976,
            "bytes:98880 bits:791040 hashes:11 hashwidth:64 capacity:50000 size:0 ratio:0.0005",
        ),
    ] {
        let key = format!("s-{error}-{cap}");
        okv(&mut con, &["BF.RESERVE", &key, error, cap]);
        assert_eq!(info_num(&mut con, &key, "SIZE"), size, "{key}");
        assert_eq!(
            debug(&mut con, &key),
            vec!["size:0".to_string(), line.into()]
        );
    }

    // EXPANSION sets the growth factor (case-insensitive keyword): the second link is 4x.
    ok(&mut con, "BF.RESERVE e4 0.01 10 expansion 4");
    assert_eq!(info_num(&mut con, "e4", "EXPANSION"), 4);
    let adds = numbered("x", 11);
    let reply = qv(&mut con, &with_items("BF.MADD e4", &adds));
    assert_eq!(reply.matches('1').count(), 11, "{reply}");
    let lines = debug(&mut con, "e4");
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[2].contains(" capacity:40 size:1 ratio:0.0025"),
        "{lines:?}"
    );
    assert_eq!(info_num(&mut con, "e4", "CAPACITY"), 50);

    // NONSCALING, EXPANSION 0 and both together: one link at the full error rate, no
    // expansion rate.
    for (key, extra) in [
        ("ns1", "NONSCALING"),
        ("ns2", "nonscaling"),
        ("ns3", "EXPANSION 0"),
        ("ns4", "EXPANSION 0 NONSCALING"),
        ("ns5", "NONSCALING EXPANSION 0"),
    ] {
        ok(&mut con, &format!("BF.RESERVE {key} 0.01 3 {extra}"));
        assert_eq!(
            q(&mut con, &format!("BF.INFO {key} EXPANSION")),
            "[nil]",
            "{key}"
        );
        assert_eq!(
            debug(&mut con, key),
            vec![
                "size:0".to_string(),
                "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:3 size:0 ratio:0.01".into()
            ],
            "{key}"
        );
        assert_eq!(info_num(&mut con, key, "SIZE"), 104, "{key}");
    }

    // Non-scaling filters are sized so the FPR at full capacity is within the rate: slightly
    // larger than RedisBloom's size (about 3.7% at 10%), never smaller.
    ok(&mut con, "BF.RESERVE nsbig 0.1 1000000 NONSCALING");
    let rb = redisbloom_size(1_000_000, 0.1);
    assert_eq!(rb, 599168);
    let size = info_num(&mut con, "nsbig", "SIZE") as u64;
    assert!(size > rb && size * 100 <= rb * 105, "size {size} vs {rb}");
    assert!(debug(&mut con, "nsbig")[1].contains(" hashes:4 "));

    // Error rates above 0.25 are stored as 0.25 (scaling: the first link has half).
    ok(&mut con, "BF.RESERVE clamp 0.5 100");
    assert!(debug(&mut con, "clamp")[1].ends_with(" ratio:0.125"));
    ok(&mut con, "BF.RESERVE clampns 0.99 100 NONSCALING");
    assert!(debug(&mut con, "clampns")[1].ends_with(" ratio:0.25"));
    ok(&mut con, "BF.RESERVE sci 1e-2 10");
    assert!(debug(&mut con, "sci")[1].ends_with(" ratio:0.005"));

    // Keywords only count in option positions: these are plain key names.
    ok(&mut con, "BF.RESERVE expansion 0.01 100");
    ok(&mut con, "BF.RESERVE NONSCALING 0.01 100");
    assert_eq!(info_num(&mut con, "NONSCALING", "EXPANSION"), 2);
    assert_eq!(q(&mut con, "TYPE expansion"), "+MBbloom--");

    // The smallest capacity (2^30, the largest, is in max_filter_memory_bound_on_creation).
    ok(&mut con, "BF.RESERVE one 0.01 1");
    assert_eq!(info_num(&mut con, "one", "CAPACITY"), 1);
}

#[test]
fn reserve_errors() {
    let s = Server::start();
    let mut con = s.conn();

    let rate_range = "ERR error rate must be in the range (0.000000, 1.000000)";
    let cap_range = "ERR capacity must be in the range [1, 1073741824]";
    let exp_range = "ERR expansion must be in the range [0, 32768]";
    let cases = [
        ("k abc 100", "ERR bad error rate"),
        ("k 0.01x 100", "ERR bad error rate"),
        ("k nan 100", "ERR bad error rate"),
        ("k 0 100", rate_range),
        ("k 1 100", rate_range),
        ("k -0.5 100", rate_range),
        ("k 1.5 100", rate_range),
        ("k inf 100", rate_range),
        ("k 0.01 abc", "ERR bad capacity"),
        ("k 0.01 1.5", "ERR bad capacity"),
        ("k 0.01 1e3", "ERR bad capacity"),
        ("k 0.01 +100", "ERR bad capacity"),
        ("k 0.01 0100", "ERR bad capacity"),
        ("k 0.01 0", cap_range),
        ("k 0.01 -1", cap_range),
        ("k 0.01 1073741825", cap_range),
        ("k 0.01 100 EXPANSION", "ERR no expansion"),
        ("k 0.01 100 NONSCALING EXPANSION", "ERR no expansion"),
        ("k 0.01 100 EXPANSION x", "ERR bad expansion"),
        ("k 0.01 100 EXPANSION 1.5", "ERR bad expansion"),
        ("k 0.01 100 EXPANSION 32769", exp_range),
        ("k 0.01 100 EXPANSION -1", exp_range),
        (
            "k 0.01 100 EXPANSION 2 NONSCALING",
            "Nonscaling filters cannot expand",
        ),
        (
            "k 0.01 100 NONSCALING EXPANSION 1",
            "Nonscaling filters cannot expand",
        ),
        // ferrobloom: unknown tokens are refused (RedisBloom ignores them).
        ("k 0.01 100 foo", "Unknown argument received"),
        ("k 0.01 100 NONSCALIN", "Unknown argument received"),
        ("k 0.01 100 EXPANSIONS 2", "Unknown argument received"),
        (
            "k 1e-300 100",
            "ERR sub-filter error rate too small (more than 128 hash functions)",
        ),
    ];
    for (args, want) in cases {
        let line = format!("BF.RESERVE {args}");
        assert_eq!(err(&mut con, &line), want, "{line}");
    }
    assert_eq!(
        errv(&mut con, &["BF.RESERVE", "k", "", "100"]),
        "ERR bad error rate"
    );
    assert_eq!(int(&mut con, "EXISTS k"), 0, "no error may create the key");

    // The largest expansion is valid.
    ok(&mut con, "BF.RESERVE k 0.01 100 EXPANSION 32768");
    assert_eq!(info_num(&mut con, "k", "EXPANSION"), 32768);

    // An existing filter is never replaced.
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    let before = snapshot(&mut con, "k");
    assert_eq!(err(&mut con, "BF.RESERVE k 0.5 10"), "ERR item exists");
    assert_eq!(
        err(&mut con, "BF.RESERVE k 0.01 100 NONSCALING"),
        "ERR item exists"
    );
    assert_eq!(snapshot(&mut con, "k"), before);
}

// ---------------------------------------------------------------------------------------------
// BF.ADD / BF.MADD / BF.EXISTS / BF.MEXISTS
// ---------------------------------------------------------------------------------------------

fn add_and_exists_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };

    assert_eq!(q(&mut con, "BF.EXISTS k a"), b(resp3, false));
    assert_eq!(q(&mut con, "BF.ADD k a"), b(resp3, true));
    assert_eq!(q(&mut con, "BF.ADD k a"), b(resp3, false));
    assert_eq!(q(&mut con, "BF.EXISTS k a"), b(resp3, true));
    assert_eq!(q(&mut con, "BF.EXISTS k b"), b(resp3, false));
    // Items are binary-safe and case-sensitive; the empty item is an item.
    assert_eq!(q(&mut con, "BF.EXISTS k A"), b(resp3, false));
    let nul = |con: &mut Connection, cmd: &str, item: &[u8]| {
        show(&raw_bytes(con, &[cmd.as_bytes(), b"bin", item]))
    };
    assert_eq!(nul(&mut con, "BF.ADD", b"a\x00b\xff"), b(resp3, true));
    assert_eq!(nul(&mut con, "BF.EXISTS", b"a\x00b\xff"), b(resp3, true));
    assert_eq!(nul(&mut con, "BF.EXISTS", b"a\x00c\xff"), b(resp3, false));
    assert_eq!(nul(&mut con, "BF.EXISTS", b"a"), b(resp3, false));
    assert_eq!(qv(&mut con, &["BF.ADD", "k", ""]), b(resp3, true));
    assert_eq!(qv(&mut con, &["BF.EXISTS", "k", ""]), b(resp3, true));
    assert_eq!(card(&mut con, "k"), 2);

    assert_eq!(
        q(&mut con, "BF.MADD k a b c b"),
        bools(resp3, &[false, true, true, false])
    );
    assert_eq!(
        qv(&mut con, &["BF.MEXISTS", "k", "a", "b", "c", "d", ""]),
        bools(resp3, &[true, true, true, false, true])
    );
    assert_eq!(q(&mut con, "BF.MEXISTS k zzz"), bools(resp3, &[false]));
    assert_eq!(card(&mut con, "k"), 4);
    assert_eq!(info_num_any(&mut con, resp3, "k", "ITEMS"), 4);

    // BF.MADD auto-creates with the defaults (capacity 100, error 0.01, expansion 2).
    assert_eq!(q(&mut con, "BF.MADD m x y"), bools(resp3, &[true, true]));
    assert_eq!(
        debug(&mut con, "m"),
        vec![
            "size:2".to_string(),
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:2 ratio:0.005".into()
        ]
    );

    // Missing key: EXISTS family answers "absent", never an error.
    assert_eq!(q(&mut con, "BF.EXISTS none a"), b(resp3, false));
    assert_eq!(
        q(&mut con, "BF.MEXISTS none a b"),
        bools(resp3, &[false, false])
    );
    assert_eq!(int(&mut con, "EXISTS none"), 0);

    // No false negatives, and the filter grows past its capacity while keeping its items.
    let many = numbered("item-", 1000);
    let reply = items(rawv(&mut con, &with_items("BF.MADD grow", &many)));
    assert_eq!(reply.len(), 1000);
    let added = reply.iter().filter(|v| show(v) == b(resp3, true)).count() as i64;
    assert!(
        reply
            .iter()
            .all(|v| [b(resp3, true), b(resp3, false)].contains(&show(v).as_str())),
        "{}",
        show(&Value::Array(reply.clone()))
    );
    assert!(added >= 990, "{added} of 1000 distinct items accepted");
    assert_eq!(card(&mut con, "grow"), added);
    let reply = qv(&mut con, &with_items("BF.MEXISTS grow", &many));
    assert_eq!(reply, bools(resp3, &[true; 1000]));
    // 100 + 200 + 400 + 800 >= 1000: four links.
    assert_eq!(info_num_any(&mut con, resp3, "grow", "FILTERS"), 4);
    assert_eq!(info_num_any(&mut con, resp3, "grow", "CAPACITY"), 1500);
}

#[test]
fn add_madd_exists_mexists_resp2() {
    add_and_exists_in(false);
}

#[test]
fn add_madd_exists_mexists_resp3() {
    add_and_exists_in(true);
}

// ---------------------------------------------------------------------------------------------
// Non-scaling filters when full
// ---------------------------------------------------------------------------------------------

fn nonscaling_full_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
    let (t, f) = (b(resp3, true), b(resp3, false));
    let full = "!ERR non scaling filter is full";

    // The array stops right after the "full" error.
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT x CAPACITY 3 NONSCALING ITEMS a b c d d"
        ),
        format!("[{t},{t},{t},{full}]")
    );
    let info = if resp3 {
        "{+Capacity:3,+Size:104,+Number of filters:1,+Number of items inserted:3,\
         +Expansion rate:nil}"
    } else {
        "[+Capacity,3,+Size,104,+Number of filters,1,+Number of items inserted,3,\
         +Expansion rate,nil]"
    };
    assert_eq!(q(&mut con, "BF.INFO x"), info);
    let before = snapshot(&mut con, "x");

    // BF.ADD of a new item: an error reply; of an existing item: 0.
    assert_eq!(q(&mut con, "BF.ADD x d"), full);
    assert_eq!(q(&mut con, "BF.ADD x a"), f);
    // Existing items before the new one answer 0, and processing stops at the error.
    assert_eq!(
        q(&mut con, "BF.MADD x a b e c"),
        format!("[{f},{f},{full}]")
    );
    assert_eq!(
        q(&mut con, "BF.INSERT x ITEMS c e a"),
        format!("[{f},{full}]")
    );
    assert_eq!(
        q(&mut con, "BF.INSERT x NOCREATE ITEMS e"),
        format!("[{full}]")
    );
    assert_eq!(snapshot(&mut con, "x"), before);
    assert_eq!(card(&mut con, "x"), 3);
    assert_eq!(
        q(&mut con, "BF.MEXISTS x a b c d"),
        bools(resp3, &[true, true, true, false])
    );

    // BF.RESERVE ... NONSCALING behaves the same through BF.ADD.
    ok(&mut con, "BF.RESERVE y 0.01 2 NONSCALING");
    assert_eq!(q(&mut con, "BF.ADD y a"), t);
    assert_eq!(q(&mut con, "BF.ADD y b"), t);
    assert_eq!(q(&mut con, "BF.ADD y c"), full);
    assert_eq!(card(&mut con, "y"), 2);
}

#[test]
fn nonscaling_full_resp2() {
    nonscaling_full_in(false);
}

#[test]
fn nonscaling_full_resp3() {
    nonscaling_full_in(true);
}

// ---------------------------------------------------------------------------------------------
// BF.INSERT
// ---------------------------------------------------------------------------------------------

#[test]
fn insert_options() {
    let s = Server::start();
    let mut con = s.conn();

    // Defaults when no option is given.
    assert_eq!(q(&mut con, "BF.INSERT d ITEMS a b a"), "[1,1,0]");
    assert_eq!(
        debug(&mut con, "d"),
        vec![
            "size:2".to_string(),
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:2 ratio:0.005".into()
        ]
    );
    assert_eq!(info_num(&mut con, "d", "EXPANSION"), 2);

    // CAPACITY / ERROR / EXPANSION, keywords in any case and order.
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT o expansion 4 error 0.001 Capacity 50 items a"
        ),
        "[1]"
    );
    assert_eq!(
        debug(&mut con, "o")[1],
        "bytes:104 bits:832 hashes:11 hashwidth:64 capacity:50 size:1 ratio:0.0005"
    );
    assert_eq!(info_num(&mut con, "o", "EXPANSION"), 4);
    assert_eq!(info_num(&mut con, "o", "CAPACITY"), 50);

    // ERROR above 0.25 is clamped.
    assert_eq!(q(&mut con, "BF.INSERT c ERROR 0.9 ITEMS a"), "[1]");
    assert!(debug(&mut con, "c")[1].ends_with(" ratio:0.125"));

    // NONSCALING, EXPANSION 0, and NONSCALING with an EXPANSION (accepted here).
    for (key, opts) in [
        ("n1", "NONSCALING"),
        ("n2", "EXPANSION 0"),
        ("n3", "NONSCALING EXPANSION 3"),
        ("n4", "EXPANSION 3 nonscaling"),
    ] {
        let line = format!("BF.INSERT {key} CAPACITY 3 ERROR 0.01 {opts} ITEMS a");
        assert_eq!(q(&mut con, &line), "[1]", "{line}");
        assert_eq!(
            q(&mut con, &format!("BF.INFO {key} EXPANSION")),
            "[nil]",
            "{key}"
        );
        assert_eq!(info_num(&mut con, key, "SIZE"), 104, "{key}");
    }

    // Items may look like keywords: everything after ITEMS is an item.
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT kw ITEMS ITEMS NOCREATE CAPACITY 5 NONSCALING"
        ),
        "[1,1,1,1,1]"
    );
    assert_eq!(info_num(&mut con, "kw", "CAPACITY"), 100);
    assert_eq!(info_num(&mut con, "kw", "EXPANSION"), 2);
    assert_eq!(
        q(
            &mut con,
            "BF.MEXISTS kw ITEMS NOCREATE CAPACITY 5 NONSCALING x"
        ),
        "[1,1,1,1,1,0]"
    );
    // A key that spells a keyword is a key.
    assert_eq!(q(&mut con, "BF.INSERT nocreate ITEMS a"), "[1]");
    assert_eq!(q(&mut con, "TYPE nocreate"), "+MBbloom--");

    // Options are ignored for an existing key; NOCREATE works on an existing key.
    assert_eq!(
        q(&mut con, "BF.INSERT o CAPACITY 7 EXPANSION 9 ITEMS b a"),
        "[1,0]"
    );
    assert_eq!(info_num(&mut con, "o", "CAPACITY"), 50);
    assert_eq!(info_num(&mut con, "o", "EXPANSION"), 4);
    assert_eq!(q(&mut con, "BF.INSERT o NOCREATE ITEMS c a"), "[1,0]");
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT o NOCREATE NONSCALING EXPANSION 2 ITEMS d"
        ),
        "[1]"
    );
    assert_eq!(card(&mut con, "o"), 4);

    // NOCREATE on a missing key.
    assert_eq!(
        err(&mut con, "BF.INSERT missing NOCREATE ITEMS a"),
        "ERR not found"
    );
    assert_eq!(int(&mut con, "EXISTS missing"), 0);

    // RESP3: booleans.
    let mut con3 = s.conn_resp3();
    assert_eq!(
        q(&mut con3, "BF.INSERT r3 CAPACITY 10 ITEMS a a"),
        "[#t,#f]"
    );
}

#[test]
fn insert_errors() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 100");
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    let before = snapshot(&mut con, "k");

    let wrong_arity = arity("bf.insert");
    let nocreate = "ERR NOCREATE cannot be combined with CAPACITY or ERROR";
    let cases = [
        ("CAPACITY 0 ITEMS a", "Bad capacity"),
        ("CAPACITY -1 ITEMS a", "Bad capacity"),
        ("CAPACITY x ITEMS a", "Bad capacity"),
        ("CAPACITY 1.5 ITEMS a", "Bad capacity"),
        ("CAPACITY 1073741825 ITEMS a", "Bad capacity"),
        ("ERROR 0 ITEMS a", "Bad error rate"),
        ("ERROR 1 ITEMS a", "Bad error rate"),
        ("ERROR -0.1 ITEMS a", "Bad error rate"),
        ("ERROR x ITEMS a", "Bad error rate"),
        ("EXPANSION -1 ITEMS a", "Bad expansion"),
        ("EXPANSION 32769 ITEMS a", "Bad expansion"),
        ("EXPANSION x ITEMS a", "Bad expansion"),
        // Keywords are whole words only.
        ("ixyz a", "Unknown argument received"),
        ("i a", "Unknown argument received"),
        ("n ITEMS a", "Unknown argument received"),
        ("NOCREATEX ITEMS a", "Unknown argument received"),
        ("e 2 ITEMS a", "Unknown argument received"),
        ("cap 10 ITEMS a", "Unknown argument received"),
        ("foo ITEMS a", "Unknown argument received"),
        ("a b", "Unknown argument received"),
        // ferrobloom refuses what the docs call an error (RedisBloom accepts it).
        ("NOCREATE CAPACITY 10 ITEMS a", nocreate),
        ("ERROR 0.1 NOCREATE ITEMS a", nocreate),
        // Missing option values, no ITEMS, nothing after ITEMS: wrong arity.
        ("CAPACITY", &wrong_arity),
        ("CAPACITY 10 ERROR", &wrong_arity),
        ("NOCREATE NONSCALING", &wrong_arity),
        ("CAPACITY 10 ITEMS", &wrong_arity),
    ];
    for key in ["k", "new"] {
        for (args, want) in cases {
            let line = format!("BF.INSERT {key} {args}");
            assert_eq!(err(&mut con, &line), want, "{line}");
        }
    }
    assert_eq!(snapshot(&mut con, "k"), before);
    assert_eq!(int(&mut con, "EXISTS new"), 0);

    // Creation failures are command errors, not array elements.
    assert_eq!(
        err(&mut con, "BF.INSERT new ERROR 1e-300 ITEMS a"),
        "ERR sub-filter error rate too small (more than 128 hash functions)"
    );
    assert_eq!(int(&mut con, "EXISTS new"), 0);
}

// ---------------------------------------------------------------------------------------------
// BF.INFO / BF.CARD / BF.DEBUG
// ---------------------------------------------------------------------------------------------

#[test]
fn info_full_and_single_fields() {
    let s = Server::start();
    let mut c2 = s.conn();
    let mut c3 = s.conn_resp3();
    ok(&mut c2, "BF.RESERVE bf 0.001 100");
    assert_eq!(q(&mut c2, "BF.MADD bf a b c"), "[1,1,1]");

    assert_eq!(
        q(&mut c2, "BF.INFO bf"),
        "[+Capacity,100,+Size,296,+Number of filters,1,+Number of items inserted,3,\
         +Expansion rate,2]"
    );
    assert_eq!(
        q(&mut c3, "BF.INFO bf"),
        "{+Capacity:100,+Size:296,+Number of filters:1,+Number of items inserted:3,\
         +Expansion rate:2}"
    );
    for (f, label, value) in [
        ("CAPACITY", "Capacity", "100"),
        ("capacity", "Capacity", "100"),
        ("SIZE", "Size", "296"),
        ("Filters", "Number of filters", "1"),
        ("ITEMS", "Number of items inserted", "3"),
        ("expansion", "Expansion rate", "2"),
    ] {
        assert_eq!(
            qv(&mut c2, &["BF.INFO", "bf", f]),
            format!("[{value}]"),
            "{f}"
        );
        assert_eq!(
            qv(&mut c3, &["BF.INFO", "bf", f]),
            format!("{{+{label}:{value}}}"),
            "{f}"
        );
    }

    // Non-scaling: the expansion rate is a null in both protocols.
    ok(&mut c2, "BF.RESERVE ns 0.01 3 NONSCALING");
    assert_eq!(q(&mut c2, "BF.INFO ns EXPANSION"), "[nil]");
    assert_eq!(q(&mut c3, "BF.INFO ns EXPANSION"), "{+Expansion rate:nil}");
    assert_eq!(
        field(&raw(&mut c3, "BF.INFO ns"), "Expansion rate"),
        Value::Nil
    );

    // Capacity, size and filter count follow growth.
    ok(&mut c2, "BF.RESERVE g 0.01 10");
    let adds = numbered("g", 40);
    qv(&mut c2, &with_items("BF.MADD g", &adds));
    let links = info_num(&mut c2, "g", "FILTERS");
    assert!(links >= 3, "{links}");
    let caps: i64 = [10, 20, 40, 80][..links as usize].iter().sum();
    assert_eq!(info_num(&mut c2, "g", "CAPACITY"), caps);
    let bytes: i64 = [16, 32, 72, 160][..links as usize].iter().sum();
    assert_eq!(info_num(&mut c2, "g", "SIZE"), 32 + 64 * links + bytes);
    assert_eq!(info_num(&mut c2, "g", "ITEMS"), card(&mut c2, "g"));

    // Errors.
    for f in ["capcaity", "CAP", "", "ITEMSX", "Number of filters"] {
        assert_eq!(
            errv(&mut c2, &["BF.INFO", "bf", f]),
            "Invalid information value",
            "{f:?}"
        );
        assert_eq!(
            errv(&mut c3, &["BF.INFO", "bf", f]),
            "Invalid information value",
            "{f:?}"
        );
    }
    assert_eq!(err(&mut c2, "BF.INFO none"), "ERR not found");
    assert_eq!(err(&mut c2, "BF.INFO none bogus"), "ERR not found");
    assert_eq!(err(&mut c3, "BF.INFO none SIZE"), "ERR not found");
}

#[test]
fn card_counts_accepted_items() {
    let s = Server::start();
    let mut con = s.conn();
    assert_eq!(card(&mut con, "none"), 0);
    assert_eq!(int(&mut con, "EXISTS none"), 0);
    ok(&mut con, "BF.RESERVE k 0.01 10");
    assert_eq!(card(&mut con, "k"), 0);
    assert_eq!(q(&mut con, "BF.MADD k a b a"), "[1,1,0]");
    assert_eq!(card(&mut con, "k"), 2);
    q(&mut con, "BF.ADD k b");
    assert_eq!(card(&mut con, "k"), 2);
    // RESP3 keeps an integer.
    let mut c3 = s.conn_resp3();
    assert_eq!(q(&mut c3, "BF.CARD k"), "2");
    assert_eq!(q(&mut c3, "BF.CARD none"), "0");
}

#[test]
fn debug_lines() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE bf 0.01 10");
    assert_eq!(
        debug(&mut con, "bf"),
        vec![
            "size:0".to_string(),
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:0 ratio:0.005".into()
        ]
    );

    let adds: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    qv(&mut con, &with_items("BF.MADD bf", &adds));
    let n = card(&mut con, "bf");
    assert!((90..=100).contains(&n), "{n}");
    let lines = debug(&mut con, "bf");
    assert_eq!(
        lines,
        vec![
            format!("size:{n}"),
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005".into(),
            "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025".into(),
            "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125".into(),
            format!(
                "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:{} ratio:0.000625",
                n - 70
            ),
        ]
    );

    // %g formatting of small ratios (exponent form).
    ok(&mut con, "BF.RESERVE tiny 0.000125 10");
    assert!(debug(&mut con, "tiny")[1].ends_with(" ratio:6.25e-05"));

    assert_eq!(err(&mut con, "BF.DEBUG none"), "ERR not found");
    // RESP3: the same bulk strings.
    let mut c3 = s.conn_resp3();
    assert_eq!(
        q(&mut c3, "BF.DEBUG tiny"),
        "[\"size:0\",\"bytes:32 bits:256 hashes:14 hashwidth:64 capacity:10 size:0 \
         ratio:6.25e-05\"]"
    );
}

// ---------------------------------------------------------------------------------------------
// BF.SCANDUMP / BF.LOADCHUNK
// ---------------------------------------------------------------------------------------------

#[test]
fn scandump_protocol() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE bf 0.01 10");
    let adds = numbered("i", 60);
    qv(&mut con, &with_items("BF.MADD bf", &adds));
    let links = info_num(&mut con, "bf", "FILTERS");
    assert!(links >= 3);

    // Iterator 0: [1, header]; the header is ferrobloom's own (magic FBbf, version 1).
    let head = items(raw(&mut con, "BF.SCANDUMP bf 0"));
    let header = match head.as_slice() {
        [Value::Int(1), Value::BulkString(h)] => h.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(&header[..5], b"FBbf\x01");
    assert_eq!(header.len(), 24 + 40 * links as usize);

    // Then one chunk per link (never spanning two), iterator = previous + length.
    let chunks = scandump(&mut con, "bf");
    let link_bytes = [16usize, 32, 72, 160];
    assert_eq!(chunks.len(), 1 + links as usize);
    assert_eq!(chunks[0], (1, header));
    let mut it = 1i64;
    for (i, (next, data)) in chunks[1..].iter().enumerate() {
        assert_eq!(data.len(), link_bytes[i], "chunk {i}");
        it += data.len() as i64;
        assert_eq!(*next, it, "chunk {i}");
        assert!(data.iter().any(|&b| b != 0), "link {i} has bits set");
    }
    // A chunk can start inside a link: it runs to that link's end.
    assert_eq!(
        items(raw(&mut con, "BF.SCANDUMP bf 5")),
        vec![Value::Int(17), Value::BulkString(chunks[1].1[4..].to_vec())]
    );
    // Past the end, or before the start: [0, ""].
    for it in [
        it.to_string(),
        (it + 100).to_string(),
        "-5".into(),
        i64::MAX.to_string(),
        i64::MIN.to_string(),
    ] {
        assert_eq!(
            qv(&mut con, &["BF.SCANDUMP", "bf", &it]),
            "[0,\"\"]",
            "{it}"
        );
    }
    let mut c3 = s.conn_resp3();
    assert_eq!(
        qv(&mut c3, &["BF.SCANDUMP", "bf", &it.to_string()]),
        "[0,\"\"]"
    );

    // Errors: the key is checked before the iterator.
    assert_eq!(
        err(&mut con, "BF.SCANDUMP bf abc"),
        "Second argument must be numeric"
    );
    assert_eq!(
        err(&mut con, "BF.SCANDUMP bf 1.5"),
        "Second argument must be numeric"
    );
    assert_eq!(err(&mut con, "BF.SCANDUMP none 0"), "ERR not found");
    assert_eq!(err(&mut con, "BF.SCANDUMP none abc"), "ERR not found");
}

#[test]
fn loadchunk_restores_a_dump() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE src 0.01 10 EXPANSION 3");
    let adds = numbered("item", 100);
    qv(&mut con, &with_items("BF.MADD src", &adds));
    let dump = scandump(&mut con, "src");

    load_dump(&mut con, "dst", &dump);
    assert_eq!(q(&mut con, "TYPE dst"), "+MBbloom--");
    assert_eq!(debug(&mut con, "dst"), debug(&mut con, "src"));
    assert_eq!(q(&mut con, "BF.INFO dst"), q(&mut con, "BF.INFO src"));
    assert_eq!(scandump(&mut con, "dst"), dump);
    assert_eq!(
        qv(&mut con, &with_items("BF.MEXISTS dst", &adds)),
        format!("[{}]", vec!["1"; 100].join(","))
    );
    let others = numbered("other", 100);
    assert_eq!(
        qv(&mut con, &with_items("BF.MEXISTS dst", &others)),
        qv(&mut con, &with_items("BF.MEXISTS src", &others))
    );
    // The restored filter keeps working (and keeps its expansion).
    assert_eq!(info_num(&mut con, "dst", "EXPANSION"), 3);
    assert_eq!(q(&mut con, "BF.ADD dst new-item"), "1");
    assert_eq!(card(&mut con, "dst"), card(&mut con, "src") + 1);

    // A non-scaling filter round-trips too; header first, chunks in any order.
    assert_eq!(
        q(&mut con, "BF.INSERT ns CAPACITY 50 NONSCALING ITEMS a b"),
        "[1,1]"
    );
    let dump = scandump(&mut con, "ns");
    load_dump(&mut con, "ns2", &dump[..1]);
    assert_eq!(q(&mut con, "BF.MEXISTS ns2 a b"), "[0,0]");
    load_dump(&mut con, "ns2", &dump[1..]);
    assert_eq!(q(&mut con, "BF.MEXISTS ns2 a b c"), "[1,1,0]");
    assert_eq!(q(&mut con, "BF.INFO ns2"), q(&mut con, "BF.INFO ns"));

    // A dump of a multi-link filter can be loaded chunk by chunk in reverse link order.
    let dump = scandump(&mut con, "src");
    let mut reordered = vec![dump[0].clone()];
    reordered.extend(dump[1..].iter().rev().cloned());
    load_dump(&mut con, "rev", &reordered);
    assert_eq!(scandump(&mut con, "rev"), dump);
}

#[test]
fn loadchunk_errors() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 10");
    let adds = numbered("x", 15);
    qv(&mut con, &with_items("BF.MADD k", &adds));
    assert_eq!(info_num(&mut con, "k", "FILTERS"), 2); // links of 16 and 32 bytes
    let dump = scandump(&mut con, "k");
    let header = dump[0].1.clone();
    let before = snapshot(&mut con, "k");

    let lc = |con: &mut Connection, key: &str, it: &str, data: &[u8]| {
        err_bytes(con, &[b"BF.LOADCHUNK", key.as_bytes(), it.as_bytes(), data])
    };
    assert_eq!(
        lc(&mut con, "k", "abc", b"x"),
        "ERR Second argument must be numeric"
    );
    assert_eq!(
        lc(&mut con, "none", "1.5", b"x"),
        "ERR Second argument must be numeric"
    );
    // A header onto an existing filter is a data chunk that does not fit.
    assert_eq!(lc(&mut con, "k", "1", &header), "ERR received bad data");
    // Empty data, iterator 0 or negative.
    assert_eq!(lc(&mut con, "k", "17", b""), "ERR received bad data");
    assert_eq!(lc(&mut con, "k", "0", b"abcd"), "ERR received bad data");
    assert_eq!(lc(&mut con, "k", "-3", b"abcd"), "ERR received bad data");
    // Offsets: 48 bytes in all; a chunk starting at byte 48 or later has no link.
    assert_eq!(
        lc(&mut con, "k", "58", &[0xff; 8]),
        "ERR invalid offset - no link found"
    );
    assert_eq!(
        lc(&mut con, "k", "1000", &[0xff; 8]),
        "ERR invalid offset - no link found"
    );
    // A chunk longer than the rest of its link (spanning links, or past the end).
    assert_eq!(
        lc(&mut con, "k", "25", &[0xff; 16]),
        "ERR invalid chunk - Too big for current filter"
    );
    assert_eq!(
        lc(&mut con, "k", "58", &[0xff; 40]),
        "ERR invalid chunk - Too big for current filter"
    );
    assert_eq!(
        snapshot(&mut con, "k"),
        before,
        "failed loads change nothing"
    );

    // A valid chunk overwrites exactly its bytes (here: the whole first link).
    let v = raw_bytes(&mut con, &[b"BF.LOADCHUNK", b"k", b"17", &[0u8; 16]]);
    assert_eq!(show(&v), "+OK");
    let after = scandump(&mut con, "k");
    assert_ne!(dump[1].1, vec![0u8; 16]);
    assert_eq!(after[1], (17, vec![0u8; 16]));
    assert_eq!((&after[0], &after[2]), (&dump[0], &dump[2]));

    // Missing key: only a header creates it; bad headers are refused.
    assert_eq!(lc(&mut con, "none", "17", &[0u8; 16]), "ERR not found");
    let mut bad_magic = header.clone();
    bad_magic[0] = b'X';
    let mut bad_version = header.clone();
    bad_version[4] = 9;
    let mut bad_links = header.clone();
    bad_links[20] = 3; // says 3 links, has 2
    let mut bad_total = header.clone();
    bad_total[8] ^= 1; // total items no longer the sum of the links
    for (what, h) in [
        ("garbage", b"not a header".to_vec()),
        ("empty", Vec::new()),
        ("truncated", header[..header.len() - 1].to_vec()),
        ("extended", [header.clone(), vec![0]].concat()),
        ("magic", bad_magic),
        ("version", bad_version),
        ("link count", bad_links),
        ("total", bad_total),
    ] {
        assert_eq!(
            lc(&mut con, "none", "1", &h),
            "ERR received bad data",
            "{what}"
        );
    }
    assert_eq!(int(&mut con, "EXISTS none"), 0);

    // The configured limits apply to loaded headers as well.
    ok(&mut con, "CONFIG SET bf.bf-max-links 1");
    assert_eq!(lc(&mut con, "none", "1", &header), "ERR received bad data");
    ok(&mut con, "CONFIG SET bf.bf-max-links 64");
    ok(&mut con, "BF.RESERVE big 0.01 5000");
    assert!(info_num(&mut con, "big", "SIZE") > 4096);
    let big_header = scandump(&mut con, "big")[0].1.clone();
    ok(&mut con, "CONFIG SET bf.max-filter-memory 4096");
    assert_eq!(
        lc(&mut con, "none", "1", &big_header),
        "ERR received bad data"
    );
    assert_eq!(int(&mut con, "EXISTS none"), 0);
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1mb");
    let big_dump = scandump(&mut con, "big");
    load_dump(&mut con, "none", &big_dump);
    assert_eq!(debug(&mut con, "none"), debug(&mut con, "big"));
}

// ---------------------------------------------------------------------------------------------
// Key rules, arity, "errors change nothing"
// ---------------------------------------------------------------------------------------------

#[test]
fn key_rules_missing_and_wrong_type() {
    let s = Server::start();
    let mut c2 = s.conn();
    let mut c3 = s.conn_resp3();
    ok(&mut c2, "SET str hello");
    assert_eq!(int(&mut c2, "RPUSH list a b"), 2);
    // The other filter type of the module is a wrong type too.
    ok(&mut c2, "CF.RESERVE cuckoo 1000");
    let cuckoo = q(&mut c2, "CF.INFO cuckoo");

    for con in [&mut c2, &mut c3] {
        for key in ["str", "list", "cuckoo"] {
            for cmd in [
                "BF.RESERVE {} 0.01 100",
                "BF.ADD {} a",
                "BF.MADD {} a b",
                "BF.INSERT {} ITEMS a",
                "BF.INSERT {} CAPACITY 10 ITEMS a",
                "BF.INSERT {} NOCREATE ITEMS a",
                "BF.INFO {}",
                "BF.INFO {} CAPACITY",
                "BF.CARD {}",
                "BF.DEBUG {}",
                "BF.SCANDUMP {} 0",
                "BF.SCANDUMP {} abc",
                "BF.LOADCHUNK {} 1 FBbf-not-a-header",
                "BF.LOADCHUNK {} 17 data",
            ] {
                let line = cmd.replace("{}", key);
                assert_eq!(err(con, &line), WRONGTYPE, "{line}");
            }
            // The EXISTS family answers "absent" instead.
            let v = qv(con, &["BF.EXISTS", key, "a"]);
            assert!(v == "0" || v == "#f", "{v}");
            let v = qv(con, &["BF.MEXISTS", key, "a", "b"]);
            assert!(v == "[0,0]" || v == "[#f,#f]", "{v}");
        }
    }
    assert_eq!(q(&mut c2, "GET str"), "\"hello\"");
    assert_eq!(q(&mut c2, "LRANGE list 0 -1"), "[\"a\",\"b\"]");
    assert_eq!(q(&mut c2, "CF.INFO cuckoo"), cuckoo);
    assert_eq!(q(&mut c3, "BF.EXISTS str a"), "#f");
    assert_eq!(q(&mut c2, "BF.EXISTS str hello"), "0");

    // Missing keys.
    for con in [&mut c2, &mut c3] {
        for line in [
            "BF.INFO none",
            "BF.INFO none ITEMS",
            "BF.DEBUG none",
            "BF.SCANDUMP none 0",
            "BF.SCANDUMP none 1",
            "BF.INSERT none NOCREATE ITEMS a b",
            "BF.LOADCHUNK none 9 12345678",
        ] {
            assert_eq!(err(con, line), "ERR not found", "{line}");
        }
        assert_eq!(q(con, "BF.CARD none"), "0");
    }
    assert_eq!(q(&mut c2, "BF.EXISTS none a"), "0");
    assert_eq!(q(&mut c3, "BF.EXISTS none a"), "#f");
    assert_eq!(q(&mut c2, "BF.MEXISTS none a b"), "[0,0]");
    assert_eq!(q(&mut c3, "BF.MEXISTS none a b"), "[#f,#f]");
    assert_eq!(int(&mut c2, "EXISTS none"), 0, "reads never create keys");
    assert_eq!(int(&mut c2, "DBSIZE"), 3);
}

#[test]
fn wrong_arity_for_every_command() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 100");
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    let before = snapshot(&mut con, "k");

    // Argument lists after the command name; "" is no argument at all.
    let cases: &[(&str, &[&str])] = &[
        (
            "bf.reserve",
            &[
                "k",
                "k 0.01",
                "k 0.01 100 EXPANSION 2 NONSCALING LAYOUT blocked x",
            ],
        ),
        ("bf.add", &["", "k", "k a b"]),
        ("bf.madd", &["", "k"]),
        (
            "bf.insert",
            &["", "k", "k ITEMS", "k CAPACITY", "k NOCREATE NONSCALING"],
        ),
        ("bf.exists", &["", "k", "k a b"]),
        ("bf.mexists", &["", "k"]),
        ("bf.info", &["", "k CAPACITY SIZE"]),
        ("bf.card", &["", "k a"]),
        ("bf.scandump", &["", "k", "k 0 1"]),
        ("bf.loadchunk", &["", "k", "k 1", "k 1 a b"]),
        ("bf.debug", &["", "k a"]),
    ];
    for (name, arg_lists) in cases {
        for rest in *arg_lists {
            // The reply names the command as registered (lowercase), whatever the case sent.
            for sent in [name.to_uppercase(), name.to_string(), mixed_case(name)] {
                let line = format!("{sent} {rest}");
                assert_eq!(err(&mut con, &line), arity(name), "{line}");
            }
        }
    }
    assert_eq!(snapshot(&mut con, "k"), before);
    assert_eq!(int(&mut con, "DBSIZE"), 1);
}

#[test]
fn errors_change_nothing() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 10 EXPANSION 2");
    let adds = numbered("x", 25);
    qv(&mut con, &with_items("BF.MADD k", &adds));
    ok(&mut con, "BF.RESERVE full 0.01 1 NONSCALING");
    assert_eq!(q(&mut con, "BF.ADD full a"), "1");
    let before = (snapshot(&mut con, "k"), snapshot(&mut con, "full"));

    let failing = [
        "BF.RESERVE k 0.01 10",
        "BF.RESERVE k x 10",
        "BF.INSERT k CAPACITY 0 ITEMS new",
        "BF.INSERT k ERROR 2 ITEMS new",
        "BF.INSERT k bogus ITEMS new",
        "BF.INSERT k NOCREATE CAPACITY 5 ITEMS new",
        "BF.INSERT k ITEMS",
        "BF.ADD k new extra",
        "BF.INFO k bogus",
        "BF.SCANDUMP k x",
        "BF.LOADCHUNK k x data",
        "BF.LOADCHUNK k 100000 data",
        "BF.LOADCHUNK k 1 garbage",
        "BF.ADD full b",
        "BF.LOADCHUNK full 1 garbage",
    ];
    for line in failing {
        err(&mut con, line);
    }
    assert_eq!(
        (snapshot(&mut con, "k"), snapshot(&mut con, "full")),
        before
    );
    assert_eq!(int(&mut con, "DBSIZE"), 2);
}

// ---------------------------------------------------------------------------------------------
// Auto-creation defaults and configuration
// ---------------------------------------------------------------------------------------------

#[test]
fn auto_create_uses_configured_defaults() {
    let s = Server::start();
    let mut con = s.conn();

    // Built-in defaults: capacity 100, error 0.01, expansion 2 (Size 240 with one item).
    assert_eq!(q(&mut con, "BF.ADD d0 x"), "1");
    assert_eq!(
        q(&mut con, "BF.INFO d0"),
        "[+Capacity,100,+Size,240,+Number of filters,1,+Number of items inserted,1,\
         +Expansion rate,2]"
    );

    ok(&mut con, "CONFIG SET bf.bf-initial-size 500");
    for (key, cmd) in [
        ("a1", "BF.ADD a1 x"),
        ("a2", "BF.MADD a2 x y"),
        ("a3", "BF.INSERT a3 ITEMS x"),
    ] {
        assert!(q(&mut con, cmd).contains('1'), "{cmd}");
        assert_eq!(info_num(&mut con, key, "CAPACITY"), 500, "{key}");
        assert!(debug(&mut con, key)[1].ends_with(" ratio:0.005"), "{key}");
    }
    // Explicit parameters win over the defaults.
    assert_eq!(q(&mut con, "BF.INSERT a4 CAPACITY 20 ITEMS x"), "[1]");
    assert_eq!(info_num(&mut con, "a4", "CAPACITY"), 20);
    ok(&mut con, "BF.RESERVE a5 0.001 100");
    assert_eq!(info_num(&mut con, "a5", "SIZE"), 296);

    ok(&mut con, "CONFIG SET bf.bf-error-rate 0.02");
    for (key, cmd) in [
        ("b1", "BF.ADD b1 x"),
        ("b2", "BF.MADD b2 x"),
        ("b3", "BF.INSERT b3 ITEMS x"),
    ] {
        assert!(q(&mut con, cmd).contains('1'), "{cmd}");
        let line = &debug(&mut con, key)[1];
        assert!(
            line.contains(" capacity:500 ") && line.ends_with(" ratio:0.01"),
            "{line}"
        );
    }
    assert_eq!(q(&mut con, "BF.INSERT b4 ERROR 0.001 ITEMS x"), "[1]");
    assert!(
        debug(&mut con, "b4")[1].ends_with(" ratio:0.0005"),
        "explicit ERROR wins"
    );
    // Changing the defaults does not touch existing filters.
    assert_eq!(info_num(&mut con, "a1", "CAPACITY"), 500);
    assert!(debug(&mut con, "a1")[1].ends_with(" ratio:0.005"));

    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 3");
    q(&mut con, "BF.ADD c1 x");
    assert_eq!(info_num(&mut con, "c1", "EXPANSION"), 3);
    ok(&mut con, "BF.RESERVE c2 0.01 10");
    assert_eq!(info_num(&mut con, "c2", "EXPANSION"), 3);

    // Expansion factor 0: auto-created and reserved filters are non-scaling (one link at the
    // full error rate) unless the command asks for an expansion.
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 0");
    for (key, cmd) in [
        ("n1", "BF.ADD n1 x"),
        ("n2", "BF.MADD n2 x"),
        ("n3", "BF.INSERT n3 ITEMS x"),
        ("n4", "BF.RESERVE n4 0.02 500"),
    ] {
        q(&mut con, cmd);
        assert_eq!(
            q(&mut con, &format!("BF.INFO {key} EXPANSION")),
            "[nil]",
            "{key}"
        );
        assert!(debug(&mut con, key)[1].ends_with(" ratio:0.02"), "{key}");
    }
    ok(&mut con, "BF.RESERVE s1 0.01 10 EXPANSION 2");
    assert_eq!(info_num(&mut con, "s1", "EXPANSION"), 2);
    let adds = numbered("s", 11);
    qv(&mut con, &with_items("BF.MADD s1", &adds));
    assert_eq!(info_num(&mut con, "s1", "FILTERS"), 2, "it really scales");
    assert_eq!(q(&mut con, "BF.INSERT s2 EXPANSION 4 ITEMS x"), "[1]");
    assert_eq!(info_num(&mut con, "s2", "EXPANSION"), 4);

    // Error-rate default above 0.25 is stored as 0.25.
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 2");
    ok(&mut con, "CONFIG SET bf.bf-error-rate 0.5");
    q(&mut con, "BF.ADD e1 x");
    assert!(debug(&mut con, "e1")[1].ends_with(" ratio:0.125"));
}

#[test]
fn configs_get_set_and_ranges() {
    let s = Server::start();
    let mut con = s.conn();

    for (name, default) in [
        ("bf.bf-error-rate", "0.01"),
        ("bf.bf-initial-size", "100"),
        ("bf.bf-expansion-factor", "2"),
        ("bf.bf-max-links", "64"),
        ("bf.max-filter-memory", "4294967296"),
        ("bf.cf-bucket-size", "2"),
        ("bf.cf-initial-size", "1024"),
        ("bf.cf-max-iterations", "20"),
        ("bf.cf-expansion-factor", "1"),
        ("bf.cf-max-expansions", "32"),
    ] {
        assert_eq!(config_get(&mut con, name), default, "{name}");
    }
    let all = pairs(&raw(&mut con, "CONFIG GET bf.*"));
    let mut names: Vec<&str> = all.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    for n in [
        "bf.bf-error-rate",
        "bf.bf-expansion-factor",
        "bf.bf-initial-size",
        "bf.bf-max-links",
        "bf.max-filter-memory",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }

    // Accepted values, including the bounds.
    for (name, set, shown) in [
        ("bf.bf-error-rate", "0.001", "0.001"),
        ("bf.bf-error-rate", "0.25", "0.25"),
        ("bf.bf-error-rate", "0.5", "0.25"),
        ("bf.bf-error-rate", "0.999", "0.25"),
        ("bf.bf-error-rate", "1e-5", "0.00001"),
        ("bf.bf-initial-size", "1", "1"),
        ("bf.bf-initial-size", "1073741824", "1073741824"),
        ("bf.bf-expansion-factor", "0", "0"),
        ("bf.bf-expansion-factor", "32768", "32768"),
        ("bf.bf-max-links", "1", "1"),
        ("bf.bf-max-links", "1024", "1024"),
        ("bf.max-filter-memory", "4096", "4096"),
        ("bf.max-filter-memory", "1mb", "1048576"),
        ("bf.max-filter-memory", "4gb", "4294967296"),
    ] {
        okv(&mut con, &["CONFIG", "SET", name, set]);
        let got = config_get(&mut con, name);
        if name == "bf.bf-error-rate" {
            let v: f64 = got.parse().unwrap_or_else(|_| panic!("{got}"));
            assert_eq!(v, shown.parse::<f64>().unwrap(), "{name} {set} -> {got}");
        } else {
            assert_eq!(got, shown, "{name} {set}");
        }
    }

    // Rejected values leave the config unchanged.
    ok(&mut con, "CONFIG SET bf.bf-error-rate 0.02");
    ok(&mut con, "CONFIG SET bf.bf-initial-size 200");
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 4");
    ok(&mut con, "CONFIG SET bf.bf-max-links 10");
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1mb");
    let er_range = "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)";
    let er_invalid = "Invalid value for `bf-error-rate`";
    let between = |lo: &str, hi: &str| format!("argument must be between {lo} and {hi} inclusive");
    let cases: Vec<(&str, &str, String)> = vec![
        ("bf.bf-error-rate", "0", er_range.into()),
        ("bf.bf-error-rate", "1", er_range.into()),
        ("bf.bf-error-rate", "-0.1", er_range.into()),
        ("bf.bf-error-rate", "abc", er_invalid.into()),
        ("bf.bf-error-rate", "", er_invalid.into()),
        ("bf.bf-initial-size", "0", between("1", "1073741824")),
        (
            "bf.bf-initial-size",
            "1073741825",
            between("1", "1073741824"),
        ),
        ("bf.bf-expansion-factor", "-1", between("0", "32768")),
        ("bf.bf-expansion-factor", "32769", between("0", "32768")),
        ("bf.bf-max-links", "0", between("1", "1024")),
        ("bf.bf-max-links", "1025", between("1", "1024")),
        (
            "bf.max-filter-memory",
            "4095",
            between("4096", "9223372036854775807"),
        ),
    ];
    for (name, value, why) in &cases {
        assert_eq!(
            errv(&mut con, &["CONFIG", "SET", name, value]),
            config_failed(name, why),
            "{name} {value:?}"
        );
    }
    for (name, value) in [
        ("bf.bf-initial-size", "abc"),
        ("bf.bf-initial-size", "1.5"),
        ("bf.bf-max-links", "x"),
        ("bf.max-filter-memory", "lots"),
    ] {
        let e = errv(&mut con, &["CONFIG", "SET", name, value]);
        assert!(
            e.starts_with(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}')"
            )),
            "{e}"
        );
    }
    for (name, value) in [
        ("bf.bf-error-rate", "0.02"),
        ("bf.bf-initial-size", "200"),
        ("bf.bf-expansion-factor", "4"),
        ("bf.bf-max-links", "10"),
        ("bf.max-filter-memory", "1048576"),
    ] {
        assert_eq!(config_get(&mut con, name), value, "{name}");
    }
}

#[test]
fn module_args_set_initial_configs() {
    let s = Server::builder()
        .module_args(&["ERROR_RATE", "0.02", "INITIAL_SIZE", "1000"])
        .start();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.02");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "1000");
    assert_eq!(q(&mut con, "BF.ADD k x"), "1");
    assert_eq!(info_num(&mut con, "k", "CAPACITY"), 1000);
    assert!(debug(&mut con, "k")[1].ends_with(" ratio:0.01"));
    // Still changeable at run time.
    ok(&mut con, "CONFIG SET bf.bf-initial-size 30");
    q(&mut con, "BF.ADD k2 x");
    assert_eq!(info_num(&mut con, "k2", "CAPACITY"), 30);
    drop(s);

    // New names, any case; the error rate is clamped like the config.
    let s = Server::builder()
        .module_args(&[
            "Bf-Error-Rate",
            "0.5",
            "bf-initial-size",
            "7",
            "cf_max_expansions",
            "5",
        ])
        .start();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.25");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "7");
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "5");
    q(&mut con, "BF.MADD k x");
    assert_eq!(
        debug(&mut con, "k"),
        vec![
            "size:1".to_string(),
            "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:7 size:1 ratio:0.125".into()
        ]
    );
    drop(s);

    let s = Server::builder()
        .module_args(&["CF-MAX-EXPANSIONS", "4096", "error_rate", "0.001"])
        .start();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "4096");
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.001");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "100");
}

#[test]
fn bad_module_args_refuse_loading() {
    let so = module_path().expect("module path");
    let so = so.to_string_lossy().to_string();
    let s = Server::builder().no_module().start();
    let mut con = s.conn();

    let bad = [
        "FOO 1",
        "ERROR_RATE",
        "ERROR_RATE 0.02 INITIAL_SIZE",
        "ERROR_RATE 0",
        "ERROR_RATE 1",
        "ERROR_RATE abc",
        "INITIAL_SIZE 0",
        "INITIAL_SIZE 1073741825",
        "INITIAL_SIZE 1.5",
        "INITIAL_SIZE -5",
        "CF_MAX_EXPANSIONS 0",
        "CF_MAX_EXPANSIONS 65537",
        // Only the three RedisBloom load arguments exist (other configs are server configs).
        "BF-EXPANSION-FACTOR 4",
        // Valid pairs before an invalid one must not leak into a later load.
        "INITIAL_SIZE 777 ERROR_RATE 0.03 NOPE 1",
    ];
    for args in bad {
        let mut cmd = vec!["MODULE", "LOAD", so.as_str()];
        cmd.extend(words(args));
        assert_eq!(errv(&mut con, &cmd), LOAD_FAILED, "{args}");
        let names: Vec<String> = items(raw(&mut con, "MODULE LIST"))
            .iter()
            .map(|m| text(&field(m, "name")))
            .collect();
        assert_eq!(names, s.kind().builtin_modules(), "{args}");
    }
    assert!(s.log().contains("refusing to load"), "{}", s.log_tail(20));
    assert!(err(&mut con, "BF.ADD k a").starts_with("ERR unknown command"));

    // A good load afterwards starts from the real defaults (a single empty argument counts
    // as no arguments).
    okv(&mut con, &["MODULE", "LOAD", so.as_str(), ""]);
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "32");
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    assert_eq!(info_num(&mut con, "k", "CAPACITY"), 100);
}

#[test]
fn bad_module_args_stop_server_start() {
    for args in ["UNKNOWN 1", "INITIAL_SIZE", "ERROR_RATE 2"] {
        let (status, log) = start_with_module_args(&words(args));
        assert!(!status.success(), "{args:?}: {status}");
        assert!(log.contains("refusing to load"), "{args:?}:\n{log}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hard bounds
// ---------------------------------------------------------------------------------------------

#[test]
fn max_links_bound() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET bf.bf-max-links 3");
    ok(&mut con, "BF.RESERVE k 0.01 2 EXPANSION 1");
    assert_eq!(q(&mut con, "BF.MADD k a b c d e f"), "[1,1,1,1,1,1]");
    let e = format!("!{MAX_LINKS_ERR}");
    assert_eq!(err(&mut con, "BF.ADD k g"), MAX_LINKS_ERR);
    // An array element, and later items are still tried.
    assert_eq!(q(&mut con, "BF.MADD k g a h f"), format!("[{e},0,{e},0]"));
    assert_eq!(q(&mut con, "BF.INSERT k ITEMS g b"), format!("[{e},0]"));
    let mut c3 = s.conn_resp3();
    assert_eq!(q(&mut c3, "BF.MADD k g a"), format!("[{e},#f]"));
    assert_eq!(
        q(&mut con, "BF.INFO k"),
        "[+Capacity,6,+Size,248,+Number of filters,3,+Number of items inserted,6,\
         +Expansion rate,1]"
    );
    assert_eq!(debug(&mut con, "k").len(), 4);
    assert_eq!(q(&mut con, "BF.MEXISTS k a b c d e f g"), "[1,1,1,1,1,1,0]");

    // Raising the bound lets the filter grow again.
    ok(&mut con, "CONFIG SET bf.bf-max-links 4");
    assert_eq!(q(&mut con, "BF.ADD k g"), "1");
    assert_eq!(info_num(&mut con, "k", "FILTERS"), 4);

    // bf-max-links 1: a scaling filter cannot grow at all.
    ok(&mut con, "CONFIG SET bf.bf-max-links 1");
    assert_eq!(
        q(&mut con, "BF.INSERT one CAPACITY 1 ITEMS a b"),
        format!("[1,{e}]")
    );

    // Default 64.
    ok(&mut con, "CONFIG SET bf.bf-max-links 64");
    ok(&mut con, "BF.RESERVE d 0.01 1 EXPANSION 1");
    let adds = numbered("d", 70);
    let reply = items(rawv(&mut con, &with_items("BF.MADD d", &adds)));
    assert_eq!(info_num(&mut con, "d", "FILTERS"), 64);
    assert_eq!(card(&mut con, "d"), 64);
    let errors = reply.iter().filter(|v| show(v) == e).count();
    let ones = reply.iter().filter(|v| show(v) == "1").count();
    assert_eq!(ones, 64);
    assert_eq!(
        errors + ones + reply.iter().filter(|v| show(v) == "0").count(),
        70
    );
    assert!(errors >= 1);
}

#[test]
fn max_filter_memory_bound_on_creation() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1mb");

    // Size(0.01, 760611) = 1048576 exactly; one more item of capacity is 8 bytes more.
    assert_eq!(redisbloom_size(760611, 0.005), 1048576);
    assert_eq!(redisbloom_size(760612, 0.005), 1048584);
    ok(&mut con, "BF.RESERVE under 0.01 760611");
    assert_eq!(info_num(&mut con, "under", "SIZE"), 1048576);
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 760612"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "BF.INSERT over CAPACITY 760612 ITEMS a"),
        NO_MEMORY_CREATE
    );
    // The largest capacity the parser accepts, then refused by the memory cap (not a range
    // error); one more is a range error.
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 1073741824"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 1073741825"),
        "ERR capacity must be in the range [1, 1073741824]"
    );
    assert_eq!(
        err(&mut con, "BF.INSERT over CAPACITY 1073741824 ITEMS a"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "BF.INSERT over CAPACITY 1073741825 ITEMS a"),
        "Bad capacity"
    );
    // Auto-creation with a large default capacity.
    ok(&mut con, "CONFIG SET bf.bf-initial-size 1073741824");
    assert_eq!(err(&mut con, "BF.ADD over a"), NO_MEMORY_CREATE);
    assert_eq!(err(&mut con, "BF.MADD over a b"), NO_MEMORY_CREATE);
    assert_eq!(err(&mut con, "BF.INSERT over ITEMS a"), NO_MEMORY_CREATE);
    // A non-scaling filter is bounded the same way.
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 1000000 NONSCALING"),
        NO_MEMORY_CREATE
    );
    assert_eq!(int(&mut con, "EXISTS over"), 0);

    // Raising the cap makes the same reserve work.
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1048584");
    ok(&mut con, "BF.RESERVE over 0.01 760612");
    assert_eq!(info_num(&mut con, "over", "SIZE"), 1048584);
}

#[test]
fn max_filter_memory_bound_on_growth() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET bf.max-filter-memory 8192");
    // Links of 100, 200, 400, 800, 1600 items take 6400 bytes in all (Size); the sixth
    // (3200 items, 7304 bytes) would bring it to 13768.
    ok(&mut con, "BF.RESERVE g 0.01 100");
    let adds = numbered("g", 3200);
    let reply = items(rawv(&mut con, &with_items("BF.MADD g", &adds)));
    assert_eq!(reply.len(), 3200, "the array does not stop at this error");
    let e = format!("!{MEMORY_ERR}");
    let first_err = reply
        .iter()
        .position(|v| show(v) == e)
        .expect("the cap was reached");
    assert!(reply[..first_err]
        .iter()
        .all(|v| ["1", "0"].contains(&show(v).as_str())));
    assert!(reply[first_err..]
        .iter()
        .all(|v| show(v) == e || show(v) == "0"));
    assert_eq!(
        q(&mut con, "BF.INFO g"),
        "[+Capacity,3100,+Size,6400,+Number of filters,5,+Number of items inserted,3100,\
         +Expansion rate,2]"
    );
    assert_eq!(errv(&mut con, &["BF.ADD", "g", "one more"]), MEMORY_ERR);
    let accepted: Vec<String> = adds[..first_err].to_vec();
    let present = qv(&mut con, &with_items("BF.MEXISTS g", &accepted));
    assert!(!present.contains('0'), "intact filter: {present}");
    let before = snapshot(&mut con, "g");
    assert_eq!(
        qv(&mut con, &["BF.INSERT", "g", "ITEMS", "one more", "g0"]),
        format!("[{e},0]")
    );
    assert_eq!(snapshot(&mut con, "g"), before);

    // At exactly the size of the next link it grows.
    ok(&mut con, "CONFIG SET bf.max-filter-memory 13768");
    assert_eq!(qv(&mut con, &["BF.ADD", "g", "one more"]), "1");
    assert_eq!(info_num(&mut con, "g", "SIZE"), 13768);
    assert_eq!(info_num(&mut con, "g", "FILTERS"), 6);
}

#[test]
fn error_rate_and_hash_bounds() {
    let s = Server::start();
    let mut con = s.conn();
    // ferrobloom's specific text (RedisBloom: "ERR could not create filter").
    let cnc = "ERR sub-filter error rate too small (more than 128 hash functions)";
    assert_eq!(err(&mut con, "BF.RESERVE k 1e-300 10"), cnc);
    assert_eq!(err(&mut con, "BF.RESERVE k 1e-300 10 NONSCALING"), cnc);
    assert_eq!(err(&mut con, "BF.INSERT k ERROR 1e-300 ITEMS a"), cnc);
    // A default that would make every auto-creation fail is refused at CONFIG SET.
    assert!(err(&mut con, "CONFIG SET bf.bf-error-rate 1e-300").contains("too small"));
    assert_eq!(int(&mut con, "BF.ADD k a"), 1);
    assert_eq!(int(&mut con, "DEL k"), 1);

    // Small but usable error rates work; a chain stops growing when the next link would
    // need more than 128 hash functions (each link halves the error: one more hash).
    ok(&mut con, "BF.RESERVE h 1e-30 1 EXPANSION 1");
    assert!(debug(&mut con, "h")[1].contains(" hashes:101 "));
    let adds = numbered("h", 35);
    let reply = items(rawv(&mut con, &with_items("BF.MADD h", &adds)));
    let too_small = "!ERR sub-filter error rate too small (more than 128 hash functions)";
    assert_eq!(reply.iter().filter(|v| show(v) == "1").count(), 28);
    assert!(reply[28..]
        .iter()
        .all(|v| show(v) == too_small || show(v) == "0"));
    assert_eq!(info_num(&mut con, "h", "FILTERS"), 28);
    let lines = debug(&mut con, "h");
    assert!(lines[28].contains(" hashes:128 "), "{}", lines[28]);
}

// ---------------------------------------------------------------------------------------------
// Command table, module registration
// ---------------------------------------------------------------------------------------------

struct CmdExpect {
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    key_flags: &'static [&'static str],
    summary: &'static str,
    complexity: &'static str,
    since: &'static str,
    args: &'static [&'static str],
}

const O_K: &str = "O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN: &str = "O(k * n), where k is the number of hash functions and n is the number of items";
const O_N: &str = "O(n), where n is the capacity";
const MADD_SUMMARY: &str =
    "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";
const WRITE: &[&str] = &["write", "denyoom", "module"];
const READ_FAST: &[&str] = &["readonly", "fast", "module"];
const KEY_RO: &[&str] = &["RO", "access"];
const KEY_UPDATE: &[&str] = &["RW", "update"];
const KEY_INSERT: &[&str] = &["RW", "insert"];

const COMMANDS: &[CmdExpect] = &[
    CmdExpect {
        name: "bf.reserve",
        arity: -4,
        flags: WRITE,
        key_flags: KEY_INSERT,
        summary: "Creates a new Bloom Filter",
        complexity: "O(1)",
        since: "1.0.0",
        args: &["key", "error_rate", "capacity", "expansion", "nonscaling"],
    },
    CmdExpect {
        name: "bf.add",
        arity: 3,
        flags: WRITE,
        key_flags: KEY_UPDATE,
        summary: "Adds an item to a Bloom Filter",
        complexity: O_K,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.madd",
        arity: -3,
        flags: WRITE,
        key_flags: KEY_UPDATE,
        summary: MADD_SUMMARY,
        complexity: O_KN,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.insert",
        arity: -4,
        flags: WRITE,
        key_flags: KEY_UPDATE,
        summary: MADD_SUMMARY,
        complexity: O_KN,
        since: "1.0.0",
        args: &[
            "key",
            "capacity",
            "error",
            "expansion",
            "nocreate",
            "nonscaling",
            "items",
            "item",
        ],
    },
    CmdExpect {
        name: "bf.exists",
        arity: 3,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Checks whether an item exists in a Bloom Filter",
        complexity: O_K,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.mexists",
        arity: -3,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Checks whether one or more items exist in a Bloom Filter",
        complexity: O_KN,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.info",
        arity: -2,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Returns information about a Bloom Filter",
        complexity: "O(1)",
        since: "1.0.0",
        args: &["key", "single_value"],
    },
    CmdExpect {
        name: "bf.card",
        arity: 2,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Returns the cardinality of a Bloom filter",
        complexity: "O(1)",
        since: "2.4.4",
        args: &["key"],
    },
    CmdExpect {
        name: "bf.scandump",
        arity: 3,
        flags: &["readonly", "module"],
        key_flags: KEY_RO,
        summary: "Begins an incremental save of the bloom filter",
        complexity: O_N,
        since: "1.0.0",
        args: &["key", "iterator"],
    },
    CmdExpect {
        name: "bf.loadchunk",
        arity: 4,
        flags: WRITE,
        key_flags: KEY_INSERT,
        summary: "Restores a filter previously saved using SCANDUMP",
        complexity: O_N,
        since: "1.0.0",
        args: &["key", "iterator", "data"],
    },
    CmdExpect {
        name: "bf.debug",
        arity: 2,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "",
        complexity: "",
        since: "1.0.0",
        args: &["key"],
    },
];

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn strs(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) | Value::Set(a) => a.iter().map(text).collect(),
        other => panic!("expected a list of strings, got {}", show(other)),
    }
}

#[test]
fn command_info_for_every_command() {
    let s = Server::start();
    let mut con = s.conn();
    for c in COMMANDS {
        let reply = items(rawv(&mut con, &["COMMAND", "INFO", c.name]));
        let info = match reply.as_slice() {
            [Value::Array(i)] => i.clone(),
            other => panic!("COMMAND INFO {}: {other:?}", c.name),
        };
        assert_eq!(text(&info[0]), c.name);
        assert_eq!(info[1], Value::Int(c.arity), "{} arity", c.name);
        assert_eq!(
            sorted(strs(&info[2])),
            sorted(c.flags.iter().map(|f| f.to_string()).collect()),
            "{} flags",
            c.name
        );
        assert_eq!(
            (&info[3], &info[4], &info[5]),
            (&Value::Int(1), &Value::Int(1), &Value::Int(1)),
            "{} first/last/step",
            c.name
        );
        let specs = items(info[8].clone());
        assert_eq!(specs.len(), 1, "{} key specs", c.name);
        let spec = &specs[0];
        assert_eq!(
            sorted(strs(&field(spec, "flags"))),
            sorted(c.key_flags.iter().map(|f| f.to_string()).collect()),
            "{} key spec flags",
            c.name
        );
        let bs = field(spec, "begin_search");
        assert_eq!(text(&field(&bs, "type")), "index");
        assert_eq!(field(&field(&bs, "spec"), "index"), Value::Int(1));
        let fk = field(spec, "find_keys");
        assert_eq!(text(&field(&fk, "type")), "range");
        let range = field(&fk, "spec");
        assert_eq!(field(&range, "lastkey"), Value::Int(0));
        assert_eq!(field(&range, "keystep"), Value::Int(1));
        assert_eq!(field(&range, "limit"), Value::Int(0));
        // COMMAND GETKEYS agrees: the key is the first argument.
        let mut probe = vec!["COMMAND", "GETKEYS", c.name, "thekey"];
        probe.extend(std::iter::repeat_n(
            "x",
            (c.arity.unsigned_abs() as usize).saturating_sub(2),
        ));
        assert_eq!(qv(&mut con, &probe), "[\"thekey\"]", "{probe:?}");
    }
    // Every bf.* command is listed, and only those.
    let mut listed = strs(&raw(&mut con, "COMMAND LIST FILTERBY MODULE bf"));
    listed.retain(|n| n.starts_with("bf."));
    assert_eq!(
        sorted(listed),
        sorted(COMMANDS.iter().map(|c| c.name.to_string()).collect())
    );
}

#[test]
fn command_docs_for_every_command() {
    let s = Server::start();
    let mut con = s.conn_resp3();
    for c in COMMANDS {
        let reply = rawv(&mut con, &["COMMAND", "DOCS", c.name]);
        let docs = field(&reply, c.name);
        if c.summary.is_empty() {
            assert!(!text(&field(&docs, "summary")).is_empty(), "{}", c.name);
            assert!(!text(&field(&docs, "complexity")).is_empty(), "{}", c.name);
        } else {
            assert_eq!(text(&field(&docs, "summary")), c.summary, "{}", c.name);
            assert_eq!(
                text(&field(&docs, "complexity")),
                c.complexity,
                "{}",
                c.name
            );
        }
        assert_eq!(text(&field(&docs, "since")), c.since, "{}", c.name);
        assert_eq!(text(&field(&docs, "group")), "module", "{}", c.name);
        assert_eq!(text(&field(&docs, "module")), "bf", "{}", c.name);
        let args = items(field(&docs, "arguments"));
        let names: Vec<String> = args.iter().map(|a| text(&field(a, "name"))).collect();
        assert_eq!(names, c.args, "{} arguments", c.name);
        assert_eq!(text(&field(&args[0], "type")), "key", "{}", c.name);
    }

    // A few argument details.
    let docs = field(&raw(&mut con, "COMMAND DOCS bf.reserve"), "bf.reserve");
    let args = items(field(&docs, "arguments"));
    assert_eq!(text(&field(&args[1], "type")), "double");
    assert_eq!(text(&field(&args[2], "type")), "integer");
    assert_eq!(text(&field(&args[3], "token")), "EXPANSION");
    assert_eq!(text(&field(&args[4], "type")), "pure-token");
    assert_eq!(text(&field(&args[4], "token")), "NONSCALING");
    assert!(strs(&field(&args[4], "flags")).contains(&"optional".to_string()));

    let docs = field(&raw(&mut con, "COMMAND DOCS bf.madd"), "bf.madd");
    let args = items(field(&docs, "arguments"));
    assert!(strs(&field(&args[1], "flags")).contains(&"multiple".to_string()));

    let docs = field(&raw(&mut con, "COMMAND DOCS bf.info"), "bf.info");
    let args = items(field(&docs, "arguments"));
    assert_eq!(text(&field(&args[1], "type")), "oneof");
    let tokens: Vec<String> = items(field(&args[1], "arguments"))
        .iter()
        .map(|a| text(&field(a, "token")))
        .collect();
    assert_eq!(
        tokens,
        ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"]
    );
}

#[test]
fn module_list_and_info_section() {
    let s = Server::start();
    let mut con = s.conn();
    let mut modules = items(raw(&mut con, "MODULE LIST"));
    let builtin = s.kind().builtin_modules();
    assert_eq!(modules.len(), 1 + builtin.len());
    modules.retain(|m| !builtin.contains(&text(&field(m, "name")).as_str()));
    assert_eq!(text(&field(&modules[0], "name")), "bf");
    assert_eq!(field(&modules[0], "ver"), Value::Int(20820));

    let info = s.info("bf_ferrobloom");
    assert_eq!(
        info.get("bf_version").map(String::as_str),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(info.get("bf_api_level").map(String::as_str), Some("20820"));
    let all = s.info("modules");
    assert_eq!(
        all.get("bf_api_level").map(String::as_str),
        Some("20820"),
        "{all:?}"
    );
    let everything: String = redis::cmd("INFO")
        .arg("everything")
        .query(&mut con)
        .expect("INFO everything");
    assert!(everything.contains("# bf_ferrobloom"), "{everything}");
    assert!(everything.contains("module:name=bf,ver=20820,"));
}
