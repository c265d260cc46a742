//! valkey-bloom 1.0's BF.INSERT / BF.RESERVE options (`TIGHTENING ratio`, `SEED
//! 32-bytes`, `VALIDATESCALETO n`) and BF.INFO's `ERROR | TIGHTENING |
//! MAXSCALEDCAPACITY` single fields, against the behaviour read in valkey-bloom's
//! source and command docs (no valkey-bloom build exists here): its error texts, the
//! filters the options make (link sizes, hash counts, error rates, growth), its
//! refusals, and the replication of the new parameters. Persistence of the new
//! parameters through RDB, AOF, DUMP/RESTORE, SCANDUMP/LOADCHUNK, COPY and replicas
//! is in `crates/ferrobloom/tests/bf_persistence/` (the standard set's `fs:tight` and `fs:seeded`).

mod common;

use common::bf::*;
use common::*;
use redis::{Connection, Value};

const SEED_A: &str = "0123456789abcdef0123456789abcdef";
const SEED_B: &str = "0123456789abcdef0123456789abcdeX";

/// `(capacity, hashes, bytes, ratio)` of every link, from BF.DEBUG.
fn links(con: &mut Connection, key: &str) -> Vec<(u64, u32, u64, f64)> {
    debug(con, key)
        .iter()
        .skip(1)
        .map(|line| {
            let get = |name: &str| -> String {
                line.split(' ')
                    .find_map(|w| w.strip_prefix(&format!("{name}:")))
                    .unwrap_or_else(|| panic!("no {name} in {line}"))
                    .to_string()
            };
            (
                get("capacity").parse().unwrap(),
                get("hashes").parse().unwrap(),
                get("bytes").parse().unwrap(),
                get("ratio").parse().unwrap(),
            )
        })
        .collect()
}

/// A double single-field reply of BF.INFO, either protocol.
fn info_f64(con: &mut Connection, key: &str, field: &str) -> f64 {
    let v = rawv(con, &["BF.INFO", key, field]);
    let inner = match v {
        Value::Array(a) if a.len() == 1 => a.into_iter().next().unwrap(),
        Value::Map(m) if m.len() == 1 => m.into_iter().next().unwrap().1,
        other => panic!("BF.INFO {key} {field}: {}", show(&other)),
    };
    redis::from_redis_value(inner).unwrap()
}

