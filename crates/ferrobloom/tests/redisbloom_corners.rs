//! Corner replies of the chunk commands, compared live with RedisBloom 2.8.2:
//! CF.LOADCHUNK with a negative iterator, 38-byte cuckoo headers that fail
//! validation, BF.LOADCHUNK with an empty chunk (and iterators at the chunk's
//! length), CF.SCANDUMP from an iterator inside a sub-filter of a filter
//! migrated from RedisBloom, and a live CF.SCANDUMP walk during compaction
//! (RedisBloom's copy loses items; ferrobloom refuses the walk).

mod common;

use common::rdb::*;
use common::redisbloom::*;

fn cf_header(items: u64, buckets: u64, filters: u64, bucket_size: u16, expansion: u16) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [items, buckets, 0, filters] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    for v in [bucket_size, 20, expansion] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(h.len(), 38);
    h
}

fn raw(parts: &[&[u8]]) -> Cmd {
    parts.iter().map(|p| p.to_vec()).collect()
}

#[test]
fn chunk_command_corners_answer_as_redisbloom() {
    let Some((rbs, fbs)) = side_by_side(&[]) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    // The filters are RedisBloom's, moved into ferrobloom.
    for setup in [
        cmd(&["CF.RESERVE", "cf", "1000"]),
        cmd(&["CF.ADD", "cf", "a"]),
        cmd(&["BF.RESERVE", "bf", "0.01", "100"]),
        cmd(&["BF.ADD", "bf", "a"]),
    ] {
        reply(&mut rb, &setup);
    }
    for key in ["cf", "bf"] {
        restore(&mut fb, key, &dump(&mut rb, key.as_bytes()));
    }
    both(&mut rb, &mut fb, &cmd(&["SET", "str", "x"]));
    let mut cases = vec![
        // CF.LOADCHUNK: a negative iterator is a data chunk (key checks first).
        cmd(&["CF.LOADCHUNK", "cf", "-1", "abc"]),
        cmd(&["CF.LOADCHUNK", "cf", "-1", ""]),
        cmd(&["CF.LOADCHUNK", "missing", "-1", "abc"]),
        cmd(&["CF.LOADCHUNK", "str", "-1", "abc"]),
        cmd(&["CF.LOADCHUNK", "str", "0", "abc"]),
        cmd(&["CF.LOADCHUNK", "cf", "x", "abc"]),
        cmd(&["CF.LOADCHUNK", "h", "1", "short"]),
    ];
    // 38-byte headers that fail validation, then a valid one.
    for h in [
        cf_header(0, 1024, 0, 2, 1),
        cf_header(0, 1000, 1, 2, 1),
        cf_header(0, 1024, 1, 0, 1),
        cf_header(0, 1024, 1, 2, 1),
    ] {
        cases.push(raw(&[b"CF.LOADCHUNK", b"h", b"1", &h]));
    }
    // Headers RedisBloom 2.8.2 takes without checking but never writes itself
    // (its CF.RESERVE refuses such an expansion): ferrobloom refuses them, with
    // RedisBloom's text for a 38-byte header that does not validate.
    for h in [cf_header(0, 1024, 1, 2, 40000), cf_header(0, 1024, 2, 2, 0)] {
        let c = raw(&[b"CF.LOADCHUNK", b"odd", b"1", &h]);
        assert_eq!(reply(&mut fb, &c), "error: Couldn't create filter!");
    }
    cases.push(cmd(&["CF.DEBUG", "h"]));
    // BF.LOADCHUNK with an empty chunk: a no-op inside a link, bad data at or
    // below 0, no link past the end; and a chunk whose iterator is its length.
    for it in ["1", "9", "112", "113", "0", "-5", "1000"] {
        cases.push(cmd(&["BF.LOADCHUNK", "bf", it, ""]));
    }
    for it in ["1", "2", "3", "4"] {
        cases.push(cmd(&["BF.LOADCHUNK", "bf", it, "abc"]));
    }
    cases.push(cmd(&["BF.LOADCHUNK", "missing", "1", ""]));
    cases.push(cmd(&["BF.LOADCHUNK", "missing", "5", ""]));
    cases.push(cmd(&["BF.LOADCHUNK", "str", "5", ""]));
    for c in &cases {
        both(&mut rb, &mut fb, c);
    }
    // (`h` has no items: RedisBloom dumps nothing for it, quirk Q13.)
    for (key, kind) in [("bf", Kind::Bloom), ("cf", Kind::Cuckoo)] {
        assert_eq!(scandump(&mut fb, kind, key), scandump(&mut rb, kind, key));
    }
}

