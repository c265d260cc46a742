//! What a RedisBloom 2.8.2 primary writes, applied by ferrobloom exactly as
//! RedisBloom applied it: live through replication (then promoted) and through
//! RedisBloom's appendonly file replayed at startup. The write stream holds
//! every command form RedisBloom 2.x accepts and ferrobloom's clients may not
//! send (error rates above 0.25, NOCREATE with CAPACITY, misspelled and
//! repeated options, keywords by first letter, capacity above 2^30, expansion
//! above 32768, keywords as key names, implicit creations with RedisBloom's
//! defaults). Every key is compared between the two servers: INFO, DEBUG,
//! CARD/COUNT, MEXISTS of the members and 100,000 never-added items and the
//! SCANDUMP stream (`common::redisbloom::answers`); the cuckoo filter above
//! 2^30 (a 1 GiB table) without its SCANDUMP.

mod common;

use common::redisbloom::*;
use common::*;
use redis::Connection;

fn case(key: &str, kind: Kind, setup: Vec<Cmd>, more: Vec<Cmd>) -> Case {
    Case {
        key: key.into(),
        kind,
        payload: None,
        setup,
        more,
    }
}

/// Adds the members `answers` asks about (`i0..i399`, `j0..j399`): the `i`
/// items with `first` (an insert command up to its items), the `j` items later.
fn fill(kind: Kind, key: &str, first: &[&str]) -> Vec<Cmd> {
    let madd = |p: &str| match kind {
        Kind::Bloom => with_items(&["BF.MADD", key], items(p, 400)),
        Kind::Cuckoo => with_items(&["CF.INSERT", key, "ITEMS"], items(p, 400)),
    };
    vec![with_items(first, items("i", 400)), madd("j")]
}

fn more(kind: Kind, key: &str) -> Vec<Cmd> {
    match kind {
        Kind::Bloom => vec![with_items(&["BF.MADD", key], items("m", 300))],
        Kind::Cuckoo => vec![
            with_items(&["CF.INSERT", key, "ITEMS"], items("m", 300)),
            cmd(&["CF.DEL", key, "j7"]),
        ],
    }
}

