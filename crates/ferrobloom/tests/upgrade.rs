//! Rolling upgrades: a replica or an AOF replay on a release whose sizing
//! rules differ builds its primary's links (docs/operations.md, "Rolling
//! upgrades").
//!
//! `make test` builds a second module with the test-only `sizing-variant`
//! feature (other sizing rules: every computed growth link and windowed link
//! one 512-bit block larger) and passes its path in
//! `FERROBLOOM_VARIANT_MODULE`. A stream that creates filters, grows scaling
//! chains of every layout, opens, grows and rotates windowed generations
//! (FERROBLOOM.CLOCK moves the primary's time) and fills NONSCALING windowed
//! filters runs on a primary of one build with a replica of the other, both
//! ways; the replica, and the primary's AOF replayed by the other build, end
//! with the primary's `DEBUG DIGEST-VALUE` for every key, and the replica
//! refused nothing. The same stream on two standalone servers of the two
//! builds gives different digests: without the shapes the replicas would
//! differ.

mod common;

use std::path::PathBuf;

use common::bf::{numbered, rawv, with_items};
use common::*;
use redis::{Connection, Value};

/// The variant module `make test` built, or `None` (the test then says it
/// skipped) when the variable is unset, i.e. when run by hand.
fn variant_module() -> Option<PathBuf> {
    match std::env::var("FERROBLOOM_VARIANT_MODULE") {
        Ok(p) if !p.is_empty() => {
            let path = PathBuf::from(&p);
            assert!(
                path.is_file(),
                "FERROBLOOM_VARIANT_MODULE={p} is not a file (make test builds it with \
                 --features ferrobloom/sizing-variant)"
            );
            Some(path)
        }
        _ => {
            eprintln!(
                "SKIPPED: FERROBLOOM_VARIANT_MODULE is unset: build a module with \
                 `--features ferrobloom/fault-injection,ferrobloom/sizing-variant` and set it \
                 to its path (make test does)"
            );
            None
        }
    }
}

const CHAINS: [&str; 4] = ["classic", "blocked", "paired", "redisbloom"];
const WINDOWED: [&str; 2] = ["w:scaling", "w:nonscaling"];
const W_S: u64 = 600;

fn keys() -> Vec<String> {
    let mut k: Vec<String> = CHAINS.iter().map(|l| format!("c:{l}")).collect();
    k.push("c:auto".into());
    k.extend(WINDOWED.iter().map(|s| s.to_string()));
    k
}

fn set_clock(con: &mut Connection, offset_ms: i64) {
    let r: i64 = exec(con, &["FERROBLOOM.CLOCK", &offset_ms.to_string()]).unwrap();
    assert_eq!(r, offset_ms);
}

/// Runs `cmd` and returns how many items the primary accepted (not errors).
fn accepted(con: &mut Connection, cmd: &[&str]) -> (usize, usize) {
    match rawv(con, cmd) {
        Value::Array(a) => {
            let errs = a
                .iter()
                .filter(|v| matches!(v, Value::ServerError(_)))
                .count();
            (a.len() - errs, errs)
        }
        Value::ServerError(_) => (0, 1),
        _ => (1, 0),
    }
}

/// The stream: returns the windowed items the primary accepted last (still
/// inside the window at the end) and the count it refused.
fn stream(con: &mut Connection) -> (Vec<String>, usize) {
    for l in CHAINS {
        let key = format!("c:{l}");
        exec::<Value>(
            con,
            &[
                "BF.RESERVE",
                &key,
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "LAYOUT",
                l,
            ],
        )
        .unwrap();
    }
    let opts = [
        "WINDOW",
        &W_S.to_string(),
        "CAPACITY",
        "1000",
        "ERROR",
        "0.01",
    ]
    .map(String::from);
    let mut scaling: Vec<&str> = vec!["BF.INSERT", "w:scaling"];
    scaling.extend(opts.iter().map(String::as_str));
    scaling.push("ITEMS");
    let mut nonscaling: Vec<&str> = vec!["BF.INSERT", "w:nonscaling"];
    nonscaling.extend(opts.iter().map(String::as_str));
    nonscaling.extend(["NONSCALING", "ITEMS"]);
    let mut refused = 0;
    let mut last = Vec::new();
    // 3 windows in steps of W/20, bursts every 7th step.
    for step in 0..60u64 {
        set_clock(con, (step * W_S * 1000 / 20) as i64);
        let n = if step % 7 == 3 { 400 } else { 40 };
        let items = numbered(&format!("s{step}"), n);
        for l in CHAINS {
            let key = format!("c:{l}");
            let (ok, errs) = accepted(con, &with_items(&format!("BF.MADD {key}"), &items[..n / 4]));
            assert_eq!((ok, errs), (n / 4, 0), "{key}");
            for it in items.iter().take(3) {
                exec::<Value>(con, &["BF.ADD", &key, &format!("a{it}")]).unwrap();
            }
        }
        exec::<Value>(con, &["BF.ADD", "c:auto", &format!("auto{step}")]).unwrap();
        exec::<Value>(
            con,
            &["BF.INSERT", "c:auto", "ITEMS", &format!("auto{step}x")],
        )
        .unwrap();
        let mut cmd = scaling.clone();
        cmd.extend(items.iter().map(String::as_str));
        let (ok, errs) = accepted(con, &cmd);
        assert_eq!((ok, errs), (n, 0), "w:scaling at step {step}");
        // The non-scaling filter: a generation (5 steps) gets more than a
        // window's capacity, so it fills and refuses ("non scaling filter is
        // full") near the end of each generation.
        let more = numbered(&format!("n{step}"), 1000 / 4 + n / 8);
        let mut cmd = nonscaling.clone();
        cmd.extend(more.iter().map(String::as_str));
        let (ok, errs) = accepted(con, &cmd);
        refused += errs;
        if step == 59 {
            last = more[..ok].to_vec();
        }
        exec::<Value>(con, &["BF.ADD", "w:nonscaling", &format!("one{step}")]).ok();
    }
    (last, refused)
}

