//! The command table and module registration: COMMAND INFO and COMMAND DOCS for every BF.*
//! command, MODULE LIST and the `INFO bf` section.

use super::*;

// ---------------------------------------------------------------------------------------------
// Command table, module registration
// ---------------------------------------------------------------------------------------------

struct CmdExpect {
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    key_flags: &'static [&'static str],
    summary: &'static str,
    complexity: &'static str,
    since: &'static str,
    args: &'static [&'static str],
}

const O_K: &str = "O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN: &str = "O(k * n), where k is the number of hash functions and n is the number of items";
const O_N: &str = "O(n), where n is the capacity";
const MADD_SUMMARY: &str =
    "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";
const WRITE: &[&str] = &["write", "denyoom", "module"];
const READ_FAST: &[&str] = &["readonly", "fast", "module"];
const KEY_RO: &[&str] = &["RO", "access"];
const KEY_UPDATE: &[&str] = &["RW", "update"];
const KEY_INSERT: &[&str] = &["RW", "insert"];

const COMMANDS: &[CmdExpect] = &[
    CmdExpect {
        name: "bf.reserve",
        arity: -4,
        flags: WRITE,
        key_flags: KEY_INSERT,
        summary: "Creates a new Bloom Filter",
        complexity: "O(1)",
        since: "1.0.0",
        args: &[
            "key",
            "error_rate",
            "capacity",
            "expansion",
            "nonscaling",
            "layout",
            "tightening",
            "seed",
            "validatescaleto",
            "window",
        ],
    },
    CmdExpect {
        name: "bf.add",
        arity: 3,
        flags: WRITE,
        key_flags: KEY_UPDATE,
        summary: "Adds an item to a Bloom Filter",
        complexity: O_K,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.madd",
        arity: -3,
        flags: WRITE,
        key_flags: KEY_UPDATE,
        summary: MADD_SUMMARY,
        complexity: O_KN,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.insert",
        arity: -4,
        flags: WRITE,
        key_flags: KEY_UPDATE,
        summary: MADD_SUMMARY,
        complexity: O_KN,
        since: "1.0.0",
        args: &[
            "key",
            "capacity",
            "error",
            "expansion",
            "nocreate",
            "nonscaling",
            "layout",
            "tightening",
            "seed",
            "validatescaleto",
            "window",
            "items",
            "item",
        ],
    },
    CmdExpect {
        name: "bf.exists",
        arity: 3,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Checks whether an item exists in a Bloom Filter",
        complexity: O_K,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.mexists",
        arity: -3,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Checks whether one or more items exist in a Bloom Filter",
        complexity: O_KN,
        since: "1.0.0",
        args: &["key", "item"],
    },
    CmdExpect {
        name: "bf.info",
        arity: -2,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Returns information about a Bloom Filter",
        complexity: "O(1)",
        since: "1.0.0",
        args: &["key", "single_value"],
    },
    CmdExpect {
        name: "bf.card",
        arity: 2,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "Returns the cardinality of a Bloom filter",
        complexity: "O(1)",
        since: "2.4.4",
        args: &["key"],
    },
    CmdExpect {
        name: "bf.scandump",
        arity: 3,
        flags: &["readonly", "module"],
        key_flags: KEY_RO,
        summary: "Begins an incremental save of the bloom filter",
        complexity: O_N,
        since: "1.0.0",
        args: &["key", "iterator"],
    },
    CmdExpect {
        name: "bf.loadchunk",
        arity: 4,
        flags: WRITE,
        key_flags: KEY_INSERT,
        summary: "Restores a filter previously saved using SCANDUMP",
        complexity: O_N,
        since: "1.0.0",
        args: &["key", "iterator", "data"],
    },
    CmdExpect {
        name: "bf.debug",
        arity: 2,
        flags: READ_FAST,
        key_flags: KEY_RO,
        summary: "",
        complexity: "",
        since: "1.0.0",
        args: &["key"],
    },
];

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn strs(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) | Value::Set(a) => a.iter().map(text).collect(),
        other => panic!("expected a list of strings, got {}", show(other)),
    }
}

