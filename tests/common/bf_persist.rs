//! Shared by the Bloom persistence tests (`tests/bf_persistence.rs`, `tests/bf_hostile.rs`):
//! command runners, the filter set every round trip carries and its checks (every inserted
//! item present via BF.MEXISTS in batches, never-inserted probes answering the same, BF.CARD,
//! BF.INFO, BF.DEBUG and DEBUG DIGEST-VALUE equal), DUMP payload and header helpers.

use super::rdb::*;
use super::*;
use redis::{Connection, FromRedisValue, Value};

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

// ---------------------------------------------------------------------------------------------
// The filter set and its checks
// ---------------------------------------------------------------------------------------------

pub fn text_items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

/// Every single byte value, the empty string, a 1 KiB item, all 256 byte values in
/// one item, and items that look like RESP framing.
pub fn binary_items() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    v.push(Vec::new());
    v.push((0..1024u32).map(|i| (i * 31 + 7) as u8).collect());
    v.push((0..=255u8).collect());
    v.push(b"\r\n$-1\r\n*3\r\n".to_vec());
    v.push(b"\x00\x00\x00\x00".to_vec());
    v
}

/// Items never inserted anywhere: their answers pin the bits (false positives included).
pub fn probes() -> Vec<Vec<u8>> {
    let mut v = text_items("probe:", 1500);
    v.extend(binary_probes());
    v
}

#[derive(Clone, Debug)]
pub struct Filter {
    pub key: Vec<u8>,
    pub items: Vec<Vec<u8>>,
}

#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub list: Vec<Filter>,
}

impl Filters {
    pub fn push(&mut self, key: &[u8], items: Vec<Vec<u8>>) {
        assert!(self.list.iter().all(|f| f.key != key), "duplicate key");
        self.list.push(Filter {
            key: key.to_vec(),
            items,
        });
    }

    pub fn get_mut(&mut self, key: &[u8]) -> &mut Filter {
        self.list
            .iter_mut()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no filter {:?}", String::from_utf8_lossy(key)))
    }
}

pub const SCALING: &[u8] = b"fs:scaling";
pub const NONSCALING: &[u8] = b"fs:nonscaling";
pub const AUTO: &[u8] = b"fs:auto";
pub const EXP1: &[u8] = b"fs:exp1";
pub const INSERTED: &[u8] = b"fs:insert";
pub const EMPTY: &[u8] = b"fs:empty";
pub const BINKEY: &[u8] = b"fs:bin\x00\xff\r\n key";
pub const BIG: &[u8] = b"fs:big";
pub const BLOCKED: &[u8] = b"fs:blocked";
pub const BLOCKED_NS: &[u8] = b"fs:blocked-ns";
pub const PAIRED: &[u8] = b"fs:paired";
pub const TIGHT: &[u8] = b"fs:tight";
pub const SEEDED: &[u8] = b"fs:seeded";
/// valkey-bloom's 32-byte SEED, with bytes that are not text.
pub const SEED: &[u8; 32] = b"\x00\xff\r\n seed of thirty-two bytes\x01\x02\x03";

/// Creates the standard filter set; `big` adds a ~27.6 MB single-link filter (two
/// 16 MiB chunks).
pub fn build_filters(con: &mut Connection, big: bool) -> Filters {
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
    // The paired layout (windowed filters' default), scaling to 5 links.
    reserve(con, PAIRED, &["0.01", "100", "LAYOUT", "paired"]);
    let mut items = text_items("paired:", 2000);
    items.extend(binary_items());
    madd(con, PAIRED, &items);
    fs.push(PAIRED, items);

    // valkey-bloom's options (Bloom header version 2): a tightening ratio and a
    // binary seed, scaling to 4 links; a seeded blocked filter with the default ratio.
    let items = text_items("tight:", 1500);
    let mut args: Vec<&[u8]> = vec![
        b"BF.INSERT",
        TIGHT,
        b"CAPACITY",
        b"100",
        b"TIGHTENING",
        b"0.8",
        b"SEED",
        SEED,
        b"ITEMS",
    ];
    args.extend(items.iter().map(|i| i.as_slice()));
    assert_eq!(q_array(con, &args).len(), items.len());
    fs.push(TIGHT, items);
    ok(
        con,
        &[
            b"BF.RESERVE",
            SEEDED,
            b"0.001",
            b"100",
            b"LAYOUT",
            b"blocked",
            b"SEED",
            SEED,
        ],
    );
    let mut items = text_items("seeded:", 1000);
    items.extend(binary_items());
    madd(con, SEEDED, &items);
    fs.push(SEEDED, items);

    // The set has the shapes this file claims.
    assert!(link_bytes(con, SCALING).len() >= 5);
    assert!(link_bytes(con, EXP1).len() >= 5);
    assert!(link_bytes(con, AUTO).len() >= 2);
    assert!(link_bytes(con, INSERTED).len() >= 2);
    assert!(link_bytes(con, BLOCKED).len() >= 5);
    assert!(link_bytes(con, PAIRED).len() >= 5);
    for (key, layout) in [
        (BLOCKED, " layout:blocked"),
        (BLOCKED_NS, " layout:blocked"),
        (PAIRED, " layout:paired"),
    ] {
        let debug = bf_debug(con, key);
        assert!(debug[1..].iter().all(|l| l.ends_with(layout)), "{debug:?}");
    }
    assert!(!bf_debug(con, SCALING)[1].contains("layout"));
    assert!(link_bytes(con, TIGHT).len() >= 4);
    assert!(link_bytes(con, SEEDED).len() >= 4);
    let tightening: f64 = redis::from_redis_value(bf_info_field(con, TIGHT, "TIGHTENING")).unwrap();
    assert_eq!(tightening, 0.8);
    assert_eq!(bf_info_field(con, NONSCALING, "EXPANSION"), Value::Nil);
    assert_eq!(bf_info_field(con, EXP1, "EXPANSION"), Value::Int(1));
    assert_eq!(bf_info_field(con, INSERTED, "EXPANSION"), Value::Int(3));
    fs
}

