//! Integration tests of the CF.* (cuckoo filter) commands against a real redis-server
//! with the module: every command in RESP2 and RESP3, exact error texts, key rules,
//! growth and limits, deletion and incremental compaction, persistence (RDB, DEBUG
//! RELOAD, AOF, COPY, DUMP/RESTORE, SCANDUMP/LOADCHUNK), replication, hostile input
//! and false-positive rates (spec sections 2, 4, 5.2, 6.4, 7.2, 8.2, 8.3, 9, 13).
//!
//! Replies are compared through `show()`, a compact rendering of a raw `Value` that
//! keeps every type distinction the tests care about: `1` integer, `#t`/`#f` boolean,
//! `nil`, `+OK`/`+text` simple string, `"text"` bulk string, `!text` error (also
//! inside arrays), `[a,b]` array, `{k:v}` map, `0.5` double.
//!
//! After every round trip each filter is compared with its state before
//! (`KeySnap`): every inserted item is present, CF.COUNT of every inserted item is
//! unchanged (and at least its number of copies), a fixed set of never-inserted
//! probes gets the same answers (same fingerprints, so the same false positives),
//! and CF.INFO, CF.DEBUG and DEBUG DIGEST-VALUE are equal.

mod common;
use common::rdb::*;
use common::*;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use redis::{Connection, ConnectionLike, Value};

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const MEMORY_CAP_ERR: &str =
    "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)";
const NO_MEMORY_CREATE: &str = "ERR Insufficient memory to create filter";
const BAD_DATA_FORMAT: &str = "ERR Bad data format";
const INVALID_HEADER: &str = "Invalid header";
const CANNOT_CREATE: &str = "Couldn't create filter!";
const CANNOT_LOAD_CHUNK: &str = "Couldn't load chunk!";
const INVALID_POSITION: &str = "Invalid position";

/// Items per CF.INSERT / CF.MEXISTS / pipeline batch.
const BATCH: usize = 1000;
/// Largest SCANDUMP data chunk.
const CHUNK: usize = 16 * 1024 * 1024;

// Header layout (`CuckooFilter::encode_header`, 64 bytes, little-endian).
const HEADER_LEN: usize = 64;
const H_VERSION: usize = 4;
const H_FP_BITS: usize = 5;
const H_BUCKET_SIZE: usize = 6;
const H_FLAGS: usize = 7;
const H_MAX_ITER: usize = 8;
const H_RESERVED: usize = 10;
const H_EXPANSION: usize = 12;
const H_NFILTERS: usize = 16;
const H_CURSOR_FILTER: usize = 20;
const H_BASE: usize = 24;
const H_ITEMS: usize = 32;
const H_DELETES: usize = 40;
const H_ERROR: usize = 48;
const H_CURSOR_SLOT: usize = 56;

// ---------------------------------------------------------------------------------------------
// Command runners and reply rendering
// ---------------------------------------------------------------------------------------------

fn cmd_of<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name.as_ref()).expect("command name"));
    for a in rest {
        c.arg(a.as_ref());
    }
    c
}

/// Printable form of a command (long arguments shortened).
fn show_args<A: AsRef<[u8]>>(args: &[A]) -> String {
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
fn raw<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> Value {
    con.req_command(&cmd_of(args))
        .unwrap_or_else(|e| panic!("{}: client error {e}", show_args(args)))
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
        Value::BulkString(b) if b.len() > 80 => format!("<{} bytes>", b.len()),
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

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `show()` of the reply to a command line split at spaces.
fn q(con: &mut Connection, line: &str) -> String {
    show(&raw(con, &words(line)))
}

fn ok(con: &mut Connection, line: &str) {
    assert_eq!(q(con, line), "+OK", "{line}");
}

fn okb<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) {
    let v = raw(con, args);
    assert_eq!(show(&v), "+OK", "{}", show_args(args));
}

fn int(con: &mut Connection, line: &str) -> i64 {
    match raw(con, &words(line)) {
        Value::Int(i) => i,
        other => panic!("{line}: expected an integer, got {}", show(&other)),
    }
}

/// The command must answer an error; returns its exact wire text.
fn err(con: &mut Connection, line: &str) -> String {
    errb(con, &words(line))
}

fn errb<A: AsRef<[u8]>>(con: &mut Connection, args: &[A]) -> String {
    let v = raw(con, args);
    value_err_text(&v)
        .unwrap_or_else(|| panic!("{}: expected an error, got {}", show_args(args), show(&v)))
}

fn arity(cmd: &str) -> String {
    format!("ERR wrong number of arguments for '{cmd}' command")
}

/// RESP2 integer / RESP3 boolean rendering of a yes/no answer.
fn b(resp3: bool, v: bool) -> &'static str {
    match (resp3, v) {
        (false, false) => "0",
        (false, true) => "1",
        (true, false) => "#f",
        (true, true) => "#t",
    }
}

fn config_set(con: &mut Connection, name: &str, value: &str) {
    okb(con, &["CONFIG", "SET", name, value]);
}

fn key_exists(con: &mut Connection, key: &[u8]) -> bool {
    matches!(raw(con, &[b"EXISTS".as_slice(), key]), Value::Int(1))
}

fn ping(con: &mut Connection) {
    assert_eq!(q(con, "PING"), "+PONG");
}