#[test]
fn command_info_for_every_command() {
    let s = Server::start();
    let mut con = s.conn();
    for c in COMMANDS {
        let reply = items(rawv(&mut con, &["COMMAND", "INFO", c.name]));
        let info = match reply.as_slice() {
            [Value::Array(i)] => i.clone(),
            other => panic!("COMMAND INFO {}: {other:?}", c.name),
        };
        assert_eq!(text(&info[0]), c.name);
        assert_eq!(info[1], Value::Int(c.arity), "{} arity", c.name);
        assert_eq!(
            sorted(strs(&info[2])),
            sorted(c.flags.iter().map(|f| f.to_string()).collect()),
            "{} flags",
            c.name
        );
        assert_eq!(
            (&info[3], &info[4], &info[5]),
            (&Value::Int(1), &Value::Int(1), &Value::Int(1)),
            "{} first/last/step",
            c.name
        );
        let specs = items(info[8].clone());
        assert_eq!(specs.len(), 1, "{} key specs", c.name);
        let spec = &specs[0];
        assert_eq!(
            sorted(strs(&field(spec, "flags"))),
            sorted(c.key_flags.iter().map(|f| f.to_string()).collect()),
            "{} key spec flags",
            c.name
        );
        let bs = field(spec, "begin_search");
        assert_eq!(text(&field(&bs, "type")), "index");
        assert_eq!(field(&field(&bs, "spec"), "index"), Value::Int(1));
        let fk = field(spec, "find_keys");
        assert_eq!(text(&field(&fk, "type")), "range");
        let range = field(&fk, "spec");
        assert_eq!(field(&range, "lastkey"), Value::Int(0));
        assert_eq!(field(&range, "keystep"), Value::Int(1));
        assert_eq!(field(&range, "limit"), Value::Int(0));
        // COMMAND GETKEYS agrees: the key is the first argument.
        let mut probe = vec!["COMMAND", "GETKEYS", c.name, "thekey"];
        probe.extend(std::iter::repeat_n(
            "x",
            (c.arity.unsigned_abs() as usize).saturating_sub(2),
        ));
        assert_eq!(qv(&mut con, &probe), "[\"thekey\"]", "{probe:?}");
    }
    // Every bf.* command is listed, and only those.
    let mut listed = strs(&raw(&mut con, "COMMAND LIST FILTERBY MODULE bf"));
    // BF.MERGE (two key specs) has its own checks in crates/ferrobloom/tests/bf_merge.rs.
    listed.retain(|n| n.starts_with("bf.") && n != "bf.merge");
    assert_eq!(
        sorted(listed),
        sorted(COMMANDS.iter().map(|c| c.name.to_string()).collect())
    );
}

