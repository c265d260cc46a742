//! Windowed filters through DEBUG RELOAD, DUMP/RESTORE, COPY, SCANDUMP/LOADCHUNK, RDB
//! restarts inside and after the window, AOF rewrite and command-log replay, and
//! replication under load and after promotion.

use super::*;

/// DEBUG RELOAD, DUMP/RESTORE, COPY and SCANDUMP/LOADCHUNK keep a windowed
/// filter identical (DEBUG DIGEST-VALUE and every answer), and the copies keep
/// forgetting on time.
#[test]
fn window_reload_dump_copy_and_scandump_keep_the_filter() {
    let s = Server::start();
    let mut con = s.conn();
    let items = build(&mut con, "w");
    let digest = digest_value(&mut con, "w");
    let want = answers(&mut con, "w", &items);
    // The oldest generations are forgotten by now, the newest ones are not.
    // (forgotten items answer only at the false-positive rate)
    assert!(ones(&want[..900]) <= 25, "forgotten generations");
    assert_eq!(ones(&want[900..2400]), 1500, "live generations");

    exec::<Value>(&mut con, &["DEBUG", "RELOAD"]).unwrap();
    assert_eq!(digest_value(&mut con, "w"), digest, "DEBUG RELOAD");
    assert_eq!(answers(&mut con, "w", &items), want);

    let dump: Vec<u8> = redis::cmd("DUMP").arg("w").query(&mut con).unwrap();
    let r: String = redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(dump)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, "OK");
    assert_eq!(exec::<i64>(&mut con, &["COPY", "w", "c"]).unwrap(), 1);

    assert_eq!(live_copy_of("BF", &mut con, "w", "l", |_, _| {}), Ok(()));
    for k in ["r", "c", "l"] {
        assert_eq!(digest_value(&mut con, k), digest, "{k}");
        assert_eq!(answers(&mut con, k, &items), want, "{k}");
    }
    // COPY is independent, and every copy forgets on time.
    exec::<Value>(&mut con, &["BF.ADD", "c", "only-in-copy"]).unwrap();
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", "only-in-copy"]).unwrap(),
        0
    );
    set_clock(&mut con, 8 * W_MS / 4 + 2 * W_MS);
    for k in ["w", "r", "c", "l"] {
        assert_eq!(ones(&mexists(&mut con, k, &items)), 0, "{k} forgot");
        assert_eq!(exec::<i64>(&mut con, &["BF.CARD", k]).unwrap(), 0);
    }
}

/// RDB: a restart inside the window keeps every answer; a restart after the
/// window comes back with everything forgotten (absolute times).
#[test]
fn window_rdb_restart_inside_and_after_the_window() {
    let mut s = Server::start();
    let mut con = s.conn();
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let items: Vec<String> = (0..500).map(|i| item("r", i)).collect();
    let accepted = ones(&madd(&mut con, "w", &items)) as i64;
    let digest = digest_value(&mut con, "w");
    exec::<Value>(&mut con, &["SAVE"]).unwrap();
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(digest_value(&mut con, "w"), digest);
    assert_eq!(ones(&mexists(&mut con, "w", &items)), 500);
    assert_eq!(exec::<i64>(&mut con, &["BF.CARD", "w"]).unwrap(), accepted);
    // "After the window": the restarted server's clock is W·(1+s) later.
    drop(con);
    s.restart();
    let mut con = s.conn();
    set_clock(&mut con, W_MS + W_MS / 4 + 1_000);
    assert_eq!(ones(&mexists(&mut con, "w", &items)), 0);
    assert_eq!(exec::<i64>(&mut con, &["BF.CARD", "w"]).unwrap(), 0);
    let i: i64 = exec(&mut con, &["BF.ADD", "w", "r:0"]).unwrap();
    assert_eq!(i, 1, "forgotten, so new again");
}

