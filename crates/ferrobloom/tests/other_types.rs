//! RedisBloom's other types (Count-Min Sketch, Top-K, t-digest) in a `dump.rdb`:
//! ferrobloom registers only the Bloom and cuckoo types, so the server refuses the
//! whole file at startup (docs/migration.md says so and what to do). The fixture
//! `crates/ferrobloom/tests/fixtures/redisbloom/other-types.rdb` was written by the real RedisBloom
//! 2.8.2 (regenerate with `scripts/redisbloom-fixtures.sh`): one key of each of its
//! five types.

mod common;

use common::bf::start_with_module_args;
use common::redisbloom::{redisbloom_so, start_redisbloom};
use common::*;
use redis::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/redisbloom/other-types.rdb"
);

/// The module type names RedisBloom 2.8 gives its other types (what `TYPE` answers).
const OTHER_TYPES: [&str; 3] = ["CMSk-TYPE", "TopK-TYPE", "TDIS-TYPE"];

fn cmd(con: &mut redis::Connection, args: &[&str]) -> Value {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn a_dump_with_redisblooms_other_types_stops_the_server_at_startup() {
    let dir = std::env::temp_dir().join(format!("ferrobloom-other-types-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(FIXTURE, dir.join("dump.rdb")).unwrap();
    let d = dir.to_string_lossy().to_string();
    // The server exits while loading (Redis and Valkey run their RDB check, then
    // exit): nothing is served, the log names the unknown type.
    let (_status, log) = start_with_module_args(&["--dir", &d, "--dbfilename", "dump.rdb"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        log.contains("The RDB file contains module data I can't load: no matching module type"),
        "{log}"
    );
    assert!(
        OTHER_TYPES
            .iter()
            .any(|t| log.contains(&format!("no matching module type '{t}'"))),
        "{log}"
    );
}

/// What docs/migration.md tells the user, on the real RedisBloom: find the keys of
/// the other types by type name, take them out (here: delete; or move them to a
/// server that keeps RedisBloom), save, and the file loads into ferrobloom with its
/// Bloom and cuckoo filters intact.
#[test]
fn finding_and_removing_the_other_types_lets_ferrobloom_load_the_rest() {
    let Some(so) = redisbloom_so() else { return };
    let mut rbs = start_redisbloom(&so);
    rbs.stop(Stop::ShutdownNoSave);
    std::fs::copy(FIXTURE, rbs.rdb_path()).unwrap();
    rbs.start_again();
    let mut rb = rbs.conn();
    assert_eq!(cmd(&mut rb, &["DBSIZE"]), Value::Int(5));
    // `SCAN cursor TYPE <name>` per type, as the migration guide says.
    let mut found = Vec::new();
    for t in OTHER_TYPES {
        let mut cursor = "0".to_string();
        let mut keys = Vec::new();
        loop {
            let (next, batch): (String, Vec<String>) = redis::cmd("SCAN")
                .arg(&cursor)
                .arg("TYPE")
                .arg(t)
                .query(&mut rb)
                .unwrap();
            keys.extend(batch);
            if next == "0" {
                break;
            }
            cursor = next;
        }
        assert_eq!(keys.len(), 1, "{t}: {keys:?}");
        found.extend(keys);
    }
    // The redis-cli form of the guide (every key with its type).
    let listing = rbs.cli(&["--scan"]);
    assert_eq!(listing.lines().count(), 5, "{listing}");
    let (bf_before, cf_before) = (
        cmd(&mut rb, &["BF.MEXISTS", "bf", "a", "b", "zz"]),
        cmd(&mut rb, &["CF.COUNT", "cf", "a"]),
    );
    for k in &found {
        assert_eq!(cmd(&mut rb, &["DEL", k]), Value::Int(1));
    }
    let _ = cmd(&mut rb, &["SAVE"]);
    let mut fbs = Server::start();
    fbs.stop(Stop::ShutdownNoSave);
    std::fs::copy(rbs.rdb_path(), fbs.rdb_path()).unwrap();
    fbs.start_again();
    let mut fb = fbs.conn();
    assert_eq!(cmd(&mut fb, &["DBSIZE"]), Value::Int(2));
    assert_eq!(
        cmd(&mut fb, &["BF.MEXISTS", "bf", "a", "b", "zz"]),
        bf_before
    );
    assert_eq!(cmd(&mut fb, &["CF.COUNT", "cf", "a"]), cf_before);
    rbs.stop(Stop::ShutdownNoSave);
}

/// Writes the fixture from the real RedisBloom (run by scripts/redisbloom-fixtures.sh).
#[test]
#[ignore]
fn regenerate_other_types_fixture() {
    let so = redisbloom_so().expect("RedisBloom 2.8.2 is needed to regenerate the fixture");
    let rbs = start_redisbloom(&so);
    let mut rb = rbs.conn();
    for c in [
        &["CONFIG", "SET", "rdbcompression", "no"][..],
        &["CMS.INITBYDIM", "cms", "100", "5"],
        &["CMS.INCRBY", "cms", "a", "3"],
        &["TOPK.RESERVE", "topk", "10"],
        &["TOPK.ADD", "topk", "a", "b", "a"],
        &["TDIGEST.CREATE", "td"],
        &["TDIGEST.ADD", "td", "1", "2", "3"],
        &["BF.MADD", "bf", "a", "b"],
        &["CF.INSERT", "cf", "ITEMS", "a", "a"],
        &["SAVE"],
    ] {
        let _ = cmd(&mut rb, c);
    }
    for (k, t) in [("cms", 0), ("topk", 1), ("td", 2)] {
        assert_eq!(
            cmd(&mut rb, &["TYPE", k]),
            Value::SimpleString(OTHER_TYPES[t].into())
        );
    }
    std::fs::copy(rbs.rdb_path(), FIXTURE).unwrap();
}
