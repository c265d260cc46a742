//! CF.* argument parsing, with RedisBloom's syntax, defaults and error texts
//! (<https://redis.io/docs/latest/commands/cf.reserve/>,
//! <https://redis.io/docs/latest/commands/cf.insert/>); keywords match whole
//! arguments, only in option positions (RedisBloom 2.x finds them anywhere in
//! argv, the key included, and by first letter in CF.INSERT: `CFReserve_RedisCommand`
//! and `CFInsert_RedisCommand` in
//! <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/rebloom.c>), and
//! ferrobloom's `ERROR rate` option (a user-chosen false-positive rate, which
//! picks the fingerprint width) is accepted by CF.RESERVE and CF.INSERT[NX].

use super::cf_options::{self, check_capacity, CfCommand, CfGiven};
use super::errors::{self as e, CmdError};
use super::lenient::{self, Origin};
use super::parse::{parse_i64, scan_options, ArgList, InsertArgs};
use ferrobloom_core::cuckoo::{fp_bits_for_error, CuckooParams, DEFAULT_FP_BITS};

/// Defaults for what a command does not say (from the module configuration).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CuckooDefaults {
    pub capacity: u64,
    pub bucket_size: u8,
    pub max_iterations: u16,
    pub expansion: u32,
    /// `None`: RedisBloom's 8-bit fingerprints.
    pub error: Option<f64>,
    /// `cf-layout redisbloom`: new filters use RedisBloom's hashing and formats.
    pub redisbloom: bool,
}

impl CuckooDefaults {
    /// Creation parameters for `capacity` (and an optional error rate) with
    /// everything else from the defaults.
    pub fn params(&self, capacity: u64, error: Option<f64>) -> Result<CuckooParams, CmdError> {
        self.params_as(capacity, error, self.redisbloom)
    }

    /// [`params`](Self::params) with an explicit layout: with RedisBloom's, a
    /// configured default error rate does not apply and an explicit one is refused.
    fn params_as(
        &self,
        capacity: u64,
        error: Option<f64>,
        redisbloom: bool,
    ) -> Result<CuckooParams, CmdError> {
        if redisbloom && error.is_some() {
            return Err(e::CF_LAYOUT_NO_ERROR.into());
        }
        let error = if redisbloom {
            None
        } else {
            error.or(self.error)
        };
        let mut p = make_params(
            capacity,
            self.bucket_size,
            self.max_iterations,
            self.expansion,
            error,
        )?;
        p.redisbloom = redisbloom;
        Ok(p)
    }
}

fn make_params(
    capacity: u64,
    bucket_size: u8,
    max_iterations: u16,
    expansion: u32,
    error: Option<f64>,
) -> Result<CuckooParams, CmdError> {
    let fp_bits = match error {
        None => DEFAULT_FP_BITS,
        Some(r) => fp_bits_for_error(r, bucket_size).ok_or(e::CF_ERROR_TOO_SMALL)?,
    };
    Ok(CuckooParams {
        capacity,
        bucket_size,
        max_iterations,
        expansion,
        fp_bits,
        error_rate: error,
        redisbloom: false,
    })
}

pub use super::cf_options::parse_layout;

/// `CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION exp] [ERROR rate]`
pub fn parse_reserve<'a>(
    args: &impl ArgList<'a>,
    d: &CuckooDefaults,
) -> Result<CuckooParams, CmdError> {
    let n = args.count();
    if n < 3 || n % 2 == 0 {
        return Err(CmdError::WrongArity);
    }
    let capacity = args.arg(2).and_then(parse_i64).ok_or(e::CF_BAD_CAPACITY)?;
    let mut g = CfGiven::new(d.bucket_size);
    let mut i = 3;
    while let (Some(k), Some(v)) = (args.arg(i), args.arg(i + 1)) {
        let o = cf_options::find(CfCommand::Reserve, k).ok_or(e::UNKNOWN_ARGUMENT)?;
        (o.set)(&mut g, v)?;
        i += 2;
    }
    check_capacity(capacity, g.bucket_size)?;
    CuckooDefaults {
        bucket_size: g.bucket_size,
        max_iterations: g.max_iterations.unwrap_or(d.max_iterations),
        expansion: g.expansion.unwrap_or(d.expansion),
        ..*d
    }
    .params_as(
        capacity as u64,
        g.error,
        g.redisbloom.unwrap_or(d.redisbloom),
    )
}

