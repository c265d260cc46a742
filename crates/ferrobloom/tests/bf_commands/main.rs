//! BF.* commands against a real server with the module: every command in RESP2 and RESP3,
//! sizes and replies, BF.INSERT options, BF.INFO/CARD/DEBUG, the SCANDUMP/LOADCHUNK protocol,
//! exact error texts, arity and key rules (spec sections 2, 3, 5.1, 6.2, 6.3, 7.1). Helpers:
//! `common::bf`.

#[path = "../common/mod.rs"]
mod common;
mod inspect;
mod key_rules;

use common::bf::*;
use common::*;
use redis::{Connection, Value};

// ---------------------------------------------------------------------------------------------
// BF.RESERVE
// ---------------------------------------------------------------------------------------------

#[test]
fn reserve_creates_filters_with_redisbloom_sizes() {
    let s = Server::start();
    let mut con = s.conn();

    ok(&mut con, "BF.RESERVE bf 0.001 100");
    assert_eq!(
        q(&mut con, "BF.INFO bf"),
        "[+Capacity,100,+Size,296,+Number of filters,1,+Number of items inserted,0,\
         +Expansion rate,2]"
    );
    assert_eq!(q(&mut con, "TYPE bf"), "+MBbloom--");

    // Spec 6.2 table: scaling filters are sized exactly like RedisBloom's.
    for (error, cap, size, line) in [
        (
            "0.01",
            "10",
            112,
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:0 ratio:0.005",
        ),
        (
            "0.01",
            "100",
            240,
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005",
        ),
        (
            "0.05",
            "1000",
            1056,
            "bytes:960 bits:7680 hashes:6 hashwidth:64 capacity:1000 size:0 ratio:0.025",
        ),
        (
            "0.001",
            "50000",
            98976,
            "bytes:98880 bits:791040 hashes:11 hashwidth:64 capacity:50000 size:0 ratio:0.0005",
        ),
    ] {
        let key = format!("s-{error}-{cap}");
        okv(&mut con, &["BF.RESERVE", &key, error, cap]);
        assert_eq!(info_num(&mut con, &key, "SIZE"), size, "{key}");
        assert_eq!(
            debug(&mut con, &key),
            vec!["size:0".to_string(), line.into()]
        );
    }

    // EXPANSION sets the growth factor (case-insensitive keyword): the second link is 4x.
    ok(&mut con, "BF.RESERVE e4 0.01 10 expansion 4");
    assert_eq!(info_num(&mut con, "e4", "EXPANSION"), 4);
    let adds = numbered("x", 11);
    let reply = qv(&mut con, &with_items("BF.MADD e4", &adds));
    assert_eq!(reply.matches('1').count(), 11, "{reply}");
    let lines = debug(&mut con, "e4");
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[2].contains(" capacity:40 size:1 ratio:0.0025"),
        "{lines:?}"
    );
    assert_eq!(info_num(&mut con, "e4", "CAPACITY"), 50);

    // NONSCALING, EXPANSION 0 and both together: one link at the full error rate, no
    // expansion rate.
    for (key, extra) in [
        ("ns1", "NONSCALING"),
        ("ns2", "nonscaling"),
        ("ns3", "EXPANSION 0"),
        ("ns4", "EXPANSION 0 NONSCALING"),
        ("ns5", "NONSCALING EXPANSION 0"),
    ] {
        ok(&mut con, &format!("BF.RESERVE {key} 0.01 3 {extra}"));
        assert_eq!(
            q(&mut con, &format!("BF.INFO {key} EXPANSION")),
            "[nil]",
            "{key}"
        );
        assert_eq!(
            debug(&mut con, key),
            vec![
                "size:0".to_string(),
                "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:3 size:0 ratio:0.01".into()
            ],
            "{key}"
        );
        assert_eq!(info_num(&mut con, key, "SIZE"), 104, "{key}");
    }

    // Non-scaling filters are sized so the FPR at full capacity is within the rate: slightly
    // larger than RedisBloom's size (about 3.7% at 10%), never smaller.
    ok(&mut con, "BF.RESERVE nsbig 0.1 1000000 NONSCALING");
    let rb = redisbloom_size(1_000_000, 0.1);
    assert_eq!(rb, 599168);
    let size = info_num(&mut con, "nsbig", "SIZE") as u64;
    assert!(size > rb && size * 100 <= rb * 105, "size {size} vs {rb}");
    assert!(debug(&mut con, "nsbig")[1].contains(" hashes:4 "));

    // Error rates above 0.25 are stored as 0.25 (scaling: the first link has half).
    ok(&mut con, "BF.RESERVE clamp 0.5 100");
    assert!(debug(&mut con, "clamp")[1].ends_with(" ratio:0.125"));
    ok(&mut con, "BF.RESERVE clampns 0.99 100 NONSCALING");
    assert!(debug(&mut con, "clampns")[1].ends_with(" ratio:0.25"));
    ok(&mut con, "BF.RESERVE sci 1e-2 10");
    assert!(debug(&mut con, "sci")[1].ends_with(" ratio:0.005"));

    // Keywords only count in option positions: these are plain key names.
    ok(&mut con, "BF.RESERVE expansion 0.01 100");
    ok(&mut con, "BF.RESERVE NONSCALING 0.01 100");
    assert_eq!(info_num(&mut con, "NONSCALING", "EXPANSION"), 2);
    assert_eq!(q(&mut con, "TYPE expansion"), "+MBbloom--");

    // The smallest capacity (2^30, the largest, is in max_filter_memory_bound_on_creation).
    ok(&mut con, "BF.RESERVE one 0.01 1");
    assert_eq!(info_num(&mut con, "one", "CAPACITY"), 1);
}

