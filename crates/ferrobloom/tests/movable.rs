//! Anything the server holds, it can move (issue 19, part 2). Filters grown by
//! every growth command to the default limits (`cf-max-expansions` 32,
//! `bf-max-links` 64), in both cuckoo layouts and every Bloom layout, go through
//! DUMP/RESTORE (same server and another one), SCANDUMP/LOADCHUNK (another
//! server), MIGRATE to another ferrobloom server, an AOF rewrite + replay and an
//! RDB reload, all with the default configuration, and answer exactly as before
//! each move (CF.INFO/BF.INFO, CF.DEBUG, DEBUG DIGEST-VALUE, CF.COUNT of every
//! item, membership of every item and 3,000+ never-added probes).
//!
//! Before the fix, one CF.INSERT into a filter of RedisBloom's layout grew it
//! past `cf-max-expansions` (300 items: 76 sub-filters), and its own DUMP, SCANDUMP
//! and MIGRATE were then refused.

mod common;

use common::cf::{self, cf_debug, digest_value, int, mexists, ok, probes, raw, show};
use common::rdb::*;
use common::*;
use redis::{Connection, Value};

/// A grown filter and the items it holds.
struct Grown {
    key: Vec<u8>,
    bloom: bool,
    items: Vec<Vec<u8>>,
}

/// What must be equal wherever a filter goes.
#[derive(Debug, PartialEq)]
struct State {
    info: String,
    debug: String,
    digest: String,
    counts: Vec<i64>,
    members: Vec<bool>,
}

fn bf_mexists(con: &mut Connection, key: &[u8], items: &[Vec<u8>]) -> Vec<bool> {
    let mut c = redis::cmd("BF.MEXISTS");
    c.arg(key);
    for i in items {
        c.arg(i.as_slice());
    }
    let v: Vec<i64> = c.query(con).unwrap();
    v.into_iter().map(|x| x == 1).collect()
}

fn state(con: &mut Connection, key: &[u8], g: &Grown) -> State {
    let mut all = g.items.clone();
    all.extend(probes());
    if g.bloom {
        let members = bf_mexists(con, key, &all);
        assert!(members[..g.items.len()].iter().all(|m| *m), "items lost");
        State {
            info: show(&raw(con, &[b"BF.INFO".as_slice(), key])),
            debug: show(&raw(con, &[b"BF.DEBUG".as_slice(), key])),
            digest: digest_value(con, key),
            counts: Vec::new(),
            members,
        }
    } else {
        let members = mexists(con, key, &all);
        assert!(members[..g.items.len()].iter().all(|m| *m), "items lost");
        State {
            info: show(&raw(con, &[b"CF.INFO".as_slice(), key])),
            debug: cf_debug(con, key),
            digest: digest_value(con, key),
            counts: cf::counts(con, key, &g.items),
            members,
        }
    }
}

/// The per-item replies of a multi-item insert; an error reply counts as -2.
fn insert_replies(con: &mut Connection, cmd: &str, key: &[u8], items: &[Vec<u8>]) -> Vec<i64> {
    let mut args: Vec<&[u8]> = vec![cmd.as_bytes(), key];
    if cmd != "BF.MADD" {
        args.push(b"ITEMS");
    }
    args.extend(items.iter().map(|i| i.as_slice()));
    let Value::Array(v) = raw(con, &args) else {
        panic!("{cmd}: not an array");
    };
    v.iter()
        .map(|x| match x {
            Value::Int(n) => *n,
            _ => -2,
        })
        .collect()
}

fn kept(items: &[Vec<u8>], replies: &[i64]) -> Vec<Vec<u8>> {
    assert_eq!(items.len(), replies.len());
    items
        .iter()
        .zip(replies)
        .filter(|(_, r)| **r == 1)
        .map(|(i, _)| i.clone())
        .collect()
}