/// Text of a simple/bulk string reply.
fn text(v: &Value) -> String {
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

fn names(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

fn args_with(head: &[&[u8]], items: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = head.iter().map(|a| a.to_vec()).collect();
    v.extend(items.iter().cloned());
    v
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// CF.INSERT <key> NOCREATE ITEMS ... in batches; every element must be 1.
fn insert_ok(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
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
fn insert_any(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
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
fn mexists(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<bool> {
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
fn per_item(con: &mut Connection, cmd: &str, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
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

fn counts(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
    per_item(con, "CF.COUNT", key, items)
}

/// CF.ADD of every item; each must answer 1.
fn adds(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    let r = per_item(con, "CF.ADD", key, items);
    assert!(r.iter().all(|v| *v == 1), "CF.ADD {}: {r:?}", lossy(key));
}

/// CF.DEL of every item; each must answer 1 (they were all inserted).
fn dels(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    let r = per_item(con, "CF.DEL", key, items);
    assert!(r.iter().all(|v| *v == 1), "CF.DEL {}: {r:?}", lossy(key));
}

/// CF.INFO as (field, value) pairs, from a RESP2 flat array or a RESP3 map.
fn info_pairs(v: &Value) -> Vec<(String, Value)> {
    match v {
        Value::Array(a) => {
            assert_eq!(a.len() % 2, 0, "odd CF.INFO array: {}", show(v));
            a.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
        }
        Value::Map(m) => m.iter().map(|(k, v)| (text(k), v.clone())).collect(),
        other => panic!("CF.INFO: {}", show(other)),
    }
}

fn info_raw(con: &mut Connection, key: &[u8]) -> Value {
    raw(con, &[b"CF.INFO".as_slice(), key])
}

fn info(con: &mut Connection, key: &[u8]) -> String {
    show(&info_raw(con, key))
}

fn info_field(con: &mut Connection, key: &[u8], field: &str) -> Value {
    let v = info_raw(con, key);
    info_pairs(&v)
        .into_iter()
        .find(|(k, _)| k == field)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {field} in CF.INFO {}", show(&v)))
}

fn info_int(con: &mut Connection, key: &[u8], field: &str) -> i64 {
    match info_field(con, key, field) {
        Value::Int(i) => i,
        other => panic!("CF.INFO {field}: {}", show(&other)),
    }
}

fn filters(con: &mut Connection, key: &[u8]) -> i64 {
    info_int(con, key, "Number of filters")
}

fn cf_debug(con: &mut Connection, key: &[u8]) -> String {
    match raw(con, &[b"CF.DEBUG".as_slice(), key]) {
        Value::BulkString(b) => String::from_utf8(b).expect("CF.DEBUG utf8"),
        other => panic!("CF.DEBUG: {}", show(&other)),
    }
}

fn digest_value(con: &mut Connection, key: &[u8]) -> String {
    match raw(con, &[b"DEBUG".as_slice(), b"DIGEST-VALUE", key]) {
        Value::Array(a) if a.len() == 1 => text(&a[0]),
        other => panic!("DEBUG DIGEST-VALUE: {}", show(&other)),
    }
}

fn db_digest(con: &mut Connection) -> String {
    text(&raw(con, &["DEBUG", "DIGEST"]))
}

/// CF.SCANDUMP with the standard client loop: `(iterator, data)` pairs, header
/// first; the final reply must be `[0, nil]`.
fn scandump(con: &mut Connection, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let v = raw(
            con,
            &[b"CF.SCANDUMP".as_slice(), key, it.to_string().as_bytes()],
        );
        match v {
            Value::Array(a) if a.len() == 2 => match (&a[0], &a[1]) {
                (Value::Int(0), Value::Nil) => return out,
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

fn loadchunk(con: &mut Connection, key: &[u8], it: i64, data: &[u8]) -> Value {
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

fn loadchunks(con: &mut Connection, key: &[u8], chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        let v = loadchunk(con, key, *it, data);
        assert_eq!(show(&v), "+OK", "CF.LOADCHUNK {} {it}", lossy(key));
    }
}

fn header_of(con: &mut Connection, key: &[u8]) -> Vec<u8> {
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
struct Hdr {
    fp_bits: u8,
    bucket_size: u8,
    flags: u8,
    max_iter: u16,
    expansion: u32,
    nfilters: u32,
    cursor_filter: u32,
    base: u64,
    items: u64,
    deletes: u64,
    /// f64 bits of the error rate, 0 = none.
    error_bits: u64,
    cursor_slot: u64,
}

fn get_u16(h: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(h[at..at + 2].try_into().unwrap())
}
fn get_u32(h: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(h[at..at + 4].try_into().unwrap())
}
fn put_u16(h: &mut [u8], at: usize, v: u16) {
    h[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

impl Hdr {
    fn plain(bucket_size: u8, expansion: u32, nfilters: u32, base: u64) -> Hdr {
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

    fn decode(h: &[u8]) -> Hdr {
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

    fn encode(&self) -> Vec<u8> {
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
    fn table_lens(&self) -> Vec<u64> {
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

// ---------------------------------------------------------------------------------------------
// Tracked filters and snapshots
// ---------------------------------------------------------------------------------------------

/// A filter key and the multiset of items it holds.
#[derive(Clone, Debug)]
struct Tracked {
    key: Vec<u8>,
    copies: BTreeMap<Vec<u8>, u64>,
}

impl Tracked {
    fn new(key: &[u8]) -> Tracked {
        Tracked {
            key: key.to_vec(),
            copies: BTreeMap::new(),
        }
    }

    fn add(&mut self, items: &[Vec<u8>]) {
        for i in items {
            *self.copies.entry(i.clone()).or_insert(0) += 1;
        }
    }

    fn remove(&mut self, items: &[Vec<u8>]) {
        for i in items {
            let c = self.copies.get_mut(i).expect("removing an untracked item");
            *c -= 1;
            if *c == 0 {
                self.copies.remove(i);
            }
        }
    }

    fn items(&self) -> Vec<Vec<u8>> {
        self.copies.keys().cloned().collect()
    }
}

fn find<'a>(set: &'a mut [Tracked], key: &[u8]) -> &'a mut Tracked {
    set.iter_mut()
        .find(|t| t.key == key)
        .unwrap_or_else(|| panic!("no tracked key {}", lossy(key)))
}

/// Never-inserted items: their answers pin the fingerprints (false positives included).
fn probes() -> Vec<Vec<u8>> {
    let mut v = names("probe:", 3000);
    v.extend((0..200u32).map(|i| {
        let mut p = b"probe\x00\xff".to_vec();
        p.extend_from_slice(&i.to_le_bytes());
        p
    }));
    v
}

/// The observable state of one filter.
#[derive(Debug, PartialEq)]
struct KeySnap {
    info: String,
    debug: String,
    digest: String,
    counts: Vec<i64>,
    probes: Vec<bool>,
}

/// Snapshot of `key`, which must hold every item of `t` (with at least as many
/// CF.COUNT matches as copies).
fn key_snap(con: &mut Connection, key: &[u8], t: &Tracked) -> KeySnap {
    let items = t.items();
    let present = mexists(con, key, &items);
    let missing: Vec<String> = items
        .iter()
        .zip(&present)
        .filter(|(_, p)| !**p)
        .map(|(i, _)| lossy(i))
        .take(10)
        .collect();
    assert!(
        missing.is_empty(),
        "{}: inserted items missing (first 10): {missing:?}",
        lossy(key)
    );
    let c = counts(con, key, &items);
    for ((item, copies), got) in t.copies.iter().zip(&c) {
        assert!(
            *got >= *copies as i64,
            "{}: CF.COUNT {} = {got}, but it was added {copies} times",
            lossy(key),
            lossy(item)
        );
    }
    assert_eq!(
        info_int(con, key, "Number of items inserted"),
        t.copies.values().sum::<u64>() as i64,
        "{}: Number of items inserted",
        lossy(key)
    );
    KeySnap {
        info: info(con, key),
        debug: cf_debug(con, key),
        digest: digest_value(con, key),
        counts: c,
        probes: mexists(con, key, &probes()),
    }
}

fn assert_snap_eq(got: &KeySnap, want: &KeySnap, what: &str) {
    assert_eq!(got.info, want.info, "{what}: CF.INFO");
    assert_eq!(got.debug, want.debug, "{what}: CF.DEBUG");
    assert_eq!(got.digest, want.digest, "{what}: DEBUG DIGEST-VALUE");
    let diff = got
        .counts
        .iter()
        .zip(&want.counts)
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        got.counts.len() == want.counts.len() && diff == 0,
        "{what}: CF.COUNT differs for {diff} items"
    );
    let diff = got
        .probes
        .iter()
        .zip(&want.probes)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(diff, 0, "{what}: {diff} probes answer differently");
}

fn snapshot(con: &mut Connection, set: &[Tracked]) -> Vec<KeySnap> {
    set.iter().map(|t| key_snap(con, &t.key, t)).collect()
}

/// Every tracked key still holds exactly its snapshot.
fn assert_set(con: &mut Connection, set: &[Tracked], snap: &[KeySnap], what: &str) {
    assert_eq!(set.len(), snap.len());
    for (t, s) in set.iter().zip(snap) {
        let got = key_snap(con, &t.key, t);
        assert_snap_eq(&got, s, &format!("{what}, key {}", lossy(&t.key)));
    }
}

/// `dst` holds exactly what `src` holds.
fn assert_same(con: &mut Connection, src: &Tracked, dst: &[u8], what: &str) {
    let a = key_snap(con, &src.key, src);
    let b = key_snap(con, dst, src);
    assert_snap_eq(
        &b,
        &a,
        &format!("{what}: {} vs {}", lossy(dst), lossy(&src.key)),
    );
}

// ---------------------------------------------------------------------------------------------
// The standard filter set
// ---------------------------------------------------------------------------------------------

const PLAIN: &[u8] = b"cf:plain";
const GROWN: &[u8] = b"cf:grown";
const WIDE: &[u8] = b"cf:wide";
const ODD: &[u8] = b"cf:odd";
const AUTO: &[u8] = b"cf:auto";
const NX: &[u8] = b"cf:nx";
const EMPTY: &[u8] = b"cf:empty";
const ALLDEL: &[u8] = b"cf:alldel";
const ZERO3: &[u8] = b"cf:zero3";
const BINKEY: &[u8] = b"cf:bin\x00\xff\r\n key";
const COMPACTING: &[u8] = b"cf:compacting";

/// Every single byte value, the empty string, a 1 KiB item, RESP-looking items.
fn binary_items() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    v.push(Vec::new());
    v.push((0..1024u32).map(|i| (i * 31 + 7) as u8).collect());
    v.push((0..=255u8).collect());
    v.push(b"\r\n$-1\r\n*3\r\n".to_vec());
    v.push(b"\x00\x00\x00\x00".to_vec());
    v
}

/// Builds the standard set: plain, with duplicates; grown (EXPANSION 2, deletes);
/// 17-bit fingerprints at bucket size 4; 10-bit fingerprints at bucket size 3 with
/// expansion 4; auto-created; CF.INSERTNX-created with ERROR; empty; all items
/// deleted; three empty sub-filters (loaded from a header); binary key and items;
/// a 4 MiB sub-filter with a compaction pass left half-way (flags 3).
fn build_set(con: &mut Connection) -> Vec<Tracked> {
    let mut set = Vec::new();

    ok(con, "CF.RESERVE cf:plain 1000");
    let mut t = Tracked::new(PLAIN);
    let items = names("p", 700);
    insert_ok(con, PLAIN, &items);
    t.add(&items);
    adds(con, PLAIN, &items[..100]);
    t.add(&items[..100]);
    adds(con, PLAIN, &items[..20]);
    t.add(&items[..20]);
    assert!(per_item(con, "CF.ADDNX", PLAIN, &items[..10])
        .iter()
        .all(|v| *v == 0));
    set.push(t);

    ok(con, "CF.RESERVE cf:grown 64 EXPANSION 2 MAXITERATIONS 30");
    let mut t = Tracked::new(GROWN);
    let items = names("g", 1500);
    insert_ok(con, GROWN, &items);
    t.add(&items);
    dels(con, GROWN, &items[..150]);
    t.remove(&items[..150]);
    assert!(filters(con, GROWN) >= 4);
    set.push(t);

    ok(con, "CF.RESERVE cf:wide 2000 BUCKETSIZE 4 ERROR 0.0001");
    assert_eq!(info_int(con, WIDE, "Fingerprint size"), 17);
    let mut t = Tracked::new(WIDE);
    let items = names("w", 1500);
    insert_ok(con, WIDE, &items);
    t.add(&items);
    set.push(t);

    ok(
        con,
        "CF.RESERVE cf:odd 100 BUCKETSIZE 3 EXPANSION 3 ERROR 0.01",
    );
    assert_eq!(info_int(con, ODD, "Fingerprint size"), 10);
    let mut t = Tracked::new(ODD);
    let items = names("o", 900);
    insert_ok(con, ODD, &items);
    t.add(&items);
    dels(con, ODD, &items[..50]);
    t.remove(&items[..50]);
    assert!(filters(con, ODD) >= 2);
    set.push(t);

    let mut t = Tracked::new(AUTO);
    assert_eq!(q(con, "CF.ADD cf:auto a-first"), "1");
    t.add(&[b"a-first".to_vec()]);
    let items = names("a", 300);
    insert_ok(con, AUTO, &items);
    t.add(&items);
    set.push(t);

    let mut t = Tracked::new(NX);
    let items = names("n", 200);
    let r = raw(
        con,
        &args_with(
            &[
                b"CF.INSERTNX",
                NX,
                b"CAPACITY",
                b"300",
                b"ERROR",
                b"0.001",
                b"ITEMS",
            ],
            &items,
        ),
    );
    let Value::Array(r) = r else {
        panic!("CF.INSERTNX: {}", show(&r))
    };
    for (item, v) in items.iter().zip(&r) {
        match v {
            Value::Int(1) => t.add(std::slice::from_ref(item)),
            Value::Int(0) => {}
            other => panic!("CF.INSERTNX element {}", show(other)),
        }
    }
    assert!(t.copies.len() >= 195);
    set.push(t);

    ok(con, "CF.RESERVE cf:empty 100");
    set.push(Tracked::new(EMPTY));

    ok(con, "CF.RESERVE cf:alldel 4 BUCKETSIZE 2");
    let items = names("d", 20);
    insert_ok(con, ALLDEL, &items);
    dels(con, ALLDEL, &items);
    assert_eq!(info_int(con, ALLDEL, "Number of items inserted"), 0);
    set.push(Tracked::new(ALLDEL));

    // Three empty sub-filters with a delete count: a filter whose items were all
    // deleted without the sub-filters being compacted away (quirk Q13).
    let mut h = Hdr::plain(2, 2, 3, 4);
    h.deletes = 7;
    okb(con, &[b"CF.LOADCHUNK".as_slice(), ZERO3, b"1", &h.encode()]);
    assert_eq!(filters(con, ZERO3), 3);
    set.push(Tracked::new(ZERO3));

    okb(con, &[b"CF.RESERVE".as_slice(), BINKEY, b"1000"]);
    let mut t = Tracked::new(BINKEY);
    let items = binary_items();
    insert_ok(con, BINKEY, &items);
    t.add(&items);
    adds(con, BINKEY, &items[..5]);
    t.add(&items[..5]);
    set.push(t);

    let t = build_compacting(con, COMPACTING);
    ok(con, "CF.COMPACT cf:compacting");
    let h = Hdr::decode(&header_of(con, COMPACTING));
    assert_eq!(
        h.flags, 3,
        "compaction pass in progress (continue mode): {h:?}"
    );
    assert_eq!(h.cursor_filter, 2, "{h:?}");
    assert!(h.cursor_slot > 0, "{h:?}");
    set.push(t);

    set
}

/// A filter with sub-filters of 4, 4096 and 4Mi slots (EXPANSION 1024) holding
/// items in all three, 10 of them deleted: one CF.COMPACT (about 1M slot-units of
/// work) cannot finish a pass over it.
fn build_compacting(con: &mut Connection, key: &[u8]) -> Tracked {
    okb(
        con,
        &[
            b"CF.RESERVE".as_slice(),
            key,
            b"4",
            b"BUCKETSIZE",
            b"2",
            b"EXPANSION",
            b"1024",
        ],
    );
    let mut t = Tracked::new(key);
    let mut n = 0;
    while filters(con, key) < 3 {
        assert!(n < 10_000, "the filter does not reach 3 sub-filters");
        let items = names(&format!("c{n}-"), 500);
        insert_ok(con, key, &items);
        t.add(&items);
        n += 500;
    }
    let items = names("c-late", 400);
    insert_ok(con, key, &items);
    t.add(&items);
    let some: Vec<Vec<u8>> = t.items().into_iter().take(10).collect();
    dels(con, key, &some);
    t.remove(&some);
    assert_eq!(info_int(con, key, "Number of items deleted"), 10);
    assert_eq!(Hdr::decode(&header_of(con, key)).flags, 0);
    t
}

/// More writes of every kind on the set (and a new auto-created key).
fn more_writes(con: &mut Connection, set: &mut Vec<Tracked>, tag: &str) {
    for t in set.iter_mut() {
        let key = t.key.clone();
        let new = names(&format!("{tag}:new:"), 40);
        adds(con, &key, &new);
        t.add(&new);
        adds(con, &key, &new[..5]);
        t.add(&new[..5]);
        let old: Vec<Vec<u8>> = t.items().into_iter().step_by(7).take(20).collect();
        dels(con, &key, &old);
        t.remove(&old);
        let nx = raw(con, &[b"CF.ADDNX".as_slice(), &key, &new[0]]);
        assert_eq!(show(&nx), "0");
    }
    for t in set.iter() {
        if t.key.ends_with(GROWN) || t.key.ends_with(COMPACTING) {
            okb(con, &[b"CF.COMPACT".as_slice(), &t.key]);
        }
    }
    let key = format!("{tag}:auto").into_bytes();
    let mut t = Tracked::new(&key);
    let items = names(&format!("{tag}:auto:"), 300);
    assert!(insert_any(con, &key, &items).iter().all(|v| *v == 1));
    t.add(&items);
    set.push(t);
}

// ---------------------------------------------------------------------------------------------
// RESTORE (the AOF and DUMP-payload helpers are in `common::rdb`)
// ---------------------------------------------------------------------------------------------

fn restore(con: &mut Connection, key: &[u8], payload: &[u8]) -> Value {
    raw(con, &[b"RESTORE".as_slice(), key, b"0", payload])
}

/// Corrupted variants of a valid header of a filter with 3 sub-filters (expansion 2,
/// bucket size 2, 8-bit fingerprints): `(what, header, expected LOADCHUNK error)`.
fn bad_headers(h: &[u8]) -> Vec<(String, Vec<u8>, &'static str)> {
    let hdr = Hdr::decode(h);
    assert_eq!(
        (hdr.nfilters, hdr.expansion, hdr.bucket_size, hdr.fp_bits),
        (3, 2, 2, 8),
        "expected a 3-sub-filter header"
    );
    let total_slots: u64 = hdr.base * 2 * (1 + 2 + 4);
    let mut out = Vec::new();
    let mut edit = |what: &str, want: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = h.to_vec();
        f(&mut v);
        out.push((what.to_string(), v, want));
    };
    edit("empty", INVALID_HEADER, &|v| v.clear());
    edit("truncated to 3 bytes", INVALID_HEADER, &|v| v.truncate(3));
    edit("truncated by one byte", INVALID_HEADER, &|v| {
        v.pop();
    });
    edit("RedisBloom's 38-byte length", INVALID_HEADER, &|v| {
        v.truncate(38)
    });
    edit("extended by one byte", INVALID_HEADER, &|v| v.push(0));
    edit("doubled", INVALID_HEADER, &|v| {
        let c = v.clone();
        v.extend_from_slice(&c)
    });
    edit("wrong magic", INVALID_HEADER, &|v| v[0] = b'X');
    edit("bloom magic", INVALID_HEADER, &|v| {
        v[..4].copy_from_slice(b"FBbf")
    });
    edit("version 0", INVALID_HEADER, &|v| v[H_VERSION] = 0);
    edit("version 2", INVALID_HEADER, &|v| v[H_VERSION] = 2);
    edit("fingerprint bits 0", INVALID_HEADER, &|v| v[H_FP_BITS] = 0);
    edit("fingerprint bits 3", INVALID_HEADER, &|v| v[H_FP_BITS] = 3);
    edit("fingerprint bits 33", INVALID_HEADER, &|v| {
        v[H_FP_BITS] = 33
    });
    edit("fingerprint bits 99", INVALID_HEADER, &|v| {
        v[H_FP_BITS] = 99
    });
    edit("bucket size 0", INVALID_HEADER, &|v| v[H_BUCKET_SIZE] = 0);
    edit("unknown flag", INVALID_HEADER, &|v| v[H_FLAGS] = 0x80);
    edit("continue flag without a pass", INVALID_HEADER, &|v| {
        v[H_FLAGS] = 2
    });
    edit("max iterations 0", INVALID_HEADER, &|v| {
        put_u16(v, H_MAX_ITER, 0)
    });
    edit("reserved bytes set", INVALID_HEADER, &|v| {
        put_u16(v, H_RESERVED, 1)
    });
    edit("expansion 3 (not a power of two)", INVALID_HEADER, &|v| {
        put_u32(v, H_EXPANSION, 3)
    });
    edit("expansion 65536", INVALID_HEADER, &|v| {
        put_u32(v, H_EXPANSION, 65536)
    });
    edit("expansion 0 with 3 sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_EXPANSION, 0)
    });
    edit("zero sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_NFILTERS, 0)
    });
    edit("65537 sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_NFILTERS, 65537)
    });
    edit("u32::MAX sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_NFILTERS, u32::MAX)
    });
    edit(
        "65536 sub-filters, expansion 2 (overflow)",
        CANNOT_CREATE,
        &|v| put_u32(v, H_NFILTERS, 65536),
    );
    edit(
        "64 sub-filters, expansion 2 (2^69 bytes)",
        CANNOT_CREATE,
        &|v| put_u32(v, H_NFILTERS, 64),
    );
    edit("zero buckets", INVALID_HEADER, &|v| put_u64(v, H_BASE, 0));
    edit("3 buckets", INVALID_HEADER, &|v| put_u64(v, H_BASE, 3));
    edit("u64::MAX buckets", INVALID_HEADER, &|v| {
        put_u64(v, H_BASE, u64::MAX)
    });
    edit("2^40 buckets", CANNOT_CREATE, &|v| {
        put_u64(v, H_BASE, 1 << 40)
    });
    edit("2^63 buckets", CANNOT_CREATE, &|v| {
        put_u64(v, H_BASE, 1 << 63)
    });
    edit("items = slots + 1", INVALID_HEADER, &move |v| {
        put_u64(v, H_ITEMS, total_slots + 1)
    });
    edit("items = u64::MAX", INVALID_HEADER, &|v| {
        put_u64(v, H_ITEMS, u64::MAX)
    });
    edit("error rate 1", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, 1f64.to_bits())
    });
    edit("error rate NaN", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, f64::NAN.to_bits())
    });
    edit("error rate -0.5", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, (-0.5f64).to_bits())
    });
    edit("error rate inf", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, f64::INFINITY.to_bits())
    });
    edit("cursor without a pass", INVALID_HEADER, &|v| {
        put_u32(v, H_CURSOR_FILTER, 1)
    });
    edit("cursor slot without a pass", INVALID_HEADER, &|v| {
        put_u64(v, H_CURSOR_SLOT, 5)
    });
    edit("pass on sub-filter 3 of 3", INVALID_HEADER, &|v| {
        v[H_FLAGS] = 1;
        put_u32(v, H_CURSOR_FILTER, 3)
    });
    edit(
        "pass past the end of its sub-filter",
        INVALID_HEADER,
        &move |v| {
            v[H_FLAGS] = 3;
            put_u32(v, H_CURSOR_FILTER, 2);
            put_u64(v, H_CURSOR_SLOT, total_slots)
        },
    );
    out
}

// =============================================================================================
// 1. Commands, shapes and replies
// =============================================================================================

#[test]
fn reserve_shapes_info_and_debug() {
    let s = Server::start();
    let mut con = s.conn();
    let mut con3 = s.conn_resp3();

    ok(&mut con, "CF.RESERVE a 1000");
    assert_eq!(
        info(&mut con, b"a"),
        "[+Size,1080,+Number of buckets,512,+Number of filters,1,\
         +Number of items inserted,0,+Number of items deleted,0,+Bucket size,2,\
         +Expansion rate,1,+Max iterations,20,+Fingerprint size,8,+Error rate,nil]"
    );
    assert_eq!(
        info(&mut con3, b"a"),
        "{+Size:1080,+Number of buckets:512,+Number of filters:1,\
         +Number of items inserted:0,+Number of items deleted:0,+Bucket size:2,\
         +Expansion rate:1,+Max iterations:20,+Fingerprint size:8,+Error rate:nil}"
    );
    assert_eq!(
        cf_debug(&mut con, b"a"),
        "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    assert_eq!(q(&mut con, "TYPE a"), "+MBbloomCF");
    // MEMORY USAGE = what the allocator holds for the value (the Size formula
    // leaves out the allocator's rounding and the structures around the table) +
    // the server's per-key overhead.
    let usage = int(&mut con, "MEMORY USAGE a");
    assert!((1112..1112 + 512).contains(&usage), "{usage}");

    assert_eq!(q(&mut con, "CF.INSERT f3 CAPACITY 10000 ITEMS foo"), "[1]");
    assert_eq!(
        cf_debug(&mut con, b"f3"),
        "bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    ok(&mut con, "CF.RESERVE b 10 MAXITERATIONS 10");
    assert_eq!(
        cf_debug(&mut con, b"b"),
        "bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:10 expansion:1"
    );

    // Every option, any case; the expansion is rounded up to a power of two.
    ok(
        &mut con,
        "cf.reserve c 1000 bucketsize 4 MaxIterations 7 expansion 3 error 0.01",
    );
    assert_eq!(
        cf_debug(&mut con, b"c"),
        "bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:7 expansion:4"
    );
    // 2*4/(2^f - 1) <= 0.01 -> f = 10 bits; 256*4 slots * 10 bits = 1280 bytes.
    assert_eq!(
        info(&mut con, b"c"),
        "[+Size,1336,+Number of buckets,256,+Number of filters,1,\
         +Number of items inserted,0,+Number of items deleted,0,+Bucket size,4,\
         +Expansion rate,4,+Max iterations,7,+Fingerprint size,10,+Error rate,\"0.01\"]"
    );
    assert_eq!(
        info(&mut con3, b"c"),
        "{+Size:1336,+Number of buckets:256,+Number of filters:1,\
         +Number of items inserted:0,+Number of items deleted:0,+Bucket size:4,\
         +Expansion rate:4,+Max iterations:7,+Fingerprint size:10,+Error rate:0.01}"
    );
    assert_eq!(
        info_field(&mut con3, b"c", "Error rate"),
        Value::Double(0.01)
    );

    // ERROR picks the smallest width >= 8 with 2b/(2^f-1) <= rate.
    for (bs, rate, bits) in [
        (2, "0.0001", 16),
        (2, "0.5", 8),
        (2, "0.016", 8),
        (2, "0.0156", 9),
        (4, "0.0001", 17),
        (1, "0.001", 11),
        (2, "0.000000001", 32),
    ] {
        let key = format!("e-{bs}-{rate}");
        ok(
            &mut con,
            &format!("CF.RESERVE {key} 64 BUCKETSIZE {bs} ERROR {rate}"),
        );
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Fingerprint size"),
            bits,
            "bucket size {bs}, ERROR {rate}"
        );
        assert_eq!(
            text(&info_field(&mut con, key.as_bytes(), "Error rate"))
                .parse::<f64>()
                .unwrap(),
            rate.parse::<f64>().unwrap()
        );
        let table_bits = 64u64 * bits as u64;
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Size") as u64,
            40 + 16 + table_bits.div_ceil(8)
        );
    }

    // Shapes (spec 6.4): next_power_of_two(capacity / bucket size).
    for (cap, bs, buckets) in [
        (1000, 2, 512),
        (10, 2, 8),
        (10000, 2, 8192),
        (64, 1, 64),
        (256, 4, 64),
        (2, 1, 2),
        (510, 255, 2),
        (1073741824, 2, 536870912),
    ] {
        let key = format!("s-{cap}-{bs}");
        if cap > 100_000_000 {
            // 1 GiB table: only the parse + memory-cap path, never allocated here.
            config_set(&mut con, "bf.max-filter-memory", "4096");
            assert_eq!(
                err(&mut con, &format!("CF.RESERVE {key} {cap} BUCKETSIZE {bs}")),
                NO_MEMORY_CREATE
            );
            config_set(&mut con, "bf.max-filter-memory", "4gb");
            continue;
        }
        ok(&mut con, &format!("CF.RESERVE {key} {cap} BUCKETSIZE {bs}"));
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Number of buckets"),
            buckets,
            "{cap}/{bs}"
        );
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Size"),
            40 + 16 + buckets * bs,
            "{cap}/{bs}"
        );
    }

    // EXPANSION 0 stays 0; a key named like a keyword is just a key.
    ok(&mut con, "CF.RESERVE z 100 EXPANSION 0");
    assert_eq!(info_int(&mut con, b"z", "Expansion rate"), 0);
    ok(&mut con, "CF.RESERVE BUCKETSIZE 100");
    assert_eq!(info_int(&mut con, b"BUCKETSIZE", "Bucket size"), 2);
    ok(&mut con, "CF.RESERVE ERROR 100 ERROR 0.001");
    assert_eq!(info_int(&mut con, b"ERROR", "Fingerprint size"), 12);

    // The same filter from RESP3 and RESP2 clients.
    ok(&mut con3, "CF.RESERVE r3 1000");
    assert_eq!(info(&mut con, b"r3"), info(&mut con, b"a"));
}

