//! Windowed Bloom filters (`WINDOW seconds`) on a real server: the three
//! guarantees over 24 windows with measured false-positive rates (the test
//! clock FERROBLOOM.CLOCK moves time, so a 600 s window takes no real time),
//! the replies, every bad input, persistence (RDB inside and after the window,
//! DEBUG RELOAD, AOF rewrite and command-log replay, DUMP/RESTORE, COPY,
//! SCANDUMP/LOADCHUNK), replication under load and after promotion, limits,
//! INFO bf gauges, and SLOWLOG for a 2^30-per-window filter.

#[path = "../common/mod.rs"]
mod common;
mod limits;
mod live;
mod memory;
mod persistence;
mod reclaim;

use std::collections::HashMap;

use common::rdb::*;
use common::*;
use redis::{Connection, Value};

const W_MS: i64 = 600_000;

fn set_clock(con: &mut Connection, offset_ms: i64) {
    let r: i64 = exec(con, &["FERROBLOOM.CLOCK", &offset_ms.to_string()]).unwrap();
    assert_eq!(r, offset_ms);
}

fn item(tag: &str, i: u64) -> String {
    format!("{tag}:{i}")
}

fn madd(con: &mut Connection, key: &str, items: &[String]) -> Vec<i64> {
    redis::cmd("BF.MADD")
        .arg(key)
        .arg(items)
        .query(con)
        .unwrap()
}

/// BF.MADD whose reply may hold error elements.
fn madd_raw(con: &mut Connection, key: &str, items: &[String]) -> Vec<Value> {
    let mut p = redis::pipe();
    p.cmd("BF.MADD").arg(key).arg(items);
    p.ignore_errors();
    let r: Vec<Value> = p.query(con).unwrap();
    match r.into_iter().next() {
        Some(Value::Array(a)) => a,
        other => panic!("BF.MADD reply {other:?}"),
    }
}

fn mexists(con: &mut Connection, key: &str, items: &[String]) -> Vec<i64> {
    if items.is_empty() {
        return Vec::new();
    }
    redis::cmd("BF.MEXISTS")
        .arg(key)
        .arg(items)
        .query(con)
        .unwrap()
}

/// Walks `key` with `kind`'s SCANDUMP (`BF` or `CF`) into `copy` with its
/// LOADCHUNK, running `between(con, step)` before each SCANDUMP of a data
/// chunk. The first error of either command, or a LOADCHUNK reply other than
/// `OK`, ends the walk and is returned.
fn live_copy_of(
    kind: &str,
    con: &mut Connection,
    key: &str,
    copy: &str,
    between: impl FnMut(&mut Connection, usize),
) -> Result<(), String> {
    walk_copy_from(kind, con, key, copy, 0, between)
}

/// [`live_copy_of`] from iterator `it` (1 goes on from a header loaded
/// elsewhere).
fn walk_copy_from(
    kind: &str,
    con: &mut Connection,
    key: &str,
    copy: &str,
    mut it: i64,
    mut between: impl FnMut(&mut Connection, usize),
) -> Result<(), String> {
    let mut step = 0;
    loop {
        if it != 0 {
            between(con, step);
            step += 1;
        }
        let (next, data): (i64, Vec<u8>) = redis::cmd(&format!("{kind}.SCANDUMP"))
            .arg(key)
            .arg(it)
            .query(con)
            .map_err(|e| format!("SCANDUMP: {e}"))?;
        if next == 0 {
            return Ok(());
        }
        let ok: String = redis::cmd(&format!("{kind}.LOADCHUNK"))
            .arg(copy)
            .arg(next)
            .arg(data)
            .query(con)
            .map_err(|e| format!("LOADCHUNK: {e}"))?;
        if ok != "OK" {
            return Err(format!("LOADCHUNK: {ok}"));
        }
        it = next;
    }
}

fn ones(v: &[i64]) -> usize {
    v.iter().filter(|&&x| x == 1).count()
}

/// The largest rate a filter at `p` may measure with `n` probes (4 sigma).
fn bound(p: f64, n: usize) -> f64 {
    p + 4.0 * (p * (1.0 - p) / n as f64).sqrt()
}

