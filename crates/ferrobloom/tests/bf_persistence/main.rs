//! Persistence and replication of Bloom filters (`MBbloom--`, RDB encoding version 6): SAVE +
//! restart, DEBUG RELOAD, AOF (rewrite through the `aof_rewrite` callback, and a plain command
//! log), COPY, DUMP/RESTORE, SCANDUMP/LOADCHUNK, and replication (initial full sync and
//! streamed writes); after every round trip each filter is compared with its state before.
//! Helpers: `common::bf_persist`.

#[path = "../common/mod.rs"]
mod common;
mod dump;
mod replication;

use common::bf_persist::*;
use common::rdb::*;
use common::*;
use redis::Value;

// 1. RDB: SAVE + restart, SHUTDOWN SAVE + start
// ---------------------------------------------------------------------------------------------

#[test]
fn rdb_save_and_restart_restores_every_filter() {
    let mut s = Server::start();
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    ok(&mut con, &[b"SAVE"]);
    drop(con);

    s.restart();
    let mut con = s.conn();
    assert_eq!(q::<i64>(&mut con, &[b"DBSIZE"]), fs.list.len() as i64);
    assert_restored(&mut con, &fs, &snap, "SAVE + restart");
    assert_eq!(
        db_digest(&mut con),
        digest,
        "DEBUG DIGEST after SAVE + restart"
    );

    // The loaded filters keep working: they grow, and survive a second cycle.
    more_writes(&mut con, &mut fs, "after-restart");
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    drop(con);
    s.restart_with(Stop::ShutdownSave);
    let mut con = s.conn();
    assert_restored(&mut con, &fs, &snap, "SHUTDOWN SAVE + start");
    assert_eq!(db_digest(&mut con), digest);
    assert!(
        !s.log().contains("refusing"),
        "a payload was refused on load"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. DEBUG RELOAD
// ---------------------------------------------------------------------------------------------

#[test]
fn debug_reload_restores_every_filter() {
    let s = Server::start();
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs, &snap, "DEBUG RELOAD");
    assert_eq!(db_digest(&mut con), digest);

    // With uncompressed string buffers too.
    config_set(&mut con, "rdbcompression", "no");
    more_writes(&mut con, &mut fs, "reload2");
    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs, &snap, "DEBUG RELOAD (rdbcompression no)");
    assert_eq!(db_digest(&mut con), digest);
}

/// A server with an AOF without an RDB preamble (its first rewrite done).
fn aof_server() -> Server {
    let s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    s
}

/// BF.RESERVE without EXPANSION under `bf-expansion-factor` 4 (`r:exp4`, 30
/// items added, returned) and 0 (`r:ns`, non-scaling): what a replica or a
/// replay must rebuild whatever its own default.
fn reserve_under_changed_expansion(con: &mut redis::Connection) -> Vec<Vec<u8>> {
    config_set(con, "bf.bf-expansion-factor", "4");
    reserve(con, b"r:exp4", &["0.01", "10"]);
    let items = text_items("r4:", 30);
    madd(con, b"r:exp4", &items);
    config_set(con, "bf.bf-expansion-factor", "0");
    reserve(con, b"r:ns", &["0.01", "10"]);
    assert_eq!(bf_info_field(con, b"r:exp4", "EXPANSION"), Value::Int(4));
    assert_eq!(bf_info_field(con, b"r:ns", "EXPANSION"), Value::Nil);
    items
}

// ---------------------------------------------------------------------------------------------
// 3. AOF
// ---------------------------------------------------------------------------------------------

#[test]
fn aof_rewrite_then_more_writes_replays_everything() {
    let mut s = aof_server();
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, true);

    // Number of LOADCHUNK commands the rewrite must emit: a header plus every chunk.
    let mut expected_loadchunks = 0;
    for f in &fs.list {
        expected_loadchunks += scandump(&mut con, &f.key).len();
    }
    bgrewriteaof(&s);
    let bases = aof_files(&s, "b");
    assert_eq!(bases.len(), 1);
    let base = &bases[0];
    assert_eq!(
        count_occurrences(base, b"$12\r\nBF.LOADCHUNK\r\n"),
        expected_loadchunks,
        "the base AOF holds one BF.LOADCHUNK per header and chunk"
    );
    assert!(
        count_occurrences(base, b"\r\n$16777216\r\n") >= 1,
        "the big filter's first chunk is a 16 MiB bulk"
    );
    assert!(count_occurrences(base, BINKEY) >= 1);

    // Writes after the rewrite go to the incr file.
    more_writes(&mut con, &mut fs, "after-rewrite");
    let incr: Vec<u8> = aof_files(&s, "i").concat();
    assert!(count_occurrences(&incr, b"BF.MADD") >= 1);

    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_restored(&mut con, &fs, &snap, "AOF (rewrite + incr) replay");
    assert_eq!(db_digest(&mut con), digest);
}

