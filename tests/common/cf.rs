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

// ---------------------------------------------------------------------------------------------
// Tracked filters and snapshots
// ---------------------------------------------------------------------------------------------

/// A filter key and the multiset of items it holds.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub key: Vec<u8>,
    pub copies: BTreeMap<Vec<u8>, u64>,
}

impl Tracked {
    pub fn new(key: &[u8]) -> Tracked {
        Tracked {
            key: key.to_vec(),
            copies: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, items: &[Vec<u8>]) {
        for i in items {
            *self.copies.entry(i.clone()).or_insert(0) += 1;
        }
    }

    pub fn remove(&mut self, items: &[Vec<u8>]) {
        for i in items {
            let c = self.copies.get_mut(i).expect("removing an untracked item");
            *c -= 1;
            if *c == 0 {
                self.copies.remove(i);
            }
        }
    }

    pub fn items(&self) -> Vec<Vec<u8>> {
        self.copies.keys().cloned().collect()
    }
}

pub fn find<'a>(set: &'a mut [Tracked], key: &[u8]) -> &'a mut Tracked {
    set.iter_mut()
        .find(|t| t.key == key)
        .unwrap_or_else(|| panic!("no tracked key {}", lossy(key)))
}

/// Never-inserted items: their answers pin the fingerprints (false positives included).
pub fn probes() -> Vec<Vec<u8>> {
    let mut v = names("probe:", 3000);
    v.extend(binary_probes());
    v
}

/// The observable state of one filter.
#[derive(Debug, PartialEq)]
pub struct KeySnap {
    pub info: String,
    pub debug: String,
    pub digest: String,
    pub counts: Vec<i64>,
    pub probes: Vec<bool>,
}

/// Snapshot of `key`, which must hold every item of `t` (with at least as many
/// CF.COUNT matches as copies).
pub fn key_snap(con: &mut Connection, key: &[u8], t: &Tracked) -> KeySnap {
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

pub fn assert_snap_eq(got: &KeySnap, want: &KeySnap, what: &str) {
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

pub fn snapshot(con: &mut Connection, set: &[Tracked]) -> Vec<KeySnap> {
    set.iter().map(|t| key_snap(con, &t.key, t)).collect()
}

/// Every tracked key still holds exactly its snapshot.
pub fn assert_set(con: &mut Connection, set: &[Tracked], snap: &[KeySnap], what: &str) {
    assert_eq!(set.len(), snap.len());
    for (t, s) in set.iter().zip(snap) {
        let got = key_snap(con, &t.key, t);
        assert_snap_eq(&got, s, &format!("{what}, key {}", lossy(&t.key)));
    }
}

/// `dst` holds exactly what `src` holds.
pub fn assert_same(con: &mut Connection, src: &Tracked, dst: &[u8], what: &str) {
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

pub const PLAIN: &[u8] = b"cf:plain";
pub const GROWN: &[u8] = b"cf:grown";
pub const WIDE: &[u8] = b"cf:wide";
pub const ODD: &[u8] = b"cf:odd";
pub const AUTO: &[u8] = b"cf:auto";
pub const NX: &[u8] = b"cf:nx";
pub const EMPTY: &[u8] = b"cf:empty";
pub const ALLDEL: &[u8] = b"cf:alldel";
pub const ZERO3: &[u8] = b"cf:zero3";
pub const BINKEY: &[u8] = b"cf:bin\x00\xff\r\n key";
pub const COMPACTING: &[u8] = b"cf:compacting";

/// Every single byte value, the empty string, a 1 KiB item, RESP-looking items.
pub fn binary_items() -> Vec<Vec<u8>> {
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
pub fn build_set(con: &mut Connection) -> Vec<Tracked> {
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
    assert_eq!(fp_size(con, WIDE), 17);
    let mut t = Tracked::new(WIDE);
    let items = names("w", 1500);
    insert_ok(con, WIDE, &items);
    t.add(&items);
    set.push(t);

    ok(
        con,
        "CF.RESERVE cf:odd 100 BUCKETSIZE 3 EXPANSION 3 ERROR 0.01",
    );
    assert_eq!(fp_size(con, ODD), 10);
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
pub fn build_compacting(con: &mut Connection, key: &[u8]) -> Tracked {
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
pub fn more_writes(con: &mut Connection, set: &mut Vec<Tracked>, tag: &str) {
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

pub fn restore(con: &mut Connection, key: &[u8], payload: &[u8]) -> Value {
    raw(con, &[b"RESTORE".as_slice(), key, b"0", payload])
}

/// Corrupted variants of a valid header of a filter with 3 sub-filters (expansion 2,
/// bucket size 2, 8-bit fingerprints): `(what, header, expected LOADCHUNK error)`.
/// As RedisBloom 2.8 answers: `Invalid header` for a length that is neither
/// format's (38 or 64 bytes), `Couldn't create filter!` for one that is and
/// does not validate.
pub fn bad_headers(h: &[u8]) -> Vec<(String, Vec<u8>, &'static str)> {
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
        let want = if [38, 64].contains(&v.len()) {
            CANNOT_CREATE
        } else {
            want
        };
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
