//! Hostile input to Bloom filters: corrupt RESTORE payloads (built from real DUMPs, CRC
//! recomputed), foreign type ids and encoding versions, corrupt LOADCHUNK headers and chunks,
//! and limits lowered after the filters exist. Helpers: `common::bf_persist`.

mod common;

use common::bf_persist::*;
use common::rdb::*;
use common::*;
use redis::{Connection, Value};
use std::time::Duration;

// 8. Hostile input
// ---------------------------------------------------------------------------------------------

/// A two-link filter (capacity 100, 300 items) and a bystander filter.
fn hostile_setup(con: &mut Connection) -> Filters {
    let mut fs = Filters::default();
    reserve(con, b"victim", &["0.01", "100"]);
    let items = text_items("victim:", 250);
    madd(con, b"victim", &items);
    assert_eq!(link_bytes(con, b"victim").len(), 2);
    fs.push(b"victim", items);
    let items = binary_items();
    madd(con, b"bystander", &items);
    fs.push(b"bystander", items);
    fs
}

#[test]
fn crc64_and_payload_layout_match_redis() {
    // Redis' own test vector (src/crc64.c).
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    let s = Server::start();
    let mut con = s.conn();
    hostile_setup(&mut con);
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, b"victim");
    let p = ModulePayload::parse(&raw);
    assert_eq!(p.module_id, module_type_id("MBbloom--", 6));
    assert_eq!(p.scheme, Some(0), "ferrobloom's own hashing");
    assert_eq!(
        p.encode(),
        raw,
        "re-encoding a parsed DUMP is byte-identical"
    );
    // One header buffer plus one buffer per link.
    let links = link_bytes(&mut con, b"victim");
    assert_eq!(p.strings.len(), 1 + links.len());
    let scan = scandump(&mut con, b"victim");
    assert_eq!(
        p.strings[0], scan[0].1,
        "the RDB header is the SCANDUMP header"
    );
    for (i, l) in links.iter().enumerate() {
        assert_eq!(p.strings[1 + i].len() as u64, *l);
        assert_eq!(p.strings[1 + i], scan[1 + i].1);
    }
}

/// RESTOREs `payload` into a fresh key: must fail with `expected` (when given) or
/// any error, leave no key behind, and leave the server and other keys alone.
fn assert_restore_refused(
    con: &mut Connection,
    n: usize,
    payload: &[u8],
    expected: Option<&str>,
    what: &str,
) {
    let key = format!("bad:{n}").into_bytes();
    let r = restore(con, &key, payload);
    let Err(e) = r else {
        panic!("RESTORE of a corrupt payload ({what}) was accepted: {r:?}");
    };
    let text = match e.into_server_errors() {
        Some(errs) if errs.len() == 1 => server_error_text(&errs[0].1),
        other => panic!("{what}: not a server error: {other:?}"),
    };
    if let Some(want) = expected {
        assert_eq!(text, want, "{what}");
    }
    ping(con);
    assert!(
        !exists(con, &key),
        "{what}: key exists after a refused RESTORE"
    );
}