fn info_map(con: &mut Connection, key: &str) -> Vec<(String, Value)> {
    let v: Value = exec(con, &["BF.INFO", key]).unwrap();
    match v {
        Value::Array(a) => a
            .chunks(2)
            .map(|p| match &p[0] {
                Value::SimpleString(s) => (s.clone(), p[1].clone()),
                Value::BulkString(b) => (String::from_utf8_lossy(b).into(), p[1].clone()),
                other => panic!("BF.INFO key {other:?}"),
            })
            .collect(),
        Value::Map(m) => m
            .into_iter()
            .map(|(k, v)| match k {
                Value::SimpleString(s) => (s, v),
                other => panic!("BF.INFO key {other:?}"),
            })
            .collect(),
        other => panic!("BF.INFO {other:?}"),
    }
}

fn info_int(con: &mut Connection, key: &str, field: &str) -> i64 {
    exec::<Vec<i64>>(con, &["BF.INFO", key, field]).unwrap()[0]
}

fn digest_value(con: &mut Connection, key: &str) -> String {
    let v: Vec<String> = exec(con, &["DEBUG", "DIGEST-VALUE", key]).unwrap();
    v[0].clone()
}

/// A steady stream of 2,000 distinct items per 600 s window over 24 windows
/// (100 items every 30 s of test clock): every item added within the window
/// answers 1 (guarantee 1), items older than W·(1 + 1/4) answer only at the
/// false-positive rate (guarantee 2), never-added items answer at most at the
/// error rate at every step, including right after each rotation and at each
/// fullest moment (guarantee 3); BF.ADD answers the de-duplication answer;
/// BF.INFO keeps RedisBloom's five fields; the size stops growing.
#[test]
fn window_stream_keeps_the_three_guarantees() {
    let s = Server::start();
    let mut con = s.conn();
    let (cap, p) = (2_000u64, 0.01);
    let r: String = exec(
        &mut con,
        &["BF.RESERVE", "w", "0.01", &cap.to_string(), "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(r, "OK");
    let step_ms = W_MS / 20;
    let per_step = cap / 20;
    let mut added: Vec<(i64, u64)> = Vec::new();
    let (mut fresh_dups, mut fresh) = (0usize, 0usize);
    let (mut probe_hits, mut probes) = (0usize, 0usize);
    let (mut old_hits, mut old_n) = (0usize, 0usize);
    let mut sizes = Vec::new();
    let mut next = 0u64;
    for step in 0..24 * 20i64 {
        let clock = step * step_ms;
        set_clock(&mut con, clock);
        let batch: Vec<String> = (next..next + per_step).map(|i| item("m", i)).collect();
        let r = madd(&mut con, "w", &batch);
        fresh_dups += r.len() - ones(&r);
        fresh += r.len();
        added.extend((next..next + per_step).map(|i| (clock, i)));
        next += per_step;
        // Guarantee 1 (a minute of margin for real time passing meanwhile).
        let recent: Vec<String> = added
            .iter()
            .filter(|(t, _)| clock - t <= W_MS - 60_000)
            .map(|&(_, i)| item("m", i))
            .collect();
        let r = mexists(&mut con, "w", &recent);
        assert_eq!(
            ones(&r),
            recent.len(),
            "an item of the window is gone at step {step}"
        );
        // Guarantee 2: added at least W·(1 + 1/4) ago, at most 3 windows ago.
        let old: Vec<String> = added
            .iter()
            .filter(|(t, _)| clock - t >= W_MS + W_MS / 4 && clock - t <= 3 * W_MS)
            .map(|&(_, i)| item("m", i))
            .collect();
        let r = mexists(&mut con, "w", &old);
        old_hits += ones(&r);
        old_n += r.len();
        // Guarantee 3, at every step (right after a rotation: step % 5 == 0;
        // fullest: step % 5 == 4) once two windows have passed.
        if step >= 40 {
            let n = 10_000;
            let ps: Vec<String> = (0..n).map(|i| item(&format!("p{step}"), i)).collect();
            let hits = ones(&mexists(&mut con, "w", &ps));
            let rate = hits as f64 / n as f64;
            assert!(rate <= bound(p, n as usize), "FP {rate} at step {step}");
            probe_hits += hits;
            probes += n as usize;
            sizes.push(info_int(&mut con, "w", "SIZE"));
        }
    }
    let rate = probe_hits as f64 / probes as f64;
    let forgotten = old_hits as f64 / old_n as f64;
    let dups = fresh_dups as f64 / fresh as f64;
    println!(
        "24 windows: FP {rate:.5} over {probes} probes; forgotten items answering 1: \
         {forgotten:.5} of {old_n}; fresh adds answering 0: {dups:.5}"
    );
    assert!(rate <= bound(p, probes));
    assert!(forgotten <= bound(p, old_n));
    assert!(dups <= bound(p, fresh));
    // Memory stops growing: the largest size of the last 10 windows is no
    // larger than the largest of the first ones.
    let (first, last) = sizes.split_at(100);
    assert!(
        last.iter().max() <= first.iter().max(),
        "size grew with age"
    );

    // BF.ADD: 1 when not seen within the window, 0 when seen; a re-add keeps
    // the item another full window.
    let clock = 24 * 20 * step_ms;
    set_clock(&mut con, clock);
    assert_eq!(exec::<i64>(&mut con, &["BF.ADD", "w", "dedup"]).unwrap(), 1);
    assert_eq!(exec::<i64>(&mut con, &["BF.ADD", "w", "dedup"]).unwrap(), 0);
    set_clock(&mut con, clock + W_MS / 2);
    assert_eq!(exec::<i64>(&mut con, &["BF.ADD", "w", "dedup"]).unwrap(), 0);
    set_clock(&mut con, clock + W_MS + W_MS / 3);
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", "dedup"]).unwrap(),
        1
    );
    set_clock(&mut con, clock + 3 * W_MS);
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", "dedup"]).unwrap(),
        0
    );
    assert_eq!(exec::<i64>(&mut con, &["BF.CARD", "w"]).unwrap(), 0);
    assert_eq!(exec::<i64>(&mut con, &["BF.ADD", "w", "dedup"]).unwrap(), 1);

    // Replies: exactly RedisBloom's five fields; the window is its own field.
    let keys: Vec<String> = info_map(&mut con, "w")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, BF_INFO_KEYS);
    assert_eq!(info_int(&mut con, "w", "CAPACITY"), cap as i64);
    assert_eq!(info_int(&mut con, "w", "ITEMS"), 1);
    assert_eq!(info_int(&mut con, "w", "FILTERS"), 1);
    assert_eq!(info_int(&mut con, "w", "EXPANSION"), 2);
    let win: Vec<f64> = exec(&mut con, &["BF.INFO", "w", "WINDOW"]).unwrap();
    assert_eq!(win, [600.0]);
    let mut r3 = s.conn_resp3();
    let v: Value = exec(&mut r3, &["BF.INFO", "w", "WINDOW"]).unwrap();
    assert_eq!(
        v,
        Value::Map(vec![(
            Value::SimpleString("Window".into()),
            Value::Double(600.0)
        )])
    );
    let plain: String = exec(&mut con, &["BF.RESERVE", "plain", "0.01", "100"]).unwrap();
    assert_eq!(plain, "OK");
    let v: Value = exec(&mut con, &["BF.INFO", "plain", "WINDOW"]).unwrap();
    assert_eq!(v, Value::Array(vec![Value::Nil]));
    assert_eq!(
        exec::<String>(&mut con, &["TYPE", "w"]).unwrap(),
        "MBbloom--"
    );
    let dbg: Vec<String> = exec(&mut con, &["BF.DEBUG", "w"]).unwrap();
    assert_eq!(dbg[0], "size:1");
    assert!(
        dbg[1].starts_with("window:600.000 generations:1 parts:4"),
        "{dbg:?}"
    );
    assert!(dbg[2].contains("capacity:500") && dbg[2].contains("generation:"));
}

