//! BF.INFO, BF.CARD and BF.DEBUG replies, and the BF.SCANDUMP / BF.LOADCHUNK protocol with
//! its errors.

use super::*;

// ---------------------------------------------------------------------------------------------
// BF.INFO / BF.CARD / BF.DEBUG
// ---------------------------------------------------------------------------------------------

#[test]
fn info_full_and_single_fields() {
    let s = Server::start();
    let mut c2 = s.conn();
    let mut c3 = s.conn_resp3();
    ok(&mut c2, "BF.RESERVE bf 0.001 100");
    assert_eq!(q(&mut c2, "BF.MADD bf a b c"), "[1,1,1]");

    assert_eq!(
        q(&mut c2, "BF.INFO bf"),
        "[+Capacity,100,+Size,296,+Number of filters,1,+Number of items inserted,3,\
         +Expansion rate,2]"
    );
    assert_eq!(
        q(&mut c3, "BF.INFO bf"),
        "{+Capacity:100,+Size:296,+Number of filters:1,+Number of items inserted:3,\
         +Expansion rate:2}"
    );
    for (f, label, value) in [
        ("CAPACITY", "Capacity", "100"),
        ("capacity", "Capacity", "100"),
        ("SIZE", "Size", "296"),
        ("Filters", "Number of filters", "1"),
        ("ITEMS", "Number of items inserted", "3"),
        ("expansion", "Expansion rate", "2"),
    ] {
        assert_eq!(
            qv(&mut c2, &["BF.INFO", "bf", f]),
            format!("[{value}]"),
            "{f}"
        );
        assert_eq!(
            qv(&mut c3, &["BF.INFO", "bf", f]),
            format!("{{+{label}:{value}}}"),
            "{f}"
        );
    }

    // Non-scaling: the expansion rate is a null in both protocols.
    ok(&mut c2, "BF.RESERVE ns 0.01 3 NONSCALING");
    assert_eq!(q(&mut c2, "BF.INFO ns EXPANSION"), "[nil]");
    assert_eq!(q(&mut c3, "BF.INFO ns EXPANSION"), "{+Expansion rate:nil}");
    assert_eq!(
        field(&raw(&mut c3, "BF.INFO ns"), "Expansion rate"),
        Value::Nil
    );

    // Capacity, size and filter count follow growth.
    ok(&mut c2, "BF.RESERVE g 0.01 10");
    let adds = numbered("g", 40);
    qv(&mut c2, &with_items("BF.MADD g", &adds));
    let links = info_num(&mut c2, "g", "FILTERS");
    assert!(links >= 3, "{links}");
    let caps: i64 = [10, 20, 40, 80][..links as usize].iter().sum();
    assert_eq!(info_num(&mut c2, "g", "CAPACITY"), caps);
    let bytes: i64 = [16, 32, 72, 160][..links as usize].iter().sum();
    assert_eq!(info_num(&mut c2, "g", "SIZE"), 32 + 64 * links + bytes);
    assert_eq!(info_num(&mut c2, "g", "ITEMS"), card(&mut c2, "g"));

    // Errors.
    for f in ["capcaity", "CAP", "", "ITEMSX", "Number of filters"] {
        assert_eq!(
            errv(&mut c2, &["BF.INFO", "bf", f]),
            "Invalid information value",
            "{f:?}"
        );
        assert_eq!(
            errv(&mut c3, &["BF.INFO", "bf", f]),
            "Invalid information value",
            "{f:?}"
        );
    }
    assert_eq!(err(&mut c2, "BF.INFO none"), "ERR not found");
    assert_eq!(err(&mut c2, "BF.INFO none bogus"), "ERR not found");
    assert_eq!(err(&mut c3, "BF.INFO none SIZE"), "ERR not found");
}

