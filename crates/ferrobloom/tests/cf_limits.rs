//! Cuckoo filters growing and at their limits (sub-filters, memory cap, expansion 0),
//! deletion and incremental compaction. Helpers: `common::cf`.

mod common;

use common::cf::*;
use common::rdb::*;
use common::*;
use redis::{Connection, Value};

// =============================================================================================
// 3. Growth and limits
// =============================================================================================

/// Table slots of sub-filter `i`.
type SlotsOf = fn(u32) -> i64;

#[test]
fn growth_with_expansion_1_2_and_4() {
    let s = Server::start();
    let mut con = s.conn();
    // (options, expansion rate, table slots of sub-filter i)
    let cases: [(&str, i64, SlotsOf); 3] = [
        ("", 1, |_| 64),
        ("EXPANSION 2", 2, |i| 64 << i),
        ("EXPANSION 3", 4, |i| 64 << (2 * i)),
    ];
    for (n, (opts, rate, slots)) in cases.iter().enumerate() {
        let key = format!("g{n}");
        ok(&mut con, &format!("CF.RESERVE {key} 64 {opts}"));
        let mut t = Tracked::new(key.as_bytes());
        let items = names(&format!("{key}-"), 700);
        insert_ok(&mut con, key.as_bytes(), &items);
        t.add(&items);
        let f = filters(&mut con, key.as_bytes());
        let cap: i64 = (0..f as u32).map(slots).sum();
        assert!(cap >= 700, "{key}: {f} sub-filters hold {cap} < 700 slots");
        assert!(f >= 2, "{key} did not grow");
        assert_eq!(info_int(&mut con, key.as_bytes(), "Number of buckets"), 32);
        assert_eq!(info_int(&mut con, key.as_bytes(), "Expansion rate"), *rate);
        assert_eq!(
            info_int(&mut con, key.as_bytes(), "Size"),
            40 + 16 * f + cap,
            "{key}"
        );
        assert_eq!(
            cf_debug(&mut con, key.as_bytes()),
            format!(
                "bktsize:2 buckets:32 items:700 deletes:0 filters:{f} max_iterations:20 \
                 expansion:{rate}"
            )
        );
        // Every item present, with count >= 1 (key_snap checks both).
        key_snap(&mut con, key.as_bytes(), &t);
        // SCANDUMP returns one chunk per sub-filter with the expected sizes.
        let d = scandump(&mut con, key.as_bytes());
        let lens: Vec<i64> = d[1..].iter().map(|(_, c)| c.len() as i64).collect();
        let want: Vec<i64> = (0..f as u32).map(slots).collect();
        assert_eq!(lens, want, "{key}");
    }
    // EXPANSION 1 needs many more sub-filters than EXPANSION 4 for the same items.
    assert!(filters(&mut con, b"g0") > filters(&mut con, b"g2") + 4);
}

fn fill_until_error(con: &mut Connection, key: &str, prefix: &str, max: usize) -> (usize, String) {
    for i in 0..max {
        let v = raw(con, &["CF.ADD", key, &format!("{prefix}{i}")]);
        match v {
            Value::Int(1) => {}
            v => {
                let e = value_err_text(&v).unwrap_or_else(|| panic!("CF.ADD {key}: {}", show(&v)));
                return (i, e);
            }
        }
    }
    panic!("{key}: {max} adds without an error");
}

