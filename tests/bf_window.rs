//! Windowed Bloom filters (`WINDOW seconds`) on a real server: the three
//! guarantees over 24 windows with measured false-positive rates (the test
//! clock FERROBLOOM.CLOCK moves time, so a 600 s window takes no real time),
//! the replies, every bad input, persistence (RDB inside and after the window,
//! DEBUG RELOAD, AOF rewrite and command-log replay, DUMP/RESTORE, COPY,
//! SCANDUMP/LOADCHUNK), replication under load and after promotion, limits,
//! INFO bf gauges, and SLOWLOG for a 2^30-per-window filter.

mod common;

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

/// DEBUG RELOAD, DUMP/RESTORE, COPY and SCANDUMP/LOADCHUNK keep a windowed
/// filter identical (DEBUG DIGEST-VALUE and every answer), and the copies keep
/// forgetting on time.
#[test]
fn window_reload_dump_copy_and_scandump_keep_the_filter() {
    let s = Server::start();
    let mut con = s.conn();
    let items = build(&mut con, "w");
    let digest = digest_value(&mut con, "w");
    let want = answers(&mut con, "w", &items);
    // The oldest generations are forgotten by now, the newest ones are not.
    // (forgotten items answer only at the false-positive rate)
    assert!(ones(&want[..900]) <= 25, "forgotten generations");
    assert_eq!(ones(&want[900..2400]), 1500, "live generations");

    exec::<Value>(&mut con, &["DEBUG", "RELOAD"]).unwrap();
    assert_eq!(digest_value(&mut con, "w"), digest, "DEBUG RELOAD");
    assert_eq!(answers(&mut con, "w", &items), want);

    let dump: Vec<u8> = redis::cmd("DUMP").arg("w").query(&mut con).unwrap();
    let r: String = redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(dump)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, "OK");
    assert_eq!(exec::<i64>(&mut con, &["COPY", "w", "c"]).unwrap(), 1);

    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg("w")
            .arg(it)
            .query(&mut con)
            .unwrap();
        if next == 0 {
            break;
        }
        let r: String = redis::cmd("BF.LOADCHUNK")
            .arg("l")
            .arg(next)
            .arg(data)
            .query(&mut con)
            .unwrap();
        assert_eq!(r, "OK");
        it = next;
    }
    for k in ["r", "c", "l"] {
        assert_eq!(digest_value(&mut con, k), digest, "{k}");
        assert_eq!(answers(&mut con, k, &items), want, "{k}");
    }
    // COPY is independent, and every copy forgets on time.
    exec::<Value>(&mut con, &["BF.ADD", "c", "only-in-copy"]).unwrap();
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", "only-in-copy"]).unwrap(),
        0
    );
    set_clock(&mut con, 8 * W_MS / 4 + 2 * W_MS);
    for k in ["w", "r", "c", "l"] {
        assert_eq!(ones(&mexists(&mut con, k, &items)), 0, "{k} forgot");
        assert_eq!(exec::<i64>(&mut con, &["BF.CARD", k]).unwrap(), 0);
    }
}

/// RDB: a restart inside the window keeps every answer; a restart after the
/// window comes back with everything forgotten (absolute times).
#[test]
fn window_rdb_restart_inside_and_after_the_window() {
    let mut s = Server::start();
    let mut con = s.conn();
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let items: Vec<String> = (0..500).map(|i| item("r", i)).collect();
    let accepted = ones(&madd(&mut con, "w", &items)) as i64;
    let digest = digest_value(&mut con, "w");
    exec::<Value>(&mut con, &["SAVE"]).unwrap();
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(digest_value(&mut con, "w"), digest);
    assert_eq!(ones(&mexists(&mut con, "w", &items)), 500);
    assert_eq!(exec::<i64>(&mut con, &["BF.CARD", "w"]).unwrap(), accepted);
    // "After the window": the restarted server's clock is W·(1+s) later.
    drop(con);
    s.restart();
    let mut con = s.conn();
    set_clock(&mut con, W_MS + W_MS / 4 + 1_000);
    assert_eq!(ones(&mexists(&mut con, "w", &items)), 0);
    assert_eq!(exec::<i64>(&mut con, &["BF.CARD", "w"]).unwrap(), 0);
    let i: i64 = exec(&mut con, &["BF.ADD", "w", "r:0"]).unwrap();
    assert_eq!(i, 1, "forgotten, so new again");
}

