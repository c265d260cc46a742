//! Persistence and replication of Bloom filters (`MBbloom--`, RDB encoding version 6): SAVE +
//! restart, DEBUG RELOAD, AOF (rewrite through the `aof_rewrite` callback, and a plain command
//! log), COPY, DUMP/RESTORE, SCANDUMP/LOADCHUNK, and replication (initial full sync and
//! streamed writes); after every round trip each filter is compared with its state before.
//! Helpers: `common::bf_persist`.

mod common;

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

// ---------------------------------------------------------------------------------------------
// 3. AOF
// ---------------------------------------------------------------------------------------------

#[test]
fn aof_rewrite_then_more_writes_replays_everything() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
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
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
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
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    wait_aof_rewrite_idle(&s);
    let mut con = s.conn();
    config_set(&mut con, "bf.bf-expansion-factor", "4");
    reserve(&mut con, b"r:exp4", &["0.01", "10"]);
    let items = text_items("r4:", 30);
    madd(&mut con, b"r:exp4", &items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    reserve(&mut con, b"r:ns", &["0.01", "10"]);
    assert_eq!(
        bf_info_field(&mut con, b"r:exp4", "EXPANSION"),
        Value::Int(4)
    );
    assert_eq!(bf_info_field(&mut con, b"r:ns", "EXPANSION"), Value::Nil);
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

// ---------------------------------------------------------------------------------------------
// 5. DUMP / RESTORE
// ---------------------------------------------------------------------------------------------

#[test]
fn dump_restore_into_new_keys_and_other_servers() {
    let s = Server::start();
    let other = Server::start();
    let mut con = s.conn();
    let mut ocon = other.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let payload = dump(&mut con, &f.key);
        let mut dst = b"restored:".to_vec();
        dst.extend_from_slice(&f.key);
        assert_eq!(restore(&mut con, &dst, &payload).ok(), Some(Value::Okay));
        assert_same_key(&mut con, &f.key, &dst, &f.items, "RESTORE");
        // The same payload on another server.
        assert_eq!(restore(&mut ocon, &f.key, &payload).ok(), Some(Value::Okay));
        assert_same_filter(
            &mut con,
            &f.key,
            &mut ocon,
            &f.key,
            &f.items,
            "RESTORE elsewhere",
        );
        // An existing key needs REPLACE.
        assert_eq!(
            err_text(restore(&mut con, &dst, &payload)),
            "BUSYKEY Target key name already exists."
        );
    }

    // ferrobloom's previous encoding (version 5, before the hash scheme was recorded)
    // still loads, and answers as the filter it was saved from.
    config_set(&mut con, "rdbcompression", "no");
    let mut v5 = 0;
    for f in &fs.list {
        let Some(payload) = as_version5(&dump(&mut con, &f.key)) else {
            continue;
        };
        let dst = [b"v5:".as_slice(), &f.key].concat();
        assert_eq!(restore(&mut con, &dst, &payload).ok(), Some(Value::Okay));
        assert_same_key(&mut con, &f.key, &dst, &f.items, "RESTORE of version 5");
        v5 += 1;
    }
    assert!(v5 >= 3, "{v5} filters went through version 5");

    // RESTORE ... REPLACE over another filter and over a string.
    let payload = dump(&mut con, EXP1);
    let r: Value = redis::cmd("RESTORE")
        .arg(b"restored:fs:scaling")
        .arg(0)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    assert_same_key(
        &mut con,
        EXP1,
        b"restored:fs:scaling",
        &fs.list[3].items,
        "REPLACE",
    );
    ok(&mut con, &[b"SET", b"str", b"v"]);
    let r: Value = redis::cmd("RESTORE")
        .arg(b"str")
        .arg(0)
        .arg(&payload)
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    assert_same_key(
        &mut con,
        EXP1,
        b"str",
        &fs.list[3].items,
        "REPLACE over a string",
    );

    // With a TTL (the digest of a volatile key includes the expire: compare after PERSIST).
    let r: Value = redis::cmd("RESTORE")
        .arg(b"with-ttl")
        .arg(100_000)
        .arg(&payload)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, Value::Okay);
    let pttl: i64 = q(&mut con, &[b"PTTL", b"with-ttl"]);
    assert!(pttl > 0 && pttl <= 100_000, "PTTL {pttl}");
    assert_eq!(q::<i64>(&mut con, &[b"PERSIST", b"with-ttl"]), 1);
    assert_same_key(
        &mut con,
        EXP1,
        b"with-ttl",
        &fs.list[3].items,
        "RESTORE with TTL",
    );

    // Uncompressed payloads restore to the same filter.
    config_set(&mut con, "rdbcompression", "no");
    let raw = dump(&mut con, SCALING);
    ModulePayload::parse(&raw);
    assert_eq!(restore(&mut ocon, b"raw", &raw).ok(), Some(Value::Okay));
    assert_same_filter(
        &mut con,
        SCALING,
        &mut ocon,
        b"raw",
        &fs.list[0].items,
        "raw DUMP",
    );

    assert_restored(&mut con, &fs, &snap, "sources after DUMP");
}

