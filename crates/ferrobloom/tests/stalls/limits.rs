//! Limits on every client-sent path at the boundary (and a writable replica's RESTOREs),
//! error-rate configs that would make every auto-creation fail, MEMORY USAGE against
//! used_memory, counts above 2^63, the rate limit of refused-payload log lines, and
//! VALIDATESCALETO / MAXSCALEDCAPACITY.

use super::*;

fn config_set(con: &mut Connection, name: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(con)
        .unwrap_or_else(|e| panic!("CONFIG SET {name} {value}: {e}"));
}

/// A filter type as clients send it: LOADCHUNK command, RDB type name.
type Family = (&'static [u8], &'static str);
const BLOOM: Family = (b"BF.LOADCHUNK", "MBbloom--");
const CUCKOO: Family = (b"CF.LOADCHUNK", "MBbloomCF");

/// The same filter through both client paths: `LOADCHUNK key 1 <header>`, and a
/// RESTORE (into `r<key>`) of a payload with that header and `data`; each must
/// answer `want` ("ok" or "error").
fn both_paths(
    con: &mut Connection,
    (loadchunk, type_name): Family,
    key: &str,
    header: Vec<u8>,
    data: Vec<Vec<u8>>,
    want: &str,
    what: &str,
) {
    let v = cmd_bytes(con, &[loadchunk, key.as_bytes(), b"1", &header]);
    assert_eq!(ok_or_err(&v), want, "LOADCHUNK of {what}: {v:?}");
    let p = payload(type_name, std::iter::once(header).chain(data).collect());
    let v = cmd_bytes(con, &[b"RESTORE", format!("r{key}").as_bytes(), b"0", &p]);
    assert_eq!(ok_or_err(&v), want, "RESTORE of {what}: {v:?}");
}

fn ok_or_err(v: &Value) -> &'static str {
    if *v == Value::Okay {
        "ok"
    } else if is_err(v) {
        "error"
    } else {
        "other"
    }
}

