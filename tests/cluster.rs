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

mod common;

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
    // the keyless FERROBLOOM.FAULT, see tests/fault.rs, and FERROBLOOM.CLOCK,
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

// ---------------------------------------------------------------------------------------------
// The data set
// ---------------------------------------------------------------------------------------------

const SMALL_FILTERS: usize = 5_000; // of each kind
const BIG_BF_CAPACITY: u64 = 8_000_000;
const BIG_BF_ERROR: &str = "0.0001";
const BIG_BF_ITEMS: usize = 2_000_000;
const BIG_CF_CAPACITY: u64 = 1_000_000;
const BIG_CF_ITEMS: usize = 500_000;
/// Slots moved by each reshard.
const RESHARD_SLOTS: usize = 300;

struct Small {
    key: String,
    bloom: bool,
    items: Vec<String>,
}

fn small_filters() -> Vec<Small> {
    let mut v = Vec::with_capacity(2 * SMALL_FILTERS);
    for bloom in [true, false] {
        for i in 0..SMALL_FILTERS {
            let key = format!("{}:{i}", if bloom { "bf" } else { "cf" });
            let items = (0..1 + i % 5).map(|j| format!("{key}/item{j}")).collect();
            v.push(Small { key, bloom, items });
        }
    }
    v
}

/// The commands that create and fill one small filter (each creating command in turn).
fn create_cmds(f: &Small, i: usize) -> Vec<redis::Cmd> {
    let mut v = Vec::new();
    let mut c = |args: &[&str], items: &[String]| {
        let mut c = redis::cmd(args[0]);
        c.arg(&args[1..]).arg(items);
        v.push(c);
    };
    let k = f.key.as_str();
    match (f.bloom, i % 3) {
        (true, 0) => {
            c(&["BF.RESERVE", k, "0.001", "100"], &[]);
            c(&["BF.MADD", k], &f.items);
        }
        (true, 1) => {
            c(&["BF.ADD", k], &f.items[..1]);
            if f.items.len() > 1 {
                c(&["BF.MADD", k], &f.items[1..]);
            }
        }
        (true, _) => c(
            &["BF.INSERT", k, "CAPACITY", "50", "ERROR", "0.01", "ITEMS"],
            &f.items,
        ),
        (false, 0) => {
            c(&["CF.RESERVE", k, "64"], &[]);
            for it in &f.items {
                c(&["CF.ADD", k], std::slice::from_ref(it));
            }
        }
        (false, 1) => c(&["CF.INSERT", k, "ITEMS"], &f.items),
        (false, _) => {
            c(&["CF.INSERTNX", k, "CAPACITY", "32", "ITEMS"], &f.items);
            c(&["CF.ADDNX", k], &f.items[..1]);
        }
    }
    v
}

fn info_cmd(f: &Small) -> redis::Cmd {
    let mut c = redis::cmd(if f.bloom { "BF.INFO" } else { "CF.INFO" });
    c.arg(&f.key);
    c
}

fn big_bf_item(n: usize) -> String {
    format!("big-bloom-item-{n}")
}

fn big_cf_item(n: usize) -> String {
    format!("big-cuckoo-item-{n}")
}

/// Adds items `0..n` to `key` through the cluster client, 1,000 per command.
fn fill_big(cc: &mut ClusterConnection, cmd: &str, key: &str, n: usize, item: fn(usize) -> String) {
    let mut start = 0;
    while start < n {
        let mut p = cluster_pipe();
        for _ in 0..50 {
            if start >= n {
                break;
            }
            let end = (start + 1000).min(n);
            let mut c = redis::cmd(cmd);
            c.arg(key);
            if cmd.ends_with("INSERT") {
                c.arg("NOCREATE").arg("ITEMS");
            }
            for j in start..end {
                c.arg(item(j));
            }
            p.add_command(c);
            start = end;
        }
        let _: Vec<Value> = p.query(cc).unwrap();
    }
}

