//! Bloom filters and configuration: auto-creation defaults, module configs and load
//! arguments, the command table, and the hard bounds (links, hash functions, memory).
//! Helpers: `common::bf`.

mod command_table;
#[path = "../common/mod.rs"]
mod common;

use common::bf::*;
use common::*;
use redis::Value;

// ---------------------------------------------------------------------------------------------
// Auto-creation defaults and configuration
// ---------------------------------------------------------------------------------------------

#[test]
fn auto_create_uses_configured_defaults() {
    let s = Server::start();
    let mut con = s.conn();

    // Built-in defaults: capacity 100, error 0.01, expansion 2 (Size 240 with one item).
    assert_eq!(q(&mut con, "BF.ADD d0 x"), "1");
    assert_eq!(
        q(&mut con, "BF.INFO d0"),
        "[+Capacity,100,+Size,240,+Number of filters,1,+Number of items inserted,1,\
         +Expansion rate,2]"
    );

    ok(&mut con, "CONFIG SET bf.bf-initial-size 500");
    for (key, cmd) in [
        ("a1", "BF.ADD a1 x"),
        ("a2", "BF.MADD a2 x y"),
        ("a3", "BF.INSERT a3 ITEMS x"),
    ] {
        assert!(q(&mut con, cmd).contains('1'), "{cmd}");
        assert_eq!(info_num(&mut con, key, "CAPACITY"), 500, "{key}");
        assert!(debug(&mut con, key)[1].ends_with(" ratio:0.005"), "{key}");
    }
    // Explicit parameters win over the defaults.
    assert_eq!(q(&mut con, "BF.INSERT a4 CAPACITY 20 ITEMS x"), "[1]");
    assert_eq!(info_num(&mut con, "a4", "CAPACITY"), 20);
    ok(&mut con, "BF.RESERVE a5 0.001 100");
    assert_eq!(info_num(&mut con, "a5", "SIZE"), 296);

    ok(&mut con, "CONFIG SET bf.bf-error-rate 0.02");
    for (key, cmd) in [
        ("b1", "BF.ADD b1 x"),
        ("b2", "BF.MADD b2 x"),
        ("b3", "BF.INSERT b3 ITEMS x"),
    ] {
        assert!(q(&mut con, cmd).contains('1'), "{cmd}");
        let line = &debug(&mut con, key)[1];
        assert!(
            line.contains(" capacity:500 ") && line.ends_with(" ratio:0.01"),
            "{line}"
        );
    }
    assert_eq!(q(&mut con, "BF.INSERT b4 ERROR 0.001 ITEMS x"), "[1]");
    assert!(
        debug(&mut con, "b4")[1].ends_with(" ratio:0.0005"),
        "explicit ERROR wins"
    );
    // Changing the defaults does not touch existing filters.
    assert_eq!(info_num(&mut con, "a1", "CAPACITY"), 500);
    assert!(debug(&mut con, "a1")[1].ends_with(" ratio:0.005"));

    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 3");
    q(&mut con, "BF.ADD c1 x");
    assert_eq!(info_num(&mut con, "c1", "EXPANSION"), 3);
    ok(&mut con, "BF.RESERVE c2 0.01 10");
    assert_eq!(info_num(&mut con, "c2", "EXPANSION"), 3);

    // Expansion factor 0: auto-created and reserved filters are non-scaling (one link at the
    // full error rate) unless the command asks for an expansion.
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 0");
    for (key, cmd) in [
        ("n1", "BF.ADD n1 x"),
        ("n2", "BF.MADD n2 x"),
        ("n3", "BF.INSERT n3 ITEMS x"),
        ("n4", "BF.RESERVE n4 0.02 500"),
    ] {
        q(&mut con, cmd);
        assert_eq!(
            q(&mut con, &format!("BF.INFO {key} EXPANSION")),
            "[nil]",
            "{key}"
        );
        assert!(debug(&mut con, key)[1].ends_with(" ratio:0.02"), "{key}");
    }
    ok(&mut con, "BF.RESERVE s1 0.01 10 EXPANSION 2");
    assert_eq!(info_num(&mut con, "s1", "EXPANSION"), 2);
    let adds = numbered("s", 11);
    qv(&mut con, &with_items("BF.MADD s1", &adds));
    assert_eq!(info_num(&mut con, "s1", "FILTERS"), 2, "it really scales");
    assert_eq!(q(&mut con, "BF.INSERT s2 EXPANSION 4 ITEMS x"), "[1]");
    assert_eq!(info_num(&mut con, "s2", "EXPANSION"), 4);

    // Error-rate default above 0.25 is stored as 0.25.
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 2");
    ok(&mut con, "CONFIG SET bf.bf-error-rate 0.5");
    q(&mut con, "BF.ADD e1 x");
    assert!(debug(&mut con, "e1")[1].ends_with(" ratio:0.125"));
}