/// AOF: a rewrite (BF.LOADCHUNK stream) and a command log replayed by a
/// restarted server whose clock is back at real time (earlier than the test
/// clock the writes ran at) both rebuild the exact filter: the log carries
/// the primary's times (BF.INSERT ... AT), so the replay never rotates on its
/// own clock.
#[test]
fn window_aof_rewrite_and_command_log_replay() {
    let mut s = Server::start_with(Server::builder().appendonly(true).aof_rdb_preamble(false));
    let mut con = s.conn();
    let items = build(&mut con, "w");
    let digest = digest_value(&mut con, "w");
    let want = answers(&mut con, "w", &items);
    let base = aof_files(&s, "b");
    assert!(!base.is_empty());
    let incr = aof_files(&s, "i").concat();
    assert!(
        count_occurrences(&incr, b"$2\r\nAT\r\n") >= 8,
        "writes carry their time"
    );
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(digest_value(&mut con, "w"), digest, "command log replay");
    assert_eq!(answers(&mut con, "w", &items), want);

    bgrewriteaof(&s);
    let base = aof_files(&s, "b").concat();
    assert!(count_occurrences(&base, b"BF.LOADCHUNK") >= 2);
    exec::<Value>(&mut con, &["BF.ADD", "w", "after-rewrite"]).unwrap();
    let digest = digest_value(&mut con, "w");
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(digest_value(&mut con, "w"), digest, "rewrite + replay");
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", "after-rewrite"]).unwrap(),
        1
    );
}

