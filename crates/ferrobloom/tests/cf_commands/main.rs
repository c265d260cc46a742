//! CF.* commands against a real server with the module: every command in RESP2 and RESP3,
//! shapes and replies, exact error texts, arity and key rules, and false-positive rates
//! (spec sections 2, 4, 5.2, 6.4, 9). Helpers: `common::cf`.

#[path = "../common/mod.rs"]
mod common;
mod errors;

use common::cf::*;
use common::*;
use redis::{Connection, Value};

// =============================================================================================
// 1. Commands, shapes and replies
// =============================================================================================

#[test]
fn reserve_shapes_info_and_debug() {
    let s = Server::start();
    let mut con = s.conn();
    let mut con3 = s.conn_resp3();

    ok(&mut con, "CF.RESERVE a 1000");
    assert_eq!(
        info(&mut con, b"a"),
        "[+Size,1080,+Number of buckets,512,+Number of filters,1,\
         +Number of items inserted,0,+Number of items deleted,0,+Bucket size,2,\
         +Expansion rate,1,+Max iterations,20]"
    );
    assert_eq!(
        info(&mut con3, b"a"),
        "{+Size:1080,+Number of buckets:512,+Number of filters:1,\
         +Number of items inserted:0,+Number of items deleted:0,+Bucket size:2,\
         +Expansion rate:1,+Max iterations:20}"
    );
    assert_eq!(
        cf_debug(&mut con, b"a"),
        "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    assert_eq!(q(&mut con, "TYPE a"), "+MBbloomCF");
    // MEMORY USAGE = what the allocator holds for the value (the Size formula
    // leaves out the allocator's rounding and the structures around the table) +
    // the server's per-key overhead.
    let usage = int(&mut con, "MEMORY USAGE a");
    assert!((1112..1112 + 512).contains(&usage), "{usage}");

    assert_eq!(q(&mut con, "CF.INSERT f3 CAPACITY 10000 ITEMS foo"), "[1]");
    assert_eq!(
        cf_debug(&mut con, b"f3"),
        "bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    ok(&mut con, "CF.RESERVE b 10 MAXITERATIONS 10");
    assert_eq!(
        cf_debug(&mut con, b"b"),
        "bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:10 expansion:1"
    );

    // Every option, any case; the expansion is rounded up to a power of two.
    ok(
        &mut con,
        "cf.reserve c 1000 bucketsize 4 MaxIterations 7 expansion 3 error 0.01",
    );
    assert_eq!(
        cf_debug(&mut con, b"c"),
        "bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:7 expansion:4 \
         fpsize:10 error:0.01"
    );
    // 2*4/(2^f - 1) <= 0.01 -> f = 10 bits; 256*4 slots * 10 bits = 1280 bytes.
    assert_eq!(
        info(&mut con, b"c"),
        "[+Size,1336,+Number of buckets,256,+Number of filters,1,\
         +Number of items inserted,0,+Number of items deleted,0,+Bucket size,4,\
         +Expansion rate,4,+Max iterations,7]"
    );
    assert_eq!(
        info(&mut con3, b"c"),
        "{+Size:1336,+Number of buckets:256,+Number of filters:1,\
         +Number of items inserted:0,+Number of items deleted:0,+Bucket size:4,\
         +Expansion rate:4,+Max iterations:7}"
    );
    assert_eq!(cf_error_rate(&mut con3, b"c"), "0.01");

    // ERROR picks the smallest width >= 8 with 2b/(2^f-1) <= rate.
    for (bs, rate, bits) in [
        (2, "0.0001", 16),
        (2, "0.5", 8),
        (2, "0.016", 8),
        (2, "0.0156", 9),
        (4, "0.0001", 17),
        (1, "0.001", 11),
        (2, "0.000000001", 32),
    ] {
        let key = format!("e-{bs}-{rate}");
        ok(
            &mut con,
            &format!("CF.RESERVE {key} 64 BUCKETSIZE {bs} ERROR {rate}"),
        );
        assert_eq!(
            fp_size(&mut con, key.as_bytes()),
            bits,
            "bucket size {bs}, ERROR {rate}"
        );
        assert_eq!(
            cf_error_rate(&mut con, key.as_bytes())
                .parse::<f64>()
                .unwrap(),
            rate.parse::<f64>().unwrap()
        );
        let table_bits = 64u64 * bits as u64;
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Size") as u64,
            40 + 16 + table_bits.div_ceil(8)
        );
    }

    // Shapes (spec 6.4): next_power_of_two(capacity / bucket size).
    for (cap, bs, buckets) in [
        (1000, 2, 512),
        (10, 2, 8),
        (10000, 2, 8192),
        (64, 1, 64),
        (256, 4, 64),
        (2, 1, 2),
        (510, 255, 2),
        (1073741824, 2, 536870912),
    ] {
        let key = format!("s-{cap}-{bs}");
        if cap > 100_000_000 {
            // 1 GiB table: only the parse + memory-cap path, never allocated here.
            config_set(&mut con, "bf.max-filter-memory", "4096");
            assert_eq!(
                err(&mut con, &format!("CF.RESERVE {key} {cap} BUCKETSIZE {bs}")),
                NO_MEMORY_CREATE
            );
            config_set(&mut con, "bf.max-filter-memory", "4gb");
            continue;
        }
        ok(&mut con, &format!("CF.RESERVE {key} {cap} BUCKETSIZE {bs}"));
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Number of buckets"),
            buckets,
            "{cap}/{bs}"
        );
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Size"),
            40 + 16 + buckets * bs,
            "{cap}/{bs}"
        );
    }

    // EXPANSION 0 stays 0; a key named like a keyword is just a key.
    ok(&mut con, "CF.RESERVE z 100 EXPANSION 0");
    assert_eq!(info_int(&mut con, b"z", "Expansion rate"), 0);
    ok(&mut con, "CF.RESERVE BUCKETSIZE 100");
    assert_eq!(info_int(&mut con, b"BUCKETSIZE", "Bucket size"), 2);
    ok(&mut con, "CF.RESERVE ERROR 100 ERROR 0.001");
    assert_eq!(fp_size(&mut con, b"ERROR"), 12);

    // The same filter from RESP3 and RESP2 clients.
    ok(&mut con3, "CF.RESERVE r3 1000");
    assert_eq!(info(&mut con, b"r3"), info(&mut con, b"a"));
}

