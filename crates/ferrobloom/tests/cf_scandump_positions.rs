//! CF.SCANDUMP at positions the module never returned, as RedisBloom's own flow
//! tests call it: `test_scandump_random_scan_small` (every position from 0 to
//! the filter's Size + 1024 of a filter filled until "Maximum expansions
//! reached") and `test_scandump_scan_big` (100 random positions in [0, 2·Size]
//! of a filter with a 33 MB sub-filter), from `tests/flow/test_cuckoo.py` of
//! RedisBloom v2.8.20
//! (<https://github.com/RedisBloom/RedisBloom/blob/v2.8.20/tests/flow/test_cuckoo.py>).
//! The filters are filled (kick-outs: fingerprints moved) before the scan, and
//! nothing moves during it.
//!
//! - RedisBloom's layout (`bf.cf-layout redisbloom`), side by side with the
//!   real RedisBloom 2.8.2: the same commands give the same filter, and every
//!   SCANDUMP reply is RedisBloom's (but the end, `[0, ""]` here, `[0, nil]`
//!   there: docs/compatibility.md).
//! - ferrobloom's layout: every position is answered with the bytes at that
//!   position (to the end of its sub-filter, at most 16 MiB), its next
//!   iterator carrying the filter's move count.
//! - The guard stays: a walk that began before a move is refused, with an
//!   error that says so.

mod common;

use common::redisbloom::*;
use common::rng::Rng;
use common::*;
use redis::{Connection, Value};

const MAX_CHUNK: usize = 16 << 20;
const POS_MASK: i64 = (1 << 40) - 1;

/// CF.SCANDUMP's reply with the end written as ferrobloom writes it.
fn scan_at(con: &mut Connection, key: &str, pos: i64) -> Result<(i64, Vec<u8>), String> {
    let v: Value = redis::cmd("CF.SCANDUMP")
        .arg(key)
        .arg(pos)
        .query(con)
        .map_err(|e| err_text::<()>(Err(e)))?;
    match v {
        Value::Array(a) => match &a[..] {
            [Value::Int(n), Value::BulkString(d)] => Ok((*n, d.clone())),
            [Value::Int(0), Value::Nil] => Ok((0, Vec::new())),
            _ => panic!("CF.SCANDUMP {key} {pos}: {a:?}"),
        },
        other => panic!("CF.SCANDUMP {key} {pos}: {other:?}"),
    }
}

fn size_of(con: &mut Connection, key: &str) -> i64 {
    let info: Vec<Value> = redis::cmd("CF.INFO").arg(key).query(con).unwrap();
    let at = info
        .iter()
        .position(|v| matches!(v, Value::SimpleString(s) if s == "Size"))
        .or_else(|| {
            info.iter()
                .position(|v| matches!(v, Value::BulkString(s) if s == b"Size"))
        })
        .unwrap();
    redis::from_redis_value(info[at + 1].clone()).unwrap()
}

/// `test_scandump_random_scan_small`'s filter: CF.ADD until "Maximum
/// expansions reached". Returns how many items were added.
fn fill_small(con: &mut Connection, key: &str) -> usize {
    let ok: String = exec(con, &["CF.RESERVE", key, "50"]).unwrap();
    assert_eq!(ok, "OK");
    for i in 0..10_000 {
        match exec::<Value>(con, &["CF.ADD", key, &format!("x{i}")]) {
            Ok(_) => {}
            Err(e) if err_text::<()>(Err(e.clone())) == "Maximum expansions reached" => {
                return i;
            }
            Err(e) => panic!("CF.ADD x{i}: {e}"),
        }
    }
    10_000
}

/// `test_scandump_scan_big`'s filter: 100 CF.INSERTs of 10,000 items into
/// `CF.RESERVE key 1024 EXPANSION 30000`, until "Maximum expansions reached".
fn fill_big(con: &mut Connection, key: &str) {
    let ok: String = exec(con, &["CF.RESERVE", key, "1024", "EXPANSION", "30000"]).unwrap();
    assert_eq!(ok, "OK");
    for i in 0..100 {
        let items: Vec<String> = (0..10_000).map(|j| format!("x{i}{j}")).collect();
        match redis::cmd("CF.INSERT")
            .arg(key)
            .arg("ITEMS")
            .arg(&items)
            .query::<Value>(con)
        {
            Ok(_) => {}
            Err(e) if err_text::<()>(Err(e.clone())) == "Maximum expansions reached" => break,
            Err(e) => panic!("CF.INSERT batch {i}: {e}"),
        }
    }
}

