//! Key rules (missing keys, wrong types), the arity of every BF.* command, and errors that
//! change nothing.

use super::*;

// ---------------------------------------------------------------------------------------------
// Key rules, arity, "errors change nothing"
// ---------------------------------------------------------------------------------------------

#[test]
fn key_rules_missing_and_wrong_type() {
    let s = Server::start();
    let mut c2 = s.conn();
    let mut c3 = s.conn_resp3();
    ok(&mut c2, "SET str hello");
    assert_eq!(int(&mut c2, "RPUSH list a b"), 2);
    // The other filter type of the module is a wrong type too.
    ok(&mut c2, "CF.RESERVE cuckoo 1000");
    let cuckoo = q(&mut c2, "CF.INFO cuckoo");

    for con in [&mut c2, &mut c3] {
        for key in ["str", "list", "cuckoo"] {
            for cmd in [
                "BF.RESERVE {} 0.01 100",
                "BF.ADD {} a",
                "BF.MADD {} a b",
                "BF.INSERT {} ITEMS a",
                "BF.INSERT {} CAPACITY 10 ITEMS a",
                "BF.INSERT {} NOCREATE ITEMS a",
                "BF.INFO {}",
                "BF.INFO {} CAPACITY",
                "BF.CARD {}",
                "BF.DEBUG {}",
                "BF.SCANDUMP {} 0",
                "BF.SCANDUMP {} abc",
                "BF.LOADCHUNK {} 1 FBbf-not-a-header",
                "BF.LOADCHUNK {} 17 data",
            ] {
                let line = cmd.replace("{}", key);
                assert_eq!(err(con, &line), WRONGTYPE, "{line}");
            }
            // The EXISTS family answers "absent" instead.
            let v = qv(con, &["BF.EXISTS", key, "a"]);
            assert!(v == "0" || v == "#f", "{v}");
            let v = qv(con, &["BF.MEXISTS", key, "a", "b"]);
            assert!(v == "[0,0]" || v == "[#f,#f]", "{v}");
        }
    }
    assert_eq!(q(&mut c2, "GET str"), "\"hello\"");
    assert_eq!(q(&mut c2, "LRANGE list 0 -1"), "[\"a\",\"b\"]");
    assert_eq!(q(&mut c2, "CF.INFO cuckoo"), cuckoo);
    assert_eq!(q(&mut c3, "BF.EXISTS str a"), "#f");
    assert_eq!(q(&mut c2, "BF.EXISTS str hello"), "0");

    // Missing keys.
    for con in [&mut c2, &mut c3] {
        for line in [
            "BF.INFO none",
            "BF.INFO none ITEMS",
            "BF.DEBUG none",
            "BF.SCANDUMP none 0",
            "BF.SCANDUMP none 1",
            "BF.INSERT none NOCREATE ITEMS a b",
            "BF.LOADCHUNK none 9 12345678",
        ] {
            assert_eq!(err(con, line), "ERR not found", "{line}");
        }
        assert_eq!(q(con, "BF.CARD none"), "0");
    }
    assert_eq!(q(&mut c2, "BF.EXISTS none a"), "0");
    assert_eq!(q(&mut c3, "BF.EXISTS none a"), "#f");
    assert_eq!(q(&mut c2, "BF.MEXISTS none a b"), "[0,0]");
    assert_eq!(q(&mut c3, "BF.MEXISTS none a b"), "[#f,#f]");
    assert_eq!(int(&mut c2, "EXISTS none"), 0, "reads never create keys");
    assert_eq!(int(&mut c2, "DBSIZE"), 3);
}

#[test]
fn wrong_arity_for_every_command() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 100");
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    let before = snapshot(&mut con, "k");

    // Argument lists after the command name; "" is no argument at all.
    let cases: &[(&str, &[&str])] = &[
        (
            "bf.reserve",
            &[
                "k",
                "k 0.01",
                "k 0.01 100 EXPANSION 2 NONSCALING LAYOUT blocked TIGHTENING 0.6 \
                 SEED 0123456789abcdef0123456789abcdef VALIDATESCALETO 10 WINDOW 5 x",
            ],
        ),
        ("bf.add", &["", "k", "k a b"]),
        ("bf.madd", &["", "k"]),
        (
            "bf.insert",
            &["", "k", "k ITEMS", "k CAPACITY", "k NOCREATE NONSCALING"],
        ),
        ("bf.exists", &["", "k", "k a b"]),
        ("bf.mexists", &["", "k"]),
        ("bf.info", &["", "k CAPACITY SIZE"]),
        ("bf.card", &["", "k a"]),
        ("bf.scandump", &["", "k", "k 0 1"]),
        ("bf.loadchunk", &["", "k", "k 1", "k 1 a b"]),
        ("bf.debug", &["", "k a"]),
    ];
    for (name, arg_lists) in cases {
        for rest in *arg_lists {
            // The reply names the command as registered (lowercase), whatever the case sent.
            for sent in [name.to_uppercase(), name.to_string(), mixed_case(name)] {
                let line = format!("{sent} {rest}");
                assert_eq!(err(&mut con, &line), arity(name), "{line}");
            }
        }
    }
    assert_eq!(snapshot(&mut con, "k"), before);
    assert_eq!(int(&mut con, "DBSIZE"), 1);
}

#[test]
fn errors_change_nothing() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 10 EXPANSION 2");
    let adds = numbered("x", 25);
    qv(&mut con, &with_items("BF.MADD k", &adds));
    ok(&mut con, "BF.RESERVE full 0.01 1 NONSCALING");
    assert_eq!(q(&mut con, "BF.ADD full a"), "1");
    let before = (snapshot(&mut con, "k"), snapshot(&mut con, "full"));

    let failing = [
        "BF.RESERVE k 0.01 10",
        "BF.RESERVE k x 10",
        "BF.INSERT k CAPACITY 0 ITEMS new",
        "BF.INSERT k ERROR 2 ITEMS new",
        "BF.INSERT k bogus ITEMS new",
        "BF.INSERT k NOCREATE CAPACITY 5 ITEMS new",
        "BF.INSERT k ITEMS",
        "BF.ADD k new extra",
        "BF.INFO k bogus",
        "BF.SCANDUMP k x",
        "BF.LOADCHUNK k x data",
        "BF.LOADCHUNK k 100000 data",
        "BF.LOADCHUNK k 1 garbage",
        "BF.ADD full b",
        "BF.LOADCHUNK full 1 garbage",
    ];
    for line in failing {
        err(&mut con, line);
    }
    assert_eq!(
        (snapshot(&mut con, "k"), snapshot(&mut con, "full")),
        before
    );
    assert_eq!(int(&mut con, "DBSIZE"), 2);
}