#[test]
fn every_limit_applies_to_what_a_client_sends_at_the_boundary() {
    let s = server();
    let mut con = s.conn();
    config_set(&mut con, "bf.bf-max-links", "3");
    config_set(&mut con, "bf.cf-max-expansions", "3");
    // Bloom headers with 3 and 4 links (LOADCHUNK, and RESTORE of the same).
    let chain = |n: u32| -> Vec<u8> {
        let mut h = b"FBbf\x01\0\0\0".to_vec();
        h.extend_from_slice(&0u64.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        h.extend_from_slice(&n.to_le_bytes());
        for _ in 0..n {
            for v in [100u64, 0, 0.01f64.to_bits(), 1024] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            h.extend_from_slice(&7u32.to_le_bytes());
            h.extend_from_slice(&[0, 0, 0, 0]);
        }
        h
    };
    for (n, want) in [(3, "ok"), (4, "error")] {
        let data = vec![vec![0u8; 128]; n as usize];
        let what = format!("{n} links");
        both_paths(
            &mut con,
            BLOOM,
            &format!("bf{n}"),
            chain(n),
            data,
            want,
            &what,
        );
    }
    // Cuckoo headers with 3 and 4 sub-filters.
    for (n, want) in [(3u32, "ok"), (4, "error")] {
        let data = vec![vec![0u8; 8]; n as usize];
        let what = format!("{n} sub-filters");
        let h = cuckoo_header(n, 4, 2);
        both_paths(&mut con, CUCKOO, &format!("cf{n}"), h, data, want, &what);
    }
    // max-filter-memory, exactly at and one byte under the formula's size: a Bloom
    // link of 8192 bytes is 32 + 64 + 8192; a cuckoo table of 8192 bytes is
    // 40 + 16 + 8192.
    for (cap, want) in [(32 + 64 + 8192, "ok"), (32 + 64 + 8191, "error")] {
        config_set(&mut con, "bf.max-filter-memory", &cap.to_string());
        let h = bloom_header(1000, 0, 8192 * 8);
        let what = format!("a cap of {cap}");
        both_paths(
            &mut con,
            BLOOM,
            &format!("mem{cap}"),
            h,
            vec![vec![0; 8192]],
            want,
            &what,
        );
    }
    for (cap, want) in [(40 + 16 + 8192, "ok"), (40 + 16 + 8191, "error")] {
        config_set(&mut con, "bf.max-filter-memory", &cap.max(4096).to_string());
        let h = cuckoo_header(1, 2048, 4);
        let key = format!("cmem{cap}");
        let v = cmd_bytes(&mut con, &[b"CF.LOADCHUNK", key.as_bytes(), b"1", &h]);
        assert_eq!(
            ok_or_err(&v),
            want,
            "CF.LOADCHUNK under a cap of {cap}: {v:?}"
        );
        let v = cmd_bytes(
            &mut con,
            &[
                b"CF.RESERVE",
                format!("res{cap}").as_bytes(),
                b"8192",
                b"BUCKETSIZE",
                b"4",
            ],
        );
        assert_eq!(
            ok_or_err(&v),
            want,
            "CF.RESERVE under a cap of {cap}: {v:?}"
        );
    }
}

#[test]
fn a_writable_replica_holds_client_restores_to_its_limits() {
    let primary = Server::start();
    let replica = Server::builder()
        .args(&[
            "--replica-read-only",
            "no",
            "--bf.max-filter-memory",
            "4096",
        ])
        .replica_of(&primary)
        .start();
    primary.wait_for_sync(&replica);
    let mut pcon = primary.conn();
    let _: () = redis::cmd("BF.RESERVE")
        .arg("big")
        .arg("0.01")
        .arg("10000")
        .query(&mut pcon)
        .unwrap();
    let big = dump(&mut pcon, b"big");
    // The primary's own write reaches the replica despite the replica's lower cap.
    primary.wait_for_offset(&replica);
    let mut rcon = replica.conn();
    let n: i64 = redis::cmd("EXISTS").arg("big").query(&mut rcon).unwrap();
    assert_eq!(n, 1);
    // A client's RESTORE on the writable replica is held to the cap.
    let v = cmd_bytes(&mut rcon, &[b"RESTORE", b"mine", b"0", &big]);
    assert!(is_err(&v), "{v:?}");
    let n: i64 = redis::cmd("EXISTS").arg("mine").query(&mut rcon).unwrap();
    assert_eq!(n, 0);
}

#[test]
fn unusable_default_error_rates_are_refused_and_shown_short() {
    let s = server();
    let mut con = s.conn();
    for v in ["1e-300", "5e-324", "1e-39"] {
        let err = exec_err(&mut con, &["CONFIG", "SET", "bf.bf-error-rate", v]);
        assert!(err.contains("too small"), "{v}: {err}");
    }
    let err = exec_err(&mut con, &["CONFIG", "SET", "bf.cf-error-rate", "1e-12"]);
    assert!(err.contains("too small"), "{err}");
    // Auto-creation still works, and the configs read back short and exact.
    let added: i64 = redis::cmd("BF.ADD")
        .arg("b")
        .arg("x")
        .query(&mut con)
        .unwrap();
    assert_eq!(added, 1);
    config_set(&mut con, "bf.bf-error-rate", "1e-30");
    config_set(&mut con, "bf.cf-error-rate", "1e-8");
    let shown: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("bf.*-error-rate")
        .query(&mut con)
        .unwrap();
    assert!(shown.contains(&"1e-30".to_string()), "{shown:?}");
    assert!(shown.contains(&"1e-8".to_string()), "{shown:?}");
    let added: i64 = redis::cmd("BF.ADD")
        .arg("b2")
        .arg("x")
        .query(&mut con)
        .unwrap();
    assert_eq!(added, 1);
    let added: i64 = redis::cmd("CF.ADD")
        .arg("c2")
        .arg("x")
        .query(&mut con)
        .unwrap();
    assert_eq!(added, 1);
    // An explicit rate that needs too many hash functions gets its own text.
    let err = exec_err(&mut con, &["BF.RESERVE", "t", "1e-60", "100"]);
    assert!(err.contains("more than 128 hash functions"), "{err}");
    let err = exec_err(
        &mut con,
        &["BF.INSERT", "t", "ERROR", "1e-60", "ITEMS", "a"],
    );
    assert!(err.contains("more than 128 hash functions"), "{err}");
}

#[test]
fn memory_usage_accounts_for_what_the_allocator_holds() {
    let s = server();
    let mut con = s.conn();
    let base = used(&s);
    let n = 20_000;
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("BF.ADD").arg(format!("b{i}")).arg("x").ignore();
        pipe.cmd("CF.ADD").arg(format!("c{i}")).arg("x").ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();
    let grown = used(&s) - base;
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("MEMORY").arg("USAGE").arg(format!("b{i}"));
        pipe.cmd("MEMORY").arg("USAGE").arg(format!("c{i}"));
    }
    let usage: Vec<u64> = pipe.query(&mut con).unwrap();
    let sum: u64 = usage.iter().sum();
    let ratio = grown as f64 / sum as f64;
    eprintln!("used_memory grew {grown} bytes, MEMORY USAGE sums to {sum}: ratio {ratio:.3}");
    // The keyspace's own tables (dict buckets) are not in any key's MEMORY USAGE.
    assert!((0.9..1.15).contains(&ratio), "ratio {ratio:.3}");
}

