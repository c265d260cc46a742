//! Migration from RedisBloom, side by side with the real RedisBloom 2.8.2 (fetched by
//! `make peers`; these tests skip with a message when it is missing).
//!
//! Every test builds the same matrix of filters in RedisBloom (`common::redisbloom`),
//! moves them into a ferrobloom server by one path (RESTORE of DUMP payloads,
//! SCANDUMP/LOADCHUNK, an RDB file or appendonly files at startup, full sync of a
//! replica, MIGRATE, hand-built payloads of the old encoding versions 0-3), and then
//! requires every answer to be equal between the two servers: BF.INFO (every field),
//! BF.CARD, BF.DEBUG, CF.INFO, CF.DEBUG, CF.COUNT, MEXISTS of 100,000 never-added items
//! and the members (so the false positives are the same items), and the whole
//! SCANDUMP byte stream. Then it applies the same further writes to both (new links and
//! sub-filters, deletes, compaction, the "Maximum expansions" rule), requires the same
//! replies, and compares again. `crates/ferrobloom/tests/migration_fixtures.rs` checks the same against
//! RedisBloom's committed answers, without RedisBloom.

mod common;

use common::rdb::*;
use common::redisbloom::*;
use common::*;
use redis::Connection;

// ---------------------------------------------------------------------------------------------
// Paths in
// ---------------------------------------------------------------------------------------------

#[test]
fn restore_of_redisbloom_dumps_answers_and_evolves_as_redisbloom() {
    let cases = all_cases();
    let Some((rbs, fbs)) = side_by_side(&cases) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    for k in keys_of(&cases) {
        restore(&mut fb, k, &dump(&mut rb, k.as_bytes()));
    }
    compare_all(&mut rb, &mut fb, &cases);
    evolve(&mut rb, &mut fb, &cases);
    compare_all(&mut rb, &mut fb, &cases);
    // ferrobloom's own persistence of migrated filters: DEBUG RELOAD (RDB encoding
    // version 6), COPY and DUMP/RESTORE within ferrobloom keep every answer.
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut fb).unwrap();
    compare_all(&mut rb, &mut fb, &cases);
    for c in &cases {
        let copy = format!("{}:copy", c.key);
        let n: i64 = redis::cmd("COPY")
            .arg(&c.key)
            .arg(&copy)
            .query(&mut fb)
            .unwrap();
        assert_eq!(n, 1);
        compare_key(&mut rb, &mut fb, c, &copy);
        let again = format!("{}:restored", c.key);
        let payload = dump(&mut fb, c.key.as_bytes());
        let _: () = redis::cmd("RESTORE")
            .arg(&again)
            .arg(0)
            .arg(payload.as_slice())
            .query(&mut fb)
            .unwrap();
        compare_key(&mut rb, &mut fb, c, &again);
        let usage: Option<i64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&c.key)
            .query(&mut fb)
            .unwrap();
        assert!(usage.unwrap_or(0) > 0);
    }
    assert!(fbs.is_alive());
}

#[test]
fn redisbloom_scandump_loads_into_ferrobloom_and_back() {
    let cases = all_cases();
    let Some((rbs, fbs)) = side_by_side(&cases) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    for c in &cases {
        let chunks = scandump(&mut rb, c.kind, &c.key);
        loadchunks(&mut fb, c.kind, &c.key, &chunks);
    }
    compare_all(&mut rb, &mut fb, &cases);
    evolve(&mut rb, &mut fb, &cases);
    compare_all(&mut rb, &mut fb, &cases);
    // The way back: ferrobloom's SCANDUMP of a migrated filter is RedisBloom's format,
    // and RedisBloom's LOADCHUNK takes it.
    for c in &cases {
        let back = format!("{}:back", c.key);
        let chunks = scandump(&mut fb, c.kind, &c.key);
        loadchunks(&mut rb, c.kind, &back, &chunks);
        let original = Case::existing(&back, c.kind, Vec::new());
        compare_key(&mut rb, &mut fb, &original, &c.key);
    }
}

