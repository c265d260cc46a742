//! Persistence and replication of Bloom filters (`MBbloom--`, RDB encoding version 6).
//!
//! Round trips covered: SAVE + restart, DEBUG RELOAD, AOF (rewrite through the
//! `aof_rewrite` callback, and a plain command log), COPY, DUMP/RESTORE,
//! SCANDUMP/LOADCHUNK, and replication (initial full sync and streamed writes).
//! Hostile input: corrupt RESTORE payloads (built from real DUMPs, CRC recomputed)
//! and corrupt LOADCHUNK headers and chunks.
//!
//! After every round trip each filter is compared with its state before: every
//! inserted item is still present (BF.MEXISTS in batches), a fixed set of probes
//! that were never inserted get the same answers (same bits, so the same false
//! positives), and BF.CARD, BF.INFO, BF.DEBUG and DEBUG DIGEST-VALUE are equal.

mod common;

use std::time::Duration;

use common::rdb::*;
use common::*;
use redis::{Connection, FromRedisValue, Value};

// ---------------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------------

/// Builds a command from byte-string arguments.
fn cmd_of(args: &[&[u8]]) -> redis::Cmd {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name).expect("command name is UTF-8"));
    for a in rest {
        c.arg(*a);
    }
    c
}

/// Printable form of a command for panic messages (long arguments shortened).
fn show(args: &[&[u8]]) -> String {
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
fn q<T: FromRedisValue>(con: &mut Connection, args: &[&[u8]]) -> T {
    cmd_of(args)
        .query(con)
        .unwrap_or_else(|e| panic!("{} failed: {e}", show(args)))
}

/// Runs a command that must fail; returns the error text as sent on the wire.
fn q_err(con: &mut Connection, args: &[&[u8]]) -> String {
    err_text(cmd_of(args).query::<Value>(con))
}

/// Runs a command and returns its raw reply, keeping error elements of arrays as
/// `Value::ServerError` (a plain query turns them into an `Err`).
fn q_raw(con: &mut Connection, args: &[&[u8]]) -> Value {
    let mut p = redis::pipe();
    p.add_command(cmd_of(args)).ignore_errors();
    let mut v: Vec<Value> = p
        .query(con)
        .unwrap_or_else(|e| panic!("{} failed: {e}", show(args)));
    assert_eq!(v.len(), 1);
    v.pop().unwrap()
}

/// The elements of an array reply (errors kept as values).
fn q_array(con: &mut Connection, args: &[&[u8]]) -> Vec<Value> {
    match q_raw(con, args) {
        Value::Array(v) => v,
        other => panic!("{}: not an array: {other:?}", show(args)),
    }
}

fn ok(con: &mut Connection, args: &[&[u8]]) {
    let v: Value = q(con, args);
    assert_eq!(v, Value::Okay, "{} replied {v:?}", show(args));
}

fn ping(con: &mut Connection) {
    let r: String = q(con, &[b"PING"]);
    assert_eq!(r, "PONG");
}

fn exists(con: &mut Connection, key: &[u8]) -> bool {
    q::<i64>(con, &[b"EXISTS", key]) == 1
}

fn reserve(con: &mut Connection, key: &[u8], opts: &[&str]) {
    let mut args: Vec<&[u8]> = vec![b"BF.RESERVE", key];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    ok(con, &args);
}

/// BF.MADD in batches; every reply element must be 0 or 1 (0 = false positive).
fn madd(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) {
    for batch in items.chunks(500) {
        let mut args: Vec<&[u8]> = vec![b"BF.MADD", key];
        args.extend(batch.iter().map(|i| i.as_slice()));
        let r: Vec<i64> = q(con, &args);
        assert_eq!(r.len(), batch.len());
        assert!(r.iter().all(|v| *v == 0 || *v == 1), "BF.MADD: {r:?}");
    }
}

/// BF.INSERT with options; returns the reply elements (ints, or errors as text).
fn insert(con: &mut Connection, key: &[u8], opts: &[&str], items: &[Vec<u8>]) -> Vec<Value> {
    let mut args: Vec<&[u8]> = vec![b"BF.INSERT", key];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    args.push(b"ITEMS");
    args.extend(items.iter().map(|i| i.as_slice()));
    q_array(con, &args)
}

/// BF.MEXISTS in batches.
fn mexists(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
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

fn bf_info(con: &mut Connection, key: &[u8]) -> Value {
    q(con, &[b"BF.INFO", key])
}

fn bf_info_field(con: &mut Connection, key: &[u8], field: &str) -> Value {
    let v: Vec<Value> = q(con, &[b"BF.INFO", key, field.as_bytes()]);
    assert_eq!(v.len(), 1);
    v.into_iter().next().unwrap()
}

fn card(con: &mut Connection, key: &[u8]) -> i64 {
    q(con, &[b"BF.CARD", key])
}

fn bf_debug(con: &mut Connection, key: &[u8]) -> Vec<String> {
    q(con, &[b"BF.DEBUG", key])
}

fn digest_value(con: &mut Connection, key: &[u8]) -> String {
    let v: Vec<String> = q(con, &[b"DEBUG", b"DIGEST-VALUE", key]);
    assert_eq!(v.len(), 1);
    v.into_iter().next().unwrap()
}

fn db_digest(con: &mut Connection) -> String {
    q(con, &[b"DEBUG", b"DIGEST"])
}

/// The `bytes:` of every link, from BF.DEBUG.
fn link_bytes(con: &mut Connection, key: &[u8]) -> Vec<u64> {
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

const CHUNK: u64 = 16 * 1024 * 1024;

/// SCANDUMP with the standard client loop: `(iterator, data)` pairs, header first.
fn scandump(con: &mut Connection, key: &[u8]) -> Vec<(i64, Vec<u8>)> {
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

fn loadchunk(con: &mut Connection, key: &[u8], it: i64, data: &[u8]) -> redis::RedisResult<Value> {
    redis::cmd("BF.LOADCHUNK")
        .arg(key)
        .arg(it)
        .arg(data)
        .query(con)
}

fn loadchunks(con: &mut Connection, key: &[u8], chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        let r = loadchunk(con, key, *it, data);
        assert_eq!(r.ok(), Some(Value::Okay), "BF.LOADCHUNK iterator {it}");
    }
}

fn config_set(con: &mut Connection, name: &str, value: &str) {
    ok(con, &[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()]);
}

fn config_get(con: &mut Connection, name: &str) -> String {
    let v: Vec<String> = q(con, &[b"CONFIG", b"GET", name.as_bytes()]);
    assert_eq!(v.len(), 2, "CONFIG GET {name}: {v:?}");
    v[1].clone()
}

// ---------------------------------------------------------------------------------------------
// The filter set and its checks
// ---------------------------------------------------------------------------------------------

fn text_items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

/// Every single byte value, the empty string, a 1 KiB item, all 256 byte values in
/// one item, and items that look like RESP framing.
fn binary_items() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    v.push(Vec::new());
    v.push((0..1024u32).map(|i| (i * 31 + 7) as u8).collect());
    v.push((0..=255u8).collect());
    v.push(b"\r\n$-1\r\n*3\r\n".to_vec());
    v.push(b"\x00\x00\x00\x00".to_vec());
    v
}

/// Items never inserted anywhere: their answers pin the bits (false positives included).
fn probes() -> Vec<Vec<u8>> {
    let mut v = text_items("probe:", 1500);
    v.extend((0..200u32).map(|i| {
        let mut p = b"probe\x00\xff".to_vec();
        p.extend_from_slice(&i.to_le_bytes());
        p
    }));
    v
}

#[derive(Clone, Debug)]
struct Filter {
    key: Vec<u8>,
    items: Vec<Vec<u8>>,
}

#[derive(Clone, Debug, Default)]
struct Filters {
    list: Vec<Filter>,
}

impl Filters {
    fn push(&mut self, key: &[u8], items: Vec<Vec<u8>>) {
        assert!(self.list.iter().all(|f| f.key != key), "duplicate key");
        self.list.push(Filter {
            key: key.to_vec(),
            items,
        });
    }

    fn get_mut(&mut self, key: &[u8]) -> &mut Filter {
        self.list
            .iter_mut()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no filter {:?}", String::from_utf8_lossy(key)))
    }
}

const SCALING: &[u8] = b"fs:scaling";
const NONSCALING: &[u8] = b"fs:nonscaling";
const AUTO: &[u8] = b"fs:auto";
const EXP1: &[u8] = b"fs:exp1";
const INSERTED: &[u8] = b"fs:insert";
const EMPTY: &[u8] = b"fs:empty";
const BINKEY: &[u8] = b"fs:bin\x00\xff\r\n key";
const BIG: &[u8] = b"fs:big";
const BLOCKED: &[u8] = b"fs:blocked";
const BLOCKED_NS: &[u8] = b"fs:blocked-ns";

/// Creates the standard filter set; `big` adds a ~27.6 MB single-link filter (two
/// 16 MiB chunks).
fn build_filters(con: &mut Connection, big: bool) -> Filters {
    let mut fs = Filters::default();

    // Scaling, 5 links (100 + 200 + 400 + 800 + 1600).
    reserve(con, SCALING, &["0.01", "100"]);
    let mut items = text_items("scaling:", 2000);
    items.extend(binary_items());
    madd(con, SCALING, &items);
    fs.push(SCALING, items);

    // Non-scaling.
    reserve(con, NONSCALING, &["0.001", "500", "NONSCALING"]);
    let mut items = text_items("nonscaling:", 200);
    items.extend(binary_items());
    madd(con, NONSCALING, &items);
    fs.push(NONSCALING, items);

    // Auto-created by BF.ADD on a missing key (defaults: 100 items, 0.01, expansion 2).
    assert_eq!(q::<i64>(con, &[b"BF.ADD", AUTO, b"first"]), 1);
    let mut items = vec![b"first".to_vec()];
    let more = text_items("auto:", 149);
    madd(con, AUTO, &more);
    items.extend(more);
    fs.push(AUTO, items);

    // EXPANSION 1: every link has the same capacity; 6 links.
    reserve(con, EXP1, &["0.05", "50", "EXPANSION", "1"]);
    let items = text_items("exp1:", 300);
    madd(con, EXP1, &items);
    fs.push(EXP1, items);

    // Created by BF.INSERT with every option.
    let items = text_items("insert:", 200);
    let r = insert(
        con,
        INSERTED,
        &["CAPACITY", "60", "ERROR", "0.02", "EXPANSION", "3"],
        &items,
    );
    assert_eq!(r.len(), items.len());
    fs.push(INSERTED, items);

    // Empty.
    reserve(con, EMPTY, &["0.01", "1000"]);
    fs.push(EMPTY, Vec::new());

    // Binary key name, non-scaling, binary items.
    let items = binary_items();
    insert(con, BINKEY, &["CAPACITY", "1000", "NONSCALING"], &items);
    fs.push(BINKEY, items);

    if big {
        reserve(con, BIG, &["0.01", "20000000"]);
        let mut items = text_items("big:", 1000);
        items.extend(binary_items());
        madd(con, BIG, &items);
        fs.push(BIG, items);
        let lb = link_bytes(con, BIG);
        assert_eq!(lb.len(), 1);
        assert!(lb[0] > CHUNK && lb[0] <= 2 * CHUNK, "big filter: {lb:?}");
    }

    // The blocked layout: scaling (5 links) and non-scaling via BF.INSERT.
    reserve(con, BLOCKED, &["0.01", "100", "LAYOUT", "blocked"]);
    let mut items = text_items("blocked:", 2000);
    items.extend(binary_items());
    madd(con, BLOCKED, &items);
    fs.push(BLOCKED, items);
    let items = text_items("blocked-ns:", 300);
    insert(
        con,
        BLOCKED_NS,
        &[
            "CAPACITY",
            "400",
            "ERROR",
            "0.001",
            "NONSCALING",
            "LAYOUT",
            "blocked",
        ],
        &items,
    );
    fs.push(BLOCKED_NS, items);

    // The set has the shapes this file claims.
    assert!(link_bytes(con, SCALING).len() >= 5);
    assert!(link_bytes(con, EXP1).len() >= 5);
    assert!(link_bytes(con, AUTO).len() >= 2);
    assert!(link_bytes(con, INSERTED).len() >= 2);
    assert!(link_bytes(con, BLOCKED).len() >= 5);
    for key in [BLOCKED, BLOCKED_NS] {
        let debug = bf_debug(con, key);
        assert!(
            debug[1..].iter().all(|l| l.ends_with(" layout:blocked")),
            "{debug:?}"
        );
    }
    assert!(!bf_debug(con, SCALING)[1].contains("layout"));
    assert_eq!(bf_info_field(con, NONSCALING, "EXPANSION"), Value::Nil);
    assert_eq!(bf_info_field(con, EXP1, "EXPANSION"), Value::Int(1));
    assert_eq!(bf_info_field(con, INSERTED, "EXPANSION"), Value::Int(3));
    fs
}

/// Everything observable about one filter.
#[derive(Clone, Debug, PartialEq)]
struct KeyState {
    info: Value,
    card: i64,
    debug: Vec<String>,
    digest: String,
    probes: Vec<i64>,
}

/// Panics with the fields that differ (probe answers summarised) unless `a == b`.
fn assert_state_eq(a: &KeyState, b: &KeyState, what: &str) {
    if a == b {
        return;
    }
    let mut diff = Vec::new();
    if a.info != b.info {
        diff.push(format!("BF.INFO {:?} vs {:?}", a.info, b.info));
    }
    if a.card != b.card {
        diff.push(format!("BF.CARD {} vs {}", a.card, b.card));
    }
    if a.debug != b.debug {
        diff.push(format!("BF.DEBUG {:?} vs {:?}", a.debug, b.debug));
    }
    if a.digest != b.digest {
        diff.push(format!("DIGEST-VALUE {} vs {}", a.digest, b.digest));
    }
    if a.probes != b.probes {
        let n = a
            .probes
            .iter()
            .zip(&b.probes)
            .filter(|(x, y)| x != y)
            .count();
        diff.push(format!(
            "{n} of {} probe answers differ ({} vs {} positives)",
            a.probes.len(),
            a.probes.iter().sum::<i64>(),
            b.probes.iter().sum::<i64>()
        ));
    }
    panic!("{what}:\n  {}", diff.join("\n  "));
}

fn key_state(con: &mut Connection, key: &[u8]) -> KeyState {
    KeyState {
        info: bf_info(con, key),
        card: card(con, key),
        debug: bf_debug(con, key),
        digest: digest_value(con, key),
        probes: mexists(con, key, &probes()),
    }
}

/// Every inserted item answers 1.
fn assert_members(con: &mut Connection, key: &[u8], items: &[Vec<u8>], what: &str) {
    let r = mexists(con, key, items);
    if let Some(i) = r.iter().position(|v| *v != 1) {
        panic!(
            "{what}: {:?} lost item #{i} {:?} ({} of {} missing)",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(&items[i]),
            r.iter().filter(|v| **v != 1).count(),
            items.len()
        );
    }
}

#[derive(Clone, Debug)]
struct Snapshot {
    states: Vec<(Vec<u8>, KeyState)>,
}

fn snapshot(con: &mut Connection, fs: &Filters) -> Snapshot {
    let states = fs
        .list
        .iter()
        .map(|f| (f.key.clone(), key_state(con, &f.key)))
        .collect();
    Snapshot { states }
}

/// Every filter of `fs` has every item and exactly its snapshot state.
fn assert_restored(con: &mut Connection, fs: &Filters, snap: &Snapshot, what: &str) {
    assert_eq!(fs.list.len(), snap.states.len());
    for (f, (key, before)) in fs.list.iter().zip(&snap.states) {
        assert_eq!(&f.key, key);
        assert!(
            exists(con, key),
            "{what}: {:?} is gone",
            String::from_utf8_lossy(key)
        );
        assert_members(con, key, &f.items, what);
        let after = key_state(con, key);
        let label = format!("{what}: {:?} changed", String::from_utf8_lossy(key));
        assert_state_eq(before, &after, &label);
    }
}

/// `dst` (possibly on another connection/server) holds the same filter as `src`.
fn assert_same_filter(
    src_con: &mut Connection,
    src: &[u8],
    dst_con: &mut Connection,
    dst: &[u8],
    items: &[Vec<u8>],
    what: &str,
) {
    assert_members(dst_con, dst, items, what);
    let a = key_state(src_con, src);
    let b = key_state(dst_con, dst);
    let label = format!(
        "{what}: {:?} differs from {:?}",
        String::from_utf8_lossy(dst),
        String::from_utf8_lossy(src)
    );
    assert_state_eq(&a, &b, &label);
}

/// `dst` holds the same filter as `src`, on the same connection.
fn assert_same_key(con: &mut Connection, src: &[u8], dst: &[u8], items: &[Vec<u8>], what: &str) {
    assert_members(con, dst, items, what);
    let a = key_state(con, src);
    let b = key_state(con, dst);
    let label = format!(
        "{what}: {:?} differs from {:?}",
        String::from_utf8_lossy(dst),
        String::from_utf8_lossy(src)
    );
    assert_state_eq(&a, &b, &label);
}

/// Writes after a first round trip: more items everywhere (new links), new filters.
fn more_writes(con: &mut Connection, fs: &mut Filters, tag: &str) {
    let items = text_items(&format!("{tag}:scaling-more:"), 1500);
    madd(con, SCALING, &items);
    fs.get_mut(SCALING).items.extend(items);

    let items = text_items(&format!("{tag}:exp1-more:"), 60);
    madd(con, EXP1, &items);
    fs.get_mut(EXP1).items.extend(items);

    let items = text_items(&format!("{tag}:empty-now-used:"), 10);
    madd(con, EMPTY, &items);
    fs.get_mut(EMPTY).items.extend(items);

    let key = format!("{tag}:auto").into_bytes();
    assert_eq!(q::<i64>(con, &[b"BF.ADD", &key, b"x"]), 1);
    fs.push(&key, vec![b"x".to_vec()]);

    let key = format!("{tag}:reserved").into_bytes();
    reserve(con, &key, &["0.001", "30", "EXPANSION", "5"]);
    let items = text_items("r:", 100);
    madd(con, &key, &items);
    fs.push(&key, items);

    let key = format!("{tag}:inserted").into_bytes();
    let items = binary_items();
    insert(
        con,
        &key,
        &["ERROR", "0.1", "NONSCALING", "CAPACITY", "400"],
        &items,
    );
    fs.push(&key, items);

    // A filter loaded with SCANDUMP/LOADCHUNK.
    let key = format!("{tag}:loaded").into_bytes();
    let chunks = scandump(con, AUTO);
    loadchunks(con, &key, &chunks);
    let items = fs.get_mut(AUTO).items.clone();
    fs.push(&key, items);
}

// ---------------------------------------------------------------------------------------------
// DUMP payloads (CRC64, RDB lengths, `ModulePayload`, `dump`: see `common::rdb`)
// ---------------------------------------------------------------------------------------------

/// Redis module type id: 9 chars of a 64-symbol charset (6 bits each), then a
/// 10-bit encoding version.
fn module_type_id(name: &str, encver: u64) -> u64 {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert_eq!(name.len(), 9);
    let mut id = 0u64;
    for c in name.bytes() {
        let pos = CHARSET
            .iter()
            .position(|x| *x == c)
            .expect("type name char");
        id = (id << 6) | pos as u64;
    }
    (id << 10) | (encver & 1023)
}

/// A named change to a parsed payload.
type PayloadEdit = Box<dyn Fn(&mut ModulePayload)>;

fn restore(con: &mut Connection, key: &[u8], payload: &[u8]) -> redis::RedisResult<Value> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(con)
}

// Header field offsets (see `BloomChain::encode_header`).
const H_VERSION: usize = 4;
const H_RESERVED: usize = 5;
const H_TOTAL: usize = 8;
const H_EXPANSION: usize = 16;
const H_NLINKS: usize = 20;
const H_FIXED: usize = 24;
const H_LINK: usize = 40;
const L_ENTRIES: usize = 0;
const L_ITEMS: usize = 8;
const L_ERROR: usize = 16;
const L_BITS: usize = 24;
const L_HASHES: usize = 32;
const L_LAYOUT: usize = 36;
const L_RESERVED: usize = 37;

fn link_at(i: usize, field: usize) -> usize {
    H_FIXED + H_LINK * i + field
}

/// Whether a change to header byte `i` can leave a consistent header: only a link's
/// capacity, error rate and hash count, and the expansion, may take other valid values.
/// Magic, version, reserved bytes, link count, layout and the item counters (they must
/// add up) never can; nor can the bit count when the bit arrays follow (RDB), since
/// the buffer lengths must match it.
fn header_byte_may_vary(i: usize, bits_may_vary: bool) -> bool {
    if i < H_FIXED {
        return (H_EXPANSION..H_EXPANSION + 4).contains(&i);
    }
    let f = (i - H_FIXED) % H_LINK;
    (L_ENTRIES..L_ENTRIES + 8).contains(&f)
        || (L_ERROR..L_ERROR + 8).contains(&f)
        || (L_HASHES..L_HASHES + 4).contains(&f)
        || (bits_may_vary && (L_BITS..L_BITS + 8).contains(&f))
}

/// Corrupted variants of a valid two-link header: `(what, header)`. Every one must
/// be refused by both RESTORE and LOADCHUNK.
fn bad_headers(h: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    assert_eq!(&h[..4], b"FBbf");
    assert_eq!(h.len(), H_FIXED + 2 * H_LINK, "expected a two-link header");
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let mut edit = |what: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = h.to_vec();
        f(&mut v);
        out.push((what, v));
    };
    edit("empty header", &|v| v.clear());
    edit("truncated to 3 bytes", &|v| v.truncate(3));
    edit("truncated to the fixed part", &|v| v.truncate(H_FIXED));
    edit("truncated by one byte", &|v| {
        v.pop();
    });
    edit("extended by one byte", &|v| v.push(0));
    edit("extended by a whole link record", &|v| {
        v.extend_from_slice(&[0u8; H_LINK])
    });
    edit("wrong magic", &|v| v[0] = b'X');
    edit("RedisBloom-style header (no magic)", &|v| {
        v[..4].copy_from_slice(&[0, 0, 0, 0])
    });
    edit("header version 2", &|v| v[H_VERSION] = 2);
    edit("header version 0", &|v| v[H_VERSION] = 0);
    edit("reserved byte set", &|v| v[H_RESERVED + 1] = 1);
    edit("zero links", &|v| put_u32(v, H_NLINKS, 0));
    edit("u32::MAX links", &|v| put_u32(v, H_NLINKS, u32::MAX));
    edit("three links claimed, two present", &|v| {
        put_u32(v, H_NLINKS, 3)
    });
    edit("one link claimed, two present", &|v| {
        put_u32(v, H_NLINKS, 1)
    });
    edit("expansion above 32768", &|v| put_u32(v, H_EXPANSION, 40000));
    edit("non-scaling with two links", &|v| {
        put_u32(v, H_EXPANSION, 0)
    });
    edit("total items do not add up", &|v| {
        let t = get_u64(v, H_TOTAL);
        put_u64(v, H_TOTAL, t + 1)
    });
    edit("link items do not add up", &|v| {
        let t = get_u64(v, link_at(1, L_ITEMS));
        put_u64(v, link_at(1, L_ITEMS), t.saturating_sub(1))
    });
    edit("items above capacity", &|v| {
        let e = get_u64(v, link_at(0, L_ENTRIES));
        put_u64(v, link_at(0, L_ITEMS), e + 1);
        let other = get_u64(v, link_at(1, L_ITEMS));
        put_u64(v, H_TOTAL, e + 1 + other)
    });
    edit("zero capacity", &|v| {
        put_u64(v, link_at(0, L_ENTRIES), 0);
        put_u64(v, link_at(0, L_ITEMS), 0);
        let other = get_u64(v, link_at(1, L_ITEMS));
        put_u64(v, H_TOTAL, other)
    });
    edit("error rate 0", &|v| {
        put_u64(v, link_at(0, L_ERROR), 0f64.to_bits())
    });
    edit("error rate 1", &|v| {
        put_u64(v, link_at(0, L_ERROR), 1f64.to_bits())
    });
    edit("error rate NaN", &|v| {
        put_u64(v, link_at(0, L_ERROR), f64::NAN.to_bits())
    });
    edit("error rate negative", &|v| {
        put_u64(v, link_at(1, L_ERROR), (-0.01f64).to_bits())
    });
    edit("zero bits", &|v| put_u64(v, link_at(0, L_BITS), 0));
    edit("bits not a multiple of 64", &|v| {
        let b = get_u64(v, link_at(0, L_BITS));
        put_u64(v, link_at(0, L_BITS), b + 8)
    });
    edit("2^61 bits", &|v| put_u64(v, link_at(0, L_BITS), 1 << 61));
    edit("2^63 bits", &|v| put_u64(v, link_at(1, L_BITS), 1 << 63));
    edit("u64::MAX - 63 bits", &|v| {
        put_u64(v, link_at(1, L_BITS), u64::MAX - 63)
    });
    edit("a 2^40-byte link", &|v| {
        put_u64(v, link_at(1, L_BITS), 1 << 43)
    });
    edit("zero hashes", &|v| put_u32(v, link_at(0, L_HASHES), 0));
    edit("129 hashes", &|v| put_u32(v, link_at(1, L_HASHES), 129));
    edit("u32::MAX hashes", &|v| {
        put_u32(v, link_at(1, L_HASHES), u32::MAX)
    });
    edit("unknown layout", &|v| v[link_at(0, L_LAYOUT)] = 1);
    edit("link reserved byte set", &|v| {
        v[link_at(1, L_RESERVED + 2)] = 0x80
    });
    out
}