/// The write stream, per key (run on the RedisBloom primary).
fn stream_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut bf = |key: &str, setup: Vec<Cmd>, first: &[&str]| {
        let mut s = setup;
        s.extend(fill(Kind::Bloom, key, first));
        v.push(case(key, Kind::Bloom, s, more(Kind::Bloom, key)));
    };
    // Error rate above 0.25 (RedisBloom 8 and ferrobloom's clients: capped).
    bf(
        "bf:s05",
        vec![cmd(&["BF.RESERVE", "bf:s05", "0.5", "100"])],
        &["BF.MADD", "bf:s05"],
    );
    bf(
        "bf:n05",
        vec![cmd(&["BF.RESERVE", "bf:n05", "0.5", "1000", "NONSCALING"])],
        &["BF.MADD", "bf:n05"],
    );
    bf(
        "bf:ins05",
        vec![],
        &[
            "BF.INSERT",
            "bf:ins05",
            "ERROR",
            "0.5",
            "CAPACITY",
            "60",
            "ITEMS",
        ],
    );
    // NOCREATE with CAPACITY/ERROR onto an existing key.
    bf(
        "bf:nocreate",
        vec![cmd(&["BF.ADD", "bf:nocreate", "x"])],
        &[
            "BF.INSERT",
            "bf:nocreate",
            "CAPACITY",
            "50",
            "ERROR",
            "0.2",
            "NOCREATE",
            "ITEMS",
        ],
    );
    // Misspelled options: ignored by BF.RESERVE, EXPANSION for BF.INSERT.
    bf(
        "bf:typo",
        vec![cmd(&[
            "BF.RESERVE",
            "bf:typo",
            "0.01",
            "50",
            "EXPANSON",
            "4",
        ])],
        &["BF.MADD", "bf:typo"],
    );
    bf(
        "bf:ityp",
        vec![],
        &[
            "BF.INSERT",
            "bf:ityp",
            "CAPACITY",
            "30",
            "EXPANSON",
            "4",
            "ITEMS",
        ],
    );
    // Keywords by their first letter, repeated options (last wins in INSERT).
    bf(
        "bf:letters",
        vec![],
        &[
            "BF.INSERT",
            "bf:letters",
            "cap",
            "10",
            "c",
            "40",
            "er",
            "0.3",
            "eee",
            "3",
            "ixyz",
        ],
    );
    bf(
        "bf:ns",
        vec![],
        &[
            "BF.INSERT",
            "bf:ns",
            "ERROR",
            "0.4",
            "CAPACITY",
            "900",
            "NONSCALING",
            "EXPANSION",
            "3",
            "ITEMS",
        ],
    );
    // BF.RESERVE: the first EXPANSION wins, NONSCALING twice, a keyword as key.
    bf(
        "bf:rep",
        vec![cmd(&[
            "BF.RESERVE",
            "bf:rep",
            "0.01",
            "20",
            "EXPANSION",
            "3",
            "EXPANSION",
        ])],
        &["BF.MADD", "bf:rep"],
    );
    bf(
        "bf:rep2",
        vec![cmd(&[
            "BF.RESERVE",
            "bf:rep2",
            "0.02",
            "2000",
            "NONSCALING",
            "NONSCALING",
        ])],
        &["BF.MADD", "bf:rep2"],
    );
    bf(
        "nonscaling",
        vec![cmd(&["BF.RESERVE", "nonscaling", "0.01", "1000"])],
        &["BF.MADD", "nonscaling"],
    );
    // Capacity above 2^30, expansion above 32768.
    bf(
        "bf:big",
        vec![cmd(&[
            "BF.RESERVE",
            "bf:big",
            "0.99",
            "1073741825",
            "NONSCALING",
        ])],
        &["BF.MADD", "bf:big"],
    );
    bf(
        "bf:wide",
        vec![cmd(&[
            "BF.RESERVE",
            "bf:wide",
            "0.01",
            "10",
            "EXPANSION",
            "40000",
        ])],
        &["BF.MADD", "bf:wide"],
    );
    // Implicit creation with RedisBloom's defaults (expansion 2).
    bf(
        "bf:add",
        vec![cmd(&["BF.ADD", "bf:add", "first"])],
        &["BF.MADD", "bf:add"],
    );

    let mut cf = |key: &str, setup: Vec<Cmd>, first: &[&str]| {
        let mut s = setup;
        s.extend(fill(Kind::Cuckoo, key, first));
        v.push(case(key, Kind::Cuckoo, s, more(Kind::Cuckoo, key)));
    };
    // CF.RESERVE: the first BUCKETSIZE wins, unknown options ignored, a keyword as key.
    cf(
        "cf:rep",
        vec![cmd(&[
            "CF.RESERVE",
            "cf:rep",
            "300",
            "BUCKETSIZE",
            "4",
            "BUCKETSIZE",
            "8",
        ])],
        &["CF.INSERT", "cf:rep", "ITEMS"],
    );
    cf(
        "cf:unk",
        vec![cmd(&["CF.RESERVE", "cf:unk", "500", "FOO", "1"])],
        &["CF.INSERT", "cf:unk", "ITEMS"],
    );
    cf(
        "EXPANSION",
        vec![cmd(&["CF.RESERVE", "EXPANSION", "100"])],
        &["CF.INSERT", "EXPANSION", "ITEMS"],
    );
    // NOCREATE with CAPACITY onto an existing key; first letters; repeated CAPACITY.
    cf(
        "cf:nocreate",
        vec![cmd(&["CF.ADD", "cf:nocreate", "x"])],
        &[
            "CF.INSERT",
            "cf:nocreate",
            "CAPACITY",
            "100",
            "NOCREATE",
            "ITEMS",
        ],
    );
    cf(
        "cf:letters",
        vec![],
        &["CF.INSERT", "cf:letters", "cap", "100", "i"],
    );
    cf(
        "cf:nx",
        vec![],
        &[
            "CF.INSERTNX",
            "cf:nx",
            "CAPACITY",
            "10",
            "CAPACITY",
            "200",
            "ITEMS",
        ],
    );
    // Implicit creation: RedisBloom's fixed defaults (1024, 2, 20, 1).
    cf(
        "cf:add",
        vec![
            cmd(&["CF.ADD", "cf:add", "first"]),
            cmd(&["CF.ADDNX", "cf:addnx", "first"]),
        ],
        &["CF.INSERT", "cf:add", "ITEMS"],
    );
    v.push(case(
        "cf:addnx",
        Kind::Cuckoo,
        vec![],
        more(Kind::Cuckoo, "cf:addnx"),
    ));
    v
}

/// The cuckoo filter above 2^30 (1 GiB of slots, lazily zeroed on both sides).
const BIG_CF: &str = "cf:big";

fn big_cf_stream() -> Vec<Cmd> {
    vec![
        with_items(
            &["CF.INSERT", BIG_CF, "CAPACITY", "1073741825", "ITEMS"],
            items("i", 400),
        ),
        with_items(&["CF.INSERTNX", BIG_CF, "ITEMS"], items("j", 400)),
    ]
}

/// `answers` without the SCANDUMP stream (1 GiB here).
fn compare_big_cf(rb: &mut Connection, fb: &mut Connection, how: &str) {
    let strip = |a: Vec<(String, String)>| -> Vec<(String, String)> {
        a.into_iter().filter(|(w, _)| w != "CF.SCANDUMP").collect()
    };
    let want = strip(answers_without_scandump(rb, BIG_CF));
    let got = strip(answers_without_scandump(fb, BIG_CF));
    assert_same_answers(&got, &want, BIG_CF, how);
}

fn answers_without_scandump(con: &mut Connection, key: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in [cmd(&["CF.INFO", key]), cmd(&["CF.DEBUG", key])] {
        out.push((String::from_utf8_lossy(&c[0]).into_owned(), reply(con, &c)));
    }
    let probes: Vec<String> = items("i", 400)
        .chain(items("j", 400))
        .chain(items("m", 300))
        .chain(items("p", 20_000))
        .collect();
    let r: Vec<i64> = redis::cmd("CF.MEXISTS")
        .arg(key)
        .arg(&probes)
        .query(con)
        .unwrap();
    out.push(("CF.MEXISTS".into(), format!("{r:?}")));
    out
}

