//! ferrobloom's own persisted encodings, pinned: `crates/ferrobloom/tests/fixtures/encodings/server.tsv`
//! holds the DUMP payload (Redis 7.0's, RDB version 10) and the SCANDUMP stream of
//! filters of every kind and layout that fixed commands build, windowed ones included.
//! (The core's `fixture_tests` pin the header and chunk bytes of the same kinds built in
//! process; RedisBloom's own payloads are pinned by `migration_fixtures.rs`.)
//!
//! - RESTORE of each committed payload gives back the committed SCANDUMP stream and
//!   answers the committed probes as recorded;
//! - the same commands today write byte for byte the committed DUMP body (everything
//!   before the server's RDB version and CRC trailer) and SCANDUMP stream (windowed
//!   filters, whose bytes hold the time they were written, are checked by the first
//!   promise only).
//!
//! `FERROBLOOM_WRITE_FIXTURES=1` appends the lines of new cases (committed lines never change).

mod common;

use common::*;
use redis::{Connection, Value};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/encodings/server.tsv"
);

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("fixture hex"))
        .collect()
}

fn items(tag: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{tag}:{i}")).collect()
}

/// Every case: key, creation command, items added (BF.MADD / CF.INSERT), deleted.
fn cases() -> Vec<(&'static str, Vec<&'static str>, usize, usize)> {
    vec![
        (
            "bf-default",
            vec!["BF.RESERVE", "bf-default", "0.01", "100"],
            450,
            0,
        ),
        (
            "bf-nonscaling",
            vec!["BF.RESERVE", "bf-nonscaling", "0.001", "100", "NONSCALING"],
            100,
            0,
        ),
        (
            "bf-blocked",
            vec![
                "BF.RESERVE",
                "bf-blocked",
                "0.01",
                "100",
                "EXPANSION",
                "4",
                "LAYOUT",
                "blocked",
            ],
            450,
            0,
        ),
        (
            "bf-paired",
            vec!["BF.RESERVE", "bf-paired", "0.01", "100", "LAYOUT", "paired"],
            450,
            0,
        ),
        (
            "bf-redisbloom",
            vec![
                "BF.RESERVE",
                "bf-redisbloom",
                "0.01",
                "100",
                "LAYOUT",
                "redisbloom",
            ],
            450,
            0,
        ),
        (
            "bf-options",
            vec![
                "BF.RESERVE",
                "bf-options",
                "0.001",
                "50",
                "TIGHTENING",
                "0.7",
                "SEED",
                "0123456789abcdef0123456789abcdef",
            ],
            300,
            0,
        ),
        (
            "bw-paired",
            vec!["BF.RESERVE", "bw-paired", "0.01", "100", "WINDOW", "60"],
            300,
            0,
        ),
        (
            "bw-classic",
            vec![
                "BF.RESERVE",
                "bw-classic",
                "0.01",
                "100",
                "WINDOW",
                "60",
                "LAYOUT",
                "classic",
                "NONSCALING",
            ],
            100,
            0,
        ),
        (
            "cf-default",
            vec!["CF.RESERVE", "cf-default", "64", "EXPANSION", "2"],
            200,
            30,
        ),
        (
            "cf-redisbloom",
            vec![
                "CF.RESERVE",
                "cf-redisbloom",
                "64",
                "BUCKETSIZE",
                "4",
                "LAYOUT",
                "redisbloom",
            ],
            200,
            30,
        ),
        // Classic links since link layout 4 (mixed probes): the same commands as
        // the cases of `BEFORE_LAYOUT_4`, under other names.
        (
            "bf-default-mixed",
            vec!["BF.RESERVE", "bf-default-mixed", "0.01", "100"],
            450,
            0,
        ),
        (
            "bf-nonscaling-mixed",
            vec![
                "BF.RESERVE",
                "bf-nonscaling-mixed",
                "0.001",
                "100",
                "NONSCALING",
            ],
            100,
            0,
        ),
        (
            "bf-options-mixed",
            vec![
                "BF.RESERVE",
                "bf-options-mixed",
                "0.001",
                "50",
                "TIGHTENING",
                "0.7",
                "SEED",
                "0123456789abcdef0123456789abcdef",
            ],
            300,
            0,
        ),
        (
            "bw-classic-mixed",
            vec![
                "BF.RESERVE",
                "bw-classic-mixed",
                "0.01",
                "100",
                "WINDOW",
                "60",
                "LAYOUT",
                "classic",
                "NONSCALING",
            ],
            100,
            0,
        ),
    ]
}

/// Cases written while classic links had link layout code 0 (double hashing):
/// their committed payloads still restore and answer as recorded, but the same
/// commands now create classic links with code 4 (mixed probes,
/// docs/design.md), so today's payload differs from the committed one in each
/// link record's layout byte (0 -> 4), in the bits, and possibly in the item
/// counts (other false positives met while adding); every other header field
/// is the same (checked by `same_shapes_but_layout_4`). Their today's bytes are
/// pinned by the `-mixed` cases.
const BEFORE_LAYOUT_4: [&str; 3] = ["bf-default", "bf-nonscaling", "bf-options"];

