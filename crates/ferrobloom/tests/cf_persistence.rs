//! Cuckoo filters through every persistence path (RDB, DEBUG RELOAD, AOF, COPY,
//! DUMP/RESTORE, SCANDUMP/LOADCHUNK) and replication, each compared with its state before
//! (`KeySnap`). Helpers: `common::cf`.

mod common;

use common::cf::*;
use common::rdb::*;
use common::*;

// =============================================================================================
// 5. Persistence round trips
// =============================================================================================

#[test]
fn rdb_save_restart_and_debug_reload() {
    let mut s = Server::start();
    let mut con = s.conn();
    let set = build_set(&mut con);
    let snap = snapshot(&mut con, &set);
    let digest = db_digest(&mut con);
    assert_eq!(int(&mut con, "DBSIZE") as usize, set.len());
    ok(&mut con, "SAVE");
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_set(&mut con, &set, &snap, "SAVE + restart");
    assert_eq!(db_digest(&mut con), digest);

    ok(&mut con, "DEBUG RELOAD");
    assert_set(&mut con, &set, &snap, "DEBUG RELOAD");
    assert_eq!(db_digest(&mut con), digest);

    // The restored compaction pass resumes: it finishes like on the original.
    let mut calls = 0;
    while Hdr::decode(&header_of(&mut con, COMPACTING)).flags != 0 {
        okb(&mut con, &[b"CF.COMPACT".as_slice(), COMPACTING]);
        calls += 1;
        assert!(calls <= 20);
    }
    let t = set.iter().find(|t| t.key == COMPACTING).unwrap();
    key_snap(&mut con, COMPACTING, t);
}

#[test]
fn aof_rewrite_then_more_writes_replays_everything() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut con = s.conn();
    let mut set = build_set(&mut con);
    bgrewriteaof(&s);
    let base = aof_files(&s, "b");
    assert_eq!(base.len(), 1);
    let want: usize = set.iter().map(|t| scandump(&mut con, &t.key).len()).sum();
    assert_eq!(count_occurrences(&base[0], b"CF.LOADCHUNK"), want);
    assert_eq!(count_occurrences(&base[0], b"CF.ADD"), 0);

    // More writes after the rewrite, with non-default creation configs that the
    // restarted server will not have.
    config_set(&mut con, "bf.cf-initial-size", "500");
    config_set(&mut con, "bf.cf-bucket-size", "4");
    config_set(&mut con, "bf.cf-max-iterations", "50");
    config_set(&mut con, "bf.cf-expansion-factor", "2");
    config_set(&mut con, "bf.cf-error-rate", "0.001");
    more_writes(&mut con, &mut set, "aof");
    let auto = set.last().unwrap().key.clone();
    assert_eq!(
        cf_debug(&mut con, &auto),
        "bktsize:4 buckets:128 items:300 deletes:0 filters:1 max_iterations:50 expansion:2 \
         fpsize:13 error:0.001"
    );
    let snap = snapshot(&mut con, &set);
    let digest = db_digest(&mut con);
    let incr: Vec<u8> = aof_files(&s, "i").concat();
    assert!(count_occurrences(&incr, b"CF.RESERVE") >= 1);
    assert!(count_occurrences(&incr, b"BUCKETSIZE") >= 1);
    drop(con);

    // Restart with default creation configs and limits far below what the data needs:
    // loading must never refuse it.
    s.stop(Stop::ShutdownNoSave);
    s.config_mut().extra_args = [
        "--bf.cf-max-expansions",
        "2",
        "--bf.max-filter-memory",
        "4096",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    s.start_again();
    let mut con = s.conn();
    let v = raw(&mut con, &["CONFIG", "GET", "bf.cf-bucket-size"]);
    assert_eq!(show(&v), "[\"bf.cf-bucket-size\",\"2\"]");
    assert_set(&mut con, &set, &snap, "AOF replay");
    assert_eq!(db_digest(&mut con), digest);
}