/// Link layouts (BF.DEBUG): a windowed filter's generations are paired unless
/// `LAYOUT` says otherwise, whatever `bf.bf-layout` says (it is for plain
/// filters); BF.RESERVE and BF.INSERT alike, and the generations a burst adds.
#[test]
fn window_layout_is_paired_unless_given() {
    let s = Server::start();
    let mut con = s.conn();
    let links = |con: &mut Connection, key: &str| -> Vec<String> {
        let d: Vec<String> = exec(con, &["BF.DEBUG", key]).unwrap();
        d.into_iter().skip(2).collect()
    };
    exec::<()>(&mut con, &["CONFIG", "SET", "bf.bf-layout", "blocked"]).unwrap();
    exec::<()>(
        &mut con,
        &["BF.RESERVE", "p", "0.01", "100", "WINDOW", "60"],
    )
    .unwrap();
    // A burst of 4 windows' capacity: more links (a few items may meet a false
    // positive and answer 0).
    let burst: Vec<String> = (0..400).map(|i| item("burst", i)).collect();
    assert!(ones(&madd(&mut con, "p", &burst)) >= 390);
    let l = links(&mut con, "p");
    assert!(l.len() >= 2, "{l:?}");
    assert!(l.iter().all(|x| x.contains(" layout:paired ")), "{l:?}");
    let ins: Vec<i64> = exec(
        &mut con,
        &["BF.INSERT", "i", "WINDOW", "60", "ITEMS", "a", "b"],
    )
    .unwrap();
    assert_eq!(ins, [1, 1]);
    assert!(links(&mut con, "i")[0].contains(" layout:paired "));
    for (key, layout, want) in [
        ("c", "classic", None),
        ("b", "blocked", Some(" layout:blocked ")),
        ("q", "PAIRED", Some(" layout:paired ")),
    ] {
        exec::<()>(
            &mut con,
            &[
                "BF.RESERVE",
                key,
                "0.01",
                "100",
                "LAYOUT",
                layout,
                "WINDOW",
                "60",
            ],
        )
        .unwrap();
        exec::<i64>(&mut con, &["BF.ADD", key, "x"]).unwrap();
        let l = links(&mut con, key);
        match want {
            Some(w) => assert!(l[0].contains(w), "{key}: {l:?}"),
            None => assert!(!l[0].contains("layout:"), "{key}: {l:?}"),
        }
    }
    // The configuration still applies to plain filters.
    exec::<i64>(&mut con, &["BF.ADD", "plain", "x"]).unwrap();
    let d: Vec<String> = exec(&mut con, &["BF.DEBUG", "plain"]).unwrap();
    assert!(d[1].ends_with(" layout:blocked"), "{d:?}");
}

