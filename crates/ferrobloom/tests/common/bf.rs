//! Shared by the BF.* command tests (`crates/ferrobloom/tests/bf_commands/`, `crates/ferrobloom/tests/bf_limits/`): command
//! runners and the reply rendering `show()` (`1` integer, `#t`/`#f` boolean, `nil`, `+OK`/`+text`
//! simple string, `"text"` bulk string, `!text` error, also inside arrays, `[a,b]` array, `{k:v}`
//! map).

use super::*;
use redis::{Connection, ConnectionLike, Value};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const LOAD_FAILED: &str = "ERR Error loading the extension. Please check the server logs.";
pub const MAX_LINKS_ERR: &str =
    "ERR filter reached its maximum number of sub-filters (bf.bf-max-links)";
pub const MEMORY_ERR: &str =
    "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)";
pub const NO_MEMORY_CREATE: &str = "ERR Insufficient memory to create filter";

/// Sends a command and returns the raw reply: errors stay values (top-level and nested),
/// unlike `exec`, which turns any error inside an array into an `Err`.
pub fn raw_bytes(con: &mut Connection, args: &[&[u8]]) -> Value {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name).expect("command name"));
    for a in rest {
        c.arg(*a);
    }
    con.req_command(&c)
        .unwrap_or_else(|e| panic!("{:?}: client error {e}", show_args(args)))
}

pub fn show_args(args: &[&[u8]]) -> Vec<String> {
    args.iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Compact rendering of a reply (see the file doc).
pub fn show(v: &Value) -> String {
    show_value(v, usize::MAX)
}

// Command runners. The plain ones take a command line split at spaces
// (`q(&mut con, "BF.ADD k a")`); the `*v` ones take the arguments one by one, for
// arguments that are empty, contain spaces or are computed.

pub fn rawv(con: &mut Connection, args: &[&str]) -> Value {
    let b: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    raw_bytes(con, &b)
}

/// `show()` of the reply.
pub fn qv(con: &mut Connection, args: &[&str]) -> String {
    show(&rawv(con, args))
}

/// The command must answer OK.
pub fn okv(con: &mut Connection, args: &[&str]) {
    assert_eq!(qv(con, args), "+OK", "{args:?}");
}

/// The command must answer an integer.
pub fn intv(con: &mut Connection, args: &[&str]) -> i64 {
    match rawv(con, args) {
        Value::Int(i) => i,
        other => panic!("{args:?}: expected an integer, got {}", show(&other)),
    }
}

/// The command must answer an error; returns its exact wire text.
pub fn errv(con: &mut Connection, args: &[&str]) -> String {
    let v = rawv(con, args);
    value_err_text(&v).unwrap_or_else(|| panic!("{args:?}: expected an error, got {}", show(&v)))
}

pub fn err_bytes(con: &mut Connection, args: &[&[u8]]) -> String {
    let v = raw_bytes(con, args);
    value_err_text(&v)
        .unwrap_or_else(|| panic!("{:?}: expected an error, got {}", show_args(args), show(&v)))
}

pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

pub fn raw(con: &mut Connection, line: &str) -> Value {
    rawv(con, &words(line))
}

pub fn q(con: &mut Connection, line: &str) -> String {
    qv(con, &words(line))
}

pub fn ok(con: &mut Connection, line: &str) {
    okv(con, &words(line))
}

pub fn int(con: &mut Connection, line: &str) -> i64 {
    intv(con, &words(line))
}

pub fn err(con: &mut Connection, line: &str) -> String {
    errv(con, &words(line))
}

/// A command line followed by many items: `with_items("BF.MADD k", &items)`.
pub fn with_items<'a>(line: &'a str, items: &'a [String]) -> Vec<&'a str> {
    let mut v = words(line);
    v.extend(items.iter().map(String::as_str));
    v
}

pub fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Text of a bulk or simple string.
pub fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        other => panic!("expected a string, got {}", show(other)),
    }
}

pub fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        other => panic!("expected an array, got {}", show(&other)),
    }
}