#[test]
fn configs_get_set_and_ranges() {
    let s = Server::start();
    let mut con = s.conn();

    for (name, default) in [
        ("bf.bf-error-rate", "0.01"),
        ("bf.bf-initial-size", "100"),
        ("bf.bf-expansion-factor", "2"),
        ("bf.bf-max-links", "64"),
        ("bf.max-filter-memory", "4294967296"),
        ("bf.cf-bucket-size", "2"),
        ("bf.cf-initial-size", "1024"),
        ("bf.cf-max-iterations", "20"),
        ("bf.cf-expansion-factor", "1"),
        ("bf.cf-max-expansions", "32"),
    ] {
        assert_eq!(config_get(&mut con, name), default, "{name}");
    }
    let all = pairs(&raw(&mut con, "CONFIG GET bf.*"));
    let mut names: Vec<&str> = all.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    for n in [
        "bf.bf-error-rate",
        "bf.bf-expansion-factor",
        "bf.bf-initial-size",
        "bf.bf-max-links",
        "bf.max-filter-memory",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }

    // Accepted values, including the bounds.
    for (name, set, shown) in [
        ("bf.bf-error-rate", "0.001", "0.001"),
        ("bf.bf-error-rate", "0.25", "0.25"),
        ("bf.bf-error-rate", "0.5", "0.25"),
        ("bf.bf-error-rate", "0.999", "0.25"),
        ("bf.bf-error-rate", "1e-5", "0.00001"),
        ("bf.bf-initial-size", "1", "1"),
        ("bf.bf-initial-size", "1073741824", "1073741824"),
        ("bf.bf-expansion-factor", "0", "0"),
        ("bf.bf-expansion-factor", "32768", "32768"),
        ("bf.bf-max-links", "1", "1"),
        ("bf.bf-max-links", "1024", "1024"),
        ("bf.max-filter-memory", "4096", "4096"),
        ("bf.max-filter-memory", "1mb", "1048576"),
        ("bf.max-filter-memory", "4gb", "4294967296"),
    ] {
        okv(&mut con, &["CONFIG", "SET", name, set]);
        let got = config_get(&mut con, name);
        if name == "bf.bf-error-rate" {
            let v: f64 = got.parse().unwrap_or_else(|_| panic!("{got}"));
            assert_eq!(v, shown.parse::<f64>().unwrap(), "{name} {set} -> {got}");
        } else {
            assert_eq!(got, shown, "{name} {set}");
        }
    }

    // Rejected values leave the config unchanged.
    ok(&mut con, "CONFIG SET bf.bf-error-rate 0.02");
    ok(&mut con, "CONFIG SET bf.bf-initial-size 200");
    ok(&mut con, "CONFIG SET bf.bf-expansion-factor 4");
    ok(&mut con, "CONFIG SET bf.bf-max-links 10");
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1mb");
    let er_range = "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)";
    let er_invalid = "Invalid value for `bf-error-rate`";
    let between = |lo: &str, hi: &str| format!("argument must be between {lo} and {hi} inclusive");
    let cases: Vec<(&str, &str, String)> = vec![
        ("bf.bf-error-rate", "0", er_range.into()),
        ("bf.bf-error-rate", "1", er_range.into()),
        ("bf.bf-error-rate", "-0.1", er_range.into()),
        ("bf.bf-error-rate", "abc", er_invalid.into()),
        ("bf.bf-error-rate", "", er_invalid.into()),
        ("bf.bf-initial-size", "0", between("1", "1073741824")),
        (
            "bf.bf-initial-size",
            "1073741825",
            between("1", "1073741824"),
        ),
        ("bf.bf-expansion-factor", "-1", between("0", "32768")),
        ("bf.bf-expansion-factor", "32769", between("0", "32768")),
        ("bf.bf-max-links", "0", between("1", "1024")),
        ("bf.bf-max-links", "1025", between("1", "1024")),
        (
            "bf.max-filter-memory",
            "4095",
            between("4096", "9223372036854775807"),
        ),
    ];
    for (name, value, why) in &cases {
        assert_eq!(
            errv(&mut con, &["CONFIG", "SET", name, value]),
            config_failed(name, why),
            "{name} {value:?}"
        );
    }
    for (name, value) in [
        ("bf.bf-initial-size", "abc"),
        ("bf.bf-initial-size", "1.5"),
        ("bf.bf-max-links", "x"),
        ("bf.max-filter-memory", "lots"),
    ] {
        let e = errv(&mut con, &["CONFIG", "SET", name, value]);
        assert!(
            e.starts_with(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}')"
            )),
            "{e}"
        );
    }
    for (name, value) in [
        ("bf.bf-error-rate", "0.02"),
        ("bf.bf-initial-size", "200"),
        ("bf.bf-expansion-factor", "4"),
        ("bf.bf-max-links", "10"),
        ("bf.max-filter-memory", "1048576"),
    ] {
        assert_eq!(config_get(&mut con, name), value, "{name}");
    }
}