#[test]
fn copy_makes_independent_filters() {
    let s = Server::start();
    let mut con = s.conn();
    let mut set = build_set(&mut con);
    let mut copies = Vec::new();
    for t in &set {
        let dst = [b"copy:".as_slice(), &t.key].concat();
        assert_eq!(
            show(&raw(&mut con, &[b"COPY".as_slice(), &t.key, &dst])),
            "1"
        );
        assert_same(&mut con, t, &dst, "COPY");
        copies.push(Tracked {
            key: dst,
            copies: t.copies.clone(),
        });
    }
    let snap = snapshot(&mut con, &set);
    more_writes(&mut con, &mut copies, "on-copies");
    assert_set(
        &mut con,
        &set,
        &snap,
        "originals after writes to the copies",
    );
    let csnap = snapshot(&mut con, &copies);
    more_writes(&mut con, &mut set, "on-originals");
    assert_set(
        &mut con,
        &copies,
        &csnap,
        "copies after writes to the originals",
    );

    // Onto an existing key: refused without REPLACE.
    let dst = [b"copy:".as_slice(), WIDE].concat();
    assert_eq!(
        show(&raw(&mut con, &[b"COPY".as_slice(), PLAIN, &dst])),
        "0"
    );
    assert_eq!(
        show(&raw(
            &mut con,
            &[b"COPY".as_slice(), PLAIN, &dst, b"REPLACE"]
        )),
        "1"
    );
    let plain = find(&mut set, PLAIN).clone();
    assert_same(&mut con, &plain, &dst, "COPY REPLACE");
}

#[test]
fn dump_restore_into_new_keys_and_another_server() {
    let s = Server::start();
    let s2 = Server::start();
    let mut con = s.conn();
    let mut con2 = s2.conn();
    let set = build_set(&mut con);
    for t in &set {
        let payload = dump(&mut con, &t.key);
        let dst = [b"restored:".as_slice(), &t.key].concat();
        assert_eq!(show(&restore(&mut con, &dst, &payload)), "+OK");
        assert_same(&mut con, t, &dst, "RESTORE");
        assert_eq!(show(&restore(&mut con2, &t.key, &payload)), "+OK");
        let a = key_snap(&mut con, &t.key, t);
        let b = key_snap(&mut con2, &t.key, t);
        assert_snap_eq(
            &b,
            &a,
            &format!("RESTORE on another server, {}", lossy(&t.key)),
        );
        // An existing key needs REPLACE.
        assert_eq!(
            value_err_text(&restore(&mut con, &dst, &payload)).as_deref(),
            Some("BUSYKEY Target key name already exists.")
        );
        let v = raw(
            &mut con,
            &[b"RESTORE".as_slice(), &dst, b"0", &payload, b"REPLACE"],
        );
        assert_eq!(show(&v), "+OK");
    }
}

#[test]
fn version_5_payloads_still_load() {
    // ferrobloom's previous encoding (version 5, before the hash scheme was recorded).
    let s = Server::start();
    let mut con = s.conn();
    let set = build_set(&mut con);
    ok(&mut con, "CONFIG SET rdbcompression no");
    let mut v5 = 0;
    for t in &set {
        let Some(payload) = as_version5(&dump(&mut con, &t.key)) else {
            continue;
        };
        let dst = [b"v5:".as_slice(), &t.key].concat();
        assert_eq!(show(&restore(&mut con, &dst, &payload)), "+OK");
        assert_same(&mut con, t, &dst, "RESTORE of version 5");
        v5 += 1;
    }
    assert!(v5 >= 3, "{v5} filters went through version 5");
}