#[test]
fn every_option_and_bad_value_has_valkey_blooms_error_text() {
    let s = Server::start();
    let mut con = s.conn();
    // Both commands, each bad value; nothing is created.
    for (opts, want) in [
        (&["TIGHTENING", "abc"][..], "ERR bad tightening ratio"),
        (
            &["TIGHTENING", "1"][..],
            "ERR (0 < tightening ratio range < 1)",
        ),
        (
            &["TIGHTENING", "0"][..],
            "ERR (0 < tightening ratio range < 1)",
        ),
        (
            &["TIGHTENING", "1.5"][..],
            "ERR (0 < tightening ratio range < 1)",
        ),
        (&["SEED", "tooshort"][..], "ERR invalid seed"),
        (&["SEED", ""][..], "ERR invalid seed"),
        (
            &["SEED", "0123456789abcdef0123456789abcdef0"][..],
            "ERR invalid seed",
        ),
        (
            &["VALIDATESCALETO", "0"][..],
            "ERR (capacity should be larger than 0)",
        ),
        (&["VALIDATESCALETO", "-5"][..], "ERR bad capacity"),
        (&["VALIDATESCALETO", "1.5"][..], "ERR bad capacity"),
        (
            &["NONSCALING", "VALIDATESCALETO", "100"][..],
            "ERR cannot use NONSCALING and VALIDATESCALETO options together",
        ),
        (
            &["VALIDATESCALETO", "100", "NONSCALING"][..],
            "ERR cannot use NONSCALING and VALIDATESCALETO options together",
        ),
        (
            &["LAYOUT", "redisbloom", "SEED", SEED_A][..],
            "ERR TIGHTENING and SEED cannot be used with LAYOUT redisbloom",
        ),
        (
            &["TIGHTENING", "0.7", "LAYOUT", "redisbloom"][..],
            "ERR TIGHTENING and SEED cannot be used with LAYOUT redisbloom",
        ),
    ] {
        let mut r = vec!["BF.RESERVE", "k", "0.01", "100"];
        r.extend_from_slice(opts);
        assert_eq!(errv(&mut con, &r), want, "{r:?}");
        let mut i = vec!["BF.INSERT", "k"];
        i.extend_from_slice(opts);
        i.extend_from_slice(&["ITEMS", "a"]);
        assert_eq!(errv(&mut con, &i), want, "{i:?}");
        assert_eq!(int(&mut con, "EXISTS k"), 0);
    }
    // A keyword without its value.
    for kw in ["TIGHTENING", "SEED", "VALIDATESCALETO"] {
        assert_eq!(
            errv(&mut con, &["BF.RESERVE", "k", "0.01", "100", kw]),
            "ERR wrong number of arguments for 'bf.reserve' command"
        );
        assert_eq!(
            errv(&mut con, &["BF.INSERT", "k", kw]),
            "ERR wrong number of arguments for 'bf.insert' command"
        );
    }
    // Every option together, in any order and case, on both commands.
    okv(
        &mut con,
        &[
            "BF.RESERVE",
            "r",
            "0.01",
            "100",
            "seed",
            SEED_A,
            "EXPANSION",
            "4",
            "validatescaleto",
            "10000",
            "Tightening",
            "0.75",
        ],
    );
    assert_eq!(
        qv(
            &mut con,
            &[
                "BF.INSERT",
                "i",
                "VALIDATESCALETO",
                "10000",
                "TIGHTENING",
                "0.75",
                "CAPACITY",
                "100",
                "EXPANSION",
                "4",
                "ERROR",
                "0.01",
                "SEED",
                SEED_A,
                "ITEMS",
                "a",
            ]
        ),
        "[1]"
    );
    assert_eq!(int(&mut con, "BF.ADD r a"), 1);
    // Same parameters and seed: the same filter, bit for bit.
    assert_eq!(
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "r"]),
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "i"])
    );
    assert_eq!(info_f64(&mut con, "r", "TIGHTENING"), 0.75);
    // With NOCREATE on an existing key the options are checked and ignored.
    assert_eq!(
        qv(
            &mut con,
            &[
                "BF.INSERT",
                "i",
                "NOCREATE",
                "TIGHTENING",
                "0.3",
                "SEED",
                SEED_B,
                "ITEMS",
                "b"
            ]
        ),
        "[1]"
    );
    assert_eq!(info_f64(&mut con, "i", "TIGHTENING"), 0.75);
    assert_eq!(
        errv(
            &mut con,
            &[
                "BF.INSERT",
                "none",
                "NOCREATE",
                "TIGHTENING",
                "0.3",
                "ITEMS",
                "b"
            ]
        ),
        "ERR not found"
    );
}

#[test]
fn tightening_sets_each_new_links_error_rate() {
    let s = Server::start();
    let mut con = s.conn();
    let items = numbered("t", 3000);
    for (key, ratio) in [
        ("default", None),
        ("t0.5", Some("0.5")),
        ("t0.9", Some("0.9")),
        ("t0.2", Some("0.2")),
    ] {
        let mut args = vec!["BF.INSERT", key, "CAPACITY", "100", "ERROR", "0.01"];
        if let Some(r) = ratio {
            args.extend_from_slice(&["TIGHTENING", r]);
        }
        args.push("ITEMS");
        args.extend(items.iter().map(|s| s.as_str()));
        let _ = rawv(&mut con, &args);
        let r: f64 = ratio.map_or(0.5, |r| r.parse().unwrap());
        let l = links(&mut con, key);
        // 100 + 200 + 400 + 800 + 1600 >= 3000 (less the false positives).
        assert!(l.len() >= 5, "{key}: {l:?}");
        let mut want_error = 0.005; // the first link: error / 2, as RedisBloom
        let mut size = 32u64;
        for (i, (cap, hashes, bytes, ratio)) in l.iter().enumerate() {
            assert_eq!(*cap, 100 << i, "{key} link {i}");
            // BF.DEBUG prints %g: 6 significant digits.
            assert!(
                ((ratio - want_error) / want_error).abs() < 1e-5,
                "{key} link {i}: ratio {ratio}, want {want_error}"
            );
            let bpe = want_error.ln().abs() / 0.480453013918201;
            assert_eq!(
                *hashes,
                (std::f64::consts::LN_2 * bpe).ceil() as u32,
                "{key} link {i}"
            );
            assert_eq!(
                *bytes + 96,
                redisbloom_size(*cap, want_error),
                "{key} link {i}"
            );
            size += 64 + bytes;
            want_error *= r;
        }
        assert_eq!(info_num(&mut con, key, "SIZE"), size as i64);
        assert_eq!(info_f64(&mut con, key, "ERROR"), 0.01, "{key}");
        assert_eq!(info_f64(&mut con, key, "TIGHTENING"), r, "{key}");
    }
    // An explicit 0.5 is the default filter.
    assert_eq!(
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "default"]),
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "t0.5"])
    );
    // A looser ratio costs fewer hashes per new link than a tighter one.
    assert!(links(&mut con, "t0.9")[4].1 < links(&mut con, "t0.2")[4].1);
}