/// Every item `0..n` of `key` is reported present (`*MEXISTS`) through the cluster client.
fn check_big(
    cc: &mut ClusterConnection,
    cmd: &str,
    key: &str,
    n: usize,
    item: fn(usize) -> String,
) {
    let mut start = 0;
    while start < n {
        let mut p = cluster_pipe();
        let first = start;
        for _ in 0..50 {
            if start >= n {
                break;
            }
            let end = (start + 1000).min(n);
            let mut c = redis::cmd(cmd);
            c.arg(key);
            for j in start..end {
                c.arg(item(j));
            }
            p.add_command(c);
            start = end;
        }
        let v: Vec<Vec<i64>> = p.query(cc).unwrap();
        let missing = v.iter().flatten().filter(|&&x| x != 1).count();
        assert_eq!(
            missing, 0,
            "{key}: {missing} of items {first}..{start} missing"
        );
    }
}

fn digest_value(con: &mut Connection, key: &str) -> String {
    let v: Vec<String> = redis::cmd("DEBUG")
        .arg("DIGEST-VALUE")
        .arg(key)
        .query(con)
        .unwrap();
    v.into_iter().next().unwrap()
}

/// The slow-log entries of `node` whose arguments mention `needle`: (command, microseconds).
fn slowlog_with(node: &Node, needle: &str) -> Vec<(String, u64)> {
    let v: Value = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(1000)
        .query(&mut node.conn())
        .unwrap();
    let Value::Array(entries) = v else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        let Value::Array(f) = e else { continue };
        let (Some(Value::Int(us)), Some(Value::Array(args))) = (f.get(2), f.get(3)) else {
            continue;
        };
        let args: Vec<String> = args
            .iter()
            .filter_map(|a| String::from_redis_value(a.clone()).ok())
            .collect();
        if args.iter().any(|a| a == needle) {
            out.push((args[0].clone(), *us as u64));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The cluster test
// ---------------------------------------------------------------------------------------------

#[test]
fn cluster_scale_out() {
    let t0 = Instant::now();
    let c = Cluster::start(3, true);
    println!("cluster of 6 nodes up in {:?}", t0.elapsed());

    redirects(&c);
    hash_tags(&c);
    migration(&c);
    println!("cluster_scale_out total {:?}", t0.elapsed());
}

/// MOVED from a primary that does not own the slot (the module never runs); READONLY
/// replicas serve read commands and redirect write commands.
fn redirects(c: &Cluster) {
    let key = "redirect-probe";
    let slot = c.key_slot(key);
    let owner = c.owner_of(key);
    let owner_port = c.primaries[owner].port();
    let wrong = &c.primaries[(owner + 1) % c.primaries.len()];
    let mut con = wrong.conn();
    let before = command_stats(&mut con);
    for (args, _) in COMMANDS {
        let e = err_text(with_key(args, key).query::<Value>(&mut con));
        assert_eq!(
            e,
            format!("MOVED {slot} 127.0.0.1:{owner_port}"),
            "{args:?}"
        );
    }
    let after = command_stats(&mut con);
    for (args, _) in COMMANDS {
        let name = args[0].to_ascii_lowercase();
        let (calls0, rej0) = before.get(&name).copied().unwrap_or_default();
        let (calls1, rej1) = after.get(&name).copied().unwrap_or_default();
        assert_eq!(
            calls1, calls0,
            "{name} ran on a node that does not own the slot"
        );
        assert_eq!(rej1, rej0 + 1, "{name}: rejected_calls");
    }

    // The owner's replica, in READONLY mode: reads run there (the probe key does not exist,
    // so they answer the module's own error or an empty reply), writes go to the primary.
    let mut rcon = c.replicas[owner].conn();
    let _: () = redis::cmd("READONLY").query(&mut rcon).unwrap();
    let before = command_stats(&mut rcon);
    for (args, write) in COMMANDS {
        let r = with_key(args, key).query::<Value>(&mut rcon);
        if *write {
            assert_eq!(
                err_text(r),
                format!("MOVED {slot} 127.0.0.1:{owner_port}"),
                "{args:?} on a replica"
            );
        } else if let Err(e) = r {
            assert_ne!(
                e.code(),
                Some("MOVED"),
                "{args:?} on a READONLY replica: {e}"
            );
        }
    }
    let after = command_stats(&mut rcon);
    for (args, write) in COMMANDS {
        let name = args[0].to_ascii_lowercase();
        let calls = |m: &HashMap<String, (u64, u64)>| m.get(&name).map_or(0, |v| v.0);
        let ran = calls(&after) - calls(&before);
        assert_eq!(
            ran,
            u64::from(!*write),
            "{name}: calls on the READONLY replica"
        );
    }
    // Without READONLY the replica redirects reads too.
    let mut rcon = c.replicas[owner].conn();
    let e = err_text(exec::<Value>(&mut rcon, &["BF.EXISTS", key, "a"]));
    assert_eq!(e, format!("MOVED {slot} 127.0.0.1:{owner_port}"));
}

/// Filters sharing a hash tag share a slot and node: transactions and COPY across them work;
/// COPY across slots is refused.
fn hash_tags(c: &Cluster) {
    let (bf, cf) = ("{user:42}:bf", "{user:42}:cf");
    let mut cc = c.client();
    assert_eq!(exec_c::<i64>(&mut cc, &["BF.ADD", bf, "alice"]), 1);
    assert_eq!(exec_c::<i64>(&mut cc, &["CF.ADD", cf, "alice"]), 1);
    let slot = c.key_slot(bf);
    assert_eq!(c.key_slot(cf), slot);
    assert_eq!(c.key_slot("user:42"), slot, "the slot is the tag's");
    let node = &c.primaries[c.owner_of(bf)];
    let mut con = node.conn();
    assert_eq!(
        exec::<i64>(&mut con, &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]).unwrap(),
        2
    );

    // One transaction on the owning node touching both filters.
    let (a, b, c1, d, e, f): (i64, i64, i64, i64, i64, i64) = redis::pipe()
        .atomic()
        .cmd("BF.ADD")
        .arg(bf)
        .arg("bob")
        .cmd("CF.ADD")
        .arg(cf)
        .arg("bob")
        .cmd("BF.EXISTS")
        .arg(bf)
        .arg("bob")
        .cmd("CF.EXISTS")
        .arg(cf)
        .arg("bob")
        .cmd("BF.CARD")
        .arg(bf)
        .cmd("CF.COUNT")
        .arg(cf)
        .arg("alice")
        .query(&mut con)
        .unwrap();
    assert_eq!((a, b, c1, d, e, f), (1, 1, 1, 1, 2, 1));

    // A transaction that also touches another slot never runs: the foreign key is refused
    // while queuing (MOVED, another node's slot) or at EXEC (CROSSSLOT, a slot of this
    // node), and EXEC aborts.
    let r = redis::pipe()
        .atomic()
        .cmd("BF.ADD")
        .arg(bf)
        .arg("carol")
        .cmd("BF.ADD")
        .arg("{user:43}:bf")
        .arg("carol")
        .query::<Value>(&mut con);
    assert!(r.is_err(), "a cross-slot transaction ran: {r:?}");
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", bf, "carol"]).unwrap(),
        0
    );

    // COPY within the tag, through the cluster client (routed by the first key).
    for (src, dst) in [(bf, "{user:42}:bf-copy"), (cf, "{user:42}:cf-copy")] {
        assert_eq!(exec_c::<i64>(&mut cc, &["COPY", src, dst]), 1);
        assert_eq!(digest_value(&mut con, src), digest_value(&mut con, dst));
    }
    assert_eq!(
        exec_c::<Vec<i64>>(
            &mut cc,
            &["BF.MEXISTS", "{user:42}:bf-copy", "alice", "bob"]
        ),
        vec![1, 1]
    );
    assert_eq!(
        exec_c::<i64>(&mut cc, &["CF.COUNT", "{user:42}:cf-copy", "bob"]),
        1
    );

    // Across slots: refused before the module or COPY runs, on any node.
    assert_ne!(c.key_slot("{user:43}:bf"), slot);
    for n in &c.primaries {
        let e = exec_err(&mut n.conn(), &["COPY", bf, "{user:43}:bf"]);
        assert_eq!(e, "CROSSSLOT Keys in request don't hash to the same slot");
    }
    let r = redis::cmd("COPY")
        .arg(bf)
        .arg("{user:43}:bf")
        .query::<Value>(&mut cc);
    assert_eq!(
        err_text(r),
        "CROSSSLOT Keys in request don't hash to the same slot",
        "cluster client COPY across slots"
    );
    for n in &c.primaries {
        let s = c.key_slot("{user:43}:bf").to_string();
        assert_eq!(
            exec::<i64>(&mut n.conn(), &["CLUSTER", "COUNTKEYSINSLOT", &s]).unwrap(),
            0
        );
    }
}