/// ADD / ADDNX / EXISTS / MEXISTS / COUNT / DEL in one protocol.
fn item_commands_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
    let t = |v| b(resp3, v);

    ok(&mut con, "CF.RESERVE k 1000");
    assert_eq!(q(&mut con, "CF.ADD k a"), t(true));
    assert_eq!(q(&mut con, "CF.ADD k a"), t(true));
    assert_eq!(q(&mut con, "CF.ADD k b"), t(true));
    assert_eq!(q(&mut con, "CF.ADDNX k a"), t(false));
    assert_eq!(q(&mut con, "CF.ADDNX k c"), t(true));
    assert_eq!(q(&mut con, "CF.ADDNX k c"), t(false));
    assert_eq!(q(&mut con, "CF.EXISTS k a"), t(true));
    assert_eq!(q(&mut con, "CF.EXISTS k nope"), t(false));
    assert_eq!(
        q(&mut con, "CF.MEXISTS k a b c nope"),
        format!("[{},{},{},{}]", t(true), t(true), t(true), t(false))
    );
    // CF.COUNT is an integer in both protocols.
    assert_eq!(q(&mut con, "CF.COUNT k a"), "2");
    assert_eq!(q(&mut con, "CF.COUNT k b"), "1");
    assert_eq!(q(&mut con, "CF.COUNT k nope"), "0");
    assert_eq!(info_int(&mut con, b"k", "Number of items inserted"), 4);

    // CF.DEL removes one copy.
    let before = digest_value(&mut con, b"k");
    assert_eq!(q(&mut con, "CF.DEL k a"), t(true));
    assert_eq!(q(&mut con, "CF.COUNT k a"), "1");
    assert_eq!(q(&mut con, "CF.EXISTS k a"), t(true));
    assert_ne!(digest_value(&mut con, b"k"), before);
    assert_eq!(q(&mut con, "CF.DEL k a"), t(true));
    assert_eq!(q(&mut con, "CF.COUNT k a"), "0");
    assert_eq!(q(&mut con, "CF.EXISTS k a"), t(false));
    assert_eq!(info_int(&mut con, b"k", "Number of items inserted"), 2);
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 2);
    assert_eq!(
        cf_debug(&mut con, b"k"),
        "bktsize:2 buckets:512 items:2 deletes:2 filters:1 max_iterations:20 expansion:1"
    );

    // Deleting an absent item answers 0 and changes nothing.
    let before = digest_value(&mut con, b"k");
    let info_before = info(&mut con, b"k");
    assert_eq!(q(&mut con, "CF.DEL k a"), t(false));
    assert_eq!(q(&mut con, "CF.DEL k never-added"), t(false));
    assert_eq!(digest_value(&mut con, b"k"), before);
    assert_eq!(info(&mut con, b"k"), info_before);

    // Many copies of one item: counted, and deleted one at a time.
    for _ in 0..3 {
        assert_eq!(q(&mut con, "CF.ADD k dup"), t(true));
    }
    assert_eq!(q(&mut con, "CF.COUNT k dup"), "3");
    assert_eq!(q(&mut con, "CF.DEL k dup"), t(true));
    assert_eq!(q(&mut con, "CF.COUNT k dup"), "2");

    // Binary and empty items.
    for item in binary_items() {
        let r = raw(&mut con, &[b"CF.ADD".as_slice(), b"k", &item]);
        assert_eq!(show(&r), t(true));
        let r = raw(&mut con, &[b"CF.EXISTS".as_slice(), b"k", &item]);
        assert_eq!(show(&r), t(true), "{item:?}");
    }

    // CF.ADD / CF.ADDNX create a missing key with the defaults.
    assert_eq!(q(&mut con, "CF.ADD new1 x"), t(true));
    assert_eq!(q(&mut con, "CF.ADDNX new2 x"), t(true));
    for key in [b"new1".as_slice(), b"new2"] {
        assert_eq!(
            cf_debug(&mut con, key),
            "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
    }

    // CF.COUNT never counts a bucket twice when both candidates coincide (Q10): with 2
    // buckets, about half of all items have i1 == i2.
    ok(&mut con, "CF.RESERVE two 4");
    for i in 0..64 {
        let item = format!("q10-{i}");
        assert_eq!(q(&mut con, &format!("CF.ADD two {item}")), t(true));
        assert_eq!(q(&mut con, &format!("CF.COUNT two {item}")), "1", "{item}");
        assert_eq!(q(&mut con, &format!("CF.DEL two {item}")), t(true));
        assert_eq!(q(&mut con, &format!("CF.COUNT two {item}")), "0", "{item}");
    }
    assert_eq!(info_int(&mut con, b"two", "Number of filters"), 1);
}

#[test]
fn item_commands_resp2() {
    item_commands_in(false);
}

#[test]
fn item_commands_resp3() {
    item_commands_in(true);
}

/// CF.INSERT / CF.INSERTNX options and per-item replies in one protocol.
fn insert_commands_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
    let t = |v| b(resp3, v);
    let (yes, no_room) = if resp3 { ("#t", "#f") } else { ("1", "-1") };

    // Creation: default capacity, CAPACITY, ERROR, both.
    assert_eq!(
        q(&mut con, "CF.INSERT i1 ITEMS a b a"),
        format!("[{yes},{yes},{yes}]")
    );
    assert_eq!(q(&mut con, "CF.COUNT i1 a"), "2");
    assert_eq!(
        cf_debug(&mut con, b"i1"),
        "bktsize:2 buckets:512 items:3 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    assert_eq!(
        q(&mut con, "CF.INSERT i2 CAPACITY 100 ITEMS a"),
        format!("[{yes}]")
    );
    assert_eq!(info_int(&mut con, b"i2", "Number of buckets"), 64);
    assert_eq!(
        q(&mut con, "CF.INSERT i3 ERROR 0.001 CAPACITY 100 ITEMS a"),
        format!("[{yes}]")
    );
    assert_eq!(info_int(&mut con, b"i3", "Number of buckets"), 64);
    assert_eq!(info_int(&mut con, b"i3", "Fingerprint size"), 12);
    // Options only apply to creation: an existing filter keeps its shape.
    assert_eq!(
        q(&mut con, "CF.INSERT i2 CAPACITY 5000 ERROR 0.0001 ITEMS b"),
        format!("[{yes}]")
    );
    assert_eq!(info_int(&mut con, b"i2", "Number of buckets"), 64);
    assert_eq!(info_int(&mut con, b"i2", "Fingerprint size"), 8);

    // NOCREATE.
    assert_eq!(
        err(&mut con, "CF.INSERT i9 NOCREATE ITEMS a"),
        "ERR not found"
    );
    assert_eq!(
        err(&mut con, "CF.INSERTNX i9 NOCREATE ITEMS a"),
        "ERR not found"
    );
    assert!(!key_exists(&mut con, b"i9"));
    assert_eq!(
        q(&mut con, "CF.INSERT i1 NOCREATE ITEMS c"),
        format!("[{yes}]")
    );
    assert_eq!(q(&mut con, "CF.EXISTS i1 c"), t(true));
    // Keywords are case-insensitive; ITEMS ends the options (later words are items).
    assert_eq!(
        q(
            &mut con,
            "cf.insert i1 nocreate items NOCREATE ITEMS CAPACITY"
        ),
        format!("[{yes},{yes},{yes}]")
    );
    assert_eq!(q(&mut con, "CF.EXISTS i1 NOCREATE"), t(true));
    assert_eq!(q(&mut con, "CF.EXISTS i1 CAPACITY"), t(true));

    // CF.INSERTNX: 1 / 0 in both protocols.
    assert_eq!(q(&mut con, "CF.INSERTNX n1 ITEMS a b a"), "[1,1,0]");
    assert_eq!(q(&mut con, "CF.INSERTNX n1 ITEMS a c"), "[0,1]");
    assert_eq!(q(&mut con, "CF.COUNT n1 a"), "1");
    assert_eq!(
        q(&mut con, "CF.INSERTNX n2 CAPACITY 64 ERROR 0.01 ITEMS x"),
        "[1]"
    );
    assert_eq!(info_int(&mut con, b"n2", "Number of buckets"), 32);
    assert_eq!(info_int(&mut con, b"n2", "Fingerprint size"), 9);

    // No room: -1 (CF.INSERT in RESP3: false); later items are still attempted.
    ok(&mut con, "CF.RESERVE full 4 EXPANSION 0");
    assert_eq!(
        q(&mut con, "CF.INSERT full ITEMS x1 x2 x3 x4 x5 x6"),
        format!("[{yes},{yes},{yes},{yes},{no_room},{no_room}]")
    );
    assert_eq!(q(&mut con, "CF.INSERTNX full ITEMS x1 y1 x4"), "[0,-1,0]");
    assert_eq!(info_int(&mut con, b"full", "Number of items inserted"), 4);
    let before = digest_value(&mut con, b"full");
    assert_eq!(
        q(&mut con, "CF.INSERT full ITEMS y2"),
        format!("[{no_room}]")
    );
    assert_eq!(digest_value(&mut con, b"full"), before);
    assert_eq!(
        q(&mut con, "CF.MEXISTS full x1 x2 x3 x4"),
        format!("[{0},{0},{0},{0}]", t(true))
    );
}

#[test]
fn insert_commands_resp2() {
    insert_commands_in(false);
}

