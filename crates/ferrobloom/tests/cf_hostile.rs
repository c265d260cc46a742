//! Hostile input to cuckoo filters: corrupt headers, chunks and RESTORE payloads are refused
//! and change nothing; extreme shapes stay fast. Helpers: `common::cf`.

mod common;

use common::cf::*;
use common::rdb::*;
use common::*;
use redis::{Connection, Value};
use std::time::{Duration, Instant};

// =============================================================================================
// 7. Hostile input
// =============================================================================================

/// A filter with exactly 3 sub-filters (32, 64, 128 buckets of 2 slots).
fn three_filters(con: &mut Connection, key: &[u8]) -> Tracked {
    okb(
        con,
        &[
            b"CF.RESERVE".as_slice(),
            key,
            b"64",
            b"BUCKETSIZE",
            b"2",
            b"EXPANSION",
            b"2",
        ],
    );
    let items = names("three", 200);
    insert_ok(con, key, &items);
    assert_eq!(filters(con, key), 3);
    let mut t = Tracked::new(key);
    t.add(&items);
    t
}

#[test]
fn loadchunk_rejects_hostile_headers() {
    let s = Server::start();
    let mut con = s.conn();
    let src = three_filters(&mut con, b"src");
    let h = header_of(&mut con, b"src");
    ok(&mut con, "CF.RESERVE keep 100");
    assert_eq!(q(&mut con, "CF.ADD keep a"), "1");
    let before = db_digest(&mut con);

    for (what, bad, want) in bad_headers(&h) {
        let e = errb(&mut con, &[b"CF.LOADCHUNK".as_slice(), b"hk", b"1", &bad]);
        assert_eq!(e, want, "{what}");
        assert!(!key_exists(&mut con, b"hk"), "{what}: key created");
        ping(&mut con);
    }
    assert_eq!(db_digest(&mut con), before);

    // A lying item count below the true occupancy is not detectable from the header:
    // accepted, and the counters are then what the header said.
    let mut low = Hdr::decode(&h);
    low.items = 3;
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"low", b"1", &low.encode()],
    );
    assert_eq!(info_int(&mut con, b"low", "Number of items inserted"), 3);
    assert_eq!(q(&mut con, "DEL low"), "1");

    // Valid hand-made headers load: a compaction cursor mid-pass, an error rate,
    // 32-bit fingerprints, bucket size 255, expansion 0 with one sub-filter.
    let mut mid = Hdr::decode(&h);
    mid.flags = 3;
    mid.cursor_filter = 2;
    mid.cursor_slot = 17;
    mid.error_bits = 0.001f64.to_bits();
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"mid", b"1", &mid.encode()],
    );
    assert_eq!(header_of(&mut con, b"mid"), mid.encode());
    let mut wide = Hdr::plain(255, 0, 1, 4);
    wide.fp_bits = 32;
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"wide", b"1", &wide.encode()],
    );
    assert_eq!(info_int(&mut con, b"wide", "Size"), 40 + 16 + 4 * 255 * 4);
    assert_eq!(q(&mut con, "CF.ADD wide x"), "1");
    assert_eq!(q(&mut con, "CF.EXISTS wide x"), "1");

    // The unmodified header loads, then the chunks.
    let chunks = scandump(&mut con, b"src");
    loadchunks(&mut con, b"ok", &chunks);
    assert_same(&mut con, &src, b"ok", "after hostile headers");

    // 2^32 buckets of 1 slot (a 4 GiB table, more than CF.RESERVE's 2^30
    // capacity gives) under a 1 GiB cap: refused, server alive.
    config_set(&mut con, "bf.max-filter-memory", "1gb");
    let huge = Hdr::plain(1, 1, 1, 1 << 32).encode();
    assert_eq!(
        errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"huge", b"1", &huge]
        ),
        CANNOT_CREATE
    );
    assert!(s.is_alive());
    assert!(!key_exists(&mut con, b"huge"));
    // Just under the cap is fine (2^30 buckets would be 1 GiB: use 2^20).
    let fine = Hdr::plain(1, 1, 1, 1 << 20).encode();
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"fine", b"1", &fine],
    );
    assert_eq!(info_int(&mut con, b"fine", "Number of buckets"), 1 << 20);
    ping(&mut con);
}