// ---------------------------------------------------------------------------------------------
// 6. SCANDUMP / LOADCHUNK
// ---------------------------------------------------------------------------------------------

/// The data chunk lengths SCANDUMP must produce for links of these sizes.
fn expected_chunk_lens(links: &[u64]) -> Vec<usize> {
    let mut out = Vec::new();
    for &b in links {
        let mut left = b;
        while left > 0 {
            let n = left.min(CHUNK);
            out.push(n as usize);
            left -= n;
        }
    }
    out
}

#[test]
fn scandump_loadchunk_round_trip() {
    let s = Server::start();
    let other = Server::start();
    let mut con = s.conn();
    let mut ocon = other.conn();
    let fs = build_filters(&mut con, true);
    let snap = snapshot(&mut con, &fs);

    for f in &fs.list {
        let what = format!(
            "SCANDUMP/LOADCHUNK of {:?}",
            String::from_utf8_lossy(&f.key)
        );
        let chunks = scandump(&mut con, &f.key);
        let links = link_bytes(&mut con, &f.key);

        // Header first, then chunks that never span links, at most 16 MiB each.
        assert_eq!(chunks[0].0, 1, "{what}");
        let header = &chunks[0].1;
        assert_eq!(&header[..4], b"FBbf");
        // Header version 2 (valkey-bloom's TIGHTENING / SEED) has 48 more bytes.
        let v2 = if f.key == TIGHT || f.key == SEEDED {
            48
        } else {
            0
        };
        assert_eq!(header[4], if v2 == 0 { 1 } else { 2 }, "{what}");
        assert_eq!(header.len(), H_FIXED + v2 + H_LINK * links.len(), "{what}");
        let lens: Vec<usize> = chunks[1..].iter().map(|c| c.1.len()).collect();
        assert_eq!(lens, expected_chunk_lens(&links), "{what}");
        let mut it = 1i64;
        for (next, data) in &chunks[1..] {
            assert_eq!(*next, it + data.len() as i64, "{what}: iterator");
            it = *next;
        }
        // Past the end: [0, ""].
        let (z, data): (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
            .arg(&f.key)
            .arg(it)
            .query(&mut con)
            .unwrap();
        assert_eq!((z, data.len()), (0, 0));

        // In order, into a new key.
        let mut dst = b"loaded:".to_vec();
        dst.extend_from_slice(&f.key);
        loadchunks(&mut con, &dst, &chunks);
        assert_same_key(&mut con, &f.key, &dst, &f.items, &what);

        // Data chunks in reverse order (they are positional), into another server.
        let mut reversed = vec![chunks[0].clone()];
        reversed.extend(chunks[1..].iter().rev().cloned());
        loadchunks(&mut ocon, &f.key, &reversed);
        assert_same_filter(&mut con, &f.key, &mut ocon, &f.key, &f.items, &what);
    }

    // The big filter: one link, two chunks of 16 MiB and the rest.
    let links = link_bytes(&mut con, BIG);
    let chunks = scandump(&mut con, BIG);
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[1].1.len(), 16_777_216);
    assert_eq!(chunks[2].1.len() as u64, links[0] - CHUNK);
    assert_eq!(chunks[1].0, 1 + 16_777_216);

    // Smaller pieces at arbitrary positions work too (a chunk is any byte range of
    // one link): load the multi-link scaling filter in 1000-byte pieces, shuffled.
    let chunks = scandump(&mut con, SCALING);
    let mut pieces: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut offset = 0i64;
    for (_, data) in &chunks[1..] {
        for p in data.chunks(1000) {
            offset += p.len() as i64;
            pieces.push((offset + 1, p.to_vec()));
        }
    }
    // A deterministic shuffle: odd positions first, then even ones, backwards.
    let mut order: Vec<usize> = (0..pieces.len()).filter(|i| i % 2 == 1).collect();
    order.extend((0..pieces.len()).filter(|i| i % 2 == 0).rev());
    let mut shuffled = vec![chunks[0].clone()];
    shuffled.extend(order.iter().map(|&i| pieces[i].clone()));
    loadchunks(&mut con, b"pieces", &shuffled);
    assert_same_key(
        &mut con,
        SCALING,
        b"pieces",
        &fs.list[0].items,
        "1000-byte pieces",
    );

    // A header alone gives an empty filter of the same shape.
    loadchunks(&mut con, b"shape-only", &chunks[..1]);
    assert_eq!(
        bf_debug(&mut con, b"shape-only"),
        bf_debug(&mut con, SCALING)
    );
    assert_eq!(
        mexists(&mut con, b"shape-only", &fs.list[0].items[..100]),
        vec![0; 100]
    );

    assert_restored(&mut con, &fs, &snap, "sources after SCANDUMP");
}