#[test]
fn scandump_loadchunk_into_new_keys_including_a_32_mib_table() {
    let s = Server::start();
    let mut con = s.conn();
    let set = build_set(&mut con);
    for t in &set {
        let chunks = scandump(&mut con, &t.key);
        let dst = [b"loaded:".as_slice(), &t.key].concat();
        loadchunks(&mut con, &dst, &chunks);
        assert_same(&mut con, t, &dst, "SCANDUMP/LOADCHUNK");
        // The same chunks; the iterators carry each filter's own count of
        // fingerprint moves (docs/operations.md, "Live copies").
        let data = |v: &[(i64, Vec<u8>)]| v.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>();
        assert_eq!(data(&scandump(&mut con, &dst)), data(&chunks));
    }
    // The all-empty 3-sub-filter filter: header + 3 zeroed chunks.
    let d = scandump(&mut con, ZERO3);
    assert_eq!(d.len(), 4);
    assert_eq!(Hdr::decode(&d[0].1).deletes, 7);

    // 2^23 buckets * 4 slots * 8 bits = 32 MiB: two 16 MiB chunks.
    ok(&mut con, "CF.RESERVE big 30000000 BUCKETSIZE 4");
    assert_eq!(info_int(&mut con, b"big", "Number of buckets"), 1 << 23);
    let mut t = Tracked::new(b"big");
    let items = names("big", 5000);
    insert_ok(&mut con, b"big", &items);
    t.add(&items);
    let d = scandump(&mut con, b"big");
    let shape: Vec<(i64, usize)> = d.iter().map(|(it, c)| (*it, c.len())).collect();
    assert_eq!(
        shape,
        vec![
            (1, HEADER_LEN),
            (1 + CHUNK as i64, CHUNK),
            (1 + 2 * CHUNK as i64, CHUNK)
        ]
    );
    loadchunks(&mut con, b"big2", &d);
    assert_same(&mut con, &t, b"big2", "32 MiB SCANDUMP/LOADCHUNK");
    // Chunks may come in any order after the header.
    loadchunks(&mut con, b"big3", &d[..1]);
    loadchunks(&mut con, b"big3", &[d[2].clone(), d[1].clone()]);
    assert_same(&mut con, &t, b"big3", "chunks in reverse order");
    // Large filters are freed in the background (free_effort).
    assert_eq!(q(&mut con, "UNLINK big2 big3"), "2");
    ping(&mut con);
}

// =============================================================================================
// 6. Replication
// =============================================================================================

#[test]
fn replica_sees_every_write() {
    let primary = Server::start();
    let mut p = primary.conn();
    // State before the replica exists (full sync).
    ok(&mut p, "CF.RESERVE pre:r 1000 BUCKETSIZE 4 ERROR 0.001");
    let mut pre = Tracked::new(b"pre:r");
    let items = names("pre", 500);
    insert_ok(&mut p, b"pre:r", &items);
    pre.add(&items);

    // The replica keeps the default creation configs but has far lower limits than the
    // primary's data needs: replicated and loaded data must never be refused.
    let replica = Server::builder()
        .replica_of(&primary)
        .args(&[
            "--bf.cf-max-expansions",
            "2",
            "--bf.max-filter-memory",
            "4096",
        ])
        .start();
    primary.wait_for_sync(&replica);
    let mut r = replica.conn();
    assert_snap_eq(
        &key_snap(&mut r, b"pre:r", &pre),
        &key_snap(&mut p, b"pre:r", &pre),
        "full sync",
    );

    // Streamed: RESERVE, ADD, ADDNX, INSERT, INSERTNX, DEL, COMPACT, LOADCHUNK.
    let mut set = build_set(&mut p);
    more_writes(&mut p, &mut set, "repl");
    let chunks = scandump(&mut p, GROWN);
    loadchunks(&mut p, b"ld:grown", &chunks);
    let mut ld = find(&mut set, GROWN).clone();
    ld.key = b"ld:grown".to_vec();
    set.push(ld);
    set.push(pre);
    // A delete that finds nothing.
    assert_eq!(q(&mut p, "CF.DEL cf:plain never-added-item"), "0");

    // Auto-creation (and CF.RESERVE without options) with primary configs the replica
    // does not have.
    config_set(&mut p, "bf.cf-initial-size", "500");
    config_set(&mut p, "bf.cf-bucket-size", "4");
    config_set(&mut p, "bf.cf-max-iterations", "50");
    config_set(&mut p, "bf.cf-expansion-factor", "2");
    config_set(&mut p, "bf.cf-error-rate", "0.001");
    let want = "bktsize:4 buckets:128 items:1 deletes:0 filters:1 max_iterations:50 expansion:2 \
                fpsize:13 error:0.001";
    for (key, cmd) in [
        ("auto:add", "CF.ADD auto:add x"),
        ("auto:addnx", "CF.ADDNX auto:addnx x"),
        ("auto:insert", "CF.INSERT auto:insert ITEMS x"),
        ("auto:insertnx", "CF.INSERTNX auto:insertnx ITEMS x"),
        (
            "auto:cap",
            "CF.INSERT auto:cap CAPACITY 64 ERROR 0.0001 ITEMS x",
        ),
        // CF.RESERVE takes its omitted options from the same configs.
        ("auto:reserve", "CF.RESERVE auto:reserve 500"),
    ] {
        let v = q(&mut p, cmd);
        assert!(v == "1" || v == "[1]" || v == "+OK", "{cmd}: {v}");
        if v == "+OK" {
            assert_eq!(q(&mut p, &format!("CF.ADD {key} x")), "1");
        }
        if key != "auto:cap" {
            assert_eq!(cf_debug(&mut p, key.as_bytes()), want, "{key}");
        }
        let mut t = Tracked::new(key.as_bytes());
        t.add(&[b"x".to_vec()]);
        set.push(t);
    }
    // More writes on the auto-created filters (growth with the primary's expansion).
    let mut autos: Vec<Tracked> = set
        .iter()
        .filter(|t| t.key.starts_with(b"auto:"))
        .cloned()
        .collect();
    for t in autos.iter_mut() {
        let items = names("grow", 700);
        insert_ok(&mut p, &t.key.clone(), &items);
        t.add(&items);
    }
    set.retain(|t| !t.key.starts_with(b"auto:"));
    set.extend(autos);

    primary.wait_for_offset(&replica);
    for t in &set {
        let a = key_snap(&mut p, &t.key, t);
        let b = key_snap(&mut r, &t.key, t);
        assert_snap_eq(&b, &a, &format!("replica, key {}", lossy(&t.key)));
    }
    assert_eq!(primary.digest(), replica.digest());
    assert_eq!(int(&mut r, "DBSIZE"), int(&mut p, "DBSIZE"));
    // The replica kept its own defaults.
    let v = raw(&mut r, &["CONFIG", "GET", "bf.cf-bucket-size"]);
    assert_eq!(show(&v), "[\"bf.cf-bucket-size\",\"2\"]");
    let v = raw(&mut r, &["CONFIG", "GET", "bf.cf-max-expansions"]);
    assert_eq!(show(&v), "[\"bf.cf-max-expansions\",\"2\"]");
    assert_eq!(info_int(&mut r, b"auto:add", "Bucket size"), 4);
    assert_eq!(fp_size(&mut r, b"auto:add"), 13);
    assert_eq!(fp_size(&mut r, b"auto:cap"), 17);
    // CF.COMPACT is a write command: a read-only replica refuses it.
    for cmd in [
        "CF.COMPACT cf:grown",
        "CF.ADD cf:plain x",
        "CF.DEL cf:plain p1",
    ] {
        let e = err(&mut r, cmd);
        assert!(e.starts_with("READONLY"), "{cmd}: {e}");
    }
}