#[test]
fn reserve_errors() {
    let s = Server::start();
    let mut con = s.conn();

    // RedisBloom 2.8's texts; ferrobloom's upper bounds in the same style.
    let rate_range = "ERR (0 < error rate range < 1) ";
    let cap_range = "ERR (capacity should be larger than 0)";
    let cap_max = "ERR (capacity should be at most 1073741824)";
    let exp_range = "ERR expansion should be greater or equal to 0";
    let exp_max = "ERR expansion should be at most 32768";
    let cases = [
        ("k abc 100", "ERR bad error rate"),
        ("k 0.01x 100", "ERR bad error rate"),
        ("k nan 100", "ERR bad error rate"),
        ("k 0 100", rate_range),
        ("k 1 100", rate_range),
        ("k -0.5 100", rate_range),
        ("k 1.5 100", rate_range),
        ("k inf 100", rate_range),
        ("k 0.01 abc", "ERR bad capacity"),
        ("k 0.01 1.5", "ERR bad capacity"),
        ("k 0.01 1e3", "ERR bad capacity"),
        ("k 0.01 +100", "ERR bad capacity"),
        ("k 0.01 0100", "ERR bad capacity"),
        ("k 0.01 0", cap_range),
        ("k 0.01 -1", cap_range),
        ("k 0.01 1073741825", cap_max),
        ("k 0.01 100 EXPANSION", "ERR no expansion"),
        ("k 0.01 100 NONSCALING EXPANSION", "ERR no expansion"),
        ("k 0.01 100 EXPANSION x", "ERR bad expansion"),
        ("k 0.01 100 EXPANSION 1.5", "ERR bad expansion"),
        ("k 0.01 100 EXPANSION 32769", exp_max),
        ("k 0.01 100 EXPANSION -1", exp_range),
        (
            "k 0.01 100 EXPANSION 2 NONSCALING",
            "Nonscaling filters cannot expand",
        ),
        (
            "k 0.01 100 NONSCALING EXPANSION 1",
            "Nonscaling filters cannot expand",
        ),
        // ferrobloom: unknown tokens are refused (RedisBloom ignores them).
        ("k 0.01 100 foo", "Unknown argument received"),
        ("k 0.01 100 NONSCALIN", "Unknown argument received"),
        ("k 0.01 100 EXPANSIONS 2", "Unknown argument received"),
        (
            "k 1e-300 100",
            "ERR sub-filter error rate too small (more than 128 hash functions)",
        ),
    ];
    for (args, want) in cases {
        let line = format!("BF.RESERVE {args}");
        assert_eq!(err(&mut con, &line), want, "{line}");
    }
    assert_eq!(
        errv(&mut con, &["BF.RESERVE", "k", "", "100"]),
        "ERR bad error rate"
    );
    assert_eq!(int(&mut con, "EXISTS k"), 0, "no error may create the key");

    // The largest expansion is valid.
    ok(&mut con, "BF.RESERVE k 0.01 100 EXPANSION 32768");
    assert_eq!(info_num(&mut con, "k", "EXPANSION"), 32768);

    // An existing filter is never replaced.
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    let before = snapshot(&mut con, "k");
    assert_eq!(err(&mut con, "BF.RESERVE k 0.5 10"), "ERR item exists");
    assert_eq!(
        err(&mut con, "BF.RESERVE k 0.01 100 NONSCALING"),
        "ERR item exists"
    );
    assert_eq!(snapshot(&mut con, "k"), before);
}

