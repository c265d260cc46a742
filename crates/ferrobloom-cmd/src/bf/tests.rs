//! The strict BF parsers ([`super`]) and the trusted parse's choice between
//! ferrobloom's and RedisBloom 2.x's.

use super::*;
use crate::options::{Source, BF_OPTIONS};
use ferrobloom_core::bloom::ChainOptions;
use ferrobloom_core::window::MAX_WINDOW_MS;

const D: BloomDefaults = BloomDefaults {
    error: 0.01,
    capacity: 100,
    expansion: 2,
    layout: BloomLayout::Blocked,
    opts: ferrobloom_core::bloom::ChainOptions::REDISBLOOM,
};

fn reserve(args: &[&str]) -> Result<CreateParams, CmdError> {
    let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    parse_reserve(&v.as_slice(), &D)
}

fn insert(args: &[&str]) -> Result<InsertArgs<CreateParams>, CmdError> {
    let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    parse_insert(&v.as_slice(), &D)
}

fn err(r: Result<impl std::fmt::Debug, CmdError>) -> String {
    r.unwrap_err().text().to_string()
}

#[test]
fn reserve_defaults_options_and_errors() {
    let p = reserve(&["BF.RESERVE", "k", "0.001", "100"]).unwrap();
    assert_eq!(
        p,
        CreateParams {
            error: 0.001,
            capacity: 100,
            expansion: 2,
            layout: BloomLayout::Blocked,
            nonscaling_growth: 2,
            opts: ChainOptions::default(),
            ..CreateParams::default()
        }
    );
    let p = reserve(&["bf.reserve", "k", "0.01", "10", "expansion", "4"]).unwrap();
    assert_eq!(p.expansion, 4);
    assert_eq!(
        reserve(&["BF.RESERVE", "k", "0.01", "10", "NONSCALING"])
            .unwrap()
            .expansion,
        0
    );
    assert_eq!(
        reserve(&["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "0"])
            .unwrap()
            .expansion,
        0
    );
    assert_eq!(
        reserve(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "0",
            "NONSCALING"
        ])
        .unwrap()
        .expansion,
        0
    );
    assert_eq!(
        reserve(&["BF.RESERVE", "k", "0.9", "10"]).unwrap().error,
        0.25
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01"])),
        "ERR wrong number of arguments"
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "x", "10"])),
        "ERR bad error rate"
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "1", "10"])),
        "ERR (0 < error rate range < 1) "
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0", "10"])),
        err(reserve(&["BF.RESERVE", "k", "-1", "10"]))
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "1.5"])),
        "ERR bad capacity"
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "0"])),
        "ERR (capacity should be larger than 0)"
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "1073741825"])),
        "ERR (capacity should be at most 1073741824)"
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "10", "EXPANSION"])),
        "ERR no expansion"
    );
    assert_eq!(
        err(reserve(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "x"
        ])),
        "ERR bad expansion"
    );
    assert_eq!(
        err(reserve(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "40000"
        ])),
        "ERR expansion should be at most 32768"
    );
    assert_eq!(
        err(reserve(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "NONSCALING",
            "EXPANSION",
            "2"
        ])),
        "Nonscaling filters cannot expand"
    );
    assert_eq!(
        err(reserve(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "2",
            "NONSCALING"
        ])),
        "Nonscaling filters cannot expand"
    );
    // A key or value that spells a keyword is just a key (RedisBloom 2.x's
    // BF.RESERVE searches all of argv for its keywords).
    assert!(reserve(&["BF.RESERVE", "expansion", "0.01", "10"]).is_ok());
    assert!(
        reserve(&["BF.RESERVE", "NONSCALING", "0.01", "10"])
            .unwrap()
            .expansion
            == 2
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "10", "foo"])),
        "Unknown argument received"
    );
}