#[test]
fn expansion_0_filter_is_full() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE z 64 EXPANSION 0");
    let (n, e) = fill_until_error(&mut con, "z", "z", 1000);
    assert_eq!(e, "Filter is full");
    assert!(
        (40..=64).contains(&n),
        "{n} items before full (load {})",
        n as f64 / 64.0
    );
    let mut t = Tracked::new(b"z");
    t.add(&names("z", n));
    let snap = key_snap(&mut con, b"z", &t);
    assert_eq!(filters(&mut con, b"z"), 1);
    // A failed add leaves the table exactly as it was (kicks undone), and fails the
    // same way again. (Another item may still find room in its own buckets.)
    let last = format!("z{n}");
    assert_eq!(err(&mut con, &format!("CF.ADD z {last}")), "Filter is full");
    assert_eq!(
        err(&mut con, &format!("CF.ADDNX z {last}")),
        "Filter is full"
    );
    assert_eq!(q(&mut con, "CF.ADDNX z z0"), "0");
    assert_eq!(
        q(&mut con, &format!("CF.INSERT z ITEMS {last} {last}")),
        "[-1,-1]"
    );
    assert_eq!(
        q(&mut con, &format!("CF.INSERTNX z ITEMS {last} z1")),
        "[-1,0]"
    );
    assert_snap_eq(&key_snap(&mut con, b"z", &t), &snap, "after failed adds");
    // Many more items: each either fits or gets -1; the filter never grows.
    let more = names("more", 200);
    let r = insert_any(&mut con, b"z", &more);
    assert!(r.iter().all(|v| *v == 1 || *v == -1), "{r:?}");
    assert!(r.iter().filter(|v| **v == 1).count() + n <= 64);
    for (item, v) in more.iter().zip(&r) {
        if *v == 1 {
            t.add(std::slice::from_ref(item));
        }
    }
    assert_eq!(filters(&mut con, b"z"), 1);
    key_snap(&mut con, b"z", &t);
    // Room again after a delete.
    assert_eq!(q(&mut con, "CF.DEL z z0"), "1");
    assert_eq!(q(&mut con, "CF.ADD z z0"), "1");
    key_snap(&mut con, b"z", &t);
    assert_eq!(filters(&mut con, b"z"), 1);
}

#[test]
fn maximum_expansions_reached() {
    let s = Server::start();
    let mut con = s.conn();
    let mut con3 = s.conn_resp3();

    // Default 32 sub-filters of 4 slots: exactly 128 adds fit.
    ok(&mut con, "CF.RESERVE cf 4");
    for i in 0..128 {
        assert_eq!(q(&mut con, &format!("CF.ADD cf {i}")), "1", "add {i}");
    }
    assert_eq!(filters(&mut con, b"cf"), 32);
    let before = digest_value(&mut con, b"cf");
    assert_eq!(err(&mut con, "CF.ADD cf 128"), "Maximum expansions reached");
    assert_eq!(
        err(&mut con, "CF.ADDNX cf 129"),
        "Maximum expansions reached"
    );
    assert_eq!(q(&mut con, "CF.ADDNX cf 5"), "0");
    assert_eq!(q(&mut con, "CF.INSERT cf ITEMS 128"), "[-1]");
    assert_eq!(digest_value(&mut con, b"cf"), before);
    assert_eq!(filters(&mut con, b"cf"), 32);
    let mut t = Tracked::new(b"cf");
    t.add(&names("", 128));
    key_snap(&mut con, b"cf", &t);

    // A lower limit.
    config_set(&mut con, "bf.cf-max-expansions", "3");
    ok(&mut con, "CF.RESERVE m 4");
    let (n, e) = fill_until_error(&mut con, "m", "m", 100);
    assert_eq!(e, "Maximum expansions reached");
    assert!((8..=12).contains(&n), "{n}");
    assert_eq!(filters(&mut con, b"m"), 3);

    // One big CF.INSERT cannot go past the limit either (Q11): -1 when no room.
    ok(&mut con, "CF.RESERVE big 4");
    let items = names("b", 40);
    let r = insert_any(&mut con, b"big", &items);
    let accepted = r.iter().filter(|v| **v == 1).count();
    assert!(r.iter().all(|v| *v == 1 || *v == -1), "{r:?}");
    assert!((8..=12).contains(&accepted), "{r:?}");
    assert_eq!(filters(&mut con, b"big"), 3);
    assert_eq!(
        info_int(&mut con, b"big", "Number of items inserted"),
        accepted as i64
    );
    let mut t = Tracked::new(b"big");
    for (item, v) in items.iter().zip(&r) {
        if *v == 1 {
            t.add(std::slice::from_ref(item));
        }
    }
    key_snap(&mut con, b"big", &t);
    // RESP3: false for CF.INSERT, -1 for CF.INSERTNX; a fresh filter stops at 3 too.
    ok(&mut con3, "CF.RESERVE big3 4");
    let v = raw(
        &mut con3,
        &args_with(&[b"CF.INSERT", b"big3", b"ITEMS"], &items),
    );
    let Value::Array(a) = v else {
        panic!("{}", show(&v))
    };
    let want: Vec<Value> = r.iter().map(|x| Value::Boolean(*x == 1)).collect();
    assert_eq!(a, want, "same outcome as in RESP2, as booleans");
    assert_eq!(filters(&mut con, b"big3"), 3);
    assert_eq!(q(&mut con3, "CF.INSERTNX big3 ITEMS b0 nope"), "[0,-1]");
    assert_eq!(q(&mut con, "CF.INSERTNX big ITEMS b0 nope"), "[0,-1]");

    // Raising the limit lets the filter grow again.
    config_set(&mut con, "bf.cf-max-expansions", "4");
    let mut late = 0;
    while filters(&mut con, b"big") < 4 {
        assert_eq!(q(&mut con, &format!("CF.ADD big late{late}")), "1");
        late += 1;
        assert!(late <= 4, "no growth after raising the limit");
    }
}