#[test]
fn restore_rejects_corrupt_payloads() {
    const BAD: Option<&str> = Some("ERR Bad data format");
    let s = Server::start();
    let mut con = s.conn();
    let fs = hostile_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, b"victim");
    let good = ModulePayload::parse(&raw);
    assert_eq!(
        restore(&mut con, b"sanity", &good.encode()).ok(),
        Some(Value::Okay)
    );
    assert_same_key(
        &mut con,
        b"victim",
        b"sanity",
        &fs.list[0].items,
        "re-encoded DUMP",
    );
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };

    // Corrupt headers (valid CRC).
    for (what, h) in bad_headers(&good.strings[0]) {
        let mut p = good.clone();
        p.strings[0] = h;
        assert_restore_refused(&mut con, next(), &p.encode(), BAD, what);
    }

    // Link data that does not match the header.
    let cases: Vec<(&str, PayloadEdit)> = vec![
        (
            "link buffer 8 bytes short",
            Box::new(|p| {
                let n = p.strings[1].len();
                p.strings[1].truncate(n - 8)
            }),
        ),
        (
            "last link buffer 1 byte short",
            Box::new(|p| {
                p.strings[2].pop();
            }),
        ),
        (
            "link buffer 8 bytes long",
            Box::new(|p| p.strings[2].extend_from_slice(&[0; 8])),
        ),
        ("empty link buffer", Box::new(|p| p.strings[1].clear())),
        ("link buffers swapped", Box::new(|p| p.strings.swap(1, 2))),
        (
            "a link buffer missing",
            Box::new(|p| {
                p.strings.pop();
            }),
        ),
        ("no link buffers", Box::new(|p| p.strings.truncate(1))),
        ("no buffers at all", Box::new(|p| p.strings.clear())),
        ("an extra buffer", Box::new(|p| p.strings.push(vec![0; 8]))),
        (
            "header claims a 2^40-byte link",
            Box::new(|p| put_u64(&mut p.strings[0], link_at(1, L_BITS), 1 << 43)),
        ),
        (
            "header claims 2^61 bits",
            Box::new(|p| put_u64(&mut p.strings[0], link_at(0, L_BITS), 1 << 61)),
        ),
        (
            "header claims twice the bits",
            Box::new(|p| {
                let b = get_u64(&p.strings[0], link_at(1, L_BITS));
                put_u64(&mut p.strings[0], link_at(1, L_BITS), 2 * b)
            }),
        ),
        (
            "header claims u32::MAX links",
            Box::new(|p| put_u32(&mut p.strings[0], H_NLINKS, u32::MAX)),
        ),
    ];
    for (what, f) in &cases {
        let mut p = good.clone();
        f(&mut p);
        assert_restore_refused(&mut con, next(), &p.encode(), BAD, what);
    }

    // Raw RDB-level damage.
    let body = good.body();
    let ver = good.rdb_version;
    // A string whose length encoding claims 2^40 bytes (only a few follow).
    let mut b = vec![RDB_TYPE_MODULE_2];
    b.extend(rdb_len(good.module_id));
    b.push(MODULE_OPCODE_STRING);
    b.extend(rdb_len(1 << 40));
    b.extend_from_slice(&good.strings[0]);
    b.push(MODULE_OPCODE_EOF);
    assert_restore_refused(
        &mut con,
        next(),
        &seal(b, ver),
        BAD,
        "2^40-byte string length",
    );
    // The same claim for the link data after a valid header.
    let mut b = vec![RDB_TYPE_MODULE_2];
    b.extend(rdb_len(good.module_id));
    b.push(MODULE_OPCODE_STRING);
    b.extend(rdb_len(good.strings[0].len() as u64));
    b.extend_from_slice(&good.strings[0]);
    b.push(MODULE_OPCODE_STRING);
    b.extend(rdb_len(1 << 40));
    b.extend_from_slice(&good.strings[1]);
    b.push(MODULE_OPCODE_EOF);
    assert_restore_refused(
        &mut con,
        next(),
        &seal(b, ver),
        BAD,
        "2^40-byte link buffer",
    );
    // The header saved as an integer opcode instead of a string.
    let mut b = body.clone();
    // (after the type id and version 6's scheme: opcode UINT, value 0)
    let at = 1 + rdb_len(good.module_id).len() + 2;
    assert_eq!(b[at], MODULE_OPCODE_STRING);
    b[at] = 2;
    assert_restore_refused(&mut con, next(), &seal(b, ver), BAD, "wrong module opcode");
    // Truncated at every position (CRC recomputed). RESTORE hands the module value
    // *and* the 10-byte trailer (RDB version, CRC) to the loader, so a string cut
    // short by fewer than 10 bytes is completed from the trailer, and if the next
    // trailer byte is 0 it passes as the module EOF marker (a cut of 2 bytes always
    // loads: the last data byte becomes 0x0a, the version's 0x00 is the EOF). Such a
    // payload is well-formed for the module; it may load, as a consistent filter.
    for cut in 0..body.len() {
        let b = seal(body[..cut].to_vec(), ver);
        let what = format!("payload truncated to {cut} of {} bytes", body.len());
        if cut + 10 > body.len() {
            let key = format!("cut:{cut}").into_bytes();
            if let Ok(v) = restore(&mut con, &key, &b) {
                assert_eq!(v, Value::Okay);
                assert_eq!(
                    bf_info(&mut con, &key),
                    bf_info(&mut con, b"victim"),
                    "{what}"
                );
                assert_eq!(q::<i64>(&mut con, &[b"DEL", &key]), 1);
            }
            ping(&mut con);
            assert!(!exists(&mut con, &key));
        } else {
            assert_restore_refused(&mut con, next(), &b, BAD, &what);
        }
    }
    // Wrong CRC, and a newer RDB version.
    let mut b = good.encode();
    let last = b.len() - 1;
    b[last] ^= 1;
    let crc_err = Some("ERR DUMP payload version or checksum are wrong");
    assert_restore_refused(&mut con, next(), &b, crc_err, "bad CRC");
    assert_restore_refused(
        &mut con,
        next(),
        &seal(body.clone(), [0xff, 0x00]),
        crc_err,
        "RDB version 255",
    );

    // Every single-byte change of the header: refused, or (only where the header can
    // stay consistent) a usable filter.
    for i in 0..good.strings[0].len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut p = good.clone();
            p.strings[0][i] ^= x;
            let key = format!("flip:{i}:{x}").into_bytes();
            match restore(&mut con, &key, &p.encode()) {
                Ok(_) => {
                    assert!(
                        header_byte_may_vary(i, false),
                        "RESTORE accepted header byte {i} ^ {x:#x}"
                    );
                    let _: Value = q(&mut con, &[b"BF.INFO", &key]);
                    let _: Value = q(&mut con, &[b"BF.DEBUG", &key]);
                    let _ = mexists(&mut con, &key, &fs.list[0].items[..50]);
                    let _ = q_raw(&mut con, &[b"BF.MADD", &key, b"a", b"b", b"c"]);
                    let _ = scandump(&mut con, &key);
                    assert_eq!(q::<i64>(&mut con, &[b"DEL", &key]), 1);
                }
                Err(e) => {
                    let t = err_text::<Value>(Err(e));
                    assert_eq!(t, "ERR Bad data format", "header byte {i} ^ {x:#x}");
                    assert!(!exists(&mut con, &key));
                }
            }
            ping(&mut con);
        }
    }

    assert_eq!(q::<i64>(&mut con, &[b"DEL", b"sanity"]), 1);
    assert_eq!(q::<i64>(&mut con, &[b"DBSIZE"]), 2);
    assert_restored(&mut con, &fs, &snap, "after corrupt RESTOREs");
    assert!(s.is_alive());
}