#[test]
fn aof_command_log_replay_keeps_creation_parameters() {
    let mut s = aof_server();
    let mut con = s.conn();
    let mut fs = build_filters(&mut con, false);

    // Auto-creation with non-default configs.
    config_set(&mut con, "bf.bf-error-rate", "0.05");
    config_set(&mut con, "bf.bf-initial-size", "33");
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"cfg:add", b"a"]), 1);
    let items = text_items("cfg-add:", 50);
    madd(&mut con, b"cfg:add", &items);
    let mut all = vec![b"a".to_vec()];
    all.extend(items);
    fs.push(b"cfg:add", all);

    let items = text_items("cfg-madd:", 20);
    madd(&mut con, b"cfg:madd", &items);
    fs.push(b"cfg:madd", items);

    let items = text_items("cfg-insert:", 40);
    insert(&mut con, b"cfg:insert", &["EXPANSION", "7"], &items);
    fs.push(b"cfg:insert", items);

    config_set(&mut con, "bf.bf-expansion-factor", "0");
    let items = text_items("cfg-ns:", 30);
    madd(&mut con, b"cfg:nonscaling", &items);
    fs.push(b"cfg:nonscaling", items);

    config_set(&mut con, "bf.bf-expansion-factor", "4");
    let items = text_items("cfg-exp4:", 100);
    madd(&mut con, b"cfg:exp4", &items);
    fs.push(b"cfg:exp4", items);

    let chunks = scandump(&mut con, SCALING);
    loadchunks(&mut con, b"cfg:loaded", &chunks);
    let items = fs.get_mut(SCALING).items.clone();
    fs.push(b"cfg:loaded", items);

    // What the primary built.
    assert_eq!(
        bf_debug(&mut con, b"cfg:add")[1],
        "bytes:32 bits:256 hashes:6 hashwidth:64 capacity:33 size:33 ratio:0.025"
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:nonscaling", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:exp4", "EXPANSION"),
        Value::Int(4)
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:insert", "EXPANSION"),
        Value::Int(7)
    );

    // No rewrite ran: everything is in the command log (auto-creation included, as
    // explicit BF.RESERVE commands), nothing in a base file.
    let incr: Vec<u8> = aof_files(&s, "i").concat();
    assert!(count_occurrences(&incr, b"BF.RESERVE") >= 1);
    for base in aof_files(&s, "b") {
        assert_eq!(count_occurrences(&base, b"BF."), 0);
    }

    let snap = snapshot(&mut con, &fs);
    let digest = db_digest(&mut con);
    drop(con);

    // CONFIG SET is not persisted: the restarted server has the default configs.
    s.restart();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut con, "bf.bf-expansion-factor"), "2");
    assert_restored(&mut con, &fs, &snap, "AOF command log replay");
    assert_eq!(db_digest(&mut con), digest);
    let d = bf_debug(&mut con, b"cfg:add");
    assert!(
        d[1].contains("capacity:33") && d[1].contains("ratio:0.025"),
        "{d:?}"
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:nonscaling", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut con, b"cfg:nonscaling", "CAPACITY"),
        Value::Int(33)
    );
}