#[test]
fn explicit_expansion_beats_a_zero_default() {
    let d = BloomDefaults { expansion: 0, ..D };
    let v: Vec<&[u8]> = ["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "2"]
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    assert_eq!(parse_reserve(&v.as_slice(), &d).unwrap().expansion, 2);
    let v: Vec<&[u8]> = ["BF.RESERVE", "k", "0.01", "10"]
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    assert_eq!(parse_reserve(&v.as_slice(), &d).unwrap().expansion, 0);
}

#[test]
fn layout_option() {
    let p = reserve(&["BF.RESERVE", "k", "0.01", "10", "LAYOUT", "classic"]).unwrap();
    assert_eq!(p.layout, BloomLayout::Classic);
    let p = reserve(&[
        "BF.RESERVE",
        "k",
        "0.01",
        "10",
        "NONSCALING",
        "layout",
        "BLOCKED",
    ])
    .unwrap();
    assert_eq!((p.layout, p.expansion), (BloomLayout::Blocked, 0));
    let p = reserve(&[
        "BF.RESERVE",
        "k",
        "0.01",
        "10",
        "EXPANSION",
        "4",
        "LAYOUT",
        "classic",
    ])
    .unwrap();
    assert_eq!((p.layout, p.expansion), (BloomLayout::Classic, 4));
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "10", "LAYOUT"])),
        e::BAD_LAYOUT
    );
    assert_eq!(
        err(reserve(&["BF.RESERVE", "k", "0.01", "10", "LAYOUT", "x"])),
        e::BAD_LAYOUT
    );
    let a = insert(&["BF.INSERT", "k", "LAYOUT", "classic", "ITEMS", "a"]).unwrap();
    assert_eq!(a.create.unwrap().layout, BloomLayout::Classic);
    assert_eq!(a.items_from, 5);
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "LAYOUT", "nope", "ITEMS", "a"])),
        e::BAD_LAYOUT
    );
}

#[test]
fn insert_options_and_errors() {
    let a = insert(&["BF.INSERT", "k", "ITEMS", "a", "b"]).unwrap();
    assert_eq!(a.items_from, 3);
    assert_eq!(
        a.create,
        Some(CreateParams {
            error: 0.01,
            capacity: 100,
            expansion: 2,
            layout: BloomLayout::Blocked,
            nonscaling_growth: 2,
            opts: ChainOptions::default(),
            ..CreateParams::default()
        })
    );
    let a = insert(&[
        "BF.INSERT",
        "k",
        "capacity",
        "1000",
        "error",
        "0.001",
        "expansion",
        "4",
        "ITEMS",
        "x",
    ])
    .unwrap();
    assert_eq!(
        a.create,
        Some(CreateParams {
            error: 0.001,
            capacity: 1000,
            expansion: 4,
            layout: BloomLayout::Blocked,
            nonscaling_growth: 2,
            opts: ChainOptions::default(),
            ..CreateParams::default()
        })
    );
    assert_eq!(a.items_from, 9);
    let a = insert(&[
        "BF.INSERT",
        "k",
        "NONSCALING",
        "EXPANSION",
        "3",
        "ITEMS",
        "x",
    ])
    .unwrap();
    assert_eq!(a.create.unwrap().expansion, 0);
    assert_eq!(
        insert(&["BF.INSERT", "k", "NOCREATE", "ITEMS", "x"])
            .unwrap()
            .create,
        None
    );
    // Items may look like keywords.
    let a = insert(&["BF.INSERT", "k", "ITEMS", "NOCREATE", "ITEMS"]).unwrap();
    assert_eq!(a.items_from, 3);
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "ITEMS"])),
        "ERR wrong number of arguments"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "NOCREATE", "NONSCALING"])),
        "ERR wrong number of arguments"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "CAPACITY"])),
        "ERR wrong number of arguments"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"])),
        "Bad argument received"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a"])),
        "Bad capacity"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "ERROR", "2", "ITEMS", "a"])),
        "Bad argument received"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "ERROR", "x", "ITEMS", "a"])),
        "Bad error rate"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "EXPANSION", "-1", "ITEMS", "a"])),
        "Bad argument received"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "EXPANSION", "y", "ITEMS", "a"])),
        "Bad expansion"
    );
    // Keywords are whole words (RedisBloom 2.x's BF.INSERT goes by first letters).
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "ixyz", "a"])),
        "Unknown argument received"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "n", "ITEMS", "a"])),
        "Unknown argument received"
    );
    assert_eq!(
        err(insert(&["BF.INSERT", "k", "e", "2", "ITEMS", "a"])),
        "Unknown argument received"
    );
    // NOCREATE with CAPACITY or ERROR is refused, as documented (RedisBloom 2.x
    // ignores them).
    assert_eq!(
        err(insert(&[
            "BF.INSERT",
            "k",
            "NOCREATE",
            "CAPACITY",
            "10",
            "ITEMS",
            "a"
        ])),
        "ERR NOCREATE cannot be combined with CAPACITY or ERROR"
    );
}