#[test]
fn module_args_set_initial_configs() {
    let s = Server::builder()
        .module_args(&["ERROR_RATE", "0.02", "INITIAL_SIZE", "1000"])
        .start();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.02");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "1000");
    assert_eq!(q(&mut con, "BF.ADD k x"), "1");
    assert_eq!(info_num(&mut con, "k", "CAPACITY"), 1000);
    assert!(debug(&mut con, "k")[1].ends_with(" ratio:0.01"));
    // Still changeable at run time.
    ok(&mut con, "CONFIG SET bf.bf-initial-size 30");
    q(&mut con, "BF.ADD k2 x");
    assert_eq!(info_num(&mut con, "k2", "CAPACITY"), 30);
    drop(s);

    // New names, any case; the error rate is clamped like the config.
    let s = Server::builder()
        .module_args(&[
            "Bf-Error-Rate",
            "0.5",
            "bf-initial-size",
            "7",
            "cf_max_expansions",
            "5",
        ])
        .start();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.25");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "7");
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "5");
    q(&mut con, "BF.MADD k x");
    assert_eq!(
        debug(&mut con, "k"),
        vec![
            "size:1".to_string(),
            "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:7 size:1 ratio:0.125".into()
        ]
    );
    drop(s);

    let s = Server::builder()
        .module_args(&["CF-MAX-EXPANSIONS", "4096", "error_rate", "0.001"])
        .start();
    let mut con = s.conn();
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "4096");
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.001");
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "100");
}

#[test]
fn bad_module_args_refuse_loading() {
    let so = module_path().expect("module path");
    let so = so.to_string_lossy().to_string();
    let s = Server::builder().no_module().start();
    let mut con = s.conn();

    let bad = [
        "FOO 1",
        "ERROR_RATE",
        "ERROR_RATE 0.02 INITIAL_SIZE",
        "ERROR_RATE 0",
        "ERROR_RATE 1",
        "ERROR_RATE abc",
        "INITIAL_SIZE 0",
        "INITIAL_SIZE 1073741825",
        "INITIAL_SIZE 1.5",
        "INITIAL_SIZE -5",
        "CF_MAX_EXPANSIONS 0",
        "CF_MAX_EXPANSIONS 65537",
        // Only the three RedisBloom load arguments exist (other configs are server configs).
        "BF-EXPANSION-FACTOR 4",
        // Valid pairs before an invalid one must not leak into a later load.
        "INITIAL_SIZE 777 ERROR_RATE 0.03 NOPE 1",
    ];
    for args in bad {
        let mut cmd = vec!["MODULE", "LOAD", so.as_str()];
        cmd.extend(words(args));
        assert_eq!(errv(&mut con, &cmd), LOAD_FAILED, "{args}");
        let names: Vec<String> = items(raw(&mut con, "MODULE LIST"))
            .iter()
            .map(|m| text(&field(m, "name")))
            .collect();
        assert_eq!(names, s.kind().builtin_modules(), "{args}");
    }
    assert!(s.log().contains("refusing to load"), "{}", s.log_tail(20));
    assert!(err(&mut con, "BF.ADD k a").starts_with("ERR unknown command"));

    // A good load afterwards starts from the real defaults (a single empty argument counts
    // as no arguments).
    okv(&mut con, &["MODULE", "LOAD", so.as_str(), ""]);
    assert_eq!(config_get(&mut con, "bf.bf-initial-size"), "100");
    assert_eq!(config_get(&mut con, "bf.bf-error-rate"), "0.01");
    assert_eq!(config_get(&mut con, "bf.cf-max-expansions"), "32");
    assert_eq!(q(&mut con, "BF.ADD k a"), "1");
    assert_eq!(info_num(&mut con, "k", "CAPACITY"), 100);
}

