//! What ferrobloom takes from the server it runs on, asserted per server (`make test`
//! runs this file on Redis 7.0.15, Valkey 8.1.8 and Valkey 9.1.2): module ACL
//! categories where the server can add them (the per-command alternative where it
//! cannot), keyspace events of every write command, and the `INFO bf` metrics, exact
//! across every way a filter comes and goes.

mod common;

use std::time::Duration;

use common::gauges::*;
use common::*;
use redis::{Connection, Value};

fn q(con: &mut Connection, line: &str) -> Value {
    let mut parts = line.split_whitespace();
    let mut c = redis::cmd(parts.next().unwrap());
    for p in parts {
        c.arg(p);
    }
    match c.query::<Value>(con) {
        Ok(v) => v,
        Err(e) => Value::SimpleString(format!("error: {}", err_text::<()>(Err(e)))),
    }
}

fn is_err(v: &Value) -> bool {
    matches!(v, Value::SimpleString(s) if s.starts_with("error"))
}

fn as_user(s: &Server, user: &str) -> Connection {
    let mut con = s.conn();
    let _: () = redis::cmd("AUTH")
        .arg(user)
        .arg("pw")
        .query(&mut con)
        .unwrap();
    con
}

#[test]
fn acl_categories_where_the_server_has_them() {
    let s = Server::start();
    let mut con = s.conn();
    let info = s.info("bf_ferrobloom");
    if s.kind().has_acl_categories() {
        assert_eq!(info["bf_acl_categories"], "bloom cuckoo");
        let bloom: Vec<String> = redis::cmd("ACL")
            .arg("CAT")
            .arg("bloom")
            .query(&mut con)
            .unwrap();
        let cuckoo: Vec<String> = redis::cmd("ACL")
            .arg("CAT")
            .arg("cuckoo")
            .query(&mut con)
            .unwrap();
        assert_eq!(bloom.len(), 12, "{bloom:?}");
        assert!(bloom.iter().all(|c| c.starts_with("bf.")));
        assert_eq!(cuckoo.len(), 14, "{cuckoo:?}");
        assert!(cuckoo.iter().all(|c| c.starts_with("cf.")));
        let write: Vec<String> = redis::cmd("ACL")
            .arg("CAT")
            .arg("write")
            .query(&mut con)
            .unwrap();
        assert!(write.contains(&"bf.add".to_string()) && !write.contains(&"bf.exists".to_string()));
        assert!(!is_err(&q(&mut con, "ACL SETUSER app on >pw ~* +@bloom")));
        let mut app = as_user(&s, "app");
        assert_eq!(q(&mut app, "BF.ADD k a"), Value::Int(1));
        assert_eq!(q(&mut app, "BF.EXISTS k a"), Value::Int(1));
        let e = q(&mut app, "CF.ADD c a");
        assert!(
            matches!(&e, Value::SimpleString(t) if t.contains("NOPERM")),
            "{e:?}"
        );
        // Read-only access to both families.
        assert!(!is_err(&q(
            &mut con,
            "ACL SETUSER reader on >pw ~* +@bloom +@cuckoo -@write"
        )));
        let mut reader = as_user(&s, "reader");
        assert_eq!(q(&mut reader, "BF.EXISTS k a"), Value::Int(1));
        assert!(
            matches!(q(&mut reader, "BF.ADD k b"), Value::SimpleString(t) if t.contains("NOPERM"))
        );
    } else {
        assert!(info["bf_acl_categories"].starts_with("none"));
        assert!(is_err(&q(&mut con, "ACL CAT bloom")));
        // The per-command alternative (README): name the commands.
        assert!(!is_err(&q(
            &mut con,
            "ACL SETUSER app on >pw ~* +bf.add +bf.madd +bf.exists +bf.mexists +bf.info"
        )));
        let mut app = as_user(&s, "app");
        assert_eq!(q(&mut app, "BF.ADD k a"), Value::Int(1));
        let e = q(&mut app, "CF.ADD c a");
        assert!(
            matches!(&e, Value::SimpleString(t) if t.contains("NOPERM")),
            "{e:?}"
        );
    }
}