/// BF.RESERVE without EXPANSION takes the expansion from `bf-expansion-factor`; the
/// AOF must record the value used, not the command as typed.
#[test]
fn aof_replay_of_reserve_keeps_the_configured_expansion() {
    let mut s = aof_server();
    let mut con = s.conn();
    let items = reserve_under_changed_expansion(&mut con);
    // A layout taken from bf.bf-layout is recorded too (the restarted server
    // starts with the default, classic).
    config_set(&mut con, "bf.bf-layout", "blocked");
    let blocked = text_items("rb:", 30);
    madd(&mut con, b"r:blocked", &blocked);
    let mut fs = Filters::default();
    fs.push(b"r:exp4", items);
    fs.push(b"r:ns", Vec::new());
    fs.push(b"r:blocked", blocked);
    let snap = snapshot(&mut con, &fs);
    drop(con);

    s.restart();
    let mut con = s.conn();
    assert_restored(
        &mut con,
        &fs,
        &snap,
        "AOF replay of BF.RESERVE with defaults",
    );
}

// ---------------------------------------------------------------------------------------------
// 4. COPY
// ---------------------------------------------------------------------------------------------

#[test]
fn copy_makes_independent_filters() {
    let s = Server::start();
    let mut con = s.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let mut dst = b"copy:".to_vec();
        dst.extend_from_slice(&f.key);
        assert_eq!(q::<i64>(&mut con, &[b"COPY", &f.key, &dst]), 1);
        assert_same_key(&mut con, &f.key, &dst, &f.items, "COPY");
    }

    // The copy is independent: writes to it do not reach the source.
    let extra = text_items("copy-only:", 500);
    madd(&mut con, b"copy:fs:scaling", &extra);
    madd(&mut con, b"copy:fs:empty", &extra);
    assert_ne!(
        digest_value(&mut con, b"copy:fs:scaling"),
        digest_value(&mut con, SCALING)
    );
    assert_restored(&mut con, &fs, &snap, "sources after writing to the copies");
    // And deleting the source leaves the copy intact.
    assert_eq!(q::<i64>(&mut con, &[b"COPY", EXP1, b"copy2:exp1"]), 1);
    assert_eq!(q::<i64>(&mut con, &[b"DEL", EXP1]), 1);
    assert_members(
        &mut con,
        b"copy2:exp1",
        &fs.list[3].items,
        "copy of a deleted source",
    );
    assert_state_eq(
        &snap.states[3].1,
        &key_state(&mut con, b"copy2:exp1"),
        "copy2:exp1",
    );

    // Without REPLACE an existing destination is left alone.
    let before = key_state(&mut con, b"copy:fs:auto");
    assert_eq!(q::<i64>(&mut con, &[b"COPY", SCALING, b"copy:fs:auto"]), 0);
    assert_state_eq(
        &before,
        &key_state(&mut con, b"copy:fs:auto"),
        "copy:fs:auto",
    );

    // COPY ... REPLACE over an existing filter and over a string.
    assert_eq!(
        q::<i64>(&mut con, &[b"COPY", SCALING, b"copy:fs:auto", b"REPLACE"]),
        1
    );
    assert_state_eq(
        &snap.states[0].1,
        &key_state(&mut con, b"copy:fs:auto"),
        "copy:fs:auto",
    );
    ok(&mut con, &[b"SET", b"a-string", b"x"]);
    assert_eq!(
        q::<i64>(&mut con, &[b"COPY", NONSCALING, b"a-string", b"REPLACE"]),
        1
    );
    assert_state_eq(
        &snap.states[1].1,
        &key_state(&mut con, b"a-string"),
        "a-string",
    );

    // Into another database.
    assert_eq!(
        q::<i64>(&mut con, &[b"COPY", INSERTED, b"in-db1", b"DB", b"1"]),
        1
    );
    let mut con1 = s.conn();
    ok(&mut con1, &[b"SELECT", b"1"]);
    assert_members(&mut con1, b"in-db1", &fs.list[4].items, "COPY into DB 1");
    assert_state_eq(
        &snap.states[4].1,
        &key_state(&mut con1, b"in-db1"),
        "in-db1",
    );

    // Copies are real values: they persist.
    let fs_copies = {
        let mut c = Filters::default();
        c.push(b"copy:fs:auto", fs.list[0].items.clone());
        c.push(b"a-string", fs.list[1].items.clone());
        c.push(b"copy2:exp1", fs.list[3].items.clone());
        c.push(b"copy:fs:big", fs.list[7].items.clone());
        c
    };
    let snap2 = snapshot(&mut con, &fs_copies);
    ok(&mut con, &[b"DEBUG", b"RELOAD"]);
    assert_restored(&mut con, &fs_copies, &snap2, "copies after DEBUG RELOAD");
}