#[test]
fn a_seed_changes_which_bits_an_item_sets() {
    let s = Server::start();
    let mut con = s.conn();
    let items = numbered("member", 2000);
    let probes = numbered("probe", 50_000);
    let mut answers = Vec::new();
    for (key, seed) in [
        ("plain", None),
        ("a", Some(SEED_A)),
        ("a2", Some(SEED_A)),
        ("b", Some(SEED_B)),
    ] {
        let mut args = vec!["BF.RESERVE", key, "0.05", "2000", "NONSCALING"];
        if let Some(seed) = seed {
            args.extend_from_slice(&["SEED", seed]);
        }
        okv(&mut con, &args);
        let mut add = vec!["BF.MADD", key];
        add.extend(items.iter().map(|s| s.as_str()));
        let _ = rawv(&mut con, &add);
        // No false negatives, whatever the seed.
        let mut ex = vec!["BF.MEXISTS", key];
        ex.extend(items.iter().map(|s| s.as_str()));
        let r: Vec<i64> = redis::from_redis_value(rawv(&mut con, &ex)).unwrap();
        assert!(r.iter().all(|v| *v == 1), "{key}");
        let mut ex = vec!["BF.MEXISTS", key];
        ex.extend(probes.iter().map(|s| s.as_str()));
        let r: Vec<i64> = redis::from_redis_value(rawv(&mut con, &ex)).unwrap();
        answers.push((key, r));
    }
    let positives = |r: &[i64]| r.iter().filter(|v| **v == 1).count();
    // The false positives of different seeds are different items (each set has
    // about 5% of 50,000 = 2,500; two independent sets share about 5% of those).
    let shared = |x: &[i64], y: &[i64]| {
        x.iter()
            .zip(y)
            .filter(|(a, b)| **a == 1 && **b == 1)
            .count()
    };
    let (plain, a, a2, b) = (&answers[0].1, &answers[1].1, &answers[2].1, &answers[3].1);
    for r in [plain, a, b] {
        let p = positives(r);
        assert!((1500..3500).contains(&p), "{p}");
    }
    assert_eq!(a, a2, "the same seed hashes the same");
    for (x, y) in [(plain, a), (a, b), (plain, b)] {
        let s = shared(x, y);
        assert!(s < positives(x) / 4, "{s} shared false positives");
    }
    assert_eq!(
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "a"]),
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "a2"])
    );
    assert_ne!(
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "a"]),
        qv(&mut con, &["DEBUG", "DIGEST-VALUE", "b"])
    );
    // Same shape as the unseeded filter; the default BF.INFO stays RedisBloom's.
    let (pa, pp) = (
        pairs(&rawv(&mut con, &["BF.INFO", "a"])),
        pairs(&rawv(&mut con, &["BF.INFO", "plain"])),
    );
    assert_eq!(pa.len(), 5);
    for i in [0, 1, 2, 4] {
        assert_eq!(pa[i], pp[i]);
    }
}