// ---------------------------------------------------------------------------------------------
// 7. Replication
// ---------------------------------------------------------------------------------------------

#[test]
fn replica_full_sync_and_streamed_writes() {
    let primary = Server::start();
    let mut con = primary.conn();
    let mut fs = build_filters(&mut con, true);

    // Non-default creation defaults on the primary only (the replica keeps defaults).
    config_set(&mut con, "bf.bf-error-rate", "0.05");
    config_set(&mut con, "bf.bf-initial-size", "33");
    config_set(&mut con, "bf.bf-expansion-factor", "3");
    let items = text_items("pre-sync-auto:", 80);
    madd(&mut con, b"pre:auto", &items);
    fs.push(b"pre:auto", items);

    // Initial full sync.
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    assert_replica_matches(&primary, &replica, &fs, "full sync");
    let mut rcon = replica.conn();
    assert_eq!(config_get(&mut rcon, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut rcon, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut rcon, "bf.bf-expansion-factor"), "2");

    // Streamed writes: every write command.
    reserve(&mut con, b"w:reserve", &["0.02", "70", "EXPANSION", "3"]);
    reserve(&mut con, b"w:reserve-ns", &["0.003", "40", "NONSCALING"]);
    reserve(
        &mut con,
        b"w:reserve-exp0",
        &["0.01", "40", "EXPANSION", "0"],
    );
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"w:reserve", b"one"]), 1);
    let mut items = vec![b"one".to_vec()];
    let more = text_items("w-reserve:", 400);
    madd(&mut con, b"w:reserve", &more);
    items.extend(more);
    fs.push(b"w:reserve", items);

    let items = text_items("w-ns:", 40);
    madd(&mut con, b"w:reserve-ns", &items);
    // Full: the next new item is refused and nothing is replicated for it.
    let r = q_array(
        &mut con,
        &[b"BF.MADD", b"w:reserve-ns", b"w-ns:0", b"overflow-1", b"x"],
    );
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(
        value_err_text(&r[1]).as_deref(),
        Some("ERR non scaling filter is full")
    );
    fs.push(b"w:reserve-ns", items);
    fs.push(b"w:reserve-exp0", Vec::new());

    let items = text_items("w-insert:", 300);
    insert(
        &mut con,
        b"w:insert",
        &["CAPACITY", "40", "ERROR", "0.03", "EXPANSION", "2"],
        &items,
    );
    fs.push(b"w:insert", items);
    let items = binary_items();
    insert(
        &mut con,
        b"w:insert-ns",
        &["NONSCALING", "CAPACITY", "300"],
        &items,
    );
    fs.push(b"w:insert-ns", items);
    let more = text_items("w-nocreate:", 100);
    insert(&mut con, b"w:insert", &["NOCREATE"], &more);
    fs.get_mut(b"w:insert").items.extend(more);
    assert_eq!(
        err_text(
            redis::cmd("BF.INSERT")
                .arg("w:missing")
                .arg("NOCREATE")
                .arg("ITEMS")
                .arg("a")
                .query::<Value>(&mut con)
        ),
        "ERR not found"
    );

    // LOADCHUNK into a new key.
    let chunks = scandump(&mut con, SCALING);
    loadchunks(&mut con, b"w:loaded", &chunks);
    fs.push(b"w:loaded", fs.list[0].items.clone());
    let chunks = scandump(&mut con, BIG);
    loadchunks(&mut con, b"w:loaded-big", &chunks);
    fs.push(b"w:loaded-big", fs.list[7].items.clone());

    // Auto-creation with the primary's non-default configs (error 0.05, 33, 3).
    assert_eq!(q::<i64>(&mut con, &[b"BF.ADD", b"w:auto-add", b"a"]), 1);
    fs.push(b"w:auto-add", vec![b"a".to_vec()]);
    let items = text_items("w-auto-madd:", 200);
    madd(&mut con, b"w:auto-madd", &items);
    fs.push(b"w:auto-madd", items);
    let items = text_items("w-auto-insert:", 50);
    insert(&mut con, b"w:auto-insert", &[], &items);
    fs.push(b"w:auto-insert", items);
    let items = text_items("w-auto-insert-cap:", 50);
    insert(&mut con, b"w:auto-insert-cap", &["CAPACITY", "20"], &items);
    fs.push(b"w:auto-insert-cap", items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    let items = text_items("w-auto-ns:", 20);
    madd(&mut con, b"w:auto-ns", &items);
    fs.push(b"w:auto-ns", items);
    assert_eq!(
        bf_debug(&mut con, b"w:auto-add")[1],
        "bytes:32 bits:256 hashes:6 hashwidth:64 capacity:33 size:1 ratio:0.025"
    );

    // More items into existing filters (new links on both sides), COPY, RESTORE, DEL.
    let more = text_items("w-scaling-more:", 2000);
    madd(&mut con, SCALING, &more);
    fs.get_mut(SCALING).items.extend(more);
    assert_eq!(q::<i64>(&mut con, &[b"COPY", EXP1, b"w:copy"]), 1);
    fs.push(b"w:copy", fs.list[3].items.clone());
    let payload = dump(&mut con, INSERTED);
    assert_eq!(
        restore(&mut con, b"w:restored", &payload).ok(),
        Some(Value::Okay)
    );
    fs.push(b"w:restored", fs.list[4].items.clone());
    ok(&mut con, &[b"SET", b"w:deleted", b"x"]);
    assert_eq!(q::<i64>(&mut con, &[b"DEL", b"w:deleted"]), 1);

    // Auto-creation inside MULTI/EXEC and inside a Lua script (config defaults still
    // 0.05 / 33, expansion now 0: non-scaling).
    config_set(&mut con, "bf.bf-expansion-factor", "3");
    let items = text_items("w-multi:", 40);
    let mut tx = redis::pipe();
    tx.atomic()
        .cmd("BF.ADD")
        .arg("w:multi-add")
        .arg(&items[0])
        .cmd("BF.MADD")
        .arg("w:multi-madd")
        .arg(&items[1..]);
    let _: Value = tx.query(&mut con).expect("MULTI/EXEC");
    fs.push(b"w:multi-add", items[..1].to_vec());
    fs.push(b"w:multi-madd", items[1..].to_vec());
    let items = text_items("w-lua:", 60);
    let _: Value = redis::cmd("EVAL")
        .arg("for i = 1, #ARGV do redis.call('BF.ADD', KEYS[1], ARGV[i]) end return 1")
        .arg(1)
        .arg("w:lua")
        .arg(&items)
        .query(&mut con)
        .expect("EVAL");
    fs.push(b"w:lua", items);

    assert_replica_matches(&primary, &replica, &fs, "streamed writes");
    let mut rcon = replica.conn();
    let d = bf_debug(&mut rcon, b"w:auto-madd");
    assert!(
        d[1].contains("capacity:33") && d[1].contains("ratio:0.025"),
        "{d:?}"
    );
    assert!(d.len() >= 3, "{d:?}");
    assert_eq!(
        bf_info_field(&mut rcon, b"w:auto-ns", "EXPANSION"),
        Value::Nil
    );
    assert_eq!(
        bf_info_field(&mut rcon, b"w:auto-madd", "EXPANSION"),
        Value::Int(3)
    );
}