/// A replica whose clock is an hour behind stays identical to its primary
/// under a write load with rotations (DEBUG DIGEST), its reads skip what is
/// too old by its own clock without changing anything, and after promotion it
/// keeps every item and goes on.
#[test]
fn window_replica_identical_under_load_and_after_promotion() {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut pc = primary.conn();
    let mut rc = replica.conn();
    set_clock(&mut rc, -3_600_000);
    let ok: String = exec(
        &mut pc,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    exec::<Value>(
        &mut pc,
        &["BF.INSERT", "auto", "WINDOW", "60", "ITEMS", "a"],
    )
    .unwrap();
    let mut all = Vec::new();
    for step in 0..40 {
        set_clock(&mut pc, step * W_MS / 10);
        let batch: Vec<String> = (0..100).map(|i| item(&format!("s{step}"), i)).collect();
        madd(&mut pc, "w", &batch);
        exec::<Value>(&mut pc, &["BF.ADD", "w", "s0:0"]).unwrap(); // re-adds
        exec::<Value>(&mut pc, &["BF.ADD", "auto", &format!("x{step}")]).unwrap();
        all.extend(batch);
        if step % 10 == 9 {
            primary.wait_for_offset(&replica);
            assert_eq!(primary.digest(), replica.digest(), "step {step}");
        }
    }
    primary.wait_for_offset(&replica);
    assert_eq!(primary.digest(), replica.digest());
    // Same answers: both read at the last write's time (clocks behind it).
    set_clock(&mut pc, -3_600_000);
    assert_eq!(mexists(&mut pc, "w", &all), mexists(&mut rc, "w", &all));
    // A replica clock far ahead: reads forget, nothing changes.
    set_clock(&mut rc, 100 * W_MS);
    assert_eq!(ones(&mexists(&mut rc, "w", &all)), 0);
    assert_eq!(exec::<i64>(&mut rc, &["BF.CARD", "w"]).unwrap(), 0);
    assert_eq!(primary.digest(), replica.digest(), "reads do not mutate");
    set_clock(&mut rc, -3_600_000);
    // Promotion: the replica's own (behind) clock forgets nothing early.
    let want = mexists(&mut pc, "w", &all);
    let ok: String = exec(&mut rc, &["REPLICAOF", "NO", "ONE"]).unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(mexists(&mut rc, "w", &all), want);
    assert_eq!(
        exec::<i64>(&mut rc, &["BF.ADD", "w", "promoted"]).unwrap(),
        1
    );
    assert_eq!(mexists(&mut rc, "w", &all), want);
    assert_eq!(
        exec::<i64>(&mut rc, &["BF.EXISTS", "w", "promoted"]).unwrap(),
        1
    );
}

/// The per-filter memory cap and max links apply on creation, on growth by
/// a burst, and on RESTORE/LOADCHUNK of a windowed filter.
#[test]
fn window_limits_on_every_path() {
    let s = Server::start();
    let mut con = s.conn();
    let items = build(&mut con, "w");
    assert!(!items.is_empty());
    let size = info_int(&mut con, "w", "SIZE");
    let dump: Vec<u8> = redis::cmd("DUMP").arg("w").query(&mut con).unwrap();
    let header: (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
        .arg("w")
        .arg(0)
        .query(&mut con)
        .unwrap();

    exec::<Value>(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "bf.max-filter-memory",
            &(size - 1).to_string(),
        ],
    )
    .unwrap();
    let r: Result<Value, _> = redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(&dump)
        .query(&mut con);
    assert!(err_text(r).contains("Bad data format"));
    let r: Result<Value, _> = redis::cmd("BF.LOADCHUNK")
        .arg("l")
        .arg(header.0)
        .arg(&header.1)
        .query(&mut con);
    assert_eq!(err_text(r), "ERR received bad data");
    exec::<Value>(
        &mut con,
        &["CONFIG", "SET", "bf.max-filter-memory", "20000"],
    )
    .unwrap();
    let e = exec_err(
        &mut con,
        &["BF.RESERVE", "big", "0.01", "100000", "WINDOW", "60"],
    );
    assert_eq!(e, "ERR Insufficient memory to create filter");
    let e = exec_err(
        &mut con,
        &[
            "BF.INSERT",
            "big",
            "CAPACITY",
            "100000",
            "WINDOW",
            "60",
            "ITEMS",
            "a",
        ],
    );
    assert_eq!(e, "ERR Insufficient memory to create filter");
    assert_eq!(
        exec::<i64>(&mut con, &["EXISTS", "big", "r", "l"]).unwrap(),
        0
    );
    // A burst past the cap: the growth link is refused, the items before stay.
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "b", "0.01", "4000", "WINDOW", "60"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let batch: Vec<String> = (0..20_000).map(|i| item("b", i)).collect();
    let r = madd_raw(&mut con, "b", &batch);
    let errors: Vec<String> = r.iter().filter_map(value_err_text).collect();
    assert!(
        !errors.is_empty() && errors.iter().all(|e| e.contains("max-filter-memory")),
        "{errors:?}"
    );
    assert!(info_int(&mut con, "b", "SIZE") <= 20_000);
    // Max links: a NONSCALING window refuses with RedisBloom's text; a scaling
    // one at the link limit with the max-links text.
    exec::<Value>(&mut con, &["CONFIG", "SET", "bf.max-filter-memory", "1gb"]).unwrap();
    let ok: String = exec(
        &mut con,
        &[
            "BF.RESERVE",
            "ns",
            "0.01",
            "400",
            "NONSCALING",
            "WINDOW",
            "60",
        ],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let batch: Vec<String> = (0..1000).map(|i| item("ns", i)).collect();
    let r = madd_raw(&mut con, "ns", &batch);
    assert_eq!(
        r.iter().filter_map(value_err_text).collect::<Vec<_>>(),
        ["ERR non scaling filter is full"]
    );
    exec::<Value>(&mut con, &["CONFIG", "SET", "bf.bf-max-links", "5"]).unwrap();
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "ml", "0.01", "400", "WINDOW", "60"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let batch: Vec<String> = (0..10_000).map(|i| item("ml", i)).collect();
    let r = madd_raw(&mut con, "ml", &batch);
    let errs: Vec<String> = r.iter().filter_map(value_err_text).collect();
    assert!(
        !errs.is_empty() && errs.iter().all(|e| e.contains("max-links")),
        "{errs:?}"
    );
    assert!(info_int(&mut con, "ml", "FILTERS") <= 5);
    exec::<Value>(&mut con, &["CONFIG", "SET", "bf.bf-max-links", "4"]).unwrap();
    let e = exec_err(
        &mut con,
        &["BF.RESERVE", "ml2", "0.01", "400", "WINDOW", "60"],
    );
    assert_eq!(e, "ERR could not create filter");
}

/// INFO bf gauges stay equal to the sums of BF.INFO over the keyspace through
/// rotations (generations dropped), COPY, DEL and RESTORE.
#[test]
fn window_info_bf_gauges_stay_exact() {
    let s = Server::start();
    let mut con = s.conn();
    let gauges = |s: &Server| -> HashMap<String, i64> {
        s.info("bf_ferrobloom")
            .into_iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("bf_")?.to_string(), v.parse().ok()?)))
            .collect()
    };
    let sums = |con: &mut Connection| {
        let keys: Vec<String> = exec(con, &["KEYS", "*"]).unwrap();
        let (mut n, mut mem, mut links) = (0, 0, 0);
        for k in keys {
            n += 1;
            mem += info_int(con, &k, "SIZE");
            links += info_int(con, &k, "FILTERS");
        }
        (n, mem, links)
    };
    build(&mut con, "a");
    assert_eq!(exec::<i64>(&mut con, &["COPY", "a", "b"]).unwrap(), 1);
    for step in 0..12 {
        set_clock(&mut con, 2 * W_MS + step * W_MS / 8);
        exec::<Value>(&mut con, &["BF.ADD", "a", &item("g", step as u64)]).unwrap();
        let g = gauges(&s);
        let (n, mem, links) = sums(&mut con);
        assert_eq!(
            (g["bloom_filters"], g["bloom_memory"], g["bloom_links"]),
            (n, mem, links),
            "step {step}"
        );
    }
    exec::<Value>(&mut con, &["DEL", "a"]).unwrap();
    let g = gauges(&s);
    assert_eq!(
        (g["bloom_filters"], g["bloom_memory"]),
        (1, info_int(&mut con, "b", "SIZE"))
    );
}