/// A ferrobloom Bloom header's fields without the item counts: fixed part
/// (after the total) and each link record's entries, error, bits, hashes,
/// layout byte.
fn shape_fields(header: &[u8]) -> (Vec<u8>, Vec<(Vec<u8>, u8)>) {
    let fixed = if header[4] == 2 { 72 } else { 24 };
    let mut head = header[..8].to_vec();
    head.extend_from_slice(&header[16..fixed]);
    let links = header[fixed..]
        .chunks(40)
        .map(|r| {
            let mut f = r[..8].to_vec();
            f.extend_from_slice(&r[16..36]);
            (f, r[36])
        })
        .collect();
    (head, links)
}

/// Today's header has the committed one's shape, every link with code 4
/// where the committed one had code 0 (see [`BEFORE_LAYOUT_4`]).
fn same_shapes_but_layout_4(key: &str, today: &[u8], committed: &[u8]) {
    let (th, tl) = shape_fields(today);
    let (ch, cl) = shape_fields(committed);
    assert_eq!(th, ch, "{key}: header fields differ");
    assert_eq!(tl.len(), cl.len(), "{key}: link count differs");
    for ((tf, tc), (cf, cc)) in tl.iter().zip(&cl) {
        assert_eq!(tf, cf, "{key}: link shape differs");
        assert_eq!((*tc, *cc), (4, 0), "{key}: layout codes");
    }
}

fn build(con: &mut Connection, key: &str, create: &[&str], n: usize, del: usize) {
    let mut c = redis::cmd(create[0]);
    c.arg(&create[1..]);
    let _: Value = c.query(con).expect("create");
    let its = items(key, n);
    for chunk in its.chunks(50) {
        let cmd = if key.starts_with("cf") {
            redis::cmd("CF.INSERT")
                .arg(key)
                .arg("ITEMS")
                .arg(chunk)
                .clone()
        } else {
            redis::cmd("BF.MADD").arg(key).arg(chunk).clone()
        };
        let _: Value = cmd.query(con).expect("add");
    }
    for it in its.iter().take(del) {
        let _: Value = redis::cmd("CF.DEL")
            .arg(key)
            .arg(it)
            .query(con)
            .expect("del");
    }
}

fn scandump(con: &mut Connection, key: &str) -> Vec<(i64, Vec<u8>)> {
    let cmd = if key.starts_with("cf") {
        "CF.SCANDUMP"
    } else {
        "BF.SCANDUMP"
    };
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd(cmd)
            .arg(key)
            .arg(it)
            .query(con)
            .expect("scandump");
        if next == 0 {
            return out;
        }
        out.push((next, data));
        it = next;
    }
}

fn answers(con: &mut Connection, key: &str, n: usize) -> String {
    let cmd = if key.starts_with("cf") {
        "CF.MEXISTS"
    } else {
        "BF.MEXISTS"
    };
    let mut probes = items(key, n);
    probes.extend(items("absent", 300));
    let v: Vec<i64> = redis::cmd(cmd)
        .arg(key)
        .arg(&probes)
        .query(con)
        .expect("mexists");
    v.iter().map(|x| if *x == 1 { '1' } else { '0' }).collect()
}

/// Whether a case's SCANDUMP iterators are walk iterators (a windowed filter's
/// name their generation, a ferrobloom-layout cuckoo filter's carry its move
/// count: docs/operations.md, "Live copies"): compared by their chunks only.
/// The committed streams' position iterators still load (the LOADCHUNK copy).
fn walk_iterators(key: &str) -> bool {
    key.starts_with("bw") || key == "cf-default"
}

/// The stream as compared: `iter:hex` parts, or the chunks alone (`hex`) for
/// walk iterators.
fn stream_cmp(key: &str, s: &str) -> String {
    if !walk_iterators(key) {
        return s.to_string();
    }
    s.split(',')
        .map(|p| p.split_once(':').map_or(p, |(_, d)| d))
        .collect::<Vec<_>>()
        .join(",")
}

fn stream_hex(s: &[(i64, Vec<u8>)]) -> String {
    s.iter()
        .map(|(i, d)| format!("{i}:{}", hex(d)))
        .collect::<Vec<_>>()
        .join(",")
}

/// DUMP's body: the payload without the 2-byte RDB version and 8-byte CRC.
fn body(dump: &[u8]) -> &[u8] {
    &dump[..dump.len().saturating_sub(10)]
}