#[test]
fn per_filter_memory_cap() {
    let s = Server::start();
    let mut con = s.conn();
    // Made before the cap is lowered: 4096 buckets * 2 = 8 KiB.
    ok(&mut con, "CF.RESERVE big0 5000");
    assert_eq!(q(&mut con, "CF.ADD big0 a"), "1");
    let big_header = header_of(&mut con, b"big0");
    ok(&mut con, "CONFIG SET rdbcompression no");
    let big_dump = dump(&mut con, b"big0");

    config_set(&mut con, "bf.max-filter-memory", "4096");
    // Creation beyond the cap.
    assert_eq!(err(&mut con, "CF.RESERVE big 5000"), NO_MEMORY_CREATE);
    // 2048 slots * 26 bits = 6656 bytes.
    assert_eq!(
        err(&mut con, "CF.RESERVE e 2048 ERROR 0.0000001"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "CF.INSERT e CAPACITY 5000 ITEMS a"),
        NO_MEMORY_CREATE
    );
    config_set(&mut con, "bf.cf-initial-size", "100000");
    for cmd in [
        "CF.ADD auto x",
        "CF.ADDNX auto x",
        "CF.INSERT auto ITEMS x",
        "CF.INSERTNX auto ITEMS x",
    ] {
        assert_eq!(err(&mut con, cmd), NO_MEMORY_CREATE, "{cmd}");
    }
    config_set(&mut con, "bf.cf-initial-size", "1024");
    assert_eq!(
        errb(
            &mut con,
            &[b"CF.LOADCHUNK".as_slice(), b"lc", b"1", &big_header]
        ),
        CANNOT_CREATE
    );
    assert_eq!(
        value_err_text(&restore(&mut con, b"rs", &big_dump)).as_deref(),
        Some(BAD_DATA_FORMAT)
    );
    for key in ["big", "e", "auto", "lc", "rs"] {
        assert!(!key_exists(&mut con, key.as_bytes()), "{key}");
    }
    // An existing filter keeps working where it needs no new memory.
    assert_eq!(q(&mut con, "CF.ADD big0 b"), "1");

    // Growth beyond the cap: 2 KiB + 2 KiB fit, a third sub-filter does not. The cap
    // bounds CF.INFO `Size`, RedisBloom's formula (40 + 16 per sub-filter + tables).
    config_set(
        &mut con,
        "bf.max-filter-memory",
        &(40 + 32 + 4096).to_string(),
    );
    ok(&mut con, "CF.RESERVE m 2048");
    let mut t = Tracked::new(b"m");
    let (n, e) = fill_until_error(&mut con, "m", "m", 10_000);
    assert_eq!(e, MEMORY_CAP_ERR);
    t.add(&names("m", n));
    assert!(n > 3000, "{n}");
    assert_eq!(filters(&mut con, b"m"), 2);
    assert_eq!(info_int(&mut con, b"m", "Size"), 40 + 32 + 4096);
    let snap = key_snap(&mut con, b"m", &t);
    // The refused item is refused again, and changes nothing.
    let last = format!("m{n}");
    assert_eq!(err(&mut con, &format!("CF.ADD m {last}")), MEMORY_CAP_ERR);
    assert_eq!(err(&mut con, &format!("CF.ADDNX m {last}")), MEMORY_CAP_ERR);
    assert_eq!(q(&mut con, &format!("CF.INSERT m ITEMS {last}")), "[-1]");
    assert_eq!(
        q(&mut con, &format!("CF.INSERTNX m ITEMS {last} m0")),
        "[-1,0]"
    );
    assert_snap_eq(&key_snap(&mut con, b"m", &t), &snap, "refused inserts");
    // Other items fit or get -1, but the filter never grows past the cap.
    let more = names("more", 2000);
    let r = insert_any(&mut con, b"m", &more);
    assert!(r.iter().all(|v| *v == 1 || *v == -1), "{r:?}");
    assert!(r.contains(&-1));
    for (item, v) in more.iter().zip(&r) {
        if *v == 1 {
            t.add(std::slice::from_ref(item));
        }
    }
    assert_eq!(filters(&mut con, b"m"), 2);
    assert_eq!(info_int(&mut con, b"m", "Size"), 40 + 32 + 4096);
    key_snap(&mut con, b"m", &t);

    // Raising the cap lets it grow again.
    config_set(&mut con, "bf.max-filter-memory", "4gb");
    let again = names("m2-", 200);
    let r = per_item(&mut con, "CF.ADD", b"m", &again);
    assert!(r.iter().all(|v| *v == 1), "{r:?}");
    assert_eq!(filters(&mut con, b"m"), 3);
}