/// ADD / ADDNX / EXISTS / MEXISTS / COUNT / DEL in one protocol.
fn item_commands_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
    let t = |v| b(resp3, v);

    ok(&mut con, "CF.RESERVE k 1000");
    assert_eq!(q(&mut con, "CF.ADD k a"), t(true));
    assert_eq!(q(&mut con, "CF.ADD k a"), t(true));
    assert_eq!(q(&mut con, "CF.ADD k b"), t(true));
    assert_eq!(q(&mut con, "CF.ADDNX k a"), t(false));
    assert_eq!(q(&mut con, "CF.ADDNX k c"), t(true));
    assert_eq!(q(&mut con, "CF.ADDNX k c"), t(false));
    assert_eq!(q(&mut con, "CF.EXISTS k a"), t(true));
    assert_eq!(q(&mut con, "CF.EXISTS k nope"), t(false));
    assert_eq!(
        q(&mut con, "CF.MEXISTS k a b c nope"),
        format!("[{},{},{},{}]", t(true), t(true), t(true), t(false))
    );
    // CF.COUNT is an integer in both protocols.
    assert_eq!(q(&mut con, "CF.COUNT k a"), "2");
    assert_eq!(q(&mut con, "CF.COUNT k b"), "1");
    assert_eq!(q(&mut con, "CF.COUNT k nope"), "0");
    assert_eq!(info_int(&mut con, b"k", "Number of items inserted"), 4);

    // CF.DEL removes one copy.
    let before = digest_value(&mut con, b"k");
    assert_eq!(q(&mut con, "CF.DEL k a"), t(true));
    assert_eq!(q(&mut con, "CF.COUNT k a"), "1");
    assert_eq!(q(&mut con, "CF.EXISTS k a"), t(true));
    assert_ne!(digest_value(&mut con, b"k"), before);
    assert_eq!(q(&mut con, "CF.DEL k a"), t(true));
    assert_eq!(q(&mut con, "CF.COUNT k a"), "0");
    assert_eq!(q(&mut con, "CF.EXISTS k a"), t(false));
    assert_eq!(info_int(&mut con, b"k", "Number of items inserted"), 2);
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 2);
    assert_eq!(
        cf_debug(&mut con, b"k"),
        "bktsize:2 buckets:512 items:2 deletes:2 filters:1 max_iterations:20 expansion:1"
    );

    // Deleting an absent item answers 0 and changes nothing.
    let before = digest_value(&mut con, b"k");
    let info_before = info(&mut con, b"k");
    assert_eq!(q(&mut con, "CF.DEL k a"), t(false));
    assert_eq!(q(&mut con, "CF.DEL k never-added"), t(false));
    assert_eq!(digest_value(&mut con, b"k"), before);
    assert_eq!(info(&mut con, b"k"), info_before);

    // Many copies of one item: counted, and deleted one at a time.
    for _ in 0..3 {
        assert_eq!(q(&mut con, "CF.ADD k dup"), t(true));
    }
    assert_eq!(q(&mut con, "CF.COUNT k dup"), "3");
    assert_eq!(q(&mut con, "CF.DEL k dup"), t(true));
    assert_eq!(q(&mut con, "CF.COUNT k dup"), "2");

    // Binary and empty items.
    for item in binary_items() {
        let r = raw(&mut con, &[b"CF.ADD".as_slice(), b"k", &item]);
        assert_eq!(show(&r), t(true));
        let r = raw(&mut con, &[b"CF.EXISTS".as_slice(), b"k", &item]);
        assert_eq!(show(&r), t(true), "{item:?}");
    }

    // CF.ADD / CF.ADDNX create a missing key with the defaults.
    assert_eq!(q(&mut con, "CF.ADD new1 x"), t(true));
    assert_eq!(q(&mut con, "CF.ADDNX new2 x"), t(true));
    for key in [b"new1".as_slice(), b"new2"] {
        assert_eq!(
            cf_debug(&mut con, key),
            "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
    }

    // CF.COUNT never counts a bucket twice when both candidates coincide (Q10): with 2
    // buckets, about half of all items have i1 == i2.
    ok(&mut con, "CF.RESERVE two 4");
    for i in 0..64 {
        let item = format!("q10-{i}");
        assert_eq!(q(&mut con, &format!("CF.ADD two {item}")), t(true));
        assert_eq!(q(&mut con, &format!("CF.COUNT two {item}")), "1", "{item}");
        assert_eq!(q(&mut con, &format!("CF.DEL two {item}")), t(true));
        assert_eq!(q(&mut con, &format!("CF.COUNT two {item}")), "0", "{item}");
    }
    assert_eq!(info_int(&mut con, b"two", "Number of filters"), 1);
}