/// A filter for 2^30 items per window: creating generations (hundreds of MB
/// each, lazily zeroed) and dropping them stay far under 100 ms per command.
#[test]
fn window_slowlog_for_2_pow_30_per_window() {
    let s = Server::start();
    let mut con = s.conn();
    exec::<Value>(&mut con, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]).unwrap();
    exec::<Value>(&mut con, &["CONFIG", "SET", "slowlog-max-len", "1024"]).unwrap();
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "big", "0.01", "1073741824", "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    exec::<Value>(&mut con, &["SLOWLOG", "RESET"]).unwrap();
    for step in 0..12 {
        set_clock(&mut con, step * W_MS / 4);
        let batch: Vec<String> = (0..100).map(|i| item(&format!("b{step}"), i)).collect();
        madd(&mut con, "big", &batch);
        assert_eq!(ones(&mexists(&mut con, "big", &batch)), 100);
        exec::<Value>(&mut con, &["BF.INFO", "big"]).unwrap();
        exec::<Value>(&mut con, &["BF.CARD", "big"]).unwrap();
    }
    assert_eq!(info_int(&mut con, "big", "FILTERS"), 5);
    exec::<Value>(&mut con, &["DEL", "big"]).unwrap();
    let worst = slowest(&mut con);
    println!("slowest command: {} us ({})", worst.0, worst.1);
    assert!(worst.0 < 100_000, "{} took {} us", worst.1, worst.0);
}