#[test]
fn redisbloom_rdb_file_loads_at_startup_and_survives_ferrobloom_persistence() {
    let Some(so) = redisbloom_so() else { return };
    let mut rbs = start_redisbloom(&so);
    let mut rb = rbs.conn();
    let cases = all_cases();
    build(&mut rb, &cases);
    let _: () = redis::cmd("SAVE").query(&mut rb).unwrap();
    // ferrobloom starts on RedisBloom's dump.rdb, with AOF on (so the first rewrite
    // writes the migrated filters through ferrobloom's AOF path).
    let mut fbs = ferrobloom_builder().start();
    fbs.stop(Stop::ShutdownNoSave);
    std::fs::copy(rbs.rdb_path(), fbs.rdb_path()).unwrap();
    fbs.start_again();
    let mut fb = fbs.conn();
    compare_all(&mut rb, &mut fb, &cases);
    evolve(&mut rb, &mut fb, &cases);
    compare_all(&mut rb, &mut fb, &cases);
    // ferrobloom's own RDB (encoding version 6) and a restart.
    let _: () = redis::cmd("SAVE").query(&mut fb).unwrap();
    fbs.restart();
    let mut fb = fbs.conn();
    compare_all(&mut rb, &mut fb, &cases);
    // AOF rewrite and replay: LOADCHUNK with RedisBloom's headers.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendonly")
        .arg("yes")
        .query(&mut fb)
        .unwrap();
    wait_aof_rewrite_idle(&fbs);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("aof-use-rdb-preamble")
        .arg("no")
        .query(&mut fb)
        .unwrap();
    bgrewriteaof(&fbs);
    fbs.stop(Stop::ShutdownNoSave);
    std::fs::remove_file(fbs.rdb_path()).ok();
    fbs.config_mut().appendonly = true;
    fbs.config_mut().aof_rdb_preamble = false;
    fbs.start_again();
    let mut fb = fbs.conn();
    compare_all(&mut rb, &mut fb, &cases);
    rbs.stop(Stop::ShutdownNoSave);
}