#[test]
fn card_counts_accepted_items() {
    let s = Server::start();
    let mut con = s.conn();
    assert_eq!(card(&mut con, "none"), 0);
    assert_eq!(int(&mut con, "EXISTS none"), 0);
    ok(&mut con, "BF.RESERVE k 0.01 10");
    assert_eq!(card(&mut con, "k"), 0);
    assert_eq!(q(&mut con, "BF.MADD k a b a"), "[1,1,0]");
    assert_eq!(card(&mut con, "k"), 2);
    q(&mut con, "BF.ADD k b");
    assert_eq!(card(&mut con, "k"), 2);
    // RESP3 keeps an integer.
    let mut c3 = s.conn_resp3();
    assert_eq!(q(&mut c3, "BF.CARD k"), "2");
    assert_eq!(q(&mut c3, "BF.CARD none"), "0");
}

#[test]
fn debug_lines() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE bf 0.01 10");
    assert_eq!(
        debug(&mut con, "bf"),
        vec![
            "size:0".to_string(),
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:0 ratio:0.005".into()
        ]
    );

    let adds: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    qv(&mut con, &with_items("BF.MADD bf", &adds));
    let n = card(&mut con, "bf");
    assert!((90..=100).contains(&n), "{n}");
    let lines = debug(&mut con, "bf");
    assert_eq!(
        lines,
        vec![
            format!("size:{n}"),
            "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005".into(),
            "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025".into(),
            "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125".into(),
            format!(
                "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:{} ratio:0.000625",
                n - 70
            ),
        ]
    );

    // %g formatting of small ratios (exponent form).
    ok(&mut con, "BF.RESERVE tiny 0.000125 10");
    assert!(debug(&mut con, "tiny")[1].ends_with(" ratio:6.25e-05"));

    assert_eq!(err(&mut con, "BF.DEBUG none"), "ERR not found");
    // RESP3: the same bulk strings.
    let mut c3 = s.conn_resp3();
    assert_eq!(
        q(&mut c3, "BF.DEBUG tiny"),
        "[\"size:0\",\"bytes:32 bits:256 hashes:14 hashwidth:64 capacity:10 size:0 \
         ratio:6.25e-05\"]"
    );
}

// ---------------------------------------------------------------------------------------------
// BF.SCANDUMP / BF.LOADCHUNK
// ---------------------------------------------------------------------------------------------

#[test]
fn scandump_protocol() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE bf 0.01 10");
    let adds = numbered("i", 60);
    qv(&mut con, &with_items("BF.MADD bf", &adds));
    let links = info_num(&mut con, "bf", "FILTERS");
    assert!(links >= 3);

    // Iterator 0: [1, header]; the header is ferrobloom's own (magic FBbf, version 1).
    let head = items(raw(&mut con, "BF.SCANDUMP bf 0"));
    let header = match head.as_slice() {
        [Value::Int(1), Value::BulkString(h)] => h.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(&header[..5], b"FBbf\x01");
    assert_eq!(header.len(), 24 + 40 * links as usize);

    // Then one chunk per link (never spanning two), iterator = previous + length.
    let chunks = scandump(&mut con, "bf");
    let link_bytes = [16usize, 32, 72, 160];
    assert_eq!(chunks.len(), 1 + links as usize);
    assert_eq!(chunks[0], (1, header));
    let mut it = 1i64;
    for (i, (next, data)) in chunks[1..].iter().enumerate() {
        assert_eq!(data.len(), link_bytes[i], "chunk {i}");
        it += data.len() as i64;
        assert_eq!(*next, it, "chunk {i}");
        assert!(data.iter().any(|&b| b != 0), "link {i} has bits set");
    }
    // A chunk can start inside a link: it runs to that link's end.
    assert_eq!(
        items(raw(&mut con, "BF.SCANDUMP bf 5")),
        vec![Value::Int(17), Value::BulkString(chunks[1].1[4..].to_vec())]
    );
    // Past the end, or before the start: [0, ""].
    for it in [
        it.to_string(),
        (it + 100).to_string(),
        "-5".into(),
        i64::MAX.to_string(),
        i64::MIN.to_string(),
    ] {
        assert_eq!(
            qv(&mut con, &["BF.SCANDUMP", "bf", &it]),
            "[0,\"\"]",
            "{it}"
        );
    }
    let mut c3 = s.conn_resp3();
    assert_eq!(
        qv(&mut c3, &["BF.SCANDUMP", "bf", &it.to_string()]),
        "[0,\"\"]"
    );

    // Errors: the key is checked before the iterator.
    assert_eq!(
        err(&mut con, "BF.SCANDUMP bf abc"),
        "Second argument must be numeric"
    );
    assert_eq!(
        err(&mut con, "BF.SCANDUMP bf 1.5"),
        "Second argument must be numeric"
    );
    assert_eq!(err(&mut con, "BF.SCANDUMP none 0"), "ERR not found");
    assert_eq!(err(&mut con, "BF.SCANDUMP none abc"), "ERR not found");
}

