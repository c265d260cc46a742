//! `BF.SCANDUMP key iterator STAMP` / `CF.SCANDUMP ... STAMP`: every reply
//! carries the stamp of the state its chunk was read from. The stamp changes
//! with every write and every new value (RESTORE, COPY, a reload, a RENAME of
//! another filter over the key), even one whose header is equal; reads leave
//! it; without STAMP the replies are RedisBloom's.

use super::common::bf::*;
use super::common::*;
use redis::{Connection, Value};

/// `(next, data, stamp)` of `<cmd> key iter STAMP`.
fn stamped(con: &mut Connection, cmd: &str, key: &str, it: i64) -> (i64, Vec<u8>, i64) {
    let reply = items(rawv(con, &[cmd, key, &it.to_string(), "STAMP"]));
    match reply.as_slice() {
        [Value::Int(n), Value::BulkString(d), Value::Int(s)] => (*n, d.clone(), *s),
        other => panic!("{cmd} {key} {it} STAMP: {other:?}"),
    }
}

/// The stamp of a key's state (from the header's reply).
fn stamp(con: &mut Connection, cmd: &str, key: &str) -> i64 {
    stamped(con, cmd, key, 0).2
}

/// A whole walk with STAMP: every reply's stamp, and the chunks.
fn walk(con: &mut Connection, cmd: &str, key: &str) -> (Vec<i64>, Dump) {
    let (mut stamps, mut chunks, mut it) = (Vec::new(), Vec::new(), 0);
    loop {
        let (next, data, s) = stamped(con, cmd, key, it);
        stamps.push(s);
        if next == 0 {
            return (stamps, chunks);
        }
        chunks.push((next, data));
        it = next;
    }
}

#[test]
fn stamps_name_states_of_bloom_filters() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE a 0.01 1000");
    ok(&mut con, "BF.RESERVE b 0.01 1000");
    let sa = stamp(&mut con, "BF.SCANDUMP", "a");
    assert!(sa >= 0);
    // Two filters of equal headers and bits: two stamps.
    assert_ne!(sa, stamp(&mut con, "BF.SCANDUMP", "b"));
    // Reads keep it: SCANDUMP, EXISTS, INFO, CARD, DEBUG.
    for line in [
        "BF.EXISTS a x",
        "BF.MEXISTS a x y",
        "BF.INFO a",
        "BF.CARD a",
        "BF.DEBUG a",
    ] {
        q(&mut con, line);
        assert_eq!(stamp(&mut con, "BF.SCANDUMP", "a"), sa, "{line}");
    }
    // A walk's every reply carries it, and its chunks are SCANDUMP's.
    let (stamps, chunks) = walk(&mut con, "BF.SCANDUMP", "a");
    assert!(stamps.iter().all(|&x| x == sa), "{stamps:?}");
    assert_eq!(chunks, scandump(&mut con, "a"));
    // Every write gets a new one, also one that changes nothing.
    let mut seen = vec![sa];
    for line in [
        "BF.ADD a x",
        "BF.ADD a x",
        "BF.MADD a y z",
        "BF.INSERT a ITEMS w",
    ] {
        q(&mut con, line);
        let now = stamp(&mut con, "BF.SCANDUMP", "a");
        assert!(!seen.contains(&now), "{line}: {now} seen before");
        seen.push(now);
    }
    // A refused write (BF.RESERVE of an existing key) opened it for writing too.
    assert!(err(&mut con, "BF.RESERVE a 0.01 10").contains("item exists"));
    assert!(!seen.contains(&stamp(&mut con, "BF.SCANDUMP", "a")));
}

