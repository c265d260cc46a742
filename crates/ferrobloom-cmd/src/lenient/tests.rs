//! RedisBloom 2.x's parse ([`super`]), case by case as the live RedisBloom 2.8.2
//! answered.

use super::*;
use ferrobloom_core::bloom::ChainOptions;

const D: BloomDefaults = BloomDefaults {
    error: 0.01,
    capacity: 100,
    expansion: 4,
    layout: BloomLayout::Classic,
    opts: ferrobloom_core::bloom::ChainOptions::REDISBLOOM,
};

fn v<'a>(args: &[&'a str]) -> Vec<&'a [u8]> {
    args.iter().map(|s| s.as_bytes()).collect()
}

fn bres(args: &[&str]) -> Result<CreateParams, CmdError> {
    bf_reserve(&v(args).as_slice())
}

fn bins(args: &[&str]) -> Result<InsertArgs<CreateParams>, CmdError> {
    bf_insert(&v(args).as_slice(), &D)
}

fn cres(args: &[&str]) -> Result<CuckooParams, CmdError> {
    cf_reserve(&v(args).as_slice())
}

fn cins(args: &[&str]) -> Result<InsertArgs<CuckooParams>, CmdError> {
    cf_insert(&v(args).as_slice())
}

fn p(error: f64, capacity: u64, expansion: u32) -> CreateParams {
    CreateParams {
        error,
        capacity,
        expansion,
        layout: BloomLayout::RedisBloom,
        nonscaling_growth: if expansion == 0 { 2 } else { expansion },
        opts: ChainOptions::default(),
        ..CreateParams::default()
    }
}