/// `CF.INSERT[NX] key [CAPACITY cap] [ERROR rate] [NOCREATE] ITEMS item [item ...]`
pub fn parse_insert<'a>(
    args: &impl ArgList<'a>,
    d: &CuckooDefaults,
) -> Result<InsertArgs<CuckooParams>, CmdError> {
    let mut g = CfGiven::new(d.bucket_size);
    let items_from = scan_options(
        args,
        |a| cf_options::find(CfCommand::Insert, a).map(|o| (o, o.valued())),
        |o, v| (o.set)(&mut g, v),
    )?;
    let CfGiven {
        capacity,
        error,
        nocreate,
        ..
    } = g;
    let redisbloom = g.redisbloom.unwrap_or(d.redisbloom);
    if nocreate && (capacity.is_some() || error.is_some()) {
        return Err(e::NOCREATE_WITH_OPTIONS.into());
    }
    let create = if nocreate {
        None
    } else {
        Some(d.params_as(capacity.unwrap_or(d.capacity), error, redisbloom)?)
    };
    Ok(InsertArgs {
        create,
        items_from,
        at_ms: None,
        shapes: None,
    })
}

/// CF.RESERVE as its writer meant it (see [`lenient`]): strict for clients;
/// from the primary or the AOF, ferrobloom's form (it names `LAYOUT`) or
/// RedisBloom 2.x's.
pub fn parse_reserve_from<'a>(
    args: &impl ArgList<'a>,
    d: &CuckooDefaults,
    origin: Origin,
) -> Result<CuckooParams, CmdError> {
    let strict = || parse_reserve(args, d);
    match origin {
        Origin::Client => strict(),
        Origin::Trusted if lenient::names_layout(args, 3) => {
            lenient::either(strict, || lenient::cf_reserve(args))
        }
        Origin::Trusted => lenient::either(|| lenient::cf_reserve(args), strict),
    }
}

/// CF.INSERT[NX] as its writer meant it (see [`lenient`]).
pub fn parse_insert_from<'a>(
    args: &impl ArgList<'a>,
    d: &CuckooDefaults,
    origin: Origin,
) -> Result<InsertArgs<CuckooParams>, CmdError> {
    match origin {
        Origin::Client => parse_insert(args, d),
        // ferrobloom's LAYOUT (an INSERT into an existing key is replicated verbatim).
        Origin::Trusted if lenient::names_option(args, cf_options::marks_ferrobloom) => {
            lenient::either(|| parse_insert(args, d), || lenient::cf_insert(args))
        }
        Origin::Trusted => lenient::either(|| lenient::cf_insert(args), || parse_insert(args, d)),
    }
}

/// A SCANDUMP/LOADCHUNK iterator: `Invalid position` unless an integer >= 0.
pub fn parse_position(v: &[u8]) -> Result<i64, CmdError> {
    parse_i64(v)
        .filter(|p| *p >= 0)
        .ok_or(e::CF_INVALID_POSITION.into())
}