// ---------------------------------------------------------------------------------------------
// BF.ADD / BF.MADD / BF.EXISTS / BF.MEXISTS
// ---------------------------------------------------------------------------------------------

fn add_and_exists_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };

    assert_eq!(q(&mut con, "BF.EXISTS k a"), b(resp3, false));
    assert_eq!(q(&mut con, "BF.ADD k a"), b(resp3, true));
    assert_eq!(q(&mut con, "BF.ADD k a"), b(resp3, false));
    assert_eq!(q(&mut con, "BF.EXISTS k a"), b(resp3, true));
    assert_eq!(q(&mut con, "BF.EXISTS k b"), b(resp3, false));
    // Items are binary-safe and case-sensitive; the empty item is an item.
    assert_eq!(q(&mut con, "BF.EXISTS k A"), b(resp3, false));
    let nul = |con: &mut Connection, cmd: &str, item: &[u8]| {
        show(&raw_bytes(con, &[cmd.as_bytes(), b"bin", item]))
    };
    assert_eq!(nul(&mut con, "BF.ADD", b"a\x00b\xff"), b(resp3, true));
    assert_eq!(nul(&mut con, "BF.EXISTS", b"a\x00b\xff"), b(resp3, true));
    assert_eq!(nul(&mut con, "BF.EXISTS", b"a\x00c\xff"), b(resp3, false));
    assert_eq!(nul(&mut con, "BF.EXISTS", b"a"), b(resp3, false));
    assert_eq!(qv(&mut con, &["BF.ADD", "k", ""]), b(resp3, true));
    assert_eq!(qv(&mut con, &["BF.EXISTS", "k", ""]), b(resp3, true));
    assert_eq!(card(&mut con, "k"), 2);

    assert_eq!(
        q(&mut con, "BF.MADD k a b c b"),
        bools(resp3, &[false, true, true, false])
    );
    assert_eq!(
        qv(&mut con, &["BF.MEXISTS", "k", "a", "b", "c", "d", ""]),
        bools(resp3, &[true, true, true, false, true])
    );
    assert_eq!(q(&mut con, "BF.MEXISTS k zzz"), bools(resp3, &[false]));
    assert_eq!(card(&mut con, "k"), 4);
    assert_eq!(info_num_any(&mut con, resp3, "k", "ITEMS"), 4);

    // BF.MADD auto-creates with the defaults (capacity 100, error 0.01, expansion 2).
    assert_eq!(q(&mut con, "BF.MADD m x y"), bools(resp3, &[true, true]));
    assert_eq!(
        debug(&mut con, "m"),
        vec![
            "size:2".to_string(),
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:2 ratio:0.005".into()
        ]
    );

    // Missing key: EXISTS family answers "absent", never an error.
    assert_eq!(q(&mut con, "BF.EXISTS none a"), b(resp3, false));
    assert_eq!(
        q(&mut con, "BF.MEXISTS none a b"),
        bools(resp3, &[false, false])
    );
    assert_eq!(int(&mut con, "EXISTS none"), 0);

    // No false negatives, and the filter grows past its capacity while keeping its items.
    let many = numbered("item-", 1000);
    let reply = items(rawv(&mut con, &with_items("BF.MADD grow", &many)));
    assert_eq!(reply.len(), 1000);
    let added = reply.iter().filter(|v| show(v) == b(resp3, true)).count() as i64;
    assert!(
        reply
            .iter()
            .all(|v| [b(resp3, true), b(resp3, false)].contains(&show(v).as_str())),
        "{}",
        show(&Value::Array(reply.clone()))
    );
    assert!(added >= 990, "{added} of 1000 distinct items accepted");
    assert_eq!(card(&mut con, "grow"), added);
    let reply = qv(&mut con, &with_items("BF.MEXISTS grow", &many));
    assert_eq!(reply, bools(resp3, &[true; 1000]));
    // 100 + 200 + 400 + 800 >= 1000: four links.
    assert_eq!(info_num_any(&mut con, resp3, "grow", "FILTERS"), 4);
    assert_eq!(info_num_any(&mut con, resp3, "grow", "CAPACITY"), 1500);
}

#[test]
fn add_madd_exists_mexists_resp2() {
    add_and_exists_in(false);
}

#[test]
fn add_madd_exists_mexists_resp3() {
    add_and_exists_in(true);
}

// ---------------------------------------------------------------------------------------------
// Non-scaling filters when full
// ---------------------------------------------------------------------------------------------