#[test]
fn every_write_command_notifies_once() {
    let s = Server::start();
    let mut con = s.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("Ed")
        .query(&mut con)
        .unwrap();
    let mut sub = s.conn();
    sub.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@*__:*").unwrap();
    let mut dump_src = s.conn();
    let _: () = redis::cmd("BF.RESERVE")
        .arg("src")
        .arg("0.01")
        .arg("10")
        .query(&mut dump_src)
        .unwrap();
    let _: () = redis::cmd("CF.RESERVE")
        .arg("csrc")
        .arg("10")
        .query(&mut dump_src)
        .unwrap();
    let (bh, ch) = (
        header(&mut dump_src, "BF", "src"),
        header(&mut dump_src, "CF", "csrc"),
    );
    let writes: Vec<(Vec<Vec<u8>>, Option<&str>)> = vec![
        (
            args(&["BF.RESERVE", "b", "0.01", "100"]),
            Some("bf.reserve"),
        ),
        (args(&["BF.ADD", "b", "x"]), Some("bf.add")),
        (args(&["BF.ADD", "b", "x"]), None), // already present: nothing changed
        (args(&["BF.MADD", "b", "y", "z"]), Some("bf.madd")),
        (args(&["BF.INSERT", "b2", "ITEMS", "y"]), Some("bf.insert")),
        (args(&["BF.EXISTS", "b", "x"]), None),
        (
            vec![b"BF.LOADCHUNK".to_vec(), b"b3".to_vec(), b"1".to_vec(), bh],
            Some("bf.loadchunk"),
        ),
        (args(&["CF.RESERVE", "c", "100"]), Some("cf.reserve")),
        (args(&["CF.ADD", "c", "x"]), Some("cf.add")),
        (args(&["CF.ADDNX", "c", "x"]), None),
        (args(&["CF.ADDNX", "c", "y"]), Some("cf.addnx")),
        (args(&["CF.INSERT", "c", "ITEMS", "z"]), Some("cf.insert")),
        (
            args(&["CF.INSERTNX", "c", "ITEMS", "w"]),
            Some("cf.insertnx"),
        ),
        (args(&["CF.DEL", "c", "x"]), Some("cf.del")),
        (args(&["CF.DEL", "c", "never"]), None),
        (args(&["CF.COMPACT", "c"]), Some("cf.compact")),
        (
            vec![b"CF.LOADCHUNK".to_vec(), b"c3".to_vec(), b"1".to_vec(), ch],
            Some("cf.loadchunk"),
        ),
    ];
    let mut expected = Vec::new();
    for (a, event) in &writes {
        let mut c = redis::cmd(std::str::from_utf8(&a[0]).unwrap());
        for x in &a[1..] {
            c.arg(x.as_slice());
        }
        let _: Value = c.query(&mut con).unwrap();
        if let Some(e) = event {
            let key = String::from_utf8_lossy(&a[1]).into_owned();
            expected.push((e.to_string(), key));
        }
    }
    let mut got = Vec::new();
    while let Ok(m) = pubsub.get_message() {
        let channel = m.get_channel_name().to_string();
        let event = channel.rsplit(':').next().unwrap_or_default().to_string();
        let key: String = m.get_payload().unwrap();
        if key.starts_with("src") || key.starts_with("csrc") {
            continue;
        }
        got.push((event, key));
    }
    assert_eq!(got, expected);
}

