//! Scale-out on Redis Cluster: ferrobloom does no sharding of its own; every filter is one
//! key in one hash slot, and Redis Cluster moves it with the standard tooling.
//!
//! - `every_command_declares_its_key`: for every registered BF/CF command, `COMMAND GETKEYS`
//!   finds exactly the key argument (what cluster routing and CROSSSLOT checks use) and
//!   `COMMAND INFO` flags reads `readonly` and the rest `write`.
//! - `cluster_scale_out` builds a 3-primary cluster with one replica per primary (module on
//!   every node) and checks, in order:
//!   1. every command sent to a node that does not own its slot gets `MOVED <slot> <owner>`
//!      without running (commandstats: `rejected_calls` grows, `calls` does not); on a
//!      `READONLY` replica read commands run and write commands are redirected;
//!   2. hash tags: `{user:42}:bf` and `{user:42}:cf` share a slot, a MULTI/EXEC touching
//!      both runs on their node, COPY within the tag works and COPY across slots is refused
//!      with CROSSSLOT;
//!   3. 10,000 filters (5,000 BF + 5,000 CF, 1-5 items each, created by every creating
//!      command) plus a Bloom filter whose DUMP payload is above 16 MiB and a cuckoo
//!      filter of about 1 MB sharing its hash tag, all written through redis-rs' cluster client;
//!   4. two `redis-cli --cluster reshard` runs (MIGRATE) that move the big filters' slot and
//!      a few hundred small filters between primaries;
//!   5. afterwards: the moved slots and keys are on their new owners (CLUSTER SLOTS,
//!      CLUSTER COUNTKEYSINSLOT, DBSIZE per node, a MOVED from the old owner), every key's
//!      DEBUG DIGEST-VALUE and BF.INFO/CF.INFO are unchanged, every inserted item of every
//!      filter is still found through the cluster client, the moved filters take writes on
//!      their new node, and every replica's DEBUG DIGEST equals its primary's.
//!
//! - `migrate_needs_room_on_the_target`: MIGRATE (what a reshard runs) between two servers
//!   fails while the target's `proto-max-bulk-len` or `bf.max-filter-memory` is below the
//!   filter, leaving it on the source unchanged, and succeeds once they are raised.
//!
//! Timings (reshard wall time, the big MIGRATE from SLOWLOG, the worst PING latency on the
//! source during the move) are printed, never asserted. See them with
//! `cargo test --release --test cluster -- --nocapture`.

#[path = "../common/mod.rs"]
mod common;
mod scale_out;
mod slot_migration;
mod slot_migration_failed;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::*;
use common::*;
use redis::cluster::{cluster_pipe, ClusterConnection};
use redis::{Connection, FromRedisValue, Value};

// ---------------------------------------------------------------------------------------------
// The command table
// ---------------------------------------------------------------------------------------------

/// A sample invocation of every command; `K` is replaced by the key. `write` = expected to be
/// flagged `write` (else `readonly`).
const COMMANDS: &[(&[&str], bool)] = &[
    (&["BF.RESERVE", "K", "0.01", "100"], true),
    (&["BF.ADD", "K", "a"], true),
    (&["BF.MADD", "K", "a", "b"], true),
    (
        &["BF.INSERT", "K", "CAPACITY", "10", "ITEMS", "a", "b"],
        true,
    ),
    (&["BF.EXISTS", "K", "a"], false),
    (&["BF.MEXISTS", "K", "a", "b"], false),
    (&["BF.INFO", "K"], false),
    (&["BF.CARD", "K"], false),
    (&["BF.SCANDUMP", "K", "0"], false),
    (&["BF.LOADCHUNK", "K", "1", "xyz"], true),
    (&["BF.DEBUG", "K"], false),
    (&["BF.MERGE", "K", "1", "K"], true),
    (&["CF.RESERVE", "K", "100"], true),
    (&["CF.ADD", "K", "a"], true),
    (&["CF.ADDNX", "K", "a"], true),
    (
        &["CF.INSERT", "K", "CAPACITY", "10", "ITEMS", "a", "b"],
        true,
    ),
    (&["CF.INSERTNX", "K", "NOCREATE", "ITEMS", "a"], true),
    (&["CF.EXISTS", "K", "a"], false),
    (&["CF.MEXISTS", "K", "a", "b"], false),
    (&["CF.COUNT", "K", "a"], false),
    (&["CF.DEL", "K", "a"], true),
    (&["CF.COMPACT", "K"], true),
    (&["CF.INFO", "K"], false),
    (&["CF.SCANDUMP", "K", "0"], false),
    (&["CF.LOADCHUNK", "K", "1", "xyz"], true),
    (&["CF.DEBUG", "K"], false),
];

