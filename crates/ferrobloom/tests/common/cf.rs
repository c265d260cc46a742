//! Shared by the CF.* integration tests (`tests/cf_*.rs`): constants, command runners, the
//! reply rendering `show()` (`1` integer, `#t`/`#f` boolean, `nil`, `+OK`/`+text` simple string,
//! `"text"` bulk string, `!text` error, `[a,b]` array, `{k:v}` map, `0.5` double), header
//! helpers and the snapshots (`KeySnap`) that round trips compare: every inserted item present,
//! CF.COUNT unchanged, never-inserted probes answering the same, CF.INFO, CF.DEBUG and DEBUG
//! DIGEST-VALUE equal.

use super::rdb::*;
use super::*;
use redis::{Connection, ConnectionLike, Value};
use std::collections::BTreeMap;

mod restore;
mod snapshots;

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use restore::*;
#[allow(unused_imports)]
pub use snapshots::*;

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const MEMORY_CAP_ERR: &str =
    "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)";
pub const NO_MEMORY_CREATE: &str = "ERR Insufficient memory to create filter";
pub const BAD_DATA_FORMAT: &str = "ERR Bad data format";
pub const INVALID_HEADER: &str = "Invalid header";
pub const CANNOT_CREATE: &str = "Couldn't create filter!";
pub const CANNOT_LOAD_CHUNK: &str = "Couldn't load chunk!";
pub const INVALID_POSITION: &str = "Invalid position";

/// Items per CF.INSERT / CF.MEXISTS / pipeline batch.
pub const BATCH: usize = 1000;
/// Largest SCANDUMP data chunk.
pub const CHUNK: usize = 16 * 1024 * 1024;

// Header layout (`CuckooFilter::encode_header`, 64 bytes, little-endian).
pub const HEADER_LEN: usize = 64;
pub const H_VERSION: usize = 4;
pub const H_FP_BITS: usize = 5;
pub const H_BUCKET_SIZE: usize = 6;
pub const H_FLAGS: usize = 7;
pub const H_MAX_ITER: usize = 8;
pub const H_RESERVED: usize = 10;
pub const H_EXPANSION: usize = 12;
pub const H_NFILTERS: usize = 16;
pub const H_CURSOR_FILTER: usize = 20;
pub const H_BASE: usize = 24;
pub const H_ITEMS: usize = 32;
pub const H_DELETES: usize = 40;
pub const H_ERROR: usize = 48;
pub const H_CURSOR_SLOT: usize = 56;

// ---------------------------------------------------------------------------------------------
// Command runners and reply rendering
// ---------------------------------------------------------------------------------------------

pub fn cmd_of<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name.as_ref()).expect("command name"));
    for a in rest {
        c.arg(a.as_ref());
    }
    c
}