#[test]
fn scandump_inside_a_subfilter_of_a_migrated_filter_answers_as_redisbloom() {
    let Some((rbs, fbs)) = side_by_side(&[]) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    // Three sub-filters (64, 128 and 256 slots).
    reply(
        &mut rb,
        &cmd(&[
            "CF.RESERVE",
            "cf",
            "64",
            "BUCKETSIZE",
            "2",
            "EXPANSION",
            "2",
        ]),
    );
    reply(
        &mut rb,
        &with_items(&["CF.INSERT", "cf", "ITEMS"], items("i", 300)),
    );
    restore(&mut fb, "cf", &dump(&mut rb, b"cf"));
    both(&mut rb, &mut fb, &cmd(&["CF.DEBUG", "cf"]));
    let total = 64 + 128 + 256;
    for it in [1, 2, 33, 64, 65, 66, 100, 192, 193, 194, 300, total] {
        both(
            &mut rb,
            &mut fb,
            &cmd(&["CF.SCANDUMP", "cf", &it.to_string()]),
        );
    }
    // Past the end: the one deliberate difference (docs/compatibility.md), the
    // dump ends with [0, ""] as BF.SCANDUMP's does, where RedisBloom sends [0, nil].
    for it in [total + 1, total + 5] {
        let c = cmd(&["CF.SCANDUMP", "cf", &it.to_string()]);
        assert_eq!(reply(&mut rb, &c), "array([int(0), nil])");
        assert_eq!(reply(&mut fb, &c), "array([int(0), bulk-string('\"\"')])");
    }
}

/// Range errors carry RedisBloom 2.8's texts (docs/compatibility.md): every
/// range RedisBloom 2.8 checks too answers exactly as it does.
#[test]
fn range_errors_have_redisbloom_2_8_texts() {
    let Some((rbs, fbs)) = side_by_side(&[]) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    for line in [
        "BF.RESERVE k 0 10",
        "BF.RESERVE k 1 10",
        "BF.RESERVE k -0.5 10",
        "BF.RESERVE k 1.5 10",
        "BF.RESERVE k 0.01 0",
        "BF.RESERVE k 0.01 -1",
        "BF.RESERVE k x 10",
        "BF.RESERVE k 0.01 x",
        "BF.RESERVE k 0.01 10 EXPANSION x",
        "BF.RESERVE k 0.01 10 EXPANSION",
        "BF.INSERT k CAPACITY 0 ITEMS a",
        "BF.INSERT k CAPACITY -3 ITEMS a",
        "BF.INSERT k ERROR 2 ITEMS a",
        "BF.INSERT k ERROR 0 ITEMS a",
        "BF.INSERT k EXPANSION -1 ITEMS a",
        "BF.INSERT k CAPACITY x ITEMS a",
        "BF.INSERT k ERROR x ITEMS a",
        "BF.INSERT k EXPANSION x ITEMS a",
        "CF.RESERVE k 10 BUCKETSIZE 256",
        "CF.RESERVE k 10 BUCKETSIZE 0",
        "CF.RESERVE k 10 MAXITERATIONS 0",
        "CF.RESERVE k 10 MAXITERATIONS 65536",
        "CF.RESERVE k 10 EXPANSION 40000",
        "CF.RESERVE k 10 EXPANSION -1",
        "CF.RESERVE k 3",
        "CF.RESERVE k 0",
        "CF.RESERVE k 7 BUCKETSIZE 4",
        "CF.INSERT k CAPACITY 3 ITEMS a",
        "CF.INSERTNX k CAPACITY -1 ITEMS a",
        "CF.INSERT k CAPACITY x ITEMS a",
    ] {
        let c = cmd(&line.split(' ').collect::<Vec<_>>());
        both(&mut rb, &mut fb, &c);
    }
}