#[test]
fn item_commands_resp2() {
    item_commands_in(false);
}

#[test]
fn item_commands_resp3() {
    item_commands_in(true);
}

/// CF.INSERT / CF.INSERTNX options and per-item replies in one protocol.
fn insert_commands_in(resp3: bool) {
    let s = Server::start();
    let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
    let t = |v| b(resp3, v);
    let (yes, no_room) = if resp3 { ("#t", "#f") } else { ("1", "-1") };

    // Creation: default capacity, CAPACITY, ERROR, both.
    assert_eq!(
        q(&mut con, "CF.INSERT i1 ITEMS a b a"),
        format!("[{yes},{yes},{yes}]")
    );
    assert_eq!(q(&mut con, "CF.COUNT i1 a"), "2");
    assert_eq!(
        cf_debug(&mut con, b"i1"),
        "bktsize:2 buckets:512 items:3 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
    assert_eq!(
        q(&mut con, "CF.INSERT i2 CAPACITY 100 ITEMS a"),
        format!("[{yes}]")
    );
    assert_eq!(info_int(&mut con, b"i2", "Number of buckets"), 64);
    assert_eq!(
        q(&mut con, "CF.INSERT i3 ERROR 0.001 CAPACITY 100 ITEMS a"),
        format!("[{yes}]")
    );
    assert_eq!(info_int(&mut con, b"i3", "Number of buckets"), 64);
    assert_eq!(fp_size(&mut con, b"i3"), 12);
    // Options only apply to creation: an existing filter keeps its shape.
    assert_eq!(
        q(&mut con, "CF.INSERT i2 CAPACITY 5000 ERROR 0.0001 ITEMS b"),
        format!("[{yes}]")
    );
    assert_eq!(info_int(&mut con, b"i2", "Number of buckets"), 64);
    assert_eq!(fp_size(&mut con, b"i2"), 8);

    // NOCREATE.
    assert_eq!(
        err(&mut con, "CF.INSERT i9 NOCREATE ITEMS a"),
        "ERR not found"
    );
    assert_eq!(
        err(&mut con, "CF.INSERTNX i9 NOCREATE ITEMS a"),
        "ERR not found"
    );
    assert!(!key_exists(&mut con, b"i9"));
    assert_eq!(
        q(&mut con, "CF.INSERT i1 NOCREATE ITEMS c"),
        format!("[{yes}]")
    );
    assert_eq!(q(&mut con, "CF.EXISTS i1 c"), t(true));
    // Keywords are case-insensitive; ITEMS ends the options (later words are items).
    assert_eq!(
        q(
            &mut con,
            "cf.insert i1 nocreate items NOCREATE ITEMS CAPACITY"
        ),
        format!("[{yes},{yes},{yes}]")
    );
    assert_eq!(q(&mut con, "CF.EXISTS i1 NOCREATE"), t(true));
    assert_eq!(q(&mut con, "CF.EXISTS i1 CAPACITY"), t(true));

    // CF.INSERTNX: 1 / 0 in both protocols.
    assert_eq!(q(&mut con, "CF.INSERTNX n1 ITEMS a b a"), "[1,1,0]");
    assert_eq!(q(&mut con, "CF.INSERTNX n1 ITEMS a c"), "[0,1]");
    assert_eq!(q(&mut con, "CF.COUNT n1 a"), "1");
    assert_eq!(
        q(&mut con, "CF.INSERTNX n2 CAPACITY 64 ERROR 0.01 ITEMS x"),
        "[1]"
    );
    assert_eq!(info_int(&mut con, b"n2", "Number of buckets"), 32);
    assert_eq!(fp_size(&mut con, b"n2"), 9);

    // No room: -1 (CF.INSERT in RESP3: false); later items are still attempted.
    ok(&mut con, "CF.RESERVE full 4 EXPANSION 0");
    assert_eq!(
        q(&mut con, "CF.INSERT full ITEMS x1 x2 x3 x4 x5 x6"),
        format!("[{yes},{yes},{yes},{yes},{no_room},{no_room}]")
    );
    assert_eq!(q(&mut con, "CF.INSERTNX full ITEMS x1 y1 x4"), "[0,-1,0]");
    assert_eq!(info_int(&mut con, b"full", "Number of items inserted"), 4);
    let before = digest_value(&mut con, b"full");
    assert_eq!(
        q(&mut con, "CF.INSERT full ITEMS y2"),
        format!("[{no_room}]")
    );
    assert_eq!(digest_value(&mut con, b"full"), before);
    assert_eq!(
        q(&mut con, "CF.MEXISTS full x1 x2 x3 x4"),
        format!("[{0},{0},{0},{0}]", t(true))
    );
}

#[test]
fn insert_commands_resp2() {
    insert_commands_in(false);
}

#[test]
fn insert_commands_resp3() {
    insert_commands_in(true);
}

#[test]
fn auto_creation_uses_the_configured_defaults() {
    let s = Server::start();
    let mut con = s.conn();
    config_set(&mut con, "bf.cf-initial-size", "500");
    config_set(&mut con, "bf.cf-bucket-size", "4");
    config_set(&mut con, "bf.cf-max-iterations", "50");
    config_set(&mut con, "bf.cf-expansion-factor", "3");
    config_set(&mut con, "bf.cf-error-rate", "0.001");

    // 500 / 4 -> 128 buckets; 8/(2^f-1) <= 0.001 -> 13 bits; expansion 3 -> 4.
    let want = "bktsize:4 buckets:128 items:1 deletes:0 filters:1 max_iterations:50 expansion:4 \
                fpsize:13 error:0.001";
    assert_eq!(q(&mut con, "CF.ADD a x"), "1");
    assert_eq!(q(&mut con, "CF.ADDNX b x"), "1");
    assert_eq!(q(&mut con, "CF.INSERT c ITEMS x"), "[1]");
    assert_eq!(q(&mut con, "CF.INSERTNX d ITEMS x"), "[1]");
    for key in ["a", "b", "c", "d"] {
        assert_eq!(cf_debug(&mut con, key.as_bytes()), want, "{key}");
        assert_eq!(fp_size(&mut con, key.as_bytes()), 13);
        assert_eq!(cf_error_rate(&mut con, key.as_bytes()), "0.001");
    }
    // CAPACITY and ERROR override the configured capacity and rate.
    assert_eq!(
        q(&mut con, "CF.INSERT e CAPACITY 1000 ERROR 0.0001 ITEMS x"),
        "[1]"
    );
    assert_eq!(
        cf_debug(&mut con, b"e"),
        "bktsize:4 buckets:256 items:1 deletes:0 filters:1 max_iterations:50 expansion:4 \
         fpsize:17 error:0.0001"
    );
    assert_eq!(fp_size(&mut con, b"e"), 17);
    // CF.RESERVE takes the configured defaults for what it does not say ...
    ok(&mut con, "CF.RESERVE f 1000");
    assert_eq!(
        cf_debug(&mut con, b"f"),
        "bktsize:4 buckets:256 items:0 deletes:0 filters:1 max_iterations:50 expansion:4 \
         fpsize:13 error:0.001"
    );
    // ... and explicit options win.
    ok(
        &mut con,
        "CF.RESERVE g 1000 BUCKETSIZE 2 MAXITERATIONS 20 EXPANSION 1 ERROR 0.5",
    );
    assert_eq!(
        cf_debug(&mut con, b"g"),
        "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1 error:0.5"
    );
    assert_eq!(fp_size(&mut con, b"g"), 8);

    // bf.cf-error-rate 0 = RedisBloom's 8-bit fingerprints, no rate.
    config_set(&mut con, "bf.cf-error-rate", "0");
    assert_eq!(q(&mut con, "CF.ADD h x"), "1");
    assert_eq!(fp_size(&mut con, b"h"), 8);
    assert_eq!(cf_error_rate(&mut con, b"h"), "nil");

    // The INSERT capacity bound follows bf.cf-bucket-size (4 -> at least 8).
    assert_eq!(
        err(&mut con, "CF.INSERT i CAPACITY 7 ITEMS x"),
        "Capacity must be at least (BucketSize * 2)"
    );
    assert_eq!(q(&mut con, "CF.INSERT i CAPACITY 8 ITEMS x"), "[1]");
    assert_eq!(info_int(&mut con, b"i", "Number of buckets"), 2);

    // A configured initial size below 2 * bucket size cannot create a filter.
    config_set(&mut con, "bf.cf-initial-size", "4");
    config_set(&mut con, "bf.cf-bucket-size", "255");
    for cmd in [
        "CF.ADD j x",
        "CF.ADDNX j x",
        "CF.INSERT j ITEMS x",
        "CF.INSERTNX j ITEMS x",
    ] {
        assert_eq!(err(&mut con, cmd), "ERR Could not create filter", "{cmd}");
    }
    assert!(!key_exists(&mut con, b"j"));
}

#[test]
fn scandump_protocol_and_header_layout() {
    let s = Server::start();
    let mut con = s.conn();
    let mut con3 = s.conn_resp3();

    // The header layout, checked against an independent encoder.
    ok(&mut con, "CF.RESERVE h 8 EXPANSION 2 MAXITERATIONS 9");
    let h = header_of(&mut con, b"h");
    let mut want = Hdr::plain(2, 2, 1, 4);
    want.max_iter = 9;
    assert_eq!(Hdr::decode(&h), want);
    assert_eq!(want.encode(), h);
    ok(&mut con, "CF.RESERVE he 64 BUCKETSIZE 4 ERROR 0.25");
    let h = Hdr::decode(&header_of(&mut con, b"he"));
    assert_eq!((h.fp_bits, h.bucket_size, h.base), (8, 4, 16));
    assert_eq!(f64::from_bits(h.error_bits), 0.25);

    // A filter with items: iterator 0 = [1, header], then one chunk per sub-filter.
    ok(&mut con, "CF.RESERVE k 64 EXPANSION 2");
    let items = names("i", 300);
    insert_ok(&mut con, b"k", &items);
    let n = filters(&mut con, b"k") as u32;
    assert!(n >= 3);
    let dump = scandump(&mut con, b"k");
    let h = Hdr::decode(&dump[0].1);
    assert_eq!((h.nfilters, h.items, h.flags), (n, 300, 0));
    assert_eq!(dump[0].0, 1);
    let lens: Vec<u64> = dump[1..].iter().map(|(_, d)| d.len() as u64).collect();
    assert_eq!(lens, h.table_lens());
    // ferrobloom's layout: a filter that moved fingerprints (kick-outs)
    // answers walk iterators (bit 62, its move count in bits 40..62, the
    // position `1 + offset` in bits 0..40); one that never did, positions.
    const POS: i64 = (1 << 40) - 1;
    let walk = dump[1].0 & !POS;
    let mut it = 1i64;
    for (next, data) in &dump[1..] {
        assert_eq!(*next, walk | ((it & POS) + data.len() as i64));
        it = *next;
    }
    // Past the end: [0, ""] (RedisBloom: [0, nil]) in both protocols; same for any far iterator.
    let far = (walk | 999_999_999_999).to_string();
    for c in [&mut con, &mut con3] {
        assert_eq!(q(c, &format!("CF.SCANDUMP k {it}")), "[0,\"\"]");
        assert_eq!(q(c, &format!("CF.SCANDUMP k {far}")), "[0,\"\"]");
    }
    // A mid-sub-filter iterator returns the rest of that sub-filter.
    let mid = (walk | 11).to_string();
    let v = raw(&mut con, &["CF.SCANDUMP", "k", &mid]);
    let Value::Array(a) = v else { panic!() };
    let first = &dump[1].1;
    assert_eq!(a[0], Value::Int(walk | (11 + first.len() as i64 - 10)));
    assert_eq!(a[1], Value::BulkString(first[10..].to_vec()));
    if walk != 0 {
        // A position the filter never handed out (it moved items before any
        // SCANDUMP) is answered as RedisBloom answers it, as a walk from there.
        let v = raw(&mut con, &["CF.SCANDUMP", "k", "11"]);
        let Value::Array(a) = v else { panic!() };
        assert_eq!(a[0], Value::Int(walk | (11 + first.len() as i64 - 10)));
        assert_eq!(a[1], Value::BulkString(first[10..].to_vec()));
    }

    // RESP3: same shapes.
    let v = raw(&mut con3, &["CF.SCANDUMP", "k", "0"]);
    assert_eq!(
        show(&v),
        format!("[1,{}]", show(&Value::BulkString(dump[0].1.clone())))
    );

    // A filter without items dumps too (Q13), with its zeroed tables.
    ok(&mut con, "CF.RESERVE e 100");
    let d = scandump(&mut con, b"e");
    assert_eq!(d.len(), 2);
    assert_eq!(Hdr::decode(&d[0].1).items, 0);
    assert_eq!(d[1], (1 + 128, vec![0u8; 128]));
    // ... and so does one whose items were all deleted.
    ok(&mut con, "CF.RESERVE g 4");
    let items = names("g", 12);
    insert_ok(&mut con, b"g", &items);
    dels(&mut con, b"g", &items);
    let d = scandump(&mut con, b"g");
    let h = Hdr::decode(&d[0].1);
    assert_eq!(h.items, 0);
    assert_eq!(d.len() as u32, 1 + h.nfilters);
    assert!(d[1..].iter().all(|(_, c)| c.iter().all(|b| *b == 0)));
    assert_eq!(q(&mut con, "DEL g"), "1");
    loadchunks(&mut con, b"g", &d);
    // The same chunks (the iterators carry each filter's own move count).
    let data = |v: &[(i64, Vec<u8>)]| v.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>();
    assert_eq!(data(&scandump(&mut con, b"g")), data(&d));
}

// =============================================================================================
// 8. False-positive rates
// =============================================================================================

/// Measured false-positive rate of `key` over `probes` non-members.
fn fpr(con: &mut Connection, key: &[u8], probes: &[Vec<u8>]) -> f64 {
    let hits = mexists(con, key, probes).iter().filter(|p| **p).count();
    hits as f64 / probes.len() as f64
}

#[test]
fn false_positive_rates_on_a_live_server() {
    let s = Server::start();
    let mut con = s.conn();
    let members = names("fpr:member:", 95_000);
    let probes = names("fpr:probe:", 200_000);
    let n = probes.len() as f64;
    let mut measured = Vec::new();
    for (key, opts, bound) in [
        ("fpr8", "", 2.0 * 2.0 / 255.0),
        ("fpr-e", "ERROR 0.001", 0.001),
    ] {
        ok(&mut con, &format!("CF.RESERVE {key} 100000 {opts}"));
        insert_ok(&mut con, key.as_bytes(), &members);
        // 95% of the capacity may already need a second (nearly empty) sub-filter; the
        // single-sub-filter bound must hold all the same.
        let f = filters(&mut con, key.as_bytes());
        assert!(f <= 2, "{key}: {f} sub-filters");
        let sigma = (bound * (1.0 - bound) / n).sqrt();
        let rate = fpr(&mut con, key.as_bytes(), &probes);
        assert!(
            rate <= bound + 4.0 * sigma,
            "{key}: measured FPR {rate} > bound {bound} + 4 sigma ({sigma})"
        );
        eprintln!("{key}: {f} sub-filter(s), FPR {rate:.5} (bound {bound:.5}, sigma {sigma:.6})");
        measured.push(rate);
        // No false negatives.
        assert!(mexists(&mut con, key.as_bytes(), &members)
            .iter()
            .all(|p| *p));
    }
    assert!(fp_size(&mut con, b"fpr-e") > 8);
    assert_eq!(fp_size(&mut con, b"fpr8"), 8);
    // The 8-bit filter does produce false positives (the probes test something), and
    // the ERROR option cuts them by much more than 4x.
    assert!(measured[0] > 0.002, "8-bit FPR {}", measured[0]);
    assert!(measured[1] < measured[0] / 4.0, "{measured:?}");
}