#[test]
fn insert_commands_resp3() {
    insert_commands_in(true);
}

#[test]
fn auto_creation_uses_the_configured_defaults() {
    let s = Server::start();
    let mut con = s.conn();
    config_set(&mut con, "bf.cf-initial-size", "500");
    config_set(&mut con, "bf.cf-bucket-size", "4");
    config_set(&mut con, "bf.cf-max-iterations", "50");
    config_set(&mut con, "bf.cf-expansion-factor", "3");
    config_set(&mut con, "bf.cf-error-rate", "0.001");

    // 500 / 4 -> 128 buckets; 8/(2^f-1) <= 0.001 -> 13 bits; expansion 3 -> 4.
    let want = "bktsize:4 buckets:128 items:1 deletes:0 filters:1 max_iterations:50 expansion:4";
    assert_eq!(q(&mut con, "CF.ADD a x"), "1");
    assert_eq!(q(&mut con, "CF.ADDNX b x"), "1");
    assert_eq!(q(&mut con, "CF.INSERT c ITEMS x"), "[1]");
    assert_eq!(q(&mut con, "CF.INSERTNX d ITEMS x"), "[1]");
    for key in ["a", "b", "c", "d"] {
        assert_eq!(cf_debug(&mut con, key.as_bytes()), want, "{key}");
        assert_eq!(info_int(&mut con, key.as_bytes(), "Fingerprint size"), 13);
        assert_eq!(
            show(&info_field(&mut con, key.as_bytes(), "Error rate")),
            "\"0.001\""
        );
    }
    // CAPACITY and ERROR override the configured capacity and rate.
    assert_eq!(
        q(&mut con, "CF.INSERT e CAPACITY 1000 ERROR 0.0001 ITEMS x"),
        "[1]"
    );
    assert_eq!(
        cf_debug(&mut con, b"e"),
        "bktsize:4 buckets:256 items:1 deletes:0 filters:1 max_iterations:50 expansion:4"
    );
    assert_eq!(info_int(&mut con, b"e", "Fingerprint size"), 17);
    // CF.RESERVE takes the configured defaults for what it does not say ...
    ok(&mut con, "CF.RESERVE f 1000");
    assert_eq!(
        cf_debug(&mut con, b"f"),
        "bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:50 expansion:4"
    );
    // ... and explicit options win.
    ok(
        &mut con,
        "CF.RESERVE g 1000 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 1 ERROR 0.5",
    );
    assert_eq!(
        cf_debug(&mut con, b"g"),
        "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    assert_eq!(info_int(&mut con, b"g", "Fingerprint size"), 8);

    // bf.cf-error-rate 0 = RedisBloom's 8-bit fingerprints, no rate.
    config_set(&mut con, "bf.cf-error-rate", "0");
    assert_eq!(q(&mut con, "CF.ADD h x"), "1");
    assert_eq!(info_int(&mut con, b"h", "Fingerprint size"), 8);
    assert_eq!(show(&info_field(&mut con, b"h", "Error rate")), "nil");

    // The INSERT capacity bound follows bf.cf-bucket-size (4 -> at least 8).
    assert_eq!(
        err(&mut con, "CF.INSERT i CAPACITY 7 ITEMS x"),
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]"
    );
    assert_eq!(q(&mut con, "CF.INSERT i CAPACITY 8 ITEMS x"), "[1]");
    assert_eq!(info_int(&mut con, b"i", "Number of buckets"), 2);

    // A configured initial size below 2 * bucket size cannot create a filter.
    config_set(&mut con, "bf.cf-initial-size", "4");
    config_set(&mut con, "bf.cf-bucket-size", "255");
    for cmd in [
        "CF.ADD j x",
        "CF.ADDNX j x",
        "CF.INSERT j ITEMS x",
        "CF.INSERTNX j ITEMS x",
    ] {
        assert_eq!(err(&mut con, cmd), "ERR Could not create filter", "{cmd}");
    }
    assert!(!key_exists(&mut con, b"j"));
}

#[test]
fn scandump_protocol_and_header_layout() {
    let s = Server::start();
    let mut con = s.conn();
    let mut con3 = s.conn_resp3();

    // The header layout, checked against an independent encoder.
    ok(&mut con, "CF.RESERVE h 8 EXPANSION 2 MAXITERATIONS 9");
    let h = header_of(&mut con, b"h");
    let mut want = Hdr::plain(2, 2, 1, 4);
    want.max_iter = 9;
    assert_eq!(Hdr::decode(&h), want);
    assert_eq!(want.encode(), h);
    ok(&mut con, "CF.RESERVE he 64 BUCKETSIZE 4 ERROR 0.25");
    let h = Hdr::decode(&header_of(&mut con, b"he"));
    assert_eq!((h.fp_bits, h.bucket_size, h.base), (8, 4, 16));
    assert_eq!(f64::from_bits(h.error_bits), 0.25);

    // A filter with items: iterator 0 = [1, header], then one chunk per sub-filter.
    ok(&mut con, "CF.RESERVE k 64 EXPANSION 2");
    let items = names("i", 300);
    insert_ok(&mut con, b"k", &items);
    let n = filters(&mut con, b"k") as u32;
    assert!(n >= 3);
    let dump = scandump(&mut con, b"k");
    let h = Hdr::decode(&dump[0].1);
    assert_eq!((h.nfilters, h.items, h.flags), (n, 300, 0));
    assert_eq!(dump[0].0, 1);
    let lens: Vec<u64> = dump[1..].iter().map(|(_, d)| d.len() as u64).collect();
    assert_eq!(lens, h.table_lens());
    let mut it = 1i64;
    for (next, data) in &dump[1..] {
        assert_eq!(*next, it + data.len() as i64);
        it = *next;
    }
    // Past the end: [0, nil] in both protocols; same for any far iterator.
    for c in [&mut con, &mut con3] {
        assert_eq!(q(c, &format!("CF.SCANDUMP k {it}")), "[0,nil]");
        assert_eq!(q(c, "CF.SCANDUMP k 999999999999"), "[0,nil]");
    }
    // A mid-sub-filter iterator returns the rest of that sub-filter.
    let v = raw(&mut con, &["CF.SCANDUMP", "k", "11"]);
    let Value::Array(a) = v else { panic!() };
    let first = &dump[1].1;
    assert_eq!(a[0], Value::Int(11 + first.len() as i64 - 10));
    assert_eq!(a[1], Value::BulkString(first[10..].to_vec()));

    // RESP3: same shapes.
    let v = raw(&mut con3, &["CF.SCANDUMP", "k", "0"]);
    assert_eq!(
        show(&v),
        format!("[1,{}]", show(&Value::BulkString(dump[0].1.clone())))
    );

    // A filter without items dumps too (Q13), with its zeroed tables.
    ok(&mut con, "CF.RESERVE e 100");
    let d = scandump(&mut con, b"e");
    assert_eq!(d.len(), 2);
    assert_eq!(Hdr::decode(&d[0].1).items, 0);
    assert_eq!(d[1], (1 + 128, vec![0u8; 128]));
    // ... and so does one whose items were all deleted.
    ok(&mut con, "CF.RESERVE g 4");
    let items = names("g", 12);
    insert_ok(&mut con, b"g", &items);
    dels(&mut con, b"g", &items);
    let d = scandump(&mut con, b"g");
    let h = Hdr::decode(&d[0].1);
    assert_eq!(h.items, 0);
    assert_eq!(d.len() as u32, 1 + h.nfilters);
    assert!(d[1..].iter().all(|(_, c)| c.iter().all(|b| *b == 0)));
    assert_eq!(q(&mut con, "DEL g"), "1");
    loadchunks(&mut con, b"g", &d);
    assert_eq!(scandump(&mut con, b"g"), d);
}

// =============================================================================================
// 2. Errors, arity, key rules
// =============================================================================================

#[test]
fn reserve_and_insert_error_texts() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE k 100");
    ok(&mut con, "SET str v");
    ok(&mut con, "BF.RESERVE bloom 0.01 100");
    let before = db_digest(&mut con);

    let cases: &[(&str, &str)] = &[
        ("CF.RESERVE x abc", "Bad capacity"),
        ("CF.RESERVE x 1.5", "Bad capacity"),
        (
            "CF.RESERVE x 100 BUCKETSIZE abc",
            "Couldn't parse BUCKETSIZE",
        ),
        (
            "CF.RESERVE x 100 MAXITERATIONS abc",
            "Couldn't parse MAXITERATIONS",
        ),
        ("CF.RESERVE x 100 EXPANSION abc", "Couldn't parse EXPANSION"),
        ("CF.RESERVE x 100 ERROR abc", "Couldn't parse ERROR"),
        ("CF.RESERVE x 100 ERROR nan", "Couldn't parse ERROR"),
        ("CF.RESERVE x 100 ERROR 0.01abc", "Couldn't parse ERROR"),
        ("CF.RESERVE x 100 ERROR 1e-400", "Couldn't parse ERROR"),
        (
            "CF.RESERVE x 100 ERROR inf",
            "ERROR: value must be in the range (0, 1)",
        ),
        (
            "CF.RESERVE x 100 BUCKETSIZE 0",
            "BUCKETSIZE: value must be in the range [1, 255]",
        ),
        (
            "CF.RESERVE x 1000 BUCKETSIZE 256",
            "BUCKETSIZE: value must be in the range [1, 255]",
        ),
        (
            "CF.RESERVE x 100 MAXITERATIONS 0",
            "MAXITERATIONS: value must be in the range [1, 65535]",
        ),
        (
            "CF.RESERVE x 100 MAXITERATIONS 65536",
            "MAXITERATIONS: value must be in the range [1, 65535]",
        ),
        (
            "CF.RESERVE x 100 EXPANSION -1",
            "EXPANSION: value must be in the range [0, 32768]",
        ),
        (
            "CF.RESERVE x 100 EXPANSION 32769",
            "EXPANSION: value must be in the range [0, 32768]",
        ),
        (
            "CF.RESERVE x 100 ERROR 0",
            "ERROR: value must be in the range (0, 1)",
        ),
        (
            "CF.RESERVE x 100 ERROR 1",
            "ERROR: value must be in the range (0, 1)",
        ),
        (
            "CF.RESERVE x 100 ERROR -0.1",
            "ERROR: value must be in the range (0, 1)",
        ),
        (
            "CF.RESERVE x 100 ERROR 1e-12",
            "ERROR: rate too small even for 32-bit fingerprints",
        ),
        (
            "CF.RESERVE x 3",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE x 0",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE x -5",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE x 1073741825",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        (
            "CF.RESERVE x 7 BUCKETSIZE 4",
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ),
        ("CF.RESERVE x 100 FOO 1", "Unknown argument received"),
        (
            "CF.RESERVE x 100 BUCKETSIZEX 2",
            "Unknown argument received",
        ),
        ("CF.RESERVE x 100 B 2", "Unknown argument received"),
        ("CF.RESERVE x 100 NOCREATE 1", "Unknown argument received"),
        ("CF.RESERVE k 100", "ERR item exists"),
        ("CF.RESERVE str 100", WRONGTYPE),
        ("CF.RESERVE bloom 100", WRONGTYPE),
        ("CF.INSERT x CAPACITY abc ITEMS a", "Bad capacity"),
        ("CF.INSERTNX x CAPACITY abc ITEMS a", "Bad capacity"),
        (
            "CF.INSERT x CAPACITY 3 ITEMS a",
            "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
        ),
        (
            "CF.INSERTNX x CAPACITY 1073741825 ITEMS a",
            "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
        ),
        ("CF.INSERT x ERROR abc ITEMS a", "Couldn't parse ERROR"),
        (
            "CF.INSERTNX x ERROR 2 ITEMS a",
            "ERROR: value must be in the range (0, 1)",
        ),
        (
            "CF.INSERT x ERROR 1e-15 ITEMS a",
            "ERROR: rate too small even for 32-bit fingerprints",
        ),
        ("CF.INSERT x FOO ITEMS a", "Unknown argument received"),
        ("CF.INSERTNX x FOO ITEMS a", "Unknown argument received"),
        ("CF.INSERT x ixyz a", "Unknown argument received"),
        ("CF.INSERT x CAP 10 ITEMS a", "Unknown argument received"),
        ("CF.INSERT x NOCREATEX ITEMS a", "Unknown argument received"),
        (
            "CF.INSERT x EXPANSION 2 ITEMS a",
            "Unknown argument received",
        ),
        (
            "CF.INSERT k NOCREATE CAPACITY 10 ITEMS a",
            "ERR NOCREATE cannot be combined with CAPACITY or ERROR",
        ),
        (
            "CF.INSERTNX k CAPACITY 10 NOCREATE ITEMS a",
            "ERR NOCREATE cannot be combined with CAPACITY or ERROR",
        ),
        (
            "CF.INSERT k NOCREATE ERROR 0.01 ITEMS a",
            "ERR NOCREATE cannot be combined with CAPACITY or ERROR",
        ),
        ("CF.INSERT x NOCREATE ITEMS a", "ERR not found"),
        ("CF.INSERTNX x NOCREATE ITEMS a", "ERR not found"),
        ("CF.INSERT str ITEMS a", WRONGTYPE),
        ("CF.INSERTNX bloom ITEMS a", WRONGTYPE),
        ("CF.INSERT str NOCREATE ITEMS a", WRONGTYPE),
        ("CF.ADD str a", WRONGTYPE),
        ("CF.ADDNX bloom a", WRONGTYPE),
        ("CF.INFO x", "ERR not found"),
        ("CF.INFO str", WRONGTYPE),
        ("CF.INFO bloom", WRONGTYPE),
        ("CF.DEBUG x", "ERR not found"),
        ("CF.DEBUG str", WRONGTYPE),
        ("CF.SCANDUMP x 0", "ERR not found"),
        ("CF.SCANDUMP str 0", WRONGTYPE),
        ("CF.SCANDUMP bloom 1", WRONGTYPE),
        // The iterator is parsed before the key.
        ("CF.SCANDUMP x abc", INVALID_POSITION),
        ("CF.SCANDUMP str -1", INVALID_POSITION),
        ("CF.SCANDUMP k 1.5", INVALID_POSITION),
        ("CF.LOADCHUNK k abc data", INVALID_POSITION),
        ("CF.LOADCHUNK k -1 data", INVALID_POSITION),
        ("CF.LOADCHUNK k 0 data", INVALID_POSITION),
        ("CF.LOADCHUNK x 0 data", INVALID_POSITION),
        ("CF.LOADCHUNK k 1 data", "ERR item exists"),
        ("CF.LOADCHUNK str 1 data", WRONGTYPE),
        ("CF.LOADCHUNK bloom 5 data", WRONGTYPE),
        ("CF.LOADCHUNK x 5 data", "ERR not found"),
        ("CF.LOADCHUNK x 1 data", INVALID_HEADER),
        ("CF.DEL x a", "Not found"),
        ("CF.DEL str a", "Not found"),
        ("CF.DEL bloom a", "Not found"),
        ("CF.COMPACT x", "Cuckoo filter was not found"),
        ("CF.COMPACT str", "Cuckoo filter was not found"),
        ("CF.COMPACT bloom", "Cuckoo filter was not found"),
    ];
    for (line, want) in cases {
        assert_eq!(err(&mut con, line), *want, "{line}");
    }
    // Nothing was created or changed by any of them.
    assert_eq!(db_digest(&mut con), before);
    assert_eq!(int(&mut con, "DBSIZE"), 3);
    ping(&mut con);

    // Same texts on a RESP3 connection.
    let mut con3 = s.conn_resp3();
    for (line, want) in cases.iter().step_by(5) {
        assert_eq!(err(&mut con3, line), *want, "RESP3 {line}");
    }
    // Valid edge values are accepted.
    ok(&mut con, "CF.RESERVE e1 2 BUCKETSIZE 1");
    ok(
        &mut con,
        "CF.RESERVE e2 510 BUCKETSIZE 255 MAXITERATIONS 65535 EXPANSION 32768",
    );
    ok(
        &mut con,
        "CF.RESERVE e3 8 BUCKETSIZE 4 MAXITERATIONS 1 EXPANSION 0",
    );
    assert_eq!(info_int(&mut con, b"e2", "Expansion rate"), 32768);
    assert_eq!(q(&mut con, "CF.INSERT e4 CAPACITY 4 ITEMS a"), "[1]");
    ok(&mut con, "CF.RESERVE e5 100 ERROR 1e-3");
    ok(&mut con, "CF.RESERVE e6 100 ERROR .5");
    assert_eq!(info_int(&mut con, b"e5", "Fingerprint size"), 12);
}