// ---------------------------------------------------------------------------------------------
// 1. RDB: SAVE + restart, SHUTDOWN SAVE + start
// ---------------------------------------------------------------------------------------------

#[test]
fn rdb_save_and_restart_restores_every_filter() {
    let mut s = Server::start();
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    ok(&mut con, &[b"SAVE"]);
    drop(con);

    s.restart();
    let mut con = s.conn();
    assert_eq!(q::<i64>(&mut con, &[b"DBSIZE"]), fs.list.len() as i64);
    assert_restored(&mut con, &fs, &snap, "SAVE + restart");
    assert_eq!(
        db_digest(&mut con),
        digest,
        "DEBUG DIGEST after SAVE + restart"
    );

    // The loaded filters keep working: they grow, and survive a second cycle.
    more_writes(&mut con, &mut fs, "after-restart");
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    drop(con);
    s.restart_with(Stop::ShutdownSave);
    let mut con = s.conn();
    assert_restored(&mut con, &fs, &snap, "SHUTDOWN SAVE + start");
    assert_eq!(db_digest(&mut con), digest);
    assert!(
        !s.log().contains("refusing"),
        "a payload was refused on load"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. DEBUG RELOAD
// ---------------------------------------------------------------------------------------------

#[test]
fn debug_reload_restores_every_filter() {
    let s = Server::start();
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs, &snap, "DEBUG RELOAD");
    assert_eq!(db_digest(&mut con), digest);

    // With uncompressed string buffers too.
    config_set(&mut con, "rdbcompression", "no");
    more_writes(&mut con, &mut fs, "reload2");
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs, &snap, "DEBUG RELOAD (rdbcompression no)");
    assert_eq!(db_digest(&mut con), digest);
}

