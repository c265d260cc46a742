//! RedisBloom data from committed fixtures: what RedisBloom 2.8.2 wrote and answered
//! for the migration matrix (`common::redisbloom`), so these tests need no RedisBloom.
//!
//! `crates/ferrobloom/tests/fixtures/redisbloom/` holds RedisBloom's `dump.rdb` of the matrix (the
//! hand-built old-version payloads included, which it saved as version 4), its `DUMP`
//! payloads (`dumps.tsv`), its answers about every filter before and after the further
//! writes (`answers.tsv`: INFO, CARD/COUNT, DEBUG, MEXISTS of 100,000 never-added items
//! and the members, the SCANDUMP stream) and its replies to those writes
//! (`writes.tsv`). Regenerate with `scripts/redisbloom-fixtures.sh`.
//!
//! Each path must reproduce RedisBloom's answers: the RDB file at startup, a replica's
//! full sync from that server, RESTORE of the payloads, LOADCHUNK of the SCANDUMP
//! streams, and RESTORE of the hand-built payloads of encoding versions 0-3; the
//! writes must get RedisBloom's replies and leave RedisBloom's answers.

mod common;

use std::collections::BTreeMap;

use common::redisbloom::*;
use common::*;
use redis::Connection;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/redisbloom");

type Answers = Vec<(String, String)>;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}"))
        .unwrap_or_else(|e| panic!("{FIXTURES}/{name}: {e}"))
}

/// `phase -> key -> answers` from answers.tsv.
fn recorded_answers() -> BTreeMap<String, BTreeMap<String, Answers>> {
    let mut out: BTreeMap<String, BTreeMap<String, Answers>> = BTreeMap::new();
    for line in fixture("answers.tsv").lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        out.entry(f[0].into())
            .or_default()
            .entry(f[1].into())
            .or_default()
            .push((f[2].into(), f[3].into()));
    }
    out
}

/// `key -> replies to the case's further writes`, from writes.tsv.
fn recorded_writes() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in fixture("writes.tsv").lines() {
        let (k, r) = line.split_once('\t').unwrap();
        out.entry(k.into()).or_default().push(r.into());
    }
    out
}

fn fixture_cases() -> Vec<Case> {
    let mut v = all_cases();
    v.extend(legacy_cases());
    v
}

/// The case's command on another key (every command names its key second).
fn renamed(c: &Cmd, key: &str) -> Cmd {
    let mut c = c.clone();
    c[1] = key.as_bytes().to_vec();
    c
}

/// Writes the fixture set from the real RedisBloom (run by scripts/redisbloom-fixtures.sh).
#[test]
#[ignore]
fn regenerate_redisbloom_fixtures() {
    let so = redisbloom_so().expect("RedisBloom 2.8.2 is needed to regenerate the fixtures");
    let rbs = start_redisbloom(&so);
    let mut rb = rbs.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("rdbcompression")
        .arg("no")
        .query(&mut rb)
        .unwrap();
    let cases = fixture_cases();
    build(&mut rb, &cases);
    std::fs::create_dir_all(FIXTURES).unwrap();
    let _: () = redis::cmd("SAVE").query(&mut rb).unwrap();
    std::fs::copy(rbs.rdb_path(), format!("{FIXTURES}/dump.rdb")).unwrap();
    let (mut dumps, mut answers_tsv, mut writes) = (String::new(), String::new(), String::new());
    for c in &cases {
        let k = &c.key;
        dumps.push_str(&format!(
            "{k}\t{}\n",
            hex(&common::rdb::dump(&mut rb, k.as_bytes()))
        ));
        for (what, r) in answers(&mut rb, c.kind, k) {
            answers_tsv.push_str(&format!("before\t{k}\t{what}\t{r}\n"));
        }
    }
    for c in &cases {
        for m in &c.more {
            writes.push_str(&format!("{}\t{}\n", c.key, reply(&mut rb, m)));
        }
        for (what, r) in answers(&mut rb, c.kind, &c.key) {
            answers_tsv.push_str(&format!("after\t{}\t{what}\t{r}\n", c.key));
        }
    }
    std::fs::write(format!("{FIXTURES}/dumps.tsv"), dumps).unwrap();
    std::fs::write(format!("{FIXTURES}/answers.tsv"), answers_tsv).unwrap();
    std::fs::write(format!("{FIXTURES}/writes.tsv"), writes).unwrap();
}

