//! The write load of `crates/ferrobloom/tests/durability.rs`: a seeded generator of mixed BF/CF write
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

mod gen;
mod run;

// Not every test binary uses every helper.
#[allow(unused_imports)]
pub use gen::*;
#[allow(unused_imports)]
pub use run::*;

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
