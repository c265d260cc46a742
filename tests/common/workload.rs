//! The write load of `tests/durability.rs`: a seeded generator of mixed BF/CF write
//! commands (`Gen`), the `Model` of what every acknowledged reply promises, a writer
//! that runs the load against a server (`write_load`), replay on a reference server,
//! and the checks that compare a server with the model or with another server
//! (members, counts, `*.INFO` totals, never-added probes, digests).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use super::rng::Rng;
use super::*;
use redis::{Connection, ConnectionLike, Value};

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// Creation defaults of every server in this file: small, so implicitly created filters
/// grow new links / sub-filters after a few dozen items.
pub const SMALL_DEFAULTS: [&str; 6] = [
    "--bf.bf-initial-size",
    "50",
    "--bf.cf-initial-size",
    "64",
    "--bf.cf-expansion-factor",
    "2",
];

pub fn builder() -> ServerBuilder {
    Server::builder().args(&SMALL_DEFAULTS)
}

pub fn cmd_of(args: &[Vec<u8>]) -> redis::Cmd {
    let (name, rest) = args.split_first().expect("empty command");
    let mut c = redis::cmd(std::str::from_utf8(name).expect("command name"));
    for a in rest {
        c.arg(a.as_slice());
    }
    c
}

pub fn show_args(args: &[Vec<u8>]) -> String {
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
pub fn show(v: &Value) -> String {
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
pub fn raw(con: &mut Connection, args: &[Vec<u8>]) -> Value {
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

pub fn strs(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

pub fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => panic!("expected an integer, got {}", show(other)),
    }
}

pub fn ints(v: Value) -> Vec<i64> {
    match v {
        Value::Array(a) => a.iter().map(int).collect(),
        other => panic!("expected an array, got {}", show(&other)),
    }
}

pub const CHUNK: usize = 1000;

/// `<cmd> key items...` in chunks, one integer per item.
pub fn multi(con: &mut Connection, cmd: &str, key: &str, items: &[Vec<u8>]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(CHUNK) {
        let mut args = strs(&[cmd, key]);
        args.extend(chunk.iter().cloned());
        out.extend(ints(raw(con, &args)));
    }
    out
}

/// `CF.COUNT key item` for every item, pipelined.
pub fn cf_counts(con: &mut Connection, key: &str, items: &[Vec<u8>]) -> Vec<i64> {
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
pub fn info_ints(con: &mut Connection, cmd: &str, key: &str) -> BTreeMap<String, i64> {
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

pub fn digest_values(con: &mut Connection, keys: &[String]) -> Vec<String> {
    let mut args = strs(&["DEBUG", "DIGEST-VALUE"]);
    args.extend(keys.iter().map(|k| k.as_bytes().to_vec()));
    match raw(con, &args) {
        Value::Array(a) => a.iter().map(show).collect(),
        other => panic!("DEBUG DIGEST-VALUE: {}", show(&other)),
    }
}

pub fn db_digest(con: &mut Connection) -> String {
    show(&raw(con, &strs(&["DEBUG", "DIGEST"])))
}

pub fn dbsize(con: &mut Connection) -> i64 {
    int(&raw(con, &strs(&["DBSIZE"])))
}

pub fn stat(s: &Server, section: &str, field: &str) -> i64 {
    s.info_field(section, field)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} has no integer {field}"))
}

// ---------------------------------------------------------------------------------------------
// Operations and the model of what acknowledged replies promise
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
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
pub struct Op {
    pub kind: Kind,
    pub key: String,
    pub items: Vec<Vec<u8>>,
    pub args: Vec<Vec<u8>>,
}

impl Op {
    pub fn new(kind: Kind, head: &[&str], items: Vec<Vec<u8>>) -> Op {
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
pub fn per_item(v: &Value) -> Vec<Option<i64>> {
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
pub struct BfModel {
    /// Every item an acknowledged reply said is a member, in first-ack order.
    pub items: Vec<Vec<u8>>,
    pub set: HashSet<Vec<u8>>,
    /// Replies of 1 (the filter's item count).
    pub inserted: i64,
}

#[derive(Clone, Default, Debug)]
pub struct CfModel {
    /// Every item ever added, in first-add order.
    pub items: Vec<Vec<u8>>,
    /// Acknowledged adds minus acknowledged deletes.
    pub net: HashMap<Vec<u8>, i64>,
    pub deleted: i64,
}

impl CfModel {
    pub fn net(&self, item: &[u8]) -> i64 {
        self.net.get(item).copied().unwrap_or(0)
    }
    pub fn live(&self) -> Vec<Vec<u8>> {
        self.items
            .iter()
            .filter(|i| self.net(i) > 0)
            .cloned()
            .collect()
    }
}

/// Keys whose fingerprints are wide enough (ERROR 1e-7) that counts are exact.
pub fn exact(key: &str) -> bool {
    key.starts_with("cf:exact")
}

#[derive(Clone, Default, Debug)]
pub struct Model {
    pub bf: BTreeMap<String, BfModel>,
    pub cf: BTreeMap<String, CfModel>,
}

impl Model {
    pub fn keys(&self) -> Vec<String> {
        self.bf.keys().chain(self.cf.keys()).cloned().collect()
    }

    pub fn items(&self) -> usize {
        self.bf.values().map(|m| m.items.len()).sum::<usize>()
            + self.cf.values().map(|m| m.items.len()).sum::<usize>()
    }

    /// Record what the reply `v` to `op` promises.
    pub fn apply(&mut self, op: &Op, v: &Value) {
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
pub const DEL_MANY: &str = "local r = {} for i, v in ipairs(ARGV) do \
     r[i] = redis.call('CF.DEL', KEYS[1], v) end return r";

/// The seeded command generator. `fresh` numbers new items and keys, so names stay
/// unique even when a crash rolls the model back.
#[derive(Clone)]
pub struct Gen {
    pub rng: Rng,
    pub fresh: u64,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng(seed),
            fresh: 0,
        }
    }

    pub fn fresh_item(&mut self) -> Vec<u8> {
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
    pub fn items(&mut self, n: u64, dup_pct: u64, known: &[Vec<u8>]) -> Vec<Vec<u8>> {
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
    pub fn setup() -> Vec<Op> {
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

    pub fn next_op(&mut self, m: &Model) -> Op {
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
pub struct Run {
    pub log: Vec<(Op, Value)>,
    pub inflight: Option<Op>,
    pub error: Option<String>,
    pub gen: Gen,
    pub model: Model,
}

/// Counters the writer publishes while it runs.
#[derive(Default)]
pub struct Progress {
    /// Commands whose reply arrived.
    pub acked: AtomicUsize,
    /// Commands written to the socket (acked + at most one in flight).
    pub sent: AtomicUsize,
    /// Ask the writer to stop after its current command.
    pub stop: AtomicBool,
}

/// Send `max_ops` generated commands one at a time, each after the previous reply,
/// recording every reply in the model; stop early at the first client error (the
/// server was killed) or when asked to.
pub fn write_load(
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
pub fn setup(con: &mut Connection, model: &mut Model) -> Vec<(Op, Value)> {
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
pub fn replay(reference: &mut Connection, truth: &mut Model, log: &[(Op, Value)], what: &str) {
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
pub fn replay_unacked(reference: &mut Connection, truth: &mut Model, op: &Op) {
    let v = reference
        .req_command(&cmd_of(&op.args))
        .expect("replay of the in-flight command");
    truth.apply(op, &v);
}

pub fn same_dataset(a: &mut Connection, b: &mut Connection) -> bool {
    db_digest(a) == db_digest(b)
}

/// The datasets must be equal, key by key (reports the first differing key).
pub fn assert_same_dataset(a: &mut Connection, b: &mut Connection, model: &Model, what: &str) {
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
pub fn check_model(con: &mut Connection, model: &Model, what: &str) {
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
pub fn assert_counts_cover_acked(
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
pub fn compaction(con: &mut Connection, key: &str) -> Option<(u32, u64)> {
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
pub fn probes(key: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("probe:{key}:{i}").into_bytes())
        .collect()
}

/// Everything a client can ask about the modelled keys.
#[derive(PartialEq, Eq, Debug)]
pub struct Answers {
    pub per_key: BTreeMap<String, Vec<String>>,
    pub digest: String,
    pub dbsize: i64,
    /// Probes that answered 1 (false positives), over all keys.
    pub false_positives: usize,
}

pub fn answers(con: &mut Connection, model: &Model) -> Answers {
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
pub fn assert_same_answers(primary: &Server, replica: &Server, model: &Model, what: &str) -> usize {
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

pub fn role(s: &Server) -> String {
    s.info_field("replication", "role").unwrap_or_default()
}

/// The replica's link is up and no sync is in progress (offsets may still move).
pub fn wait_link_up(replica: &Server) {
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

pub fn wait_acked(p: &Progress, n: usize, writer: &std::thread::ScopedJoinHandle<'_, Run>) {
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