#[test]
fn restore_rejects_foreign_type_and_encoding_version() {
    let s = Server::start();
    let mut con = s.conn();
    let fs = hostile_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    config_set(&mut con, "rdbcompression", "no");
    let good = ModulePayload::parse(&dump(&mut con, b"victim"));
    assert_eq!(good.module_id & 1023, 6, "encoding version 6");
    let cases = [
        // ferrobloom's payload read as RedisBloom's own (versions 0-4: unsigned
        // fields where strings are) or as version 5 (no scheme field).
        (
            "RedisBloom's encoding version 4",
            module_type_id("MBbloom--", 4),
        ),
        ("encoding version 0", module_type_id("MBbloom--", 0)),
        ("encoding version 5", module_type_id("MBbloom--", 5)),
        ("encoding version 7", module_type_id("MBbloom--", 7)),
        ("encoding version 1023", module_type_id("MBbloom--", 1023)),
        ("the cuckoo type", module_type_id("MBbloomCF", 6)),
        ("an unknown type", module_type_id("XXbloom--", 6)),
    ];
    for (n, (what, id)) in cases.iter().enumerate() {
        let mut p = good.clone();
        p.module_id = *id;
        assert_restore_refused(&mut con, n, &p.encode(), Some("ERR Bad data format"), what);
    }
    assert!(s.log().contains("encoding version 4"));
    assert_restored(&mut con, &fs, &snap, "after foreign RESTOREs");
}