// Each case below was checked against the live RedisBloom 2.8.2.
#[test]
fn bf_reserve_as_redisbloom_2() {
    assert_eq!(
        bres(&["BF.RESERVE", "k", "0.5", "200", "NONSCALING"]),
        Ok(p(0.5, 200, 0))
    );
    // Unknown and misspelled tokens are ignored; the default is 2, not the config's.
    assert_eq!(
        bres(&["BF.RESERVE", "k", "0.01", "100", "EXPANSON", "4"]),
        Ok(p(0.01, 100, 2))
    );
    assert_eq!(
        bres(&["BF.RESERVE", "k", "0.9", "1073741825", "NONSCALING"]),
        Ok(p(0.9, 1 << 30 | 1, 0))
    );
    assert_eq!(
        bres(&["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "100000"]),
        Ok(p(0.01, 10, 100_000))
    );
    // The first EXPANSION wins; a trailing one is ignored.
    assert_eq!(
        bres(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "4",
            "EXPANSION"
        ]),
        Ok(p(0.01, 10, 4))
    );
    assert_eq!(
        bres(&["BF.RESERVE", "k", "0.01", "10", "NONSCALING", "NONSCALING"]),
        Ok(p(0.01, 10, 0))
    );
    // Keywords are searched in the key too (`RMUtil_ArgIndex` over all of argv).
    assert_eq!(
        bres(&["BF.RESERVE", "nonscaling", "0.01", "10"]),
        Ok(p(0.01, 10, 0))
    );
    // `unsigned growth`: the low 32 bits.
    assert_eq!(
        bres(&["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "4294967298"]),
        Ok(p(0.01, 10, 2))
    );
    for bad in [
        &[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "4",
            "EXPANSION",
            "8",
        ][..],
        &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "0"],
        &[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "4",
            "NONSCALING",
        ],
        &["BF.RESERVE", "k", "0", "10"],
        &["BF.RESERVE", "k", "0.01", "0"],
        &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "4294967296"],
    ] {
        assert!(bres(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn bf_insert_as_redisbloom_2() {
    // NOCREATE with CAPACITY is accepted.
    let a = bins(&["BF.INSERT", "k", "CAPACITY", "10", "NOCREATE", "ITEMS", "a"]).unwrap();
    assert_eq!((a.create, a.items_from), (None, 6));
    // `EXPANSON` is EXPANSION (first letter e, second not r).
    let a = bins(&["BF.INSERT", "k", "EXPANSON", "4", "ITEMS", "a"]).unwrap();
    assert_eq!(a.create, Some(p(0.01, 100, 4)));
    let a = bins(&[
        "BF.INSERT",
        "k",
        "ERROR",
        "0.5",
        "CAPACITY",
        "50",
        "NONSCALING",
        "EXPANSION",
        "3",
        "ITEMS",
        "a",
    ])
    .unwrap();
    // RedisBloom records the growth 3 in the non-scaling filter's header.
    let want = CreateParams {
        nonscaling_growth: 3,
        ..p(0.5, 50, 0)
    };
    assert_eq!(a.create, Some(want));
    let a = bins(&["BF.INSERT", "k", "ixyz", "a", "b"]).unwrap();
    assert_eq!((a.create, a.items_from), (Some(p(0.01, 100, 2)), 3));
    let a = bins(&["BF.INSERT", "k", "eee", "5", "ITEMS", "a"]).unwrap();
    assert_eq!(a.create.unwrap().expansion, 5);
    let a = bins(&["BF.INSERT", "k", "n", "ITEMS", "a"]).unwrap();
    assert_eq!(a.create.unwrap().expansion, 0);
    let a = bins(&[
        "BF.INSERT",
        "k",
        "CAPACITY",
        "10",
        "CAPACITY",
        "2000000000",
        "ITEMS",
        "a",
    ])
    .unwrap();
    assert_eq!(a.create.unwrap().capacity, 2_000_000_000);
    // ferrobloom's verbatim INSERTs (onto an existing key): same item position.
    let a = bins(&["BF.INSERT", "k", "NONSCALING", "NOCREATE", "ITEMS", "ITEMS"]).unwrap();
    assert_eq!((a.create, a.items_from), (None, 5));
    assert_eq!(
        bins(&["BF.INSERT", "k", "EXPANSION", "0", "ITEMS", "a"]).unwrap_err(),
        CmdError::Text(RB2_BAD_ARGUMENT)
    );
    for bad in [
        &["BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"][..],
        &["BF.INSERT", "k", "LAYOUT", "classic", "ITEMS", "a"],
        &["BF.INSERT", "k", "ITEMS"],
        &["BF.INSERT", "k", "CAPACITY"],
        &["BF.INSERT", "k", "", "ITEMS", "a"],
    ] {
        assert!(bins(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn cf_as_redisbloom_2() {
    let c = cres(&[
        "CF.RESERVE",
        "k",
        "1000",
        "BUCKETSIZE",
        "4",
        "BUCKETSIZE",
        "8",
    ])
    .unwrap();
    assert_eq!((c.bucket_size, c.max_iterations, c.expansion), (4, 20, 1));
    assert!(c.redisbloom && c.error_rate.is_none() && c.fp_bits == 8);
    let c = cres(&["CF.RESERVE", "k", "1000", "FOO", "1"]).unwrap();
    assert_eq!((c.capacity, c.bucket_size), (1000, 2));
    let c = cres(&["CF.RESERVE", "EXPANSION", "1000"]).unwrap();
    assert_eq!(c.expansion, 1000);
    let c = cres(&["CF.RESERVE", "k", "1073741825", "BUCKETSIZE", "255"]).unwrap();
    assert_eq!(c.capacity, 1073741825);
    assert!(cres(&["CF.RESERVE", "k", "10", "EXPANSION", "40000"]).is_err());
    assert!(cres(&["CF.RESERVE", "k", "10", "BUCKETSIZE", "6"]).is_err());
    assert!(cres(&["CF.RESERVE", "k", "10", "BUCKETSIZE"]).is_err());
    assert!(cres(&["CF.RESERVE", "k", "10", "x"]).is_err());

    let a = cins(&[
        "CF.INSERT",
        "k",
        "CAPACITY",
        "100",
        "NOCREATE",
        "ITEMS",
        "a",
    ])
    .unwrap();
    assert_eq!((a.create, a.items_from), (None, 6));
    let a = cins(&["CF.INSERT", "k", "cap", "100", "i", "a", "b"]).unwrap();
    assert_eq!((a.create.unwrap().capacity, a.items_from), (100, 5));
    let a = cins(&[
        "CF.INSERTNX",
        "k",
        "CAPACITY",
        "10",
        "CAPACITY",
        "500",
        "ITEMS",
        "a",
    ])
    .unwrap();
    assert_eq!(a.create.unwrap().capacity, 500);
    let a = cins(&["CF.INSERT", "k", "CAPACITY", "2000000000", "ITEMS", "a"]).unwrap();
    assert_eq!(a.create, Some(cuckoo_params(2_000_000_000, 2, 20, 1)));
    assert_eq!(
        cins(&["CF.INSERT", "k", "CAPACITY", "3", "ITEMS", "a"]).unwrap_err(),
        CmdError::Text(RB2_CF_CAPACITY_MIN)
    );
    for bad in [
        &["CF.INSERT", "k", "x", "ITEMS", "a"][..],
        &["CF.INSERT", "k", "ERROR", "0.01", "ITEMS", "a"],
        &["CF.INSERT", "k", "ITEMS"],
    ] {
        assert!(cins(bad).is_err(), "{bad:?}");
    }
    assert_eq!(cf_add_params(), cuckoo_params(1024, 2, 20, 1));
    assert_eq!(bf_add_params(&D), p(0.01, 100, 2));
}

#[test]
fn layout_and_fallback() {
    assert!(names_layout(
        &v(&[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "NONSCALING",
            "LAYOUT",
            "classic"
        ])
        .as_slice(),
        4
    ));
    assert!(!names_layout(
        &v(&["BF.RESERVE", "layout", "0.01", "10"]).as_slice(),
        4
    ));
    assert_eq!(
        either(|| Err::<u8, _>(CmdError::WrongArity), || Ok(1)),
        Ok(1)
    );
    assert_eq!(
        either(|| Err::<u8, _>(CmdError::WrongArity), || Err("x".into())),
        Err(CmdError::WrongArity)
    );
}