#[test]
fn validatescaleto_refuses_what_the_filter_could_never_hold() {
    let s = Server::start();
    let mut con = s.conn();
    // bf-max-links 3: 100 + 200 + 400 = 700 items at most.
    let _ = rawv(&mut con, &["CONFIG", "SET", "bf.bf-max-links", "3"]);
    okv(
        &mut con,
        &["BF.RESERVE", "ok", "0.01", "100", "VALIDATESCALETO", "700"],
    );
    assert_eq!(info_num(&mut con, "ok", "MAXSCALEDCAPACITY"), 700);
    for cmd in [
        vec!["BF.RESERVE", "k", "0.01", "100", "VALIDATESCALETO", "701"],
        vec![
            "BF.INSERT",
            "k",
            "CAPACITY",
            "100",
            "VALIDATESCALETO",
            "701",
            "ITEMS",
            "a",
        ],
    ] {
        assert_eq!(
            errv(&mut con, &cmd),
            "ERR provided VALIDATESCALETO exceeds the maximum number of sub-filters (bf.bf-max-links)"
        );
        assert_eq!(int(&mut con, "EXISTS k"), 0);
    }
    let _ = rawv(&mut con, &["CONFIG", "SET", "bf.bf-max-links", "64"]);

    // The memory cap: the links that fit in 1,000,000 bytes (BF.INFO Size: 32 +
    // 64 per link + the bits).
    let _ = rawv(
        &mut con,
        &["CONFIG", "SET", "bf.max-filter-memory", "1000000"],
    );
    let (mut want, mut size, mut cap, mut error) = (0i64, 32u64, 100u64, 0.005f64);
    loop {
        size += redisbloom_size(cap, error) - 32;
        if size > 1_000_000 {
            break;
        }
        want += cap as i64;
        cap *= 2;
        error /= 2.0;
    }
    okv(&mut con, &["BF.RESERVE", "mem", "0.01", "100"]);
    assert_eq!(info_num(&mut con, "mem", "MAXSCALEDCAPACITY"), want);
    let at = want.to_string();
    let over = (want + 1).to_string();
    okv(
        &mut con,
        &["BF.RESERVE", "m1", "0.01", "100", "VALIDATESCALETO", &at],
    );
    assert_eq!(
        errv(
            &mut con,
            &["BF.INSERT", "m2", "VALIDATESCALETO", &over, "ITEMS", "a"]
        ),
        "ERR provided VALIDATESCALETO causes bloom object to exceed memory limit"
    );
    assert_eq!(int(&mut con, "EXISTS m2"), 0);
    // The filter really grows that far and no further.
    let items = numbered("m", want as usize + 2000);
    for chunk in items.chunks(5000) {
        let _ = rawv(&mut con, &with_items("BF.MADD m1", chunk));
    }
    assert_eq!(info_num(&mut con, "m1", "CAPACITY"), want);
    let _ = rawv(&mut con, &["CONFIG", "SET", "bf.max-filter-memory", "4gb"]);

    // A ratio that drives the error rate below what 128 hash functions reach.
    assert_eq!(
        errv(
            &mut con,
            &[
                "BF.INSERT",
                "fp",
                "CAPACITY",
                "1",
                "EXPANSION",
                "1",
                "TIGHTENING",
                "0.001",
                "VALIDATESCALETO",
                "100",
                "ITEMS",
                "a"
            ]
        ),
        "ERR provided VALIDATESCALETO causes false positive to degrade to 0"
    );
    okv(
        &mut con,
        &[
            "BF.RESERVE",
            "fp",
            "0.01",
            "1",
            "EXPANSION",
            "1",
            "TIGHTENING",
            "0.001",
        ],
    );
    let max = info_num(&mut con, "fp", "MAXSCALEDCAPACITY");
    assert!((5..40).contains(&max), "{max}");
    // Adding items goes exactly that far, then refuses with the hash-count error.
    let mut added = 0;
    for i in 0..100 {
        match rawv(&mut con, &["BF.ADD", "fp", &format!("x{i}")]) {
            Value::Int(1) => added += 1,
            Value::Int(0) => {}
            Value::ServerError(e) => {
                assert!(
                    e.details().unwrap_or("").contains("128 hash functions"),
                    "{e:?}"
                );
                break;
            }
            other => panic!("{}", show(&other)),
        }
    }
    assert_eq!(added, max);
}