#[test]
fn missing_and_wrong_type_read_as_absent() {
    let s = Server::start();
    for resp3 in [false, true] {
        let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
        ok(&mut con, "SET str v");
        q(&mut con, "DEL bloom");
        ok(&mut con, "BF.RESERVE bloom 0.01 100");
        assert_eq!(q(&mut con, "BF.ADD bloom a"), b(resp3, true));
        let f = b(resp3, false);
        for key in ["missing", "str", "bloom"] {
            assert_eq!(q(&mut con, &format!("CF.EXISTS {key} a")), f, "{key}");
            assert_eq!(
                q(&mut con, &format!("CF.MEXISTS {key} a b")),
                format!("[{f},{f}]"),
                "{key}"
            );
            assert_eq!(q(&mut con, &format!("CF.COUNT {key} a")), "0", "{key}");
        }
        assert!(!key_exists(&mut con, b"missing"));
        assert_eq!(q(&mut con, "TYPE str"), "+string");
    }
}

#[test]
fn wrong_arity_for_every_command() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE k 100");
    assert_eq!(q(&mut con, "CF.ADD k a"), "1");
    let before = digest_value(&mut con, b"k");

    // Argument lists after the command name; "" is no argument at all.
    let cases: &[(&str, &[&str])] = &[
        (
            "cf.reserve",
            &[
                "",
                "k",
                "x 100 BUCKETSIZE",
                "x 100 BUCKETSIZE 2 MAXITERATIONS",
                "x 100 ERROR",
            ],
        ),
        ("cf.add", &["", "k", "k a b"]),
        ("cf.addnx", &["", "k", "k a b"]),
        (
            "cf.insert",
            &[
                "",
                "k",
                "k ITEMS",
                "k CAPACITY",
                "k CAPACITY 100 ITEMS",
                "k NOCREATE ITEMS",
                "k ERROR",
                "k NOCREATE",
            ],
        ),
        (
            "cf.insertnx",
            &[
                "",
                "k",
                "k ITEMS",
                "k CAPACITY 100 ITEMS",
                "k NOCREATE ITEMS",
            ],
        ),
        ("cf.exists", &["", "k", "k a b"]),
        ("cf.mexists", &["", "k"]),
        ("cf.count", &["", "k", "k a b"]),
        ("cf.del", &["", "k", "k a b"]),
        ("cf.compact", &["", "k a"]),
        ("cf.info", &["", "k a"]),
        ("cf.debug", &["", "k a"]),
        ("cf.scandump", &["", "k", "k 0 1"]),
        ("cf.loadchunk", &["", "k", "k 1", "k 1 a b"]),
    ];
    for (name, arg_lists) in cases {
        for rest in *arg_lists {
            for sent in [name.to_uppercase(), name.to_string()] {
                let line = format!("{sent} {rest}");
                assert_eq!(err(&mut con, &line), arity(name), "{line}");
            }
        }
    }
    assert_eq!(digest_value(&mut con, b"k"), before);
    assert_eq!(int(&mut con, "DBSIZE"), 1);
}

#[test]
fn command_table_flags() {
    let s = Server::start();
    let mut con = s.conn();
    let flags = |con: &mut Connection, cmd: &str| -> Vec<String> {
        let v = raw(con, &["COMMAND", "INFO", cmd]);
        let Value::Array(outer) = v else {
            panic!("COMMAND INFO {cmd}")
        };
        let Value::Array(info) = &outer[0] else {
            panic!("COMMAND INFO {cmd}: {}", show(&outer[0]))
        };
        let Value::Array(f) = &info[2] else {
            panic!("flags")
        };
        f.iter().map(text).collect()
    };
    let compact = flags(&mut con, "cf.compact");
    assert!(compact.contains(&"write".to_string()), "{compact:?}");
    assert!(!compact.contains(&"readonly".to_string()), "{compact:?}");
    for cmd in [
        "cf.exists",
        "cf.mexists",
        "cf.count",
        "cf.info",
        "cf.scandump",
    ] {
        let f = flags(&mut con, cmd);
        assert!(f.contains(&"readonly".to_string()), "{cmd}: {f:?}");
    }
    for cmd in [
        "cf.reserve",
        "cf.add",
        "cf.addnx",
        "cf.insert",
        "cf.insertnx",
        "cf.del",
        "cf.loadchunk",
    ] {
        let f = flags(&mut con, cmd);
        assert!(f.contains(&"write".to_string()), "{cmd}: {f:?}");
    }
}

// =============================================================================================
// 3. Growth and limits
// =============================================================================================

/// Table slots of sub-filter `i`.
type SlotsOf = fn(u32) -> i64;

#[test]
fn growth_with_expansion_1_2_and_4() {
    let s = Server::start();
    let mut con = s.conn();
    // (options, expansion rate, table slots of sub-filter i)
    let cases: [(&str, i64, SlotsOf); 3] = [
        ("", 1, |_| 64),
        ("EXPANSION 2", 2, |i| 64 << i),
        ("EXPANSION 3", 4, |i| 64 << (2 * i)),
    ];
    for (n, (opts, rate, slots)) in cases.iter().enumerate() {
        let key = format!("g{n}");
        ok(&mut con, &format!("CF.RESERVE {key} 64 {opts}"));
        let mut t = Tracked::new(key.as_bytes());
        let items = names(&format!("{key}-"), 700);
        insert_ok(&mut con, key.as_bytes(), &items);
        t.add(&items);
        let f = filters(&mut con, key.as_bytes());
        let cap: i64 = (0..f as u32).map(slots).sum();
        assert!(cap >= 700, "{key}: {f} sub-filters hold {cap} < 700 slots");
        assert!(f >= 2, "{key} did not grow");
        assert_eq!(info_int(&mut con, key.as_bytes(), "Number of buckets"), 32);
        assert_eq!(info_int(&mut con, key.as_bytes(), "Expansion rate"), *rate);
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Size"),
            40 + 16 * f + cap,
            "{key}"
        );
        assert_eq!(
            cf_debug(&mut con, key.as_bytes()),
            format!(
                "bktsize:2 buckets:32 items:700 deletes:0 filters:{f} max_iterations:20 \
                 expansion:{rate}"
            )
        );
        // Every item present, with count >= 1 (key_snap checks both).
        key_snap(&mut con, key.as_bytes(), &t);
        // SCANDUMP returns one chunk per sub-filter with the expected sizes.
        let d = scandump(&mut con, key.as_bytes());
        let lens: Vec<i64> = d[1..].iter().map(|(_, c)| c.len() as i64).collect();
        let want: Vec<i64> = (0..f as u32).map(slots).collect();
        assert_eq!(lens, want, "{key}");
    }
    // EXPANSION 1 needs many more sub-filters than EXPANSION 4 for the same items.
    assert!(filters(&mut con, b"g0") > filters(&mut con, b"g2") + 4);
}

fn fill_until_error(con: &mut Connection, key: &str, prefix: &str, max: usize) -> (usize, String) {
    for i in 0..max {
        let v = raw(con, &["CF.ADD", key, &format!("{prefix}{i}")]);
        match v {
            Value::Int(1) => {}
            v => {
                let e = value_err_text(&v).unwrap_or_else(|| panic!("CF.ADD {key}: {}", show(&v)));
                return (i, e);
            }
        }
    }
    panic!("{key}: {max} adds without an error");
}

#[test]
fn expansion_0_filter_is_full() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE z 64 EXPANSION 0");
    let (n, e) = fill_until_error(&mut con, "z", "z", 1000);
    assert_eq!(e, "Filter is full");
    assert!(
        (40..=64).contains(&n),
        "{n} items before full (load {})",
        n as f64 / 64.0
    );
    let mut t = Tracked::new(b"z");
    t.add(&names("z", n));
    let snap = key_snap(&mut con, b"z", &t);
    assert_eq!(filters(&mut con, b"z"), 1);
    // A failed add leaves the table exactly as it was (kicks undone), and fails the
    // same way again. (Another item may still find room in its own buckets.)
    let last = format!("z{n}");
    assert_eq!(err(&mut con, &format!("CF.ADD z {last}")), "Filter is full");
    assert_eq!(
        err(&mut con, &format!("CF.ADDNX z {last}")),
        "Filter is full"
    );
    assert_eq!(q(&mut con, "CF.ADDNX z z0"), "0");
    assert_eq!(
        q(&mut con, &format!("CF.INSERT z ITEMS {last} {last}")),
        "[-1,-1]"
    );
    assert_eq!(
        q(&mut con, &format!("CF.INSERTNX z ITEMS {last} z1")),
        "[-1,0]"
    );
    assert_snap_eq(&key_snap(&mut con, b"z", &t), &snap, "after failed adds");
    // Many more items: each either fits or gets -1; the filter never grows.
    let more = names("more", 200);
    let r = insert_any(&mut con, b"z", &more);
    assert!(r.iter().all(|v| *v == 1 || *v == -1), "{r:?}");
    assert!(r.iter().filter(|v| **v == 1).count() + n <= 64);
    for (item, v) in more.iter().zip(&r) {
        if *v == 1 {
            t.add(std::slice::from_ref(item));
        }
    }
    assert_eq!(filters(&mut con, b"z"), 1);
    key_snap(&mut con, b"z", &t);
    // Room again after a delete.
    assert_eq!(q(&mut con, "CF.DEL z z0"), "1");
    assert_eq!(q(&mut con, "CF.ADD z z0"), "1");
    key_snap(&mut con, b"z", &t);
    assert_eq!(filters(&mut con, b"z"), 1);
}

#[test]
fn maximum_expansions_reached() {
    let s = Server::start();
    let mut con = s.conn();
    let mut con3 = s.conn_resp3();

    // Default 32 sub-filters of 4 slots: exactly 128 adds fit.
    ok(&mut con, "CF.RESERVE cf 4");
    for i in 0..128 {
        assert_eq!(q(&mut con, &format!("CF.ADD cf {i}")), "1", "add {i}");
    }
    assert_eq!(filters(&mut con, b"cf"), 32);
    let before = digest_value(&mut con, b"cf");
    assert_eq!(err(&mut con, "CF.ADD cf 128"), "Maximum expansions reached");
    assert_eq!(
        err(&mut con, "CF.ADDNX cf 129"),
        "Maximum expansions reached"
    );
    assert_eq!(q(&mut con, "CF.ADDNX cf 5"), "0");
    assert_eq!(q(&mut con, "CF.INSERT cf ITEMS 128"), "[-1]");
    assert_eq!(digest_value(&mut con, b"cf"), before);
    assert_eq!(filters(&mut con, b"cf"), 32);
    let mut t = Tracked::new(b"cf");
    t.add(&names("", 128));
    key_snap(&mut con, b"cf", &t);

    // A lower limit.
    config_set(&mut con, "bf.cf-max-expansions", "3");
    ok(&mut con, "CF.RESERVE m 4");
    let (n, e) = fill_until_error(&mut con, "m", "m", 100);
    assert_eq!(e, "Maximum expansions reached");
    assert!((8..=12).contains(&n), "{n}");
    assert_eq!(filters(&mut con, b"m"), 3);

    // One big CF.INSERT cannot go past the limit either (Q11): -1 when no room.
    ok(&mut con, "CF.RESERVE big 4");
    let items = names("b", 40);
    let r = insert_any(&mut con, b"big", &items);
    let accepted = r.iter().filter(|v| **v == 1).count();
    assert!(r.iter().all(|v| *v == 1 || *v == -1), "{r:?}");
    assert!((8..=12).contains(&accepted), "{r:?}");
    assert_eq!(filters(&mut con, b"big"), 3);
    assert_eq!(
        info_int(&mut con, b"big", "Number of items inserted"),
        accepted as i64
    );
    let mut t = Tracked::new(b"big");
    for (item, v) in items.iter().zip(&r) {
        if *v == 1 {
            t.add(std::slice::from_ref(item));
        }
    }
    key_snap(&mut con, b"big", &t);
    // RESP3: false for CF.INSERT, -1 for CF.INSERTNX; a fresh filter stops at 3 too.
    ok(&mut con3, "CF.RESERVE big3 4");
    let v = raw(
        &mut con3,
        &args_with(&[b"CF.INSERT", b"big3", b"ITEMS"], &items),
    );
    let Value::Array(a) = v else {
        panic!("{}", show(&v))
    };
    let want: Vec<Value> = r.iter().map(|x| Value::Boolean(*x == 1)).collect();
    assert_eq!(a, want, "same outcome as in RESP2, as booleans");
    assert_eq!(filters(&mut con, b"big3"), 3);
    assert_eq!(q(&mut con3, "CF.INSERTNX big3 ITEMS b0 nope"), "[0,-1]");
    assert_eq!(q(&mut con, "CF.INSERTNX big ITEMS b0 nope"), "[0,-1]");

    // Raising the limit lets the filter grow again.
    config_set(&mut con, "bf.cf-max-expansions", "4");
    let mut late = 0;
    while filters(&mut con, b"big") < 4 {
        assert_eq!(q(&mut con, &format!("CF.ADD big late{late}")), "1");
        late += 1;
        assert!(late <= 4, "no growth after raising the limit");
    }
}

