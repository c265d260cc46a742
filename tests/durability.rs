//! Durability and replication under a write load.
//!
//! A seeded generator produces a mixed stream of BF.ADD / BF.MADD / BF.INSERT and
//! CF.ADD / CF.ADDNX / CF.INSERT / CF.DEL commands on several keys: filters created
//! implicitly (with small configured defaults, so they grow new links and sub-filters
//! during the load), explicitly reserved ones, a non-scaling BF and a fixed-size CF that
//! fill up (error replies, `-1`), a CF with wide fingerprints whose counts are exact,
//! brand-new keys now and then, and deletes of live items (which start the automatic
//! compaction of multi-sub-filter cuckoo filters). A `Model` records what every
//! acknowledged reply promises.
//!
//! Crash tests `kill -9` the server in the middle of that load and restart it on the
//! same dir. A *reference* server (no persistence) receives exactly the commands the
//! crashed server acknowledged, in order, and must answer each of them exactly as the
//! crashed server did; after the restart both datasets must have the same `DEBUG
//! DIGEST` (the one command that was in flight at the kill may or may not have been
//! applied: the reference tries both). Then the restarted server is checked against the
//! model itself: every acknowledged item is a member, counts and `*.INFO` totals are
//! the acknowledged ones.
//!
//! Replication tests compare replicas with their primary reply by reply (members *and*
//! an equal number of never-added probes, so the false positives must agree too) and
//! per-key `DEBUG DIGEST-VALUE`, after a streamed load, a full sync during a load, a
//! partial resync after a broken link, and a promotion.
//!
//! A last test covers multi-item commands that a configured limit refuses in part:
//! a replica and an AOF replay must leave out exactly the refused items.
//!
//! No timing is asserted; all randomness is seeded. The whole file runs in about
//! 10-15 s on 2 cores.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::rng::Rng;
use common::*;
use redis::{Connection, ConnectionLike, Value};

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// Creation defaults of every server in this file: small, so implicitly created filters
/// grow new links / sub-filters after a few dozen items.
const SMALL_DEFAULTS: [&str; 6] = [
    "--bf.bf-initial-size",
    "50",
    "--bf.cf-initial-size",
    "64",
    "--bf.cf-expansion-factor",
    "2",
];

fn builder() -> ServerBuilder {
    Server::builder().args(&SMALL_DEFAULTS)
}

fn cmd_of(args: &[Vec<u8>]) -> redis::Cmd {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name).expect("command name"));
    for a in rest {
        c.arg(a.as_slice());
    }
    c
}

fn show_args(args: &[Vec<u8>]) -> String {
    let shown: Vec<String> = args
        .iter()
        .take(8)
        .map(|a| format!("{:?}", String::from_utf8_lossy(a)))
        .collect();
    let more = if args.len() > 8 {
        format!(" ... ({} args)", args.len())
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(" "))
}

/// Compact rendering of a reply, for comparisons and messages.
fn show(v: &Value) -> String {
    let list = |items: &[Value]| items.iter().map(show).collect::<Vec<_>>().join(",");
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => i.to_string(),
        Value::Okay => "+OK".into(),
        Value::SimpleString(s) => format!("+{s}"),
        Value::BulkString(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Value::ServerError(_) => format!("!{}", value_err_text(v).unwrap_or_default()),
        Value::Array(a) => format!("[{}]", list(a)),
        other => format!("{other:?}"),
    }
}

/// A command that must get a non-error reply.
fn raw(con: &mut Connection, args: &[Vec<u8>]) -> Value {
    let v = con
        .req_command(&cmd_of(args))
        .unwrap_or_else(|e| panic!("{}: client error {e}", show_args(args)));
    assert!(
        !matches!(v, Value::ServerError(_)),
        "{}: {}",
        show_args(args),
        show(&v)
    );
    v
}

fn strs(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("expected an integer, got {}", show(other)),
    }
}

fn ints(v: Value) -> Vec<i64> {
    match v {
        Value::Array(a) => a.iter().map(int).collect(),
        other => panic!("expected an array, got {}", show(&other)),
    }
}

const CHUNK: usize = 1000;

/// `<cmd> key items...` in chunks, one integer per item.
fn multi(con: &mut Connection, cmd: &str, key: &str, items: &[Vec<u8>]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(CHUNK) {
        let mut args = strs(&[cmd, key]);
        args.extend(chunk.iter().cloned());
        out.extend(ints(raw(con, &args)));
    }
    out
}

/// `CF.COUNT key item` for every item, pipelined.
fn cf_counts(con: &mut Connection, key: &str, items: &[Vec<u8>]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(CHUNK) {
        let mut p = redis::pipe();
        for it in chunk {
            p.cmd("CF.COUNT").arg(key).arg(it.as_slice());
        }
        let v: Vec<i64> = p.query(con).expect("CF.COUNT pipeline");
        out.extend(v);
    }
    out
}

/// `*.INFO key` as `label -> integer` (non-integer fields skipped).
fn info_ints(con: &mut Connection, cmd: &str, key: &str) -> BTreeMap<String, i64> {
    let v = raw(con, &strs(&[cmd, key]));
    let Value::Array(a) = v else {
        panic!("{cmd} {key}: {}", show(&v))
    };
    a.chunks(2)
        .filter_map(|kv| match kv {
            [Value::SimpleString(k), Value::Int(i)] => Some((k.clone(), *i)),
            _ => None,
        })
        .collect()
}

fn digest_values(con: &mut Connection, keys: &[String]) -> Vec<String> {
    let mut args = strs(&["DEBUG", "DIGEST-VALUE"]);
    args.extend(keys.iter().map(|k| k.as_bytes().to_vec()));
    match raw(con, &args) {
        Value::Array(a) => a.iter().map(show).collect(),
        other => panic!("DEBUG DIGEST-VALUE: {}", show(&other)),
    }
}

fn db_digest(con: &mut Connection) -> String {
    show(&raw(con, &strs(&["DEBUG", "DIGEST"])))
}

fn dbsize(con: &mut Connection) -> i64 {
    int(&raw(con, &strs(&["DBSIZE"])))
}

fn stat(s: &Server, section: &str, field: &str) -> i64 {
    s.info_field(section, field)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} has no integer {field}"))
}

// ---------------------------------------------------------------------------------------------
// Operations and the model of what acknowledged replies promise
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// BF.RESERVE / CF.RESERVE: `+OK` creates the key.
    Reserve,
    /// BF.ADD / BF.MADD / BF.INSERT: per item 1 = new, 0 = already present.
    BfAdd,
    /// CF.ADD / CF.ADDNX / CF.INSERT: per item 1 = one more copy.
    CfAdd,
    /// CF.DEL (or a script of them): per item 1 = one copy removed.
    CfDel,
    /// Nothing to model (CF.COMPACT).
    Other,
}