#[test]
fn info_single_fields_of_valkey_bloom() {
    let s = Server::start();
    for resp3 in [false, true] {
        let mut con = if resp3 { s.conn_resp3() } else { s.conn() };
        let _ = rawv(&mut con, &["DEL", "sc", "ns"]);
        okv(
            &mut con,
            &["BF.RESERVE", "sc", "0.001", "1000", "TIGHTENING", "0.6"],
        );
        okv(
            &mut con,
            &["BF.RESERVE", "ns", "0.02", "1000", "NONSCALING"],
        );
        let err_field = rawv(&mut con, &["BF.INFO", "sc", "ERROR"]);
        let label_value = |v: &Value| -> (Option<String>, Value) {
            match v {
                Value::Array(a) if a.len() == 1 => (None, a[0].clone()),
                Value::Map(m) if m.len() == 1 => (Some(text(&m[0].0)), m[0].1.clone()),
                other => panic!("{}", show(other)),
            }
        };
        let (label, value) = label_value(&err_field);
        if resp3 {
            assert_eq!(label.as_deref(), Some("Error rate"));
            assert_eq!(value, Value::Double(0.001));
        } else {
            assert_eq!(label, None);
            assert!(matches!(value, Value::BulkString(_)), "{}", show(&value));
        }
        assert_eq!(info_f64(&mut con, "sc", "error"), 0.001);
        assert_eq!(info_f64(&mut con, "ns", "ERROR"), 0.02);
        assert_eq!(info_f64(&mut con, "sc", "TIGHTENING"), 0.6);
        let (label, value) = label_value(&rawv(&mut con, &["BF.INFO", "sc", "MAXSCALEDCAPACITY"]));
        assert!(
            matches!(value, Value::Int(n) if n > 1_000_000),
            "{}",
            show(&value)
        );
        if resp3 {
            assert_eq!(label.as_deref(), Some("Max scaled capacity"));
        }
        // Only for scaling filters, as in valkey-bloom.
        for f in ["TIGHTENING", "MAXSCALEDCAPACITY"] {
            assert_eq!(
                errv(&mut con, &["BF.INFO", "ns", f]),
                "Invalid information value"
            );
        }
        // The default reply stays RedisBloom's five fields.
        let v = rawv(&mut con, &["BF.INFO", "sc"]);
        let keys: Vec<String> = pairs(&v).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, BF_INFO_KEYS);
    }
}

#[test]
fn creation_replicates_tightening_and_seed() {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut p = primary.conn();
    // The replica's own limits would refuse this VALIDATESCALETO: it is not replicated.
    let mut r = replica.conn();
    let _ = rawv(&mut r, &["CONFIG", "SET", "bf.bf-max-links", "2"]);
    let items = numbered("r", 1000);
    let mut args = vec![
        "BF.INSERT",
        "rep",
        "CAPACITY",
        "50",
        "TIGHTENING",
        "0.7",
        "SEED",
        SEED_B,
        "VALIDATESCALETO",
        "5000",
        "ITEMS",
    ];
    args.extend(items.iter().map(|s| s.as_str()));
    let _ = rawv(&mut p, &args);
    okv(
        &mut p,
        &[
            "BF.RESERVE",
            "rep2",
            "0.01",
            "10",
            "SEED",
            SEED_A,
            "LAYOUT",
            "blocked",
        ],
    );
    assert_eq!(int(&mut p, "BF.ADD rep2 x"), 1);
    primary.wait_for_offset(&replica);
    for key in ["rep", "rep2"] {
        assert_eq!(
            qv(&mut p, &["DEBUG", "DIGEST-VALUE", key]),
            qv(&mut r, &["DEBUG", "DIGEST-VALUE", key]),
            "{key}"
        );
    }
    assert_eq!(info_f64(&mut r, "rep", "TIGHTENING"), 0.7);
    // Grows on the replica exactly as on the primary (links beyond its own limit
    // are the primary's to decide).
    assert!(links(&mut r, "rep").len() >= 4);
    assert_eq!(links(&mut p, "rep"), links(&mut r, "rep"));
}