#[test]
fn loadchunk_restores_a_dump() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE src 0.01 10 EXPANSION 3");
    let adds = numbered("item", 100);
    qv(&mut con, &with_items("BF.MADD src", &adds));
    let dump = scandump(&mut con, "src");

    load_dump(&mut con, "dst", &dump);
    assert_eq!(q(&mut con, "TYPE dst"), "+MBbloom--");
    assert_eq!(debug(&mut con, "dst"), debug(&mut con, "src"));
    assert_eq!(q(&mut con, "BF.INFO dst"), q(&mut con, "BF.INFO src"));
    assert_eq!(scandump(&mut con, "dst"), dump);
    assert_eq!(
        qv(&mut con, &with_items("BF.MEXISTS dst", &adds)),
        format!("[{}]", vec!["1"; 100].join(","))
    );
    let others = numbered("other", 100);
    assert_eq!(
        qv(&mut con, &with_items("BF.MEXISTS dst", &others)),
        qv(&mut con, &with_items("BF.MEXISTS src", &others))
    );
    // The restored filter keeps working (and keeps its expansion).
    assert_eq!(info_num(&mut con, "dst", "EXPANSION"), 3);
    assert_eq!(q(&mut con, "BF.ADD dst new-item"), "1");
    assert_eq!(card(&mut con, "dst"), card(&mut con, "src") + 1);

    // A non-scaling filter round-trips too; header first, chunks in any order.
    assert_eq!(
        q(&mut con, "BF.INSERT ns CAPACITY 50 NONSCALING ITEMS a b"),
        "[1,1]"
    );
    let dump = scandump(&mut con, "ns");
    load_dump(&mut con, "ns2", &dump[..1]);
    assert_eq!(q(&mut con, "BF.MEXISTS ns2 a b"), "[0,0]");
    load_dump(&mut con, "ns2", &dump[1..]);
    assert_eq!(q(&mut con, "BF.MEXISTS ns2 a b c"), "[1,1,0]");
    assert_eq!(q(&mut con, "BF.INFO ns2"), q(&mut con, "BF.INFO ns"));

    // A dump of a multi-link filter can be loaded chunk by chunk in reverse link order.
    let dump = scandump(&mut con, "src");
    let mut reordered = vec![dump[0].clone()];
    reordered.extend(dump[1..].iter().rev().cloned());
    load_dump(&mut con, "rev", &reordered);
    assert_eq!(scandump(&mut con, "rev"), dump);
}

