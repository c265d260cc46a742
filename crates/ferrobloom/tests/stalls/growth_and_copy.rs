//! Cuckoo filters of RedisBloom's layout (client inserts and AOF replay) stay bounded, COPY
//! of a large never-written filter costs what it holds, and refused Bloom growth costs
//! nothing per item.

use super::*;

/// One command in RESP, as the AOF stores it.
fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Appends commands to a stopped server's AOF (its incr file), so that the next
/// start replays them: a trusted write, like a replica's or an AOF's, to which no
/// configured limit applies.
fn append_to_aof(s: &Server, cmds: &[Vec<u8>]) {
    let dir = s.aof_dir();
    let manifest = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".manifest"))
        .expect("AOF manifest");
    let text = std::fs::read_to_string(manifest).unwrap();
    let incr = text
        .lines()
        .find(|l| l.contains("type i"))
        .and_then(|l| l.split_whitespace().nth(1))
        .expect("an incr file");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(incr))
        .unwrap();
    for c in cmds {
        std::io::Write::write_all(&mut f, c).unwrap();
    }
}

fn cf_filters(con: &mut Connection, key: &str) -> i64 {
    let v: Vec<Value> = redis::cmd("CF.INFO").arg(key).query(con).unwrap();
    for pair in v.chunks(2) {
        if let [k, Value::Int(n)] = pair {
            let label = match k {
                Value::SimpleString(t) => t.as_bytes(),
                Value::BulkString(b) => b.as_slice(),
                _ => &[],
            };
            if label == b"Number of filters" {
                return *n;
            }
        }
    }
    panic!("no Number of filters in {v:?}")
}

#[test]
fn redisbloom_layout_cuckoo_filters_stay_bounded() {
    // Issue 19, part 3. A client's CF.INSERT of 60,000 items into a filter of
    // RedisBloom's layout with 2 one-slot buckets per sub-filter took 2.05 s and
    // left 30,000 sub-filters: it now stops at cf-max-expansions (32), like a
    // filter of ferrobloom's layout, and answers -1 for the items beyond.
    let mut s = Server::builder()
        .args(&[
            "--slowlog-log-slower-than",
            "0",
            "--slowlog-max-len",
            "1024",
        ])
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut con = s.conn();
    let items: Vec<Vec<u8>> = (0..60_000).map(|i| format!("i{i}").into_bytes()).collect();
    let reserve: [&[u8]; 9] = [
        b"CF.RESERVE",
        b"c",
        b"2",
        b"BUCKETSIZE",
        b"1",
        b"EXPANSION",
        b"1",
        b"LAYOUT",
        b"redisbloom",
    ];
    assert_eq!(cmd_bytes(&mut con, &reserve), Value::Okay);
    let mut insert: Vec<&[u8]> = vec![b"CF.INSERT", b"c", b"ITEMS"];
    insert.extend(items.iter().map(|i| i.as_slice()));
    let v = assert_fast(&mut con, "CF.INSERT 60,000 items", &insert);
    let Value::Array(r) = v else { panic!() };
    let added = r.iter().filter(|x| **x == Value::Int(1)).count();
    assert!(
        (32..=64).contains(&added),
        "{added} items fit in 32 x 2 slots"
    );
    assert_eq!(cf_filters(&mut con, "c"), 32);
    assert_fast(
        &mut con,
        "CF.COMPACT (32 sub-filters)",
        &[b"CF.COMPACT", b"c"],
    );

    // The same filter built by a trusted writer (an AOF replay; a replica of
    // RedisBloom, which checks its limit once per command, builds the same):
    // 30,000 sub-filters. CF.COMPACT took 3.2 s and a CF.DEL that compacts 0.14 s;
    // each call now does a bounded step (the pass resumes on the next call).
    let mut big_reserve = reserve;
    big_reserve[1] = b"big";
    let mut big_insert = insert.clone();
    big_insert[1] = b"big";
    drop(con);
    s.shutdown_nosave();
    append_to_aof(&s, &[resp(&big_reserve), resp(&big_insert)]);
    s.start_again();
    let mut con = s.conn();
    let n = cf_filters(&mut con, "big");
    assert!(n > 20_000, "{n} sub-filters");
    let payload = dump(&mut con, b"big");
    eprintln!("{n} sub-filters, DUMP payload {} KB", payload.len() >> 10);
    // A client's RESTORE of it is held to cf-max-expansions: refused, quickly.
    let v = assert_fast(
        &mut con,
        "RESTORE 30,000 sub-filters",
        &[b"RESTORE", b"again", b"0", &payload],
    );
    assert!(is_err(&v), "{v:?}");
    // A client cannot grow it: refused before any work (RedisBloom's pre-check).
    let v = assert_fast(&mut con, "CF.ADD", &[b"CF.ADD", b"big", b"new"]);
    assert!(is_err(&v), "{v:?}");
    assert_fast(&mut con, "CF.EXISTS", &[b"CF.EXISTS", b"big", b"i7"]);
    for round in 0..3 {
        let what = format!("CF.COMPACT {round} (30,000 sub-filters)");
        assert_eq!(
            assert_fast(&mut con, &what, &[b"CF.COMPACT", b"big"]),
            Value::Okay
        );
    }
    // Deletes up to RedisBloom's trigger (more than 10% of the items), then the
    // delete that starts a compaction, and a few that continue it.
    let trigger = 60_000 / 11 + 1;
    let mut p = redis::pipe();
    for i in &items[..trigger - 1] {
        p.cmd("CF.DEL").arg("big").arg(i.as_slice()).ignore();
    }
    let _: () = p.query(&mut con).unwrap();
    for i in &items[trigger - 1..trigger + 4] {
        let v = assert_fast(&mut con, "CF.DEL (compacting)", &[b"CF.DEL", b"big", i]);
        assert_eq!(v, Value::Int(1));
    }
    // Nothing was lost by the bounded passes.
    let mut args: Vec<&[u8]> = vec![b"CF.MEXISTS", b"big"];
    args.extend(items[trigger + 4..].iter().map(|i| i.as_slice()));
    let v: Vec<i64> = {
        let mut c = redis::cmd("CF.MEXISTS");
        for a in &args[1..] {
            c.arg(*a);
        }
        c.query(&mut con).unwrap()
    };
    assert!(v.iter().all(|x| *x == 1), "an item was lost");
    assert!(s.is_alive());
}