#[test]
fn per_filter_memory_cap() {
    let s = Server::start();
    let mut con = s.conn();
    // Made before the cap is lowered: 4096 buckets * 2 = 8 KiB.
    ok(&mut con, "CF.RESERVE big0 5000");
    assert_eq!(q(&mut con, "CF.ADD big0 a"), "1");
    let big_header = header_of(&mut con, b"big0");
    ok(&mut con, "CONFIG SET rdbcompression no");
    let big_dump = dump(&mut con, b"big0");

    config_set(&mut con, "bf.max-filter-memory", "4096");
    // Creation beyond the cap.
    assert_eq!(err(&mut con, "CF.RESERVE big 5000"), NO_MEMORY_CREATE);
    // 2048 slots * 26 bits = 6656 bytes.
    assert_eq!(
        err(&mut con, "CF.RESERVE e 2048 ERROR 0.0000001"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "CF.INSERT e CAPACITY 5000 ITEMS a"),
        NO_MEMORY_CREATE
    );
    config_set(&mut con, "bf.cf-initial-size", "100000");
    for cmd in [
        "CF.ADD auto x",
        "CF.ADDNX auto x",
        "CF.INSERT auto ITEMS x",
        "CF.INSERTNX auto ITEMS x",
    ] {
        assert_eq!(err(&mut con, cmd), NO_MEMORY_CREATE, "{cmd}");
    }
    config_set(&mut con, "bf.cf-initial-size", "1024");
    assert_eq!(
        errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"lc", b"1", &big_header]
        ),
        CANNOT_CREATE
    );
    assert_eq!(
        value_err_text(&restore(&mut con, b"rs", &big_dump)).as_deref(),
        Some(BAD_DATA_FORMAT)
    );
    for key in ["big", "e", "auto", "lc", "rs"] {
        assert!(!key_exists(&mut con, key.as_bytes()), "{key}");
    }
    // An existing filter keeps working where it needs no new memory.
    assert_eq!(q(&mut con, "CF.ADD big0 b"), "1");

    // Growth beyond the cap: 2 KiB + 2 KiB fit, a third sub-filter does not. The cap
    // bounds CF.INFO `Size`, RedisBloom's formula (40 + 16 per sub-filter + tables).
    config_set(
        &mut con,
        "bf.max-filter-memory",
        &(40 + 32 + 4096).to_string(),
    );
    ok(&mut con, "CF.RESERVE m 2048");
    let mut t = Tracked::new(b"m");
    let (n, e) = fill_until_error(&mut con, "m", "m", 10_000);
    assert_eq!(e, MEMORY_CAP_ERR);
    t.add(&names("m", n));
    assert!(n > 3000, "{n}");
    assert_eq!(filters(&mut con, b"m"), 2);
    assert_eq!(info_int(&mut con, b"m", "Size"), 40 + 32 + 4096);
    let snap = key_snap(&mut con, b"m", &t);
    // The refused item is refused again, and changes nothing.
    let last = format!("m{n}");
    assert_eq!(err(&mut con, &format!("CF.ADD m {last}")), MEMORY_CAP_ERR);
    assert_eq!(err(&mut con, &format!("CF.ADDNX m {last}")), MEMORY_CAP_ERR);
    assert_eq!(q(&mut con, &format!("CF.INSERT m ITEMS {last}")), "[-1]");
    assert_eq!(
        q(&mut con, &format!("CF.INSERTNX m ITEMS {last} m0")),
        "[-1,0]"
    );
    assert_snap_eq(&key_snap(&mut con, b"m", &t), &snap, "refused inserts");
    // Other items fit or get -1, but the filter never grows past the cap.
    let more = names("more", 2000);
    let r = insert_any(&mut con, b"m", &more);
    assert!(r.iter().all(|v| *v == 1 || *v == -1), "{r:?}");
    assert!(r.contains(&-1));
    for (item, v) in more.iter().zip(&r) {
        if *v == 1 {
            t.add(std::slice::from_ref(item));
        }
    }
    assert_eq!(filters(&mut con, b"m"), 2);
    assert_eq!(info_int(&mut con, b"m", "Size"), 40 + 32 + 4096);
    key_snap(&mut con, b"m", &t);

    // Raising the cap lets it grow again.
    config_set(&mut con, "bf.max-filter-memory", "4gb");
    let again = names("m2-", 200);
    let r = per_item(&mut con, "CF.ADD", b"m", &again);
    assert!(r.iter().all(|v| *v == 1), "{r:?}");
    assert_eq!(filters(&mut con, b"m"), 3);
}

// =============================================================================================
// 4. Deletion and compaction
// =============================================================================================

#[test]
fn delete_most_items_then_compact() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE k 1000");
    let items = names("k", 8000);
    insert_ok(&mut con, b"k", &items);
    let f0 = filters(&mut con, b"k");
    assert!(f0 >= 8, "{f0}");
    let (gone, kept) = items.split_at(7200);
    dels(&mut con, b"k", gone);
    let mut t = Tracked::new(b"k");
    t.add(kept);
    key_snap(&mut con, b"k", &t);
    // Deletes alone run small automatic compaction steps.
    let f1 = filters(&mut con, b"k");
    assert!(f1 < f0, "no automatic compaction: {f0} -> {f1}");

    // CF.COMPACT until the number of sub-filters stops decreasing and the pass is over.
    let mut prev = f1;
    let mut calls = 0;
    loop {
        ok(&mut con, "CF.COMPACT k");
        calls += 1;
        // No false negatives at any point.
        key_snap(&mut con, b"k", &t);
        let f = filters(&mut con, b"k");
        let deleted = info_int(&mut con, b"k", "Number of items deleted");
        assert!(
            f <= prev,
            "sub-filters grew during compaction: {prev} -> {f}"
        );
        if deleted == 0 && f == prev {
            break;
        }
        prev = f;
        assert!(calls < 50, "compaction does not converge");
    }
    assert!(prev < f0, "compaction freed nothing: {f0} -> {prev}");
    assert!(
        prev <= 3,
        "800 items still need {prev} sub-filters of 1024 slots"
    );
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 0);
    assert_eq!(info_int(&mut con, b"k", "Number of items inserted"), 800);
    assert_eq!(info_int(&mut con, b"k", "Size"), 40 + prev * (16 + 1024));
    assert_eq!(Hdr::decode(&header_of(&mut con, b"k")).flags, 0);
    // The deleted items are (mostly) gone.
    let still = mexists(&mut con, b"k", gone).iter().filter(|p| **p).count();
    assert!(
        still < gone.len() / 10,
        "{still} of {} deleted items still present",
        gone.len()
    );
    // And the filter keeps working.
    let fresh = names("fresh", 300);
    insert_ok(&mut con, b"k", &fresh);
    t.add(&fresh);
    key_snap(&mut con, b"k", &t);
}

#[test]
fn compaction_is_bounded_per_call_and_resumes() {
    let s = Server::start();
    let mut con = s.conn();
    let mut t = build_compacting(&mut con, b"k");
    assert_eq!(filters(&mut con, b"k"), 3);

    ok(&mut con, "CF.COMPACT k");
    let h = Hdr::decode(&header_of(&mut con, b"k"));
    assert_eq!((h.flags, h.cursor_filter), (3, 2), "{h:?}");
    // The pass is not over: the delete count is kept until it completes.
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 10);
    key_snap(&mut con, b"k", &t);

    // Writes in the middle of a pass keep every item findable.
    let mid = names("mid", 200);
    insert_ok(&mut con, b"k", &mid);
    t.add(&mid);
    let some: Vec<Vec<u8>> = t.items().into_iter().step_by(50).collect();
    dels(&mut con, b"k", &some);
    t.remove(&some);
    key_snap(&mut con, b"k", &t);

    let mut calls = 1;
    while Hdr::decode(&header_of(&mut con, b"k")).flags != 0 {
        ok(&mut con, "CF.COMPACT k");
        calls += 1;
        key_snap(&mut con, b"k", &t);
        assert!(calls <= 20, "the pass does not finish");
    }
    assert!(calls >= 2);
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 0);
    let h = Hdr::decode(&header_of(&mut con, b"k"));
    assert_eq!((h.cursor_filter, h.cursor_slot), (0, 0));
    // A new pass on a compacted filter completes and changes no membership.
    ok(&mut con, "CF.COMPACT k");
    key_snap(&mut con, b"k", &t);
}

/// Loads `chunks` (a SCANDUMP) into `dst` with every data chunk cut into `piece`-byte
/// pieces (cutting fingerprints anywhere in their bits), loaded last piece first.
fn load_in_pieces(con: &mut Connection, dst: &[u8], chunks: &[(i64, Vec<u8>)], piece: usize) {
    loadchunks(con, dst, &chunks[..1]);
    for (end_it, data) in chunks[1..].iter().rev() {
        let start = *end_it - data.len() as i64; // iterator of the chunk's first byte
        let mut pieces: Vec<(i64, Vec<u8>)> = data
            .chunks(piece)
            .enumerate()
            .map(|(i, p)| (start + (i * piece + p.len()) as i64, p.to_vec()))
            .collect();
        pieces.reverse();
        loadchunks(con, dst, &pieces);
    }
}

#[test]
fn compaction_after_loading_split_chunks_matches_the_original() {
    let s = Server::start();
    let mut con = s.conn();
    for (opts, bits) in [
        ("BUCKETSIZE 3 EXPANSION 2 ERROR 0.01", 10),
        ("BUCKETSIZE 4 EXPANSION 2 ERROR 0.0001", 17),
        ("BUCKETSIZE 2 EXPANSION 1", 8),
    ] {
        ok(&mut con, "FLUSHALL");
        ok(&mut con, &format!("CF.RESERVE src 48 {opts}"));
        assert_eq!(info_int(&mut con, b"src", "Fingerprint size"), bits);
        let items = names("split", 1200);
        insert_ok(&mut con, b"src", &items);
        assert!(filters(&mut con, b"src") >= 3);
        let chunks = scandump(&mut con, b"src");
        load_in_pieces(&mut con, b"dst", &chunks, 7);
        let mut t = Tracked::new(b"src");
        t.add(&items);
        assert_same(&mut con, &t, b"dst", &format!("{bits}-bit pieces"));

        // The same deletes and compaction on both must give identical filters.
        let (gone, kept) = items.split_at(1000);
        for key in [b"src".as_slice(), b"dst"] {
            dels(&mut con, key, gone);
        }
        t.remove(gone);
        let mut calls = 0;
        loop {
            for key in ["src", "dst"] {
                ok(&mut con, &format!("CF.COMPACT {key}"));
            }
            calls += 1;
            assert_eq!(
                digest_value(&mut con, b"dst"),
                digest_value(&mut con, b"src"),
                "{bits} bits: compaction diverged after {calls} calls"
            );
            if info_int(&mut con, b"src", "Number of items deleted") == 0 || calls > 10 {
                break;
            }
        }
        assert_same(
            &mut con,
            &t,
            b"dst",
            &format!("{bits} bits, after compaction"),
        );
        assert!(mexists(&mut con, b"dst", kept).iter().all(|p| *p));
    }
}

// =============================================================================================
// 5. Persistence round trips
// =============================================================================================

#[test]
fn rdb_save_restart_and_debug_reload() {
    let mut s = Server::start();
    let mut con = s.conn();
    let set = build_set(&mut con);
    let snap = snapshot(&mut con, &set);
    let digest = db_digest(&mut con);
    assert_eq!(int(&mut con, "DBSIZE") as usize, set.len());
    ok(&mut con, "SAVE");
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_set(&mut con, &set, &snap, "SAVE + restart");
    assert_eq!(db_digest(&mut con), digest);

    ok(&mut con, "DEBUG RELOAD");
    assert_set(&mut con, &set, &snap, "DEBUG RELOAD");
    assert_eq!(db_digest(&mut con), digest);

    // The restored compaction pass resumes: it finishes like on the original.
    let mut calls = 0;
    while Hdr::decode(&header_of(&mut con, COMPACTING)).flags != 0 {
        okb(&mut con, &[b"CF.COMPACT".as_slice(), COMPACTING]);
        calls += 1;
        assert!(calls <= 20);
    }
    let t = set.iter().find(|t| t.key == COMPACTING).unwrap();
    key_snap(&mut con, COMPACTING, t);
}

#[test]
fn aof_rewrite_then_more_writes_replays_everything() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut con = s.conn();
    let mut set = build_set(&mut con);
    bgrewriteaof(&s);
    let base = aof_files(&s, "b");
    assert_eq!(base.len(), 1);
    let want: usize = set.iter().map(|t| scandump(&mut con, &t.key).len()).sum();
    assert_eq!(count_occurrences(&base[0], b"CF.LOADCHUNK"), want);
    assert_eq!(count_occurrences(&base[0], b"CF.ADD"), 0);

    // More writes after the rewrite, with non-default creation configs that the
    // restarted server will not have.
    config_set(&mut con, "bf.cf-initial-size", "500");
    config_set(&mut con, "bf.cf-bucket-size", "4");
    config_set(&mut con, "bf.cf-max-iterations", "50");
    config_set(&mut con, "bf.cf-expansion-factor", "2");
    config_set(&mut con, "bf.cf-error-rate", "0.001");
    more_writes(&mut con, &mut set, "aof");
    let auto = set.last().unwrap().key.clone();
    assert_eq!(
        cf_debug(&mut con, &auto),
        "bktsize:4 buckets:128 items:300 deletes:0 filters:1 max_iterations:50 expansion:2"
    );
    let snap = snapshot(&mut con, &set);
    let digest = db_digest(&mut con);
    let incr: Vec<u8> = aof_files(&s, "i").concat();
    assert!(count_occurrences(&incr, b"CF.RESERVE") >= 1);
    assert!(count_occurrences(&incr, b"BUCKETSIZE") >= 1);
    drop(con);

    // Restart with default creation configs and limits far below what the data needs:
    // loading must never refuse it.
    s.stop(Stop::ShutdownNoSave);
    s.config_mut().extra_args = [
        "--bf.cf-max-expansions",
        "2",
        "--bf.max-filter-memory",
        "4096",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    s.start_again();
    let mut con = s.conn();
    let v = raw(&mut con, &["CONFIG", "GET", "bf.cf-bucket-size"]);
    assert_eq!(show(&v), "[\"bf.cf-bucket-size\",\"2\"]");
    assert_set(&mut con, &set, &snap, "AOF replay");
    assert_eq!(db_digest(&mut con), digest);
}