#[test]
fn command_docs_for_every_command() {
    let s = Server::start();
    let mut con = s.conn_resp3();
    for c in COMMANDS {
        let reply = rawv(&mut con, &["COMMAND", "DOCS", c.name]);
        let docs = field(&reply, c.name);
        if c.summary.is_empty() {
            assert!(!text(&field(&docs, "summary")).is_empty(), "{}", c.name);
            assert!(!text(&field(&docs, "complexity")).is_empty(), "{}", c.name);
        } else {
            assert_eq!(text(&field(&docs, "summary")), c.summary, "{}", c.name);
            assert_eq!(
                text(&field(&docs, "complexity")),
                c.complexity,
                "{}",
                c.name
            );
        }
        assert_eq!(text(&field(&docs, "since")), c.since, "{}", c.name);
        assert_eq!(text(&field(&docs, "group")), "module", "{}", c.name);
        assert_eq!(text(&field(&docs, "module")), "bf", "{}", c.name);
        let args = items(field(&docs, "arguments"));
        let names: Vec<String> = args.iter().map(|a| text(&field(a, "name"))).collect();
        assert_eq!(names, c.args, "{} arguments", c.name);
        assert_eq!(text(&field(&args[0], "type")), "key", "{}", c.name);
    }

    // A few argument details.
    let docs = field(&raw(&mut con, "COMMAND DOCS bf.reserve"), "bf.reserve");
    let args = items(field(&docs, "arguments"));
    assert_eq!(text(&field(&args[1], "type")), "double");
    assert_eq!(text(&field(&args[2], "type")), "integer");
    assert_eq!(text(&field(&args[3], "token")), "EXPANSION");
    assert_eq!(text(&field(&args[4], "type")), "pure-token");
    assert_eq!(text(&field(&args[4], "token")), "NONSCALING");
    assert!(strs(&field(&args[4], "flags")).contains(&"optional".to_string()));

    let docs = field(&raw(&mut con, "COMMAND DOCS bf.madd"), "bf.madd");
    let args = items(field(&docs, "arguments"));
    assert!(strs(&field(&args[1], "flags")).contains(&"multiple".to_string()));

    let docs = field(&raw(&mut con, "COMMAND DOCS bf.info"), "bf.info");
    let args = items(field(&docs, "arguments"));
    assert_eq!(text(&field(&args[1], "type")), "oneof");
    let tokens: Vec<String> = items(field(&args[1], "arguments"))
        .iter()
        .map(|a| text(&field(a, "token")))
        .collect();
    assert_eq!(
        tokens,
        [
            "CAPACITY",
            "SIZE",
            "FILTERS",
            "ITEMS",
            "EXPANSION",
            "ERROR",
            "TIGHTENING",
            "MAXSCALEDCAPACITY",
            "WINDOW"
        ]
    );
    // The extensions' options are documented with their value types.
    let docs = field(&raw(&mut con, "COMMAND DOCS bf.reserve"), "bf.reserve");
    let args = items(field(&docs, "arguments"));
    for (i, tok, kind) in [
        (5, "LAYOUT", "string"),
        (6, "TIGHTENING", "double"),
        (7, "SEED", "string"),
        (8, "VALIDATESCALETO", "integer"),
        (9, "WINDOW", "double"),
    ] {
        assert_eq!(text(&field(&args[i], "token")), tok);
        let value = items(field(&args[i], "arguments"));
        assert_eq!(text(&field(&value[0], "type")), kind, "{tok}");
    }
    let docs = field(&raw(&mut con, "COMMAND DOCS cf.reserve"), "cf.reserve");
    let args = items(field(&docs, "arguments"));
    assert_eq!(text(&field(&args[6], "token")), "LAYOUT");
}

#[test]
fn module_list_and_info_section() {
    let s = Server::start();
    let mut con = s.conn();
    let mut modules = items(raw(&mut con, "MODULE LIST"));
    let builtin = s.kind().builtin_modules();
    assert_eq!(modules.len(), 1 + builtin.len());
    modules.retain(|m| !builtin.contains(&text(&field(m, "name")).as_str()));
    assert_eq!(text(&field(&modules[0], "name")), "bf");
    assert_eq!(field(&modules[0], "ver"), Value::Int(20820));

    let info = s.info("bf_ferrobloom");
    assert_eq!(
        info.get("bf_version").map(String::as_str),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(info.get("bf_api_level").map(String::as_str), Some("20820"));
    let all = s.info("modules");
    assert_eq!(
        all.get("bf_api_level").map(String::as_str),
        Some("20820"),
        "{all:?}"
    );
    let everything: String = redis::cmd("INFO")
        .arg("everything")
        .query(&mut con)
        .expect("INFO everything");
    assert!(everything.contains("# bf_ferrobloom"), "{everything}");
    assert!(everything.contains("module:name=bf,ver=20820,"));
}
