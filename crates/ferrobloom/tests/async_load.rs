//! Diskless replica loading with `repl-diskless-load swapdb` (ferrobloom declares
//! `REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD`; without it the server logs "Skipping
//! diskless-load because there are modules that are not aware of async replication" and
//! goes through the disk), on every server of `make test`:
//!
//! 1. a server holding its own filters becomes a replica: it loads from the socket,
//!    keeping its old dataset aside; the primary dies during the load: the old dataset is
//!    back exactly (DEBUG DIGEST) and the `INFO bf` gauges are exact;
//! 2. another primary: the load completes, the replica equals it, gauges exact;
//! 3. a full resync from the same primary (its backlog overflowed) loads asynchronously
//!    (`async_loading:1`) while the replica keeps answering reads from the old data, then
//!    swaps: identical to the primary, gauges exact;
//! 4. the same, but the primary dies during the asynchronous load: the replica keeps its
//!    dataset exactly, gauges exact.

mod common;

use std::time::Duration;

use common::gauges::*;
use common::*;
use redis::{Connection, Value};

fn exists(con: &mut Connection, key: &str, item: &str) -> i64 {
    redis::cmd("BF.EXISTS")
        .arg(key)
        .arg(item)
        .query(con)
        .unwrap()
}

/// A primary with 60 filters of every kind; `rdb-key-save-delay` slows its RDB stream
/// (microseconds per key) so a load can be watched and interrupted.
fn primary(delay_us: u32) -> Server {
    let p = Server::builder()
        .args(&[
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
            "--rdb-key-save-delay",
            &delay_us.to_string(),
            // Small, so that one transaction overflows it (`overflow_backlog`).
            "--repl-backlog-size",
            "16384",
        ])
        .start();
    let mut con = p.conn();
    for i in 0..20 {
        let items: Vec<String> = (0..50).map(|j| format!("p{i}-{j}")).collect();
        exec::<Value>(
            &mut con,
            &[
                "BF.RESERVE",
                &format!("w{i}"),
                "0.01",
                "1000",
                "WINDOW",
                "3600",
            ],
        )
        .unwrap();
        let mut a = vec!["BF.MADD".to_string(), format!("w{i}")];
        a.extend(items.iter().cloned());
        exec::<Value>(&mut con, &a.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        a[0] = "BF.MADD".into();
        a[1] = format!("b{i}");
        exec::<Value>(&mut con, &a.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        let mut c = vec!["CF.INSERT".to_string(), format!("c{i}"), "ITEMS".into()];
        c.extend(items);
        exec::<Value>(&mut con, &c.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        // About 1 MB each: the stream arrives in many pieces, so a load can be cut short.
        exec::<Value>(
            &mut con,
            &["BF.RESERVE", &format!("m{i}"), "0.01", "800000"],
        )
        .unwrap();
        exec::<Value>(&mut con, &["BF.ADD", &format!("m{i}"), "a"]).unwrap();
    }
    p
}

/// Kills a primary and its fork child (which would go on streaming the RDB).
fn kill_primary(p: &mut Server) {
    if let Some(pid) = p.pid() {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in children.split_whitespace() {
            let _ = std::process::Command::new("kill")
                .args(["-9", child])
                .status();
        }
    }
    p.stop(Stop::Kill);
}

fn loading(s: &Server, field: &str) -> bool {
    s.info_field("persistence", field).as_deref() == Some("1")
}

/// Makes `p`'s next sync with its replica a full one from the same history: the replica
/// is dropped and, in the same transaction, more is written than the backlog holds.
fn overflow_backlog(p: &Server, key: &str) {
    let mut con = p.conn();
    let items: Vec<String> = (0..20000).map(|i| i.to_string()).collect();
    let mut madd = redis::cmd("BF.MADD");
    madd.arg(key).arg(&items);
    let (): () = redis::pipe()
        .atomic()
        .cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("replica")
        .ignore()
        .add_command(madd)
        .ignore()
        .query(&mut con)
        .unwrap();
}

fn set_delay(p: &Server, us: u32) {
    exec::<Value>(
        &mut p.conn(),
        &["CONFIG", "SET", "rdb-key-save-delay", &us.to_string()],
    )
    .unwrap();
}

#[test]
fn diskless_async_replica_loading() {
    // The future replica, with data of its own.
    let r = Server::builder()
        // Serve clients between every KB loaded (the default, 2 MB, is more than the
        // whole dataset here).
        .args(&[
            "--repl-diskless-load",
            "swapdb",
            "--loading-process-events-interval-bytes",
            "1024",
        ])
        .start();
    let mut rc = r.conn();
    for i in 0..10 {
        exec::<Value>(&mut rc, &["BF.MADD", &format!("old{i}"), "x", "y"]).unwrap();
        exec::<Value>(&mut rc, &["CF.ADD", &format!("oldc{i}"), "x"]).unwrap();
    }
    let old_digest = r.digest();
    assert_gauges_exact(&r, "before");

    // 1. The first load is aborted: the primary dies in the middle.
    let mut p1 = primary(100_000); // 80 keys: about 8 s of stream
    exec::<Value>(&mut rc, &["REPLICAOF", "127.0.0.1", &p1.port().to_string()]).unwrap();
    wait_until(Duration::from_secs(20), "the replica to load", || {
        loading(&r, "loading") || loading(&r, "async_loading")
    });
    kill_primary(&mut p1);
    wait_until(Duration::from_secs(20), "the load to be aborted", || {
        !loading(&r, "loading") && !loading(&r, "async_loading")
    });
    assert_eq!(
        r.digest(),
        old_digest,
        "the old dataset after an aborted load: {:?}\n{}",
        exec::<Vec<String>>(&mut rc, &["KEYS", "*"]),
        r.log_tail(20)
    );
    assert_gauges_settle(&r, "after an aborted load", Duration::from_secs(10));

    // 2. Another primary: the load completes.
    let mut p2 = primary(0);
    exec::<Value>(&mut rc, &["REPLICAOF", "127.0.0.1", &p2.port().to_string()]).unwrap();
    p2.wait_for_sync(&r);
    assert_eq!(r.digest(), p2.digest(), "replica equals its primary");
    assert_eq!(
        exists(&mut rc, "old3", "x"),
        0,
        "the old data was swapped out"
    );
    wait_until(
        Duration::from_secs(10),
        "the old dataset to be freed",
        || gauges(&r)["bloom_filters"] == 60,
    );
    assert_gauges_exact(&r, "after the swap");

    // 3. A full resync from the same primary loads asynchronously, serving reads.
    set_delay(&p2, 50_000); // 81 keys: about 4 s
    overflow_backlog(&p2, "overflow");
    wait_until(Duration::from_secs(20), "an asynchronous load", || {
        loading(&r, "async_loading")
    });
    assert_eq!(exists(&mut rc, "b3", "p3-7"), 1, "a read during the load");
    p2.wait_for_sync(&r);
    assert_eq!(r.digest(), p2.digest(), "replica equals its primary");
    wait_until(
        Duration::from_secs(10),
        "the old dataset to be freed",
        || gauges(&r)["bloom_filters"] == 61,
    );
    assert_gauges_exact(&r, "after an asynchronous load");
    assert_gauges_exact(&p2, "on the primary");

    // 4. The primary dies during an asynchronous load.
    let before = r.digest();
    set_delay(&p2, 200_000);
    overflow_backlog(&p2, "overflow2");
    wait_until(Duration::from_secs(20), "an asynchronous load", || {
        loading(&r, "async_loading")
    });
    kill_primary(&mut p2);
    wait_until(Duration::from_secs(20), "the load to be aborted", || {
        !loading(&r, "async_loading")
    });
    assert_eq!(
        r.digest(),
        before,
        "the dataset after an aborted asynchronous load"
    );
    assert_gauges_exact(&r, "after an aborted asynchronous load");
    assert!(
        !r.log().contains("Skipping diskless-load"),
        "{}",
        r.log_tail(30)
    );
}