#[test]
fn counts_above_i64_are_never_negative() {
    let s = server();
    let mut con = s.conn();
    // RedisBloom's header (what LOADCHUNK takes for migrated filters) holds
    // unsigned counts; one link of 2^63 + 5 items.
    let big = (1u64 << 63) + 5;
    let mut h = Vec::new();
    h.extend_from_slice(&big.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&5u32.to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes());
    h.extend_from_slice(&128u64.to_le_bytes());
    h.extend_from_slice(&1024u64.to_le_bytes());
    h.extend_from_slice(&big.to_le_bytes());
    h.extend_from_slice(&0.01f64.to_le_bytes());
    h.extend_from_slice(&(0.01f64.ln() / 0.480453013918201).abs().to_le_bytes());
    h.extend_from_slice(&7u32.to_le_bytes());
    h.extend_from_slice(&u64::MAX.to_le_bytes());
    h.push(0);
    let v = cmd_bytes(&mut con, &[b"BF.LOADCHUNK", b"k", b"1", &h]);
    assert_eq!(v, Value::Okay);
    let card: i64 = redis::cmd("BF.CARD").arg("k").query(&mut con).unwrap();
    assert_eq!(card, i64::MAX);
    let info: Vec<i64> = redis::cmd("BF.INFO")
        .arg("k")
        .arg("CAPACITY")
        .query(&mut con)
        .unwrap();
    assert_eq!(info, vec![i64::MAX]);
    // ferrobloom's own header refuses such counts.
    let h = bloom_header(big, 0, 1024);
    let v = cmd_bytes(&mut con, &[b"BF.LOADCHUNK", b"k2", b"1", &h]);
    assert!(is_err(&v), "{v:?}");
}

#[test]
fn refused_payloads_do_not_flood_the_log() {
    let s = server();
    let mut con = s.conn();
    let bad = payload("MBbloom--", vec![b"not a header".to_vec()]);
    for i in 0..200 {
        let v = cmd_bytes(
            &mut con,
            &[b"RESTORE", format!("k{i}").as_bytes(), b"0", &bad],
        );
        assert!(is_err(&v));
    }
    let lines = s.log().matches("refusing MBbloom-- payload").count();
    assert!(
        (1..=3).contains(&lines),
        "{lines} log lines for 200 refusals"
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let _ = cmd_bytes(&mut con, &[b"RESTORE", b"again", b"0", &bad]);
    wait_until(
        std::time::Duration::from_secs(5),
        "the summary line",
        || s.log().contains("more refused payloads were not logged"),
    );
    assert!(!s.log().contains("RedisBloom's own format"));
}

/// valkey-bloom's VALIDATESCALETO and `BF.INFO … MAXSCALEDCAPACITY` size every link
/// the filter could grow (at most `bf.bf-max-links`, here the ceiling of 1024), not
/// the bits: bounded, for both layouts (a blocked link's full sizing costs about a
/// millisecond; the check stops its bisection as soon as the whole blocks are known).
#[test]
fn validatescaleto_and_maxscaledcapacity_are_bounded() {
    let s = server();
    let mut con = s.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("bf.bf-max-links")
        .arg("1024")
        .query(&mut con)
        .unwrap();
    for layout in ["classic", "blocked", "paired"] {
        for (cap, exp) in [("1", "1"), ("1000", "2")] {
            let key = format!("{layout}-{cap}");
            let args: Vec<&str> = vec![
                "BF.RESERVE",
                &key,
                "0.0001",
                cap,
                "LAYOUT",
                layout,
                "EXPANSION",
                exp,
                "TIGHTENING",
                "0.99",
                "VALIDATESCALETO",
                "100000000000",
            ];
            let b: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let v = assert_fast(&mut con, &format!("VALIDATESCALETO {key}"), &b);
            assert!(format!("{v:?}").contains("VALIDATESCALETO"), "{v:?}");
            let b: Vec<&[u8]> = args[..10].iter().map(|a| a.as_bytes()).collect();
            assert_fast(&mut con, &format!("BF.RESERVE {key}"), &b);
            let v = assert_fast(
                &mut con,
                &format!("MAXSCALEDCAPACITY {key}"),
                &[b"BF.INFO", key.as_bytes(), b"MAXSCALEDCAPACITY"],
            );
            assert!(matches!(&v, Value::Array(a) if matches!(a[0], Value::Int(n) if n > 0)));
        }
    }
}
