//! Durability and replication under a write load.
//!
//! A seeded generator produces a mixed stream of BF.ADD / BF.MADD / BF.INSERT and
//! CF.ADD / CF.ADDNX / CF.INSERT / CF.DEL commands on several keys: filters created
//! implicitly (with small configured defaults, so they grow new links and sub-filters
//! during the load), explicitly reserved ones, a non-scaling BF and a fixed-size CF that
//! fill up (error replies, `-1`), a CF with wide fingerprints whose counts are exact,
//! brand-new keys now and then, and deletes of live items (which start the automatic
//! compaction of multi-sub-filter cuckoo filters). A `Model` records what every
//! acknowledged reply promises.
//!
//! Crash tests `kill -9` the server in the middle of that load and restart it on the
//! same dir. A *reference* server (no persistence) receives exactly the commands the
//! crashed server acknowledged, in order, and must answer each of them exactly as the
//! crashed server did; after the restart both datasets must have the same `DEBUG
//! DIGEST` (the one command that was in flight at the kill may or may not have been
//! applied: the reference tries both). Then the restarted server is checked against the
//! model itself: every acknowledged item is a member, counts and `*.INFO` totals are
//! the acknowledged ones.
//!
//! Replication tests compare replicas with their primary reply by reply (members *and*
//! an equal number of never-added probes, so the false positives must agree too) and
//! per-key `DEBUG DIGEST-VALUE`, after a streamed load, a full sync during a load, a
//! partial resync after a broken link, and a promotion.
//!
//! A last test covers multi-item commands that a configured limit refuses in part:
//! a replica and an AOF replay must leave out exactly the refused items.
//!
//! The generator, the model, the writer and the comparisons are in
//! `crates/ferrobloom/tests/common/workload.rs`; this file holds the scenarios. No timing is asserted; all randomness is seeded. The whole file runs in about
//! 10-15 s on 2 cores.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::rng::Rng;
use common::workload::*;
use common::*;
use redis::{Connection, Value};

// ---------------------------------------------------------------------------------------------
// 1. Crash recovery with appendonly + appendfsync always
// ---------------------------------------------------------------------------------------------

#[test]
fn aof_always_keeps_every_acknowledged_write_across_kill9() {
    let mut server = builder()
        .appendonly(true)
        // The rewrite in round 2 then goes through the module's aof_rewrite callback.
        .aof_rdb_preamble(false)
        .args(&["--appendfsync", "always"])
        .start();
    let reference = builder().start();
    let mut rcon = reference.conn();

    let mut truth = Model::default();
    let log = setup(&mut server.conn(), &mut truth);
    replay(&mut rcon, &mut Model::default(), &log, "setup");
    let mut gen = Gen::new(0x5eed_a0f1);
    let mut kill_rng = Rng(0x000d_eadb_eef5);
    let mut inflight_applied = 0;
    let mut rounds_with_inflight = 0;

    const ROUNDS: usize = 4;
    for round in 0..ROUNDS {
        let what = format!("round {round}");
        // The last round stops writing before the kill (nothing in flight).
        let idle_kill = round == ROUNDS - 1;
        let target = kill_rng.range(500, 1500) as usize;
        let max_ops = if idle_kill { target } else { usize::MAX };
        let progress = Progress::default();
        let mut wcon = server.conn();
        let run = std::thread::scope(|s| {
            let (g, m, p) = (gen.clone(), truth.clone(), &progress);
            let writer = s.spawn(move || write_load(&mut wcon, g, m, max_ops, p));
            let _stop = StopOnPanic(&progress);
            if round == 1 {
                // An AOF rewrite while the load runs; the kill comes after it finished.
                wait_acked(&progress, target / 2, &writer);
                rdb::bgrewriteaof(&server);
            }
            wait_acked(&progress, target, &writer);
            if idle_kill {
                wait_until(Duration::from_secs(60), "the writer to finish", || {
                    writer.is_finished()
                });
            }
            server.crash();
            writer.join().expect("writer thread")
        });
        assert!(run.log.len() >= target, "{what}: {} acked", run.log.len());
        if idle_kill {
            assert!(run.inflight.is_none() && run.error.is_none());
        } else {
            assert!(
                run.inflight.is_some(),
                "{what}: the writer did not notice the kill"
            );
        }
        server.start_again();
        if run.inflight.is_some() {
            rounds_with_inflight += 1;
        }
        if verify_after_crash(&server, &mut rcon, &mut truth, &run, &what) {
            inflight_applied += 1;
        }
        gen = run.gen;
    }

    // The load really did what it claims.
    let mut con = server.conn();
    assert!(truth.bf.keys().any(|k| k.starts_with("bf:new:")));
    assert!(truth.cf.keys().any(|k| k.starts_with("cf:new:")));
    for (key, min_links) in [("bf:auto", 3), ("bf:madd", 4), ("bf:ins", 3)] {
        let n = info_ints(&mut con, "BF.INFO", key)["Number of filters"];
        assert!(n >= min_links, "{key}: only {n} links");
    }
    for (key, min_subs) in [("cf:auto", 2), ("cf:ins", 3)] {
        let n = info_ints(&mut con, "CF.INFO", key)["Number of filters"];
        assert!(n >= min_subs, "{key}: only {n} sub-filters");
    }
    assert!(truth.cf["cf:exact"].deleted > 0 && truth.cf["cf:full"].deleted > 0);
    assert_eq!(
        server.info_field("persistence", "aof_enabled").as_deref(),
        Some("1")
    );
    eprintln!(
        "aof: {} items over {} keys; in flight at {rounds_with_inflight} kills, applied {inflight_applied}",
        truth.items(),
        truth.bf.len() + truth.cf.len()
    );
}

