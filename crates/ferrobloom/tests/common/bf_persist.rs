//! Shared by the Bloom persistence tests (`crates/ferrobloom/tests/bf_persistence/`, `crates/ferrobloom/tests/bf_hostile.rs`):
//! command runners, the filter set every round trip carries and its checks (every inserted
//! item present via BF.MEXISTS in batches, never-inserted probes answering the same, BF.CARD,
//! BF.INFO, BF.DEBUG and DEBUG DIGEST-VALUE equal), DUMP payload and header helpers.

use super::rdb::*;
use super::*;
use redis::{Connection, FromRedisValue, Value};

mod filters;
mod payloads;

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use filters::*;
#[allow(unused_imports)]
pub use payloads::*;

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// Builds a command from byte-string arguments.
pub fn cmd_of(args: &[&[u8]]) -> redis::Cmd {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name).expect("command name is UTF-8"));
    for a in rest {
        c.arg(*a);
    }
    c
}

/// Printable form of a command for panic messages (long arguments shortened).
pub fn show(args: &[&[u8]]) -> String {
    args.iter()
        .map(|a| {
            if a.len() > 40 {
                format!("<{} bytes>", a.len())
            } else {
                format!("{:?}", String::from_utf8_lossy(a))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a command that must succeed.
pub fn q<T: FromRedisValue>(con: &mut Connection, args: &[&[u8]]) -> T {
    cmd_of(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{} failed: {e}", show(args)))
}

/// Runs a command that must fail; returns the error text as sent on the wire.
pub fn q_err(con: &mut Connection, args: &[&[u8]]) -> String {
    err_text(cmd_of(args).query::<Value>(con))
}

/// Runs a command and returns its raw reply, keeping error elements of arrays as
/// `Value::ServerError` (a plain query turns them into an `Err`).
pub fn q_raw(con: &mut Connection, args: &[&[u8]]) -> Value {
    let mut p = redis::pipe();
    p.add_command(cmd_of(args)).ignore_errors();
    let mut v: Vec<Value> = p
        .query(con)
        .unwrap_or_else(|e| panic!("{} failed: {e}", show(args)));
    assert_eq!(v.len(), 1);
    v.pop().unwrap()
}

/// The elements of an array reply (errors kept as values).
pub fn q_array(con: &mut Connection, args: &[&[u8]]) -> Vec<Value> {
    match q_raw(con, args) {
        Value::Array(v) => v,
        other => panic!("{}: not an array: {other:?}", show(args)),
    }
}

pub fn ok(con: &mut Connection, args: &[&[u8]]) {
    let v: Value = q(con, args);
    assert_eq!(v, Value::Okay, "{} replied {v:?}", show(args));
}

pub fn ping(con: &mut Connection) {
    let r: String = q(con, &[b"PING"]);
    assert_eq!(r, "PONG");
}

pub fn exists(con: &mut Connection, key: &[u8]) -> bool {
    q::<i64>(con, &[b"EXISTS", key]) == 1
}

pub fn reserve(con: &mut Connection, key: &[u8], opts: &[&str]) {
    let mut args: Vec<&[u8]> = vec![b"BF.RESERVE", key];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    ok(con, &args);
}

/// BF.MADD in batches; every reply element must be 0 or 1 (0 = false positive).
pub fn madd(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    for batch in items.chunks(500) {
        let mut args: Vec<&[u8]> = vec![b"BF.MADD", key];
        args.extend(batch.iter().map(|i| i.as_slice()));
        let r: Vec<i64> = q(con, &args);
        assert_eq!(r.len(), batch.len());
        assert!(r.iter().all(|v| *v == 0 || *v == 1), "BF.MADD: {r:?}");
    }
}

/// BF.INSERT with options; returns the reply elements (ints, or errors as text).
pub fn insert(con: &mut Connection, key: &[u8], opts: &[&str], items: &[Vec<u8>]) -> Vec<Value> {
    let mut args: Vec<&[u8]> = vec![b"BF.INSERT", key];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    args.push(b"ITEMS");
    args.extend(items.iter().map(|i| i.as_slice()));
    q_array(con, &args)
}

/// BF.MEXISTS in batches.
pub fn mexists(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(500) {
        let mut args: Vec<&[u8]> = vec![b"BF.MEXISTS", key];
        args.extend(batch.iter().map(|i| i.as_slice()));
        let r: Vec<i64> = q(con, &args);
        assert_eq!(r.len(), batch.len());
        out.extend(r);
    }
    out
}

pub fn bf_info(con: &mut Connection, key: &[u8]) -> Value {
    q(con, &[b"BF.INFO", key])
}

pub fn bf_info_field(con: &mut Connection, key: &[u8], field: &str) -> Value {
    let v: Vec<Value> = q(con, &[b"BF.INFO", key, field.as_bytes()]);
    assert_eq!(v.len(), 1);
    v.into_iter().next().unwrap()
}

pub fn card(con: &mut Connection, key: &[u8]) -> i64 {
    q(con, &[b"BF.CARD", key])
}

pub fn bf_debug(con: &mut Connection, key: &[u8]) -> Vec<String> {
    q(con, &[b"BF.DEBUG", key])
}

pub fn digest_value(con: &mut Connection, key: &[u8]) -> String {
    let v: Vec<String> = q(con, &[b"DEBUG", b"DIGEST-VALUE", key]);
    assert_eq!(v.len(), 1);
    v.into_iter().next().unwrap()
}

pub fn db_digest(con: &mut Connection) -> String {
    q(con, &[b"DEBUG", b"DIGEST"])
}

/// The `bytes:` of every link, from BF.DEBUG.
pub fn link_bytes(con: &mut Connection, key: &[u8]) -> Vec<u64> {
    bf_debug(con, key)
        .iter()
        .skip(1)
        .map(|line| {
            line.split(' ')
                .find_map(|f| f.strip_prefix("bytes:"))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no bytes: in BF.DEBUG line {line:?}"))
        })
        .collect()
}

pub const CHUNK: u64 = 16 * 1024 * 1024;

/// SCANDUMP with the standard client loop: `(iterator, data)` pairs, header first.
pub fn scandump(con: &mut Connection, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(key)
            .arg(it)
            .query(con)
            .unwrap_or_else(|e| panic!("BF.SCANDUMP {it}: {e}"));
        if next == 0 {
            assert!(data.is_empty(), "the final SCANDUMP reply carries data");
            return out;
        }
        out.push((next, data));
        it = next;
        assert!(out.len() < 100_000, "SCANDUMP does not terminate");
    }
}

pub fn loadchunk(
    con: &mut Connection,
    key: &[u8],
    it: i64,
    data: &[u8],
) -> redis::RedisResult<Value> {
    redis::cmd("BF.LOADCHUNK")
        .arg(key)
        .arg(it)
        .arg(data)
        .query(con)
}

pub fn loadchunks(con: &mut Connection, key: &[u8], chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        let r = loadchunk(con, key, *it, data);
        assert_eq!(r.ok(), Some(Value::Okay), "BF.LOADCHUNK iterator {it}");
    }
}

pub fn config_set(con: &mut Connection, name: &str, value: &str) {
    ok(con, &[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()]);
}

pub fn config_get(con: &mut Connection, name: &str) -> String {
    let v: Vec<String> = q(con, &[b"CONFIG", b"GET", name.as_bytes()]);
    assert_eq!(v.len(), 2, "CONFIG GET {name}: {v:?}");
    v[1].clone()
}