/// The most sub-filters a client may send: `bf.cf-max-expansions` at its maximum,
/// 4096 one-slot sub-filters (RedisBloom allows 65536 and truncates the count to 16
/// bits, quirk Q12). Every whole-filter operation (digest, RDB save and load,
/// DUMP/RESTORE) must be quick: each is bounded at 1 s here (linear work takes a few
/// milliseconds).
#[test]
fn the_most_sub_filters_work_in_linear_time() {
    let s = Server::builder()
        .args(&["--bf.cf-max-expansions", "4096"])
        .start();
    let mut con = s.conn();
    let many = Hdr::plain(1, 1, 4096, 1).encode();
    okb(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"many", b"1", &many],
    );
    assert_eq!(filters(&mut con, b"many"), 4096);
    // One more than cf-max-expansions: refused (every limit applies to what a
    // client sends).
    let too_many = Hdr::plain(1, 1, 4097, 1).encode();
    assert!(show(&raw(
        &mut con,
        &[b"CF.LOADCHUNK".as_slice(), b"more", b"1", &too_many]
    ))
    .starts_with('!'));
    assert_eq!(info_int(&mut con, b"many", "Size"), 40 + 17 * 4096);
    assert_eq!(q(&mut con, "CF.ADD many x"), "1");
    assert_eq!(q(&mut con, "CF.EXISTS many x"), "1");
    // x went to the newest sub-filter: the last byte of the dump.
    let chunk = raw(&mut con, &["CF.SCANDUMP", "many", "4096"]);
    let Value::Array(a) = &chunk else {
        panic!("{}", show(&chunk))
    };
    assert_eq!(a[0], Value::Int(4097));
    assert!(matches!(&a[1], Value::BulkString(b) if b.len() == 1 && b[0] != 0));
    assert_eq!(q(&mut con, "CF.SCANDUMP many 4097"), "[0,\"\"]");

    let mut slow: Vec<String> = Vec::new();
    let mut timed = |what: &str, con: &mut Connection, args: &[&[u8]]| -> Value {
        let t0 = Instant::now();
        let v = raw(con, args);
        let took = t0.elapsed();
        if took > Duration::from_secs(1) {
            slow.push(format!("{what}: {took:?}"));
        }
        v
    };
    let d = timed(
        "DEBUG DIGEST-VALUE",
        &mut con,
        &[b"DEBUG", b"DIGEST-VALUE", b"many"],
    );
    let Value::BulkString(payload) = timed("DUMP", &mut con, &[b"DUMP", b"many"]) else {
        panic!("DUMP")
    };
    let v = timed(
        "RESTORE",
        &mut con,
        &[b"RESTORE".as_slice(), b"many2", b"0", &payload],
    );
    assert_eq!(show(&v), "+OK");
    assert_eq!(header_of(&mut con, b"many2"), header_of(&mut con, b"many"));
    assert_eq!(q(&mut con, "CF.EXISTS many2 x"), "1");
    assert_eq!(
        show(&raw(&mut con, &["CF.SCANDUMP", "many2", "4096"])),
        show(&chunk)
    );
    assert!(matches!(d, Value::Array(ref a) if a.len() == 1));
    // Deleting the item lets compaction free every empty sub-filter.
    assert_eq!(q(&mut con, "CF.DEL many x"), "1");
    let mut calls = 0;
    while filters(&mut con, b"many") > 1 {
        ok(&mut con, "CF.COMPACT many");
        calls += 1;
        assert!(
            calls <= 10,
            "compaction does not free the empty sub-filters"
        );
    }
    ping(&mut con);
    assert!(
        slow.is_empty(),
        "whole-filter operations on 4096 sub-filters are slow, \
         i.e. quadratic in the number of sub-filters: {slow:?}"
    );
}