// ---------------------------------------------------------------------------------------------
// 3. AOF
// ---------------------------------------------------------------------------------------------

#[test]
fn aof_rewrite_then_more_writes_replays_everything() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, true);

    // Number of LOADCHUNK commands the rewrite must emit: a header plus every chunk.
    let mut expected_loadchunks = 0;
    for f in &fs.list {
        expected_loadchunks += scandump(&mut con, &f.key).len();
    }
    bgrewriteaof(&s);
    let bases = aof_files(&s, "b");
    assert_eq!(bases.len(), 1);
    let base = &bases[0];
    assert_eq!(
        count_occurrences(base, b"$12\r\nBF.LOADCHUNK\r\n"),
        expected_loadchunks,
        "the base AOF holds one BF.LOADCHUNK per header and chunk"
    );
    assert!(
        count_occurrences(base, b"\r\n$16777216\r\n") >= 1,
        "the big filter's first chunk is a 16 MiB bulk"
    );
    assert!(count_occurrences(base, BINKEY) >= 1);

    // Writes after the rewrite go to the incr file.
    more_writes(&mut con, &mut fs, "after-rewrite");
    let incr: Vec<u8> = aof_files(&s, "i").concat();
    assert!(count_occurrences(&incr, b"BF.MADD") >= 1);

    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_restored(&mut con, &fs, &snap, "AOF (rewrite + incr) replay");
    assert_eq!(db_digest(&mut con), digest);
}