/// Printable form of a command (long arguments shortened).
pub fn show_args<A: AsRef<[u8]>>(args: &[A]) -> String {
    args.iter()
        .map(|a| {
            let a = a.as_ref();
            if a.len() > 40 {
                format!("<{} bytes>", a.len())
            } else {
                format!("{:?}", String::from_utf8_lossy(a))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Sends a command and returns the raw reply; error replies stay values.
pub fn raw<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> Value {
    con.req_command(&cmd_of(args))
        .unwrap_or_else(|e| panic!("{}: client error {e}", show_args(args)))
}

/// Compact rendering of a reply (see the file doc).
pub fn show(v: &Value) -> String {
    show_value(v, 80)
}

pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `show()` of the reply to a command line split at spaces.
pub fn q(con: &mut Connection, line: &str) -> String {
    show(&raw(con, &words(line)))
}

pub fn ok(con: &mut Connection, line: &str) {
    assert_eq!(q(con, line), "+OK", "{line}");
}

pub fn okb<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) {
    let v = raw(con, args);
    assert_eq!(show(&v), "+OK", "{}", show_args(args));
}

pub fn int(con: &mut Connection, line: &str) -> i64 {
    match raw(con, &words(line)) {
        Value::Int(i) => i,
        other => panic!("{line}: expected an integer, got {}", show(&other)),
    }
}

/// The command must answer an error; returns its exact wire text.
pub fn err(con: &mut Connection, line: &str) -> String {
    errb(con, &words(line))
}

pub fn errb<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> String {
    let v = raw(con, args);
    value_err_text(&v)
        .unwrap_or_else(|| panic!("{}: expected an error, got {}", show_args(args), show(&v)))
}

pub fn arity(cmd: &str) -> String {
    format!("ERR wrong number of arguments for '{cmd}' command")
}

/// RESP2 integer / RESP3 boolean rendering of a yes/no answer.
pub fn b(resp3: bool, v: bool) -> &'static str {
    match (resp3, v) {
        (false, false) => "0",
        (false, true) => "1",
        (true, false) => "#f",
        (true, true) => "#t",
    }
}

pub fn config_set(con: &mut Connection, name: &str, value: &str) {
    okb(con, &["CONFIG", "SET", name, value]);
}

pub fn key_exists(con: &mut Connection, key: &[u8]) -> bool {
    matches!(raw(con, &[b"EXISTS".as_slice(), key]), Value::Int(1))
}

pub fn ping(con: &mut Connection) {
    assert_eq!(q(con, "PING"), "+PONG");
}

/// Text of a simple/bulk string reply.
pub fn text(v: &Value) -> String {
    match v {
        Value::SimpleString(s) => s.clone(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Okay => "OK".into(),
        other => panic!("not a string: {}", show(other)),
    }
}

// ---------------------------------------------------------------------------------------------
// CF helpers
// ---------------------------------------------------------------------------------------------

pub fn names(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

pub fn args_with(head: &[&[u8]], items: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = head.iter().map(|a| a.to_vec()).collect();
    v.extend(items.iter().cloned());
    v
}

pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// CF.INSERT <key> NOCREATE ITEMS ... in batches; every element must be 1.
pub fn insert_ok(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    for batch in items.chunks(BATCH) {
        let v = raw(
            con,
            &args_with(&[b"CF.INSERT", key, b"NOCREATE", b"ITEMS"], batch),
        );
        match &v {
            Value::Array(a) if a.len() == batch.len() && a.iter().all(|x| *x == Value::Int(1)) => {}
            other => panic!(
                "CF.INSERT {} ({} items): {}",
                lossy(key),
                batch.len(),
                show(other)
            ),
        }
    }
}

/// CF.INSERT in batches (creating the key if needed); returns every element.
pub fn insert_any(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(BATCH) {
        match raw(con, &args_with(&[b"CF.INSERT", key, b"ITEMS"], batch)) {
            Value::Array(a) => out.extend(a.iter().map(|x| match x {
                Value::Int(i) => *i,
                other => panic!("CF.INSERT element {}", show(other)),
            })),
            other => panic!("CF.INSERT {}: {}", lossy(key), show(&other)),
        }
    }
    out
}

/// CF.MEXISTS in batches (RESP2 connection).
pub fn mexists(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<bool> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(BATCH) {
        match raw(con, &args_with(&[b"CF.MEXISTS", key], batch)) {
            Value::Array(a) if a.len() == batch.len() => out.extend(a.iter().map(|x| match x {
                Value::Int(0) => false,
                Value::Int(1) => true,
                other => panic!("CF.MEXISTS element {}", show(other)),
            })),
            other => panic!("CF.MEXISTS {}: {}", lossy(key), show(&other)),
        }
    }
    out
}

/// One `<cmd> key item` per item, pipelined; integer replies.
pub fn per_item(con: &mut Connection, cmd: &str, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(BATCH) {
        let mut p = redis::pipe();
        for it in batch {
            p.cmd(cmd).arg(key).arg(it.as_slice());
        }
        let r: Vec<i64> = p
            .query(con)
            .unwrap_or_else(|e| panic!("{cmd} {} pipeline: {e}", lossy(key)));
        out.extend(r);
    }
    out
}

pub fn counts(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
    per_item(con, "CF.COUNT", key, items)
}

/// CF.ADD of every item; each must answer 1.
pub fn adds(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    let r = per_item(con, "CF.ADD", key, items);
    assert!(r.iter().all(|v| *v == 1), "CF.ADD {}: {r:?}", lossy(key));
}

/// CF.DEL of every item; each must answer 1 (they were all inserted).
pub fn dels(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    let r = per_item(con, "CF.DEL", key, items);
    assert!(r.iter().all(|v| *v == 1), "CF.DEL {}: {r:?}", lossy(key));
}

/// CF.INFO as (field, value) pairs, from a RESP2 flat array or a RESP3 map.
pub fn info_pairs(v: &Value) -> Vec<(String, Value)> {
    match v {
        Value::Array(a) => {
            assert_eq!(a.len() % 2, 0, "odd CF.INFO array: {}", show(v));
            a.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
        }
        Value::Map(m) => m.iter().map(|(k, v)| (text(k), v.clone())).collect(),
        other => panic!("CF.INFO: {}", show(other)),
    }
}

pub fn info_raw(con: &mut Connection, key: &[u8]) -> Value {
    raw(con, &[b"CF.INFO".as_slice(), key])
}

pub fn info(con: &mut Connection, key: &[u8]) -> String {
    show(&info_raw(con, key))
}

pub fn info_field(con: &mut Connection, key: &[u8], field: &str) -> Value {
    let v = info_raw(con, key);
    info_pairs(&v)
        .into_iter()
        .find(|(k, _)| k == field)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {field} in CF.INFO {}", show(&v)))
}

pub fn info_int(con: &mut Connection, key: &[u8], field: &str) -> i64 {
    match info_field(con, key, field) {
        Value::Int(i) => i,
        other => panic!("CF.INFO {field}: {}", show(&other)),
    }
}

/// A `name:value` fact of CF.DEBUG's line (ferrobloom's `fpsize` and `error`
/// appear only where they differ from RedisBloom's: 8 bits, no error rate).
pub fn debug_fact(con: &mut Connection, key: &[u8], name: &str) -> Option<String> {
    let line = cf_debug(con, key);
    let prefix = format!("{name}:");
    line.split(' ')
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .map(str::to_string)
}

/// The fingerprint width of a cuckoo filter (CF.DEBUG `fpsize`, 8 when absent).
pub fn fp_size(con: &mut Connection, key: &[u8]) -> i64 {
    debug_fact(con, key, "fpsize").map_or(8, |v| v.parse().expect("fpsize"))
}

/// The error rate a cuckoo filter was created with (CF.DEBUG `error`), as the
/// text CF.DEBUG prints, or "nil".
pub fn cf_error_rate(con: &mut Connection, key: &[u8]) -> String {
    debug_fact(con, key, "error").unwrap_or_else(|| "nil".to_string())
}

pub fn filters(con: &mut Connection, key: &[u8]) -> i64 {
    info_int(con, key, "Number of filters")
}

pub fn cf_debug(con: &mut Connection, key: &[u8]) -> String {
    match raw(con, &[b"CF.DEBUG".as_slice(), key]) {
        Value::BulkString(b) => String::from_utf8(b).expect("CF.DEBUG utf8"),
        other => panic!("CF.DEBUG: {}", show(&other)),
    }
}

pub fn digest_value(con: &mut Connection, key: &[u8]) -> String {
    match raw(con, &[b"DEBUG".as_slice(), b"DIGEST-VALUE", key]) {
        Value::Array(a) if a.len() == 1 => text(&a[0]),
        other => panic!("DEBUG DIGEST-VALUE: {}", show(&other)),
    }
}

pub fn db_digest(con: &mut Connection) -> String {
    text(&raw(con, &["DEBUG", "DIGEST"]))
}

/// CF.SCANDUMP with the standard client loop: `(iterator, data)` pairs, header
/// first; the final reply must be `[0, ""]` (BF.SCANDUMP's end; RedisBloom's
/// CF.SCANDUMP ends with `[0, nil]`, which go-redis cannot parse).
pub fn scandump(con: &mut Connection, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let v = raw(
            con,
            &[b"CF.SCANDUMP".as_slice(), key, it.to_string().as_bytes()],
        );
        match v {
            Value::Array(a) if a.len() == 2 => match (&a[0], &a[1]) {
                (Value::Int(0), Value::BulkString(end)) if end.is_empty() => return out,
                (Value::Int(next), Value::BulkString(data)) if *next > it => {
                    out.push((*next, data.clone()));
                    it = *next;
                }
                _ => panic!("CF.SCANDUMP {it}: {}", show(&Value::Array(a))),
            },
            other => panic!("CF.SCANDUMP {it}: {}", show(&other)),
        }
        assert!(out.len() < 100_000, "SCANDUMP does not terminate");
    }
}

pub fn loadchunk(con: &mut Connection, key: &[u8], it: i64, data: &[u8]) -> Value {
    raw(
        con,
        &[
            b"CF.LOADCHUNK".as_slice(),
            key,
            it.to_string().as_bytes(),
            data,
        ],
    )
}

pub fn loadchunks(con: &mut Connection, key: &[u8], chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        let v = loadchunk(con, key, *it, data);
        assert_eq!(show(&v), "+OK", "CF.LOADCHUNK {} {it}", lossy(key));
    }
}

pub fn header_of(con: &mut Connection, key: &[u8]) -> Vec<u8> {
    match raw(con, &[b"CF.SCANDUMP".as_slice(), key, b"0"]) {
        Value::Array(a) if a.len() == 2 && a[0] == Value::Int(1) => match &a[1] {
            Value::BulkString(h) => h.clone(),
            other => panic!("header: {}", show(other)),
        },
        other => panic!("CF.SCANDUMP 0: {}", show(&other)),
    }
}

/// A decoded header (see `CuckooFilter::encode_header`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hdr {
    pub fp_bits: u8,
    pub bucket_size: u8,
    pub flags: u8,
    pub max_iter: u16,
    pub expansion: u32,
    pub nfilters: u32,
    pub cursor_filter: u32,
    pub base: u64,
    pub items: u64,
    pub deletes: u64,
    /// f64 bits of the error rate, 0 = none.
    pub error_bits: u64,
    pub cursor_slot: u64,
}

pub fn get_u16(h: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(h[at..at + 2].try_into().unwrap())
}
pub fn get_u32(h: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(h[at..at + 4].try_into().unwrap())
}
pub fn put_u16(h: &mut [u8], at: usize, v: u16) {
    h[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

impl Hdr {
    pub fn plain(bucket_size: u8, expansion: u32, nfilters: u32, base: u64) -> Hdr {
        Hdr {
            fp_bits: 8,
            bucket_size,
            flags: 0,
            max_iter: 20,
            expansion,
            nfilters,
            cursor_filter: 0,
            base,
            items: 0,
            deletes: 0,
            error_bits: 0,
            cursor_slot: 0,
        }
    }

    pub fn decode(h: &[u8]) -> Hdr {
        assert_eq!(h.len(), HEADER_LEN, "header length");
        assert_eq!(&h[..4], b"FBcf", "header magic");
        assert_eq!(h[H_VERSION], 1, "header version");
        assert_eq!(get_u16(h, H_RESERVED), 0, "reserved header bytes");
        Hdr {
            fp_bits: h[H_FP_BITS],
            bucket_size: h[H_BUCKET_SIZE],
            flags: h[H_FLAGS],
            max_iter: get_u16(h, H_MAX_ITER),
            expansion: get_u32(h, H_EXPANSION),
            nfilters: get_u32(h, H_NFILTERS),
            cursor_filter: get_u32(h, H_CURSOR_FILTER),
            base: get_u64(h, H_BASE),
            items: get_u64(h, H_ITEMS),
            deletes: get_u64(h, H_DELETES),
            error_bits: get_u64(h, H_ERROR),
            cursor_slot: get_u64(h, H_CURSOR_SLOT),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN];
        h[..4].copy_from_slice(b"FBcf");
        h[H_VERSION] = 1;
        h[H_FP_BITS] = self.fp_bits;
        h[H_BUCKET_SIZE] = self.bucket_size;
        h[H_FLAGS] = self.flags;
        put_u16(&mut h, H_MAX_ITER, self.max_iter);
        put_u32(&mut h, H_EXPANSION, self.expansion);
        put_u32(&mut h, H_NFILTERS, self.nfilters);
        put_u32(&mut h, H_CURSOR_FILTER, self.cursor_filter);
        put_u64(&mut h, H_BASE, self.base);
        put_u64(&mut h, H_ITEMS, self.items);
        put_u64(&mut h, H_DELETES, self.deletes);
        put_u64(&mut h, H_ERROR, self.error_bits);
        put_u64(&mut h, H_CURSOR_SLOT, self.cursor_slot);
        h
    }

    /// Slot-storage bytes of every sub-filter.
    pub fn table_lens(&self) -> Vec<u64> {
        let mut buckets = self.base;
        (0..self.nfilters)
            .map(|i| {
                if i > 0 {
                    buckets *= u64::from(self.expansion);
                }
                (buckets * u64::from(self.bucket_size) * u64::from(self.fp_bits)).div_ceil(8)
            })
            .collect()
    }
}