fn run_stream(rb: &mut Connection, cases: &[Case]) {
    build(rb, cases);
    for c in big_cf_stream() {
        reply(rb, &c);
    }
}

/// The stream did what the test means on RedisBloom (so a silent change of
/// the matrix cannot make the comparison vacuous).
fn check_primary(rb: &mut Connection) {
    let text = |rb: &mut Connection, c: &[&str]| -> String {
        let mut q = redis::cmd(c[0]);
        q.arg(&c[1..]);
        match q.query::<redis::Value>(rb).unwrap() {
            redis::Value::Array(v) => v
                .iter()
                .map(|x| redis::from_redis_value::<String>(x.clone()).unwrap_or_default())
                .collect::<Vec<_>>()
                .join(" "),
            x => redis::from_redis_value::<String>(x).unwrap(),
        }
    };
    let int = |rb: &mut Connection, c: &[&str]| -> i64 {
        let mut q = redis::cmd(c[0]);
        q.arg(&c[1..]);
        let v: Vec<i64> = q.query(rb).unwrap();
        v[0]
    };
    assert!(text(rb, &["BF.DEBUG", "bf:n05"]).contains("ratio:0.5"));
    assert!(text(rb, &["BF.DEBUG", "bf:big"]).contains("capacity:1073741825"));
    assert_eq!(int(rb, &["BF.INFO", "bf:wide", "EXPANSION"]), 40000);
    assert_eq!(int(rb, &["BF.INFO", "bf:typo", "EXPANSION"]), 2);
    assert_eq!(int(rb, &["BF.INFO", "bf:ityp", "EXPANSION"]), 4);
    let card: i64 = redis::cmd("BF.CARD").arg("bf:nocreate").query(rb).unwrap();
    assert!(card > 700, "{card}");
    assert!(text(rb, &["CF.DEBUG", "cf:rep"]).starts_with("bktsize:4 "));
    assert!(text(rb, &["CF.DEBUG", "EXPANSION"]).contains("expansion:128"));
    assert!(text(rb, &["CF.DEBUG", BIG_CF]).contains("buckets:536870912"));
}

fn all_keys(cases: &[Case]) -> Vec<Case> {
    cases
        .iter()
        .map(|c| Case::existing(&c.key, c.kind, c.more.clone()))
        .collect()
}

#[test]
fn ferrobloom_replica_applies_a_redisbloom_primarys_stream_as_redisbloom() {
    let Some(so) = redisbloom_so() else { return };
    let rbs = start_redisbloom(&so);
    let fbs = ferrobloom_builder()
        .args(&[
            "--bf.bf-layout",
            "redisbloom",
            "--bf.cf-layout",
            "redisbloom",
        ])
        .replica_of(&rbs)
        .start();
    rbs.wait_for_sync(&fbs);
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    let cases = stream_cases();
    run_stream(&mut rb, &cases);
    check_primary(&mut rb);
    rbs.wait_for_offset(&fbs);
    let keys = all_keys(&cases);
    compare_all(&mut rb, &mut fb, &keys);
    compare_big_cf(&mut rb, &mut fb, "replicated");
    // Promote: the replica now takes client writes, and the filters evolve as
    // RedisBloom's do under the same writes.
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut fb)
        .unwrap();
    evolve(&mut rb, &mut fb, &keys);
    both(
        &mut rb,
        &mut fb,
        &with_items(&["CF.INSERT", BIG_CF, "ITEMS"], items("m", 300)),
    );
    compare_all(&mut rb, &mut fb, &keys);
    compare_big_cf(&mut rb, &mut fb, "after promotion");
}

#[test]
fn redisbloom_appendonly_file_replays_into_ferrobloom_as_redisbloom() {
    let Some(so) = redisbloom_so() else { return };
    // The commands themselves in the AOF (no rewrite, no RDB preamble).
    let mut rbs = Server::builder()
        .module_path(&so)
        .server_bin("redis-server")
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut rb = rbs.conn();
    let cases = stream_cases();
    run_stream(&mut rb, &cases);
    check_primary(&mut rb);
    rbs.stop(Stop::ShutdownNoSave);
    // Defaults on the ferrobloom side: the AOF alone decides.
    let mut fbs = ferrobloom_builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    fbs.stop(Stop::ShutdownNoSave);
    std::fs::remove_dir_all(fbs.aof_dir()).ok();
    std::fs::create_dir_all(fbs.aof_dir()).unwrap();
    for e in std::fs::read_dir(rbs.aof_dir()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), fbs.aof_dir().join(e.file_name())).unwrap();
    }
    fbs.start_again();
    rbs.start_again();
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    let keys = all_keys(&cases);
    compare_all(&mut rb, &mut fb, &keys);
    compare_big_cf(&mut rb, &mut fb, "replayed");
}