/// The positions of the big test: 100 random ones in [0, 2·size] (fixed
/// seed), and the chunk boundaries.
fn big_positions(size: i64, sub0: i64) -> Vec<i64> {
    let mut rng = Rng(0x5ca7_d0e5);
    let mut p: Vec<i64> = (0..100)
        .map(|_| rng.range(0, 2 * size as u64) as i64)
        .collect();
    p.extend([1, 1 + sub0, 1 + sub0 + MAX_CHUNK as i64, 2 + sub0]);
    p
}

#[test]
fn random_positions_answer_as_redisbloom() {
    let Some(so) = redisbloom_so() else {
        return;
    };
    let rbs = start_redisbloom(&so);
    let fbs = Server::builder()
        .args(&["--bf.cf-layout", "redisbloom"])
        .start();
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());

    // test_scandump_random_scan_small
    let n = fill_small(&mut rb, "cf");
    assert_eq!(fill_small(&mut fb, "cf"), n);
    both(&mut rb, &mut fb, &cmd(&["CF.INFO", "cf"]));
    let size = size_of(&mut fb, "cf");
    let debug: String = exec(&mut fb, &["CF.DEBUG", "cf"]).unwrap();
    eprintln!("small: {n} items, Size {size}, {debug}");
    let mut answered = 0;
    for pos in 0..size + 1024 {
        let want = scan_at(&mut rb, "cf", pos).unwrap();
        answered += usize::from(!want.1.is_empty());
        assert_eq!(
            scan_at(&mut fb, "cf", pos),
            Ok(want),
            "CF.SCANDUMP cf {pos}"
        );
    }
    assert!(answered as i64 > size / 2, "{answered}");
    // The same from another connection (RedisBloom's layout keeps walks by
    // connection; these are none of them).
    let mut other = fbs.conn();
    for pos in [2, size / 2, size] {
        let want = scan_at(&mut rb, "cf", pos).unwrap();
        assert_eq!(scan_at(&mut other, "cf", pos), Ok(want), "{pos}");
    }

    // The same filter after deletes and CF.COMPACT (compaction moves count in
    // RedisBloom's layout too), before any SCANDUMP: answered as RedisBloom.
    fill_small(&mut rb, "moved");
    fill_small(&mut fb, "moved");
    for i in 0..n / 3 {
        let del = cmd(&["CF.DEL", "moved", &format!("x{i}")]);
        both(&mut rb, &mut fb, &del);
    }
    both(&mut rb, &mut fb, &cmd(&["CF.COMPACT", "moved"]));
    both(&mut rb, &mut fb, &cmd(&["CF.DEBUG", "moved"]));
    let size = size_of(&mut fb, "moved");
    for pos in 0..size + 1024 {
        let want = scan_at(&mut rb, "moved", pos).unwrap();
        assert_eq!(
            scan_at(&mut fb, "moved", pos),
            Ok(want),
            "CF.SCANDUMP moved {pos}"
        );
    }

    // test_scandump_scan_big
    fill_big(&mut rb, "big");
    fill_big(&mut fb, "big");
    both(&mut rb, &mut fb, &cmd(&["CF.INFO", "big"]));
    both(&mut rb, &mut fb, &cmd(&["CF.DEBUG", "big"]));
    let size = size_of(&mut fb, "big");
    let debug: String = exec(&mut fb, &["CF.DEBUG", "big"]).unwrap();
    eprintln!("big: Size {size}, {debug}");
    let mut answered = 0;
    for pos in big_positions(size, 1024) {
        let want = scan_at(&mut rb, "big", pos).unwrap();
        answered += usize::from(!want.1.is_empty());
        let got = scan_at(&mut fb, "big", pos);
        assert!(
            got.as_ref() == Ok(&want),
            "CF.SCANDUMP big {pos}: {:?} vs RedisBloom's {:?}",
            got.map(|(n, d)| (n, d.len())),
            (want.0, want.1.len())
        );
    }
    assert!(answered > 30, "{answered}");
}