fn exec_c<T: FromRedisValue>(cc: &mut ClusterConnection, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    c.arg(&args[1..]);
    c.query(cc)
        .unwrap_or_else(|e| panic!("{args:?} through the cluster client: {e}"))
}

/// The key whose hash tag lands in one of `slots` (searched with CLUSTER KEYSLOT).
fn tag_in(c: &Cluster, slots: &BTreeSet<u16>) -> String {
    let tags: Vec<String> = (0..20_000).map(|n| format!("{{big{n}}}")).collect();
    let found = c
        .key_slots(&tags)
        .iter()
        .position(|s| slots.contains(s))
        .expect("no tag in the moving slots");
    tags[found].clone()
}

fn migration(c: &Cluster) {
    let mut cc = c.client();
    let smalls = small_filters();
    let mut small_keys: Vec<String> = smalls.iter().map(|f| f.key.clone()).collect();

    // Which slots each reshard will move: redis-cli takes the source's lowest slots.
    let moves1: BTreeSet<u16> = c.slots_of(0).into_iter().take(RESHARD_SLOTS).collect();
    let moves2: BTreeSet<u16> = c.slots_of(2).into_iter().take(RESHARD_SLOTS).collect();

    // --- write ---
    let t = Instant::now();
    let cmds: Vec<redis::Cmd> = smalls
        .iter()
        .enumerate()
        .flat_map(|(i, f)| create_cmds(f, i))
        .collect();
    let (replies, _) = run_all(&mut cc, &cmds, false);
    for (cmd, r) in cmds.iter().zip(replies) {
        assert!(
            value_err_text(&r).is_none(),
            "{:?}: {r:?}",
            String::from_utf8_lossy(&cmd.get_packed_command())
        );
    }
    println!(
        "{} small filters written ({} commands) through the cluster client in {:?}",
        smalls.len(),
        cmds.len(),
        t.elapsed()
    );

    let tag = tag_in(c, &moves1);
    let big_bf = format!("big:{tag}:bf");
    let big_cf = format!("big:{tag}:cf");
    let big_slot = c.key_slot(&big_bf);
    assert_eq!(c.key_slot(&big_cf), big_slot);
    let t = Instant::now();
    exec_c::<()>(
        &mut cc,
        &[
            "BF.RESERVE",
            &big_bf,
            BIG_BF_ERROR,
            &BIG_BF_CAPACITY.to_string(),
            "NONSCALING",
        ],
    );
    fill_big(&mut cc, "BF.MADD", &big_bf, BIG_BF_ITEMS, big_bf_item);
    exec_c::<()>(
        &mut cc,
        &["CF.RESERVE", &big_cf, &BIG_CF_CAPACITY.to_string()],
    );
    fill_big(&mut cc, "CF.INSERT", &big_cf, BIG_CF_ITEMS, big_cf_item);
    println!(
        "big filters {big_bf} ({BIG_BF_ITEMS} items) and {big_cf} ({BIG_CF_ITEMS} items) \
         filled in {:?}",
        t.elapsed()
    );
    let dump_len = |cc: &mut ClusterConnection, key: &str| {
        let mut c = redis::cmd("DUMP");
        c.arg(key);
        c.query::<Vec<u8>>(cc).unwrap().len()
    };
    let bf_dump = dump_len(&mut cc, &big_bf);
    let cf_dump = dump_len(&mut cc, &big_cf);
    println!("DUMP payloads: {big_bf} {bf_dump} bytes, {big_cf} {cf_dump} bytes");
    assert!(
        bf_dump > 16 << 20,
        "the big Bloom filter's DUMP payload is only {bf_dump} bytes"
    );

    // --- state before ---
    small_keys.extend(
        [
            "{user:42}:bf",
            "{user:42}:cf",
            "{user:42}:bf-copy",
            "{user:42}:cf-copy",
        ]
        .map(String::from),
    );
    let mut all_keys = small_keys.clone();
    all_keys.push(big_bf.clone());
    all_keys.push(big_cf.clone());
    let slots_before = c.key_slots(&all_keys);
    let digests_before = digests(c, &all_keys);
    let sizes_before = dbsizes(c);
    assert_eq!(sizes_before.iter().sum::<usize>(), all_keys.len());
    let info_cmds: Vec<redis::Cmd> = smalls.iter().map(info_cmd).collect();
    let (infos_before, _) = run_all(&mut cc, &info_cmds, true);
    let big_infos = |cc: &mut ClusterConnection| -> (Value, Value, i64) {
        (
            exec_c(cc, &["BF.INFO", &big_bf]),
            exec_c(cc, &["CF.INFO", &big_cf]),
            exec_c(cc, &["BF.CARD", &big_bf]),
        )
    };
    let big_before = big_infos(&mut cc);
    let countkeys = |n: &Node| {
        exec::<i64>(
            &mut n.conn(),
            &["CLUSTER", "COUNTKEYSINSLOT", &big_slot.to_string()],
        )
        .unwrap()
    };
    assert_eq!(countkeys(&c.primaries[0]), 2);
    assert_eq!(countkeys(&c.primaries[1]), 0);

    // --- reshard 1: primaries[0] -> primaries[1], with the big filters ---
    for n in [&c.primaries[0], &c.primaries[1]] {
        let mut con = n.conn();
        exec::<()>(
            &mut con,
            &["CONFIG", "SET", "slowlog-log-slower-than", "1000"],
        )
        .unwrap();
        exec::<()>(&mut con, &["SLOWLOG", "RESET"]).unwrap();
    }
    // Worst PING latency on the source while it migrates.
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = {
        let stop = stop.clone();
        let mut con = c.primaries[0].conn();
        std::thread::spawn(move || {
            let mut worst = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let _: String = redis::cmd("PING").query(&mut con).unwrap();
                worst = worst.max(t.elapsed());
                std::thread::sleep(Duration::from_millis(1));
            }
            worst
        })
    };
    let (_, took1) = c.reshard(0, 1, RESHARD_SLOTS);
    stop.store(true, Ordering::Relaxed);
    let worst_ping = pinger.join().unwrap();
    let migrate = slowlog_with(&c.primaries[0], &big_bf);
    let restore = slowlog_with(&c.primaries[1], &big_bf);
    println!(
        "reshard 1 ({RESHARD_SLOTS} slots, incl. the big filters) took {took1:?}; slowlog on \
         the source: {migrate:?}; on the target: {restore:?}; worst PING on the source \
         during the reshard: {worst_ping:?}"
    );

    // --- reshard 2: primaries[2] -> primaries[0] ---
    let (_, took2) = c.reshard(2, 0, RESHARD_SLOTS);
    println!("reshard 2 ({RESHARD_SLOTS} slots) took {took2:?}");

    // --- where everything is now ---
    let owners = c.slot_owners();
    for s in &moves1 {
        assert_eq!(owners[*s as usize], 1, "slot {s} (reshard 1)");
    }
    for s in &moves2 {
        assert_eq!(owners[*s as usize], 0, "slot {s} (reshard 2)");
    }
    assert_eq!(countkeys(&c.primaries[0]), 0, "big filters left the source");
    assert_eq!(countkeys(&c.primaries[1]), 2, "big filters on the target");
    let e = exec_err(&mut c.primaries[0].conn(), &["BF.EXISTS", &big_bf, "x"]);
    assert_eq!(
        e,
        format!("MOVED {big_slot} {}", c.primaries[1].addr()),
        "the old owner redirects"
    );

    let digests_after = digests(c, &all_keys);
    let mut moved = [0usize; 2];
    for (k, s) in all_keys.iter().zip(&slots_before) {
        let (owner0, d0) = &digests_before[k];
        let (owner1, d1) = &digests_after[k];
        assert_eq!(d0, d1, "{k}: DEBUG DIGEST-VALUE changed by the move");
        let expected = if moves1.contains(s) {
            moved[0] += 1;
            1
        } else if moves2.contains(s) {
            moved[1] += 1;
            0
        } else {
            *owner0
        };
        assert_eq!(*owner1, expected, "{k} (slot {s}) is on the wrong primary");
        assert_eq!(owners[*s as usize], *owner1, "{k}: CLUSTER SLOTS vs data");
    }
    println!(
        "keys moved: {} by reshard 1, {} by reshard 2",
        moved[0], moved[1]
    );
    assert!(
        moved[0] > 50 && moved[1] > 50,
        "too few keys moved: {moved:?}"
    );
    let sizes_after = dbsizes(c);
    assert_eq!(
        sizes_after,
        vec![
            sizes_before[0] - moved[0] + moved[1],
            sizes_before[1] + moved[0],
            sizes_before[2] - moved[1],
        ]
    );

    // --- every item of every filter, through the cluster client (it follows MOVED) ---
    let t = Instant::now();
    let (infos_after, redirected) = run_all(&mut cc, &info_cmds, true);
    println!(
        "cluster client: {redirected} commands of the first pipelines after the reshards met MOVED"
    );
    for ((f, a), b) in smalls.iter().zip(&infos_before).zip(&infos_after) {
        assert_eq!(a, b, "{}: INFO changed", f.key);
    }
    let exists: Vec<redis::Cmd> = smalls
        .iter()
        .map(|f| {
            let mut c = redis::cmd(if f.bloom { "BF.MEXISTS" } else { "CF.MEXISTS" });
            c.arg(&f.key).arg(&f.items);
            c
        })
        .collect();
    let (replies, _) = run_all(&mut cc, &exists, true);
    for (f, r) in smalls.iter().zip(replies) {
        let r = Vec::<i64>::from_redis_value(r).unwrap();
        assert_eq!(r, vec![1; f.items.len()], "{}: items lost", f.key);
    }
    check_big(&mut cc, "BF.MEXISTS", &big_bf, BIG_BF_ITEMS, big_bf_item);
    check_big(&mut cc, "CF.MEXISTS", &big_cf, BIG_CF_ITEMS, big_cf_item);
    assert_eq!(big_infos(&mut cc), big_before);
    assert_eq!(
        big_before.2, BIG_BF_ITEMS as i64,
        "BF.CARD of the big filter"
    );
    println!("every item re-checked in {:?}", t.elapsed());

    // The moved filters take writes on their new node.
    assert_eq!(
        exec_c::<i64>(&mut cc, &["BF.ADD", &big_bf, "after-the-move"]),
        1
    );
    assert_eq!(
        exec_c::<i64>(&mut cc, &["CF.ADD", &big_cf, "after-the-move"]),
        1
    );
    for (f, s) in smalls.iter().zip(&slots_before) {
        if !moves2.contains(s) {
            continue;
        }
        let (add, exists) = if f.bloom {
            ("BF.ADD", "BF.EXISTS")
        } else {
            ("CF.ADD", "CF.EXISTS")
        };
        assert_eq!(exec_c::<i64>(&mut cc, &[add, &f.key, "after-the-move"]), 1);
        assert_eq!(
            exec_c::<i64>(&mut cc, &[exists, &f.key, "after-the-move"]),
            1
        );
    }

    // --- replicas follow their primaries ---
    for (p, r) in c.primaries.iter().zip(&c.replicas) {
        p.server.wait_for_offset(&r.server);
        assert_eq!(
            p.server.digest(),
            r.server.digest(),
            "replica of {}",
            p.addr()
        );
    }
    let mut rcon = c.replicas[1].conn();
    assert_ne!(digest_value(&mut rcon, &big_bf), ZERO_DIGEST);
    let mut rcon = c.replicas[0].conn();
    assert_eq!(
        digest_value(&mut rcon, &big_bf),
        ZERO_DIGEST,
        "the old replica dropped it"
    );
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