/// Everything observable about one filter.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyState {
    pub info: Value,
    pub card: i64,
    pub debug: Vec<String>,
    pub digest: String,
    pub probes: Vec<i64>,
}

/// Panics with the fields that differ (probe answers summarised) unless `a == b`.
pub fn assert_state_eq(a: &KeyState, b: &KeyState, what: &str) {
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

pub fn key_state(con: &mut Connection, key: &[u8]) -> KeyState {
    KeyState {
        info: bf_info(con, key),
        card: card(con, key),
        debug: bf_debug(con, key),
        digest: digest_value(con, key),
        probes: mexists(con, key, &probes()),
    }
}

/// Every inserted item answers 1.
pub fn assert_members(con: &mut Connection, key: &[u8], items: &[Vec<u8>], what: &str) {
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
pub struct Snapshot {
    pub states: Vec<(Vec<u8>, KeyState)>,
}

pub fn snapshot(con: &mut Connection, fs: &Filters) -> Snapshot {
    let states = fs
        .list
        .iter()
        .map(|f| (f.key.clone(), key_state(con, &f.key)))
        .collect();
    Snapshot { states }
}

/// Every filter of `fs` has every item and exactly its snapshot state.
pub fn assert_restored(con: &mut Connection, fs: &Filters, snap: &Snapshot, what: &str) {
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
pub fn assert_same_filter(
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
pub fn assert_same_key(
    con: &mut Connection,
    src: &[u8],
    dst: &[u8],
    items: &[Vec<u8>],
    what: &str,
) {
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
pub fn more_writes(con: &mut Connection, fs: &mut Filters, tag: &str) {
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
pub fn module_type_id(name: &str, encver: u64) -> u64 {
    pub const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
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
pub type PayloadEdit = Box<dyn Fn(&mut ModulePayload)>;

pub fn restore(con: &mut Connection, key: &[u8], payload: &[u8]) -> redis::RedisResult<Value> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(con)
}

// Header field offsets (see `BloomChain::encode_header`).
pub const H_VERSION: usize = 4;
pub const H_RESERVED: usize = 5;
pub const H_TOTAL: usize = 8;
pub const H_EXPANSION: usize = 16;
pub const H_NLINKS: usize = 20;
pub const H_FIXED: usize = 24;
pub const H_LINK: usize = 40;
pub const L_ENTRIES: usize = 0;
pub const L_ITEMS: usize = 8;
pub const L_ERROR: usize = 16;
pub const L_BITS: usize = 24;
pub const L_HASHES: usize = 32;
pub const L_LAYOUT: usize = 36;
pub const L_RESERVED: usize = 37;

pub fn link_at(i: usize, field: usize) -> usize {
    H_FIXED + H_LINK * i + field
}

/// Whether a change to header byte `i` can leave a consistent header: only a link's
/// capacity, error rate and hash count, and the expansion, may take other valid values.
/// Magic, version, reserved bytes, link count, layout and the item counters (they must
/// add up) never can; nor can the bit count when the bit arrays follow (RDB), since
/// the buffer lengths must match it.
pub fn header_byte_may_vary(i: usize, bits_may_vary: bool) -> bool {
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
pub fn bad_headers(h: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
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

/// Every key of `keys` is the same filter on both servers, and the datasets are equal.
pub fn assert_replica_matches(primary: &Server, replica: &Server, fs: &Filters, what: &str) {
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