/// ferrobloom's layout: every position is answered with the bytes there (to
/// the end of its sub-filter, at most 16 MiB), and the next iterator carries
/// the move count and `position + length`.
#[test]
fn random_positions_answer_in_ferrobloom_layout() {
    let s = Server::start();
    let mut con = s.conn();
    for (key, big) in [("cf", false), ("big", true)] {
        if big {
            fill_big(&mut con, key);
        } else {
            fill_small(&mut con, key);
        }
        // The whole stream, by a walk; its sub-filter boundaries.
        let mut stream = Vec::new();
        let mut ends = Vec::new();
        let mut it = 1i64;
        let (_, _hdr) = scan_at(&mut con, key, 0).unwrap();
        loop {
            let (next, data) = scan_at(&mut con, key, it).unwrap();
            if next == 0 {
                break;
            }
            assert_ne!(next & !POS_MASK, 0, "{key}: items moved: walk iterators");
            stream.extend_from_slice(&data);
            it = next;
        }
        let debug: String = exec(&mut con, &["CF.DEBUG", key]).unwrap();
        let subs: usize = debug
            .split(' ')
            .find_map(|w| w.strip_prefix("filters:"))
            .unwrap()
            .parse()
            .unwrap();
        // Sub-filter k has base·expansion^k buckets: its bytes from the stream.
        let info_base: i64 = exec::<Vec<Value>>(&mut con, &["CF.INFO", key])
            .map(|v| redis::from_redis_value(v[3].clone()).unwrap())
            .unwrap();
        let exp: i64 = if big { 32768 } else { 1 };
        let per_bucket = stream.len() as i64
            / (0..subs as u32)
                .map(|k| info_base * exp.pow(k))
                .sum::<i64>();
        let mut at = 0;
        for k in 0..subs as u32 {
            at += info_base * exp.pow(k) * per_bucket;
            ends.push(at);
        }
        assert_eq!(*ends.last().unwrap(), stream.len() as i64);
        let size = size_of(&mut con, key);
        let positions: Vec<i64> = if big {
            big_positions(size, ends[0])
        } else {
            (0..size + 1024).collect()
        };
        for pos in positions {
            let got = scan_at(&mut con, key, pos);
            let (next, data) = got.unwrap_or_else(|e| panic!("{key} {pos}: {e}"));
            if pos == 0 {
                assert_eq!(next, 1);
                continue;
            }
            let off = pos - 1;
            let Some(end) = ends.iter().copied().find(|&e| off < e) else {
                assert_eq!((next, data.len()), (0, 0), "{key} {pos}: past the end");
                continue;
            };
            let len = (end - off).min(MAX_CHUNK as i64);
            assert_eq!(next & POS_MASK, pos + len, "{key} {pos}");
            assert_ne!(next & !POS_MASK, 0, "{key} {pos}");
            assert!(
                data[..] == stream[off as usize..(off + len) as usize],
                "{key} {pos}: other bytes"
            );
        }
    }
}

/// The guard for iterators the filter returned stays: a walk begun before a
/// move is refused with what happened, in both layouts; a walk begun again is
/// answered.
#[test]
fn a_walk_begun_before_a_move_is_still_refused() {
    let s = Server::start();
    let mut con = s.conn();
    let stale = "ERR the filter moved items after it answered SCANDUMP, and this iterator \
                 is not one of a walk it knows began since (start the walk again at 0 on one \
                 connection)";
    let moved = "ERR the filter moved items since this SCANDUMP walk began (start the walk \
                 again at 0)";
    for layout in ["ferrobloom", "redisbloom"] {
        let key = format!("w-{layout}");
        let ok: String = exec(
            &mut con,
            &["CF.RESERVE", &key, "64", "EXPANSION", "2", "LAYOUT", layout],
        )
        .unwrap();
        assert_eq!(ok, "OK");
        let items: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
        let _: Value = redis::cmd("CF.INSERT")
            .arg(&key)
            .arg("ITEMS")
            .arg(&items)
            .query(&mut con)
            .unwrap();
        // A walk begins (nothing moved yet: position iterators), then the
        // filter moves fingerprints: deletes and CF.COMPACT (compaction moves
        // count in both layouts), or kick-outs as it fills.
        let (one, _) = scan_at(&mut con, &key, 0).unwrap();
        let (next, _) = scan_at(&mut con, &key, one).unwrap();
        assert_eq!(next & !POS_MASK, 0, "{layout}");
        let more: Vec<String> = (0..400).map(|i| format!("b{i}")).collect();
        let _: Value = redis::cmd("CF.INSERT")
            .arg(&key)
            .arg("ITEMS")
            .arg(&more)
            .query(&mut con)
            .unwrap();
        for i in &more[..300] {
            let _: i64 = exec(&mut con, &["CF.DEL", &key, i]).unwrap();
        }
        let ok: String = exec(&mut con, &["CF.COMPACT", &key]).unwrap();
        assert_eq!(ok, "OK");
        let want = if layout == "redisbloom" { moved } else { stale };
        assert_eq!(
            scan_at(&mut con, &key, next),
            Err(want.to_string()),
            "{layout}"
        );
        // Another connection, an iterator of no walk it knows.
        let mut other = s.conn();
        assert_eq!(scan_at(&mut other, &key, 2), Err(stale.to_string()));
        // Begun again, the walk is answered to its end.
        let mut it = scan_at(&mut con, &key, 0).unwrap().0;
        while it != 0 {
            it = scan_at(&mut con, &key, it).unwrap().0;
        }
    }
}