fn with_key(args: &[&str], key: &str) -> redis::Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(if *a == "K" { key } else { *a });
    }
    c
}

fn command_flags(con: &mut Connection, name: &str) -> Vec<String> {
    let v: Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg(name)
        .query(con)
        .unwrap();
    let Value::Array(outer) = v else {
        panic!("COMMAND INFO {name}: {v:?}")
    };
    let Some(Value::Array(info)) = outer.first() else {
        panic!("COMMAND INFO {name}: {outer:?}")
    };
    Vec::<String>::from_redis_value(info[2].clone()).unwrap()
}

#[test]
fn every_command_declares_its_key() {
    let s = Server::start();
    let mut con = s.conn();

    // The table covers exactly the module's commands (test builds also have
    // the keyless FERROBLOOM.FAULT, see crates/ferrobloom/tests/fault.rs, and FERROBLOOM.CLOCK,
    // docs/windowed.md).
    let listed: BTreeSet<String> =
        exec::<Vec<String>>(&mut con, &["COMMAND", "LIST", "FILTERBY", "MODULE", "bf"])
            .unwrap()
            .into_iter()
            .map(|n| n.to_ascii_lowercase())
            .filter(|n| !n.starts_with("ferrobloom."))
            .collect();
    let table: BTreeSet<String> = COMMANDS
        .iter()
        .map(|(a, _)| a[0].to_ascii_lowercase())
        .collect();
    assert_eq!(
        listed, table,
        "COMMAND LIST FILTERBY MODULE bf vs the table"
    );

    for key in ["k", "{user:42}:bf", "a b\tc"] {
        for (args, write) in COMMANDS {
            let mut c = redis::cmd("COMMAND");
            c.arg("GETKEYS");
            for a in *args {
                c.arg(if *a == "K" { key } else { *a });
            }
            let keys: Vec<String> = c
                .query(&mut con)
                .unwrap_or_else(|e| panic!("COMMAND GETKEYS {args:?}: {e}"));
            // Every key argument is the key (BF.MERGE names it twice).
            let n = args.iter().filter(|a| **a == "K").count();
            assert_eq!(keys, vec![key.to_string(); n], "COMMAND GETKEYS {args:?}");

            let flags = command_flags(&mut con, args[0]);
            assert_eq!(
                flags.iter().any(|f| f == "write"),
                *write,
                "{} flags {flags:?}",
                args[0]
            );
            assert_eq!(
                flags.iter().any(|f| f == "readonly"),
                !*write,
                "{} flags {flags:?}",
                args[0]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// `INFO commandstats` of a node: command -> (calls, rejected_calls).
fn command_stats(con: &mut Connection) -> HashMap<String, (u64, u64)> {
    let text: String = redis::cmd("INFO").arg("commandstats").query(con).unwrap();
    let mut out = HashMap::new();
    for (k, v) in parse_info(&text) {
        let Some(name) = k.strip_prefix("cmdstat_") else {
            continue;
        };
        let field = |f: &str| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        out.insert(name.to_string(), (field("calls"), field("rejected_calls")));
    }
    out
}

const ZERO_DIGEST: &str = "0000000000000000000000000000000000000000";

/// DEBUG DIGEST-VALUE of every key on every primary: key -> (owner index, digest). Each key
/// must exist on exactly one primary.
fn digests(c: &Cluster, keys: &[String]) -> HashMap<String, (usize, String)> {
    let mut out: HashMap<String, (usize, String)> = HashMap::with_capacity(keys.len());
    for (i, p) in c.primaries.iter().enumerate() {
        let mut con = p.conn();
        for chunk in keys.chunks(500) {
            let v: Vec<String> = redis::cmd("DEBUG")
                .arg("DIGEST-VALUE")
                .arg(chunk)
                .query(&mut con)
                .unwrap();
            for (k, d) in chunk.iter().zip(v) {
                if d != ZERO_DIGEST {
                    if let Some((other, _)) = out.insert(k.clone(), (i, d)) {
                        panic!("{k} exists on primaries {other} and {i}");
                    }
                }
            }
        }
    }
    for k in keys {
        assert!(out.contains_key(k), "{k} exists on no primary");
    }
    out
}

fn dbsizes(c: &Cluster) -> Vec<usize> {
    c.primaries
        .iter()
        .map(|p| exec::<usize>(&mut p.conn(), &["DBSIZE"]).unwrap())
        .collect()
}

/// Runs the commands through the cluster client, 2,000 per cluster pipeline. Returns the
/// replies and how many commands were answered with MOVED on the first attempt.
///
/// redis-rs 1.8's sync cluster pipeline does not follow MOVED (it reports it as a failure,
/// redis-rs issue #1814) while single commands do, refreshing the client's slot map. So after
/// a reshard a pipeline that meets MOVED is retried once after one single command has made
/// the client learn the new layout. Only for commands that may run twice (`reads`).
fn run_all(cc: &mut ClusterConnection, cmds: &[redis::Cmd], reads: bool) -> (Vec<Value>, usize) {
    let mut out = Vec::with_capacity(cmds.len());
    let mut moved = 0;
    for chunk in cmds.chunks(2000) {
        let mut p = cluster_pipe();
        for c in chunk {
            p.add_command(c.clone());
        }
        match p.query::<Vec<Value>>(cc) {
            Ok(v) => out.extend(v),
            Err(e) => {
                let shown = e.to_string();
                let errs = e
                    .into_server_errors()
                    .unwrap_or_else(|| panic!("cluster pipeline: {shown}"));
                assert!(
                    reads && errs.iter().all(|(_, e)| e.code() == "MOVED"),
                    "cluster pipeline: {shown}"
                );
                moved += errs.len();
                let _: Value = chunk[errs[0].0].query(cc).unwrap();
                out.extend(p.query::<Vec<Value>>(cc).unwrap());
            }
        }
    }
    (out, moved)
}

fn digest_value(con: &mut Connection, key: &str) -> String {
    let v: Vec<String> = redis::cmd("DEBUG")
        .arg("DIGEST-VALUE")
        .arg(key)
        .query(con)
        .unwrap();
    v.into_iter().next().unwrap()
}

/// What a reshard needs from the target node, shown with MIGRATE between two servers (the
/// command `redis-cli --cluster reshard` runs per batch of keys): the filter's whole
/// serialized form travels as one RESTORE-ASKING argument, so the target's
/// `proto-max-bulk-len` must exceed it, and the target applies its own
/// `bf.max-filter-memory` to the incoming filter. A refused MIGRATE leaves the filter on the
/// source, unchanged.
#[test]
fn migrate_needs_room_on_the_target() {
    let src = Server::start();
    let dst = Server::start();
    let mut s = src.conn();
    let mut d = dst.conn();
    // ~1.2 MB of bits, filled enough that the payload does not compress below 1 MiB.
    exec::<()>(&mut s, &["BF.RESERVE", "f", "0.0001", "500000"]).unwrap();
    for start in (0..200_000).step_by(1000) {
        let mut c = redis::cmd("BF.MADD");
        c.arg("f");
        for j in start..start + 1000 {
            c.arg(format!("item-{j}"));
        }
        let _: Vec<i64> = c.query(&mut s).unwrap();
    }
    let payload: Vec<u8> = exec(&mut s, &["DUMP", "f"]).unwrap();
    assert!(payload.len() > 1 << 20, "payload {} bytes", payload.len());
    let digest = digest_value(&mut s, "f");
    let port = dst.port().to_string();
    let migrate =
        |s: &mut Connection| exec::<Value>(s, &["MIGRATE", "127.0.0.1", &port, "f", "0", "10000"]);
    let still_on_source = |s: &mut Connection, d: &mut Connection| {
        assert_eq!(digest_value(s, "f"), digest, "the source's filter changed");
        assert_eq!(exec::<i64>(d, &["EXISTS", "f"]).unwrap(), 0);
    };

    exec::<()>(&mut d, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]).unwrap();
    // The target answers the oversized bulk length and closes the connection, so the
    // source sees either that answer or a failed write, depending on timing.
    let e = err_text(migrate(&mut s));
    assert!(
        e == "ERR Target instance replied with error: ERR Protocol error: invalid bulk length"
            || e == "IOERR error or timeout writing to target instance",
        "MIGRATE above the target's proto-max-bulk-len: {e}"
    );
    still_on_source(&mut s, &mut d);
    exec::<()>(&mut d, &["CONFIG", "SET", "proto-max-bulk-len", "512mb"]).unwrap();

    exec::<()>(&mut d, &["CONFIG", "SET", "bf.max-filter-memory", "1mb"]).unwrap();
    assert_eq!(
        err_text(migrate(&mut s)),
        "ERR Target instance replied with error: ERR Bad data format"
    );
    assert!(
        dst.log().contains("ferrobloom: refusing"),
        "{}",
        dst.log_tail(5)
    );
    still_on_source(&mut s, &mut d);

    exec::<()>(&mut d, &["CONFIG", "SET", "bf.max-filter-memory", "4gb"]).unwrap();
    assert_eq!(migrate(&mut s).unwrap(), Value::Okay);
    assert_eq!(exec::<i64>(&mut s, &["EXISTS", "f"]).unwrap(), 0);
    assert_eq!(digest_value(&mut d, "f"), digest);
}

/// Writes to filters whose slot is migrating: a writer keeps adding items to new and
/// existing BF/CF keys in the moving slots through the cluster client while
/// `redis-cli --cluster reshard` moves them (MIGRATE); the client follows the `ASK`
/// redirects (a key not yet on the target, in a slot being imported) and `MOVED`
/// ones afterwards. Every acknowledged item is present once the reshard is over.
#[test]
fn writes_during_a_reshard_are_all_kept() {
    let c = Cluster::start(3, false);
    let moving: Vec<u16> = c.slots_of(0).into_iter().take(2000).collect();
    // Hash tags in 16 different moving slots.
    let moving_set: BTreeSet<u16> = moving.iter().copied().collect();
    let candidates: Vec<String> = (0..4000).map(|n| format!("{{w{n}}}")).collect();
    let mut seen = BTreeSet::new();
    let tags: Vec<String> = candidates
        .iter()
        .zip(c.key_slots(&candidates))
        .filter(|(_, s)| moving_set.contains(s) && seen.insert(*s))
        .map(|(t, _)| t.clone())
        .take(16)
        .collect();
    assert_eq!(tags.len(), 16);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let mut cc = c.client();
        let tags = tags.clone();
        std::thread::spawn(move || {
            let mut acked: Vec<(String, String)> = Vec::new();
            let mut errors = 0usize;
            let mut round = 0usize;
            while !stop.load(Ordering::Relaxed) || round < 20 {
                for (i, tag) in tags.iter().enumerate() {
                    // Each round a new key per tag (created on whichever node owns or
                    // imports the slot) and items into an older one.
                    for key in [
                        format!("w:{tag}:bf:{round}"),
                        format!("w:{tag}:bf:{}", round / 10),
                        format!("w:{tag}:cf:{round}"),
                        format!("w:{tag}:cf:{}", round / 10),
                    ] {
                        let item = format!("item-{round}-{i}");
                        let cmd = if key.contains(":bf:") {
                            "BF.ADD"
                        } else {
                            "CF.ADD"
                        };
                        match redis::cmd(cmd).arg(&key).arg(&item).query::<Value>(&mut cc) {
                            Ok(_) => acked.push((key, item)),
                            Err(_) => errors += 1,
                        }
                    }
                }
                round += 1;
            }
            (acked, errors, round)
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let (_, took) = c.reshard(0, 1, moving.len());
    stop.store(true, Ordering::Relaxed);
    let (acked, errors, rounds) = writer.join().unwrap();
    println!(
        "reshard of {} slots took {took:?}; {} writes acknowledged over {rounds} rounds, \
         {errors} refused",
        moving.len(),
        acked.len()
    );
    let owners = c.slot_owners();
    assert!(moving.iter().all(|s| owners[*s as usize] == 1));
    let mut cc = c.client();
    for (key, item) in &acked {
        let cmd = if key.contains(":bf:") {
            "BF.EXISTS"
        } else {
            "CF.EXISTS"
        };
        let present: i64 = redis::cmd(cmd).arg(key).arg(item).query(&mut cc).unwrap();
        assert_eq!(
            present, 1,
            "{key} lost {item} acknowledged during the reshard"
        );
    }
    // The client did take ASK redirects (ASKING on the importing node).
    let asking = c.primaries[1]
        .server
        .info("commandstats")
        .get("cmdstat_asking")
        .cloned()
        .unwrap_or_default();
    println!("ASKING on the target: {asking}");
    assert!(asking.contains("calls="), "no ASK redirect was followed");
}