#[test]
fn loadchunk_rejects_hostile_input() {
    const BAD: &str = "ERR received bad data";
    let s = Server::start();
    let mut con = s.conn();
    let mut fs = hostile_setup(&mut con);
    let chunks = scandump(&mut con, b"victim");
    let header = chunks[0].1.clone();
    let links = link_bytes(&mut con, b"victim");

    // Bad headers onto a missing key: refused, nothing created.
    for (what, h) in bad_headers(&header) {
        let r = loadchunk(&mut con, b"new", 1, &h);
        assert_eq!(err_text(r), BAD, "{what}");
        assert!(!exists(&mut con, b"new"), "{what}: key created");
    }
    // A header under another iterator is a data chunk for a missing key.
    assert_eq!(
        err_text(loadchunk(&mut con, b"new", 2, &header)),
        "ERR not found"
    );

    // A loaded header, then hostile data chunks.
    loadchunks(&mut con, b"dst", &chunks[..1]);
    let l0 = links[0] as i64;
    let l1 = links[1] as i64;
    let total = l0 + l1;
    let cases: Vec<(&str, i64, Vec<u8>, &str)> = vec![
        ("empty chunk at offset 0", 0, Vec::new(), BAD),
        (
            "empty chunk past the end",
            l0 + l1 + 1,
            Vec::new(),
            "ERR invalid offset - no link found",
        ),
        ("iterator 0", 0, vec![1; 8], BAD),
        ("negative iterator", -5, vec![1; 8], BAD),
        ("i64::MIN iterator", i64::MIN, vec![1; 8], BAD),
        ("iterator smaller than the chunk", 4, vec![1; 8], BAD),
        (
            "header (iterator 1) onto an existing key",
            1,
            header.clone(),
            BAD,
        ),
        (
            "huge iterator",
            i64::MAX,
            vec![1; 8],
            "ERR invalid offset - no link found",
        ),
        (
            "just past the end",
            total + 2,
            vec![1; 1],
            "ERR invalid offset - no link found",
        ),
        (
            "longer than the first link",
            l0 + 8 + 1,
            vec![1; l0 as usize + 8],
            "ERR invalid chunk - Too big for current filter",
        ),
        (
            "spanning two links",
            l0 + 8 + 1,
            vec![1; 16],
            "ERR invalid chunk - Too big for current filter",
        ),
        (
            "past the end of the last link",
            total + 8 + 1,
            vec![1; 16],
            "ERR invalid chunk - Too big for current filter",
        ),
    ];
    let before = key_state(&mut con, b"dst");
    for (what, it, data, want) in &cases {
        assert_eq!(
            err_text(loadchunk(&mut con, b"dst", *it, data)),
            *want,
            "{what}"
        );
        ping(&mut con);
    }
    assert_state_eq(
        &before,
        &key_state(&mut con, b"dst"),
        "refused chunks changed the filter",
    );
    // The genuine chunks still load.
    loadchunks(&mut con, b"dst", &chunks[1..]);
    assert_same_key(
        &mut con,
        b"victim",
        b"dst",
        &fs.list[0].items,
        "after hostile chunks",
    );

    // Wrong type: header and data chunk onto a string.
    ok(&mut con, &[b"SET", b"str", b"v"]);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(err_text(loadchunk(&mut con, b"str", 1, &header)), wrongtype);
    assert_eq!(
        err_text(loadchunk(&mut con, b"str", chunks[1].0, &chunks[1].1)),
        wrongtype
    );
    let v: Vec<u8> = q(&mut con, &[b"GET", b"str"]);
    assert_eq!(v, b"v");
    // Non-numeric iterator.
    assert_eq!(
        q_err(&mut con, &[b"BF.LOADCHUNK", b"dst", b"abc", b"x"]),
        "ERR Second argument must be numeric"
    );

    // Every single-byte change of the header: refused, or a usable filter.
    for i in 0..header.len() {
        for x in [0x01u8, 0x80, 0xff] {
            let mut h = header.clone();
            h[i] ^= x;
            let key = format!("flip:{i}:{x}").into_bytes();
            match loadchunk(&mut con, &key, 1, &h) {
                Ok(v) => {
                    assert_eq!(v, Value::Okay);
                    assert!(
                        header_byte_may_vary(i, true),
                        "LOADCHUNK accepted header byte {i} ^ {x:#x}"
                    );
                    for (it, data) in &chunks[1..] {
                        let _ = loadchunk(&mut con, &key, *it, data);
                    }
                    let _: Value = q(&mut con, &[b"BF.INFO", &key]);
                    let _ = q_raw(&mut con, &[b"BF.MADD", &key, b"a", b"b"]);
                    let _ = scandump(&mut con, &key);
                    assert_eq!(q::<i64>(&mut con, &[b"DEL", &key]), 1);
                }
                Err(e) => {
                    assert_eq!(err_text::<Value>(Err(e)), BAD, "header byte {i} ^ {x:#x}");
                    assert!(!exists(&mut con, &key));
                }
            }
        }
    }
    ping(&mut con);
    fs.push(b"dst", fs.list[0].items.clone());
    let snap = snapshot(&mut con, &fs);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs, &snap, "after hostile LOADCHUNKs");
}

