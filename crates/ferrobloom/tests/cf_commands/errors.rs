//! CF.* error texts (CF.RESERVE, CF.INSERT), missing and wrong-type keys, the arity of
//! every command, and the command table's flags.

use super::*;

// =============================================================================================
// 2. Errors, arity, key rules
// =============================================================================================

#[test]
fn reserve_and_insert_error_texts() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE k 100");
    ok(&mut con, "SET str v");
    ok(&mut con, "BF.RESERVE bloom 0.01 100");
    let before = db_digest(&mut con);

    let cases: &[(&str, &str)] = &[
        ("CF.RESERVE x abc", "Bad capacity"),
        ("CF.RESERVE x 1.5", "Bad capacity"),
        (
            "CF.RESERVE x 100 BUCKETSIZE abc",
            "Couldn't parse BUCKETSIZE",
        ),
        (
            "CF.RESERVE x 100 MAXITERATIONS abc",
            "Couldn't parse MAXITERATIONS",
        ),
        ("CF.RESERVE x 100 EXPANSION abc", "Couldn't parse EXPANSION"),
        ("CF.RESERVE x 100 ERROR abc", "Couldn't parse ERROR"),
        ("CF.RESERVE x 100 ERROR nan", "Couldn't parse ERROR"),
        ("CF.RESERVE x 100 ERROR 0.01abc", "Couldn't parse ERROR"),
        ("CF.RESERVE x 100 ERROR 1e-400", "Couldn't parse ERROR"),
        (
            "CF.RESERVE x 100 ERROR inf",
            "ERROR: value must be a number between 0 and 1, exclusive.",
        ),
        (
            "CF.RESERVE x 100 BUCKETSIZE 0",
            "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ),
        (
            "CF.RESERVE x 1000 BUCKETSIZE 256",
            "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        ),
        (
            "CF.RESERVE x 100 MAXITERATIONS 0",
            "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        ),
        (
            "CF.RESERVE x 100 MAXITERATIONS 65536",
            "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        ),
        (
            "CF.RESERVE x 100 EXPANSION -1",
            "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        ),
        (
            "CF.RESERVE x 100 EXPANSION 32769",
            "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        ),
        (
            "CF.RESERVE x 100 ERROR 0",
            "ERROR: value must be a number between 0 and 1, exclusive.",
        ),
        (
            "CF.RESERVE x 100 ERROR 1",
            "ERROR: value must be a number between 0 and 1, exclusive.",
        ),
        (
            "CF.RESERVE x 100 ERROR -0.1",
            "ERROR: value must be a number between 0 and 1, exclusive.",
        ),
        (
            "CF.RESERVE x 100 ERROR 1e-12",
            "ERROR: rate too small even for 32-bit fingerprints",
        ),
        (
            "CF.RESERVE x 3",
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.RESERVE x 0",
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.RESERVE x -5",
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.RESERVE x 1073741825",
            "Capacity must be at most 1073741824",
        ),
        (
            "CF.RESERVE x 7 BUCKETSIZE 4",
            "Capacity must be at least (BucketSize * 2)",
        ),
        ("CF.RESERVE x 100 FOO 1", "Unknown argument received"),
        (
            "CF.RESERVE x 100 BUCKETSIZEX 2",
            "Unknown argument received",
        ),
        ("CF.RESERVE x 100 B 2", "Unknown argument received"),
        ("CF.RESERVE x 100 NOCREATE 1", "Unknown argument received"),
        ("CF.RESERVE k 100", "ERR item exists"),
        ("CF.RESERVE str 100", WRONGTYPE),
        ("CF.RESERVE bloom 100", WRONGTYPE),
        ("CF.INSERT x CAPACITY abc ITEMS a", "Bad capacity"),
        ("CF.INSERTNX x CAPACITY abc ITEMS a", "Bad capacity"),
        (
            "CF.INSERT x CAPACITY 3 ITEMS a",
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.INSERTNX x CAPACITY 1073741825 ITEMS a",
            "Capacity must be at most 1073741824",
        ),
        ("CF.INSERT x ERROR abc ITEMS a", "Couldn't parse ERROR"),
        (
            "CF.INSERTNX x ERROR 2 ITEMS a",
            "ERROR: value must be a number between 0 and 1, exclusive.",
        ),
        (
            "CF.INSERT x ERROR 1e-15 ITEMS a",
            "ERROR: rate too small even for 32-bit fingerprints",
        ),
        ("CF.INSERT x FOO ITEMS a", "Unknown argument received"),
        ("CF.INSERTNX x FOO ITEMS a", "Unknown argument received"),
        ("CF.INSERT x ixyz a", "Unknown argument received"),
        ("CF.INSERT x CAP 10 ITEMS a", "Unknown argument received"),
        ("CF.INSERT x NOCREATEX ITEMS a", "Unknown argument received"),
        (
            "CF.INSERT x EXPANSION 2 ITEMS a",
            "Unknown argument received",
        ),
        (
            "CF.INSERT k NOCREATE CAPACITY 10 ITEMS a",
            "ERR NOCREATE cannot be combined with CAPACITY or ERROR",
        ),
        (
            "CF.INSERTNX k CAPACITY 10 NOCREATE ITEMS a",
            "ERR NOCREATE cannot be combined with CAPACITY or ERROR",
        ),
        (
            "CF.INSERT k NOCREATE ERROR 0.01 ITEMS a",
            "ERR NOCREATE cannot be combined with CAPACITY or ERROR",
        ),
        ("CF.INSERT x NOCREATE ITEMS a", "ERR not found"),
        ("CF.INSERTNX x NOCREATE ITEMS a", "ERR not found"),
        ("CF.INSERT str ITEMS a", WRONGTYPE),
        ("CF.INSERTNX bloom ITEMS a", WRONGTYPE),
        ("CF.INSERT str NOCREATE ITEMS a", WRONGTYPE),
        ("CF.ADD str a", WRONGTYPE),
        ("CF.ADDNX bloom a", WRONGTYPE),
        ("CF.INFO x", "ERR not found"),
        ("CF.INFO str", WRONGTYPE),
        ("CF.INFO bloom", WRONGTYPE),
        ("CF.DEBUG x", "ERR not found"),
        ("CF.DEBUG str", WRONGTYPE),
        ("CF.SCANDUMP x 0", "ERR not found"),
        ("CF.SCANDUMP str 0", WRONGTYPE),
        ("CF.SCANDUMP bloom 1", WRONGTYPE),
        // The iterator is parsed before the key.
        ("CF.SCANDUMP x abc", INVALID_POSITION),
        ("CF.SCANDUMP str -1", INVALID_POSITION),
        ("CF.SCANDUMP k 1.5", INVALID_POSITION),
        ("CF.LOADCHUNK k abc data", INVALID_POSITION),
        // A negative iterator is a data chunk that cannot load (RedisBloom 2.8).
        ("CF.LOADCHUNK k -1 data", "Couldn't load chunk!"),
        ("CF.LOADCHUNK x -1 data", "ERR not found"),
        ("CF.LOADCHUNK k 0 data", INVALID_POSITION),
        ("CF.LOADCHUNK x 0 data", INVALID_POSITION),
        ("CF.LOADCHUNK k 1 data", "ERR item exists"),
        ("CF.LOADCHUNK str 1 data", WRONGTYPE),
        ("CF.LOADCHUNK bloom 5 data", WRONGTYPE),
        ("CF.LOADCHUNK x 5 data", "ERR not found"),
        ("CF.LOADCHUNK x 1 data", INVALID_HEADER),
        ("CF.DEL x a", "Not found"),
        ("CF.DEL str a", "Not found"),
        ("CF.DEL bloom a", "Not found"),
        ("CF.COMPACT x", "Cuckoo filter was not found"),
        ("CF.COMPACT str", "Cuckoo filter was not found"),
        ("CF.COMPACT bloom", "Cuckoo filter was not found"),
    ];
    for (line, want) in cases {
        assert_eq!(err(&mut con, line), *want, "{line}");
    }
    // Nothing was created or changed by any of them.
    assert_eq!(db_digest(&mut con), before);
    assert_eq!(int(&mut con, "DBSIZE"), 3);
    ping(&mut con);

    // Same texts on a RESP3 connection.
    let mut con3 = s.conn_resp3();
    for (line, want) in cases.iter().step_by(5) {
        assert_eq!(err(&mut con3, line), *want, "RESP3 {line}");
    }
    // Valid edge values are accepted.
    ok(&mut con, "CF.RESERVE e1 2 BUCKETSIZE 1");
    ok(
        &mut con,
        "CF.RESERVE e2 510 BUCKETSIZE 255 MAXITERATIONS 65535 EXPANSION 32768",
    );
    ok(
        &mut con,
        "CF.RESERVE e3 8 BUCKETSIZE 4 MAXITERATIONS 1 EXPANSION 0",
    );
    assert_eq!(info_int(&mut con, b"e2", "Expansion rate"), 32768);
    assert_eq!(q(&mut con, "CF.INSERT e4 CAPACITY 4 ITEMS a"), "[1]");
    ok(&mut con, "CF.RESERVE e5 100 ERROR 1e-3");
    ok(&mut con, "CF.RESERVE e6 100 ERROR .5");
    assert_eq!(fp_size(&mut con, b"e5"), 12);
}

#[test]
fn missing_and_wrong_type_read_as_absent() {
    let s = Server::start();
    for resp3 in [false, true] {
        let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
        ok(&mut con, "SET str v");
        q(&mut con, "DEL bloom");
        ok(&mut con, "BF.RESERVE bloom 0.01 100");
        assert_eq!(q(&mut con, "BF.ADD bloom a"), b(resp3, true));
        let f = b(resp3, false);
        for key in ["missing", "str", "bloom"] {
            assert_eq!(q(&mut con, &format!("CF.EXISTS {key} a")), f, "{key}");
            assert_eq!(
                q(&mut con, &format!("CF.MEXISTS {key} a b")),
                format!("[{f},{f}]"),
                "{key}"
            );
            assert_eq!(q(&mut con, &format!("CF.COUNT {key} a")), "0", "{key}");
        }
        assert!(!key_exists(&mut con, b"missing"));
        assert_eq!(q(&mut con, "TYPE str"), "+string");
    }
}

#[test]
fn wrong_arity_for_every_command() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE k 100");
    assert_eq!(q(&mut con, "CF.ADD k a"), "1");
    let before = digest_value(&mut con, b"k");

    // Argument lists after the command name; "" is no argument at all.
    let cases: &[(&str, &[&str])] = &[
        (
            "cf.reserve",
            &[
                "",
                "k",
                "x 100 BUCKETSIZE",
                "x 100 BUCKETSIZE 2 MAXITERATIONS",
                "x 100 ERROR",
            ],
        ),
        ("cf.add", &["", "k", "k a b"]),
        ("cf.addnx", &["", "k", "k a b"]),
        (
            "cf.insert",
            &[
                "",
                "k",
                "k ITEMS",
                "k CAPACITY",
                "k CAPACITY 100 ITEMS",
                "k NOCREATE ITEMS",
                "k ERROR",
                "k NOCREATE",
            ],
        ),
        (
            "cf.insertnx",
            &[
                "",
                "k",
                "k ITEMS",
                "k CAPACITY 100 ITEMS",
                "k NOCREATE ITEMS",
            ],
        ),
        ("cf.exists", &["", "k", "k a b"]),
        ("cf.mexists", &["", "k"]),
        ("cf.count", &["", "k", "k a b"]),
        ("cf.del", &["", "k", "k a b"]),
        ("cf.compact", &["", "k a"]),
        ("cf.info", &["", "k a"]),
        ("cf.debug", &["", "k a"]),
        ("cf.scandump", &["", "k", "k 0 1"]),
        ("cf.loadchunk", &["", "k", "k 1", "k 1 a b"]),
    ];
    for (name, arg_lists) in cases {
        for rest in *arg_lists {
            for sent in [name.to_uppercase(), name.to_string()] {
                let line = format!("{sent} {rest}");
                assert_eq!(err(&mut con, &line), arity(name), "{line}");
            }
        }
    }
    assert_eq!(digest_value(&mut con, b"k"), before);
    assert_eq!(int(&mut con, "DBSIZE"), 1);
}

#[test]
fn command_table_flags() {
    let s = Server::start();
    let mut con = s.conn();
    let flags = |con: &mut Connection, cmd: &str| -> Vec<String> {
        let v = raw(con, &["COMMAND", "INFO", cmd]);
        let Value::Array(outer) = v else {
            panic!("COMMAND INFO {cmd}")
        };
        let Value::Array(info) = &outer[0] else {
            panic!("COMMAND INFO {cmd}: {}", show(&outer[0]))
        };
        let Value::Array(f) = &info[2] else {
            panic!("flags")
        };
        f.iter().map(text).collect()
    };
    let compact = flags(&mut con, "cf.compact");
    assert!(compact.contains(&"write".to_string()), "{compact:?}");
    assert!(!compact.contains(&"readonly".to_string()), "{compact:?}");
    for cmd in [
        "cf.exists",
        "cf.mexists",
        "cf.count",
        "cf.info",
        "cf.scandump",
    ] {
        let f = flags(&mut con, cmd);
        assert!(f.contains(&"readonly".to_string()), "{cmd}: {f:?}");
    }
    for cmd in [
        "cf.reserve",
        "cf.add",
        "cf.addnx",
        "cf.insert",
        "cf.insertnx",
        "cf.del",
        "cf.loadchunk",
    ] {
        let f = flags(&mut con, cmd);
        assert!(f.contains(&"write".to_string()), "{cmd}: {f:?}");
    }
}