#[test]
fn copy_of_a_large_never_written_filter_costs_what_it_holds() {
    // Issue 19, part 4: COPY of a 418 MB Bloom filter that was never written took
    // 0.33 s and 418 MB of RSS; a 512 MB cuckoo filter 0.6 s. A copy now copies
    // only the chunks ever written.
    let s = server();
    let mut con = s.conn();
    // 20 items: 480 pages of the Bloom filter written (each costs a page fault
    // on the copy too; a copy costs what the original holds).
    let before: Vec<Vec<u8>> = (0..20).map(|i| format!("b{i}").into_bytes()).collect();
    let after: Vec<Vec<u8>> = (0..100).map(|i| format!("a{i}").into_bytes()).collect();
    let probes: Vec<Vec<u8>> = (0..2000).map(|i| format!("p{i}").into_bytes()).collect();
    let exists = |con: &mut Connection, cmd: &str, key: &str, items: &[Vec<u8>]| -> Vec<i64> {
        let mut c = redis::cmd(cmd);
        c.arg(key);
        for i in items {
            c.arg(i.as_slice());
        }
        c.query(con).unwrap()
    };
    let digest = |con: &mut Connection, key: &str| -> Value {
        redis::cmd("DEBUG")
            .arg("DIGEST-VALUE")
            .arg(key)
            .query(con)
            .unwrap()
    };
    for (family, reserve, add, mexists) in [
        (
            "bloom",
            &[&b"BF.RESERVE"[..], b"f", b"1e-7", b"100000000"][..],
            "BF.MADD",
            "BF.MEXISTS",
        ),
        (
            "cuckoo",
            &[&b"CF.RESERVE"[..], b"f", b"536870912"][..],
            "CF.INSERT",
            "CF.MEXISTS",
        ),
    ] {
        let _: i64 = redis::cmd("DEL")
            .arg("f")
            .arg("f2")
            .arg("e")
            .arg("e2")
            .query(&mut con)
            .unwrap();
        assert_eq!(cmd_bytes(&mut con, reserve), Value::Okay, "{family}");
        let mut empty = reserve.to_vec();
        empty[1] = b"e";
        assert_eq!(cmd_bytes(&mut con, &empty), Value::Okay, "{family}");
        let rss0 = rss(&s);
        // Never written.
        assert_fast(
            &mut con,
            &format!("COPY empty {family}"),
            &[b"COPY", b"e", b"e2"],
        );
        assert_eq!(digest(&mut con, "e"), digest(&mut con, "e2"), "{family}");
        // Sparsely written.
        let mut c = redis::cmd(add);
        c.arg("f");
        if add == "CF.INSERT" {
            c.arg("ITEMS");
        }
        for i in &before {
            c.arg(i.as_slice());
        }
        let _: Value = c.query(&mut con).unwrap();
        assert_fast(
            &mut con,
            &format!("COPY sparse {family}"),
            &[b"COPY", b"f", b"f2"],
        );
        let grew = rss(&s).saturating_sub(rss0);
        eprintln!("{family}: RSS +{} MB after two COPYs", grew >> 20);
        assert!(grew < 64 << 20, "{family}: RSS grew by {} MB", grew >> 20);
        assert_eq!(digest(&mut con, "f"), digest(&mut con, "f2"), "{family}");
        let all: Vec<Vec<u8>> = before.iter().chain(&probes).cloned().collect();
        assert_eq!(
            exists(&mut con, mexists, "f", &all),
            exists(&mut con, mexists, "f2", &all),
            "{family}: the copy answers as the original"
        );
        assert!(exists(&mut con, mexists, "f2", &before)
            .iter()
            .all(|x| *x == 1));
        // Items added after the copy: each filter has its own.
        let mut c = redis::cmd(add);
        c.arg("f2");
        if add == "CF.INSERT" {
            c.arg("ITEMS");
        }
        for i in &after {
            c.arg(i.as_slice());
        }
        let _: Value = c.query(&mut con).unwrap();
        assert!(exists(&mut con, mexists, "f2", &after)
            .iter()
            .all(|x| *x == 1));
        let in_original = exists(&mut con, mexists, "f", &after)
            .iter()
            .filter(|x| **x == 1)
            .count();
        assert!(
            in_original <= 2,
            "{family}: {in_original} items added to the copy show in the original"
        );
        assert_ne!(digest(&mut con, "f"), digest(&mut con, "f2"), "{family}");
    }
}