// ---------------------------------------------------------------------------------------------
// 9. Limits lowered after the filters exist
// ---------------------------------------------------------------------------------------------

/// A 5-link filter (about 1.4 KB) and a single-link filter of about 1.2 MB.
fn limits_setup(con: &mut Connection) -> Filters {
    let mut fs = Filters::default();
    reserve(con, b"lim:links", &["0.01", "10"]);
    let items = text_items("lim-links:", 200);
    madd(con, b"lim:links", &items);
    assert_eq!(bf_info_field(con, b"lim:links", "FILTERS"), Value::Int(5));
    fs.push(b"lim:links", items);
    reserve(con, b"lim:bytes", &["0.01", "1000000"]);
    let items = text_items("lim-bytes:", 100);
    madd(con, b"lim:bytes", &items);
    fs.push(b"lim:bytes", items);
    ok(con, &[b"SET", b"lim:plain", b"v"]);
    fs
}

/// `bf-max-links` and `max-filter-memory` bound what commands create and grow. Data
/// already saved must load whatever the current values are: refusing it on load loses
/// it (DEBUG RELOAD empties the dataset first; at startup Redis refuses the whole RDB
/// and exits).
#[test]
fn lowered_limits_do_not_make_saved_filters_unloadable() {
    let mut s = Server::start();
    let mut con = s.conn();
    let fs = limits_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    config_set(&mut con, "bf.bf-max-links", "2");
    config_set(&mut con, "bf.max-filter-memory", "65536");
    // The limits do apply to growth.
    let more = text_items("lim-more:", 500);
    let mut args: Vec<&[u8]> = vec![b"BF.MADD", b"lim:links"];
    args.extend(more.iter().map(|i| i.as_slice()));
    let r = q_array(&mut con, &args);
    assert!(
        r.iter().any(|v| value_err_text(v).is_some()),
        "no limit error"
    );
    let snap = Snapshot {
        states: vec![
            (b"lim:links".to_vec(), key_state(&mut con, b"lim:links")),
            snap.states[1].clone(),
        ],
    };

    let r: redis::RedisResult<Value> = redis::cmd("DEBUG").arg("RELOAD").query(&mut con);
    assert_eq!(
        r.ok(),
        Some(Value::Okay),
        "DEBUG RELOAD with lowered limits"
    );
    assert_restored(&mut con, &fs, &snap, "DEBUG RELOAD with lowered limits");

    // A restart with the lowered limits in the startup configuration.
    ok(&mut con, &[b"SAVE"]);
    drop(con);
    s.config_mut()
        .extra_args
        .extend(["--bf.bf-max-links", "2", "--bf.max-filter-memory", "65536"].map(String::from));
    s.restart();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-max-links"), "2");
    assert_restored(&mut con, &fs, &snap, "restart with lowered limits");
}

/// The same for a rewritten AOF: its `BF.LOADCHUNK` commands rebuild existing data.
#[test]
fn lowered_limits_do_not_drop_filters_from_a_rewritten_aof() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    let mut con = s.conn();
    let fs = limits_setup(&mut con);
    let snap = snapshot(&mut con, &fs);
    bgrewriteaof(&s);
    drop(con);
    s.config_mut()
        .extra_args
        .extend(["--bf.bf-max-links", "2", "--bf.max-filter-memory", "65536"].map(String::from));
    s.restart();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-max-links"), "2");
    assert_restored(&mut con, &fs, &snap, "AOF replay with lowered limits");
}