/// Walks `key` with CF.SCANDUMP into `copy`, deleting the first 300 of
/// `all` and compacting after the first data chunk if `compact`. The copy's held count of
/// the items left, or the first error.
fn walk_during_compaction(
    con: &mut redis::Connection,
    key: &str,
    copy: &str,
    all: &[String],
    compact: bool,
) -> Result<usize, String> {
    let mut it = 0i64;
    let mut chunks = 0;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("CF.SCANDUMP")
            .arg(key)
            .arg(it)
            .query(con)
            .map_err(|e| e.to_string())?;
        if next == 0 {
            break;
        }
        let _: String = redis::cmd("CF.LOADCHUNK")
            .arg(copy)
            .arg(next)
            .arg(data)
            .query(con)
            .map_err(|e| e.to_string())?;
        if it != 0 {
            chunks += 1;
        }
        if compact && chunks == 1 && it != 0 {
            for item in &all[..300] {
                let _: i64 = redis::cmd("CF.DEL").arg(key).arg(item).query(con).unwrap();
            }
            let _: String = redis::cmd("CF.COMPACT").arg(key).query(con).unwrap();
        }
        it = next;
    }
    let held: Vec<i64> = redis::cmd("CF.MEXISTS")
        .arg(copy)
        .arg(&all[300..])
        .query(con)
        .unwrap();
    Ok(held.iter().filter(|&&x| x == 1).count())
}

/// A live SCANDUMP walk of a RedisBloom filter that compacts after its first
/// chunk: RedisBloom 2.8.2 answers every call and its copy lacks items the
/// source still holds; the same filter moved into ferrobloom refuses the walk
/// (docs/operations.md, "Live copies").
#[test]
fn live_walk_during_compaction_redisbloom_loses_items_ferrobloom_refuses() {
    let Some((rbs, fbs)) = side_by_side(&[]) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    let all: Vec<String> = items("i", 1_500).collect();
    reply(
        &mut rb,
        &cmd(&["CF.RESERVE", "cf", "256", "EXPANSION", "2"]),
    );
    reply(
        &mut rb,
        &with_items(&["CF.INSERT", "cf", "ITEMS"], all.clone()),
    );
    restore(&mut fb, "cf", &dump(&mut rb, b"cf"));
    both(&mut rb, &mut fb, &cmd(&["CF.INFO", "cf"]));
    let theirs = walk_during_compaction(&mut rb, "cf", "copy", &all, true);
    let ours = walk_during_compaction(&mut fb, "cf", "copy", &all, true);
    eprintln!("RedisBloom's copy: {theirs:?} of 1200; ferrobloom: {ours:?}");
    assert!(matches!(theirs, Ok(n) if n < 1_200), "{theirs:?}");
    assert_eq!(
        ours,
        Err(
            "ResponseError: the filter moved items since this SCANDUMP walk began \
             (start the walk again at 0)"
                .to_string()
        )
    );
    // Both sources hold the 1,200 (the same filter); a walk begun again
    // copies them all.
    both(
        &mut rb,
        &mut fb,
        &with_items(&["CF.MEXISTS", "cf"], all[300..].to_vec()),
    );
    both(&mut rb, &mut fb, &cmd(&["CF.DEBUG", "cf"]));
    assert_eq!(
        walk_during_compaction(&mut fb, "cf", "again", &all, false),
        Ok(1_200)
    );
}