/// Grows one filter per growth command and layout to the default limits.
fn grow_all(con: &mut Connection) -> Vec<Grown> {
    let mut out = Vec::new();
    // One CF.INSERT / CF.INSERTNX of many items (the case).
    for (key, reserve, cmd) in [
        ("cf:rb:insert", "4 LAYOUT redisbloom", "CF.INSERT"),
        (
            "cf:rb:insertnx",
            "4 BUCKETSIZE 1 LAYOUT redisbloom",
            "CF.INSERTNX",
        ),
        ("cf:fb:insert", "4 BUCKETSIZE 1", "CF.INSERT"),
    ] {
        ok(con, &format!("CF.RESERVE {key} {reserve}"));
        let items = cf::names(&format!("{key}:"), 300);
        let r = insert_replies(con, cmd, key.as_bytes(), &items);
        assert!(r.contains(&-1), "{key}: the limit was reached: {r:?}");
        assert_eq!(cf::filters(con, key.as_bytes()), 32, "{key}");
        out.push(Grown {
            key: key.as_bytes().to_vec(),
            bloom: false,
            items: kept(&items, &r),
        });
    }
    // CF.ADD one by one until refused; expansion 2 (it stops at the limit too).
    for (key, reserve) in [
        ("cf:rb:add", "4 LAYOUT redisbloom"),
        ("cf:rb:add2", "4 BUCKETSIZE 1 EXPANSION 2 LAYOUT redisbloom"),
    ] {
        ok(con, &format!("CF.RESERVE {key} {reserve}"));
        let mut items = Vec::new();
        for i in 0..100_000 {
            let it = format!("{key}:{i}").into_bytes();
            match redis::cmd("CF.ADD").arg(key).arg(&it).query::<i64>(con) {
                Ok(1) => items.push(it),
                Ok(v) => panic!("{key}: CF.ADD {v}"),
                Err(e) => {
                    let e = err_text::<()>(Err(e));
                    assert_eq!(e, "Maximum expansions reached", "{key}");
                    break;
                }
            }
            if key == "cf:rb:add2" && i == 3000 {
                break;
            }
        }
        out.push(Grown {
            key: key.as_bytes().to_vec(),
            bloom: false,
            items,
        });
    }
    // Bloom chains of every layout to bf-max-links (BF.INSERT), and BF.MADD.
    for (key, layout, cmd) in [
        ("bf:classic", "classic", "BF.INSERT"),
        ("bf:blocked", "blocked", "BF.INSERT"),
        ("bf:paired", "paired", "BF.INSERT"),
        ("bf:rb", "redisbloom", "BF.INSERT"),
        ("bf:rb:madd", "redisbloom", "BF.MADD"),
    ] {
        ok(
            con,
            &format!("BF.RESERVE {key} 0.01 2 EXPANSION 1 LAYOUT {layout}"),
        );
        let items = cf::names(&format!("{key}:"), 400);
        let r = insert_replies(con, cmd, key.as_bytes(), &items);
        assert!(r.contains(&-2), "{key}: the limit was reached");
        let links = show(&raw(con, &["BF.INFO", key, "FILTERS"]));
        assert!(links.contains("64"), "{key}: {links}");
        out.push(Grown {
            key: key.as_bytes().to_vec(),
            bloom: true,
            items: kept(&items, &r),
        });
    }
    out
}

fn states(con: &mut Connection, set: &[Grown]) -> Vec<State> {
    set.iter().map(|g| state(con, &g.key, g)).collect()
}

fn renamed(key: &[u8], tag: &str) -> Vec<u8> {
    let mut k = key.to_vec();
    k.extend_from_slice(tag.as_bytes());
    k
}

#[test]
fn grown_filters_move_by_dump_scandump_and_migrate() {
    let a = Server::start();
    let b = Server::start();
    let (mut ca, mut cb) = (a.conn(), b.conn());
    let set = grow_all(&mut ca);
    let want = states(&mut ca, &set);
    for (g, w) in set.iter().zip(&want) {
        let name = String::from_utf8_lossy(&g.key).to_string();
        let payload = dump(&mut ca, &g.key);
        // DUMP -> RESTORE, on the same server and on another.
        for (con, what) in [(&mut ca, "same server"), (&mut cb, "other server")] {
            let k = renamed(&g.key, ":restored");
            assert_eq!(
                cf::restore(con, &k, &payload),
                Value::Okay,
                "{name}: RESTORE on the {what}"
            );
            assert_eq!(state(con, &k, g), *w, "{name}: RESTORE on the {what}");
        }
        // SCANDUMP -> LOADCHUNK on another server.
        let k = renamed(&g.key, ":loaded");
        if g.bloom {
            let chunks = common::bf_persist::scandump(&mut ca, &g.key);
            common::bf_persist::loadchunks(&mut cb, &k, &chunks);
        } else {
            let chunks = cf::scandump(&mut ca, &g.key);
            cf::loadchunks(&mut cb, &k, &chunks);
        }
        assert_eq!(state(&mut cb, &k, g), *w, "{name}: SCANDUMP/LOADCHUNK");
    }
    // MIGRATE every key to the other server (what a reshard runs).
    let port = b.port().to_string();
    for (g, w) in set.iter().zip(&want) {
        let name = String::from_utf8_lossy(&g.key).to_string();
        let r = raw(
            &mut ca,
            &[
                b"MIGRATE".as_slice(),
                b"127.0.0.1",
                port.as_bytes(),
                &g.key,
                b"0",
                b"10000",
            ],
        );
        assert_eq!(r, Value::Okay, "{name}: MIGRATE: {}", show(&r));
        assert_eq!(state(&mut cb, &g.key, g), *w, "{name}: MIGRATE");
    }
    assert_eq!(
        int(&mut ca, "DBSIZE"),
        set.len() as i64,
        "restored copies stay"
    );
}

#[test]
fn grown_filters_survive_aof_rewrite_replay_and_rdb_reload() {
    let mut s = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut con = s.conn();
    let set = grow_all(&mut con);
    let want = states(&mut con, &set);
    bgrewriteaof(&s);
    drop(con);
    s.restart();
    let mut con = s.conn();
    assert_eq!(states(&mut con, &set), want, "AOF rewrite + replay");
    ok(&mut con, "DEBUG RELOAD");
    assert_eq!(states(&mut con, &set), want, "RDB save + load");
}