#[test]
fn aof_command_log_replay_keeps_creation_parameters() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, false);

    // Auto-creation with non-default configs.
    config_set(&mut con, "bf.bf-error-rate", "0.05");
    config_set(&mut con, "bf.bf-initial-size", "33");
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"cfg:add", b"a"]), 1);
    let items = text_items("cfg-add:", 50);
    madd(&mut con, b"cfg:add", &items);
    let mut all = vec![b"a".to_vec()];
    all.extend(items);
    fs.push(b"cfg:add", all);

    let items = text_items("cfg-madd:", 20);
    madd(&mut con, b"cfg:madd", &items);
    fs.push(b"cfg:madd", items);

    let items = text_items("cfg-insert:", 40);
    insert(&mut con, b"cfg:insert", &["EXPANSION", "7"], &items);
    fs.push(b"cfg:insert", items);

    config_set(&mut con, "bf.bf-expansion-factor", "0");
    let items = text_items("cfg-ns:", 30);
    madd(&mut con, b"cfg:nonscaling", &items);
    fs.push(b"cfg:nonscaling", items);

    config_set(&mut con, "bf.bf-expansion-factor", "4");
    let items = text_items("cfg-exp4:", 100);
    madd(&mut con, b"cfg:exp4", &items);
    fs.push(b"cfg:exp4", items);

    let chunks = scandump(&mut con, SCALING);
    loadchunks(&mut con, b"cfg:loaded", &chunks);
    let items = fs.get_mut(SCALING).items.clone();
    fs.push(b"cfg:loaded", items);

    // What the primary built.
    assert_eq!(
        bf_debug(&mut con, b"cfg:add")[1],
        "bytes:32 bits:256 hashes:6 hashwidth:64 capacity:33 size:33 ratio:0.025"
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:nonscaling", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:exp4", "EXPANSION"),
        Value::Int(4)
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:insert", "EXPANSION"),
        Value::Int(7)
    );

    // No rewrite ran: everything is in the command log (auto-creation included, as
    // explicit BF.RESERVE commands), nothing in a base file.
    let incr: Vec<u8> = aof_files(&s, "i").concat();
    assert!(count_occurrences(&incr, b"BF.RESERVE") >= 1);
    for base in aof_files(&s, "b") {
        assert_eq!(count_occurrences(&base, b"BF."), 0);
    }

    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    drop(con);

    // CONFIG SET is not persisted: the restarted server has the default configs.
    s.restart();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut con, "bf.bf-expansion-factor"), "2");
    assert_restored(&mut con, &fs, &snap, "AOF command log replay");
    assert_eq!(db_digest(&mut con), digest);
    let d = bf_debug(&mut con, b"cfg:add");
    assert!(
        d[1].contains("capacity:33") && d[1].contains("ratio:0.025"),
        "{d:?}"
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:nonscaling", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:nonscaling", "CAPACITY"),
        Value::Int(33)
    );
}

/// BF.RESERVE without EXPANSION takes the expansion from `bf-expansion-factor`; the
/// AOF must record the value used, not the command as typed.
#[test]
fn aof_replay_of_reserve_keeps_the_configured_expansion() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    let mut con = s.conn();
    config_set(&mut con, "bf.bf-expansion-factor", "4");
    reserve(&mut con, b"r:exp4", &["0.01", "10"]);
    let items = text_items("r4:", 30);
    madd(&mut con, b"r:exp4", &items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    reserve(&mut con, b"r:ns", &["0.01", "10"]);
    assert_eq!(
        bf_info_field(&mut con, b"r:exp4", "EXPANSION"),
        Value::Int(4)
    );
    assert_eq!(bf_info_field(&mut con, b"r:ns", "EXPANSION"), Value::Nil);
    // A layout taken from bf.bf-layout is recorded too (the restarted server
    // starts with the default, classic).
    config_set(&mut con, "bf.bf-layout", "blocked");
    let blocked = text_items("rb:", 30);
    madd(&mut con, b"r:blocked", &blocked);
    let mut fs = Filters::default();
    fs.push(b"r:exp4", items);
    fs.push(b"r:ns", Vec::new());
    fs.push(b"r:blocked", blocked);
    let snap = snapshot(&mut con, &fs);
    drop(con);

    s.restart();
    let mut con = s.conn();
    assert_restored(
        &mut con,
        &fs,
        &snap,
        "AOF replay of BF.RESERVE with defaults",
    );
}

// ---------------------------------------------------------------------------------------------
// 4. COPY
// ---------------------------------------------------------------------------------------------

#[test]
fn copy_makes_independent_filters() {
    let s = Server::start();
    let mut con = s.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let mut dst = b"copy:".to_vec();
        dst.extend_from_slice(&f.key);
        assert_eq!(q::<i64>(&mut con, &[b"COPY", &f.key, &dst]), 1);
        assert_same_key(&mut con, &f.key, &dst, &f.items, "COPY");
    }

    // The copy is independent: writes to it do not reach the source.
    let extra = text_items("copy-only:", 500);
    madd(&mut con, b"copy:fs:scaling", &extra);
    madd(&mut con, b"copy:fs:empty", &extra);
    assert_ne!(
        digest_value(&mut con, b"copy:fs:scaling"),
        digest_value(&mut con, SCALING)
    );
    assert_restored(&mut con, &fs, &snap, "sources after writing to the copies");
    // And deleting the source leaves the copy intact.
    assert_eq!(q::<i64>(&mut con, &[b"COPY", EXP1, b"copy2:exp1"]), 1);
    assert_eq!(q::<i64>(&mut con, &[b"DEL", EXP1]), 1);
    assert_members(
        &mut con,
        b"copy2:exp1",
        &fs.list[3].items,
        "copy of a deleted source",
    );
    assert_state_eq(
        &snap.states[3].1,
        &key_state(&mut con, b"copy2:exp1"),
        "copy2:exp1",
    );

    // Without REPLACE an existing destination is left alone.
    let before = key_state(&mut con, b"copy:fs:auto");
    assert_eq!(q::<i64>(&mut con, &[b"COPY", SCALING, b"copy:fs:auto"]), 0);
    assert_state_eq(
        &before,
        &key_state(&mut con, b"copy:fs:auto"),
        "copy:fs:auto",
    );

    // COPY ... REPLACE over an existing filter and over a string.
    assert_eq!(
        q::<i64>(&mut con, &[b"COPY", SCALING, b"copy:fs:auto", b"REPLACE"]),
        1
    );
    assert_state_eq(
        &snap.states[0].1,
        &key_state(&mut con, b"copy:fs:auto"),
        "copy:fs:auto",
    );
    ok(&mut con, &[b"SET", b"a-string", b"x"]);
    assert_eq!(
        q::<i64>(&mut con, &[b"COPY", NONSCALING, b"a-string", b"REPLACE"]),
        1
    );
    assert_state_eq(
        &snap.states[1].1,
        &key_state(&mut con, b"a-string"),
        "a-string",
    );

    // Into another database.
    assert_eq!(
        q::<i64>(&mut con, &[b"COPY", INSERTED, b"in-db1", b"DB", b"1"]),
        1
    );
    let mut con1 = s.conn();
    ok(&mut con1, &[b"SELECT", b"1"]);
    assert_members(&mut con1, b"in-db1", &fs.list[4].items, "COPY into DB 1");
    assert_state_eq(
        &snap.states[4].1,
        &key_state(&mut con1, b"in-db1"),
        "in-db1",
    );

    // Copies are real values: they persist.
    let fs_copies = {
        let mut c = Filters::default();
        c.push(b"copy:fs:auto", fs.list[0].items.clone());
        c.push(b"a-string", fs.list[1].items.clone());
        c.push(b"copy2:exp1", fs.list[3].items.clone());
        c.push(b"copy:fs:big", fs.list[7].items.clone());
        c
    };
    let snap2 = snapshot(&mut con, &fs_copies);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs_copies, &snap2, "copies after DEBUG RELOAD");
}

// ---------------------------------------------------------------------------------------------
// 5. DUMP / RESTORE
// ---------------------------------------------------------------------------------------------