/// The slowest command in SLOWLOG: (server microseconds, command name).
fn slowest(con: &mut Connection) -> (i64, String) {
    let log: Vec<Value> = exec(con, &["SLOWLOG", "GET", "1024"]).unwrap();
    let mut worst = (0i64, String::new());
    for e in &log {
        let Value::Array(f) = e else { continue };
        let (Value::Int(us), Value::Array(args)) = (&f[2], &f[3]) else {
            continue;
        };
        let name = match &args[0] {
            Value::BulkString(b) => String::from_utf8_lossy(b).to_string(),
            _ => String::new(),
        };
        if *us > worst.0 {
            worst = (*us, name);
        }
    }
    worst
}

/// A generation at `bf.bf-max-links` refuses every further new item without
/// sizing the refused link again for each (a blocked link's sizing is a
/// bisection of about a millisecond: 1,000 refused items took about a second).
#[test]
fn window_refused_growth_costs_nothing_per_item() {
    let s = Server::start();
    let mut con = s.conn();
    exec::<Value>(&mut con, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]).unwrap();
    exec::<()>(
        &mut con,
        &[
            "BF.RESERVE",
            "w",
            "0.001",
            "4",
            "EXPANSION",
            "1",
            "LAYOUT",
            "blocked",
            "WINDOW",
            "600",
        ],
    )
    .unwrap();
    let grow: Vec<String> = (0..400).map(|i| item("grow", i)).collect();
    let r = madd_raw(&mut con, "w", &grow);
    let refused = r
        .iter()
        .filter(|v| matches!(v, Value::ServerError(_)))
        .count();
    assert!(
        refused > 100,
        "{refused}: the generation reached bf-max-links"
    );
    exec::<Value>(&mut con, &["SLOWLOG", "RESET"]).unwrap();
    let more: Vec<String> = (0..1000).map(|i| item("more", i)).collect();
    let r = madd_raw(&mut con, "w", &more);
    assert!(r.iter().all(|v| matches!(v, Value::ServerError(_))));
    let worst = slowest(&mut con);
    println!("BF.MADD of 1,000 refused items: {} us", worst.0);
    assert!(worst.0 < 100_000, "{} took {} us", worst.1, worst.0);
}

/// Corrupted windowed payloads (LOADCHUNK headers, RESTORE payloads) are
/// refused with a clean error, create nothing, and the server keeps serving.
#[test]
fn window_corrupt_payloads_are_refused() {
    let s = Server::start();
    let mut con = s.conn();
    build(&mut con, "w");
    let (_, header): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
        .arg("w")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert!(header.starts_with(b"FBbw"));
    let dump: Vec<u8> = redis::cmd("DUMP").arg("w").query(&mut con).unwrap();
    let mut refused = 0;
    for pos in (4..header.len()).step_by(3) {
        for x in [0x01u8, 0x80, 0xff] {
            let mut h = header.clone();
            h[pos] ^= x;
            let r: redis::RedisResult<Value> = redis::cmd("BF.LOADCHUNK")
                .arg("bad")
                .arg(1)
                .arg(&h)
                .query(&mut con);
            if r.is_err() {
                refused += 1;
                assert_eq!(err_text(r), "ERR received bad data");
            }
            exec::<Value>(&mut con, &["DEL", "bad"]).unwrap();
        }
    }
    assert!(refused > header.len() / 2, "{refused} refused");
    for cut in [5, 20, 47, header.len() - 1] {
        let r: redis::RedisResult<Value> = redis::cmd("BF.LOADCHUNK")
            .arg("bad")
            .arg(1)
            .arg(&header[..cut])
            .query(&mut con);
        assert_eq!(err_text(r), "ERR received bad data");
    }
    // RESTORE of a payload with a flipped header byte: refused (by the checksum), nothing created.
    let mut bad = dump.clone();
    let at = bad.windows(4).position(|w| w == b"FBbw").unwrap() + 8;
    bad[at] ^= 0xff;
    let r: redis::RedisResult<Value> = redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(&bad)
        .query(&mut con);
    assert!(r.is_err());
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "r"]).unwrap(), 0, "r");
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "bad"]).unwrap(), 0, "bad");
    assert_eq!(exec::<String>(&mut con, &["PING"]).unwrap(), "PONG");
    // The filter itself is untouched: its newest items still answer.
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", &item("w7", 0)]).unwrap(),
        1
    );
}
