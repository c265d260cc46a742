//! The blocked Bloom layout (`bf.bf-layout`, the `LAYOUT` option) and the
//! prefetching batch paths (BF.MADD, BF.INSERT, BF.MEXISTS, CF.INSERT[NX],
//! CF.MEXISTS): batch answers must equal one-item answers, item by item, on
//! filters large enough that prefetching reaches real memory.

mod common;

use common::*;
use redis::{Connection, Value};

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn batch<T: redis::FromRedisValue>(con: &mut Connection, head: &[&str], items: &[String]) -> T {
    let mut c = redis::cmd(head[0]);
    for a in &head[1..] {
        c.arg(*a);
    }
    for i in items {
        c.arg(i.as_str());
    }
    c.query(con).unwrap()
}

fn debug(con: &mut Connection, key: &str) -> Vec<String> {
    exec(con, &["BF.DEBUG", key]).unwrap()
}

#[test]
fn layout_config_and_option() {
    let s = Server::start();
    let mut con = s.conn();
    let v: Vec<String> = exec(&mut con, &["CONFIG", "GET", "bf.bf-layout"]).unwrap();
    assert_eq!(v, ["bf.bf-layout", "classic"]);
    assert!(exec_err(&mut con, &["CONFIG", "SET", "bf.bf-layout", "fast"]).contains("bf-layout"));

    // Classic: RedisBloom's exact sizes.
    exec::<()>(&mut con, &["BF.RESERVE", "c", "0.01", "1000"]).unwrap();
    assert_eq!(
        debug(&mut con, "c"),
        [
            "size:0",
            "bytes:1384 bits:11072 hashes:8 hashwidth:64 capacity:1000 size:0 ratio:0.005"
        ]
    );
    // Blocked by option: whole 64-byte blocks, fewer hashes, the same capacity.
    exec::<()>(
        &mut con,
        &["BF.RESERVE", "b", "0.01", "1000", "LAYOUT", "blocked"],
    )
    .unwrap();
    assert_eq!(
        debug(&mut con, "b"),
        [
            "size:0",
            "bytes:1472 bits:11776 hashes:7 hashwidth:64 capacity:1000 size:0 ratio:0.005 layout:blocked"
        ]
    );
    let size: Vec<i64> = exec(&mut con, &["BF.INFO", "b", "SIZE"]).unwrap();
    assert_eq!(size, [32 + 64 + 1472]);
    // Paired: whole blocks, a few percent over classic.
    exec::<()>(
        &mut con,
        &["BF.RESERVE", "p", "0.01", "1000", "LAYOUT", "PAIRED"],
    )
    .unwrap();
    assert_eq!(
        debug(&mut con, "p"),
        [
            "size:0",
            "bytes:1408 bits:11264 hashes:8 hashwidth:64 capacity:1000 size:0 ratio:0.005 layout:paired"
        ]
    );
    // By configuration, for auto-created and reserved filters alike.
    exec::<()>(&mut con, &["CONFIG", "SET", "bf.bf-layout", "BLOCKED"]).unwrap();
    let v: Vec<String> = exec(&mut con, &["CONFIG", "GET", "bf.bf-layout"]).unwrap();
    assert_eq!(v[1], "blocked");
    exec::<i64>(&mut con, &["BF.ADD", "auto", "x"]).unwrap();
    assert!(debug(&mut con, "auto")[1].ends_with("layout:blocked"));
    // The option wins over the configuration.
    exec::<Vec<i64>>(
        &mut con,
        &["BF.INSERT", "ic", "LAYOUT", "classic", "ITEMS", "a"],
    )
    .unwrap();
    assert!(!debug(&mut con, "ic")[1].contains("layout"));
    // Errors, and nothing created by a refused command.
    for bad in [
        &["BF.RESERVE", "e", "0.01", "10", "LAYOUT"][..],
        &["BF.RESERVE", "e", "0.01", "10", "LAYOUT", "fast"],
        &["BF.INSERT", "e", "LAYOUT", "fast", "ITEMS", "a"],
    ] {
        assert_eq!(
            exec_err(&mut con, bad),
            "ERR bad layout (expected classic, blocked, paired or redisbloom)"
        );
    }
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "e"]).unwrap(), 0);
    // Growth keeps the layout.
    let its = items("grow:", 500);
    let _: Vec<i64> = batch(&mut con, &["BF.MADD", "auto"], &its);
    let d = debug(&mut con, "auto");
    assert!(d.len() >= 4, "{d:?}");
    assert!(
        d[1..].iter().all(|l| l.ends_with("layout:blocked")),
        "{d:?}"
    );
}