#[test]
fn refused_bloom_growth_costs_nothing_per_item() {
    // A blocked Bloom filter at bf-max-links: every further new item is refused,
    // and each refusal used to size the next link again (a bisection over the
    // blocked false-positive model, 1-4 ms), so a BF.INSERT of 1,000 new items
    // took seconds. The next link's shape is now kept while growth is refused.
    let s = server();
    let mut con = s.conn();
    let v = cmd_bytes(
        &mut con,
        &[
            b"BF.RESERVE",
            b"b",
            b"0.001",
            b"1",
            b"EXPANSION",
            b"1",
            b"LAYOUT",
            b"blocked",
        ],
    );
    assert_eq!(v, Value::Okay);
    // Grow it to 64 links, one BF.ADD at a time (each growth sizes a link).
    let mut refused = 0;
    for i in 0..200 {
        if is_err(&cmd_bytes(
            &mut con,
            &[b"BF.ADD", b"b", format!("y{i}").as_bytes()],
        )) {
            refused += 1;
        }
    }
    assert!(refused > 100, "{refused}: the filter reached bf-max-links");
    let items: Vec<Vec<u8>> = (0..1000).map(|i| format!("x{i}").into_bytes()).collect();
    let mut args: Vec<&[u8]> = vec![b"BF.INSERT", b"b", b"ITEMS"];
    args.extend(items.iter().map(|i| i.as_slice()));
    assert_fast(&mut con, "BF.INSERT 1,000 items at bf-max-links", &args);
    let mut args: Vec<&[u8]> = vec![b"BF.MADD", b"b"];
    args.extend(items.iter().map(|i| i.as_slice()));
    assert_fast(&mut con, "BF.MADD 1,000 items at bf-max-links", &args);
}