/// After a `kill -9` and a restart: the reference gets exactly the acknowledged
/// commands of `run` (and the one in flight only if the restarted server has it),
/// then both datasets must be equal and the restarted server must keep every
/// promise of the model. Returns whether the in-flight command had been applied.
fn verify_after_crash(
    server: &Server,
    rcon: &mut Connection,
    truth: &mut Model,
    run: &Run,
    what: &str,
) -> bool {
    let mut con = server.conn();
    replay(rcon, truth, &run.log, what);
    let mut applied = false;
    if let Some(op) = &run.inflight {
        if !same_dataset(&mut con, rcon) {
            // Only the in-flight command's key may differ.
            let mut keys = truth.keys();
            keys.push(op.key.clone());
            let a = digest_values(&mut con, &keys);
            let b = digest_values(rcon, &keys);
            for ((k, x), y) in keys.iter().zip(&a).zip(&b) {
                assert!(
                    x == y || *k == op.key,
                    "{what}: DEBUG DIGEST-VALUE {k} differs, and the command in \
                     flight was {}",
                    show_args(&op.args)
                );
            }
            replay_unacked(rcon, truth, op);
            applied = true;
        }
    }
    assert_same_dataset(&mut con, rcon, truth, what);
    check_model(&mut con, truth, what);
    assert_counts_cover_acked(&mut con, &run.model, run.inflight.as_ref(), what);
    applied
}