/// One-item and batch answers agree item by item on a 100M-item filter of each
/// layout (about 140 MB each), for members, non-members and duplicates in one
/// batch, in batches shorter and longer than the prefetch window.
#[test]
fn bloom_batches_answer_like_single_commands() {
    let s = Server::start();
    let mut con = s.conn();
    for layout in ["classic", "blocked", "paired"] {
        let key = format!("big:{layout}");
        exec::<()>(
            &mut con,
            &["BF.RESERVE", &key, "0.01", "100000000", "LAYOUT", layout],
        )
        .unwrap();
        let members = items(&format!("m:{layout}:"), 3000);
        // MADD in batches of several sizes; every reply says "added".
        let mut at = 0;
        for n in [1usize, 7, 8, 9, 1000, 1975] {
            let r: Vec<i64> = batch(&mut con, &["BF.MADD", &key], &members[at..at + n]);
            assert_eq!(r, vec![1; n], "{layout}: MADD of {n}");
            at += n;
        }
        assert_eq!(at, members.len());
        // Duplicates inside one batch: the second copy answers 0.
        let dup = vec!["d1".to_string(), "d2".into(), "d1".into(), "d2".into()];
        let r: Vec<i64> = batch(&mut con, &["BF.INSERT", &key, "ITEMS"], &dup);
        assert_eq!(r, [1, 1, 0, 0]);
        // A mixed probe list: members, non-members, in an interleaved order.
        let mut probes = Vec::new();
        for i in 0..1500 {
            probes.push(members[i * 2].clone());
            probes.push(format!("absent:{layout}:{i}"));
        }
        let got: Vec<i64> = batch(&mut con, &["BF.MEXISTS", &key], &probes);
        let mut pipe = redis::pipe();
        for p in &probes {
            pipe.cmd("BF.EXISTS").arg(&key).arg(p.as_str());
        }
        let want: Vec<i64> = pipe.query(&mut con).unwrap();
        assert_eq!(got, want, "{layout}: MEXISTS vs EXISTS");
        assert!(got.iter().step_by(2).all(|&v| v == 1), "false negative");
        let fp = got.iter().skip(1).step_by(2).filter(|&&v| v == 1).count();
        assert!(fp < 20, "{layout}: {fp} false positives in 1500 at 1%/2");
    }
    // A missing key answers 0 for every item.
    let r: Vec<i64> = batch(&mut con, &["BF.MEXISTS", "nokey"], &items("x", 20));
    assert_eq!(r, vec![0; 20]);
}

#[test]
fn cuckoo_batches_answer_like_single_commands() {
    let s = Server::start();
    let mut con = s.conn();
    // Small sub-filters so the batch crosses growth: several sub-filters.
    exec::<()>(&mut con, &["CF.RESERVE", "cf", "512", "EXPANSION", "2"]).unwrap();
    let members = items("cm:", 4000);
    let mut at = 0;
    for n in [1usize, 8, 9, 1000, 2982] {
        let r: Vec<i64> = batch(
            &mut con,
            &["CF.INSERT", "cf", "ITEMS"],
            &members[at..at + n],
        );
        assert_eq!(r, vec![1; n], "CF.INSERT of {n}");
        at += n;
    }
    let info: Vec<Value> = exec(&mut con, &["CF.INFO", "cf"]).unwrap();
    let filters = match &info[5] {
        Value::Int(n) => *n,
        v => panic!("{v:?}"),
    };
    assert!(filters >= 3, "{info:?}");
    // INSERTNX: members answer 0, new items 1, duplicates in the batch 0.
    let nx = vec![
        members[0].clone(),
        "new1".into(),
        "new1".into(),
        members[3999].clone(),
    ];
    let r: Vec<i64> = batch(&mut con, &["CF.INSERTNX", "cf", "ITEMS"], &nx);
    assert_eq!(r, [0, 1, 0, 0]);
    let mut probes = Vec::new();
    for i in 0..2000 {
        probes.push(members[i * 2].clone());
        probes.push(format!("cabsent:{i}"));
    }
    let got: Vec<i64> = batch(&mut con, &["CF.MEXISTS", "cf"], &probes);
    let mut pipe = redis::pipe();
    for p in &probes {
        pipe.cmd("CF.EXISTS").arg("cf").arg(p.as_str());
    }
    let want: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(got, want);
    assert!(got.iter().step_by(2).all(|&v| v == 1), "false negative");
    let r: Vec<i64> = batch(&mut con, &["CF.MEXISTS", "nokey"], &items("x", 12));
    assert_eq!(r, vec![0; 12]);
}