#[test]
fn bad_module_args_stop_server_start() {
    for args in ["UNKNOWN 1", "INITIAL_SIZE", "ERROR_RATE 2"] {
        let (status, log) = start_with_module_args(&words(args));
        assert!(!status.success(), "{args:?}: {status}");
        assert!(log.contains("refusing to load"), "{args:?}:\n{log}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hard bounds
// ---------------------------------------------------------------------------------------------

#[test]
fn max_links_bound() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET bf.bf-max-links 3");
    ok(&mut con, "BF.RESERVE k 0.01 2 EXPANSION 1");
    assert_eq!(q(&mut con, "BF.MADD k a b c d e f"), "[1,1,1,1,1,1]");
    let e = format!("!{MAX_LINKS_ERR}");
    assert_eq!(err(&mut con, "BF.ADD k g"), MAX_LINKS_ERR);
    // An array element, and later items are still tried.
    assert_eq!(q(&mut con, "BF.MADD k g a h f"), format!("[{e},0,{e},0]"));
    assert_eq!(q(&mut con, "BF.INSERT k ITEMS g b"), format!("[{e},0]"));
    let mut c3 = s.conn_resp3();
    assert_eq!(q(&mut c3, "BF.MADD k g a"), format!("[{e},#f]"));
    assert_eq!(
        q(&mut con, "BF.INFO k"),
        "[+Capacity,6,+Size,248,+Number of filters,3,+Number of items inserted,6,\
         +Expansion rate,1]"
    );
    assert_eq!(debug(&mut con, "k").len(), 4);
    assert_eq!(q(&mut con, "BF.MEXISTS k a b c d e f g"), "[1,1,1,1,1,1,0]");

    // Raising the bound lets the filter grow again.
    ok(&mut con, "CONFIG SET bf.bf-max-links 4");
    assert_eq!(q(&mut con, "BF.ADD k g"), "1");
    assert_eq!(info_num(&mut con, "k", "FILTERS"), 4);

    // bf-max-links 1: a scaling filter cannot grow at all.
    ok(&mut con, "CONFIG SET bf.bf-max-links 1");
    assert_eq!(
        q(&mut con, "BF.INSERT one CAPACITY 1 ITEMS a b"),
        format!("[1,{e}]")
    );

    // Default 64.
    ok(&mut con, "CONFIG SET bf.bf-max-links 64");
    ok(&mut con, "BF.RESERVE d 0.01 1 EXPANSION 1");
    let adds = numbered("d", 70);
    let reply = items(rawv(&mut con, &with_items("BF.MADD d", &adds)));
    assert_eq!(info_num(&mut con, "d", "FILTERS"), 64);
    assert_eq!(card(&mut con, "d"), 64);
    let errors = reply.iter().filter(|v| show(v) == e).count();
    let ones = reply.iter().filter(|v| show(v) == "1").count();
    assert_eq!(ones, 64);
    assert_eq!(
        errors + ones + reply.iter().filter(|v| show(v) == "0").count(),
        70
    );
    assert!(errors >= 1);
}

#[test]
fn max_filter_memory_bound_on_creation() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1mb");

    // Size(0.01, 760611) = 1048576 exactly; one more item of capacity is 8 bytes more.
    assert_eq!(redisbloom_size(760611, 0.005), 1048576);
    assert_eq!(redisbloom_size(760612, 0.005), 1048584);
    ok(&mut con, "BF.RESERVE under 0.01 760611");
    assert_eq!(info_num(&mut con, "under", "SIZE"), 1048576);
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 760612"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "BF.INSERT over CAPACITY 760612 ITEMS a"),
        NO_MEMORY_CREATE
    );
    // The largest capacity the parser accepts, then refused by the memory cap (not a range
    // error); one more is a range error.
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 1073741824"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 1073741825"),
        "ERR (capacity should be at most 1073741824)"
    );
    assert_eq!(
        err(&mut con, "BF.INSERT over CAPACITY 1073741824 ITEMS a"),
        NO_MEMORY_CREATE
    );
    assert_eq!(
        err(&mut con, "BF.INSERT over CAPACITY 1073741825 ITEMS a"),
        "Bad argument received"
    );
    // Auto-creation with a large default capacity.
    ok(&mut con, "CONFIG SET bf.bf-initial-size 1073741824");
    assert_eq!(err(&mut con, "BF.ADD over a"), NO_MEMORY_CREATE);
    assert_eq!(err(&mut con, "BF.MADD over a b"), NO_MEMORY_CREATE);
    assert_eq!(err(&mut con, "BF.INSERT over ITEMS a"), NO_MEMORY_CREATE);
    // A non-scaling filter is bounded the same way.
    assert_eq!(
        err(&mut con, "BF.RESERVE over 0.01 1000000 NONSCALING"),
        NO_MEMORY_CREATE
    );
    assert_eq!(int(&mut con, "EXISTS over"), 0);

    // Raising the cap makes the same reserve work.
    ok(&mut con, "CONFIG SET bf.max-filter-memory 1048584");
    ok(&mut con, "BF.RESERVE over 0.01 760612");
    assert_eq!(info_num(&mut con, "over", "SIZE"), 1048584);
}