#[test]
fn redisbloom_aof_replays_into_ferrobloom() {
    let Some(so) = redisbloom_so() else { return };
    // RedisBloom's AOF rewrite writes BF.LOADCHUNK / CF.LOADCHUNK commands with its
    // own headers (without an RDB preamble), plus the commands that follow it.
    let mut rbs = Server::builder()
        .module_path(&so)
        .server_bin("redis-server")
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    let mut rb = rbs.conn();
    let cases = all_cases();
    build(&mut rb, &cases);
    bgrewriteaof(&rbs);
    for c in &cases {
        for m in c.more.iter().take(3) {
            reply(&mut rb, m);
        }
    }
    rbs.stop(Stop::ShutdownNoSave);
    let mut fbs = ferrobloom_builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    fbs.stop(Stop::ShutdownNoSave);
    std::fs::remove_dir_all(fbs.aof_dir()).ok();
    copy_dir(&rbs.aof_dir(), &fbs.aof_dir());
    fbs.start_again();
    rbs.start_again();
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    compare_all(&mut rb, &mut fb, &cases);
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn ferrobloom_replica_of_a_redisbloom_primary_stays_identical_and_takes_over() {
    let Some(so) = redisbloom_so() else { return };
    let rbs = start_redisbloom(&so);
    let mut rb = rbs.conn();
    let cases = all_cases();
    build(&mut rb, &cases);
    // New filters the primary creates during the migration are created with
    // RedisBloom's layout on the replica too (`bf-layout` / `cf-layout redisbloom`).
    let fbs = ferrobloom_builder()
        .args(&[
            "--bf.bf-layout",
            "redisbloom",
            "--bf.cf-layout",
            "redisbloom",
        ])
        .replica_of(&rbs)
        .start();
    rbs.wait_for_sync(&fbs);
    let mut fb = fbs.conn();
    compare_all(&mut rb, &mut fb, &cases);
    // The primary's write stream, applied by the replica.
    for c in &cases {
        for m in &c.more {
            reply(&mut rb, m);
        }
    }
    // Filters created on the primary after the sync replicate too (BF.RESERVE from
    // RedisBloom keeps RedisBloom's own replication: the command verbatim).
    reply(
        &mut rb,
        &with_items(&["BF.MADD", "bf:late"], items("l", 300)),
    );
    reply(
        &mut rb,
        &with_items(&["CF.INSERT", "cf:late", "ITEMS"], items("l", 300)),
    );
    reply(
        &mut rb,
        &cmd(&["BF.RESERVE", "bf:late2", "0.001", "50", "NONSCALING"]),
    );
    reply(
        &mut rb,
        &with_items(&["BF.MADD", "bf:late2"], items("l", 60)),
    );
    reply(
        &mut rb,
        &cmd(&[
            "CF.RESERVE",
            "cf:late2",
            "100",
            "BUCKETSIZE",
            "4",
            "EXPANSION",
            "2",
        ]),
    );
    reply(
        &mut rb,
        &with_items(&["CF.INSERT", "cf:late2", "ITEMS"], items("l", 500)),
    );
    rbs.wait_for_offset(&fbs);
    compare_all(&mut rb, &mut fb, &cases);
    let late: Vec<Case> = [
        ("bf:late", Kind::Bloom),
        ("bf:late2", Kind::Bloom),
        ("cf:late", Kind::Cuckoo),
        ("cf:late2", Kind::Cuckoo),
    ]
    .into_iter()
    .map(|(key, kind)| Case::existing(key, kind, Vec::new()))
    .collect();
    compare_all(&mut rb, &mut fb, &late);
    // Promote: the replica takes writes; migrated filters keep evolving as RedisBloom's.
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut fb)
        .unwrap();
    for c in &cases {
        let extra = with_items(
            &[&c.kind.prefix("INSERT"), &c.key, "ITEMS"],
            items("z", 100),
        );
        let extra = if c.key == "bf:nonscaling" || c.key == "cf:x0" || c.key == "cf:small" {
            cmd(&[&c.kind.prefix("EXISTS"), &c.key, "z0"])
        } else {
            extra
        };
        both(&mut rb, &mut fb, &extra);
    }
    compare_all(&mut rb, &mut fb, &cases);
    // `LAYOUT redisbloom` on ferrobloom builds what RedisBloom builds.
    reply(
        &mut rb,
        &cmd(&["BF.RESERVE", "bf:own", "0.02", "30", "EXPANSION", "3"]),
    );
    reply(
        &mut fb,
        &cmd(&[
            "BF.RESERVE",
            "bf:own",
            "0.02",
            "30",
            "EXPANSION",
            "3",
            "LAYOUT",
            "redisbloom",
        ]),
    );
    reply(
        &mut rb,
        &cmd(&["CF.RESERVE", "cf:own", "64", "BUCKETSIZE", "3"]),
    );
    reply(
        &mut fb,
        &cmd(&[
            "CF.RESERVE",
            "cf:own",
            "64",
            "BUCKETSIZE",
            "3",
            "LAYOUT",
            "redisbloom",
        ]),
    );
    let own = vec![
        Case::existing(
            "bf:own",
            Kind::Bloom,
            vec![with_items(&["BF.MADD", "bf:own"], items("o", 300))],
        ),
        Case::existing(
            "cf:own",
            Kind::Cuckoo,
            vec![with_items(
                &["CF.INSERT", "cf:own", "ITEMS"],
                items("o", 300),
            )],
        ),
    ];
    evolve(&mut rb, &mut fb, &own);
    compare_all(&mut rb, &mut fb, &own);
}

#[test]
fn migrate_from_redisbloom_moves_filters() {
    let cases = all_cases();
    let Some((rbs, fbs)) = side_by_side(&cases) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    for k in keys_of(&cases) {
        let r: String = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(fbs.port())
            .arg(k)
            .arg(0)
            .arg(5000)
            .arg("COPY")
            .query(&mut rb)
            .unwrap();
        assert_eq!(r, "OK", "MIGRATE {k}");
    }
    compare_all(&mut rb, &mut fb, &cases);
}

// ---------------------------------------------------------------------------------------------
// RedisBloom's older encoding versions (0-3), which RedisBloom 2.8.2 still reads
// ---------------------------------------------------------------------------------------------

#[test]
fn old_redisbloom_encodings_load_and_answer_as_redisbloom() {
    let cases = legacy_cases();
    let Some((rbs, fbs)) = side_by_side(&cases) else {
        return;
    };
    let (mut rb, mut fb) = (rbs.conn(), fbs.conn());
    for c in &cases {
        restore(&mut fb, &c.key, c.payload.as_deref().unwrap());
    }
    compare_all(&mut rb, &mut fb, &cases);
    evolve(&mut rb, &mut fb, &cases);
    compare_all(&mut rb, &mut fb, &cases);
    // RedisBloom saves them back as version 4 (options kept); that loads too.
    for c in &cases {
        let payload = dump(&mut rb, c.key.as_bytes());
        let again = format!("{}:v4", c.key);
        restore(&mut fb, &again, &payload);
        compare_key(&mut rb, &mut fb, c, &again);
    }
}