#[test]
fn loadchunk_rejects_hostile_chunks() {
    let s = Server::start();
    let mut con = s.conn();
    let src = three_filters(&mut con, b"src");
    let chunks = scandump(&mut con, b"src");
    let lens: Vec<usize> = chunks[1..].iter().map(|(_, c)| c.len()).collect();
    assert_eq!(lens, vec![64, 128, 256]);
    loadchunks(&mut con, b"dst", &chunks[..1]);
    let before = digest_value(&mut con, b"dst");

    let cases: Vec<(&str, String, Vec<u8>, &str)> = vec![
        ("empty chunk", "65".into(), Vec::new(), CANNOT_LOAD_CHUNK),
        (
            "starts before offset 0",
            "2".into(),
            vec![1; 5],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "iterator 1 is the header",
            "1".into(),
            vec![1; 5],
            "ERR item exists",
        ),
        ("past the end", "470".into(), vec![1; 10], CANNOT_LOAD_CHUNK),
        (
            "ends one byte past the end",
            "450".into(),
            vec![1; 10],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "far past the end",
            i64::MAX.to_string(),
            vec![1; 1],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "spans sub-filters 0 and 1",
            "75".into(),
            vec![1; 20],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "spans sub-filters 1 and 2",
            "200".into(),
            vec![1; 10],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "everything in one chunk",
            "449".into(),
            vec![1; 448],
            CANNOT_LOAD_CHUNK,
        ),
        ("iterator 0", "0".into(), vec![1; 5], INVALID_POSITION),
        // A data chunk that cannot load (RedisBloom 2.8 answers so).
        (
            "negative iterator",
            "-65".into(),
            vec![1; 5],
            CANNOT_LOAD_CHUNK,
        ),
        (
            "non-integer iterator",
            "6x".into(),
            vec![1; 5],
            INVALID_POSITION,
        ),
    ];
    for (what, it, data, want) in &cases {
        let e = errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"dst", it.as_bytes(), data],
        );
        assert_eq!(e, *want, "{what}");
        assert_eq!(
            digest_value(&mut con, b"dst"),
            before,
            "{what}: filter changed"
        );
    }
    assert_eq!(
        errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"nokey", b"65", &chunks[1].1]
        ),
        "ERR not found"
    );
    ping(&mut con);

    // The real chunks still load, in pieces of any size inside one sub-filter.
    let (a, b) = chunks[2].1.split_at(50);
    let start2 = chunks[1].0 - 1; // offset of sub-filter 1
    let pieces: Vec<(i64, Vec<u8>)> = vec![
        (start2 + 50 + 1, a.to_vec()),
        (start2 + 128 + 1, b.to_vec()),
        chunks[1].clone(),
        chunks[3].clone(),
    ];
    loadchunks(&mut con, b"dst", &pieces);
    assert_same(&mut con, &src, b"dst", "chunks after hostile ones");
}