#[test]
fn dump_restore_into_new_keys_and_other_servers() {
    let s = Server::start();
    let other = Server::start();
    let mut con = s.conn();
    let mut ocon = other.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let payload = dump(&mut con, &f.key);
        let mut dst = b"restored:".to_vec();
        dst.extend_from_slice(&f.key);
        assert_eq!(restore(&mut con, &dst, &payload).ok(), Some(Value::Okay));
        assert_same_key(&mut con, &f.key, &dst, &f.items, "RESTORE");
        // The same payload on another server.
        assert_eq!(restore(&mut ocon, &f.key, &payload).ok(), Some(Value::Okay));
        assert_same_filter(
            &mut con,
            &f.key,
            &mut ocon,
            &f.key,
            &f.items,
            "RESTORE elsewhere",
        );
        // An existing key needs REPLACE.
        assert_eq!(
            err_text(restore(&mut con, &dst, &payload)),
            "BUSYKEY Target key name already exists."
        );
    }

    // RESTORE ... REPLACE over another filter and over a string.
    let payload = dump(&mut con, EXP1);
    let r: Value = redis::cmd("RESTORE")
        .arg(b"restored:fs:scaling")
        .arg(0)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    assert_same_key(
        &mut con,
        EXP1,
        b"restored:fs:scaling",
        &fs.list[3].items,
        "REPLACE",
    );
    ok(&mut con, &[b"SET", b"str", b"v"]);
    let r: Value = redis::cmd("RESTORE")
        .arg(b"str")
        .arg(0)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    assert_same_key(
        &mut con,
        EXP1,
        b"str",
        &fs.list[3].items,
        "REPLACE over a string",
    );

    // With a TTL (the digest of a volatile key includes the expire: compare after PERSIST).
    let r: Value = redis::cmd("RESTORE")
        .arg(b"with-ttl")
        .arg(100_000)
        .arg(&payload)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    let pttl: i64 = q(&mut con, &[b"PTTL", b"with-ttl"]);
    assert!(pttl > 0 && pttl <= 100_000, "PTTL {pttl}");
    assert_eq!(q::<i64>(&mut con, &[b"PERSIST", b"with-ttl"]), 1);
    assert_same_key(
        &mut con,
        EXP1,
        b"with-ttl",
        &fs.list[3].items,
        "RESTORE with TTL",
    );

    // Uncompressed payloads restore to the same filter.
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, SCALING);
    ModulePayload::parse(&raw);
    assert_eq!(restore(&mut ocon, b"raw", &raw).ok(), Some(Value::Okay));
    assert_same_filter(
        &mut con,
        SCALING,
        &mut ocon,
        b"raw",
        &fs.list[0].items,
        "raw DUMP",
    );

    assert_restored(&mut con, &fs, &snap, "sources after DUMP");
}

// ---------------------------------------------------------------------------------------------
// 6. SCANDUMP / LOADCHUNK
// ---------------------------------------------------------------------------------------------

/// The data chunk lengths SCANDUMP must produce for links of these sizes.
fn expected_chunk_lens(links: &[u64]) -> Vec<usize> {
    let mut out = Vec::new();
    for &b in links {
        let mut left = b;
        while left > 0 {
            let n = left.min(CHUNK);
            out.push(n as usize);
            left -= n;
        }
    }
    out
}

#[test]
fn scandump_loadchunk_round_trip() {
    let s = Server::start();
    let other = Server::start();
    let mut con = s.conn();
    let mut ocon = other.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let what = format!(
            "SCANDUMP/LOADCHUNK of {:?}",
            String::from_utf8_lossy(&f.key)
        );
        let chunks = scandump(&mut con, &f.key);
        let links = link_bytes(&mut con, &f.key);

        // Header first, then chunks that never span links, at most 16 MiB each.
        assert_eq!(chunks[0].0, 1, "{what}");
        let header = &chunks[0].1;
        assert_eq!(&header[..4], b"FBbf");
        assert_eq!(header.len(), H_FIXED + H_LINK * links.len(), "{what}");
        let lens: Vec<usize> = chunks[1..].iter().map(|c| c.1.len()).collect();
        assert_eq!(lens, expected_chunk_lens(&links), "{what}");
        let mut it = 1i64;
        for (next, data) in &chunks[1..] {
            assert_eq!(*next, it + data.len() as i64, "{what}: iterator");
            it = *next;
        }
        // Past the end: [0, ""].
        let (z, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(&f.key)
            .arg(it)
            .query(&mut con)
            .unwrap();
        assert_eq!((z, data.len()), (0, 0));

        // In order, into a new key.
        let mut dst = b"loaded:".to_vec();
        dst.extend_from_slice(&f.key);
        loadchunks(&mut con, &dst, &chunks);
        assert_same_key(&mut con, &f.key, &dst, &f.items, &what);

        // Data chunks in reverse order (they are positional), into another server.
        let mut reversed = vec![chunks[0].clone()];
        reversed.extend(chunks[1..].iter().rev().cloned());
        loadchunks(&mut ocon, &f.key, &reversed);
        assert_same_filter(&mut con, &f.key, &mut ocon, &f.key, &f.items, &what);
    }

    // The big filter: one link, two chunks of 16 MiB and the rest.
    let links = link_bytes(&mut con, BIG);
    let chunks = scandump(&mut con, BIG);
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[1].1.len(), 16_777_216);
    assert_eq!(chunks[2].1.len() as u64, links[0] - CHUNK);
    assert_eq!(chunks[1].0, 1 + 16_777_216);

    // Smaller pieces at arbitrary positions work too (a chunk is any byte range of
    // one link): load the multi-link scaling filter in 1000-byte pieces, shuffled.
    let chunks = scandump(&mut con, SCALING);
    let mut pieces: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut offset = 0i64;
    for (_, data) in &chunks[1..] {
        for p in data.chunks(1000) {
            offset += p.len() as i64;
            pieces.push((offset + 1, p.to_vec()));
        }
    }
    // A deterministic shuffle: odd positions first, then even ones, backwards.
    let mut order: Vec<usize> = (0..pieces.len()).filter(|i| i % 2 == 1).collect();
    order.extend((0..pieces.len()).filter(|i| i % 2 == 0).rev());
    let mut shuffled = vec![chunks[0].clone()];
    shuffled.extend(order.iter().map(|&i| pieces[i].clone()));
    loadchunks(&mut con, b"pieces", &shuffled);
    assert_same_key(
        &mut con,
        SCALING,
        b"pieces",
        &fs.list[0].items,
        "1000-byte pieces",
    );

    // A header alone gives an empty filter of the same shape.
    loadchunks(&mut con, b"shape-only", &chunks[..1]);
    assert_eq!(
        bf_debug(&mut con, b"shape-only"),
        bf_debug(&mut con, SCALING)
    );
    assert_eq!(
        mexists(&mut con, b"shape-only", &fs.list[0].items[..100]),
        vec![0; 100]
    );

    assert_restored(&mut con, &fs, &snap, "sources after SCANDUMP");
}

// ---------------------------------------------------------------------------------------------
// 7. Replication
// ---------------------------------------------------------------------------------------------

/// Every key of `keys` is the same filter on both servers, and the datasets are equal.
fn assert_replica_matches(primary: &Server, replica: &Server, fs: &Filters, what: &str) {
    primary.wait_for_offset(replica);
    let mut p = primary.conn();
    let mut r = replica.conn();
    for f in &fs.list {
        assert_same_filter(&mut p, &f.key, &mut r, &f.key, &f.items, what);
    }
    assert_eq!(
        q::<i64>(&mut p, &[b"DBSIZE"]),
        q::<i64>(&mut r, &[b"DBSIZE"]),
        "{what}: DBSIZE"
    );
    assert_eq!(primary.digest(), replica.digest(), "{what}: DEBUG DIGEST");
}

