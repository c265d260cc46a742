//! Panic containment, proved on the real server: `FERROBLOOM.FAULT <point>`
//! (compiled only with the `fault-injection` feature, which `make test` enables)
//! arms a deliberate panic at the entry of a command handler or data-type
//! callback. The server must survive every one, answer with an error where the
//! API has one, log the panic, keep its data, and work normally afterwards.

mod common;

use common::*;
use redis::{Connection, Value};

fn arm(con: &mut Connection, point: &str) {
    match exec::<()>(con, &["FERROBLOOM.FAULT", point]) {
        Ok(()) => {}
        Err(e) => panic!(
            "FERROBLOOM.FAULT failed ({e}); the module must be built with \
             `--features fault-injection` (`make test` does)"
        ),
    }
}

const INTERNAL: &str = "ERR ferrobloom internal error (details in the server log)";

fn setup(con: &mut Connection) -> Vec<String> {
    let items: Vec<String> = (0..500).map(|i| format!("item{i}")).collect();
    let mut c = redis::cmd("BF.MADD");
    c.arg("bf").arg(&items);
    let _: Vec<i64> = c.query(con).unwrap();
    let mut c = redis::cmd("CF.INSERT");
    c.arg("cf").arg("ITEMS").arg(&items);
    let _: Vec<i64> = c.query(con).unwrap();
    items
}

fn assert_intact(con: &mut Connection, items: &[String], what: &str) {
    for (cmd, key) in [("BF.MEXISTS", "bf"), ("CF.MEXISTS", "cf")] {
        let mut c = redis::cmd(cmd);
        c.arg(key).arg(items);
        let r: Vec<i64> = c.query(con).unwrap();
        assert!(r.iter().all(|&v| v == 1), "{what}: {key} lost items");
    }
    let pong: String = exec(con, &["PING"]).unwrap();
    assert_eq!(pong, "PONG");
}

#[test]
fn a_panic_in_any_command_is_an_error_reply() {
    let s = Server::start();
    let mut con = s.conn();
    let items = setup(&mut con);
    let digest = s.digest();
    let cases: &[&[&str]] = &[
        &["BF.ADD", "bf", "new"],
        &["BF.MADD", "bf", "new", "new2"],
        &["BF.INSERT", "bf", "ITEMS", "new"],
        &["BF.RESERVE", "other", "0.01", "100"],
        &["BF.EXISTS", "bf", "item1"],
        &["BF.INFO", "bf"],
        &["BF.SCANDUMP", "bf", "0"],
        &["CF.ADD", "cf", "new"],
        &["CF.INSERTNX", "cf", "ITEMS", "new"],
        &["CF.DEL", "cf", "item1"],
        &["CF.COMPACT", "cf"],
        &["CF.MEXISTS", "cf", "item1"],
        &["CF.LOADCHUNK", "cf", "1", "x"],
    ];
    for args in cases {
        arm(&mut con, args[0]);
        assert_eq!(exec_err(&mut con, args), INTERNAL, "{args:?}");
        assert!(
            s.log()
                .contains(&format!("ferrobloom: internal error in {}", args[0])),
            "{args:?}: no log line"
        );
        // One-shot: the same command now works (or fails for its own reasons).
        let again = exec::<Value>(&mut con, args);
        if let Err(e) = &again {
            assert!(!e.to_string().contains("internal error"), "{args:?}: {e}");
        }
        if args[0] == "CF.DEL" {
            // Put the deleted item back for the final check.
            exec::<i64>(&mut con, &["CF.ADD", "cf", "item1"]).unwrap();
        }
    }
    assert_intact(&mut con, &items, "after every command panicked once");
    assert_ne!(s.digest(), digest, "the retried writes went through");
    // Case-insensitive arming, and a count.
    exec::<()>(&mut con, &["FERROBLOOM.FAULT", "bf.exists", "2"]).unwrap();
    assert_eq!(exec_err(&mut con, &["BF.EXISTS", "bf", "item1"]), INTERNAL);
    assert_eq!(exec_err(&mut con, &["bf.exists", "bf", "item1"]), INTERNAL);
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "bf", "item1"]).unwrap(),
        1
    );
    assert!(s.is_alive());
}