#[test]
fn a_new_value_gets_a_new_stamp_even_with_an_equal_header() {
    let s = Server::start();
    let mut con = s.conn();
    // Two filters of equal headers (equal counts), different bits.
    okv(&mut con, &["BF.RESERVE", "a", "0.01", "1000"]);
    okv(&mut con, &["BF.RESERVE", "b", "0.01", "1000"]);
    intv(&mut con, &["BF.ADD", "a", "only-in-a"]);
    intv(&mut con, &["BF.ADD", "b", "only-in-b"]);
    let (ha, hb) = (scandump(&mut con, "a"), scandump(&mut con, "b"));
    assert_eq!(ha[0], hb[0], "equal headers");
    let sa = stamp(&mut con, "BF.SCANDUMP", "a");
    let sb = stamp(&mut con, "BF.SCANDUMP", "b");
    // RENAME b over a: a's key now holds b's value, with b's stamp.
    assert_eq!(int(&mut con, "COPY b b2"), 1);
    ok(&mut con, "RENAME b a");
    assert_eq!(stamp(&mut con, "BF.SCANDUMP", "a"), sb);
    assert_ne!(sb, sa);
    // A value moved away and back unwritten keeps its stamp (it is the same state).
    ok(&mut con, "RENAME a t");
    ok(&mut con, "RENAME t a");
    assert_eq!(stamp(&mut con, "BF.SCANDUMP", "a"), sb);
    // COPY, RESTORE and a reload make new values: new stamps.
    let c = stamp(&mut con, "BF.SCANDUMP", "b2");
    assert!(c != sb && c != sa);
    let dump: Vec<u8> = exec(&mut con, &["DUMP", "a"]).unwrap();
    let mut restore = redis::cmd("RESTORE");
    restore.arg("a").arg(0).arg(&dump).arg("REPLACE");
    let _: () = restore.query(&mut con).unwrap();
    let r = stamp(&mut con, "BF.SCANDUMP", "a");
    assert!(![sa, sb, c].contains(&r));
    assert_eq!(scandump(&mut con, "a"), hb, "RESTORE kept the filter");
    ok(&mut con, "DEBUG RELOAD");
    let reloaded = stamp(&mut con, "BF.SCANDUMP", "a");
    assert!(![sa, sb, c, r].contains(&reloaded));
    assert_eq!(scandump(&mut con, "a"), hb);
    // LOADCHUNK into the key writes it.
    let chunks = scandump(&mut con, "a");
    let (it, data) = &chunks[1];
    let mut load = redis::cmd("BF.LOADCHUNK");
    load.arg("a").arg(*it).arg(&data[..]);
    let _: () = load.query(&mut con).unwrap();
    assert_ne!(stamp(&mut con, "BF.SCANDUMP", "a"), reloaded);
}

#[test]
fn stamps_of_cuckoo_filters_and_windowed_filters() {
    let s = Server::start();
    let mut con = s.conn();
    for (key, layout) in [("c", "ferrobloom"), ("rb", "redisbloom")] {
        okv(&mut con, &["CF.RESERVE", key, "1000", "LAYOUT", layout]);
        intv(&mut con, &["CF.ADD", key, "x"]);
        let s0 = stamp(&mut con, "CF.SCANDUMP", key);
        let (stamps, chunks) = walk(&mut con, "CF.SCANDUMP", key);
        assert!(stamps.iter().all(|&x| x == s0), "{layout}: {stamps:?}");
        assert!(!chunks.is_empty());
        for line in [format!("CF.EXISTS {key} x"), format!("CF.COUNT {key} x")] {
            q(&mut con, &line);
            assert_eq!(stamp(&mut con, "CF.SCANDUMP", key), s0, "{line}");
        }
        let mut seen = vec![s0];
        for line in [
            format!("CF.ADD {key} y"),
            format!("CF.ADDNX {key} y"),
            format!("CF.DEL {key} y"),
            format!("CF.INSERT {key} ITEMS z"),
            format!("CF.COMPACT {key}"),
        ] {
            q(&mut con, &line);
            let now = stamp(&mut con, "CF.SCANDUMP", key);
            assert!(!seen.contains(&now), "{layout} {line}");
            seen.push(now);
        }
    }
    okv(
        &mut con,
        &["BF.RESERVE", "w", "0.01", "100", "WINDOW", "60"],
    );
    intv(&mut con, &["BF.ADD", "w", "x"]);
    let s0 = stamp(&mut con, "BF.SCANDUMP", "w");
    let (stamps, _) = walk(&mut con, "BF.SCANDUMP", "w");
    assert!(stamps.iter().all(|&x| x == s0));
    intv(&mut con, &["BF.ADD", "w", "y"]);
    assert_ne!(stamp(&mut con, "BF.SCANDUMP", "w"), s0);
}

#[test]
fn without_stamp_the_replies_are_redisbloom_s() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE a 0.01 100");
    ok(&mut con, "CF.RESERVE c 100");
    for cmd in ["BF.SCANDUMP", "CF.SCANDUMP"] {
        let key = if cmd.starts_with("BF") { "a" } else { "c" };
        assert_eq!(items(rawv(&mut con, &[cmd, key, "0"])).len(), 2);
        // STAMP in any case; anything else, or more, is the arity error.
        for word in ["STAMP", "stamp", "Stamp"] {
            assert_eq!(items(rawv(&mut con, &[cmd, key, "0", word])).len(), 3);
        }
        let name = cmd.to_lowercase();
        for extra in [&["STAMPS"][..], &["1"], &["STAMP", "STAMP"]] {
            let mut args = vec![cmd, key, "0"];
            args.extend_from_slice(extra);
            assert_eq!(errv(&mut con, &args), arity(&name), "{args:?}");
        }
        // The key's errors come as without it.
        assert_eq!(
            errv(&mut con, &[cmd, "missing", "0", "STAMP"]),
            "ERR not found"
        );
    }
}
