//! Valkey 9 atomic slot migrations that fail on their own (not cancelled), on a
//! loopback 3-primary cluster (`failed_slot_migration`):
//!
//! 1. the target refuses: its `maxmemory` is too small for the incoming 64 MB filter, so
//!    the import stops with an out-of-memory error during the snapshot;
//! 2. the target stops answering (SIGSTOP) after it has loaded the whole snapshot, while
//!    the source streams writes, for longer than the migration's timeout (`repl-timeout`),
//!    then wakes up (SIGCONT). Before it sleeps, the target's copies of every key, the
//!    windowed filter included, have the source's DEBUG DIGEST-VALUE once the stream of
//!    writes has caught up, across a jump of the source's clock that turns the windowed
//!    filter's generations (its replicated writes carry the source's time).
//!
//! Each time the source reports the job `failed` (CLUSTER GETSLOTMIGRATIONS), still owns
//! the slot and holds every key with the same DEBUG DIGEST-VALUE, serves reads and writes,
//! and the target ends with no key of the slot; `INFO bf` gauges are exact on both sides
//! (the target's come back to what they were: the filters it had built from the snapshot
//! are freed with the aborted import, and counted out).

use std::process::Command;
use std::time::{Duration, Instant};

use super::common::cluster::*;
use super::common::gauges::*;
use super::common::*;
use super::slot_migration::*;
use redis::Value;

/// Keys of every kind in the slot of `tag` (a 64 MB filter among them), filled a little.
fn fill_slot(con: &mut redis::Connection, tag: &str) -> Vec<String> {
    let setup: [&[&str]; 5] = [
        &["BF.RESERVE", "big", "0.001", "37000000", "NONSCALING"],
        &["BF.RESERVE", "plain", "0.01", "1000"],
        &["BF.RESERVE", "win", "0.01", "1000", "WINDOW", "3600"],
        &["CF.RESERVE", "cf", "1000"],
        &["BF.RESERVE", "rb", "0.01", "1000", "LAYOUT", "redisbloom"],
    ];
    let mut keys = Vec::new();
    for cmd in setup {
        let key = format!("{tag}{}", cmd[1]);
        let mut a = cmd.to_vec();
        a[1] = &key;
        exec::<Value>(con, &a).unwrap();
        let add: &[&str] = if cmd[0].starts_with("BF") {
            &["BF.MADD", &key, "a", "b", "c"]
        } else {
            &["CF.INSERT", &key, "ITEMS", "a", "b", "c"]
        };
        exec::<Value>(con, add).unwrap();
        keys.push(key);
    }
    keys
}

fn signal(s: &Server, sig: &str) {
    let pid = s.pid().expect("the target's pid").to_string();
    let st = Command::new("kill").args([sig, &pid]).status().unwrap();
    assert!(st.success(), "kill {sig} {pid}");
}

/// The failed job's checks: source unchanged and serving, target empty, gauges exact.
fn after_failure(
    c: &Cluster,
    src: usize,
    dst: usize,
    slot: u16,
    keys: &[String],
    digests: &[String],
    what: &str,
) {
    let mut s = c.primaries[src].conn();
    assert_eq!(
        digest_values(&mut s, keys),
        digests,
        "{what}: the source changed"
    );
    assert_eq!(c.owner_of(&keys[0]), src, "{what}: the slot changed owner");
    wait_until(
        CLUSTER_TIMEOUT,
        "the target to drop the slot's keys",
        || {
            count_in_slot(&c.primaries[dst].server, slot) == 0
                && jobs(&mut c.primaries[dst].conn()).iter().all(|j| {
                    !matches!(
                        j.get("state").map(String::as_str),
                        Some("receiving-snapshot" | "waiting-for-paused" | "occurring")
                    )
                })
        },
    );
    for n in [src, dst] {
        assert_gauges_exact(&c.primaries[n].server, &format!("node {n} after {what}"));
    }
    // After the aborted import, a client still cannot send the replicated form (`AT`).
    let mut d = c.primaries[dst].conn();
    let own = format!("{}w", tag_on(c, dst, &[]).0);
    let e = exec_err(&mut d, &["BF.INSERT", &own, "AT", "1", "ITEMS", "x"]);
    assert!(e.contains("AT is only accepted"), "{what}: {e}");
    // The source serves reads and writes of the slot as before.
    let probe = format!("{what}-probe");
    assert_eq!(
        exec::<i64>(&mut s, &["BF.ADD", &keys[1], &probe]).unwrap(),
        1
    );
    assert_eq!(
        exec::<i64>(&mut s, &["BF.EXISTS", &keys[1], &probe]).unwrap(),
        1
    );
    assert_eq!(
        exec::<i64>(&mut s, &["BF.EXISTS", &keys[0], "a"]).unwrap(),
        1
    );
    assert_eq!(
        exec::<i64>(&mut s, &["CF.ADD", &keys[3], &probe]).unwrap(),
        1
    );
    assert_gauges_exact(
        &c.primaries[src].server,
        &format!("the source after writes ({what})"),
    );
}