#[test]
fn committed_payloads_restore_and_todays_payloads_match_them() {
    let s = Server::start();
    let mut con = s.conn();
    let mut lines = Vec::new();
    for (key, create, n, del) in cases() {
        build(&mut con, key, &create, n, del);
        let dump: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut con).expect("dump");
        let stream = scandump(&mut con, key);
        lines.push((key, dump, stream, answers(&mut con, key, n)));
    }
    if std::env::var_os("FERROBLOOM_WRITE_FIXTURES").is_some() {
        // Committed lines stay as they are: only new cases are appended.
        let mut text = std::fs::read_to_string(FILE).unwrap_or_else(|_| {
            String::from("# key\tDUMP (hex)\tSCANDUMP (iter:hex, ...)\tMEXISTS answers\n")
        });
        let committed: Vec<String> = text
            .lines()
            .filter_map(|l| l.split('\t').next().map(str::to_string))
            .collect();
        for (k, d, s, a) in &lines {
            if !committed.iter().any(|c| c == k) {
                text.push_str(&format!("{k}\t{}\t{}\t{a}\n", hex(d), stream_hex(s)));
            }
        }
        std::fs::write(FILE, text).expect("write fixtures");
    }
    let text = std::fs::read_to_string(FILE)
        .expect("crates/ferrobloom/tests/fixtures/encodings/server.tsv");
    let fixed: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(fixed.len(), lines.len(), "one fixture per case");
    for (f, (key, dump, stream, ans)) in fixed.iter().zip(&lines) {
        assert_eq!(f[0], *key);
        let (fdump, fstream, fans) = (unhex(f[1]), f[2], f[3]);
        // Today's bytes (windowed filters carry their write times: not comparable).
        if BEFORE_LAYOUT_4.contains(key) {
            let committed_header = unhex(
                fstream
                    .split(',')
                    .next()
                    .and_then(|c| c.split_once(':'))
                    .map(|(_, d)| d)
                    .unwrap_or(""),
            );
            let today_header = &stream.first().expect("header chunk").1;
            same_shapes_but_layout_4(key, today_header, &committed_header);
        } else if !key.starts_with("bw") {
            assert!(
                body(dump) == body(&fdump),
                "{key}: DUMP body differs from the fixture"
            );
            assert_eq!(
                stream_cmp(key, &stream_hex(stream)),
                stream_cmp(key, fstream),
                "{key}: SCANDUMP differs"
            );
            assert_eq!(ans, fans, "{key}: answers differ");
        }
        // The committed payload restores to the committed stream and answers.
        let copy = format!("{key}-restored");
        let _: Value = redis::cmd("RESTORE")
            .arg(&copy)
            .arg(0)
            .arg(&fdump)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("{key}: RESTORE of the fixture: {e}"));
        let back = scandump(&mut con, &copy);
        // SCANDUMP reads the key under its own name: the cf/bf prefix decides the command.
        assert_eq!(
            stream_cmp(key, &stream_hex(&back)),
            stream_cmp(key, fstream),
            "{key}: restored SCANDUMP differs"
        );
        let n = fans.len() - 300;
        let mut probes = items(key, n);
        probes.extend(items("absent", 300));
        let cmd = if key.starts_with("cf") {
            "CF.MEXISTS"
        } else {
            "BF.MEXISTS"
        };
        if key.starts_with("bw") {
            // Windowed answers are read at the filter's own newest-change time by a
            // clock behind it (docs/windowed.md), as they were recorded.
            let _: Value = redis::cmd("FERROBLOOM.CLOCK")
                .arg(-315_360_000_000i64)
                .query(&mut con)
                .expect("clock");
        }
        let v: Vec<i64> = redis::cmd(cmd)
            .arg(&copy)
            .arg(&probes)
            .query(&mut con)
            .expect("mexists");
        let got: String = v.iter().map(|x| if *x == 1 { '1' } else { '0' }).collect();
        assert_eq!(got, fans, "{key}: restored answers differ");
        let _: Value = redis::cmd("FERROBLOOM.CLOCK")
            .arg(0)
            .query(&mut con)
            .expect("clock");
        // A LOADCHUNK copy of the committed stream DUMPs to the committed body.
        let lc = format!("{key}-loaded");
        let load = if key.starts_with("cf") {
            "CF.LOADCHUNK"
        } else {
            "BF.LOADCHUNK"
        };
        for part in fstream.split(',') {
            let (i, d) = part.split_once(':').expect("iter:hex");
            let _: Value = redis::cmd(load)
                .arg(&lc)
                .arg(i.parse::<i64>().expect("iter"))
                .arg(unhex(d))
                .query(&mut con)
                .unwrap_or_else(|e| panic!("{key}: LOADCHUNK: {e}"));
        }
        let d2: Vec<u8> = redis::cmd("DUMP").arg(&lc).query(&mut con).expect("dump");
        assert!(
            body(&d2) == body(&fdump),
            "{key}: LOADCHUNK copy DUMPs differently"
        );
    }
}