#[test]
fn loadchunk_errors() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "BF.RESERVE k 0.01 10");
    let adds = numbered("x", 15);
    qv(&mut con, &with_items("BF.MADD k", &adds));
    assert_eq!(info_num(&mut con, "k", "FILTERS"), 2); // links of 16 and 32 bytes
    let dump = scandump(&mut con, "k");
    let header = dump[0].1.clone();
    let before = snapshot(&mut con, "k");

    let lc = |con: &mut Connection, key: &str, it: &str, data: &[u8]| {
        err_bytes(con, &[b"BF.LOADCHUNK", key.as_bytes(), it.as_bytes(), data])
    };
    assert_eq!(
        lc(&mut con, "k", "abc", b"x"),
        "ERR Second argument must be numeric"
    );
    assert_eq!(
        lc(&mut con, "none", "1.5", b"x"),
        "ERR Second argument must be numeric"
    );
    // A header onto an existing filter is a data chunk that does not fit.
    assert_eq!(lc(&mut con, "k", "1", &header), "ERR received bad data");
    // Empty data loads nothing inside a link (RedisBloom 2.8: OK), has no link
    // past the end; iterator 0 or negative is bad data.
    let empty: String = redis::cmd("BF.LOADCHUNK")
        .arg("k")
        .arg(17)
        .arg(b"")
        .query(&mut con)
        .unwrap();
    assert_eq!(empty, "OK");
    assert_eq!(
        lc(&mut con, "k", "49", b""),
        "ERR invalid offset - no link found"
    );
    assert_eq!(lc(&mut con, "k", "0", b""), "ERR received bad data");
    assert_eq!(lc(&mut con, "k", "0", b"abcd"), "ERR received bad data");
    assert_eq!(lc(&mut con, "k", "-3", b"abcd"), "ERR received bad data");
    // Offsets: 48 bytes in all; a chunk starting at byte 48 or later has no link.
    assert_eq!(
        lc(&mut con, "k", "58", &[0xff; 8]),
        "ERR invalid offset - no link found"
    );
    assert_eq!(
        lc(&mut con, "k", "1000", &[0xff; 8]),
        "ERR invalid offset - no link found"
    );
    // A chunk longer than the rest of its link (spanning links, or past the end).
    assert_eq!(
        lc(&mut con, "k", "25", &[0xff; 16]),
        "ERR invalid chunk - Too big for current filter"
    );
    assert_eq!(
        lc(&mut con, "k", "58", &[0xff; 40]),
        "ERR invalid chunk - Too big for current filter"
    );
    assert_eq!(
        snapshot(&mut con, "k"),
        before,
        "failed loads change nothing"
    );

    // A valid chunk overwrites exactly its bytes (here: the whole first link).
    let v = raw_bytes(&mut con, &[b"BF.LOADCHUNK", b"k", b"17", &[0u8; 16]]);
    assert_eq!(show(&v), "+OK");
    let after = scandump(&mut con, "k");
    assert_ne!(dump[1].1, vec![0u8; 16]);
    assert_eq!(after[1], (17, vec![0u8; 16]));
    assert_eq!((&after[0], &after[2]), (&dump[0], &dump[2]));

    // Missing key: only a header creates it; bad headers are refused.
    assert_eq!(lc(&mut con, "none", "17", &[0u8; 16]), "ERR not found");
    let mut bad_magic = header.clone();
    bad_magic[0] = b'X';
    let mut bad_version = header.clone();
    bad_version[4] = 9;
    let mut bad_links = header.clone();
    bad_links[20] = 3; // says 3 links, has 2
    let mut bad_total = header.clone();
    bad_total[8] ^= 1; // total items no longer the sum of the links
    for (what, h) in [
        ("garbage", b"not a header".to_vec()),
        ("empty", Vec::new()),
        ("truncated", header[..header.len() - 1].to_vec()),
        ("extended", [header.clone(), vec![0]].concat()),
        ("magic", bad_magic),
        ("version", bad_version),
        ("link count", bad_links),
        ("total", bad_total),
    ] {
        assert_eq!(
            lc(&mut con, "none", "1", &h),
            "ERR received bad data",
            "{what}"
        );
    }
    assert_eq!(int(&mut con, "EXISTS none"), 0);

    // The configured limits apply to loaded headers as well.
    ok(&mut con, "CONFIG SET bf.bf-max-links 1");
    assert_eq!(lc(&mut con, "none", "1", &header), "ERR received bad data");
    ok(&mut con, "CONFIG SET bf.bf-max-links 64");
    ok(&mut con, "BF.RESERVE big 0.01 5000");
    assert!(info_num(&mut con, "big", "SIZE") > 4096);
    let big_header = scandump(&mut con, "big")[0].1.clone();
    ok(&mut con, "CONFIG SET bf.max-filter-memory 4096");
    assert_eq!(
        lc(&mut con, "none", "1", &big_header),
        "ERR received bad data"
    );
    assert_eq!(int(&mut con, "EXISTS none"), 0);
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1mb");
    let big_dump = scandump(&mut con, "big");
    load_dump(&mut con, "none", &big_dump);
    assert_eq!(debug(&mut con, "none"), debug(&mut con, "big"));
}
