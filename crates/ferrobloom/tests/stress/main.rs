//! Bounded stress test against a live server (issue #5, "Reliability").
//!
//! A fixed-seed generator sends random BF.* and CF.* commands with hostile arguments
//! (wrong arity, huge/negative/non-finite/malformed numbers, unknown and duplicated keywords,
//! empty and 1 MiB items, wrong key types, random and mutated LOADCHUNK data and headers,
//! random and mutated DUMP payloads with a correct CRC for RESTORE, COPY, RENAME, DEL, ...)
//! to 32 hostile keys, pipelined in batches. Any reply, success or error, is fine. What is
//! checked:
//!
//! - after every batch the server answers PING, and (after every batch, or every 1,000
//!   commands with smaller batches) two control filters (`ctl:bf`, `ctl:cf`) that no hostile
//!   command names still hold every item ever added to them (items are added at the start
//!   and inside every batch, interleaved with the hostile commands);
//! - every `DEBUG RELOAD` (every `RELOAD_EVERY` batches) succeeds and leaves `DEBUG DIGEST`
//!   unchanged, so whatever hostile state got stored round-trips through RDB; at the end the
//!   same holds across `SHUTDOWN SAVE` + a new process;
//! - `used_memory` stays below a bound derived from the per-filter memory cap (see
//!   `memory_bound`), the keyspace holds only the hostile and control keys, and the server
//!   process is still alive at the end;
//! - every module command (from `COMMAND LIST FILTERBY MODULE bf`) is generated, and in a long
//!   enough run each one got both success and error replies (so the generator reaches past
//!   argument parsing).
//!
//! Environment:
//! - `FERROBLOOM_STRESS_COMMANDS`: hostile commands to send (default `DEFAULT_COMMANDS`, the
//!   short form `make test` runs; `make stress` sends 1,000,000);
//! - `FERROBLOOM_STRESS_SEED`: generator seed (default fixed, so a failure reproduces);
//! - `FERROBLOOM_STRESS_BATCH`: commands per pipeline (default 1,000);
//! - `FERROBLOOM_STRESS_RELOAD_EVERY`: batches between checked DEBUG RELOADs (default 10);
//! - `FERROBLOOM_STRESS_VERBOSE=1`: also print the error replies by command and text.
//!
//! Under valgrind (`make stress VALGRIND=1`), `REDIS_SERVER` points at a wrapper script and
//! `FERROBLOOM_START_TIMEOUT_SECS` gives the slow start more time.

#[path = "../common/mod.rs"]
mod common;
mod gen;
mod pool;
mod values;

use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::time::{Duration, Instant};

use common::rdb::{rdb_len, seal, ModulePayload};
use common::rng::Rng;
use common::*;
use pool::{sample_key, Pool};
use redis::{Connection, Value};
use values::hostile_key;

const DEFAULT_COMMANDS: u64 = 100_000;
const DEFAULT_BATCH: u64 = 1_000;
const DEFAULT_RELOAD_EVERY: u64 = 10;
const DEFAULT_SEED: u64 = 0x5eed_b10f_c0ff_ee01;

const HOSTILE_KEYS: usize = 32;
/// `bf.max-filter-memory` of the test server: no single filter (hostile capacities, hostile
/// LOADCHUNK/RESTORE headers) may be larger.
const MAX_FILTER_MEMORY: u64 = 32 << 20;
const CONTROL_BF: &[u8] = b"ctl:bf";
const CONTROL_CF: &[u8] = b"ctl:cf";
/// Control items added before the run, and per 1,000 hostile commands during it (to each
/// control filter). The control filters are checked at least every 1,000 commands.
const CONTROL_INITIAL: usize = 2_000;
const CONTROL_PER_1000: u64 = 4;
const MIB: usize = 1 << 20;
/// One item in this many is a big one (about 1 MiB).
const BIG_ITEM_ONE_IN: u64 = 5_000;
/// Entries kept per pool of real headers, chunks and DUMP payloads.
const POOL_CAP: usize = 24;
/// DUMP payloads larger than this are not kept for mutation.
const POOL_DUMP_MAX: usize = 256 << 10;
/// SCANDUMP chunks larger than this are not kept.
const POOL_CHUNK_MAX: usize = 1 << 20;