/// Every case's recorded answers of `phase`, asked of the case's key renamed.
fn check(con: &mut Connection, phase: &str, rename: impl Fn(&str) -> String, how: &str) {
    let want = recorded_answers();
    let want = &want[phase];
    let cases = fixture_cases();
    assert_eq!(want.len(), cases.len(), "fixture keys");
    for c in &cases {
        let got = answers(con, c.kind, &rename(&c.key));
        assert_same_answers(&got, &want[&c.key], &c.key, how);
    }
}

/// The further writes on `rename(key)`, each reply compared with RedisBloom's.
fn write_and_compare(con: &mut Connection, rename: impl Fn(&str) -> String, how: &str) {
    let want = recorded_writes();
    for c in fixture_cases() {
        let key = rename(&c.key);
        let replies: Vec<String> = c
            .more
            .iter()
            .map(|m| reply(con, &renamed(m, &key)))
            .collect();
        assert_eq!(
            replies, want[&c.key],
            "{} {how}: replies to the writes",
            c.key
        );
    }
}

#[test]
fn redisbloom_rdb_file_and_full_sync_answer_and_evolve_as_recorded() {
    let mut s = ferrobloom_builder().start();
    s.stop(Stop::ShutdownNoSave);
    std::fs::copy(format!("{FIXTURES}/dump.rdb"), s.rdb_path()).unwrap();
    s.start_again();
    let mut con = s.conn();
    check(&mut con, "before", |k| k.to_string(), "from the RDB file");
    let replica = ferrobloom_builder().replica_of(&s).start();
    s.wait_for_sync(&replica);
    let mut rcon = replica.conn();
    check(&mut rcon, "before", |k| k.to_string(), "by full sync");
    write_and_compare(&mut con, |k| k.to_string(), "from the RDB file");
    check(
        &mut con,
        "after",
        |k| k.to_string(),
        "from the RDB file, after the writes",
    );
    s.wait_for_offset(&replica);
    check(
        &mut rcon,
        "after",
        |k| k.to_string(),
        "on the replica, after the writes",
    );
}

#[test]
fn redisbloom_dumps_and_scandumps_answer_as_recorded() {
    let s = ferrobloom_builder().start();
    let mut con = s.conn();
    for line in fixture("dumps.tsv").lines() {
        let (k, payload) = line.split_once('\t').unwrap();
        restore(&mut con, &format!("{k}:r"), &unhex(payload));
    }
    check(&mut con, "before", |k| format!("{k}:r"), "by RESTORE");
    for (k, a) in &recorded_answers()["before"] {
        let stream = &a.iter().find(|(w, _)| w.ends_with("SCANDUMP")).unwrap().1;
        if stream.is_empty() {
            // RedisBloom does not dump a cuckoo filter without items.
            continue;
        }
        let chunks: Vec<(i64, Vec<u8>)> = stream
            .split(' ')
            .map(|c| {
                let (it, h) = c.split_once(':').unwrap();
                (it.parse().unwrap(), unhex(h))
            })
            .collect();
        loadchunks(&mut con, kind_of(k), &format!("{k}:l"), &chunks);
    }
    let want = recorded_answers();
    for c in fixture_cases() {
        let key = format!("{}:l", c.key);
        let exists: i64 = redis::cmd("EXISTS").arg(&key).query(&mut con).unwrap();
        if exists == 1 {
            let got = answers(&mut con, c.kind, &key);
            assert_same_answers(&got, &want["before"][&c.key], &c.key, "by LOADCHUNK");
        }
    }
    write_and_compare(&mut con, |k| format!("{k}:r"), "by RESTORE");
    check(
        &mut con,
        "after",
        |k| format!("{k}:r"),
        "by RESTORE, after the writes",
    );
}

#[test]
fn hand_built_old_encodings_answer_as_recorded() {
    // The payloads of encoding versions 0-3 are rebuilt by the same code that
    // built the ones RedisBloom answered about.
    let s = ferrobloom_builder().start();
    let mut con = s.conn();
    let legacy = legacy_cases();
    let want = recorded_answers();
    let writes = recorded_writes();
    for c in &legacy {
        let key = format!("{}:h", c.key);
        restore(&mut con, &key, c.payload.as_deref().unwrap());
        let got = answers(&mut con, c.kind, &key);
        assert_same_answers(&got, &want["before"][&c.key], &c.key, "hand-built");
        let replies: Vec<String> = c
            .more
            .iter()
            .map(|m| reply(&mut con, &renamed(m, &key)))
            .collect();
        assert_eq!(replies, writes[&c.key], "{}: replies to the writes", c.key);
        let got = answers(&mut con, c.kind, &key);
        assert_same_answers(
            &got,
            &want["after"][&c.key],
            &c.key,
            "hand-built, after the writes",
        );
    }
}