#[test]
fn a_panic_in_a_data_type_callback_is_contained() {
    let s = Server::start();
    let mut con = s.conn();
    let items = setup(&mut con);

    // rdb_load: RESTORE of a valid payload fails cleanly, then works.
    let dump: Vec<u8> = redis::cmd("DUMP").arg("bf").query(&mut con).unwrap();
    arm(&mut con, "rdb_load");
    let r: redis::RedisResult<()> = redis::cmd("RESTORE")
        .arg("restored")
        .arg(0)
        .arg(&dump)
        .query(&mut con);
    assert!(err_text(r).contains("Bad data format"));
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "restored"]).unwrap(), 0);
    let _: () = redis::cmd("RESTORE")
        .arg("restored")
        .arg(0)
        .arg(&dump)
        .query(&mut con)
        .unwrap();
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", "restored", "item7"]).unwrap(),
        1
    );

    // copy: COPY fails, the source is untouched, then COPY works.
    arm(&mut con, "copy");
    assert!(exec::<Value>(&mut con, &["COPY", "cf", "cf2"]).is_err());
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "cf2"]).unwrap(), 0);
    assert_eq!(exec::<i64>(&mut con, &["COPY", "cf", "cf2"]).unwrap(), 1);

    // digest, mem_usage, INFO: answered, server alive.
    arm(&mut con, "digest");
    let _: Value = exec(&mut con, &["DEBUG", "DIGEST-VALUE", "bf"]).unwrap();
    arm(&mut con, "mem_usage");
    let _: Value = exec(&mut con, &["MEMORY", "USAGE", "bf"]).unwrap();
    arm(&mut con, "INFO");
    let _: String = exec(&mut con, &["INFO", "bf"]).unwrap();
    for what in ["rdb_load", "copy", "digest", "mem_usage", "INFO"] {
        assert!(
            s.log().contains(&format!("internal error in {what}")),
            "no log line for {what}"
        );
    }
    assert_intact(&mut con, &items, "after callback panics");
}

fn persistence_field(s: &Server, field: &str) -> String {
    s.info_field("persistence", field).unwrap_or_default()
}

/// A panic while writing a persistence stream in a fork child (BGSAVE,
/// BGREWRITEAOF) fails that child, so the previous file is kept; the next save
/// succeeds and restores everything.
#[test]
fn a_panic_in_a_background_save_fails_the_save_not_the_server() {
    // Without the RDB preamble, BGREWRITEAOF uses the aof_rewrite callback.
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut con = s.conn();
    wait_until(REPL_TIMEOUT, "initial AOF rewrite", || {
        persistence_field(&s, "aof_rewrite_in_progress") == "0"
    });
    let items = setup(&mut con);

    arm(&mut con, "rdb_save");
    let _: Value = exec(&mut con, &["BGSAVE"]).unwrap();
    wait_until(REPL_TIMEOUT, "BGSAVE to finish", || {
        persistence_field(&s, "rdb_bgsave_in_progress") == "0"
    });
    assert_eq!(persistence_field(&s, "rdb_last_bgsave_status"), "err");
    assert!(s.log().contains("failing this rdb_save child"));
    exec::<()>(&mut con, &["FERROBLOOM.FAULT", "rdb_save", "0"]).unwrap();

    arm(&mut con, "aof_rewrite");
    let _: Value = exec(&mut con, &["BGREWRITEAOF"]).unwrap();
    wait_until(REPL_TIMEOUT, "BGREWRITEAOF to finish", || {
        persistence_field(&s, "aof_rewrite_in_progress") == "0"
            && persistence_field(&s, "aof_rewrite_scheduled") == "0"
    });
    assert_eq!(persistence_field(&s, "aof_last_bgrewrite_status"), "err");
    assert!(s.log().contains("failing this aof_rewrite child"));
    exec::<()>(&mut con, &["FERROBLOOM.FAULT", "aof_rewrite", "0"]).unwrap();
    assert_intact(&mut con, &items, "after failed background saves");

    // The server still writes and saves; a restart replays everything.
    let _: Value = exec(&mut con, &["BGREWRITEAOF"]).unwrap();
    wait_until(REPL_TIMEOUT, "BGREWRITEAOF to finish", || {
        persistence_field(&s, "aof_rewrite_in_progress") == "0"
            && persistence_field(&s, "aof_rewrite_scheduled") == "0"
    });
    assert_eq!(persistence_field(&s, "aof_last_bgrewrite_status"), "ok");
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_intact(&mut con, &items, "after restart");
}