#[test]
fn copy_makes_independent_filters() {
    let s = Server::start();
    let mut con = s.conn();
    let mut set = build_set(&mut con);
    let mut copies = Vec::new();
    for t in &set {
        let dst = [b"copy:".as_slice(), &t.key].concat();
        assert_eq!(
            show(&raw(&mut con, &[b"COPY".as_slice(), &t.key, &dst])),
            "1"
        );
        assert_same(&mut con, t, &dst, "COPY");
        copies.push(Tracked {
            key: dst,
            copies: t.copies.clone(),
        });
    }
    let snap = snapshot(&mut con, &set);
    more_writes(&mut con, &mut copies, "on-copies");
    assert_set(
        &mut con,
        &set,
        &snap,
        "originals after writes to the copies",
    );
    let csnap = snapshot(&mut con, &copies);
    more_writes(&mut con, &mut set, "on-originals");
    assert_set(
        &mut con,
        &copies,
        &csnap,
        "copies after writes to the originals",
    );

    // Onto an existing key: refused without REPLACE.
    let dst = [b"copy:".as_slice(), WIDE].concat();
    assert_eq!(
        show(&raw(&mut con, &[b"COPY".as_slice(), PLAIN, &dst])),
        "0"
    );
    assert_eq!(
        show(&raw(
            &mut con,
            &[b"COPY".as_slice(), PLAIN, &dst, b"REPLACE"]
        )),
        "1"
    );
    let plain = find(&mut set, PLAIN).clone();
    assert_same(&mut con, &plain, &dst, "COPY REPLACE");
}

#[test]
fn dump_restore_into_new_keys_and_another_server() {
    let s = Server::start();
    let s2 = Server::start();
    let mut con = s.conn();
    let mut con2 = s2.conn();
    let set = build_set(&mut con);
    for t in &set {
        let payload = dump(&mut con, &t.key);
        let dst = [b"restored:".as_slice(), &t.key].concat();
        assert_eq!(show(&restore(&mut con, &dst, &payload)), "+OK");
        assert_same(&mut con, t, &dst, "RESTORE");
        assert_eq!(show(&restore(&mut con2, &t.key, &payload)), "+OK");
        let a = key_snap(&mut con, &t.key, t);
        let b = key_snap(&mut con2, &t.key, t);
        assert_snap_eq(
            &b,
            &a,
            &format!("RESTORE on another server, {}", lossy(&t.key)),
        );
        // An existing key needs REPLACE.
        assert_eq!(
            value_err_text(&restore(&mut con, &dst, &payload)).as_deref(),
            Some("BUSYKEY Target key name already exists.")
        );
        let v = raw(
            &mut con,
            &[b"RESTORE".as_slice(), &dst, b"0", &payload, b"REPLACE"],
        );
        assert_eq!(show(&v), "+OK");
    }
}

#[test]
fn scandump_loadchunk_into_new_keys_including_a_32_mib_table() {
    let s = Server::start();
    let mut con = s.conn();
    let set = build_set(&mut con);
    for t in &set {
        let chunks = scandump(&mut con, &t.key);
        let dst = [b"loaded:".as_slice(), &t.key].concat();
        loadchunks(&mut con, &dst, &chunks);
        assert_same(&mut con, t, &dst, "SCANDUMP/LOADCHUNK");
        assert_eq!(scandump(&mut con, &dst), chunks);
    }
    // The all-empty 3-sub-filter filter: header + 3 zeroed chunks.
    let d = scandump(&mut con, ZERO3);
    assert_eq!(d.len(), 4);
    assert_eq!(Hdr::decode(&d[0].1).deletes, 7);

    // 2^23 buckets * 4 slots * 8 bits = 32 MiB: two 16 MiB chunks.
    ok(&mut con, "CF.RESERVE big 30000000 BUCKETSIZE 4");
    assert_eq!(info_int(&mut con, b"big", "Number of buckets"), 1 << 23);
    let mut t = Tracked::new(b"big");
    let items = names("big", 5000);
    insert_ok(&mut con, b"big", &items);
    t.add(&items);
    let d = scandump(&mut con, b"big");
    let shape: Vec<(i64, usize)> = d.iter().map(|(it, c)| (*it, c.len())).collect();
    assert_eq!(
        shape,
        vec![
            (1, HEADER_LEN),
            (1 + CHUNK as i64, CHUNK),
            (1 + 2 * CHUNK as i64, CHUNK)
        ]
    );
    loadchunks(&mut con, b"big2", &d);
    assert_same(&mut con, &t, b"big2", "32 MiB SCANDUMP/LOADCHUNK");
    // Chunks may come in any order after the header.
    loadchunks(&mut con, b"big3", &d[..1]);
    loadchunks(&mut con, b"big3", &[d[2].clone(), d[1].clone()]);
    assert_same(&mut con, &t, b"big3", "chunks in reverse order");
    // Large filters are freed in the background (free_effort).
    assert_eq!(q(&mut con, "UNLINK big2 big3"), "2");
    ping(&mut con);
}

// =============================================================================================
// 6. Replication
// =============================================================================================

#[test]
fn replica_sees_every_write() {
    let primary = Server::start();
    let mut p = primary.conn();
    // State before the replica exists (full sync).
    ok(&mut p, "CF.RESERVE pre:r 1000 BUCKETSIZE 4 ERROR 0.001");
    let mut pre = Tracked::new(b"pre:r");
    let items = names("pre", 500);
    insert_ok(&mut p, b"pre:r", &items);
    pre.add(&items);

    // The replica keeps the default creation configs but has far lower limits than the
    // primary's data needs: replicated and loaded data must never be refused.
    let replica = Server::builder()
        .replica_of(&primary)
        .args(&[
            "--bf.cf-max-expansions",
            "2",
            "--bf.max-filter-memory",
            "4096",
        ])
        .start();
    primary.wait_for_sync(&replica);
    let mut r = replica.conn();
    assert_snap_eq(
        &key_snap(&mut r, b"pre:r", &pre),
        &key_snap(&mut p, b"pre:r", &pre),
        "full sync",
    );

    // Streamed: RESERVE, ADD, ADDNX, INSERT, INSERTNX, DEL, COMPACT, LOADCHUNK.
    let mut set = build_set(&mut p);
    more_writes(&mut p, &mut set, "repl");
    let chunks = scandump(&mut p, GROWN);
    loadchunks(&mut p, b"ld:grown", &chunks);
    let mut ld = find(&mut set, GROWN).clone();
    ld.key = b"ld:grown".to_vec();
    set.push(ld);
    set.push(pre);
    // A delete that finds nothing.
    assert_eq!(q(&mut p, "CF.DEL cf:plain never-added-item"), "0");

    // Auto-creation (and CF.RESERVE without options) with primary configs the replica
    // does not have.
    config_set(&mut p, "bf.cf-initial-size", "500");
    config_set(&mut p, "bf.cf-bucket-size", "4");
    config_set(&mut p, "bf.cf-max-iterations", "50");
    config_set(&mut p, "bf.cf-expansion-factor", "2");
    config_set(&mut p, "bf.cf-error-rate", "0.001");
    let want = "bktsize:4 buckets:128 items:1 deletes:0 filters:1 max_iterations:50 expansion:2";
    for (key, cmd) in [
        ("auto:add", "CF.ADD auto:add x"),
        ("auto:addnx", "CF.ADDNX auto:addnx x"),
        ("auto:insert", "CF.INSERT auto:insert ITEMS x"),
        ("auto:insertnx", "CF.INSERTNX auto:insertnx ITEMS x"),
        (
            "auto:cap",
            "CF.INSERT auto:cap CAPACITY 64 ERROR 0.0001 ITEMS x",
        ),
        // CF.RESERVE takes its omitted options from the same configs.
        ("auto:reserve", "CF.RESERVE auto:reserve 500"),
    ] {
        let v = q(&mut p, cmd);
        assert!(v == "1" || v == "[1]" || v == "+OK", "{cmd}: {v}");
        if v == "+OK" {
            assert_eq!(q(&mut p, &format!("CF.ADD {key} x")), "1");
        }
        if key != "auto:cap" {
            assert_eq!(cf_debug(&mut p, key.as_bytes()), want, "{key}");
        }
        let mut t = Tracked::new(key.as_bytes());
        t.add(&[b"x".to_vec()]);
        set.push(t);
    }
    // More writes on the auto-created filters (growth with the primary's expansion).
    let mut autos: Vec<Tracked> = set
        .iter()
        .filter(|t| t.key.starts_with(b"auto:"))
        .cloned()
        .collect();
    for t in autos.iter_mut() {
        let items = names("grow", 700);
        insert_ok(&mut p, &t.key.clone(), &items);
        t.add(&items);
    }
    set.retain(|t| !t.key.starts_with(b"auto:"));
    set.extend(autos);

    primary.wait_for_offset(&replica);
    for t in &set {
        let a = key_snap(&mut p, &t.key, t);
        let b = key_snap(&mut r, &t.key, t);
        assert_snap_eq(&b, &a, &format!("replica, key {}", lossy(&t.key)));
    }
    assert_eq!(primary.digest(), replica.digest());
    assert_eq!(int(&mut r, "DBSIZE"), int(&mut p, "DBSIZE"));
    // The replica kept its own defaults.
    let v = raw(&mut r, &["CONFIG", "GET", "bf.cf-bucket-size"]);
    assert_eq!(show(&v), "[\"bf.cf-bucket-size\",\"2\"]");
    let v = raw(&mut r, &["CONFIG", "GET", "bf.cf-max-expansions"]);
    assert_eq!(show(&v), "[\"bf.cf-max-expansions\",\"2\"]");
    assert_eq!(info_int(&mut r, b"auto:add", "Bucket size"), 4);
    assert_eq!(info_int(&mut r, b"auto:add", "Fingerprint size"), 13);
    assert_eq!(info_int(&mut r, b"auto:cap", "Fingerprint size"), 17);
    // CF.COMPACT is a write command: a read-only replica refuses it.
    for cmd in [
        "CF.COMPACT cf:grown",
        "CF.ADD cf:plain x",
        "CF.DEL cf:plain p1",
    ] {
        let e = err(&mut r, cmd);
        assert!(e.starts_with("READONLY"), "{cmd}: {e}");
    }
}

/// RESTORE is replicated as such: the replica loads the payload under its own, lower
/// limits, and must not refuse what the primary accepted (the module's rule:
/// configured limits never refuse data being loaded or replicated).
#[test]
fn replicated_restore_is_not_refused_by_lower_replica_limits() {
    let primary = Server::start();
    let replica = Server::builder()
        .replica_of(&primary)
        .args(&["--bf.max-filter-memory", "4096"])
        .start();
    primary.wait_for_sync(&replica);
    let mut p = primary.conn();
    let mut r = replica.conn();
    // 512 buckets * 4 slots * 17 bits = 4352 bytes > 4096.
    ok(&mut p, "CF.RESERVE src 2000 BUCKETSIZE 4 ERROR 0.0001");
    let mut t = Tracked::new(b"dst");
    let items = names("r", 1500);
    insert_ok(&mut p, b"src", &items);
    t.add(&items);
    let payload = dump(&mut p, b"src");
    assert_eq!(show(&restore(&mut p, b"dst", &payload)), "+OK");
    primary.wait_for_offset(&replica);
    assert!(
        key_exists(&mut r, b"dst"),
        "the replica refused a replicated RESTORE (its redis.log: {:?})",
        replica
            .log()
            .lines()
            .filter(|l| l.contains("refusing") || l.contains("CRITICAL"))
            .collect::<Vec<_>>()
    );
    assert_snap_eq(
        &key_snap(&mut r, b"dst", &t),
        &key_snap(&mut p, b"dst", &t),
        "replicated RESTORE",
    );
    assert_eq!(primary.digest(), replica.digest());
}

// =============================================================================================
// 7. Hostile input
// =============================================================================================

/// A filter with exactly 3 sub-filters (32, 64, 128 buckets of 2 slots).
fn three_filters(con: &mut Connection, key: &[u8]) -> Tracked {
    okb(
        con,
        &[
            b"CF.RESERVE".as_slice(),
            key,
            b"64",
            b"BUCKETSIZE",
            b"2",
            b"EXPANSION",
            b"2",
        ],
    );
    let items = names("three", 200);
    insert_ok(con, key, &items);
    assert_eq!(filters(con, key), 3);
    let mut t = Tracked::new(key);
    t.add(&items);
    t
}

#[test]
fn loadchunk_rejects_hostile_headers() {
    let s = Server::start();
    let mut con = s.conn();
    let src = three_filters(&mut con, b"src");
    let h = header_of(&mut con, b"src");
    ok(&mut con, "CF.RESERVE keep 100");
    assert_eq!(q(&mut con, "CF.ADD keep a"), "1");
    let before = db_digest(&mut con);

    for (what, bad, want) in bad_headers(&h) {
        let e = errb(&mut con, &[b"CF.LOADCHUNK".as_slice(), b"hk", b"1", &bad]);
        assert_eq!(e, want, "{what}");
        assert!(!key_exists(&mut con, b"hk"), "{what}: key created");
        ping(&mut con);
    }
    assert_eq!(db_digest(&mut con), before);

    // A lying item count below the true occupancy is not detectable from the header:
    // accepted, and the counters are then what the header said.
    let mut low = Hdr::decode(&h);
    low.items = 3;
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"low", b"1", &low.encode()],
    );
    assert_eq!(info_int(&mut con, b"low", "Number of items inserted"), 3);
    assert_eq!(q(&mut con, "DEL low"), "1");

    // Valid hand-made headers load: a compaction cursor mid-pass, an error rate,
    // 32-bit fingerprints, bucket size 255, expansion 0 with one sub-filter.
    let mut mid = Hdr::decode(&h);
    mid.flags = 3;
    mid.cursor_filter = 2;
    mid.cursor_slot = 17;
    mid.error_bits = 0.001f64.to_bits();
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"mid", b"1", &mid.encode()],
    );
    assert_eq!(header_of(&mut con, b"mid"), mid.encode());
    let mut wide = Hdr::plain(255, 0, 1, 4);
    wide.fp_bits = 32;
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"wide", b"1", &wide.encode()],
    );
    assert_eq!(info_int(&mut con, b"wide", "Size"), 40 + 16 + 4 * 255 * 4);
    assert_eq!(q(&mut con, "CF.ADD wide x"), "1");
    assert_eq!(q(&mut con, "CF.EXISTS wide x"), "1");

    // The unmodified header loads, then the chunks.
    let chunks = scandump(&mut con, b"src");
    loadchunks(&mut con, b"ok", &chunks);
    assert_same(&mut con, &src, b"ok", "after hostile headers");

    // 2^32 buckets of 1 slot (a 4 GiB table) under a 1 GiB cap: refused, server alive.
    config_set(&mut con, "bf.max-filter-memory", "1gb");
    let huge = Hdr::plain(1, 1, 1, 1 << 32).encode();
    assert_eq!(
        errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"huge", b"1", &huge]
        ),
        CANNOT_CREATE
    );
    assert!(s.is_alive());
    assert!(!key_exists(&mut con, b"huge"));
    // Just under the cap is fine (2^30 buckets would be 1 GiB: use 2^20).
    let fine = Hdr::plain(1, 1, 1, 1 << 20).encode();
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"fine", b"1", &fine],
    );
    assert_eq!(info_int(&mut con, b"fine", "Number of buckets"), 1 << 20);
    ping(&mut con);
}