// =============================================================================================
// 4. Deletion and compaction
// =============================================================================================

#[test]
fn delete_most_items_then_compact() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CF.RESERVE k 1000");
    let items = names("k", 8000);
    insert_ok(&mut con, b"k", &items);
    let f0 = filters(&mut con, b"k");
    assert!(f0 >= 8, "{f0}");
    let (gone, kept) = items.split_at(7200);
    dels(&mut con, b"k", gone);
    let mut t = Tracked::new(b"k");
    t.add(kept);
    key_snap(&mut con, b"k", &t);
    // Deletes alone run small automatic compaction steps.
    let f1 = filters(&mut con, b"k");
    assert!(f1 < f0, "no automatic compaction: {f0} -> {f1}");

    // CF.COMPACT until the number of sub-filters stops decreasing and the pass is over.
    let mut prev = f1;
    let mut calls = 0;
    loop {
        ok(&mut con, "CF.COMPACT k");
        calls += 1;
        // No false negatives at any point.
        key_snap(&mut con, b"k", &t);
        let f = filters(&mut con, b"k");
        let deleted = info_int(&mut con, b"k", "Number of items deleted");
        assert!(
            f <= prev,
            "sub-filters grew during compaction: {prev} -> {f}"
        );
        if deleted == 0 && f == prev {
            break;
        }
        prev = f;
        assert!(calls < 50, "compaction does not converge");
    }
    assert!(prev < f0, "compaction freed nothing: {f0} -> {prev}");
    assert!(
        prev <= 3,
        "800 items still need {prev} sub-filters of 1024 slots"
    );
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 0);
    assert_eq!(info_int(&mut con, b"k", "Number of items inserted"), 800);
    assert_eq!(info_int(&mut con, b"k", "Size"), 40 + prev * (16 + 1024));
    assert_eq!(Hdr::decode(&header_of(&mut con, b"k")).flags, 0);
    // The deleted items are (mostly) gone.
    let still = mexists(&mut con, b"k", gone).iter().filter(|p| **p).count();
    assert!(
        still < gone.len() / 10,
        "{still} of {} deleted items still present",
        gone.len()
    );
    // And the filter keeps working.
    let fresh = names("fresh", 300);
    insert_ok(&mut con, b"k", &fresh);
    t.add(&fresh);
    key_snap(&mut con, b"k", &t);
}

