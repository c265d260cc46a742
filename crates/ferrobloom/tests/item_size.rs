//! `bf.max-item-size`: every command that takes items refuses one longer than
//! the limit, before changing anything; the limit is exact at the boundary;
//! replicated and loaded writes are never refused by a replica's lower limit.

mod common;

use common::*;
use redis::{Connection, Value};

fn cmd(con: &mut Connection, args: &[&[u8]]) -> redis::RedisResult<Value> {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
}

fn too_large(len: usize, max: usize) -> String {
    format!("ERR item too large: {len} bytes, bf.max-item-size is {max}")
}

/// Every item-taking command, with `item` in each item position.
fn item_commands(item: &[u8]) -> Vec<Vec<&[u8]>> {
    vec![
        vec![b"BF.ADD", b"bf", item],
        vec![b"BF.MADD", b"bf", b"ok", item],
        vec![b"BF.INSERT", b"bf", b"ITEMS", item, b"ok"],
        vec![b"BF.INSERT", b"bf-new", b"ITEMS", item],
        vec![b"BF.EXISTS", b"bf", item],
        vec![b"BF.MEXISTS", b"bf", b"ok", item],
        vec![b"CF.ADD", b"cf", item],
        vec![b"CF.ADDNX", b"cf", item],
        vec![b"CF.INSERT", b"cf", b"ITEMS", b"ok", item],
        vec![b"CF.INSERTNX", b"cf-new", b"ITEMS", item],
        vec![b"CF.EXISTS", b"cf", item],
        vec![b"CF.MEXISTS", b"cf", item, b"ok"],
        vec![b"CF.COUNT", b"cf", item],
        vec![b"CF.DEL", b"cf", item],
    ]
}

fn setup(con: &mut Connection) {
    cmd(con, &[b"BF.ADD", b"bf", b"seed"]).unwrap();
    cmd(con, &[b"CF.ADD", b"cf", b"seed"]).unwrap();
}

#[test]
fn default_limit_is_one_mebibyte_exactly() {
    let s = Server::start();
    let mut con = s.conn();
    let v: Vec<String> = exec(&mut con, &["CONFIG", "GET", "bf.max-item-size"]).unwrap();
    assert_eq!(v[1], "1048576");
    setup(&mut con);
    let at = vec![b'a'; 1 << 20];
    let over = vec![b'b'; (1 << 20) + 1];
    assert_eq!(
        cmd(&mut con, &[b"BF.ADD", b"bf", &at]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &[b"CF.ADD", b"cf", &at]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        err_text(cmd(&mut con, &[b"BF.ADD", b"bf", &over])),
        too_large(over.len(), 1 << 20)
    );
    assert_eq!(
        cmd(&mut con, &[b"BF.EXISTS", b"bf", &at]).unwrap(),
        Value::Int(1)
    );
}

#[test]
fn every_item_command_refuses_an_item_over_the_limit_and_changes_nothing() {
    let s = Server::start();
    let mut con = s.conn();
    setup(&mut con);
    exec::<()>(&mut con, &["CONFIG", "SET", "bf.max-item-size", "10"]).unwrap();
    let before = s.digest();
    let over = b"0123456789X";
    for args in item_commands(over) {
        let shown: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into())
            .collect();
        assert_eq!(
            err_text(cmd(&mut con, &args)),
            too_large(11, 10),
            "{shown:?}"
        );
    }
    assert_eq!(s.digest(), before, "a refused command changed the data set");
    assert_eq!(exec::<i64>(&mut con, &["DBSIZE"]).unwrap(), 2);
    // At the limit every command works.
    let at = b"0123456789";
    for args in item_commands(at) {
        assert!(cmd(&mut con, &args).is_ok(), "{args:?}");
    }
    let v: Vec<String> = exec(&mut con, &["CONFIG", "GET", "bf.max-item-size"]).unwrap();
    assert_eq!(v[1], "10");
    // Memory units and the range.
    exec::<()>(&mut con, &["CONFIG", "SET", "bf.max-item-size", "2kb"]).unwrap();
    let v: Vec<String> = exec(&mut con, &["CONFIG", "GET", "bf.max-item-size"]).unwrap();
    assert_eq!(v[1], "2048");
    assert!(
        exec_err(&mut con, &["CONFIG", "SET", "bf.max-item-size", "0"]).contains("max-item-size")
    );
    assert!(
        exec_err(&mut con, &["CONFIG", "SET", "bf.max-item-size", "1gb"]).contains("max-item-size")
    );
}

#[test]
fn a_replica_with_a_lower_limit_applies_what_its_primary_accepted() {
    let primary = Server::start();
    let replica = Server::builder()
        .config("bf.max-item-size", &["16"])
        .replica_of(&primary)
        .start();
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    let long = vec![b'x'; 1000];
    assert_eq!(
        cmd(&mut con, &[b"BF.ADD", b"bf", &long]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &[b"CF.INSERT", b"cf", b"ITEMS", &long, b"short"]).unwrap(),
        Value::Array(vec![Value::Int(1), Value::Int(1)])
    );
    assert_eq!(
        cmd(&mut con, &[b"CF.DEL", b"cf", &long]).unwrap(),
        Value::Int(1)
    );
    primary.wait_for_offset(&replica);
    assert_eq!(primary.digest(), replica.digest());
    let mut rc = replica.conn();
    // The replica's own clients are held to its limit.
    assert_eq!(
        err_text(cmd(&mut rc, &[b"BF.EXISTS", b"bf", &long])),
        too_large(1000, 16)
    );
    assert_eq!(
        cmd(&mut rc, &[b"CF.EXISTS", b"cf", b"short"]).unwrap(),
        Value::Int(1)
    );
}

#[test]
fn a_server_made_replica_at_runtime_applies_its_primary_and_limits_its_clients_again_after() {
    // The module reads trust from the server's role and loading events: a server
    // that becomes a replica by REPLICAOF (not at startup) must apply what its
    // primary accepted, and hold its clients to its limit once promoted.
    let primary = Server::start();
    let s = Server::builder()
        .config("bf.max-item-size", &["16"])
        .start();
    let long = vec![b'x'; 1000];
    let mut sc = s.conn();
    assert_eq!(
        err_text(cmd(&mut sc, &[b"BF.ADD", b"bf", &long])),
        too_large(1000, 16)
    );
    let port = primary.port().to_string();
    exec::<()>(&mut sc, &["REPLICAOF", "127.0.0.1", &port]).unwrap();
    primary.wait_for_sync(&s);
    let mut pc = primary.conn();
    assert_eq!(
        cmd(&mut pc, &[b"BF.ADD", b"bf", &long]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut pc, &[b"CF.INSERT", b"cf", b"ITEMS", &long, b"short"]).unwrap(),
        Value::Array(vec![Value::Int(1), Value::Int(1)])
    );
    primary.wait_for_offset(&s);
    assert_eq!(primary.digest(), s.digest());
    exec::<()>(&mut sc, &["REPLICAOF", "NO", "ONE"]).unwrap();
    assert_eq!(
        err_text(cmd(&mut sc, &[b"CF.ADD", b"cf", &long])),
        too_large(1000, 16)
    );
    assert_eq!(
        cmd(&mut sc, &[b"CF.EXISTS", b"cf", b"short"]).unwrap(),
        Value::Int(1)
    );
}