#[test]
fn valkey_bloom_options() {
    let seed = "0123456789abcdef0123456789abcdef";
    let p = reserve(&[
        "BF.RESERVE",
        "k",
        "0.01",
        "10",
        "TIGHTENING",
        "0.9",
        "SEED",
        seed,
        "VALIDATESCALETO",
        "1000",
    ])
    .unwrap();
    assert_eq!(p.opts.tightening, 0.9);
    assert_eq!(p.opts.seed, Some(*b"0123456789abcdef0123456789abcdef"));
    assert_eq!(p.scale_to, Some(1000));
    let a = insert(&[
        "BF.INSERT",
        "k",
        "tightening",
        "0.25",
        "seed",
        seed,
        "validatescaleto",
        "7",
        "ITEMS",
        "a",
    ])
    .unwrap();
    let c = a.create.unwrap();
    assert_eq!((c.opts.tightening, c.scale_to), (0.25, Some(7)));
    assert_eq!(a.items_from, 9);
    // Defaults: RedisBloom's ratio, no seed, no check.
    let c = insert(&["BF.INSERT", "k", "ITEMS", "a"])
        .unwrap()
        .create
        .unwrap();
    assert_eq!((c.opts, c.scale_to), (ChainOptions::default(), None));
    for (args, want) in [
        (&["TIGHTENING", "x"][..], "ERR bad tightening ratio"),
        (
            &["TIGHTENING", "1"][..],
            "ERR (0 < tightening ratio range < 1)",
        ),
        (
            &["TIGHTENING", "0"][..],
            "ERR (0 < tightening ratio range < 1)",
        ),
        (
            &["TIGHTENING", "-0.5"][..],
            "ERR (0 < tightening ratio range < 1)",
        ),
        (&["SEED", "short"][..], "ERR invalid seed"),
        (
            &[
                "SEED",
                "0123456789abcdef0123456789abcdef",
                "SEED",
                "0123456789abcdef0123456789abcdef",
            ][..],
            "ERR SEED given twice",
        ),
        (
            &["SEED", "0123456789abcdef0123456789abcdef0"][..],
            "ERR invalid seed",
        ),
        (
            &["VALIDATESCALETO", "0"][..],
            "ERR (capacity should be larger than 0)",
        ),
        (&["VALIDATESCALETO", "-1"][..], "ERR bad capacity"),
        (&["VALIDATESCALETO", "x"][..], "ERR bad capacity"),
        (
            &["NONSCALING", "VALIDATESCALETO", "10"][..],
            "ERR cannot use NONSCALING and VALIDATESCALETO options together",
        ),
        (
            &["EXPANSION", "0", "VALIDATESCALETO", "10"][..],
            "ERR cannot use NONSCALING and VALIDATESCALETO options together",
        ),
        (
            &["LAYOUT", "redisbloom", "TIGHTENING", "0.6"][..],
            "ERR TIGHTENING and SEED cannot be used with LAYOUT redisbloom",
        ),
        (
            &["LAYOUT", "redisbloom", "SEED", seed][..],
            "ERR TIGHTENING and SEED cannot be used with LAYOUT redisbloom",
        ),
    ] {
        let mut r = vec!["BF.RESERVE", "k", "0.01", "10"];
        r.extend_from_slice(args);
        assert_eq!(err(reserve(&r)), want, "{r:?}");
        let mut i = vec!["BF.INSERT", "k"];
        i.extend_from_slice(args);
        i.extend_from_slice(&["ITEMS", "a"]);
        assert_eq!(err(insert(&i)), want, "{i:?}");
    }
    // A missing value.
    for o in BF_OPTIONS
        .iter()
        .filter(|o| o.source == Source::ValkeyBloom)
    {
        let kw = std::str::from_utf8(o.keyword()).unwrap();
        assert_eq!(
            err(reserve(&["BF.RESERVE", "k", "0.01", "10", kw])),
            "ERR wrong number of arguments"
        );
    }
    // The redisbloom layout with the default ratio is fine.
    assert!(reserve(&[
        "BF.RESERVE",
        "k",
        "0.01",
        "10",
        "LAYOUT",
        "redisbloom",
        "TIGHTENING",
        "0.5"
    ])
    .is_ok());
}