/// BF.RESERVE without EXPANSION takes the expansion from `bf-expansion-factor`; a
/// replica with another default must build the same filter.
#[test]
fn replica_of_reserve_keeps_the_primary_expansion_default() {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    config_set(&mut con, "bf.bf-expansion-factor", "4");
    reserve(&mut con, b"r:exp4", &["0.01", "10"]);
    let items = text_items("r4:", 30);
    madd(&mut con, b"r:exp4", &items);
    config_set(&mut con, "bf.bf-expansion-factor", "0");
    reserve(&mut con, b"r:ns", &["0.01", "10"]);
    assert_eq!(
        bf_info_field(&mut con, b"r:exp4", "EXPANSION"),
        Value::Int(4)
    );
    assert_eq!(bf_info_field(&mut con, b"r:ns", "EXPANSION"), Value::Nil);
    // The layout comes from bf.bf-layout on the primary; the replica keeps classic.
    config_set(&mut con, "bf.bf-layout", "blocked");
    config_set(&mut con, "bf.bf-expansion-factor", "2");
    let blocked = text_items("rb:", 300);
    madd(&mut con, b"r:blocked", &blocked);
    assert!(bf_debug(&mut con, b"r:blocked")[1].ends_with("layout:blocked"));
    assert_eq!(config_get(&mut replica.conn(), "bf.bf-layout"), "classic");
    let mut fs = Filters::default();
    fs.push(b"r:exp4", items);
    fs.push(b"r:ns", Vec::new());
    fs.push(b"r:blocked", blocked);
    assert_replica_matches(
        &primary,
        &replica,
        &fs,
        "BF.RESERVE with a defaulted expansion",
    );
}

// ---------------------------------------------------------------------------------------------