#[test]
fn restore_rejects_corrupt_payloads() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET rdbcompression no");
    let src = three_filters(&mut con, b"src");
    let good = dump(&mut con, b"src");
    let p = ModulePayload::parse(&good);
    assert_eq!(p.encode(), good, "payload re-encoding is exact");
    assert_eq!(p.module_id & 1023, 6, "encoding version 6");
    assert_eq!(p.strings.len(), 4);
    assert_eq!(p.strings[0], header_of(&mut con, b"src"));
    let n = good.len();
    let magic = good
        .windows(4)
        .position(|w| w == b"FBcf")
        .expect("FBcf magic in the DUMP");
    let body = &good[..n - 10];
    let ver = p.rdb_version;

    // Control: a resealed copy restores.
    assert_eq!(show(&restore(&mut con, b"control", &p.encode())), "+OK");
    assert_same(&mut con, &src, b"control", "resealed payload");

    let mut bad: Vec<(String, Vec<u8>)> = Vec::new();
    for (what, h, _) in bad_headers(&p.strings[0]) {
        let mut q = p.clone();
        q.strings[0] = h;
        bad.push((format!("header: {what}"), q.encode()));
    }
    // Bytes patched in place, relative to the magic.
    let patch = |at: usize, bytes: &[u8]| {
        let mut b = body.to_vec();
        b[magic + at..magic + at + bytes.len()].copy_from_slice(bytes);
        seal(b, ver)
    };
    bad.push(("magic patched".into(), patch(0, b"XBcf")));
    bad.push((
        "2 sub-filters, 3 chunks".into(),
        patch(H_NFILTERS, &2u32.to_le_bytes()),
    ));
    bad.push((
        "4 sub-filters, 3 chunks".into(),
        patch(H_NFILTERS, &4u32.to_le_bytes()),
    ));
    bad.push((
        "base 64 buckets".into(),
        patch(H_BASE, &64u64.to_le_bytes()),
    ));
    bad.push((
        "base 16 buckets".into(),
        patch(H_BASE, &16u64.to_le_bytes()),
    ));
    bad.push(("bucket size 1".into(), patch(H_BUCKET_SIZE, &[1])));
    bad.push(("bucket size 4".into(), patch(H_BUCKET_SIZE, &[4])));
    bad.push(("16-bit fingerprints".into(), patch(H_FP_BITS, &[16])));
    bad.push(("fingerprint bits 0".into(), patch(H_FP_BITS, &[0])));
    // Truncations.
    for cut in [
        magic + 3,
        magic + 30,
        magic + HEADER_LEN,
        body.len() - 100,
        body.len() - 1,
    ] {
        bad.push((
            format!("truncated at {cut}"),
            seal(body[..cut].to_vec(), ver),
        ));
    }
    bad.push((
        "nothing but the type byte".into(),
        seal(body[..1].to_vec(), ver),
    ));
    // Structural edits.
    let mut e = |what: &str, f: &dyn Fn(&mut ModulePayload)| {
        let mut q = p.clone();
        f(&mut q);
        bad.push((what.to_string(), q.encode()));
    };
    e("last chunk missing", &|q| {
        q.strings.pop();
    });
    e("header only", &|q| q.strings.truncate(1));
    e("no strings at all", &|q| q.strings.clear());
    e("chunk one byte short", &|q| {
        q.strings[2].pop();
    });
    e("chunk one byte long", &|q| q.strings[2].push(0));
    e("empty chunk", &|q| q.strings[1].clear());
    e("extra chunk", &|q| q.strings.push(vec![0; 256]));
    e("chunks swapped", &|q| q.strings.swap(1, 3));
    e("header after the chunks", &|q| q.strings.rotate_left(1));
    e("header 63 bytes", &|q| {
        q.strings[0].pop();
    });
    e("encoding version 4 (RedisBloom's)", &|q| {
        q.module_id = (q.module_id & !1023) | 4
    });
    e("encoding version 5 (no scheme field)", &|q| {
        q.module_id = (q.module_id & !1023) | 5
    });
    e("encoding version 7", &|q| {
        q.module_id = (q.module_id & !1023) | 7
    });
    e("unknown hash scheme", &|q| q.scheme = Some(2));
    e("encoding version 0", &|q| q.module_id &= !1023);
    e("unknown module type", &|q| q.module_id ^= 1 << 20);

    let before = db_digest(&mut con);
    for (what, payload) in &bad {
        let v = restore(&mut con, b"bad", payload);
        assert_eq!(
            value_err_text(&v).as_deref(),
            Some(BAD_DATA_FORMAT),
            "{what}: {}",
            show(&v)
        );
        assert!(!key_exists(&mut con, b"bad"), "{what}: key created");
        ping(&mut con);
    }
    assert_eq!(db_digest(&mut con), before);

    // Counters that lie within the valid range cannot be told from the header: the
    // payload may be refused or accepted, but the server survives every command on it.
    let total_slots = 2 * (32 + 64 + 128);
    for items in [0u64, 1, total_slots - 1, total_slots] {
        let mut b = body.to_vec();
        b[magic + H_ITEMS..magic + H_ITEMS + 8].copy_from_slice(&items.to_le_bytes());
        b[magic + H_DELETES..magic + H_DELETES + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let v = restore(&mut con, b"liar", &seal(b, ver));
        if show(&v) == "+OK" {
            let _ = raw(&mut con, &["CF.INFO", "liar"]);
            for i in 0..300 {
                let _ = raw(&mut con, &["CF.DEL", "liar", &format!("three{i}")]);
            }
            let _ = raw(&mut con, &["CF.COMPACT", "liar"]);
            let _ = insert_any(&mut con, b"liar", &names("more", 600));
            let _ = scandump(&mut con, b"liar");
            let _ = digest_value(&mut con, b"liar");
            assert_eq!(q(&mut con, "DEL liar"), "1");
        } else {
            assert_eq!(value_err_text(&v).as_deref(), Some(BAD_DATA_FORMAT));
        }
        ping(&mut con);
    }

    // A wrong CRC is caught by the server before the module sees anything.
    let mut flipped = good.clone();
    flipped[magic + H_ITEMS] ^= 1;
    assert_eq!(
        value_err_text(&restore(&mut con, b"bad", &flipped)).as_deref(),
        Some("ERR DUMP payload version or checksum are wrong")
    );
    assert!(s.is_alive());
    assert!(s.log().contains("refusing MBbloomCF payload"));
}