fn nonscaling_full_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
    let (t, f) = (b(resp3, true), b(resp3, false));
    let full = "!ERR non scaling filter is full";

    // The array stops right after the "full" error.
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT x CAPACITY 3 NONSCALING ITEMS a b c d d"
        ),
        format!("[{t},{t},{t},{full}]")
    );
    let info = if resp3 {
        "{+Capacity:3,+Size:104,+Number of filters:1,+Number of items inserted:3,\
         +Expansion rate:nil}"
    } else {
        "[+Capacity,3,+Size,104,+Number of filters,1,+Number of items inserted,3,\
         +Expansion rate,nil]"
    };
    assert_eq!(q(&mut con, "BF.INFO x"), info);
    let before = snapshot(&mut con, "x");

    // BF.ADD of a new item: an error reply; of an existing item: 0.
    assert_eq!(q(&mut con, "BF.ADD x d"), full);
    assert_eq!(q(&mut con, "BF.ADD x a"), f);
    // Existing items before the new one answer 0, and processing stops at the error.
    assert_eq!(
        q(&mut con, "BF.MADD x a b e c"),
        format!("[{f},{f},{full}]")
    );
    assert_eq!(
        q(&mut con, "BF.INSERT x ITEMS c e a"),
        format!("[{f},{full}]")
    );
    assert_eq!(
        q(&mut con, "BF.INSERT x NOCREATE ITEMS e"),
        format!("[{full}]")
    );
    assert_eq!(snapshot(&mut con, "x"), before);
    assert_eq!(card(&mut con, "x"), 3);
    assert_eq!(
        q(&mut con, "BF.MEXISTS x a b c d"),
        bools(resp3, &[true, true, true, false])
    );

    // BF.RESERVE ... NONSCALING behaves the same through BF.ADD.
    ok(&mut con, "BF.RESERVE y 0.01 2 NONSCALING");
    assert_eq!(q(&mut con, "BF.ADD y a"), t);
    assert_eq!(q(&mut con, "BF.ADD y b"), t);
    assert_eq!(q(&mut con, "BF.ADD y c"), full);
    assert_eq!(card(&mut con, "y"), 2);
}

#[test]
fn nonscaling_full_resp2() {
    nonscaling_full_in(false);
}

#[test]
fn nonscaling_full_resp3() {
    nonscaling_full_in(true);
}

// ---------------------------------------------------------------------------------------------
// BF.INSERT
// ---------------------------------------------------------------------------------------------

#[test]
fn insert_options() {
    let s = Server::start();
    let mut con = s.conn();

    // Defaults when no option is given.
    assert_eq!(q(&mut con, "BF.INSERT d ITEMS a b a"), "[1,1,0]");
    assert_eq!(
        debug(&mut con, "d"),
        vec![
            "size:2".to_string(),
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:2 ratio:0.005".into()
        ]
    );
    assert_eq!(info_num(&mut con, "d", "EXPANSION"), 2);

    // CAPACITY / ERROR / EXPANSION, keywords in any case and order.
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT o expansion 4 error 0.001 Capacity 50 items a"
        ),
        "[1]"
    );
    assert_eq!(
        debug(&mut con, "o")[1],
        "bytes:104 bits:832 hashes:11 hashwidth:64 capacity:50 size:1 ratio:0.0005"
    );
    assert_eq!(info_num(&mut con, "o", "EXPANSION"), 4);
    assert_eq!(info_num(&mut con, "o", "CAPACITY"), 50);

    // ERROR above 0.25 is clamped.
    assert_eq!(q(&mut con, "BF.INSERT c ERROR 0.9 ITEMS a"), "[1]");
    assert!(debug(&mut con, "c")[1].ends_with(" ratio:0.125"));

    // NONSCALING, EXPANSION 0, and NONSCALING with an EXPANSION (accepted here).
    for (key, opts) in [
        ("n1", "NONSCALING"),
        ("n2", "EXPANSION 0"),
        ("n3", "NONSCALING EXPANSION 3"),
        ("n4", "EXPANSION 3 nonscaling"),
    ] {
        let line = format!("BF.INSERT {key} CAPACITY 3 ERROR 0.01 {opts} ITEMS a");
        assert_eq!(q(&mut con, &line), "[1]", "{line}");
        assert_eq!(
            q(&mut con, &format!("BF.INFO {key} EXPANSION")),
            "[nil]",
            "{key}"
        );
        assert_eq!(info_num(&mut con, key, "SIZE"), 104, "{key}");
    }

    // Items may look like keywords: everything after ITEMS is an item.
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT kw ITEMS ITEMS NOCREATE CAPACITY 5 NONSCALING"
        ),
        "[1,1,1,1,1]"
    );
    assert_eq!(info_num(&mut con, "kw", "CAPACITY"), 100);
    assert_eq!(info_num(&mut con, "kw", "EXPANSION"), 2);
    assert_eq!(
        q(
            &mut con,
            "BF.MEXISTS kw ITEMS NOCREATE CAPACITY 5 NONSCALING x"
        ),
        "[1,1,1,1,1,0]"
    );
    // A key that spells a keyword is a key.
    assert_eq!(q(&mut con, "BF.INSERT nocreate ITEMS a"), "[1]");
    assert_eq!(q(&mut con, "TYPE nocreate"), "+MBbloom--");

    // Options are ignored for an existing key; NOCREATE works on an existing key.
    assert_eq!(
        q(&mut con, "BF.INSERT o CAPACITY 7 EXPANSION 9 ITEMS b a"),
        "[1,0]"
    );
    assert_eq!(info_num(&mut con, "o", "CAPACITY"), 50);
    assert_eq!(info_num(&mut con, "o", "EXPANSION"), 4);
    assert_eq!(q(&mut con, "BF.INSERT o NOCREATE ITEMS c a"), "[1,0]");
    assert_eq!(
        q(
            &mut con,
            "BF.INSERT o NOCREATE NONSCALING EXPANSION 2 ITEMS d"
        ),
        "[1]"
    );
    assert_eq!(card(&mut con, "o"), 4);

    // NOCREATE on a missing key.
    assert_eq!(
        err(&mut con, "BF.INSERT missing NOCREATE ITEMS a"),
        "ERR not found"
    );
    assert_eq!(int(&mut con, "EXISTS missing"), 0);

    // RESP3: booleans.
    let mut con3 = s.conn_resp3();
    assert_eq!(
        q(&mut con3, "BF.INSERT r3 CAPACITY 10 ITEMS a a"),
        "[#t,#f]"
    );
}