/// RESTORE is replicated as such: the replica loads the payload under its own, lower
/// limits, and must not refuse what the primary accepted (the module's rule:
/// configured limits never refuse data being loaded or replicated).
#[test]
fn replicated_restore_is_not_refused_by_lower_replica_limits() {
    let primary = Server::start();
    let replica = Server::builder()
        .replica_of(&primary)
        .args(&["--bf.max-filter-memory", "4096"])
        .start();
    primary.wait_for_sync(&replica);
    let mut p = primary.conn();
    let mut r = replica.conn();
    // 512 buckets * 4 slots * 17 bits = 4352 bytes > 4096.
    ok(&mut p, "CF.RESERVE src 2000 BUCKETSIZE 4 ERROR 0.0001");
    let mut t = Tracked::new(b"dst");
    let items = names("r", 1500);
    insert_ok(&mut p, b"src", &items);
    t.add(&items);
    let payload = dump(&mut p, b"src");
    assert_eq!(show(&restore(&mut p, b"dst", &payload)), "+OK");
    primary.wait_for_offset(&replica);
    assert!(
        key_exists(&mut r, b"dst"),
        "the replica refused a replicated RESTORE (its redis.log: {:?})",
        replica
            .log()
            .lines()
            .filter(|l| l.contains("refusing") || l.contains("CRITICAL"))
            .collect::<Vec<_>>()
    );
    assert_snap_eq(
        &key_snap(&mut r, b"dst", &t),
        &key_snap(&mut p, b"dst", &t),
        "replicated RESTORE",
    );
    assert_eq!(primary.digest(), replica.digest());
}