/// Every command the module registers (checked against the server's command table).
const MODULE_COMMANDS: &[&str] = &[
    "bf.reserve",
    "bf.add",
    "bf.madd",
    "bf.insert",
    "bf.exists",
    "bf.mexists",
    "bf.info",
    "bf.card",
    "bf.scandump",
    "bf.loadchunk",
    "bf.debug",
    "bf.merge",
    "cf.reserve",
    "cf.add",
    "cf.addnx",
    "cf.insert",
    "cf.insertnx",
    "cf.exists",
    "cf.mexists",
    "cf.count",
    "cf.del",
    "cf.compact",
    "cf.info",
    "cf.scandump",
    "cf.loadchunk",
    "cf.debug",
];

// ---------------------------------------------------------------------------------------------
// The generator's state (its methods are in `gen.rs`, the hostile values in `values.rs`)
// ---------------------------------------------------------------------------------------------

struct Gen {
    r: Rng,
    /// 4 MiB of random bytes: big items are slices of it with a fresh prefix.
    big: Vec<u8>,
    pool: Pool,
    /// Module type ids (BF, CF) and the RDB version trailer, from real DUMPs.
    module_ids: [u64; 2],
    rdb_version: [u8; 2],
    /// The filter type (0 BF, 1 CF) of the command being generated, if any.
    bias: Option<usize>,
    /// Items of 1 MiB or more generated.
    big_items: u64,
}

/// One command; an error reply comes back as `Value::ServerError`.
fn raw(con: &mut Connection, args: &[&[u8]]) -> Value {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        c.arg(*a);
    }
    let mut p = redis::pipe();
    p.add_command(c).ignore_errors();
    let mut v: Vec<Value> = p
        .query(con)
        .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(args[0])));
    v.pop().expect("one reply")
}

// ---------------------------------------------------------------------------------------------
// Control filters
// ---------------------------------------------------------------------------------------------

fn control_item(n: usize) -> Vec<u8> {
    let mut v = format!("ctl-{n}-").into_bytes();
    v.extend_from_slice(&(n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    v
}

/// Every control item is still in both control filters.
fn check_controls(con: &mut Connection, n: usize, when: &str) {
    let items: Vec<Vec<u8>> = (0..n).map(control_item).collect();
    for (name, key) in [("BF.MEXISTS", CONTROL_BF), ("CF.MEXISTS", CONTROL_CF)] {
        for (c, chunk) in items.chunks(10_000).enumerate() {
            let mut cmd = redis::cmd(name);
            cmd.arg(key);
            for it in chunk {
                cmd.arg(it.as_slice());
            }
            let got: Vec<i64> = cmd
                .query(con)
                .unwrap_or_else(|e| panic!("{name} on the control filter {when}: {e}"));
            let lost: Vec<usize> = got
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != 1)
                .map(|(i, _)| c * 10_000 + i)
                .collect();
            assert!(
                lost.is_empty(),
                "{when}: {} of {n} control items lost from {} (first: {:?})",
                lost.len(),
                String::from_utf8_lossy(key),
                &lost[..lost.len().min(10)]
            );
        }
    }
}

fn ping(con: &mut Connection, when: &str) {
    let r: String = redis::cmd("PING")
        .query(con)
        .unwrap_or_else(|e| panic!("PING {when}: {e}"));
    assert_eq!(r, "PONG", "PING {when}");
}

fn digest(con: &mut Connection) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query(con)
        .expect("DEBUG DIGEST")
}

fn used_memory(con: &mut Connection) -> (u64, u64) {
    let text: String = redis::cmd("INFO").arg("memory").query(con).expect("INFO");
    let info = parse_info(&text);
    let get = |f: &str| -> u64 { info.get(f).and_then(|v| v.parse().ok()).expect(f) };
    (get("used_memory"), get("used_memory_peak"))
}

/// The bound on `used_memory` after a batch: every hostile key can hold at most one filter of
/// `MAX_FILTER_MEMORY` (creation, growth, LOADCHUNK and RESTORE all check the cap; COPY and
/// RENAME only move or duplicate values between the 32 keys, and strings and lists are tiny),
/// plus 25% for per-filter overhead and allocator size classes, plus the two control filters
/// (well under 1 MiB) and 128 MiB for the server itself, client buffers (a batch with 1-4 MiB
/// items) and frees still pending on the lazy-free thread.
fn memory_bound() -> u64 {
    HOSTILE_KEYS as u64 * MAX_FILTER_MEMORY * 5 / 4 + (128 << 20)
}