#[test]
fn replica_full_sync_and_streamed_writes() {
    let primary = Server::start();
    let mut con = primary.conn();
    let mut fs = build_filters(&mut con, true);

    // Non-default creation defaults on the primary only (the replica keeps defaults).
    config_set(&mut con, "bf.bf-error-rate", "0.05");
    config_set(&mut con, "bf.bf-initial-size", "33");
    config_set(&mut con, "bf.bf-expansion-factor", "3");
    let items = text_items("pre-sync-auto:", 80);
    madd(&mut con, b"pre:auto", &items);
    fs.push(b"pre:auto", items);

    // Initial full sync.
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    assert_replica_matches(&primary, &replica, &fs, "full sync");
    let mut rcon = replica.conn();
    assert_eq!(config_get(&mut rcon, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut rcon, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut rcon, "bf.bf-expansion-factor"), "2");

    // Streamed writes: every write command.
    reserve(&mut con, b"w:reserve", &["0.02", "70", "EXPANSION", "3"]);
    reserve(&mut con, b"w:reserve-ns", &["0.003", "40", "NONSCALING"]);
    reserve(
        &mut con,
        b"w:reserve-exp0",
        &["0.01", "40", "EXPANSION", "0"],
    );
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"w:reserve", b"one"]), 1);
    let mut items = vec![b"one".to_vec()];
    let more = text_items("w-reserve:", 400);
    madd(&mut con, b"w:reserve", &more);
    items.extend(more);
    fs.push(b"w:reserve", items);

    let items = text_items("w-ns:", 40);
    madd(&mut con, b"w:reserve-ns", &items);
    // Full: the next new item is refused and nothing is replicated for it.
    let r = q_array(
        &mut con,
        &[b"BF.MADD", b"w:reserve-ns", b"w-ns:0", b"overflow-1", b"x"],
    );
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        value_err_text(&r[1]).as_deref(),
        Some("ERR non scaling filter is full")
    );
    fs.push(b"w:reserve-ns", items);
    fs.push(b"w:reserve-exp0", Vec::new());

    let items = text_items("w-insert:", 300);
    insert(
        &mut con,
        b"w:insert",
        &["CAPACITY", "40", "ERROR", "0.03", "EXPANSION", "2"],
        &items,
    );
    fs.push(b"w:insert", items);
    let items = binary_items();
    insert(
        &mut con,
        b"w:insert-ns",
        &["NONSCALING", "CAPACITY", "300"],
        &items,
    );
    fs.push(b"w:insert-ns", items);
    let more = text_items("w-nocreate:", 100);
    insert(&mut con, b"w:insert", &["NOCREATE"], &more);
    fs.get_mut(b"w:insert").items.extend(more);
    assert_eq!(
        err_text(
            redis::cmd("BF.INSERT")
                .arg("w:missing")
                .arg("NOCREATE")
                .arg("ITEMS")
                .arg("a")
                .query::<Value>(&mut con)
        ),
        "ERR not found"
    );

    // LOADCHUNK into a new key.
    let chunks = scandump(&mut con, SCALING);
    loadchunks(&mut con, b"w:loaded", &chunks);
    fs.push(b"w:loaded", fs.list[0].items.clone());
    let chunks = scandump(&mut con, BIG);
    loadchunks(&mut con, b"w:loaded-big", &chunks);
    fs.push(b"w:loaded-big", fs.list[7].items.clone());

    // Auto-creation with the primary's non-default configs (error 0.05, 33, 3).
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"w:auto-add", b"a"]), 1);
    fs.push(b"w:auto-add", vec![b"a".to_vec()]);
    let items = text_items("w-auto-madd:", 200);
    madd(&mut con, b"w:auto-madd", &items);
    fs.push(b"w:auto-madd", items);
    let items = text_items("w-auto-insert:", 50);
    insert(&mut con, b"w:auto-insert", &[], &items);
    fs.push(b"w:auto-insert", items);
    let items = text_items("w-auto-insert-cap:", 50);
    insert(&mut con, b"w:auto-insert-cap", &["CAPACITY", "20"], &items);
    fs.push(b"w:auto-insert-cap", items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    let items = text_items("w-auto-ns:", 20);
    madd(&mut con, b"w:auto-ns", &items);
    fs.push(b"w:auto-ns", items);
    assert_eq!(
        bf_debug(&mut con, b"w:auto-add")[1],
        "bytes:32 bits:256 hashes:6 hashwidth:64 capacity:33 size:1 ratio:0.025"
    );

    // More items into existing filters (new links on both sides), COPY, RESTORE, DEL.
    let more = text_items("w-scaling-more:", 2000);
    madd(&mut con, SCALING, &more);
    fs.get_mut(SCALING).items.extend(more);
    assert_eq!(q::<i64>(&mut con, &[b"COPY", EXP1, b"w:copy"]), 1);
    fs.push(b"w:copy", fs.list[3].items.clone());
    let payload = dump(&mut con, INSERTED);
    assert_eq!(
        restore(&mut con, b"w:restored", &payload).ok(),
        Some(Value::Okay)
    );
    fs.push(b"w:restored", fs.list[4].items.clone());
    ok(&mut con, &[b"SET", b"w:deleted", b"x"]);
    assert_eq!(q::<i64>(&mut con, &[b"DEL", b"w:deleted"]), 1);

    // Auto-creation inside MULTI/EXEC and inside a Lua script (config defaults still
    // 0.05 / 33, expansion now 0: non-scaling).
    config_set(&mut con, "bf.bf-expansion-factor", "3");
    let items = text_items("w-multi:", 40);
    let mut tx = redis::pipe();
    tx.atomic()
        .cmd("BF.ADD")
        .arg("w:multi-add")
        .arg(&items[0])
        .cmd("BF.MADD")
        .arg("w:multi-madd")
        .arg(&items[1..]);
    let _: Value = tx.query(&mut con).expect("MULTI/EXEC");
    fs.push(b"w:multi-add", items[..1].to_vec());
    fs.push(b"w:multi-madd", items[1..].to_vec());
    let items = text_items("w-lua:", 60);
    let _: Value = redis::cmd("EVAL")
        .arg("for i = 1, #ARGV do redis.call('BF.ADD', KEYS[1], ARGV[i]) end return 1")
        .arg(1)
        .arg("w:lua")
        .arg(&items)
        .query(&mut con)
        .expect("EVAL");
    fs.push(b"w:lua", items);

    assert_replica_matches(&primary, &replica, &fs, "streamed writes");
    let mut rcon = replica.conn();
    let d = bf_debug(&mut rcon, b"w:auto-madd");
    assert!(
        d[1].contains("capacity:33") && d[1].contains("ratio:0.025"),
        "{d:?}"
    );
    assert!(d.len() >= 3, "{d:?}");
    assert_eq!(
        bf_info_field(&mut rcon, b"w:auto-ns", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut rcon, b"w:auto-madd", "EXPANSION"),
        Value::Int(3)
    );
}