#[test]
fn info_fields() {
    use crate::info::find_bf;
    assert_eq!(find_bf(b"capacity").map(|f| f.label), Ok(c"Capacity"));
    assert_eq!(
        find_bf(b"ITEMS").map(|f| f.label),
        Ok(c"Number of items inserted")
    );
    assert_eq!(
        find_bf(b"CAP").err().as_ref().map(CmdError::text),
        Some("Invalid information value")
    );
    assert_eq!(
        find_bf(b"filters").map(|f| f.label),
        Ok(c"Number of filters")
    );
}

#[test]
fn window_option_parsing_and_every_bad_input() {
    let w = |a: &[&str]| reserve(a).map(|p| p.window_ms);
    let base = ["BF.RESERVE", "k", "0.01", "1000", "WINDOW"];
    let with = |v: &str| {
        let mut a = base.to_vec();
        a.push(v);
        w(&a)
    };
    assert_eq!(with("600").unwrap(), Some(600_000));
    assert_eq!(with("0.5").unwrap(), Some(500));
    assert_eq!(with("0.001").unwrap(), Some(1));
    // Rounded to the nearest millisecond, halves up, once at least 1 ms.
    assert_eq!(with("0.0014").unwrap(), Some(1));
    assert_eq!(with("0.0015").unwrap(), Some(2));
    assert_eq!(with("1.0004").unwrap(), Some(1000));
    assert_eq!(with("86400").unwrap(), Some(86_400_000));
    assert_eq!(with("315576000").unwrap(), Some(MAX_WINDOW_MS));
    for bad in [
        "0",
        "-1",
        "-0.5",
        "nan",
        "NaN",
        "inf",
        "x",
        "",
        "315576000.001",
        "1e12",
        "0.0004",
        "0.0005",
        "0.000999",
    ] {
        assert_eq!(err(with(bad)), e::WINDOW_BAD, "{bad:?}");
    }
    assert_eq!(err(w(&base)), e::WINDOW_BAD, "missing value");
    let mut twice = base.to_vec();
    twice.extend(["1", "WINDOW", "2"]);
    assert_eq!(err(w(&twice)), e::WINDOW_TWICE);
    let all = [
        "BF.RESERVE",
        "k",
        "0.01",
        "10",
        "NONSCALING",
        "LAYOUT",
        "classic",
        "WINDOW",
        "3",
    ];
    let p = reserve(&all).unwrap();
    assert_eq!((p.window_ms, p.expansion), (Some(3000), 0));
    let all = [
        "BF.RESERVE",
        "k",
        "0.01",
        "10",
        "EXPANSION",
        "4",
        "LAYOUT",
        "blocked",
        "WINDOW",
        "3",
    ];
    assert_eq!(reserve(&all).unwrap().window_ms, Some(3000));
    assert_eq!(
        err(reserve(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "LAYOUT",
            "redisbloom",
            "WINDOW",
            "3"
        ])),
        e::WINDOW_LAYOUT
    );
    assert_eq!(w(&["BF.RESERVE", "k", "0.01", "10"]).unwrap(), None);
    // valkey-bloom's options do not apply to windowed filters (their
    // generations hash and size as the window says): refused, on both commands.
    for opt in [
        ["TIGHTENING", "0.7"],
        ["SEED", "0123456789abcdef0123456789abcdef"],
        ["VALIDATESCALETO", "100"],
    ] {
        let mut a = vec!["BF.RESERVE", "k", "0.01", "10", "WINDOW", "3"];
        a.extend(opt);
        assert_eq!(err(reserve(&a)), e::WINDOW_VALKEY, "{opt:?}");
        let mut a = vec!["BF.INSERT", "k", "WINDOW", "3"];
        a.extend(opt);
        a.extend(["ITEMS", "x"]);
        assert_eq!(err(insert(&a)), e::WINDOW_VALKEY, "{opt:?}");
    }
    // From the primary or the AOF, ferrobloom's windowed write (`AT ms`) is
    // read as ferrobloom's, not as RedisBloom 2.x's (which would drop `AT`).
    let v: Vec<&[u8]> = ["BF.INSERT", "k", "NOCREATE", "AT", "123456", "ITEMS", "at"]
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    let a = parse_insert_from(&v.as_slice(), &D, Origin::Trusted).unwrap();
    assert_eq!((a.at_ms, a.create, a.items_from), (Some(123456), None, 6));
    // A verbatim BF.INSERT into an existing key whose SEED value starts with
    // `i`: RedisBloom's parse takes the value for ITEMS and does not read the
    // command as written; ferrobloom's does.
    let seed = "i123456789abcdef0123456789abcdef";
    let v: Vec<&[u8]> = ["BF.INSERT", "k", "SEED", seed, "ITEMS", "a", "b"]
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    let a = parse_insert_from(&v.as_slice(), &D, Origin::Trusted).unwrap();
    assert_eq!(a.items_from, 5);
    // SEED twice: refused to a client; from the primary or the AOF (written by
    // a release that accepted it) the last one wins, as that release applied it.
    let other = "0123456789abcdef0123456789abcdef";
    let v: Vec<&[u8]> = ["BF.INSERT", "k", "SEED", seed, "SEED", other, "ITEMS", "a"]
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    assert_eq!(
        err(parse_insert_from(&v.as_slice(), &D, Origin::Client)),
        e::SEED_TWICE
    );
    let a = parse_insert_from(&v.as_slice(), &D, Origin::Trusted).unwrap();
    let want: [u8; 32] = other.as_bytes().try_into().unwrap();
    assert_eq!(a.create.unwrap().opts.seed, Some(want));
    assert_ne!(
        lenient::bf_insert(&v.as_slice(), &D)
            .map(|a| a.items_from)
            .ok(),
        Some(5)
    );
    let v: Vec<&[u8]> = ["BF.INSERT", "k", "WINDOW", "2", "ITEMS", "AT", "5"]
        .iter()
        .map(|s| s.as_bytes())
        .collect();
    let a = parse_insert_from(&v.as_slice(), &D, Origin::Trusted).unwrap();
    assert_eq!((a.at_ms, a.items_from), (None, 5));
    assert_eq!(a.create.unwrap().window_ms, Some(2000));

    let i = |a: &[&str]| insert(a);
    let a = i(&["BF.INSERT", "k", "WINDOW", "2.5", "ITEMS", "a"]).unwrap();
    assert_eq!(a.create.unwrap().window_ms, Some(2500));
    assert_eq!(a.at_ms, None);
    assert_eq!(
        err(i(&[
            "BF.INSERT",
            "k",
            "NOCREATE",
            "WINDOW",
            "2",
            "ITEMS",
            "a"
        ])),
        e::WINDOW_NOCREATE
    );
    assert_eq!(
        err(i(&[
            "BF.INSERT",
            "k",
            "WINDOW",
            "2",
            "WINDOW",
            "2",
            "ITEMS",
            "a"
        ])),
        e::WINDOW_TWICE
    );
    assert_eq!(
        err(i(&["BF.INSERT", "k", "WINDOW", "0", "ITEMS", "a"])),
        e::WINDOW_BAD
    );
    let a = i(&[
        "BF.INSERT",
        "k",
        "NOCREATE",
        "AT",
        "1700000000000",
        "ITEMS",
        "a",
    ])
    .unwrap();
    assert_eq!(a.at_ms, Some(1_700_000_000_000));
    assert_eq!(
        err(i(&["BF.INSERT", "k", "AT", "-5", "ITEMS", "a"])),
        e::WINDOW_AT
    );
}