#[test]
fn compaction_is_bounded_per_call_and_resumes() {
    let s = Server::start();
    let mut con = s.conn();
    let mut t = build_compacting(&mut con, b"k");
    assert_eq!(filters(&mut con, b"k"), 3);

    ok(&mut con, "CF.COMPACT k");
    let h = Hdr::decode(&header_of(&mut con, b"k"));
    assert_eq!((h.flags, h.cursor_filter), (3, 2), "{h:?}");
    // The pass is not over: the delete count is kept until it completes.
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 10);
    key_snap(&mut con, b"k", &t);

    // Writes in the middle of a pass keep every item findable.
    let mid = names("mid", 200);
    insert_ok(&mut con, b"k", &mid);
    t.add(&mid);
    let some: Vec<Vec<u8>> = t.items().into_iter().step_by(50).collect();
    dels(&mut con, b"k", &some);
    t.remove(&some);
    key_snap(&mut con, b"k", &t);

    let mut calls = 1;
    while Hdr::decode(&header_of(&mut con, b"k")).flags != 0 {
        ok(&mut con, "CF.COMPACT k");
        calls += 1;
        key_snap(&mut con, b"k", &t);
        assert!(calls <= 20, "the pass does not finish");
    }
    assert!(calls >= 2);
    assert_eq!(info_int(&mut con, b"k", "Number of items deleted"), 0);
    let h = Hdr::decode(&header_of(&mut con, b"k"));
    assert_eq!((h.cursor_filter, h.cursor_slot), (0, 0));
    // A new pass on a compacted filter completes and changes no membership.
    ok(&mut con, "CF.COMPACT k");
    key_snap(&mut con, b"k", &t);
}

/// Loads `chunks` (a SCANDUMP) into `dst` with every data chunk cut into `piece`-byte
/// pieces (cutting fingerprints anywhere in their bits), loaded last piece first.
fn load_in_pieces(con: &mut Connection, dst: &[u8], chunks: &[(i64, Vec<u8>)], piece: usize) {
    loadchunks(con, dst, &chunks[..1]);
    for (end_it, data) in chunks[1..].iter().rev() {
        let start = *end_it - data.len() as i64; // iterator of the chunk's first byte
        let mut pieces: Vec<(i64, Vec<u8>)> = data
            .chunks(piece)
            .enumerate()
            .map(|(i, p)| (start + (i * piece + p.len()) as i64, p.to_vec()))
            .collect();
        pieces.reverse();
        loadchunks(con, dst, &pieces);
    }
}

#[test]
fn compaction_after_loading_split_chunks_matches_the_original() {
    let s = Server::start();
    let mut con = s.conn();
    for (opts, bits) in [
        ("BUCKETSIZE 3 EXPANSION 2 ERROR 0.01", 10),
        ("BUCKETSIZE 4 EXPANSION 2 ERROR 0.0001", 17),
        ("BUCKETSIZE 2 EXPANSION 1", 8),
    ] {
        ok(&mut con, "FLUSHALL");
        ok(&mut con, &format!("CF.RESERVE src 48 {opts}"));
        assert_eq!(fp_size(&mut con, b"src"), bits);
        let items = names("split", 1200);
        insert_ok(&mut con, b"src", &items);
        assert!(filters(&mut con, b"src") >= 3);
        let chunks = scandump(&mut con, b"src");
        load_in_pieces(&mut con, b"dst", &chunks, 7);
        let mut t = Tracked::new(b"src");
        t.add(&items);
        assert_same(&mut con, &t, b"dst", &format!("{bits}-bit pieces"));

        // The same deletes and compaction on both must give identical filters.
        let (gone, kept) = items.split_at(1000);
        for key in [b"src".as_slice(), b"dst"] {
            dels(&mut con, key, gone);
        }
        t.remove(gone);
        let mut calls = 0;
        loop {
            for key in ["src", "dst"] {
                ok(&mut con, &format!("CF.COMPACT {key}"));
            }
            calls += 1;
            assert_eq!(
                digest_value(&mut con, b"dst"),
                digest_value(&mut con, b"src"),
                "{bits} bits: compaction diverged after {calls} calls"
            );
            if info_int(&mut con, b"src", "Number of items deleted") == 0 || calls > 10 {
                break;
            }
        }
        assert_same(
            &mut con,
            &t,
            b"dst",
            &format!("{bits} bits, after compaction"),
        );
        assert!(mexists(&mut con, b"dst", kept).iter().all(|p| *p));
    }
}