#[test]
fn insert_errors() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 100");
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    let before = snapshot(&mut con, "k");

    let wrong_arity = arity("bf.insert");
    let nocreate = "ERR NOCREATE cannot be combined with CAPACITY or ERROR";
    let cases = [
        ("CAPACITY 0 ITEMS a", "Bad argument received"),
        ("CAPACITY -1 ITEMS a", "Bad argument received"),
        ("CAPACITY x ITEMS a", "Bad capacity"),
        ("CAPACITY 1.5 ITEMS a", "Bad capacity"),
        ("CAPACITY 1073741825 ITEMS a", "Bad argument received"),
        ("ERROR 0 ITEMS a", "Bad argument received"),
        ("ERROR 1 ITEMS a", "Bad argument received"),
        ("ERROR -0.1 ITEMS a", "Bad argument received"),
        ("ERROR x ITEMS a", "Bad error rate"),
        ("EXPANSION -1 ITEMS a", "Bad argument received"),
        ("EXPANSION 32769 ITEMS a", "Bad argument received"),
        ("EXPANSION x ITEMS a", "Bad expansion"),
        // Keywords are whole words only.
        ("ixyz a", "Unknown argument received"),
        ("i a", "Unknown argument received"),
        ("n ITEMS a", "Unknown argument received"),
        ("NOCREATEX ITEMS a", "Unknown argument received"),
        ("e 2 ITEMS a", "Unknown argument received"),
        ("cap 10 ITEMS a", "Unknown argument received"),
        ("foo ITEMS a", "Unknown argument received"),
        ("a b", "Unknown argument received"),
        // ferrobloom refuses what the docs call an error (RedisBloom accepts it).
        ("NOCREATE CAPACITY 10 ITEMS a", nocreate),
        ("ERROR 0.1 NOCREATE ITEMS a", nocreate),
        // Missing option values, no ITEMS, nothing after ITEMS: wrong arity.
        ("CAPACITY", &wrong_arity),
        ("CAPACITY 10 ERROR", &wrong_arity),
        ("NOCREATE NONSCALING", &wrong_arity),
        ("CAPACITY 10 ITEMS", &wrong_arity),
    ];
    for key in ["k", "new"] {
        for (args, want) in cases {
            let line = format!("BF.INSERT {key} {args}");
            assert_eq!(err(&mut con, &line), want, "{line}");
        }
    }
    assert_eq!(snapshot(&mut con, "k"), before);
    assert_eq!(int(&mut con, "EXISTS new"), 0);

    // Creation failures are command errors, not array elements.
    assert_eq!(
        err(&mut con, "BF.INSERT new ERROR 1e-300 ITEMS a"),
        "ERR sub-filter error rate too small (more than 128 hash functions)"
    );
    assert_eq!(int(&mut con, "EXISTS new"), 0);
}