#[test]
fn max_filter_memory_bound_on_growth() {
    let s = Server::start();
    let mut con = s.conn();
    ok(&mut con, "CONFIG SET bf.max-filter-memory 8192");
    // Links of 100, 200, 400, 800, 1600 items take 6400 bytes in all (Size); the sixth
    // (3200 items, 7304 bytes) would bring it to 13768.
    ok(&mut con, "BF.RESERVE g 0.01 100");
    let adds = numbered("g", 3200);
    let reply = items(rawv(&mut con, &with_items("BF.MADD g", &adds)));
    assert_eq!(reply.len(), 3200, "the array does not stop at this error");
    let e = format!("!{MEMORY_ERR}");
    let first_err = reply
        .iter()
        .position(|v| show(v) == e)
        .expect("the cap was reached");
    assert!(reply[..first_err]
        .iter()
        .all(|v| ["1", "0"].contains(&show(v).as_str())));
    assert!(reply[first_err..]
        .iter()
        .all(|v| show(v) == e || show(v) == "0"));
    assert_eq!(
        q(&mut con, "BF.INFO g"),
        "[+Capacity,3100,+Size,6400,+Number of filters,5,+Number of items inserted,3100,\
         +Expansion rate,2]"
    );
    assert_eq!(errv(&mut con, &["BF.ADD", "g", "one more"]), MEMORY_ERR);
    let accepted: Vec<String> = adds[..first_err].to_vec();
    let present = qv(&mut con, &with_items("BF.MEXISTS g", &accepted));
    assert!(!present.contains('0'), "intact filter: {present}");
    let before = snapshot(&mut con, "g");
    assert_eq!(
        qv(&mut con, &["BF.INSERT", "g", "ITEMS", "one more", "g0"]),
        format!("[{e},0]")
    );
    assert_eq!(snapshot(&mut con, "g"), before);

    // At exactly the size of the next link it grows.
    ok(&mut con, "CONFIG SET bf.max-filter-memory 13768");
    assert_eq!(qv(&mut con, &["BF.ADD", "g", "one more"]), "1");
    assert_eq!(info_num(&mut con, "g", "SIZE"), 13768);
    assert_eq!(info_num(&mut con, "g", "FILTERS"), 6);
}

#[test]
fn error_rate_and_hash_bounds() {
    let s = Server::start();
    let mut con = s.conn();
    // ferrobloom's specific text (RedisBloom: "ERR could not create filter").
    let cnc = "ERR sub-filter error rate too small (more than 128 hash functions)";
    assert_eq!(err(&mut con, "BF.RESERVE k 1e-300 10"), cnc);
    assert_eq!(err(&mut con, "BF.RESERVE k 1e-300 10 NONSCALING"), cnc);
    assert_eq!(err(&mut con, "BF.INSERT k ERROR 1e-300 ITEMS a"), cnc);
    // A default that would make every auto-creation fail is refused at CONFIG SET.
    assert!(err(&mut con, "CONFIG SET bf.bf-error-rate 1e-300").contains("too small"));
    assert_eq!(int(&mut con, "BF.ADD k a"), 1);
    assert_eq!(int(&mut con, "DEL k"), 1);

    // Small but usable error rates work; a chain stops growing when the next link would
    // need more than 128 hash functions (each link halves the error: one more hash).
    ok(&mut con, "BF.RESERVE h 1e-30 1 EXPANSION 1");
    assert!(debug(&mut con, "h")[1].contains(" hashes:101 "));
    let adds = numbered("h", 35);
    let reply = items(rawv(&mut con, &with_items("BF.MADD h", &adds)));
    let too_small = "!ERR sub-filter error rate too small (more than 128 hash functions)";
    assert_eq!(reply.iter().filter(|v| show(v) == "1").count(), 28);
    assert!(reply[28..]
        .iter()
        .all(|v| show(v) == too_small || show(v) == "0"));
    assert_eq!(info_num(&mut con, "h", "FILTERS"), 28);
    let lines = debug(&mut con, "h");
    assert!(lines[28].contains(" hashes:128 "), "{}", lines[28]);
}