/// BF.RESERVE without EXPANSION takes the expansion from `bf-expansion-factor`; a
/// replica with another default must build the same filter.
#[test]
fn replica_of_reserve_keeps_the_primary_expansion_default() {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    config_set(&mut con, "bf.bf-expansion-factor", "4");
    reserve(&mut con, b"r:exp4", &["0.01", "10"]);
    let items = text_items("r4:", 30);
    madd(&mut con, b"r:exp4", &items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    reserve(&mut con, b"r:ns", &["0.01", "10"]);
    assert_eq!(
        bf_info_field(&mut con, b"r:exp4", "EXPANSION"),
        Value::Int(4)
    );
    assert_eq!(bf_info_field(&mut con, b"r:ns", "EXPANSION"), Value::Nil);
    // The layout comes from bf.bf-layout on the primary; the replica keeps classic.
    config_set(&mut con, "bf.bf-layout", "blocked");
    config_set(&mut con, "bf.bf-expansion-factor", "2");
    let blocked = text_items("rb:", 300);
    madd(&mut con, b"r:blocked", &blocked);
    assert!(bf_debug(&mut con, b"r:blocked")[1].ends_with("layout:blocked"));
    assert_eq!(config_get(&mut replica.conn(), "bf.bf-layout"), "classic");
    let mut fs = Filters::default();
    fs.push(b"r:exp4", items);
    fs.push(b"r:ns", Vec::new());
    fs.push(b"r:blocked", blocked);
    assert_replica_matches(
        &primary,
        &replica,
        &fs,
        "BF.RESERVE with a defaulted expansion",
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Hostile input
// ---------------------------------------------------------------------------------------------

/// A two-link filter (capacity 100, 300 items) and a bystander filter.
fn hostile_setup(con: &mut Connection) -> Filters {
    let mut fs = Filters::default();
    reserve(con, b"victim", &["0.01", "100"]);
    let items = text_items("victim:", 250);
    madd(con, b"victim", &items);
    assert_eq!(link_bytes(con, b"victim").len(), 2);
    fs.push(b"victim", items);
    let items = binary_items();
    madd(con, b"bystander", &items);
    fs.push(b"bystander", items);
    fs
}

#[test]
fn crc64_and_payload_layout_match_redis() {
    // Redis' own test vector (src/crc64.c).
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    let s = Server::start();
    let mut con = s.conn();
    hostile_setup(&mut con);
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, b"victim");
    let p = ModulePayload::parse(&raw);
    assert_eq!(p.module_id, module_type_id("MBbloom--", 6));
    assert_eq!(p.scheme, Some(0), "ferrobloom's own hashing");
    assert_eq!(
        p.encode(),
        raw,
        "re-encoding a parsed DUMP is byte-identical"
    );
    // One header buffer plus one buffer per link.
    let links = link_bytes(&mut con, b"victim");
    assert_eq!(p.strings.len(), 1 + links.len());
    let scan = scandump(&mut con, b"victim");
    assert_eq!(
        p.strings[0], scan[0].1,
        "the RDB header is the SCANDUMP header"
    );
    for (i, l) in links.iter().enumerate() {
        assert_eq!(p.strings[1 + i].len() as u64, *l);
        assert_eq!(p.strings[1 + i], scan[1 + i].1);
    }
}

/// RESTOREs `payload` into a fresh key: must fail with `expected` (when given) or
/// any error, leave no key behind, and leave the server and other keys alone.
fn assert_restore_refused(
    con: &mut Connection,
    n: usize,
    payload: &[u8],
    expected: Option<&str>,
    what: &str,
) {
    let key = format!("bad:{n}").into_bytes();
    let r = restore(con, &key, payload);
    let Err(e) = r else {
        panic!("RESTORE of a corrupt payload ({what}) was accepted: {r:?}");
    };
    let text = match e.into_server_errors() {
        Some(errs) if errs.len() == 1 => server_error_text(&errs[0].1),
        other => panic!("{what}: not a server error: {other:?}"),
    };
    if let Some(want) = expected {
        assert_eq!(text, want, "{what}");
    }
    ping(con);
    assert!(
        !exists(con, &key),
        "{what}: key exists after a refused RESTORE"
    );
}

#[test]
fn restore_rejects_corrupt_payloads() {
    const BAD: Option<&str> = Some("ERR Bad data format");
    let s = Server::start();
    let mut con = s.conn();
    let fs = hostile_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, b"victim");
    let good = ModulePayload::parse(&raw);
    assert_eq!(
        restore(&mut con, b"sanity", &good.encode()).ok(),
        Some(Value::Okay)
    );
    assert_same_key(
        &mut con,
        b"victim",
        b"sanity",
        &fs.list[0].items,
        "re-encoded DUMP",
    );
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };

    // Corrupt headers (valid CRC).
    for (what, h) in bad_headers(&good.strings[0]) {
        let mut p = good.clone();
        p.strings[0] = h;
        assert_restore_refused(&mut con, next(), &p.encode(), BAD, what);
    }

    // Link data that does not match the header.
    let cases: Vec<(&str, PayloadEdit)> = vec![
        (
            "link buffer 8 bytes short",
            Box::new(|p| {
                let n = p.strings[1].len();
                p.strings[1].truncate(n - 8)
            }),
        ),
        (
            "last link buffer 1 byte short",
            Box::new(|p| {
                p.strings[2].pop();
            }),
        ),
        (
            "link buffer 8 bytes long",
            Box::new(|p| p.strings[2].extend_from_slice(&[0; 8])),
        ),
        ("empty link buffer", Box::new(|p| p.strings[1].clear())),
        ("link buffers swapped", Box::new(|p| p.strings.swap(1, 2))),
        (
            "a link buffer missing",
            Box::new(|p| {
                p.strings.pop();
            }),
        ),
        ("no link buffers", Box::new(|p| p.strings.truncate(1))),
        ("no buffers at all", Box::new(|p| p.strings.clear())),
        ("an extra buffer", Box::new(|p| p.strings.push(vec![0; 8]))),
        (
            "header claims a 2^40-byte link",
            Box::new(|p| put_u64(&mut p.strings[0], link_at(1, L_BITS), 1 << 43)),
        ),
        (
            "header claims 2^61 bits",
            Box::new(|p| put_u64(&mut p.strings[0], link_at(0, L_BITS), 1 << 61)),
        ),
        (
            "header claims twice the bits",
            Box::new(|p| {
                let b = get_u64(&p.strings[0], link_at(1, L_BITS));
                put_u64(&mut p.strings[0], link_at(1, L_BITS), 2 * b)
            }),
        ),
        (
            "header claims u32::MAX links",
            Box::new(|p| put_u32(&mut p.strings[0], H_NLINKS, u32::MAX)),
        ),
    ];
    for (what, f) in &cases {
        let mut p = good.clone();
        f(&mut p);
        assert_restore_refused(&mut con, next(), &p.encode(), BAD, what);
    }

    // Raw RDB-level damage.
    let body = good.body();
    let ver = good.rdb_version;
    // A string whose length encoding claims 2^40 bytes (only a few follow).
    let mut b = vec![RDB_TYPE_MODULE_2];
    b.extend(rdb_len(good.module_id));
    b.push(MODULE_OPCODE_STRING);
    b.extend(rdb_len(1 << 40));
    b.extend_from_slice(&good.strings[0]);
    b.push(MODULE_OPCODE_EOF);
    assert_restore_refused(
        &mut con,
        next(),
        &seal(b, ver),
        BAD,
        "2^40-byte string length",
    );
    // The same claim for the link data after a valid header.
    let mut b = vec![RDB_TYPE_MODULE_2];
    b.extend(rdb_len(good.module_id));
    b.push(MODULE_OPCODE_STRING);
    b.extend(rdb_len(good.strings[0].len() as u64));
    b.extend_from_slice(&good.strings[0]);
    b.push(MODULE_OPCODE_STRING);
    b.extend(rdb_len(1 << 40));
    b.extend_from_slice(&good.strings[1]);
    b.push(MODULE_OPCODE_EOF);
    assert_restore_refused(
        &mut con,
        next(),
        &seal(b, ver),
        BAD,
        "2^40-byte link buffer",
    );
    // The header saved as an integer opcode instead of a string.
    let mut b = body.clone();
    // (after the type id and version 6's scheme: opcode UINT, value 0)
    let at = 1 + rdb_len(good.module_id).len() + 2;
    assert_eq!(b[at], MODULE_OPCODE_STRING);
    b[at] = 2;
    assert_restore_refused(&mut con, next(), &seal(b, ver), BAD, "wrong module opcode");
    // Truncated at every position (CRC recomputed). RESTORE hands the module value
    // *and* the 10-byte trailer (RDB version, CRC) to the loader, so a string cut
    // short by fewer than 10 bytes is completed from the trailer, and if the next
    // trailer byte is 0 it passes as the module EOF marker (a cut of 2 bytes always
    // loads: the last data byte becomes 0x0a, the version's 0x00 is the EOF). Such a
    // payload is well-formed for the module; it may load, as a consistent filter.
    for cut in 0..body.len() {
        let b = seal(body[..cut].to_vec(), ver);
        let what = format!("payload truncated to {cut} of {} bytes", body.len());
        if cut + 10 > body.len() {
            let key = format!("cut:{cut}").into_bytes();
            if let Ok(v) = restore(&mut con, &key, &b) {
                assert_eq!(v, Value::Okay);
                assert_eq!(
                    bf_info(&mut con, &key),
                    bf_info(&mut con, b"victim"),
                    "{what}"
                );
                assert_eq!(q::<i64>(&mut con, &[b"DEL", &key]), 1);
            }
            ping(&mut con);
            assert!(!exists(&mut con, &key));
        } else {
            assert_restore_refused(&mut con, next(), &b, BAD, &what);
        }
    }
    // Wrong CRC, and a newer RDB version.
    let mut b = good.encode();
    let last = b.len() - 1;
    b[last] ^= 1;
    let crc_err = Some("ERR DUMP payload version or checksum are wrong");
    assert_restore_refused(&mut con, next(), &b, crc_err, "bad CRC");
    assert_restore_refused(
        &mut con,
        next(),
        &seal(body.clone(), [0xff, 0x00]),
        crc_err,
        "RDB version 255",
    );

    // Every single-byte change of the header: refused, or (only where the header can
    // stay consistent) a usable filter.
    for i in 0..good.strings[0].len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut p = good.clone();
            p.strings[0][i] ^= x;
            let key = format!("flip:{i}:{x}").into_bytes();
            match restore(&mut con, &key, &p.encode()) {
                Ok(_) => {
                    assert!(
                        header_byte_may_vary(i, false),
                        "RESTORE accepted header byte {i} ^ {x:#x}"
                    );
                    let _: Value = q(&mut con, &[b"BF.INFO", &key]);
                    let _: Value = q(&mut con, &[b"BF.DEBUG", &key]);
                    let _ = mexists(&mut con, &key, &fs.list[0].items[..50]);
                    let _ = q_raw(&mut con, &[b"BF.MADD", &key, b"a", b"b", b"c"]);
                    let _ = scandump(&mut con, &key);
                    assert_eq!(q::<i64>(&mut con, &[b"DEL", &key]), 1);
                }
                Err(e) => {
                    let t = err_text::<Value>(Err(e));
                    assert_eq!(t, "ERR Bad data format", "header byte {i} ^ {x:#x}");
                    assert!(!exists(&mut con, &key));
                }
            }
            ping(&mut con);
        }
    }

    assert_eq!(q::<i64>(&mut con, &[b"DEL", b"sanity"]), 1);
    assert_eq!(q::<i64>(&mut con, &[b"DBSIZE"]), 2);
    assert_restored(&mut con, &fs, &snap, "after corrupt RESTOREs");
    assert!(s.is_alive());
}

#[test]
fn restore_rejects_foreign_type_and_encoding_version() {
    let s = Server::start();
    let mut con = s.conn();
    let fs = hostile_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    config_set(&mut con, "rdbcompression", "no");
    let good = ModulePayload::parse(&dump(&mut con, b"victim"));
    assert_eq!(good.module_id & 1023, 6, "encoding version 6");
    let cases = [
        // ferrobloom's payload read as RedisBloom's own (versions 0-4: unsigned
        // fields where strings are) or as version 5 (no scheme field).
        (
            "RedisBloom's encoding version 4",
            module_type_id("MBbloom--", 4),
        ),
        ("encoding version 0", module_type_id("MBbloom--", 0)),
        ("encoding version 5", module_type_id("MBbloom--", 5)),
        ("encoding version 7", module_type_id("MBbloom--", 7)),
        ("encoding version 1023", module_type_id("MBbloom--", 1023)),
        ("the cuckoo type", module_type_id("MBbloomCF", 6)),
        ("an unknown type", module_type_id("XXbloom--", 6)),
    ];
    for (n, (what, id)) in cases.iter().enumerate() {
        let mut p = good.clone();
        p.module_id = *id;
        assert_restore_refused(&mut con, n, &p.encode(), Some("ERR Bad data format"), what);
    }
    assert!(s.log().contains("encoding version 4"));
    assert_restored(&mut con, &fs, &snap, "after foreign RESTOREs");
}