/// AOF: a rewrite (BF.LOADCHUNK stream) and a command log replayed by a
/// restarted server whose clock is back at real time (earlier than the test
/// clock the writes ran at) both rebuild the exact filter: the log carries
/// the primary's times (BF.INSERT ... AT), so the replay never rotates on its
/// own clock.
#[test]
fn window_aof_rewrite_and_command_log_replay() {
    let mut s = Server::start_with(Server::builder().appendonly(true).aof_rdb_preamble(false));
    let mut con = s.conn();
    let items = build(&mut con, "w");
    let digest = digest_value(&mut con, "w");
    let want = answers(&mut con, "w", &items);
    let base = aof_files(&s, "b");
    assert!(!base.is_empty());
    let incr = aof_files(&s, "i").concat();
    assert!(
        count_occurrences(&incr, b"$2\r\nAT\r\n") >= 8,
        "writes carry their time"
    );
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(digest_value(&mut con, "w"), digest, "command log replay");
    assert_eq!(answers(&mut con, "w", &items), want);

    bgrewriteaof(&s);
    let base = aof_files(&s, "b").concat();
    assert!(count_occurrences(&base, b"BF.LOADCHUNK") >= 2);
    exec::<Value>(&mut con, &["BF.ADD", "w", "after-rewrite"]).unwrap();
    let digest = digest_value(&mut con, "w");
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(digest_value(&mut con, "w"), digest, "rewrite + replay");
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "w", "after-rewrite"]).unwrap(),
        1
    );
}

/// A replica whose clock is an hour behind stays identical to its primary
/// under a write load with rotations (DEBUG DIGEST), its reads skip what is
/// too old by its own clock without changing anything, and after promotion it
/// keeps every item and goes on.
#[test]
fn window_replica_identical_under_load_and_after_promotion() {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut pc = primary.conn();
    let mut rc = replica.conn();
    set_clock(&mut rc, -3_600_000);
    let ok: String = exec(
        &mut pc,
        &["BF.RESERVE", "w", "0.01", "1000", "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    exec::<Value>(
        &mut pc,
        &["BF.INSERT", "auto", "WINDOW", "60", "ITEMS", "a"],
    )
    .unwrap();
    let mut all = Vec::new();
    for step in 0..40 {
        set_clock(&mut pc, step * W_MS / 10);
        let batch: Vec<String> = (0..100).map(|i| item(&format!("s{step}"), i)).collect();
        madd(&mut pc, "w", &batch);
        exec::<Value>(&mut pc, &["BF.ADD", "w", "s0:0"]).unwrap(); // re-adds
        exec::<Value>(&mut pc, &["BF.ADD", "auto", &format!("x{step}")]).unwrap();
        all.extend(batch);
        if step % 10 == 9 {
            primary.wait_for_offset(&replica);
            assert_eq!(primary.digest(), replica.digest(), "step {step}");
        }
    }
    primary.wait_for_offset(&replica);
    assert_eq!(primary.digest(), replica.digest());
    // Same answers: both read at the last write's time (clocks behind it).
    set_clock(&mut pc, -3_600_000);
    assert_eq!(mexists(&mut pc, "w", &all), mexists(&mut rc, "w", &all));
    // A replica clock far ahead: reads forget, nothing changes.
    set_clock(&mut rc, 100 * W_MS);
    assert_eq!(ones(&mexists(&mut rc, "w", &all)), 0);
    assert_eq!(exec::<i64>(&mut rc, &["BF.CARD", "w"]).unwrap(), 0);
    assert_eq!(primary.digest(), replica.digest(), "reads do not mutate");
    set_clock(&mut rc, -3_600_000);
    // Promotion: the replica's own (behind) clock forgets nothing early.
    let want = mexists(&mut pc, "w", &all);
    let ok: String = exec(&mut rc, &["REPLICAOF", "NO", "ONE"]).unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(mexists(&mut rc, "w", &all), want);
    assert_eq!(
        exec::<i64>(&mut rc, &["BF.ADD", "w", "promoted"]).unwrap(),
        1
    );
    assert_eq!(mexists(&mut rc, "w", &all), want);
    assert_eq!(
        exec::<i64>(&mut rc, &["BF.EXISTS", "w", "promoted"]).unwrap(),
        1
    );
}