/// `kill -9` while a BGSAVE child, then an AOF rewrite child, is writing (slowed down
/// by `rdb-key-save-delay` so the kill lands inside it): with `appendfsync always`
/// nothing acknowledged is lost, the half-written files are ignored, and the
/// orphaned child (killed with its parent) renames nothing into place.
#[test]
fn kill9_during_bgsave_and_during_aof_rewrite_loses_nothing_acknowledged() {
    let mut server = builder()
        .appendonly(true)
        .args(&["--appendfsync", "always"])
        .start();
    let reference = builder().start();
    let mut rcon = reference.conn();
    let mut truth = Model::default();
    let log = setup(&mut server.conn(), &mut truth);
    replay(&mut rcon, &mut Model::default(), &log, "setup");
    let mut gen = Gen::new(0x5eed_b65a);
    for (round, (start, in_progress)) in [
        ("BGSAVE", ("persistence", "rdb_bgsave_in_progress")),
        ("BGREWRITEAOF", ("persistence", "aof_rewrite_in_progress")),
    ]
    .into_iter()
    .enumerate()
    {
        let what = format!("kill during {start}");
        let mut con = server.conn();
        // 200 ms per key: the child takes many seconds over the dataset (at 20 ms
        // Redis 8.2's child finished before 200 more writes were acknowledged).
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("rdb-key-save-delay")
            .arg("200000")
            .query(&mut con)
            .unwrap();
        let progress = Progress::default();
        let mut wcon = server.conn();
        let run = std::thread::scope(|s| {
            let (g, m, p) = (gen.clone(), truth.clone(), &progress);
            let writer = s.spawn(move || write_load(&mut wcon, g, m, usize::MAX, p));
            let _stop = StopOnPanic(&progress);
            wait_acked(&progress, 300 + 300 * round, &writer);
            let _: Value = redis::cmd(start).query(&mut con).unwrap();
            wait_until(Duration::from_secs(10), "the child to start", || {
                server.info_field(in_progress.0, in_progress.1).as_deref() == Some("1")
            });
            let acked = progress.acked.load(Ordering::SeqCst);
            wait_acked(&progress, acked + 200, &writer);
            assert_eq!(
                server.info_field(in_progress.0, in_progress.1).as_deref(),
                Some("1"),
                "{what}: the child finished before the kill"
            );
            let children = child_pids(&server);
            assert!(!children.is_empty(), "{what}: no child process");
            server.crash();
            for c in children {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &c.to_string()])
                    .status();
            }
            writer.join().expect("writer thread")
        });
        assert!(
            run.inflight.is_some(),
            "{what}: the writer did not notice the kill"
        );
        server.start_again();
        verify_after_crash(&server, &mut rcon, &mut truth, &run, &what);
        gen = run.gen;
    }
}