fn job_message(c: &Cluster, n: usize, slot: u16) -> String {
    let range = format!("{slot}-{slot}");
    jobs(&mut c.primaries[n].conn())
        .into_iter()
        .find(|j| j.get("slot_ranges") == Some(&range))
        .and_then(|j| j.get("message").cloned())
        .unwrap_or_default()
}

#[test]
fn failed_slot_migration() {
    let probe = Server::start();
    if probe.kind() != ServerKind::Valkey9 {
        return; // no MIGRATESLOTS (see `atomic_slot_migration`)
    }
    drop(probe);
    let c = Cluster::start(3, false);
    let (src, dst) = (0, 1);
    let t0 = Instant::now();

    // 1. The target refuses the snapshot: out of memory.
    let (tag, slot) = tag_on(&c, src, &[]);
    let mut s = c.primaries[src].conn();
    let keys = fill_slot(&mut s, &tag);
    let before = digest_values(&mut s, &keys);
    let mut d = c.primaries[dst].conn();
    let room = c.primaries[dst].server.used_memory() + (8 << 20);
    exec::<Value>(&mut d, &["CONFIG", "SET", "maxmemory", &room.to_string()]).unwrap();
    exec::<Value>(&mut d, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]).unwrap();
    start_migration(&c, src, dst, slot);
    let state = wait_job(&c, src, slot);
    assert_eq!(state, "failed", "{}", job_message(&c, src, slot));
    println!("refused by the target: {:?}", job_message(&c, dst, slot));
    exec::<Value>(&mut d, &["CONFIG", "SET", "maxmemory", "0"]).unwrap();
    after_failure(
        &c,
        src,
        dst,
        slot,
        &keys,
        &before,
        "an out-of-memory import",
    );

    // 2. The target stops answering once it holds the whole snapshot.
    let (tag, slot) = tag_on(&c, src, &[slot]);
    let keys = fill_slot(&mut s, &tag);
    let before = digest_values(&mut s, &keys);
    for n in [src, dst] {
        let mut con = c.primaries[n].conn();
        // Keep the job streaming after the snapshot (it never pauses the source's writes
        // to hand the slot over), and fail it after 2 s without an answer.
        exec::<Value>(&mut con, &["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "1"]).unwrap();
        exec::<Value>(&mut con, &["CONFIG", "SET", "repl-timeout", "2"]).unwrap();
    }
    start_migration(&c, src, dst, slot);
    wait_until(CLUSTER_TIMEOUT, "the target to load the snapshot", || {
        count_in_slot(&c.primaries[dst].server, slot) == keys.len() as i64
    });
    // Writes streamed to the target while it is alive (windowed ones as `BF.INSERT … AT
    // <source's ms>`): once the stream has caught up, the target's copies, windowed
    // included, have the source's digests.
    for i in 0..300 {
        if i == 150 {
            // The source's clock jumps 40 minutes (test builds' FERROBLOOM.CLOCK; the
            // target's stays): the windowed filter's generations turn on the source, and
            // must turn the same on the target, which applies the source's time.
            let _: i64 = exec(&mut s, &["FERROBLOOM.CLOCK", "2400000"]).unwrap();
        }
        let item = format!("streamed{i}");
        exec::<Value>(&mut s, &["BF.ADD", &keys[1], &item]).unwrap();
        exec::<Value>(&mut s, &["BF.ADD", &keys[2], &item]).unwrap();
        exec::<Value>(&mut s, &["CF.ADD", &keys[3], &item]).unwrap();
    }
    let _: i64 = exec(&mut s, &["FERROBLOOM.CLOCK", "0"]).unwrap();
    let streamed = digest_values(&mut s, &keys);
    assert_ne!(streamed, before);
    wait_until(CLUSTER_TIMEOUT, "the target to apply the stream", || {
        digest_values(&mut d, &keys) == streamed
    });
    signal(&c.primaries[dst].server, "-STOP");
    exec::<Value>(&mut s, &["BF.ADD", &keys[2], "asleep"]).unwrap();
    let state = wait_job(&c, src, slot);
    std::thread::sleep(Duration::from_secs(3));
    signal(&c.primaries[dst].server, "-CONT");
    assert_eq!(state, "failed", "{}", job_message(&c, src, slot));
    println!("target asleep: {:?}", job_message(&c, src, slot));
    let before = {
        // The streamed writes are the source's own: it keeps them.
        let now = digest_values(&mut s, &keys);
        assert_ne!(now, before);
        now
    };
    for n in [src, dst] {
        let mut con = c.primaries[n].conn();
        exec::<Value>(&mut con, &["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "0"]).unwrap();
        exec::<Value>(&mut con, &["CONFIG", "SET", "repl-timeout", "60"]).unwrap();
    }
    after_failure(&c, src, dst, slot, &keys, &before, "a target asleep");
    println!("failed migrations: {:?}", t0.elapsed());
}