/// Name/value pairs of a RESP3 map or a RESP2 flat array.
pub fn pairs(v: &Value) -> Vec<(String, Value)> {
    match v {
        Value::Map(m) => m.iter().map(|(k, v)| (text(k), v.clone())).collect(),
        Value::Array(a) => {
            assert!(a.len() % 2 == 0, "odd flat map: {}", show(v));
            a.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
        }
        other => panic!("expected a map, got {}", show(other)),
    }
}

pub fn field(v: &Value, name: &str) -> Value {
    pairs(v)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no field {name} in {}", show(v)))
}

/// `BF.DEBUG key` as lines.
pub fn debug(con: &mut Connection, key: &str) -> Vec<String> {
    items(rawv(con, &["BF.DEBUG", key]))
        .iter()
        .map(text)
        .collect()
}

/// One numeric BF.INFO field (RESP2 single-field form `[value]`).
pub fn info_num(con: &mut Connection, key: &str, f: &str) -> i64 {
    match items(rawv(con, &["BF.INFO", key, f])).as_slice() {
        [Value::Int(i)] => *i,
        other => panic!("BF.INFO {key} {f}: {other:?}"),
    }
}

pub fn card(con: &mut Connection, key: &str) -> i64 {
    intv(con, &["BF.CARD", key])
}

/// The whole filter as SCANDUMP gives it: `(iterator, bytes)` pairs up to the end marker.
pub fn scandump(con: &mut Connection, key: &str) -> Dump {
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
pub type Dump = Vec<(i64, Vec<u8>)>;

/// Everything observable about a filter (to check that an error changed nothing).
pub fn snapshot(con: &mut Connection, key: &str) -> (Vec<String>, String, Dump) {
    (
        debug(con, key),
        qv(con, &["BF.INFO", key]),
        scandump(con, key),
    )
}

pub fn arity(cmd: &str) -> String {
    format!("ERR wrong number of arguments for '{cmd}' command")
}

/// RESP2 integer / RESP3 boolean rendering of an "added/exists" answer.
pub fn b(resp3: bool, v: bool) -> &'static str {
    match (resp3, v) {
        (false, false) => "0",
        (false, true) => "1",
        (true, false) => "#f",
        (true, true) => "#t",
    }
}

/// `[b, b, ...]` for the given protocol.
pub fn bools(resp3: bool, vs: &[bool]) -> String {
    let parts: Vec<&str> = vs.iter().map(|v| b(resp3, *v)).collect();
    format!("[{}]", parts.join(","))
}

pub fn config_get(con: &mut Connection, name: &str) -> String {
    let v = rawv(con, &["CONFIG", "GET", name]);
    match pairs(&v).as_slice() {
        [(k, val)] if k == name => text(val),
        _ => panic!("CONFIG GET {name}: {}", show(&v)),
    }
}

/// Expected BF.INFO Size of a one-link filter per spec 6.2 (RedisBloom's sizing).
pub fn redisbloom_size(entries: u64, link_error: f64) -> u64 {
    let bpe = link_error.ln().abs() / 0.480453013918201;
    let bits = ((entries as f64 * bpe).floor() as u64).max(1);
    32 + 64 + bits.div_ceil(64) * 8
}

/// A numeric single-field BF.INFO value in either protocol.
pub fn info_num_any(con: &mut Connection, resp3: bool, key: &str, f: &str) -> i64 {
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
pub fn load_dump(con: &mut Connection, key: &str, dump: &[(i64, Vec<u8>)]) {
    for (it, data) in dump {
        let it = it.to_string();
        let v = raw_bytes(con, &[b"BF.LOADCHUNK", key.as_bytes(), it.as_bytes(), data]);
        assert_eq!(show(&v), "+OK", "LOADCHUNK {key} {it}");
    }
}

pub fn mixed_case(name: &str) -> String {
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
pub fn config_failed(name: &str, why: &str) -> String {
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
}

/// Starts `redis-server --loadmodule <so> <args>` directly; returns its exit status and log
/// once it exits (panics if it is still running after 10 s).
pub fn start_with_module_args(args: &[&str]) -> (ExitStatus, String) {
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