fn env_u64(name: &str, default: u64) -> u64 {
    match env::var(name) {
        Ok(v) if !v.is_empty() => v
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        _ => default,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Any reply is fine.
    Hostile,
    /// Hostile, but must not fail (callbacks on any state; RESTORE of an untouched DUMP).
    Strict,
    /// A control-filter add.
    Control,
}

/// A command for a failure message (long arguments cut).
fn show(c: &[Vec<u8>]) -> String {
    c.iter()
        .map(|a| {
            let t = String::from_utf8_lossy(&a[..a.len().min(60)]).into_owned();
            if a.len() > 60 {
                format!("{t:?}..({} bytes)", a.len())
            } else {
                format!("{t:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Default)]
struct Stats {
    /// Per command name: (sent, error replies).
    per_command: BTreeMap<String, (u64, u64)>,
    /// Per (command name, error text): count (printed with FERROBLOOM_STRESS_VERBOSE=1).
    error_texts: BTreeMap<(String, String), u64>,
    hostile: u64,
    errors: u64,
    batches: u64,
    reloads: u64,
    max_used: u64,
}

// ---------------------------------------------------------------------------------------------
// Regressions found by the stress test
// ---------------------------------------------------------------------------------------------

/// A CF.LOADCHUNK header may claim more items than its (empty) tables hold; CF.ADD then
/// pushed the count past the slot total, and the filter's own RDB payload was refused on
/// load: COPY failed ("module key failed to copy") and DEBUG RELOAD lost the dataset.
#[test]
fn cf_lying_item_count_survives_copy_and_reload() {
    let mut s = Server::start();
    let mut con = s.conn();
    assert_eq!(
        raw(
            &mut con,
            &[
                b"CF.RESERVE",
                b"src",
                b"4",
                b"BUCKETSIZE",
                b"2",
                b"EXPANSION",
                b"1"
            ]
        ),
        Value::Okay
    );
    let Value::Array(a) = raw(&mut con, &[b"CF.SCANDUMP", b"src", b"0"]) else {
        panic!("CF.SCANDUMP")
    };
    let Some(Value::BulkString(mut h)) = a.get(1).cloned() else {
        panic!("header: {a:?}")
    };
    // 2 buckets of 2 slots; the header claims all 4 are taken.
    assert_eq!(common::rdb::get_u64(&h, 24), 2, "base buckets");
    common::rdb::put_u64(&mut h, 32, 4);
    assert_eq!(
        raw(&mut con, &[b"CF.LOADCHUNK", b"k", b"1", &h]),
        Value::Okay
    );
    assert_eq!(raw(&mut con, &[b"CF.ADD", b"k", b"x"]), Value::Int(1));
    assert_eq!(raw(&mut con, &[b"COPY", b"k", b"k2"]), Value::Int(1));
    assert_eq!(raw(&mut con, &[b"DEBUG", b"RELOAD"]), Value::Okay);
    for k in [b"k".as_slice(), b"k2"] {
        assert_eq!(raw(&mut con, &[b"CF.EXISTS", k, b"x"]), Value::Int(1));
    }
    let Value::Array(info) = raw(&mut con, &[b"CF.INFO", b"k"]) else {
        panic!("CF.INFO")
    };
    assert_eq!(
        info.get(7),
        Some(&Value::Int(4)),
        "count capped at the slots: {info:?}"
    );
    // Graceful stop: under valgrind (`make stress VALGRIND=1`) this writes the leak summary.
    drop(con);
    s.stop(Stop::ShutdownNoSave);
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

#[test]
fn stress_hostile_commands_against_a_live_server() {
    let total = env_u64("FERROBLOOM_STRESS_COMMANDS", DEFAULT_COMMANDS);
    let seed = env_u64("FERROBLOOM_STRESS_SEED", DEFAULT_SEED);
    let batch = env_u64("FERROBLOOM_STRESS_BATCH", DEFAULT_BATCH).max(1);
    let reload_every = env_u64("FERROBLOOM_STRESS_RELOAD_EVERY", DEFAULT_RELOAD_EVERY).max(1);
    let verbose = env_u64("FERROBLOOM_STRESS_VERBOSE", 0) != 0;
    let check_every = (1_000 / batch).max(1);
    eprintln!(
        "stress: {total} hostile commands, seed {seed:#x}, batches of {batch}, DEBUG RELOAD \
         every {reload_every} batches"
    );

    let mut s = Server::builder()
        .config("bf.max-filter-memory", &[&MAX_FILTER_MEMORY.to_string()])
        .config("rdbcompression", &["no"])
        .start();
    let mut con = s.conn();
    // valgrind runs are 20-50x slower: generous, but never hang forever.
    let slow = Some(Duration::from_secs(1800));
    con.set_read_timeout(slow).unwrap();
    con.set_write_timeout(slow).unwrap();
    let started = Instant::now();

    // The generator covers every command the module registers.
    let listed: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("bf")
        .query(&mut con)
        .expect("COMMAND LIST FILTERBY MODULE bf");
    // (Test builds also have FERROBLOOM.FAULT, which injects panics on purpose:
    // crates/ferrobloom/tests/fault.rs, and FERROBLOOM.CLOCK, which moves the windows' clock.)
    let listed: BTreeSet<String> = listed
        .into_iter()
        .map(|c| c.to_lowercase())
        .filter(|c| !c.starts_with("ferrobloom."))
        .collect();
    let ours: BTreeSet<String> = MODULE_COMMANDS.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        listed, ours,
        "the stress generator must cover every module command"
    );

    let mut r = Rng(seed);
    let mut big = r.bytes(4 * MIB);
    big[0] = b'B';
    let mut g = Gen {
        r,
        big,
        pool: Pool::default(),
        module_ids: [0, 0],
        rdb_version: [0, 0],
        bias: None,
        big_items: 0,
    };

    // Control filters.
    raw(&mut con, &[b"BF.RESERVE", CONTROL_BF, b"0.001", b"100000"]);
    raw(&mut con, &[b"CF.RESERVE", CONTROL_CF, b"100000"]);
    let mut control_n = 0usize;
    let mut p = redis::pipe();
    for _ in 0..CONTROL_INITIAL {
        let it = control_item(control_n);
        p.cmd("BF.ADD").arg(CONTROL_BF).arg(&it).ignore();
        p.cmd("CF.ADD").arg(CONTROL_CF).arg(&it).ignore();
        control_n += 1;
    }
    p.query::<()>(&mut con).expect("control items");
    check_controls(&mut con, control_n, "at the start");

    // Seed filters of diverse shapes in the hostile keyspace: their headers, chunks and DUMPs
    // seed the pools (and they are the hostile run's first victims).
    let seeds: &[&[&str]] = &[
        &["BF.RESERVE", "k:0", "0.01", "100", "EXPANSION", "2"],
        &["BF.RESERVE", "k:1", "0.001", "50", "NONSCALING"],
        &["BF.RESERVE", "k:2", "0.1", "10", "EXPANSION", "1"],
        &["BF.RESERVE", "k:3", "0.0001", "3000"],
        &[
            "CF.RESERVE",
            "k:4",
            "64",
            "BUCKETSIZE",
            "2",
            "EXPANSION",
            "1",
        ],
        &[
            "CF.RESERVE",
            "k:5",
            "100",
            "BUCKETSIZE",
            "4",
            "ERROR",
            "0.0001",
        ],
        &[
            "CF.RESERVE",
            "k:6",
            "16",
            "BUCKETSIZE",
            "1",
            "EXPANSION",
            "2",
        ],
        &["CF.RESERVE", "k:7", "2000", "MAXITERATIONS", "5"],
    ];
    for cmd in seeds {
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(raw(&mut con, &args), Value::Okay, "{cmd:?}");
        let is_bf = cmd[0].starts_with("BF");
        let mut p = redis::pipe();
        for i in 0..300 {
            let add = if is_bf { "BF.ADD" } else { "CF.ADD" };
            p.cmd(add).arg(cmd[1]).arg(format!("seed-{i}")).ignore();
        }
        if !is_bf {
            for i in 0..100 {
                p.cmd("CF.DEL")
                    .arg(cmd[1])
                    .arg(format!("seed-{i}"))
                    .ignore();
            }
        }
        p.ignore_errors().query::<()>(&mut con).expect("seed items");
    }
    for i in 0..8 {
        let key = hostile_key(i);
        sample_key(&mut g, &mut con, &key);
        let d = common::rdb::dump(&mut con, &key);
        let p = ModulePayload::parse(&d);
        g.module_ids[usize::from(i >= 4)] = p.module_id;
        g.rdb_version = p.rdb_version;
    }
    for t in 0..2 {
        assert!(!g.pool.headers[t].is_empty() && !g.pool.dumps[t].is_empty());
    }
    assert_ne!(g.module_ids[0], g.module_ids[1]);

    let mut st = Stats::default();
    let mut sent = 0u64;
    while sent < total {
        let n = batch.min(total - sent);
        let mut cmds: Vec<Vec<Vec<u8>>> = Vec::with_capacity(n as usize + 16);
        // Per command: hostile (any reply), strict (hostile, must not fail), or control.
        let mut kinds: Vec<Kind> = Vec::with_capacity(n as usize + 16);
        let mut generated = Vec::new();
        let mut produced = 0u64;
        // Control adds go at random positions among the hostile commands.
        let added = (control_n - CONTROL_INITIAL) as u64;
        let per_batch = ((sent + n) * CONTROL_PER_1000 / 1_000).saturating_sub(added);
        let control_at: BTreeSet<u64> = (0..per_batch).map(|_| g.r.below(n)).collect();
        let mut control_items = Vec::new();
        while produced < n {
            if control_at.contains(&produced) && control_items.len() < control_at.len() {
                let it = control_item(control_n + control_items.len());
                cmds.push(vec![b"BF.ADD".to_vec(), CONTROL_BF.to_vec(), it.clone()]);
                cmds.push(vec![b"CF.ADD".to_vec(), CONTROL_CF.to_vec(), it.clone()]);
                kinds.extend([Kind::Control, Kind::Control]);
                control_items.push(it);
            }
            g.hostile(&mut generated);
            produced += generated.len() as u64;
            for (c, strict) in generated.drain(..) {
                cmds.push(c);
                kinds.push(if strict { Kind::Strict } else { Kind::Hostile });
            }
        }
        let mut p = redis::pipe();
        for c in &cmds {
            let mut rc = redis::cmd(std::str::from_utf8(&c[0]).unwrap());
            for a in &c[1..] {
                rc.arg(a.as_slice());
            }
            p.add_command(rc);
        }
        let replies: Vec<Value> = p.ignore_errors().query(&mut con).unwrap_or_else(|e| {
            panic!(
                "batch {} (commands {}..{}, seed {seed:#x}) failed: {e}; server exit: {:?}",
                st.batches,
                sent,
                sent + produced,
                s.exit_status()
            )
        });
        assert_eq!(replies.len(), cmds.len());
        for ((c, v), kind) in cmds.iter().zip(&replies).zip(&kinds) {
            if *kind != Kind::Control {
                let name = String::from_utf8_lossy(&c[0]).to_lowercase();
                let e = st.per_command.entry(name.clone()).or_default();
                e.0 += 1;
                st.hostile += 1;
                if let Some(text) = value_err_text(v) {
                    let allowed = match (*kind, &c[0][..]) {
                        (Kind::Strict, _) => false,
                        // COPY fails only for a copy onto itself, never in the module.
                        (_, b"COPY") => text == "ERR source and destination objects are the same",
                        _ => true,
                    };
                    assert!(
                        allowed,
                        "batch {} (seed {seed:#x}): {} answered {text}",
                        st.batches,
                        show(c)
                    );
                    e.1 += 1;
                    st.errors += 1;
                    if verbose {
                        let text: String = text.chars().take(70).collect();
                        *st.error_texts.entry((name, text)).or_default() += 1;
                    }
                }
            } else {
                // Control adds: BF.ADD answers 0 or 1 (0 on a false positive), CF.ADD 1.
                let ok = matches!(
                    (&c[0][..], v),
                    (b"BF.ADD", Value::Int(0 | 1)) | (b"CF.ADD", Value::Int(1))
                );
                assert!(
                    ok,
                    "control add {:?} in batch {}: {v:?}",
                    String::from_utf8_lossy(&c[0]),
                    st.batches
                );
            }
        }
        control_n += control_items.len();
        sent += produced;
        st.batches += 1;

        let when = format!("after batch {} ({sent} commands)", st.batches);
        ping(&mut con, &when);
        if st.batches % check_every == 0 || sent >= total {
            check_controls(&mut con, control_n, &when);
        }
        let (used, _) = used_memory(&mut con);
        st.max_used = st.max_used.max(used);
        assert!(
            used <= memory_bound(),
            "{when}: used_memory {used} above the bound {}",
            memory_bound()
        );

        // Refresh the pools from a random hostile key.
        let k = g.key();
        sample_key(&mut g, &mut con, &k);

        if st.batches % reload_every == 0 || sent >= total {
            let before = digest(&mut con);
            let v = raw(&mut con, &[b"DEBUG", b"RELOAD"]);
            assert_eq!(v, Value::Okay, "DEBUG RELOAD {when}: {}", s.log_tail(20));
            assert_eq!(
                digest(&mut con),
                before,
                "DEBUG RELOAD changed the dataset {when}"
            );
            check_controls(&mut con, control_n, &format!("DEBUG RELOAD {when}"));
            st.reloads += 1;
        }
    }

    // The keyspace holds only the hostile and control keys.
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).expect("KEYS");
    let allowed: BTreeSet<Vec<u8>> = (0..HOSTILE_KEYS)
        .map(hostile_key)
        .chain([CONTROL_BF.to_vec(), CONTROL_CF.to_vec()])
        .collect();
    for k in &keys {
        assert!(
            allowed.contains(k),
            "unexpected key {:?}",
            String::from_utf8_lossy(k)
        );
    }

    // The run's peak (client buffers included; reported, not bounded: the bound is on what
    // stays allocated).
    let (_, peak) = used_memory(&mut con);

    // A new process loads what the old one saved.
    let before = digest(&mut con);
    drop(con);
    s.stop(Stop::ShutdownSave);
    s.start_again();
    let mut con = s.conn();
    con.set_read_timeout(slow).unwrap();
    assert_eq!(
        digest(&mut con),
        before,
        "SHUTDOWN SAVE + restart changed the dataset"
    );
    check_controls(&mut con, control_n, "after SHUTDOWN SAVE + restart");

    let (used, _) = used_memory(&mut con);
    st.max_used = st.max_used.max(used);
    assert!(s.exit_status().is_none() && s.is_alive(), "server died");
    let elapsed = started.elapsed();

    eprintln!("stress: per command (sent / error replies):");
    for (name, (n, e)) in &st.per_command {
        eprintln!("  {name:<16} {n:>9} {e:>9}");
    }
    if verbose {
        eprintln!("stress: error replies by command and text:");
        for ((name, text), n) in &st.error_texts {
            eprintln!("  {name:<14} {n:>8}  {text}");
        }
    }
    eprintln!(
        "stress: {} hostile commands sent ({} error replies), {} batches, {} DEBUG RELOADs, \
         {} items of 1 MiB or more, {} control items checked in each filter, 0 lost, 0 crashes; \
         used_memory max {:.1} MiB \
         (bound {:.0} MiB), used_memory_peak {:.1} MiB; elapsed {:.1} s",
        st.hostile,
        st.errors,
        st.batches,
        st.reloads,
        g.big_items,
        control_n,
        st.max_used as f64 / MIB as f64,
        memory_bound() as f64 / MIB as f64,
        peak as f64 / MIB as f64,
        elapsed.as_secs_f64()
    );

    // The generator reaches past argument parsing: in a run long enough, every module command
    // got success replies as well as errors.
    for c in MODULE_COMMANDS {
        let (n, e) = st.per_command.get(*c).copied().unwrap_or_default();
        assert!(n > 0, "{c} was never sent");
        if total >= DEFAULT_COMMANDS {
            assert!(e > 0, "{c}: no error reply in {n}");
            assert!(e < n, "{c}: only error replies ({n})");
        }
    }

    // Free everything before a graceful stop, so a valgrind run's leak check is quick.
    redis::cmd("FLUSHALL")
        .query::<()>(&mut con)
        .expect("FLUSHALL");
    drop(con);
    s.stop(Stop::ShutdownNoSave);
}