fn args(a: &[&str]) -> Vec<Vec<u8>> {
    a.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn header(con: &mut Connection, family: &str, key: &str) -> Vec<u8> {
    let (_, h): (i64, Vec<u8>) = redis::cmd(&format!("{family}.SCANDUMP"))
        .arg(key)
        .arg(0)
        .query(con)
        .unwrap();
    h
}

#[test]
fn info_metrics_stay_exact() {
    let mut s = Server::builder()
        .args(&[
            "--bf.bf-initial-size",
            "20",
            "--bf.cf-initial-size",
            "16",
            "--bf.cf-expansion-factor",
            "2",
        ])
        .start();
    let mut con = s.conn();
    assert_gauges_exact(&s, "empty");
    for i in 0..20 {
        let items: Vec<String> = (0..60).map(|j| format!("i{j}")).collect();
        let _: Value = redis::cmd("BF.MADD")
            .arg(format!("b{i}"))
            .arg(&items)
            .query(&mut con)
            .unwrap();
        let _: Value = redis::cmd("CF.INSERT")
            .arg(format!("c{i}"))
            .arg("ITEMS")
            .arg(&items)
            .query(&mut con)
            .unwrap();
    }
    assert_gauges_exact(&s, "after adds (links and sub-filters grew)");
    let g = gauges(&s);
    assert_eq!(g["bloom_items_added"], g["bloom_items"]);
    assert!(g["bloom_links"] > 20 && g["cuckoo_subfilters"] > 20);
    for i in 0..30 {
        let _: Value = redis::cmd("CF.DEL")
            .arg("c0")
            .arg(format!("i{i}"))
            .query(&mut con)
            .unwrap();
    }
    let _: Value = redis::cmd("CF.COMPACT").arg("c0").query(&mut con).unwrap();
    assert_gauges_exact(&s, "after deletes and compaction");
    let _: i64 = redis::cmd("DEL")
        .arg("b0")
        .arg("c1")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("UNLINK")
        .arg("b1")
        .arg("c2")
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("BF.RESERVE")
        .arg("big")
        .arg("0.001")
        .arg("2000000")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("UNLINK").arg("big").query(&mut con).unwrap(); // freed lazily
    let _: i64 = redis::cmd("PEXPIRE")
        .arg("b2")
        .arg("1")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("PEXPIRE")
        .arg("c3")
        .arg("1")
        .query(&mut con)
        .unwrap();
    wait_until(Duration::from_secs(5), "expiry and lazy free", || {
        let n: i64 = redis::cmd("DBSIZE").query(&mut s.conn()).unwrap();
        n == 40 - 6 && gauges(&s)["bloom_filters"] == 17
    });
    assert_gauges_exact(&s, "after DEL, UNLINK and expiry");
    let _: i64 = redis::cmd("COPY")
        .arg("b3")
        .arg("b3copy")
        .query(&mut con)
        .unwrap();
    let payload: Vec<u8> = redis::cmd("DUMP").arg("c4").query(&mut con).unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("c4r")
        .arg(0)
        .arg(payload.as_slice())
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("RESTORE")
        .arg("c4")
        .arg(0)
        .arg(payload.as_slice())
        .arg("REPLACE")
        .query(&mut con)
        .unwrap();
    assert_gauges_exact(&s, "after COPY and RESTORE (REPLACE too)");
    // Counters.
    let before = gauges(&s);
    let _: Value = redis::cmd("BF.MEXISTS")
        .arg("b3")
        .arg(&["a", "b", "c"])
        .query(&mut con)
        .unwrap();
    let _: Value = redis::cmd("CF.COUNT")
        .arg("c4")
        .arg("i1")
        .query(&mut con)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("bf.max-item-size")
        .arg("4")
        .query(&mut con)
        .unwrap();
    assert!(redis::cmd("BF.ADD")
        .arg("b3")
        .arg("longer than four")
        .query::<Value>(&mut con)
        .is_err());
    let after = gauges(&s);
    assert_eq!(after["bloom_lookups"] - before["bloom_lookups"], 3);
    assert_eq!(after["cuckoo_lookups"] - before["cuckoo_lookups"], 1);
    assert_eq!(after["refused_item_size"] - before["refused_item_size"], 1);
    // A replica's gauges are exact for its own keyspace.
    let replica = Server::builder().replica_of(&s).start();
    s.wait_for_sync(&replica);
    let _: Value = redis::cmd("BF.MADD")
        .arg("b3")
        .arg(&["n1", "n2"])
        .query(&mut con)
        .unwrap();
    s.wait_for_offset(&replica);
    assert_gauges_exact(&replica, "on a replica");
    // DEBUG RELOAD, FLUSHALL ASYNC and a restart.
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_gauges_exact(&s, "after DEBUG RELOAD");
    // Redis 8 may still be finishing the replica's fork (SAVE refuses meanwhile).
    wait_until(Duration::from_secs(10), "no background save", || {
        s.info_field("persistence", "rdb_bgsave_in_progress")
            .as_deref()
            == Some("0")
    });
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    s.restart();
    assert_gauges_exact(&s, "after a restart");
    let mut con = s.conn();
    let _: () = redis::cmd("FLUSHALL").arg("ASYNC").query(&mut con).unwrap();
    wait_until(Duration::from_secs(5), "FLUSHALL ASYNC to free", || {
        gauges(&s)["bloom_filters"] == 0 && gauges(&s)["cuckoo_filters"] == 0
    });
    assert_gauges_exact(&s, "after FLUSHALL ASYNC");
    let g = gauges(&s);
    assert_eq!((g["bloom_memory"], g["cuckoo_items"]), (0, 0));
}

/// Item counts at or above 2^63 come only from payloads (a RedisBloom DUMP
/// here): the `INFO bf` item gauges stay exact while they fit and saturate at
/// `i64::MAX` beyond, never negative (they wrapped before).
#[test]
fn item_gauges_never_go_negative_for_huge_payload_counts() {
    use common::redisbloom::{bloom_link, module_dump, Field};
    let s = Server::start();
    let mut con = s.conn();
    let payload = |items: u64| {
        let mut link = bloom_link(4, 100, 0.01, 960, 0, 120);
        if let Some(last) = link.last_mut() {
            *last = Field::U(items);
        }
        let mut f = vec![Field::U(items), Field::U(1), Field::U(7), Field::U(2)];
        f.extend(link);
        module_dump("MBbloom--", 4, &f)
    };
    let restore = |con: &mut Connection, key: &str, items: u64| {
        let _: () = redis::cmd("RESTORE")
            .arg(key)
            .arg(0)
            .arg(payload(items))
            .query(con)
            .unwrap_or_else(|e| panic!("RESTORE {key}: {e}"));
    };
    restore(&mut con, "a", 1 << 62);
    assert_eq!(gauges(&s)["bloom_items"], 1 << 62);
    restore(&mut con, "b", 1 << 63);
    assert_eq!(gauges(&s)["bloom_items"], i64::MAX, "saturated");
    restore(&mut con, "c", u64::MAX);
    assert_eq!(gauges(&s)["bloom_items"], i64::MAX, "saturated");
    let _: () = redis::cmd("DEL").arg("b").arg("c").query(&mut con).unwrap();
    assert_eq!(gauges(&s)["bloom_items"], 1 << 62, "exact again");
    let _: () = redis::cmd("DEL").arg("a").query(&mut con).unwrap();
    assert_eq!(gauges(&s)["bloom_items"], 0);
}