fn digests(con: &mut Connection) -> Vec<String> {
    keys()
        .iter()
        .map(|k| {
            let v: Value = exec(con, &["DEBUG", "DIGEST-VALUE", k]).unwrap();
            show_value(&v, 100)
        })
        .collect()
}

/// Primary of `primary_module`, replica of `replica_module`; then the
/// primary's AOF replayed by `replica_module`.
fn mixed(primary_module: &PathBuf, replica_module: &PathBuf) {
    let mut primary = Server::builder()
        .module_path(primary_module)
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let replica = Server::builder()
        .module_path(replica_module)
        .replica_of(&primary)
        .start();
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    let (last, refused) = stream(&mut con);
    assert!(
        refused > 0,
        "the non-scaling windowed filter filled and refused"
    );
    let want = digests(&mut con);
    primary.wait_for_offset(&replica);
    let mut rcon = replica.conn();
    assert_eq!(digests(&mut rcon), want, "replica");
    // The replica holds every item the primary accepted last (the replica
    // reads at the primary's last time: its clock is behind it).
    let mut cmd = vec!["BF.MEXISTS", "w:nonscaling"];
    cmd.extend(last.iter().map(String::as_str));
    let found: Vec<i64> = exec(&mut rcon, &cmd).unwrap();
    assert!(!last.is_empty() && found.iter().all(|&f| f == 1));
    let log = replica.log();
    for bad in ["could not take", "sending an error"] {
        assert!(
            !log.contains(bad),
            "replica log mentions {bad:?}:\n{}",
            replica.log_tail(30)
        );
    }
    // The primary's AOF (its replicated commands) replayed by the other build.
    primary.stop(Stop::ShutdownNoSave);
    *primary.config_mut() = Server::builder()
        .module_path(replica_module)
        .appendonly(true)
        .aof_rdb_preamble(false);
    primary.start_again();
    assert_eq!(digests(&mut primary.conn()), want, "AOF replay");
}

#[test]
fn a_replica_of_other_sizing_rules_builds_the_primarys_links() {
    let Some(variant) = variant_module() else {
        return;
    };
    let normal = module_path().expect("the module");
    mixed(&normal, &variant);
}

#[test]
fn a_replica_of_this_release_builds_a_variant_primarys_links() {
    let Some(variant) = variant_module() else {
        return;
    };
    let normal = module_path().expect("the module");
    mixed(&variant, &normal);
}

/// Without the shapes, the replicas above would differ: the two builds size
/// the links of the same stream differently.
#[test]
fn the_two_builds_size_the_stream_differently() {
    let Some(variant) = variant_module() else {
        return;
    };
    let normal = module_path().expect("the module");
    let a = Server::builder().module_path(&normal).start();
    let b = Server::builder().module_path(&variant).start();
    let (da, db) = {
        let (mut ca, mut cb) = (a.conn(), b.conn());
        stream(&mut ca);
        stream(&mut cb);
        (digests(&mut ca), digests(&mut cb))
    };
    for (i, k) in keys().iter().enumerate() {
        // RedisBloom's layout keeps RedisBloom's own formula in both builds.
        if k == "c:redisbloom" {
            assert_eq!(da[i], db[i], "{k}");
        } else {
            assert_ne!(
                da[i], db[i],
                "{k}: the variant's rules must give other links"
            );
        }
    }
}