#[test]
fn loadchunk_rejects_hostile_input() {
    const BAD: &str = "ERR received bad data";
    let s = Server::start();
    let mut con = s.conn();
    let mut fs = hostile_setup(&mut con);
    let chunks = scandump(&mut con, b"victim");
    let header = chunks[0].1.clone();
    let links = link_bytes(&mut con, b"victim");

    // Bad headers onto a missing key: refused, nothing created.
    for (what, h) in bad_headers(&header) {
        let r = loadchunk(&mut con, b"new", 1, &h);
        assert_eq!(err_text(r), BAD, "{what}");
        assert!(!exists(&mut con, b"new"), "{what}: key created");
    }
    // A header under another iterator is a data chunk for a missing key.
    assert_eq!(
        err_text(loadchunk(&mut con, b"new", 2, &header)),
        "ERR not found"
    );

    // A loaded header, then hostile data chunks.
    loadchunks(&mut con, b"dst", &chunks[..1]);
    let l0 = links[0] as i64;
    let l1 = links[1] as i64;
    let total = l0 + l1;
    let cases: Vec<(&str, i64, Vec<u8>, &str)> = vec![
        ("empty chunk", l0 + 1, Vec::new(), BAD),
        ("iterator 0", 0, vec![1; 8], BAD),
        ("negative iterator", -5, vec![1; 8], BAD),
        ("i64::MIN iterator", i64::MIN, vec![1; 8], BAD),
        ("iterator smaller than the chunk", 4, vec![1; 8], BAD),
        (
            "header (iterator 1) onto an existing key",
            1,
            header.clone(),
            BAD,
        ),
        (
            "huge iterator",
            i64::MAX,
            vec![1; 8],
            "ERR invalid offset - no link found",
        ),
        (
            "just past the end",
            total + 2,
            vec![1; 1],
            "ERR invalid offset - no link found",
        ),
        (
            "longer than the first link",
            l0 + 8 + 1,
            vec![1; l0 as usize + 8],
            "ERR invalid chunk - Too big for current filter",
        ),
        (
            "spanning two links",
            l0 + 8 + 1,
            vec![1; 16],
            "ERR invalid chunk - Too big for current filter",
        ),
        (
            "past the end of the last link",
            total + 8 + 1,
            vec![1; 16],
            "ERR invalid chunk - Too big for current filter",
        ),
    ];
    let before = key_state(&mut con, b"dst");
    for (what, it, data, want) in &cases {
        assert_eq!(
            err_text(loadchunk(&mut con, b"dst", *it, data)),
            *want,
            "{what}"
        );
        ping(&mut con);
    }
    assert_state_eq(
        &before,
        &key_state(&mut con, b"dst"),
        "refused chunks changed the filter",
    );
    // The genuine chunks still load.
    loadchunks(&mut con, b"dst", &chunks[1..]);
    assert_same_key(
        &mut con,
        b"victim",
        b"dst",
        &fs.list[0].items,
        "after hostile chunks",
    );

    // Wrong type: header and data chunk onto a string.
    ok(&mut con, &[b"SET", b"str", b"v"]);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(err_text(loadchunk(&mut con, b"str", 1, &header)), wrongtype);
    assert_eq!(
        err_text(loadchunk(&mut con, b"str", chunks[1].0, &chunks[1].1)),
        wrongtype
    );
    let v: Vec<u8> = q(&mut con, &[b"GET", b"str"]);
    assert_eq!(v, b"v");
    // Non-numeric iterator.
    assert_eq!(
        q_err(&mut con, &[b"BF.LOADCHUNK", b"dst", b"abc", b"x"]),
        "ERR Second argument must be numeric"
    );

    // Every single-byte change of the header: refused, or a usable filter.
    for i in 0..header.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut h = header.clone();
            h[i] ^= x;
            let key = format!("flip:{i}:{x}").into_bytes();
            match loadchunk(&mut con, &key, 1, &h) {
                Ok(v) => {
                    assert_eq!(v, Value::Okay);
                    assert!(
                        header_byte_may_vary(i, true),
                        "LOADCHUNK accepted header byte {i} ^ {x:#x}"
                    );
                    for (it, data) in &chunks[1..] {
                        let _ = loadchunk(&mut con, &key, *it, data);
                    }
                    let _: Value = q(&mut con, &[b"BF.INFO", &key]);
                    let _ = q_raw(&mut con, &[b"BF.MADD", &key, b"a", b"b"]);
                    let _ = scandump(&mut con, &key);
                    assert_eq!(q::<i64>(&mut con, &[b"DEL", &key]), 1);
                }
                Err(e) => {
                    assert_eq!(err_text::<Value>(Err(e)), BAD, "header byte {i} ^ {x:#x}");
                    assert!(!exists(&mut con, &key));
                }
            }
        }
    }
    ping(&mut con);
    fs.push(b"dst", fs.list[0].items.clone());
    let snap = snapshot(&mut con, &fs);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs, &snap, "after hostile LOADCHUNKs");
}

// ---------------------------------------------------------------------------------------------
// 9. Limits lowered after the filters exist
// ---------------------------------------------------------------------------------------------

/// A 5-link filter (about 1.4 KB) and a single-link filter of about 1.2 MB.
fn limits_setup(con: &mut Connection) -> Filters {
    let mut fs = Filters::default();
    reserve(con, b"lim:links", &["0.01", "10"]);
    let items = text_items("lim-links:", 200);
    madd(con, b"lim:links", &items);
    assert_eq!(bf_info_field(con, b"lim:links", "FILTERS"), Value::Int(5));
    fs.push(b"lim:links", items);
    reserve(con, b"lim:bytes", &["0.01", "1000000"]);
    let items = text_items("lim-bytes:", 100);
    madd(con, b"lim:bytes", &items);
    fs.push(b"lim:bytes", items);
    ok(con, &[b"SET", b"lim:plain", b"v"]);
    fs
}

/// `bf-max-links` and `max-filter-memory` bound what commands create and grow. Data
/// already saved must load whatever the current values are: refusing it on load loses
/// it (DEBUG RELOAD empties the dataset first; at startup Redis refuses the whole RDB
/// and exits).
#[test]
fn lowered_limits_do_not_make_saved_filters_unloadable() {
    let mut s = Server::start();
    let mut con = s.conn();
    let fs = limits_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    config_set(&mut con, "bf.bf-max-links", "2");
    config_set(&mut con, "bf.max-filter-memory", "65536");
    // The limits do apply to growth.
    let more = text_items("lim-more:", 500);
    let mut args: Vec<&[u8]> = vec![b"BF.MADD", b"lim:links"];
    args.extend(more.iter().map(|i| i.as_slice()));
    let r = q_array(&mut con, &args);
    assert!(
        r.iter().any(|v| value_err_text(v).is_some()),
        "no limit error"
    );
    let snap = Snapshot {
        states: vec![
            (b"lim:links".to_vec(), key_state(&mut con, b"lim:links")),
            snap.states[1].clone(),
        ],
    };

    let r: redis::RedisResult<Value> = redis::cmd("DEBUG").arg("RELOAD").query(&mut con);
    assert_eq!(
        r.ok(),
        Some(Value::Okay),
        "DEBUG RELOAD with lowered limits"
    );
    assert_restored(&mut con, &fs, &snap, "DEBUG RELOAD with lowered limits");

    // A restart with the lowered limits in the startup configuration.
    ok(&mut con, &[b"SAVE"]);
    drop(con);
    s.config_mut()
        .extra_args
        .extend(["--bf.bf-max-links", "2", "--bf.max-filter-memory", "65536"].map(String::from));
    s.restart();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-max-links"), "2");
    assert_restored(&mut con, &fs, &snap, "restart with lowered limits");
}

/// The same for a rewritten AOF: its `BF.LOADCHUNK` commands rebuild existing data.
#[test]
fn lowered_limits_do_not_drop_filters_from_a_rewritten_aof() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    let mut con = s.conn();
    let fs = limits_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    bgrewriteaof(&s);
    drop(con);
    s.config_mut()
        .extra_args
        .extend(["--bf.bf-max-links", "2", "--bf.max-filter-memory", "65536"].map(String::from));
    s.restart();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-max-links"), "2");
    assert_restored(&mut con, &fs, &snap, "AOF replay with lowered limits");
}

/// A replica configured with lower limits than its primary still gets the data.
#[test]
fn replica_with_lower_limits_loads_the_primary_filters() {
    let primary = Server::start();
    let mut con = primary.conn();
    let fs = limits_setup(&mut con);
    let replica = Server::builder()
        .args(&["--bf.bf-max-links", "2", "--bf.max-filter-memory", "65536"])
        .start();
    let mut rcon = replica.conn();
    let port = primary.port().to_string();
    ok(&mut rcon, &[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    drop(rcon);
    wait_until(
        Duration::from_secs(10),
        "the replica to sync or die",
        || {
            !replica.is_alive()
                || replica
                    .info_field("replication", "master_link_status")
                    .as_deref()
                    == Some("up")
        },
    );
    assert!(
        replica.is_alive(),
        "the replica died loading the primary's RDB:\n{}",
        replica.log_tail(3)
    );
    assert_replica_matches(
        &primary,
        &replica,
        &fs,
        "full sync to a replica with lower limits",
    );
}