#[derive(Clone, Debug)]
struct Op {
    kind: Kind,
    key: String,
    items: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Op {
    fn new(kind: Kind, head: &[&str], items: Vec<Vec<u8>>) -> Op {
        let mut args = strs(head);
        args.extend(items.iter().cloned());
        Op {
            kind,
            key: head[1].to_string(),
            items,
            args,
        }
    }
}

/// Per-item integer replies (an error element or a top-level error gives none).
fn per_item(v: &Value) -> Vec<Option<i64>> {
    match v {
        Value::Int(i) => vec![Some(*i)],
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[derive(Clone, Default, Debug)]
struct BfModel {
    /// Every item an acknowledged reply said is a member, in first-ack order.
    items: Vec<Vec<u8>>,
    set: HashSet<Vec<u8>>,
    /// Replies of 1 (the filter's item count).
    inserted: i64,
}

#[derive(Clone, Default, Debug)]
struct CfModel {
    /// Every item ever added, in first-add order.
    items: Vec<Vec<u8>>,
    /// Acknowledged adds minus acknowledged deletes.
    net: HashMap<Vec<u8>, i64>,
    deleted: i64,
}

impl CfModel {
    fn net(&self, item: &[u8]) -> i64 {
        self.net.get(item).copied().unwrap_or(0)
    }
    fn live(&self) -> Vec<Vec<u8>> {
        self.items
            .iter()
            .filter(|i| self.net(i) > 0)
            .cloned()
            .collect()
    }
}

/// Keys whose fingerprints are wide enough (ERROR 1e-7) that counts are exact.
fn exact(key: &str) -> bool {
    key.starts_with("cf:exact")
}

#[derive(Clone, Default, Debug)]
struct Model {
    bf: BTreeMap<String, BfModel>,
    cf: BTreeMap<String, CfModel>,
}

impl Model {
    fn keys(&self) -> Vec<String> {
        self.bf.keys().chain(self.cf.keys()).cloned().collect()
    }

    fn items(&self) -> usize {
        self.bf.values().map(|m| m.items.len()).sum::<usize>()
            + self.cf.values().map(|m| m.items.len()).sum::<usize>()
    }

    /// Record what the reply `v` to `op` promises.
    fn apply(&mut self, op: &Op, v: &Value) {
        let r = per_item(v);
        match op.kind {
            Kind::Reserve => {
                if *v == Value::Okay {
                    if op.args[0].starts_with(b"BF") {
                        self.bf.entry(op.key.clone()).or_default();
                    } else {
                        self.cf.entry(op.key.clone()).or_default();
                    }
                }
            }
            Kind::BfAdd => {
                if !r.iter().any(|x| matches!(x, Some(0 | 1))) {
                    return;
                }
                let m = self.bf.entry(op.key.clone()).or_default();
                for (item, x) in op.items.iter().zip(&r) {
                    if matches!(x, Some(0 | 1)) && m.set.insert(item.clone()) {
                        m.items.push(item.clone());
                    }
                    if *x == Some(1) {
                        m.inserted += 1;
                    }
                }
            }
            Kind::CfAdd => {
                if !r.contains(&Some(1)) {
                    return;
                }
                let m = self.cf.entry(op.key.clone()).or_default();
                for (item, x) in op.items.iter().zip(&r) {
                    if *x == Some(1) {
                        let n = m.net.entry(item.clone()).or_insert_with(|| {
                            m.items.push(item.clone());
                            0
                        });
                        *n += 1;
                    }
                }
            }
            Kind::CfDel => {
                let Some(m) = self.cf.get_mut(&op.key) else {
                    assert!(op.items.is_empty(), "{}: no such key", show_args(&op.args));
                    return;
                };
                for (item, x) in op
                    .items
                    .iter()
                    .zip(r.iter().chain(std::iter::repeat(&None)))
                {
                    let net = m.net(item);
                    // The matching fingerprints in an item's buckets are at least its
                    // own live copies: deleting a live item always finds one.
                    assert!(
                        net <= 0 || *x == Some(1),
                        "{} with {net} live copies of {:?} replied {}",
                        show_args(&op.args),
                        String::from_utf8_lossy(item),
                        show(v)
                    );
                    if *x == Some(1) {
                        *m.net.entry(item.clone()).or_insert(0) -= 1;
                        m.deleted += 1;
                    }
                }
            }
            Kind::Other => {}
        }
    }
}

/// Deletes every ARGV item from KEYS[1] in one script: one command, many deletes
/// (replicated and written to the AOF as MULTI / CF.DEL ... / EXEC).
const DEL_MANY: &str = "local r = {} for i, v in ipairs(ARGV) do \
     r[i] = redis.call('CF.DEL', KEYS[1], v) end return r";

/// The seeded command generator. `fresh` numbers new items and keys, so names stay
/// unique even when a crash rolls the model back.
#[derive(Clone)]
struct Gen {
    rng: Rng,
    fresh: u64,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng(seed),
            fresh: 0,
        }
    }

    fn fresh_item(&mut self) -> Vec<u8> {
        self.fresh += 1;
        let n = self.fresh;
        let mut v = format!("item:{n}").into_bytes();
        if n.is_multiple_of(7) {
            // Binary-safe: NUL, high bytes, CRLF (the AOF is RESP).
            v.extend_from_slice(b"\x00\xff\r\n*1\r\n");
        }
        v
    }

    /// `n` items: fresh ones, and with `dup_pct`% chance each an already-acked one.
    fn items(&mut self, n: u64, dup_pct: u64, known: &[Vec<u8>]) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                if !known.is_empty() && self.rng.percent(dup_pct) {
                    known[self.rng.below(known.len() as u64) as usize].clone()
                } else {
                    self.fresh_item()
                }
            })
            .collect()
    }

    /// The filters every load starts with (explicitly reserved ones).
    fn setup() -> Vec<Op> {
        vec![
            Op::new(
                Kind::Reserve,
                &["BF.RESERVE", "bf:ns", "0.01", "400", "NONSCALING"],
                vec![],
            ),
            Op::new(
                Kind::Reserve,
                &["CF.RESERVE", "cf:exact", "300", "ERROR", "0.0000001"],
                vec![],
            ),
            Op::new(
                Kind::Reserve,
                &["CF.RESERVE", "cf:full", "64", "EXPANSION", "0"],
                vec![],
            ),
            // Its second sub-filter has more slots than one delete's compaction
            // budget, so a compaction pass can be caught half-way.
            Op::new(
                Kind::Reserve,
                &["CF.RESERVE", "cf:compact", "2048", "EXPANSION", "2"],
                vec![],
            ),
        ]
    }

    fn next_op(&mut self, m: &Model) -> Op {
        let bf_known = |k: &str| m.bf.get(k).map(|x| x.items.clone()).unwrap_or_default();
        let cf_known = |k: &str| m.cf.get(k).map(|x| x.items.clone()).unwrap_or_default();
        let pick = self.rng.below(110);
        match pick {
            0..=9 => {
                let it = self.items(1, 10, &bf_known("bf:auto"));
                Op::new(Kind::BfAdd, &["BF.ADD", "bf:auto"], it)
            }
            10..=21 => {
                let n = self.rng.range(5, 60);
                let it = self.items(n, 10, &bf_known("bf:madd"));
                Op::new(Kind::BfAdd, &["BF.MADD", "bf:madd"], it)
            }
            22..=31 => {
                let n = self.rng.range(5, 60);
                let it = self.items(n, 10, &bf_known("bf:ins"));
                Op::new(
                    Kind::BfAdd,
                    &[
                        "BF.INSERT",
                        "bf:ins",
                        "CAPACITY",
                        "300",
                        "ERROR",
                        "0.001",
                        "EXPANSION",
                        "2",
                        "ITEMS",
                    ],
                    it,
                )
            }
            32..=34 => {
                // Non-scaling, 400 items: fills up, then error elements.
                let n = self.rng.range(5, 30);
                let it = self.items(n, 5, &bf_known("bf:ns"));
                Op::new(Kind::BfAdd, &["BF.MADD", "bf:ns"], it)
            }
            35..=37 => {
                // A brand-new key, created implicitly (MULTI/EXEC in the AOF).
                self.fresh += 1;
                let n = self.rng.range(1, 20);
                let it = self.items(n, 0, &[]);
                if pick == 35 {
                    let key = format!("bf:new:{}", self.fresh);
                    Op::new(Kind::BfAdd, &["BF.MADD", &key], it)
                } else {
                    let key = format!("cf:new:{}", self.fresh);
                    Op::new(Kind::CfAdd, &["CF.INSERT", &key, "ITEMS"], it)
                }
            }
            38..=47 => {
                let it = self.items(1, 20, &cf_known("cf:auto"));
                Op::new(Kind::CfAdd, &["CF.ADD", "cf:auto"], it)
            }
            48..=52 => {
                let key = if pick.is_multiple_of(2) {
                    "cf:auto"
                } else {
                    "cf:exact"
                };
                let it = self.items(1, 30, &cf_known(key));
                Op::new(Kind::CfAdd, &["CF.ADDNX", key], it)
            }
            53..=63 => {
                let n = self.rng.range(5, 40);
                let it = self.items(n, 10, &cf_known("cf:ins"));
                Op::new(
                    Kind::CfAdd,
                    &["CF.INSERT", "cf:ins", "CAPACITY", "200", "ITEMS"],
                    it,
                )
            }
            64..=69 => {
                let it = self.items(1, 25, &cf_known("cf:exact"));
                Op::new(Kind::CfAdd, &["CF.ADD", "cf:exact"], it)
            }
            70..=74 => {
                let n = self.rng.range(2, 20);
                let it = self.items(n, 25, &cf_known("cf:exact"));
                Op::new(Kind::CfAdd, &["CF.INSERT", "cf:exact", "ITEMS"], it)
            }
            75..=77 => {
                // Fixed size: fills up, then -1 elements (until deletes make room).
                let n = self.rng.range(5, 20);
                let it = self.items(n, 10, &cf_known("cf:full"));
                Op::new(Kind::CfAdd, &["CF.INSERT", "cf:full", "ITEMS"], it)
            }
            100..=105 => {
                // Grows big sub-filters; the deletes below start automatic compactions.
                let n = self.rng.range(20, 60);
                let it = self.items(n, 5, &cf_known("cf:compact"));
                Op::new(Kind::CfAdd, &["CF.INSERT", "cf:compact", "ITEMS"], it)
            }
            106..=108 => {
                let mut live =
                    m.cf.get("cf:compact")
                        .map(CfModel::live)
                        .unwrap_or_default();
                let n = (self.rng.range(5, 30) as usize).min(live.len());
                let mut it = Vec::with_capacity(n);
                for _ in 0..n {
                    let i = self.rng.below(live.len() as u64) as usize;
                    it.push(live.swap_remove(i));
                }
                let mut op = Op::new(Kind::CfDel, &["EVAL", DEL_MANY, "1", "cf:compact"], it);
                op.key = "cf:compact".to_string();
                op
            }
            109 => Op::new(Kind::Other, &["CF.COMPACT", "cf:compact"], vec![]),
            _ => {
                let keys = ["cf:auto", "cf:ins", "cf:exact", "cf:full"];
                let key = keys[self.rng.below(keys.len() as u64) as usize];
                let live = m.cf.get(key).map(CfModel::live).unwrap_or_default();
                if live.is_empty() {
                    let it = self.items(1, 0, &[]);
                    Op::new(Kind::CfAdd, &["CF.ADD", key], it)
                } else {
                    let item = live[self.rng.below(live.len() as u64) as usize].clone();
                    Op::new(Kind::CfDel, &["CF.DEL", key], vec![item])
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running a load
// ---------------------------------------------------------------------------------------------

/// What a writer did: the acknowledged commands with their replies, the command that
/// got no reply (the server died under it), and the state to continue from.
struct Run {
    log: Vec<(Op, Value)>,
    inflight: Option<Op>,
    error: Option<String>,
    gen: Gen,
    model: Model,
}

/// Counters the writer publishes while it runs.
#[derive(Default)]
struct Progress {
    /// Commands whose reply arrived.
    acked: AtomicUsize,
    /// Commands written to the socket (acked + at most one in flight).
    sent: AtomicUsize,
    /// Ask the writer to stop after its current command.
    stop: AtomicBool,
}

/// Send `max_ops` generated commands one at a time, each after the previous reply,
/// recording every reply in the model; stop early at the first client error (the
/// server was killed) or when asked to.
fn write_load(
    con: &mut Connection,
    mut gen: Gen,
    mut model: Model,
    max_ops: usize,
    progress: &Progress,
) -> Run {
    let mut log = Vec::new();
    while log.len() < max_ops && !progress.stop.load(Ordering::SeqCst) {
        let op = gen.next_op(&model);
        progress.sent.fetch_add(1, Ordering::SeqCst);
        match con.req_command(&cmd_of(&op.args)) {
            Ok(v) => {
                model.apply(&op, &v);
                log.push((op, v));
                progress.acked.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                return Run {
                    log,
                    inflight: Some(op),
                    error: Some(e.to_string()),
                    gen,
                    model,
                }
            }
        }
    }
    Run {
        log,
        inflight: None,
        error: None,
        gen,
        model,
    }
}

/// Run the setup commands (each must succeed) and return their log.
fn setup(con: &mut Connection, model: &mut Model) -> Vec<(Op, Value)> {
    Gen::setup()
        .into_iter()
        .map(|op| {
            let v = raw(con, &op.args);
            model.apply(&op, &v);
            (op, v)
        })
        .collect()
}

/// Replay acknowledged commands on the reference server: every reply must be the one
/// the original server gave (same state, same command, same answer). Updates `truth`.
fn replay(reference: &mut Connection, truth: &mut Model, log: &[(Op, Value)], what: &str) {
    for (i, (op, v)) in log.iter().enumerate() {
        let got = reference
            .req_command(&cmd_of(&op.args))
            .unwrap_or_else(|e| panic!("{what}: replay: {e}"));
        assert_eq!(
            show(&got),
            show(v),
            "{what}: command #{i} {} replied differently on the reference",
            show_args(&op.args)
        );
        truth.apply(op, &got);
    }
}

/// Replay one command on the reference with whatever reply it gets.
fn replay_unacked(reference: &mut Connection, truth: &mut Model, op: &Op) {
    let v = reference
        .req_command(&cmd_of(&op.args))
        .expect("replay of the in-flight command");
    truth.apply(op, &v);
}

fn same_dataset(a: &mut Connection, b: &mut Connection) -> bool {
    db_digest(a) == db_digest(b)
}

/// The datasets must be equal, key by key (reports the first differing key).
fn assert_same_dataset(a: &mut Connection, b: &mut Connection, model: &Model, what: &str) {
    assert_eq!(dbsize(a), dbsize(b), "{what}: DBSIZE");
    let keys = model.keys();
    let da = digest_values(a, &keys);
    let db = digest_values(b, &keys);
    for ((k, x), y) in keys.iter().zip(&da).zip(&db) {
        assert_eq!(x, y, "{what}: DEBUG DIGEST-VALUE {k}");
    }
    assert_eq!(db_digest(a), db_digest(b), "{what}: DEBUG DIGEST");
}

/// Everything the model promises holds on this server: every acknowledged member
/// answers 1, counts are at least (exact keys: exactly) acked adds minus acked deletes,
/// deleted items of exact keys are gone, and the INFO totals are the acked ones.
fn check_model(con: &mut Connection, model: &Model, what: &str) {
    assert_eq!(
        dbsize(con),
        (model.bf.len() + model.cf.len()) as i64,
        "{what}: DBSIZE"
    );
    for (key, m) in &model.bf {
        let r = multi(con, "BF.MEXISTS", key, &m.items);
        if let Some(i) = r.iter().position(|x| *x != 1) {
            panic!(
                "{what}: {key}: acknowledged item {:?} is missing ({} of {} missing)",
                String::from_utf8_lossy(&m.items[i]),
                r.iter().filter(|x| **x != 1).count(),
                r.len()
            );
        }
        let info = info_ints(con, "BF.INFO", key);
        assert_eq!(
            info["Number of items inserted"], m.inserted,
            "{what}: {key}: BF.INFO items"
        );
        assert_eq!(
            int(&raw(con, &strs(&["BF.CARD", key]))),
            m.inserted,
            "{what}: {key}: BF.CARD"
        );
    }
    for (key, m) in &model.cf {
        let live = m.live();
        let r = multi(con, "CF.MEXISTS", key, &live);
        if let Some(i) = r.iter().position(|x| *x != 1) {
            panic!(
                "{what}: {key}: live item {:?} is missing",
                String::from_utf8_lossy(&live[i])
            );
        }
        let counts = cf_counts(con, key, &m.items);
        for (item, c) in m.items.iter().zip(&counts) {
            let net = m.net(item);
            if exact(key) {
                assert_eq!(
                    *c,
                    net,
                    "{what}: {key}: CF.COUNT {:?}",
                    String::from_utf8_lossy(item)
                );
            } else {
                assert!(
                    *c >= net,
                    "{what}: {key}: CF.COUNT {:?} = {c} < {net} acked copies",
                    String::from_utf8_lossy(item)
                );
            }
        }
        if exact(key) {
            let gone: Vec<Vec<u8>> = m.items.iter().filter(|i| m.net(i) == 0).cloned().collect();
            let r = multi(con, "CF.MEXISTS", key, &gone);
            assert!(
                r.iter().all(|x| *x == 0),
                "{what}: {key}: a deleted item is still present"
            );
        }
        let info = info_ints(con, "CF.INFO", key);
        let net_total: i64 = m.net.values().sum();
        assert_eq!(
            info["Number of items inserted"], net_total,
            "{what}: {key}: CF.INFO items"
        );
        // A finished compaction pass resets the delete counter (as RedisBloom does).
        let deleted = info["Number of items deleted"];
        assert!(
            (0..=m.deleted).contains(&deleted),
            "{what}: {key}: CF.INFO deletes {deleted}, acked {}",
            m.deleted
        );
    }
}

/// The INFO item counts are at least what the acknowledged replies alone (`acked`, the
/// writer's own model) promise; a delete in flight (a CF.DEL, or a script of many)
/// may have removed as many more as it names.
fn assert_counts_cover_acked(
    con: &mut Connection,
    acked: &Model,
    inflight: Option<&Op>,
    what: &str,
) {
    for (key, m) in &acked.bf {
        let n = info_ints(con, "BF.INFO", key)["Number of items inserted"];
        assert!(
            n >= m.inserted,
            "{what}: {key}: BF.INFO items {n} < acked {}",
            m.inserted
        );
    }
    for (key, m) in &acked.cf {
        let n = info_ints(con, "CF.INFO", key)["Number of items inserted"];
        let del_in_flight = inflight
            .filter(|op| op.kind == Kind::CfDel && op.key == *key)
            .map_or(0, |op| op.items.len() as i64);
        let want = m.net.values().sum::<i64>() - del_in_flight;
        assert!(n >= want, "{what}: {key}: CF.INFO items {n} < acked {want}");
    }
}

/// The compaction pass a cuckoo filter is in, from its SCANDUMP header (byte 7 =
/// flags, bit 0 = running; 20 = sub-filter index u32; 56 = next slot u64):
/// `Some((sub-filter, slot))` while one runs.
fn compaction(con: &mut Connection, key: &str) -> Option<(u32, u64)> {
    let v = raw(con, &strs(&["CF.SCANDUMP", key, "0"]));
    let h = match &v {
        Value::Array(a) if a.len() == 2 && a[0] == Value::Int(1) => match &a[1] {
            Value::BulkString(h) if h.len() >= 64 => h.clone(),
            _ => panic!("CF.SCANDUMP {key} 0: {}", show(&v)),
        },
        _ => panic!("CF.SCANDUMP {key} 0: {}", show(&v)),
    };
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
    (h[7] & 1 != 0).then(|| (u32_at(20), u64_at(56)))
}

/// Never-added items, as many as the key's members.
fn probes(key: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("probe:{key}:{i}").into_bytes())
        .collect()
}

/// Everything a client can ask about the modelled keys.
#[derive(PartialEq, Eq, Debug)]
struct Answers {
    per_key: BTreeMap<String, Vec<String>>,
    digest: String,
    dbsize: i64,
    /// Probes that answered 1 (false positives), over all keys.
    false_positives: usize,
}

fn answers(con: &mut Connection, model: &Model) -> Answers {
    let mut per_key = BTreeMap::new();
    let mut false_positives = 0;
    for (key, m) in &model.bf {
        let p = probes(key, m.items.len());
        let members = multi(con, "BF.MEXISTS", key, &m.items);
        let fp = multi(con, "BF.MEXISTS", key, &p);
        false_positives += fp.iter().filter(|x| **x == 1).count();
        let info = info_ints(con, "BF.INFO", key);
        let digest = digest_values(con, std::slice::from_ref(key));
        per_key.insert(
            key.clone(),
            vec![
                format!("members {members:?}"),
                format!("probes {fp:?}"),
                format!("info {info:?}"),
                format!("digest {digest:?}"),
            ],
        );
    }
    for (key, m) in &model.cf {
        let p = probes(key, m.items.len());
        let members = multi(con, "CF.MEXISTS", key, &m.items);
        let fp = multi(con, "CF.MEXISTS", key, &p);
        false_positives += fp.iter().filter(|x| **x == 1).count();
        let counts = cf_counts(con, key, &m.items);
        let probe_counts = cf_counts(con, key, &p);
        let info = info_ints(con, "CF.INFO", key);
        let digest = digest_values(con, std::slice::from_ref(key));
        per_key.insert(
            key.clone(),
            vec![
                format!("members {members:?}"),
                format!("probes {fp:?}"),
                format!("counts {counts:?}"),
                format!("probe counts {probe_counts:?}"),
                format!("info {info:?}"),
                format!("digest {digest:?}"),
            ],
        );
    }
    Answers {
        per_key,
        digest: db_digest(con),
        dbsize: dbsize(con),
        false_positives,
    }
}

/// The replica answers every membership, count and INFO query exactly like the
/// primary, for members and probes, and holds byte-identical filters. Returns the
/// number of false-positive probes (the same on both).
fn assert_same_answers(primary: &Server, replica: &Server, model: &Model, what: &str) -> usize {
    primary.wait_for_offset(replica);
    let a = answers(&mut primary.conn(), model);
    let b = answers(&mut replica.conn(), model);
    for (key, x) in &a.per_key {
        let y = &b.per_key[key];
        for (u, v) in x.iter().zip(y) {
            if u != v {
                let field = u.split(' ').next().unwrap_or_default();
                panic!("{what}: {key}: {field} differ on the replica");
            }
        }
    }
    assert_eq!(a.dbsize, b.dbsize, "{what}: DBSIZE");
    assert_eq!(a.digest, b.digest, "{what}: DEBUG DIGEST");
    assert_eq!(a, b, "{what}");
    a.false_positives
}

fn role(s: &Server) -> String {
    s.info_field("replication", "role").unwrap_or_default()
}

/// The replica's link is up and no sync is in progress (offsets may still move).
fn wait_link_up(replica: &Server) {
    wait_until(
        Duration::from_secs(30),
        "the replica link to come up",
        || {
            let r = replica.info("replication");
            r.get("master_link_status").map(String::as_str) == Some("up")
                && r.get("master_sync_in_progress").map(String::as_str) == Some("0")
        },
    );
}

fn wait_acked(p: &Progress, n: usize, writer: &std::thread::ScopedJoinHandle<'_, Run>) {
    wait_until(
        Duration::from_secs(60),
        "the writer's acknowledgements",
        || p.acked.load(Ordering::SeqCst) >= n || writer.is_finished(),
    );
    assert!(
        !writer.is_finished() || p.acked.load(Ordering::SeqCst) >= n,
        "the writer stopped after {} commands",
        p.acked.load(Ordering::SeqCst)
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Crash recovery with appendonly + appendfsync always
// ---------------------------------------------------------------------------------------------

#[test]
fn aof_always_keeps_every_acknowledged_write_across_kill9() {
    let mut server = builder()
        .appendonly(true)
        // The rewrite in round 2 then goes through the module's aof_rewrite callback.
        .aof_rdb_preamble(false)
        .args(&["--appendfsync", "always"])
        .start();
    let reference = builder().start();
    let mut rcon = reference.conn();

    let mut truth = Model::default();
    let log = setup(&mut server.conn(), &mut truth);
    replay(&mut rcon, &mut Model::default(), &log, "setup");
    let mut gen = Gen::new(0x5eed_a0f1);
    let mut kill_rng = Rng(0x000d_eadb_eef5);
    let mut inflight_applied = 0;
    let mut rounds_with_inflight = 0;

    const ROUNDS: usize = 4;
    for round in 0..ROUNDS {
        let what = format!("round {round}");
        // The last round stops writing before the kill (nothing in flight).
        let idle_kill = round == ROUNDS - 1;
        let target = kill_rng.range(500, 1500) as usize;
        let max_ops = if idle_kill { target } else { usize::MAX };
        let progress = Progress::default();
        let mut wcon = server.conn();
        let run = std::thread::scope(|s| {
            let (g, m, p) = (gen.clone(), truth.clone(), &progress);
            let writer = s.spawn(move || write_load(&mut wcon, g, m, max_ops, p));
            if round == 1 {
                // An AOF rewrite while the load runs; the kill comes after it finished.
                wait_acked(&progress, target / 2, &writer);
                rdb::bgrewriteaof(&server);
            }
            wait_acked(&progress, target, &writer);
            if idle_kill {
                wait_until(Duration::from_secs(60), "the writer to finish", || {
                    writer.is_finished()
                });
            }
            server.crash();
            writer.join().expect("writer thread")
        });
        assert!(run.log.len() >= target, "{what}: {} acked", run.log.len());
        if idle_kill {
            assert!(run.inflight.is_none() && run.error.is_none());
        } else {
            assert!(
                run.inflight.is_some(),
                "{what}: the writer did not notice the kill"
            );
        }
        server.start_again();
        if run.inflight.is_some() {
            rounds_with_inflight += 1;
        }
        if verify_after_crash(&server, &mut rcon, &mut truth, &run, &what) {
            inflight_applied += 1;
        }
        gen = run.gen;
    }

    // The load really did what it claims.
    let mut con = server.conn();
    assert!(truth.bf.keys().any(|k| k.starts_with("bf:new:")));
    assert!(truth.cf.keys().any(|k| k.starts_with("cf:new:")));
    for (key, min_links) in [("bf:auto", 3), ("bf:madd", 4), ("bf:ins", 3)] {
        let n = info_ints(&mut con, "BF.INFO", key)["Number of filters"];
        assert!(n >= min_links, "{key}: only {n} links");
    }
    for (key, min_subs) in [("cf:auto", 2), ("cf:ins", 3)] {
        let n = info_ints(&mut con, "CF.INFO", key)["Number of filters"];
        assert!(n >= min_subs, "{key}: only {n} sub-filters");
    }
    assert!(truth.cf["cf:exact"].deleted > 0 && truth.cf["cf:full"].deleted > 0);
    assert_eq!(
        server.info_field("persistence", "aof_enabled").as_deref(),
        Some("1")
    );
    eprintln!(
        "aof: {} items over {} keys; in flight at {rounds_with_inflight} kills, applied {inflight_applied}",
        truth.items(),
        truth.bf.len() + truth.cf.len()
    );
}

/// After a `kill -9` and a restart: the reference gets exactly the acknowledged
/// commands of `run` (and the one in flight only if the restarted server has it),
/// then both datasets must be equal and the restarted server must keep every
/// promise of the model. Returns whether the in-flight command had been applied.
fn verify_after_crash(
    server: &Server,
    rcon: &mut Connection,
    truth: &mut Model,
    run: &Run,
    what: &str,
) -> bool {
    let mut con = server.conn();
    replay(rcon, truth, &run.log, what);
    let mut applied = false;
    if let Some(op) = &run.inflight {
        if !same_dataset(&mut con, rcon) {
            // Only the in-flight command's key may differ.
            let mut keys = truth.keys();
            keys.push(op.key.clone());
            let a = digest_values(&mut con, &keys);
            let b = digest_values(rcon, &keys);
            for ((k, x), y) in keys.iter().zip(&a).zip(&b) {
                assert!(
                    x == y || *k == op.key,
                    "{what}: DEBUG DIGEST-VALUE {k} differs, and the command in \
                     flight was {}",
                    show_args(&op.args)
                );
            }
            replay_unacked(rcon, truth, op);
            applied = true;
        }
    }
    assert_same_dataset(&mut con, rcon, truth, what);
    check_model(&mut con, truth, what);
    assert_counts_cover_acked(&mut con, &run.model, run.inflight.as_ref(), what);
    applied
}

/// `kill -9` while a BGSAVE child, then an AOF rewrite child, is writing (slowed down
/// by `rdb-key-save-delay` so the kill lands inside it): with `appendfsync always`
/// nothing acknowledged is lost, the half-written files are ignored, and the
/// orphaned child (killed with its parent) renames nothing into place.
#[test]
fn kill9_during_bgsave_and_during_aof_rewrite_loses_nothing_acknowledged() {
    let mut server = builder()
        .appendonly(true)
        .args(&["--appendfsync", "always"])
        .start();
    let reference = builder().start();
    let mut rcon = reference.conn();
    let mut truth = Model::default();
    let log = setup(&mut server.conn(), &mut truth);
    replay(&mut rcon, &mut Model::default(), &log, "setup");
    let mut gen = Gen::new(0x5eed_b65a);
    for (round, (start, in_progress)) in [
        ("BGSAVE", ("persistence", "rdb_bgsave_in_progress")),
        ("BGREWRITEAOF", ("persistence", "aof_rewrite_in_progress")),
    ]
    .into_iter()
    .enumerate()
    {
        let what = format!("kill during {start}");
        let mut con = server.conn();
        // 20 ms per key: the child takes a second or more over the dataset.
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("rdb-key-save-delay")
            .arg("20000")
            .query(&mut con)
            .unwrap();
        let progress = Progress::default();
        let mut wcon = server.conn();
        let run = std::thread::scope(|s| {
            let (g, m, p) = (gen.clone(), truth.clone(), &progress);
            let writer = s.spawn(move || write_load(&mut wcon, g, m, usize::MAX, p));
            wait_acked(&progress, 300 + 300 * round, &writer);
            let _: Value = redis::cmd(start).query(&mut con).unwrap();
            wait_until(Duration::from_secs(10), "the child to start", || {
                server.info_field(in_progress.0, in_progress.1).as_deref() == Some("1")
            });
            let acked = progress.acked.load(Ordering::SeqCst);
            wait_acked(&progress, acked + 200, &writer);
            assert_eq!(
                server.info_field(in_progress.0, in_progress.1).as_deref(),
                Some("1"),
                "{what}: the child finished before the kill"
            );
            let children = child_pids(&server);
            assert!(!children.is_empty(), "{what}: no child process");
            server.crash();
            for c in children {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &c.to_string()])
                    .status();
            }
            writer.join().expect("writer thread")
        });
        assert!(
            run.inflight.is_some(),
            "{what}: the writer did not notice the kill"
        );
        server.start_again();
        verify_after_crash(&server, &mut rcon, &mut truth, &run, &what);
        gen = run.gen;
    }
}

/// The pids of a server's child processes (a BGSAVE or AOF rewrite child).
fn child_pids(s: &Server) -> Vec<u32> {
    let pid = s.pid().expect("running");
    let out = std::process::Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 2. Crash recovery with RDB snapshots
// ---------------------------------------------------------------------------------------------

#[test]
fn rdb_snapshot_keeps_everything_acknowledged_before_it_across_kill9() {
    let mut server = builder().start();
    let reference = builder().start();
    let mut rcon = reference.conn();
    let mut truth = Model::default();
    let mut gen = Gen::new(0x5eed_0db1);
    let mut kill_rng = Rng(0x0bad_cafe);

    // Round 1: load, SAVE, more load, kill -9 during it.
    {
        let mut con = server.conn();
        let log = setup(&mut con, &mut Model::default());
        replay(&mut rcon, &mut truth, &log, "setup");
        let run = write_load(
            &mut con,
            gen.clone(),
            truth.clone(),
            1500,
            &Progress::default(),
        );
        assert!(run.error.is_none(), "{:?}", run.error);
        replay(&mut rcon, &mut truth, &run.log, "before SAVE");
        gen = run.gen;
        // Single deletes until an automatic compaction pass is caught half-way: the
        // snapshot must carry its cursor, and the pass must go on identically after.
        let subs = info_ints(&mut con, "CF.INFO", "cf:compact")["Number of filters"];
        assert!(subs >= 2, "cf:compact has {subs} sub-filters");
        let mut caught = None;
        for item in truth.cf["cf:compact"].live() {
            let op = Op::new(Kind::CfDel, &["CF.DEL", "cf:compact"], vec![item]);
            let v = raw(&mut con, &op.args);
            replay(&mut rcon, &mut truth, &[(op, v)], "deletes before SAVE");
            caught = compaction(&mut con, "cf:compact").filter(|&(_, slot)| slot > 0);
            if caught.is_some() {
                break;
            }
        }
        assert!(caught.is_some(), "no compaction pass caught half-way");
        assert_eq!(raw(&mut con, &strs(&["SAVE"])), Value::Okay);
        assert_same_dataset(&mut con, &mut rcon, &truth, "at SAVE");
    }
    let target = kill_rng.range(200, 500) as usize;
    let progress = Progress::default();
    let mut wcon = server.conn();
    let lost = std::thread::scope(|s| {
        let (g, m, p) = (gen.clone(), truth.clone(), &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, usize::MAX, p));
        wait_acked(&progress, target, &writer);
        server.crash();
        writer.join().expect("writer thread")
    });
    gen = lost.gen;
    server.start_again();
    {
        // Exactly the SAVE state: the reference never saw the later writes.
        let mut con = server.conn();
        assert_same_dataset(&mut con, &mut rcon, &truth, "restart after SAVE");
        check_model(&mut con, &truth, "restart after SAVE");
        assert!(
            lost.model.items() > truth.items(),
            "writes after the SAVE were acknowledged"
        );
    }

    // Round 2: BGSAVE in the middle of a load is a point-in-time snapshot: after the
    // kill, the dataset is the reference after some prefix of the acknowledged commands,
    // between those acked before BGSAVE was sent and those sent before it replied.
    let progress = Progress::default();
    let mut wcon = server.conn();
    let t1 = kill_rng.range(100, 300) as usize;
    let (run, lo, hi) = std::thread::scope(|s| {
        let (g, m, p) = (gen.clone(), truth.clone(), &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, usize::MAX, p));
        wait_acked(&progress, t1, &writer);
        let before = stat(&server, "persistence", "rdb_changes_since_last_save");
        assert!(before > 0);
        let lo = progress.acked.load(Ordering::SeqCst);
        let reply = raw(&mut server.conn(), &strs(&["BGSAVE"]));
        let hi = progress.sent.load(Ordering::SeqCst);
        assert_eq!(show(&reply), "+Background saving started");
        wait_until(Duration::from_secs(60), "BGSAVE to finish", || {
            server
                .info_field("persistence", "rdb_bgsave_in_progress")
                .as_deref()
                == Some("0")
        });
        assert_eq!(
            server
                .info_field("persistence", "rdb_last_bgsave_status")
                .as_deref(),
            Some("ok")
        );
        // More acknowledged writes after the snapshot, then the kill.
        wait_acked(&progress, hi + kill_rng.range(50, 200) as usize, &writer);
        server.crash();
        (writer.join().expect("writer thread"), lo, hi)
    });
    assert!(lo <= hi && hi <= run.log.len());
    server.start_again();
    let mut con = server.conn();
    replay(&mut rcon, &mut truth, &run.log[..lo], "up to BGSAVE");
    let mut k = lo;
    while !same_dataset(&mut con, &mut rcon) {
        assert!(
            k < hi,
            "the restarted dataset is no prefix of the load between {lo} and {hi} commands"
        );
        replay(&mut rcon, &mut truth, &run.log[k..k + 1], "BGSAVE window");
        k += 1;
    }
    assert_same_dataset(&mut con, &mut rcon, &truth, "restart after BGSAVE");
    check_model(&mut con, &truth, "restart after BGSAVE");
    eprintln!(
        "rdb: {} items; BGSAVE snapshot after command {k} of window {lo}..={hi}",
        truth.items()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Replication under load, promotion, re-pointing
// ---------------------------------------------------------------------------------------------

#[test]
fn replicas_answer_exactly_like_the_primary_and_survive_a_promotion() {
    // No PINGs from the old primary after the promotion: they would move replica 2's
    // offset past replica 1's history and force a full sync on re-pointing.
    let primary = builder()
        .args(&["--repl-ping-replica-period", "3600"])
        .start();
    let r1 = builder().replica_of(&primary).start();
    let r2 = builder().replica_of(&primary).start();
    primary.wait_for_sync(&r1);
    primary.wait_for_sync(&r2);

    let mut model = Model::default();
    let mut con = primary.conn();
    setup(&mut con, &mut model);
    let run = write_load(
        &mut con,
        Gen::new(0x5eed_4e91),
        model,
        2500,
        &Progress::default(),
    );
    assert!(run.error.is_none(), "{:?}", run.error);
    let mut model = run.model;
    check_model(&mut con, &model, "primary");
    let fp1 = assert_same_answers(&primary, &r1, &model, "replica 1");
    let fp2 = assert_same_answers(&primary, &r2, &model, "replica 2");
    assert_eq!(fp1, fp2);
    // The probes do hit false positives, so their agreement means something.
    assert!(fp1 > 0, "no false positive among the probes");

    // Promote replica 1: it keeps everything and takes writes.
    let digest = primary.digest();
    let mut c1 = r1.conn();
    assert_eq!(
        raw(&mut c1, &strs(&["REPLICAOF", "NO", "ONE"])),
        Value::Okay
    );
    assert_eq!(role(&r1), "master");
    assert_eq!(r1.digest(), digest);
    check_model(&mut c1, &model, "promoted replica");
    for (kind, cmd, key) in [
        (Kind::BfAdd, "BF.ADD", "bf:auto"),
        (Kind::CfAdd, "CF.ADD", "cf:auto"),
    ] {
        let op = Op::new(kind, &[cmd, key], vec![b"after-promotion".to_vec()]);
        let v = raw(&mut c1, &op.args);
        assert_eq!(show(&v), "1", "{cmd} on the promoted replica");
        model.apply(&op, &v);
    }
    let run = write_load(&mut c1, run.gen, model, 300, &Progress::default());
    assert!(run.error.is_none(), "{:?}", run.error);
    let model = run.model;

    // Re-point replica 2 at it: PSYNC2 continues the old primary's history.
    let partial_before = stat(&r1, "stats", "sync_partial_ok");
    let mut c2 = r2.conn();
    let port = r1.port().to_string();
    assert_eq!(
        raw(&mut c2, &strs(&["REPLICAOF", "127.0.0.1", &port])),
        Value::Okay
    );
    r1.wait_for_sync(&r2);
    assert_eq!(
        r2.info_field("replication", "master_port").as_deref(),
        Some(port.as_str())
    );
    assert_eq!(stat(&r1, "stats", "sync_full"), 0);
    assert_eq!(stat(&r1, "stats", "sync_partial_ok"), partial_before + 1);
    check_model(&mut c2, &model, "re-pointed replica");
    assert_same_answers(&r1, &r2, &model, "re-pointed replica");
    // The old primary no longer has replica 1's new writes.
    assert_ne!(primary.digest(), r1.digest());
}

// ---------------------------------------------------------------------------------------------
// 4. Full resync during a load, partial resync after a broken link
// ---------------------------------------------------------------------------------------------

#[test]
fn full_sync_during_load_and_partial_resync_after_a_broken_link() {
    let primary = builder().args(&["--repl-backlog-size", "64mb"]).start();
    let mut model = Model::default();
    let mut con = primary.conn();
    setup(&mut con, &mut model);
    let run = write_load(
        &mut con,
        Gen::new(0x5eed_f011),
        model,
        1000,
        &Progress::default(),
    );
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(stat(&primary, "stats", "sync_full"), 0);

    // Full sync: a replica attaches while the load goes on.
    let progress = Progress::default();
    let mut wcon = primary.conn();
    let (run, replica) = std::thread::scope(|s| {
        let (g, m, p) = (run.gen, run.model, &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, 1500, p));
        wait_acked(&progress, 200, &writer);
        let replica = builder().replica_of(&primary).start();
        wait_link_up(&replica);
        (writer.join().expect("writer thread"), replica)
    });
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(stat(&primary, "stats", "sync_full"), 1);
    assert_same_answers(&primary, &replica, &run.model, "after full sync");

    // Partial resync: freeze the replica, cut its link on the primary, keep writing,
    // then let it reconnect: it continues from the backlog.
    let partial_before = stat(&primary, "stats", "sync_partial_ok");
    let progress = Progress::default();
    let mut wcon = primary.conn();
    let run = std::thread::scope(|s| {
        let (g, m, p) = (run.gen, run.model, &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, 1500, p));
        wait_acked(&progress, 200, &writer);
        replica.signal("STOP");
        let killed = int(&raw(
            &mut primary.conn(),
            &strs(&["CLIENT", "KILL", "TYPE", "replica"]),
        ));
        assert_eq!(killed, 1, "CLIENT KILL TYPE replica");
        let at_cut = progress.acked.load(Ordering::SeqCst);
        // These writes reach the replica only through the backlog.
        wait_acked(&progress, at_cut + 300, &writer);
        assert_eq!(
            primary
                .info_field("replication", "connected_slaves")
                .as_deref(),
            Some("0")
        );
        replica.signal("CONT");
        writer.join().expect("writer thread")
    });
    assert!(run.error.is_none(), "{:?}", run.error);
    wait_link_up(&replica);
    assert_same_answers(&primary, &replica, &run.model, "after partial resync");
    assert_eq!(
        stat(&primary, "stats", "sync_partial_ok"),
        partial_before + 1
    );
    assert_eq!(
        stat(&primary, "stats", "sync_full"),
        1,
        "no second full sync"
    );
    check_model(
        &mut replica.conn(),
        &run.model,
        "replica after partial resync",
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Commands refused in part by a limit
// ---------------------------------------------------------------------------------------------

/// A multi-item command that a configured limit (`bf-max-links`, `cf-max-expansions`)
/// refuses in part still changes the filter, so it replicates. The replica and an AOF
/// replay (which apply replicated/loaded writes under the hard ceilings only) must end
/// up with exactly the primary's filter: the items the primary refused stay out.
#[test]
fn partly_refused_commands_replay_identically() {
    let limits = ["--bf.bf-max-links", "3", "--bf.cf-max-expansions", "2"];
    let mut primary = builder()
        .args(&limits)
        .appendonly(true)
        .args(&["--appendfsync", "always"])
        .start();
    let replica = builder().args(&limits).replica_of(&primary).start();
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    let items: Vec<Vec<u8>> = (0..400).map(|i| format!("lim:{i}").into_bytes()).collect();

    // Each command below changes its filter and has items refused by the limit.
    let partly = |con: &mut Connection, head: &[&str], items: &[Vec<u8>]| {
        let r = per_item(&raw(con, &cmd_with(head, items)));
        let ok = r.iter().filter(|x| matches!(x, Some(0 | 1))).count();
        assert!(
            r.contains(&Some(1)) && ok < items.len(),
            "{head:?}: {ok} of {} applied",
            items.len()
        );
    };
    raw(
        &mut con,
        &strs(&["BF.RESERVE", "bf:lim", "0.01", "20", "EXPANSION", "1"]),
    );
    partly(&mut con, &["BF.MADD", "bf:lim"], &items[..100]);
    let head = [
        "BF.INSERT",
        "bf:ins",
        "CAPACITY",
        "20",
        "EXPANSION",
        "1",
        "ITEMS",
    ];
    partly(&mut con, &head, &items[..100]);
    raw(
        &mut con,
        &strs(&["CF.RESERVE", "cf:lim", "64", "EXPANSION", "1"]),
    );
    partly(&mut con, &["CF.INSERT", "cf:lim", "ITEMS"], &items);
    // Refused items in between: deletes make room in the first sub-filter.
    for it in &items[..40] {
        raw(
            &mut con,
            &cmd_with(&["CF.DEL", "cf:lim"], std::slice::from_ref(it)),
        );
    }
    partly(&mut con, &["CF.INSERT", "cf:lim", "ITEMS"], &items[200..]);
    let mut nx_items = items[..300].to_vec();
    nx_items.extend(items[..50].iter().cloned());
    partly(
        &mut con,
        &["CF.INSERTNX", "cf:nx", "CAPACITY", "64", "ITEMS"],
        &nx_items,
    );
    for key in ["bf:lim", "bf:ins"] {
        assert_eq!(info_ints(&mut con, "BF.INFO", key)["Number of filters"], 3);
    }
    for key in ["cf:lim", "cf:nx"] {
        assert_eq!(info_ints(&mut con, "CF.INFO", key)["Number of filters"], 2);
    }

    let keys: Vec<String> = ["bf:lim", "bf:ins", "cf:lim", "cf:nx"]
        .iter()
        .map(|k| k.to_string())
        .collect();
    let want = digest_values(&mut con, &keys);
    primary.wait_for_offset(&replica);
    assert_eq!(digest_values(&mut replica.conn(), &keys), want, "replica");
    primary.crash();
    primary.start_again();
    assert_eq!(
        digest_values(&mut primary.conn(), &keys),
        want,
        "after AOF replay"
    );
}

fn cmd_with(head: &[&str], items: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut a = strs(head);
    a.extend(items.iter().cloned());
    a
}