// ---------------------------------------------------------------------------------------------
// Payloads that are neither valid RedisBloom nor valid ferrobloom data
// ---------------------------------------------------------------------------------------------

fn restore_value(con: &mut Connection, key: &str, payload: &[u8]) -> String {
    let c = vec![
        b"RESTORE".to_vec(),
        key.as_bytes().to_vec(),
        b"0".to_vec(),
        payload.to_vec(),
    ];
    reply(con, &c)
}

#[test]
fn hostile_redisbloom_payloads_are_refused_and_change_nothing() {
    let s = start_ferrobloom();
    let mut con = s.conn();
    let e = 0.01;
    let link =
        |entries: u64, error: f64, hashes: u64, bpe: f64, bits: u64, n2: u64, bytes: usize| {
            vec![
                Field::U(entries),
                Field::D(error),
                Field::U(hashes),
                Field::D(bpe),
                Field::U(bits),
                Field::U(n2),
                Field::S(vec![0; bytes]),
                Field::U(0),
            ]
        };
    let bf = |nlinks: u64, options: u64, links: Vec<Field>| {
        let mut f = vec![
            Field::U(0),
            Field::U(nlinks),
            Field::U(options),
            Field::U(2),
        ];
        f.extend(links);
        module_dump("MBbloom--", 4, &f)
    };
    let good_link = || link(100, e, hashes(e), bpe(e), 960, 0, 120);
    let cf = |fields: Vec<Field>| module_dump("MBbloomCF", 4, &fields);
    let cf_head = |filters: u64, buckets: u64, bs: u64, mi: u64, exp: u64| {
        vec![
            Field::U(filters),
            Field::U(buckets),
            Field::U(0),
            Field::U(0),
            Field::U(bs),
            Field::U(mi),
            Field::U(exp),
        ]
    };
    let cf_sub = |buckets: u64, bytes: usize| vec![Field::U(buckets), Field::S(vec![0; bytes])];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("no links", bf(0, 5, Vec::new())),
        ("5000 links", bf(5000, 5, good_link())),
        ("unknown option bit", bf(1, 5 | 16, good_link())),
        (
            "error rate 0",
            bf(1, 5, link(100, 0.0, 7, bpe(e), 960, 0, 120)),
        ),
        (
            "error rate 1.5",
            bf(1, 5, link(100, 1.5, 7, bpe(e), 960, 0, 120)),
        ),
        ("no hashes", bf(1, 5, link(100, e, 0, bpe(e), 960, 0, 120))),
        (
            "10^6 hashes",
            bf(1, 5, link(100, e, 1_000_000, bpe(e), 960, 0, 120)),
        ),
        ("n2 = 64", bf(1, 5, link(100, e, 7, bpe(e), 960, 64, 120))),
        (
            "bits beyond the bytes",
            bf(1, 5, link(100, e, 7, bpe(e), 10_000, 0, 120)),
        ),
        (
            "2^40 bits in 8 bytes",
            bf(1, 5, link(100, e, 7, bpe(e), 0, 40, 8)),
        ),
        (
            "NaN bits per entry",
            bf(1, 5, link(100, e, 7, f64::NAN, 960, 0, 120)),
        ),
        ("two links announced, one sent", bf(2, 5, good_link())),
        ("cuckoo: no sub-filters", cf(cf_head(0, 64, 2, 20, 1))),
        ("cuckoo: 3 buckets", {
            let mut f = cf_head(1, 3, 2, 20, 1);
            f.extend(cf_sub(3, 6));
            cf(f)
        }),
        ("cuckoo: bucket size 0", {
            let mut f = cf_head(1, 64, 0, 20, 1);
            f.extend(cf_sub(64, 0));
            cf(f)
        }),
        ("cuckoo: bucket size 300", {
            let mut f = cf_head(1, 64, 300, 20, 1);
            f.extend(cf_sub(64, 64 * 300));
            cf(f)
        }),
        ("cuckoo: no iterations", {
            let mut f = cf_head(1, 64, 2, 0, 1);
            f.extend(cf_sub(64, 128));
            cf(f)
        }),
        ("cuckoo: expansion 3", {
            let mut f = cf_head(2, 64, 2, 20, 3);
            f.extend(cf_sub(64, 128));
            f.extend(cf_sub(192, 384));
            cf(f)
        }),
        ("cuckoo: expansion 0 with two sub-filters", {
            let mut f = cf_head(2, 64, 2, 20, 0);
            f.extend(cf_sub(64, 128));
            f.extend(cf_sub(64, 128));
            cf(f)
        }),
        ("cuckoo: slots one byte short", {
            let mut f = cf_head(1, 64, 2, 20, 1);
            f.extend(cf_sub(64, 127));
            cf(f)
        }),
        ("cuckoo: sub-filter bucket count disagrees", {
            let mut f = cf_head(1, 64, 2, 20, 1);
            f.extend(cf_sub(128, 256));
            cf(f)
        }),
        ("cuckoo: 2^55 buckets announced", {
            let mut f = cf_head(1, 1 << 55, 2, 20, 1);
            f.extend(cf_sub(1 << 55, 16));
            cf(f)
        }),
        ("cuckoo: version 5 reader on version 4 data", {
            let mut f = cf_head(1, 64, 2, 20, 1);
            f.extend(cf_sub(64, 128));
            module_dump("MBbloomCF", 5, &f)
        }),
    ];
    let _: () = redis::cmd("SET")
        .arg("other")
        .arg("x")
        .query(&mut con)
        .unwrap();
    for (what, payload) in &cases {
        let r = restore_value(&mut con, "bad", payload);
        assert_eq!(r, "error: ERR Bad data format", "{what}");
        let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
        assert_eq!(n, 1, "{what} changed the keyspace");
    }
    // The same shapes as SCANDUMP headers, through LOADCHUNK.
    let mut h = Vec::new();
    h.extend_from_slice(&0u64.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&5u32.to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes());
    for v in [120u64, 960, 0] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h.extend_from_slice(&e.to_le_bytes());
    h.extend_from_slice(&bpe(e).to_le_bytes());
    h.extend_from_slice(&(hashes(e) as u32).to_le_bytes());
    h.extend_from_slice(&100u64.to_le_bytes());
    h.push(0);
    assert_eq!(h.len(), 73);
    let load = |con: &mut Connection, kind: Kind, key: &str, data: &[u8]| {
        let c = vec![
            kind.prefix("LOADCHUNK").into_bytes(),
            key.as_bytes().to_vec(),
            b"1".to_vec(),
            data.to_vec(),
        ];
        reply(con, &c)
    };
    assert_eq!(load(&mut con, Kind::Bloom, "ok", &h), "ok");
    let mut bad = h.clone();
    bad[28..36].copy_from_slice(&(1u64 << 40).to_le_bytes()); // bits beyond the bytes
    assert!(load(&mut con, Kind::Bloom, "bad", &bad).starts_with("error"));
    let mut bad = h.clone();
    bad[8..12].copy_from_slice(&2u32.to_le_bytes()); // two links, one record
    assert!(load(&mut con, Kind::Bloom, "bad", &bad).starts_with("error"));
    let mut c = Vec::new();
    for v in [0u64, 1 << 50, 0, 1] {
        c.extend_from_slice(&v.to_le_bytes());
    }
    for v in [2u16, 20, 1] {
        c.extend_from_slice(&v.to_le_bytes());
    }
    // 2^50 buckets: refused by the memory cap at once.
    assert!(load(&mut con, Kind::Cuckoo, "bad", &c).starts_with("error"));
    c[8..16].copy_from_slice(&64u64.to_le_bytes());
    assert_eq!(load(&mut con, Kind::Cuckoo, "okc", &c), "ok");
    let n: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(n, 3);
    // The templates the bad cases were cut from are good data.
    assert_eq!(
        restore_value(&mut con, "good", &bf(1, 5, good_link())),
        "ok"
    );
    let mut f = cf_head(2, 64, 2, 20, 2);
    f.extend(cf_sub(64, 128));
    f.extend(cf_sub(128, 256));
    assert_eq!(restore_value(&mut con, "goodc", &cf(f)), "ok");
    // A client's RESTORE is held to the configured limits, RedisBloom data included.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("bf.max-filter-memory")
        .arg("4096")
        .query(&mut con)
        .unwrap();
    let big = bf(1, 5, link(1000, e, hashes(e), bpe(e), 9600, 0, 1200 * 8));
    assert_eq!(
        restore_value(&mut con, "big", &big),
        "error: ERR Bad data format"
    );
    assert!(s.is_alive());
}