/// The most sub-filters a client may send: `bf.cf-max-expansions` at its maximum,
/// 4096 one-slot sub-filters (RedisBloom allows 65536 and truncates the count to 16
/// bits, quirk Q12). Every whole-filter operation (digest, RDB save and load,
/// DUMP/RESTORE) must be quick: each is bounded at 1 s here (linear work takes a few
/// milliseconds).
#[test]
fn the_most_sub_filters_work_in_linear_time() {
    let s = Server::builder()
        .args(&["--bf.cf-max-expansions", "4096"])
        .start();
    let mut con = s.conn();
    let many = Hdr::plain(1, 1, 4096, 1).encode();
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"many", b"1", &many],
    );
    assert_eq!(filters(&mut con, b"many"), 4096);
    // One more than cf-max-expansions: refused (every limit applies to what a
    // client sends).
    let too_many = Hdr::plain(1, 1, 4097, 1).encode();
    assert!(show(&raw(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"more", b"1", &too_many]
    ))
    .starts_with('!'));
    assert_eq!(info_int(&mut con, b"many", "Size"), 40 + 17 * 4096);
    assert_eq!(q(&mut con, "CF.ADD many x"), "1");
    assert_eq!(q(&mut con, "CF.EXISTS many x"), "1");
    // x went to the newest sub-filter: the last byte of the dump.
    let chunk = raw(&mut con, &["CF.SCANDUMP", "many", "4096"]);
    let Value::Array(a) = &chunk else {
        panic!("{}", show(&chunk))
    };
    assert_eq!(a[0], Value::Int(4097));
    assert!(matches!(&a[1], Value::BulkString(b) if b.len() == 1 && b[0] != 0));
    assert_eq!(q(&mut con, "CF.SCANDUMP many 4097"), "[0,nil]");

    let mut slow: Vec<String> = Vec::new();
    let mut timed = |what: &str, con: &mut Connection, args: &[&[u8]]| -> Value {
        let t0 = Instant::now();
        let v = raw(con, args);
        let took = t0.elapsed();
        if took > Duration::from_secs(1) {
            slow.push(format!("{what}: {took:?}"));
        }
        v
    };
    let d = timed(
        "DEBUG DIGEST-VALUE",
        &mut con,
        &[b"DEBUG", b"DIGEST-VALUE", b"many"],
    );
    let Value::BulkString(payload) = timed("DUMP", &mut con, &[b"DUMP", b"many"]) else {
        panic!("DUMP")
    };
    let v = timed(
        "RESTORE",
        &mut con,
        &[b"RESTORE".as_slice(), b"many2", b"0", &payload],
    );
    assert_eq!(show(&v), "+OK");
    assert_eq!(header_of(&mut con, b"many2"), header_of(&mut con, b"many"));
    assert_eq!(q(&mut con, "CF.EXISTS many2 x"), "1");
    assert_eq!(
        show(&raw(&mut con, &["CF.SCANDUMP", "many2", "4096"])),
        show(&chunk)
    );
    assert!(matches!(d, Value::Array(ref a) if a.len() == 1));
    // Deleting the item lets compaction free every empty sub-filter.
    assert_eq!(q(&mut con, "CF.DEL many x"), "1");
    let mut calls = 0;
    while filters(&mut con, b"many") > 1 {
        ok(&mut con, "CF.COMPACT many");
        calls += 1;
        assert!(
            calls <= 10,
            "compaction does not free the empty sub-filters"
        );
    }
    ping(&mut con);
    assert!(
        slow.is_empty(),
        "whole-filter operations on 4096 sub-filters are slow, \
         i.e. quadratic in the number of sub-filters: {slow:?}"
    );
}

#[test]
fn loadchunk_rejects_hostile_chunks() {
    let s = Server::start();
    let mut con = s.conn();
    let src = three_filters(&mut con, b"src");
    let chunks = scandump(&mut con, b"src");
    let lens: Vec<usize> = chunks[1..].iter().map(|(_, c)| c.len()).collect();
    assert_eq!(lens, vec![64, 128, 256]);
    loadchunks(&mut con, b"dst", &chunks[..1]);
    let before = digest_value(&mut con, b"dst");

    let cases: Vec<(&str, String, Vec<u8>, &str)> = vec![
        ("empty chunk", "65".into(), Vec::new(), CANNOT_LOAD_CHUNK),
        (
            "starts before offset 0",
            "2".into(),
            vec![1; 5],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "iterator 1 is the header",
            "1".into(),
            vec![1; 5],
            "ERR item exists",
        ),
        ("past the end", "470".into(), vec![1; 10], CANNOT_LOAD_CHUNK),
        (
            "ends one byte past the end",
            "450".into(),
            vec![1; 10],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "far past the end",
            i64::MAX.to_string(),
            vec![1; 1],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "spans sub-filters 0 and 1",
            "75".into(),
            vec![1; 20],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "spans sub-filters 1 and 2",
            "200".into(),
            vec![1; 10],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "everything in one chunk",
            "449".into(),
            vec![1; 448],
            CANNOT_LOAD_CHUNK,
        ),
        ("iterator 0", "0".into(), vec![1; 5], INVALID_POSITION),
        (
            "negative iterator",
            "-65".into(),
            vec![1; 5],
            INVALID_POSITION,
        ),
        (
            "non-integer iterator",
            "6x".into(),
            vec![1; 5],
            INVALID_POSITION,
        ),
    ];
    for (what, it, data, want) in &cases {
        let e = errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"dst", it.as_bytes(), data],
        );
        assert_eq!(e, *want, "{what}");
        assert_eq!(
            digest_value(&mut con, b"dst"),
            before,
            "{what}: filter changed"
        );
    }
    assert_eq!(
        errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"nokey", b"65", &chunks[1].1]
        ),
        "ERR not found"
    );
    ping(&mut con);

    // The real chunks still load, in pieces of any size inside one sub-filter.
    let (a, b) = chunks[2].1.split_at(50);
    let start2 = chunks[1].0 - 1; // offset of sub-filter 1
    let pieces: Vec<(i64, Vec<u8>)> = vec![
        (start2 + 50 + 1, a.to_vec()),
        (start2 + 128 + 1, b.to_vec()),
        chunks[1].clone(),
        chunks[3].clone(),
    ];
    loadchunks(&mut con, b"dst", &pieces);
    assert_same(&mut con, &src, b"dst", "chunks after hostile ones");
}

#[test]
fn restore_rejects_corrupt_payloads() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET rdbcompression no");
    let src = three_filters(&mut con, b"src");
    let good = dump(&mut con, b"src");
    let p = ModulePayload::parse(&good);
    assert_eq!(p.encode(), good, "payload re-encoding is exact");
    assert_eq!(p.module_id & 1023, 6, "encoding version 6");
    assert_eq!(p.strings.len(), 4);
    assert_eq!(p.strings[0], header_of(&mut con, b"src"));
    let n = good.len();
    let magic = good
        .windows(4)
        .position(|w| w == b"FBcf")
        .expect("FBcf magic in the DUMP");
    let body = &good[..n - 10];
    let ver = p.rdb_version;

    // Control: a resealed copy restores.
    assert_eq!(show(&restore(&mut con, b"control", &p.encode())), "+OK");
    assert_same(&mut con, &src, b"control", "resealed payload");

    let mut bad: Vec<(String, Vec<u8>)> = Vec::new();
    for (what, h, _) in bad_headers(&p.strings[0]) {
        let mut q = p.clone();
        q.strings[0] = h;
        bad.push((format!("header: {what}"), q.encode()));
    }
    // Bytes patched in place, relative to the magic.
    let patch = |at: usize, bytes: &[u8]| {
        let mut b = body.to_vec();
        b[magic + at..magic + at + bytes.len()].copy_from_slice(bytes);
        seal(b, ver)
    };
    bad.push(("magic patched".into(), patch(0, b"XBcf")));
    bad.push((
        "2 sub-filters, 3 chunks".into(),
        patch(H_NFILTERS, &2u32.to_le_bytes()),
    ));
    bad.push((
        "4 sub-filters, 3 chunks".into(),
        patch(H_NFILTERS, &4u32.to_le_bytes()),
    ));
    bad.push((
        "base 64 buckets".into(),
        patch(H_BASE, &64u64.to_le_bytes()),
    ));
    bad.push((
        "base 16 buckets".into(),
        patch(H_BASE, &16u64.to_le_bytes()),
    ));
    bad.push(("bucket size 1".into(), patch(H_BUCKET_SIZE, &[1])));
    bad.push(("bucket size 4".into(), patch(H_BUCKET_SIZE, &[4])));
    bad.push(("16-bit fingerprints".into(), patch(H_FP_BITS, &[16])));
    bad.push(("fingerprint bits 0".into(), patch(H_FP_BITS, &[0])));
    // Truncations.
    for cut in [
        magic + 3,
        magic + 30,
        magic + HEADER_LEN,
        body.len() - 100,
        body.len() - 1,
    ] {
        bad.push((
            format!("truncated at {cut}"),
            seal(body[..cut].to_vec(), ver),
        ));
    }
    bad.push((
        "nothing but the type byte".into(),
        seal(body[..1].to_vec(), ver),
    ));
    // Structural edits.
    let mut e = |what: &str, f: &dyn Fn(&mut ModulePayload)| {
        let mut q = p.clone();
        f(&mut q);
        bad.push((what.to_string(), q.encode()));
    };
    e("last chunk missing", &|q| {
        q.strings.pop();
    });
    e("header only", &|q| q.strings.truncate(1));
    e("no strings at all", &|q| q.strings.clear());
    e("chunk one byte short", &|q| {
        q.strings[2].pop();
    });
    e("chunk one byte long", &|q| q.strings[2].push(0));
    e("empty chunk", &|q| q.strings[1].clear());
    e("extra chunk", &|q| q.strings.push(vec![0; 256]));
    e("chunks swapped", &|q| q.strings.swap(1, 3));
    e("header after the chunks", &|q| q.strings.rotate_left(1));
    e("header 63 bytes", &|q| {
        q.strings[0].pop();
    });
    e("encoding version 4 (RedisBloom's)", &|q| {
        q.module_id = (q.module_id & !1023) | 4
    });
    e("encoding version 5 (no scheme field)", &|q| {
        q.module_id = (q.module_id & !1023) | 5
    });
    e("encoding version 7", &|q| {
        q.module_id = (q.module_id & !1023) | 7
    });
    e("unknown hash scheme", &|q| q.scheme = Some(2));
    e("encoding version 0", &|q| q.module_id &= !1023);
    e("unknown module type", &|q| q.module_id ^= 1 << 20);

    let before = db_digest(&mut con);
    for (what, payload) in &bad {
        let v = restore(&mut con, b"bad", payload);
        assert_eq!(
            value_err_text(&v).as_deref(),
            Some(BAD_DATA_FORMAT),
            "{what}: {}",
            show(&v)
        );
        assert!(!key_exists(&mut con, b"bad"), "{what}: key created");
        ping(&mut con);
    }
    assert_eq!(db_digest(&mut con), before);

    // Counters that lie within the valid range cannot be told from the header: the
    // payload may be refused or accepted, but the server survives every command on it.
    let total_slots = 2 * (32 + 64 + 128);
    for items in [0u64, 1, total_slots - 1, total_slots] {
        let mut b = body.to_vec();
        b[magic + H_ITEMS..magic + H_ITEMS + 8].copy_from_slice(&items.to_le_bytes());
        b[magic + H_DELETES..magic + H_DELETES + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let v = restore(&mut con, b"liar", &seal(b, ver));
        if show(&v) == "+OK" {
            let _ = raw(&mut con, &["CF.INFO", "liar"]);
            for i in 0..300 {
                let _ = raw(&mut con, &["CF.DEL", "liar", &format!("three{i}")]);
            }
            let _ = raw(&mut con, &["CF.COMPACT", "liar"]);
            let _ = insert_any(&mut con, b"liar", &names("more", 600));
            let _ = scandump(&mut con, b"liar");
            let _ = digest_value(&mut con, b"liar");
            assert_eq!(q(&mut con, "DEL liar"), "1");
        } else {
            assert_eq!(value_err_text(&v).as_deref(), Some(BAD_DATA_FORMAT));
        }
        ping(&mut con);
    }

    // A wrong CRC is caught by the server before the module sees anything.
    let mut flipped = good.clone();
    flipped[magic + H_ITEMS] ^= 1;
    assert_eq!(
        value_err_text(&restore(&mut con, b"bad", &flipped)).as_deref(),
        Some("ERR DUMP payload version or checksum are wrong")
    );
    assert!(s.is_alive());
    assert!(s.log().contains("refusing MBbloomCF payload"));
}

// =============================================================================================
// 8. False-positive rates
// =============================================================================================

/// Measured false-positive rate of `key` over `probes` non-members.
fn fpr(con: &mut Connection, key: &[u8], probes: &[Vec<u8>]) -> f64 {
    let hits = mexists(con, key, probes).iter().filter(|p| **p).count();
    hits as f64 / probes.len() as f64
}

#[test]
fn false_positive_rates_on_a_live_server() {
    let s = Server::start();
    let mut con = s.conn();
    let members = names("fpr:member:", 95_000);
    let probes = names("fpr:probe:", 200_000);
    let n = probes.len() as f64;
    let mut measured = Vec::new();
    for (key, opts, bound) in [
        ("fpr8", "", 2.0 * 2.0 / 255.0),
        ("fpr-e", "ERROR 0.001", 0.001),
    ] {
        ok(&mut con, &format!("CF.RESERVE {key} 100000 {opts}"));
        insert_ok(&mut con, key.as_bytes(), &members);
        // 95% of the capacity may already need a second (nearly empty) sub-filter; the
        // single-sub-filter bound must hold all the same.
        let f = filters(&mut con, key.as_bytes());
        assert!(f <= 2, "{key}: {f} sub-filters");
        let sigma = (bound * (1.0 - bound) / n).sqrt();
        let rate = fpr(&mut con, key.as_bytes(), &probes);
        assert!(
            rate <= bound + 4.0 * sigma,
            "{key}: measured FPR {rate} > bound {bound} + 4 sigma ({sigma})"
        );
        eprintln!("{key}: {f} sub-filter(s), FPR {rate:.5} (bound {bound:.5}, sigma {sigma:.6})");
        measured.push(rate);
        // No false negatives.
        assert!(mexists(&mut con, key.as_bytes(), &members)
            .iter()
            .all(|p| *p));
    }
    assert!(info_int(&mut con, b"fpr-e", "Fingerprint size") > 8);
    assert_eq!(info_int(&mut con, b"fpr8", "Fingerprint size"), 8);
    // The 8-bit filter does produce false positives (the probes test something), and
    // the ERROR option cuts them by much more than 4x.
    assert!(measured[0] > 0.002, "8-bit FPR {}", measured[0]);
    assert!(measured[1] < measured[0] / 4.0, "{measured:?}");
}