/// The pids of a server's child processes (a BGSAVE or AOF rewrite child).
fn child_pids(s: &Server) -> Vec<u32> {
    let pid = s.pid().expect("running");
    let out = std::process::Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// 2. Crash recovery with RDB snapshots
// ---------------------------------------------------------------------------------------------

#[test]
fn rdb_snapshot_keeps_everything_acknowledged_before_it_across_kill9() {
    let mut server = builder().start();
    let reference = builder().start();
    let mut rcon = reference.conn();
    let mut truth = Model::default();
    let mut gen = Gen::new(0x5eed_0db1);
    let mut kill_rng = Rng(0x0bad_cafe);

    // Round 1: load, SAVE, more load, kill -9 during it.
    {
        let mut con = server.conn();
        let log = setup(&mut con, &mut Model::default());
        replay(&mut rcon, &mut truth, &log, "setup");
        let run = write_load(
            &mut con,
            gen.clone(),
            truth.clone(),
            1500,
            &Progress::default(),
        );
        assert!(run.error.is_none(), "{:?}", run.error);
        replay(&mut rcon, &mut truth, &run.log, "before SAVE");
        gen = run.gen;
        // Single deletes until an automatic compaction pass is caught half-way: the
        // snapshot must carry its cursor, and the pass must go on identically after.
        let subs = info_ints(&mut con, "CF.INFO", "cf:compact")["Number of filters"];
        assert!(subs >= 2, "cf:compact has {subs} sub-filters");
        let mut caught = None;
        for item in truth.cf["cf:compact"].live() {
            let op = Op::new(Kind::CfDel, &["CF.DEL", "cf:compact"], vec![item]);
            let v = raw(&mut con, &op.args);
            replay(&mut rcon, &mut truth, &[(op, v)], "deletes before SAVE");
            caught = compaction(&mut con, "cf:compact").filter(|&(_, slot)| slot > 0);
            if caught.is_some() {
                break;
            }
        }
        assert!(caught.is_some(), "no compaction pass caught half-way");
        assert_eq!(raw(&mut con, &strs(&["SAVE"])), Value::Okay);
        assert_same_dataset(&mut con, &mut rcon, &truth, "at SAVE");
    }
    let target = kill_rng.range(200, 500) as usize;
    let progress = Progress::default();
    let mut wcon = server.conn();
    let lost = std::thread::scope(|s| {
        let (g, m, p) = (gen.clone(), truth.clone(), &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, usize::MAX, p));
        let _stop = StopOnPanic(&progress);
        wait_acked(&progress, target, &writer);
        server.crash();
        writer.join().expect("writer thread")
    });
    gen = lost.gen;
    server.start_again();
    {
        // Exactly the SAVE state: the reference never saw the later writes.
        let mut con = server.conn();
        assert_same_dataset(&mut con, &mut rcon, &truth, "restart after SAVE");
        check_model(&mut con, &truth, "restart after SAVE");
        assert!(
            lost.model.items() > truth.items(),
            "writes after the SAVE were acknowledged"
        );
    }

    // Round 2: BGSAVE in the middle of a load is a point-in-time snapshot: after the
    // kill, the dataset is the reference after some prefix of the acknowledged commands,
    // between those acked before BGSAVE was sent and those sent before it replied.
    let progress = Progress::default();
    let mut wcon = server.conn();
    let t1 = kill_rng.range(100, 300) as usize;
    let (run, lo, hi) = std::thread::scope(|s| {
        let (g, m, p) = (gen.clone(), truth.clone(), &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, usize::MAX, p));
        let _stop = StopOnPanic(&progress);
        wait_acked(&progress, t1, &writer);
        let before = stat(&server, "persistence", "rdb_changes_since_last_save");
        assert!(before > 0);
        let lo = progress.acked.load(Ordering::SeqCst);
        let reply = raw(&mut server.conn(), &strs(&["BGSAVE"]));
        let hi = progress.sent.load(Ordering::SeqCst);
        assert_eq!(show(&reply), "+Background saving started");
        wait_until(Duration::from_secs(60), "BGSAVE to finish", || {
            server
                .info_field("persistence", "rdb_bgsave_in_progress")
                .as_deref()
                == Some("0")
        });
        assert_eq!(
            server
                .info_field("persistence", "rdb_last_bgsave_status")
                .as_deref(),
            Some("ok")
        );
        // More acknowledged writes after the snapshot, then the kill.
        wait_acked(&progress, hi + kill_rng.range(50, 200) as usize, &writer);
        server.crash();
        (writer.join().expect("writer thread"), lo, hi)
    });
    assert!(lo <= hi && hi <= run.log.len());
    server.start_again();
    let mut con = server.conn();
    replay(&mut rcon, &mut truth, &run.log[..lo], "up to BGSAVE");
    let mut k = lo;
    while !same_dataset(&mut con, &mut rcon) {
        assert!(
            k < hi,
            "the restarted dataset is no prefix of the load between {lo} and {hi} commands"
        );
        replay(&mut rcon, &mut truth, &run.log[k..k + 1], "BGSAVE window");
        k += 1;
    }
    assert_same_dataset(&mut con, &mut rcon, &truth, "restart after BGSAVE");
    check_model(&mut con, &truth, "restart after BGSAVE");
    eprintln!(
        "rdb: {} items; BGSAVE snapshot after command {k} of window {lo}..={hi}",
        truth.items()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Replication under load, promotion, re-pointing
// ---------------------------------------------------------------------------------------------

#[test]
fn replicas_answer_exactly_like_the_primary_and_survive_a_promotion() {
    // No PINGs from the old primary after the promotion: they would move replica 2's
    // offset past replica 1's history and force a full sync on re-pointing.
    let primary = builder()
        .args(&["--repl-ping-replica-period", "3600"])
        .start();
    let r1 = builder().replica_of(&primary).start();
    let r2 = builder().replica_of(&primary).start();
    primary.wait_for_sync(&r1);
    primary.wait_for_sync(&r2);

    let mut model = Model::default();
    let mut con = primary.conn();
    setup(&mut con, &mut model);
    let run = write_load(
        &mut con,
        Gen::new(0x5eed_4e91),
        model,
        2500,
        &Progress::default(),
    );
    assert!(run.error.is_none(), "{:?}", run.error);
    let mut model = run.model;
    check_model(&mut con, &model, "primary");
    let fp1 = assert_same_answers(&primary, &r1, &model, "replica 1");
    let fp2 = assert_same_answers(&primary, &r2, &model, "replica 2");
    assert_eq!(fp1, fp2);
    // The probes do hit false positives, so their agreement means something.
    assert!(fp1 > 0, "no false positive among the probes");

    // Promote replica 1: it keeps everything and takes writes.
    let digest = primary.digest();
    let mut c1 = r1.conn();
    assert_eq!(
        raw(&mut c1, &strs(&["REPLICAOF", "NO", "ONE"])),
        Value::Okay
    );
    assert_eq!(role(&r1), "master");
    assert_eq!(r1.digest(), digest);
    check_model(&mut c1, &model, "promoted replica");
    for (kind, cmd, key) in [
        (Kind::BfAdd, "BF.ADD", "bf:auto"),
        (Kind::CfAdd, "CF.ADD", "cf:auto"),
    ] {
        let op = Op::new(kind, &[cmd, key], vec![b"after-promotion".to_vec()]);
        let v = raw(&mut c1, &op.args);
        assert_eq!(show(&v), "1", "{cmd} on the promoted replica");
        model.apply(&op, &v);
    }
    let run = write_load(&mut c1, run.gen, model, 300, &Progress::default());
    assert!(run.error.is_none(), "{:?}", run.error);
    let model = run.model;

    // Re-point replica 2 at it: PSYNC2 continues the old primary's history.
    let partial_before = stat(&r1, "stats", "sync_partial_ok");
    let mut c2 = r2.conn();
    let port = r1.port().to_string();
    assert_eq!(
        raw(&mut c2, &strs(&["REPLICAOF", "127.0.0.1", &port])),
        Value::Okay
    );
    r1.wait_for_sync(&r2);
    assert_eq!(
        r2.info_field("replication", "master_port").as_deref(),
        Some(port.as_str())
    );
    assert_eq!(stat(&r1, "stats", "sync_full"), 0);
    assert_eq!(stat(&r1, "stats", "sync_partial_ok"), partial_before + 1);
    check_model(&mut c2, &model, "re-pointed replica");
    assert_same_answers(&r1, &r2, &model, "re-pointed replica");
    // The old primary no longer has replica 1's new writes.
    assert_ne!(primary.digest(), r1.digest());
}

// ---------------------------------------------------------------------------------------------
// 4. Full resync during a load, partial resync after a broken link
// ---------------------------------------------------------------------------------------------

#[test]
fn full_sync_during_load_and_partial_resync_after_a_broken_link() {
    let primary = builder().args(&["--repl-backlog-size", "64mb"]).start();
    let mut model = Model::default();
    let mut con = primary.conn();
    setup(&mut con, &mut model);
    let run = write_load(
        &mut con,
        Gen::new(0x5eed_f011),
        model,
        1000,
        &Progress::default(),
    );
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(stat(&primary, "stats", "sync_full"), 0);

    // Full sync: a replica attaches while the load goes on.
    let progress = Progress::default();
    let mut wcon = primary.conn();
    let (run, replica) = std::thread::scope(|s| {
        let (g, m, p) = (run.gen, run.model, &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, 1500, p));
        let _stop = StopOnPanic(&progress);
        wait_acked(&progress, 200, &writer);
        let replica = builder().replica_of(&primary).start();
        wait_link_up(&replica);
        (writer.join().expect("writer thread"), replica)
    });
    assert!(run.error.is_none(), "{:?}", run.error);
    assert_eq!(stat(&primary, "stats", "sync_full"), 1);
    assert_same_answers(&primary, &replica, &run.model, "after full sync");

    // Partial resync: freeze the replica, cut its link on the primary, keep writing,
    // then let it reconnect: it continues from the backlog.
    let partial_before = stat(&primary, "stats", "sync_partial_ok");
    let progress = Progress::default();
    let mut wcon = primary.conn();
    let run = std::thread::scope(|s| {
        let (g, m, p) = (run.gen, run.model, &progress);
        let writer = s.spawn(move || write_load(&mut wcon, g, m, 1500, p));
        let _stop = StopOnPanic(&progress);
        wait_acked(&progress, 200, &writer);
        replica.signal("STOP");
        let killed = int(&raw(
            &mut primary.conn(),
            &strs(&["CLIENT", "KILL", "TYPE", "replica"]),
        ));
        assert_eq!(killed, 1, "CLIENT KILL TYPE replica");
        let at_cut = progress.acked.load(Ordering::SeqCst);
        // These writes reach the replica only through the backlog.
        wait_acked(&progress, at_cut + 300, &writer);
        assert_eq!(
            primary
                .info_field("replication", "connected_slaves")
                .as_deref(),
            Some("0")
        );
        replica.signal("CONT");
        writer.join().expect("writer thread")
    });
    assert!(run.error.is_none(), "{:?}", run.error);
    wait_link_up(&replica);
    assert_same_answers(&primary, &replica, &run.model, "after partial resync");
    assert_eq!(
        stat(&primary, "stats", "sync_partial_ok"),
        partial_before + 1
    );
    assert_eq!(
        stat(&primary, "stats", "sync_full"),
        1,
        "no second full sync"
    );
    check_model(
        &mut replica.conn(),
        &run.model,
        "replica after partial resync",
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Commands refused in part by a limit
// ---------------------------------------------------------------------------------------------

/// A multi-item command that a configured limit (`bf-max-links`, `cf-max-expansions`)
/// refuses in part still changes the filter, so it replicates. The replica and an AOF
/// replay (which apply replicated/loaded writes under the hard ceilings only) must end
/// up with exactly the primary's filter: the items the primary refused stay out.
#[test]
fn partly_refused_commands_replay_identically() {
    let limits = ["--bf.bf-max-links", "3", "--bf.cf-max-expansions", "2"];
    let mut primary = builder()
        .args(&limits)
        .appendonly(true)
        .args(&["--appendfsync", "always"])
        .start();
    let replica = builder().args(&limits).replica_of(&primary).start();
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    let items: Vec<Vec<u8>> = (0..400).map(|i| format!("lim:{i}").into_bytes()).collect();

    // Each command below changes its filter and has items refused by the limit.
    let partly = |con: &mut Connection, head: &[&str], items: &[Vec<u8>]| {
        let r = per_item(&raw(con, &cmd_with(head, items)));
        let ok = r.iter().filter(|x| matches!(x, Some(0 | 1))).count();
        assert!(
            r.contains(&Some(1)) && ok < items.len(),
            "{head:?}: {ok} of {} applied",
            items.len()
        );
    };
    raw(
        &mut con,
        &strs(&["BF.RESERVE", "bf:lim", "0.01", "20", "EXPANSION", "1"]),
    );
    partly(&mut con, &["BF.MADD", "bf:lim"], &items[..100]);
    let head = [
        "BF.INSERT",
        "bf:ins",
        "CAPACITY",
        "20",
        "EXPANSION",
        "1",
        "ITEMS",
    ];
    partly(&mut con, &head, &items[..100]);
    raw(
        &mut con,
        &strs(&["CF.RESERVE", "cf:lim", "64", "EXPANSION", "1"]),
    );
    partly(&mut con, &["CF.INSERT", "cf:lim", "ITEMS"], &items);
    // Refused items in between: deletes make room in the first sub-filter.
    for it in &items[..40] {
        raw(
            &mut con,
            &cmd_with(&["CF.DEL", "cf:lim"], std::slice::from_ref(it)),
        );
    }
    partly(&mut con, &["CF.INSERT", "cf:lim", "ITEMS"], &items[200..]);
    let mut nx_items = items[..300].to_vec();
    nx_items.extend(items[..50].iter().cloned());
    partly(
        &mut con,
        &["CF.INSERTNX", "cf:nx", "CAPACITY", "64", "ITEMS"],
        &nx_items,
    );
    for key in ["bf:lim", "bf:ins"] {
        assert_eq!(info_ints(&mut con, "BF.INFO", key)["Number of filters"], 3);
    }
    for key in ["cf:lim", "cf:nx"] {
        assert_eq!(info_ints(&mut con, "CF.INFO", key)["Number of filters"], 2);
    }

    let keys: Vec<String> = ["bf:lim", "bf:ins", "cf:lim", "cf:nx"]
        .iter()
        .map(|k| k.to_string())
        .collect();
    let want = digest_values(&mut con, &keys);
    primary.wait_for_offset(&replica);
    assert_eq!(digest_values(&mut replica.conn(), &keys), want, "replica");
    primary.crash();
    primary.start_again();
    assert_eq!(
        digest_values(&mut primary.conn(), &keys),
        want,
        "after AOF replay"
    );
}

fn cmd_with(head: &[&str], items: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut a = strs(head);
    a.extend(items.iter().cloned());
    a
}