/// A CF.LOADCHUNK iterator: `Invalid position` unless a non-zero integer (as
/// RedisBloom 2.8: a negative one is a data chunk that cannot load).
pub fn parse_load_position(v: &[u8]) -> Result<i64, CmdError> {
    parse_i64(v)
        .filter(|p| *p != 0)
        .ok_or(e::CF_INVALID_POSITION.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: CuckooDefaults = CuckooDefaults {
        capacity: 1024,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
        error: None,
        redisbloom: false,
    };

    fn reserve(args: &[&str]) -> Result<CuckooParams, CmdError> {
        let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        parse_reserve(&v.as_slice(), &D)
    }

    fn insert(args: &[&str]) -> Result<InsertArgs<CuckooParams>, CmdError> {
        let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        parse_insert(&v.as_slice(), &D)
    }

    fn err<T: std::fmt::Debug>(r: Result<T, CmdError>) -> String {
        r.unwrap_err().text().to_string()
    }

    #[test]
    fn reserve_options_defaults_and_errors() {
        let p = reserve(&["CF.RESERVE", "k", "1000"]).unwrap();
        assert_eq!(
            (
                p.capacity,
                p.bucket_size,
                p.max_iterations,
                p.expansion,
                p.fp_bits,
                p.error_rate
            ),
            (1000, 2, 20, 1, 8, None)
        );
        let p = reserve(&[
            "cf.reserve",
            "k",
            "64",
            "bucketsize",
            "4",
            "MAXITERATIONS",
            "50",
            "EXPANSION",
            "2",
            "ERROR",
            "0.001",
        ])
        .unwrap();
        assert_eq!((p.bucket_size, p.max_iterations, p.expansion), (4, 50, 2));
        assert_eq!(p.error_rate, Some(0.001));
        assert!(p.fp_bits > 8);
        assert!(reserve(&["CF.RESERVE", "k", "2", "BUCKETSIZE", "1"]).is_ok());
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k"])),
            "ERR wrong number of arguments"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "BUCKETSIZE"])),
            "ERR wrong number of arguments"
        );
        assert_eq!(err(reserve(&["CF.RESERVE", "k", "x"])), "Bad capacity");
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "BUCKETSIZE", "x"])),
            "Couldn't parse BUCKETSIZE"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "BUCKETSIZE", "256"])),
            e::CF_BUCKETSIZE_RANGE
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "MAXITERATIONS", "0"])),
            e::CF_MAXITERATIONS_RANGE
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "MAXITERATIONS", "q"])),
            "Couldn't parse MAXITERATIONS"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "EXPANSION", "40000"])),
            e::CF_EXPANSION_RANGE
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "EXPANSION", "q"])),
            "Couldn't parse EXPANSION"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "3"])),
            "Capacity must be at least (BucketSize * 2)"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "1073741825"])),
            "Capacity must be at most 1073741824"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "FOO", "1"])),
            "Unknown argument received"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "ERROR", "2"])),
            "ERROR: value must be a number between 0 and 1, exclusive."
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "ERROR", "x"])),
            "Couldn't parse ERROR"
        );
        assert_eq!(
            err(reserve(&["CF.RESERVE", "k", "10", "ERROR", "1e-12"])),
            "ERROR: rate too small even for 32-bit fingerprints"
        );
        // A key named like a keyword is a key (RedisBloom 2.x would take it for
        // the keyword and read its value past argv).
        assert!(reserve(&["CF.RESERVE", "BUCKETSIZE", "10"]).is_ok());
    }

    #[test]
    fn insert_options_and_errors() {
        let a = insert(&["CF.INSERT", "k", "ITEMS", "a", "b"]).unwrap();
        assert_eq!(a.items_from, 3);
        assert_eq!(a.create.unwrap().capacity, 1024);
        let a = insert(&[
            "CF.INSERT",
            "k",
            "CAPACITY",
            "100",
            "ERROR",
            "0.0001",
            "ITEMS",
            "a",
        ])
        .unwrap();
        let p = a.create.unwrap();
        assert_eq!((p.capacity, p.error_rate), (100, Some(0.0001)));
        assert_eq!(
            insert(&["CF.INSERT", "k", "NOCREATE", "ITEMS", "a"])
                .unwrap()
                .create,
            None
        );
        assert_eq!(
            err(insert(&["CF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a"])),
            "Bad capacity"
        );
        assert_eq!(
            err(insert(&["CF.INSERT", "k", "CAPACITY", "3", "ITEMS", "a"])),
            "Capacity must be at least (BucketSize * 2)"
        );
        assert_eq!(
            err(insert(&["CF.INSERT", "k", "ITEMS"])),
            "ERR wrong number of arguments"
        );
        assert_eq!(
            err(insert(&["CF.INSERT", "k", "CAPACITY"])),
            "ERR wrong number of arguments"
        );
        assert_eq!(
            err(insert(&["CF.INSERT", "k", "ixyz", "a"])),
            "Unknown argument received"
        );
        assert_eq!(
            err(insert(&[
                "CF.INSERT",
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
    fn positions() {
        assert_eq!(parse_position(b"0"), Ok(0));
        assert_eq!(parse_position(b"17"), Ok(17));
        assert_eq!(
            parse_position(b"-1").unwrap_err().text(),
            "Invalid position"
        );
        assert_eq!(parse_position(b"x").unwrap_err().text(), "Invalid position");
        assert_eq!(parse_load_position(b"-1"), Ok(-1));
        assert_eq!(parse_load_position(b"2"), Ok(2));
        for bad in [&b"0"[..], b"x", b"-0"] {
            assert_eq!(
                parse_load_position(bad).unwrap_err().text(),
                "Invalid position"
            );
        }
    }
}
