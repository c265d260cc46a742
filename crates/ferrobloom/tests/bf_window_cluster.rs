//! Windowed Bloom filters on a loopback Redis Cluster: the de-duplication
//! pipeline of `examples/dedup_pipeline.py` (redis-py and the Python package's
//! `ShardedBloomFilter`, installed from this checkout's `python/`) runs
//! with a 1 s window and catches every duplicate within the window with the
//! false-positive rate bounded; a reshard (MIGRATE) moves windowed filters
//! with their generations and times intact.

mod common;

use common::cluster::Cluster;
use common::*;
use redis::Value;
use std::path::PathBuf;
use std::process::Command;

/// A Python with this checkout's `ferrobloom` package (and redis-py): the venv
/// `make python-test` uses (`$FERROBLOOM_PY_VENV`, default
/// `~/.cache/ferrobloom-pyvenv`, created if missing), the package reinstalled
/// from `python/` with maturin's build in `$CARGO_TARGET_DIR-python` (as the
/// Makefile's) or this test target's tmp dir: incremental, seconds when
/// nothing changed.
fn python_with_package() -> String {
    let venv = std::env::var("FERROBLOOM_PY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
                .join(".cache/ferrobloom-pyvenv")
        });
    let py = venv.join("bin/python");
    let pip = venv.join("bin/pip");
    let run = |c: &mut Command| {
        let out = c.output().expect("run python/pip");
        assert!(
            out.status.success(),
            "{c:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if !py.exists() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    }
    let quiet = ["install", "--quiet", "--disable-pip-version-check"];
    run(Command::new(&pip).args(quiet).args(["maturin", "redis"]));
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(|d| format!("{d}-python"))
        .unwrap_or_else(|_| format!("{}/python", env!("CARGO_TARGET_TMPDIR")));
    run(Command::new(&pip)
        .args(quiet)
        .args(["--force-reinstall", "--no-deps"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../python"))
        .env("CARGO_TARGET_DIR", target));
    py.to_string_lossy().into_owned()
}

#[test]
fn window_dedup_pipeline_example_on_a_cluster() {
    let python = python_with_package();
    let c = Cluster::start(3, false);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/dedup_pipeline.py"
    );
    let port = c.primaries[0].port().to_string();
    let run = Command::new(&python)
        .arg(script)
        .args([
            "--port",
            &port,
            "--window",
            "1",
            "--duration",
            "6",
            "--rate",
            "4000",
            "--batch",
            "400",
            "--shards",
            "12",
        ])
        .output()
        .expect("run the example");
    let out = ProcOutput {
        status: run.status,
        stdout: String::from_utf8_lossy(&run.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&run.stderr).into_owned(),
    };
    println!("{}", out.stdout);
    assert!(
        out.success(),
        "pipeline failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("(false negatives: 0)"),
        "{}",
        out.stdout
    );
    // "false positives: F of N new events": F/N within 4 sigma of 1%.
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("false positives:"))
        .expect("false positive line");
    let nums: Vec<f64> = line
        .split(|ch: char| !ch.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| s.parse().unwrap())
        .collect();
    let (fp, n) = (nums[0], nums[1]);
    assert!(n > 10_000.0, "{line}");
    let p = 0.01;
    assert!(fp / n <= p + 4.0 * (p * (1.0 - p) / n).sqrt(), "{line}");
    let caught = out
        .stdout
        .lines()
        .find(|l| l.starts_with("duplicates caught:"))
        .unwrap();
    assert!(!caught.starts_with("duplicates caught: 0 "), "{caught}");
    // The filters spread over every primary.
    for n in &c.primaries {
        let keys: i64 = exec(&mut n.conn(), &["DBSIZE"]).unwrap();
        assert!(keys > 0, "a primary holds no shard");
    }
}

#[test]
fn window_filters_survive_a_reshard() {
    let c = Cluster::start(3, false);
    let mut cc = c.client();
    let keys: Vec<String> = (0..60).map(|i| format!("win:{i}")).collect();
    for k in &keys {
        let ok: String = redis::cmd("BF.RESERVE")
            .arg(k)
            .arg(0.01)
            .arg(1000)
            .arg("WINDOW")
            .arg(600)
            .query(&mut cc)
            .unwrap();
        assert_eq!(ok, "OK");
        let _: Value = redis::cmd("BF.MADD")
            .arg(k)
            .arg((0..50).map(|i| format!("{k}-{i}")).collect::<Vec<_>>())
            .query(&mut cc)
            .unwrap();
    }
    // DEBUG DIGEST-VALUE on the node that owns the key.
    let digest = |k: &str| -> Value {
        let mut con = c.primaries[c.owner_of(k)].conn();
        redis::cmd("DEBUG")
            .arg("DIGEST-VALUE")
            .arg(k)
            .query(&mut con)
            .unwrap()
    };
    let before: Vec<Value> = keys.iter().map(|k| digest(k)).collect();
    let moving = keys.iter().filter(|k| c.owner_of(k) == 0).count();
    assert!(moving > 0);
    c.reshard(0, 1, 16384 / 3 + 1);
    assert!(keys.iter().all(|k| c.owner_of(k) != 0));
    let mut cc = c.client();
    for (k, d) in keys.iter().zip(&before) {
        assert_eq!(&digest(k), d, "{k}");
        let r: Vec<i64> = redis::cmd("BF.MEXISTS")
            .arg(k)
            .arg((0..50).map(|i| format!("{k}-{i}")).collect::<Vec<_>>())
            .query(&mut cc)
            .unwrap();
        assert!(r.iter().all(|&x| x == 1), "{k}");
        let w: Vec<f64> = redis::cmd("BF.INFO")
            .arg(k)
            .arg("WINDOW")
            .query(&mut cc)
            .unwrap();
        assert_eq!(w, [600.0]);
    }
}