/// A replica configured with lower limits than its primary still gets the data.
#[test]
fn replica_with_lower_limits_loads_the_primary_filters() {
    let primary = Server::start();
    let mut con = primary.conn();
    let fs = limits_setup(&mut con);
    let replica = Server::builder()
        .args(&["--bf.bf-max-links", "2", "--bf.max-filter-memory", "65536"])
        .start();
    let mut rcon = replica.conn();
    let port = primary.port().to_string();
    ok(&mut rcon, &[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    drop(rcon);
    wait_until(
        Duration::from_secs(10),
        "the replica to sync or die",
        || {
            !replica.is_alive()
                || replica
                    .info_field("replication", "master_link_status")
                    .as_deref()
                    == Some("up")
        },
    );
    assert!(
        replica.is_alive(),
        "the replica died loading the primary's RDB:\n{}",
        replica.log_tail(3)
    );
    assert_replica_matches(
        &primary,
        &replica,
        &fs,
        "full sync to a replica with lower limits",
    );
}

/// Bloom header version 2 (valkey-bloom's TIGHTENING and SEED): every corrupt field of
/// its 48 extra bytes is refused by LOADCHUNK (RDB and RESTORE share the decoder and its
/// unit tests), nothing is created,
/// and the genuine header and chunks still load into the same filter.
#[test]
fn version_2_headers_with_corrupt_options_are_refused() {
    const BAD: &str = "ERR received bad data";
    let s = Server::start();
    let mut con = s.conn();
    let items = text_items("v2:", 400);
    let mut args: Vec<&[u8]> = vec![
        b"BF.INSERT",
        b"v2",
        b"CAPACITY",
        b"100",
        b"TIGHTENING",
        b"0.75",
        b"SEED",
        SEED,
        b"ITEMS",
    ];
    args.extend(items.iter().map(|i| i.as_slice()));
    q_array(&mut con, &args);
    let chunks = scandump(&mut con, b"v2");
    let header = chunks[0].1.clone();
    assert_eq!((header[4], header[32]), (2, 1), "a seeded version 2 header");
    let put_f64 = |h: &mut Vec<u8>, v: f64| h[24..32].copy_from_slice(&v.to_bits().to_le_bytes());
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    for (what, v) in [
        ("tightening 0", 0.0),
        ("tightening 1", 1.0),
        ("tightening -0.5", -0.5),
        ("tightening NaN", f64::NAN),
        ("tightening inf", f64::INFINITY),
    ] {
        let mut h = header.clone();
        put_f64(&mut h, v);
        cases.push((what, h));
    }
    let mut h = header.clone();
    h[32] = 3;
    cases.push(("unknown flag", h));
    let mut h = header.clone();
    h[36] = 1;
    cases.push(("reserved byte", h));
    let mut h = header.clone();
    h[32] = 0;
    cases.push(("seed bytes without the seeded flag", h));
    let mut h = header.clone();
    h[32] = 0;
    h[40..72].fill(0);
    put_f64(&mut h, 0.5);
    cases.push(("version 2 with version 1's options", h));
    let mut h = header.clone();
    h[4] = 1;
    cases.push(("version 1 byte on a version 2 header", h));
    let mut h = header.clone();
    h[4] = 3;
    cases.push(("version 3", h));
    cases.push(("truncated", header[..header.len() - 1].to_vec()));
    let mut h = header.clone();
    h.drain(24..72);
    h[4] = 2;
    cases.push(("version 2 without its options", h));
    for (what, h) in &cases {
        assert_eq!(err_text(loadchunk(&mut con, b"new", 1, h)), BAD, "{what}");
        assert!(!exists(&mut con, b"new"), "{what}: key created");
        ping(&mut con);
    }
    loadchunks(&mut con, b"copy", &chunks);
    assert_eq!(
        digest_value(&mut con, b"copy"),
        digest_value(&mut con, b"v2")
    );
    assert_members(&mut con, b"copy", &items, "version 2 LOADCHUNK");
}