/// Every bad input gets its own error and changes nothing.
#[test]
fn window_bad_inputs_are_refused_and_change_nothing() {
    let s = Server::start();
    let mut con = s.conn();
    let bad_window =
        "ERR bad window (expected seconds: a number > 0 with millisecond precision, at most 315576000)";
    let cases: &[(&[&str], &str)] = &[
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "0"],
            bad_window,
        ),
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "-5"],
            bad_window,
        ),
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "nan"],
            bad_window,
        ),
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "inf"],
            bad_window,
        ),
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "ten"],
            bad_window,
        ),
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "0.0001"],
            bad_window,
        ),
        (
            &["BF.RESERVE", "k", "0.01", "100", "WINDOW", "315576000.5"],
            bad_window,
        ),
        (&["BF.RESERVE", "k", "0.01", "100", "WINDOW"], bad_window),
        (
            &[
                "BF.RESERVE",
                "k",
                "0.01",
                "100",
                "WINDOW",
                "1",
                "WINDOW",
                "2",
            ],
            "ERR WINDOW given twice",
        ),
        (
            &[
                "BF.RESERVE",
                "k",
                "0.01",
                "100",
                "LAYOUT",
                "redisbloom",
                "WINDOW",
                "2",
            ],
            "ERR WINDOW cannot be combined with LAYOUT redisbloom",
        ),
        (&["BF.INSERT", "k", "WINDOW", "0", "ITEMS", "a"], bad_window),
        (
            &["BF.INSERT", "k", "WINDOW", "1", "WINDOW", "1", "ITEMS", "a"],
            "ERR WINDOW given twice",
        ),
        (
            &["BF.INSERT", "k", "NOCREATE", "WINDOW", "1", "ITEMS", "a"],
            "ERR NOCREATE cannot be combined with WINDOW",
        ),
        (
            &["BF.INSERT", "k", "NOCREATE", "AT", "1000", "ITEMS", "a"],
            "ERR AT is only accepted from the primary or the AOF",
        ),
        (
            &["CF.RESERVE", "k", "1000", "WINDOW", "10"],
            "ERR WINDOW is only for Bloom filters (BF.RESERVE, BF.INSERT)",
        ),
        (
            &["CF.INSERT", "k", "WINDOW", "10", "ITEMS", "a"],
            "ERR WINDOW is only for Bloom filters (BF.RESERVE, BF.INSERT)",
        ),
        (
            &["CF.INSERTNX", "k", "WINDOW", "10", "ITEMS", "a"],
            "ERR WINDOW is only for Bloom filters (BF.RESERVE, BF.INSERT)",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(exec_err(&mut con, args), *want, "{args:?}");
        assert_eq!(
            exec::<i64>(&mut con, &["EXISTS", "k"]).unwrap(),
            0,
            "{args:?}"
        );
    }
    // WINDOW on a key that exists: a plain filter, another window, a string.
    let ok: String = exec(&mut con, &["BF.RESERVE", "plain", "0.01", "100"]).unwrap();
    assert_eq!(ok, "OK");
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "win", "0.01", "100", "WINDOW", "60"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    exec::<Value>(&mut con, &["BF.ADD", "win", "x"]).unwrap();
    let before = (
        digest_value(&mut con, "plain"),
        digest_value(&mut con, "win"),
    );
    let exists = "ERR WINDOW given for a key that holds a filter without that window";
    assert_eq!(
        exec_err(
            &mut con,
            &["BF.INSERT", "plain", "WINDOW", "60", "ITEMS", "a"]
        ),
        exists
    );
    assert_eq!(
        exec_err(
            &mut con,
            &["BF.INSERT", "win", "WINDOW", "61", "ITEMS", "a"]
        ),
        exists
    );
    assert_eq!(
        exec_err(
            &mut con,
            &["BF.RESERVE", "win", "0.01", "100", "WINDOW", "60"]
        ),
        "ERR item exists"
    );
    assert_eq!(
        (
            digest_value(&mut con, "plain"),
            digest_value(&mut con, "win")
        ),
        before
    );
    // The same window on the same key adds (create-or-add).
    let r: Vec<i64> = exec(
        &mut con,
        &["BF.INSERT", "win", "WINDOW", "60", "ITEMS", "x", "y"],
    )
    .unwrap();
    assert_eq!(r, [0, 1]);
    exec::<Value>(&mut con, &["SET", "str", "v"]).unwrap();
    assert!(exec_err(
        &mut con,
        &["BF.INSERT", "str", "WINDOW", "60", "ITEMS", "a"]
    )
    .starts_with("WRONGTYPE"));
}

/// A windowed filter with items in several generations (some forgotten by now).
fn build(con: &mut Connection, key: &str) -> Vec<String> {
    let ok: String = exec(con, &["BF.RESERVE", key, "0.01", "1000", "WINDOW", "600"]).unwrap();
    assert_eq!(ok, "OK");
    let mut items = Vec::new();
    for g in 0..8 {
        set_clock(con, g * W_MS / 4);
        let batch: Vec<String> = (0..300).map(|i| item(&format!("{key}{g}"), i)).collect();
        madd(con, key, &batch);
        items.extend(batch);
    }
    items
}

/// Answers of every item ever added plus probes, read at the filter's last
/// write time (a clock an hour back reads at the newest change: nothing
/// depends on how much real time passed).
fn answers(con: &mut Connection, key: &str, items: &[String]) -> Vec<i64> {
    set_clock(con, -3_600_000);
    let mut all = items.to_vec();
    all.extend((0..2000).map(|i| item("probe", i)));
    mexists(con, key, &all)
}
