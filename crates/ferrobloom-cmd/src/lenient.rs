//! RedisBloom 2.x's parsing, for what comes from a primary or an AOF.
//!
//! A replica or an AOF replay must apply each command exactly as the server
//! that wrote it applied it. Clients of ferrobloom get the strict parsers of
//! [`super::bf`] and [`super::cf`]; in a trusted context (the primary's stream,
//! loading) [`Origin::Trusted`] picks the parse that reproduces the writer:
//!
//! - **ferrobloom** writes every creation spelled out, ending in `LAYOUT l`
//!   (`BF.RESERVE k e c EXPANSION x|NONSCALING LAYOUT l`, `CF.RESERVE k c
//!   BUCKETSIZE … MAXITERATIONS … EXPANSION … [ERROR r] LAYOUT l`), and
//!   replicates BF.INSERT/CF.INSERT[NX] verbatim only onto a key that exists
//!   by then (the creation goes first), where only the position of the items
//!   matters;
//! - **RedisBloom 2.x** (the version that runs on Redis 7 / the servers
//!   ferrobloom runs on) replicates its client's command verbatim, parsed
//!   leniently (the functions below): keywords searched over all of argv and
//!   the first occurrence wins (BF.RESERVE, CF.RESERVE), options recognised by
//!   their first letter (BF.INSERT, CF.INSERT), unknown tokens ignored
//!   (RESERVE), NOCREATE with CAPACITY/ERROR accepted, no 0.25 cap on error
//!   rates, no 2^30 cap on capacities, BF expansions up to 2^32 - 1, and its
//!   hard-wired defaults (BF expansion 2; CF capacity 1024, bucket size 2,
//!   20 iterations, expansion 1). Everything it creates has RedisBloom's layout.
//!
//! So a trusted RESERVE that names `LAYOUT` is ferrobloom's (strict parse, cap
//! lifted), any other is RedisBloom's (lenient parse); each falls back to the
//! other when it does not parse, and a trusted INSERT is parsed leniently
//! first (a strict INSERT that the lenient parser accepts has its items at the
//! same position). Commands RedisBloom refuses are never in its stream, so
//! their texts here only matter for the fallback.
//!
//! Verified against RedisBloom 2.8.2: its source
//! (<https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/rebloom.c>) and
//! the live module, in `crates/ferrobloom/tests/redisbloom_stream.rs` (a RedisBloom 2.8.2
//! primary's write stream, applied by a ferrobloom replica and replayed from
//! RedisBloom's AOF).

use super::errors::{self as e, CmdError};
use super::params::{BloomDefaults, CreateParams};
use super::parse::{is_keyword, parse_f64, parse_i64, ArgList, InsertArgs};
use ferrobloom_core::bloom::BloomLayout;
use ferrobloom_core::cuckoo::{CuckooParams, DEFAULT_FP_BITS};

/// Who wrote the command being parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A client of this server: ferrobloom's strict, documented syntax.
    Client,
    /// The primary's stream or the AOF: written by ferrobloom or by RedisBloom 2.x.
    Trusted,
}

/// RedisBloom 2.x's hard-wired Bloom expansion (`BF_DEFAULT_EXPANSION`).
pub const RB2_BF_EXPANSION: u32 = 2;
/// RedisBloom 2.x's hard-wired cuckoo defaults (`CFDefaultInitCapacity`, which
/// 2.x has no option for, and `CF_DEFAULT_*`).
pub const RB2_CF_CAPACITY: u64 = 1024;
pub const RB2_CF_BUCKET_SIZE: u8 = 2;
pub const RB2_CF_MAX_ITERATIONS: u16 = 20;
pub const RB2_CF_EXPANSION: u32 = 1;

/// RedisBloom 2.x's texts for what its parsers refuse (never in its stream).
const RB2_BAD_ARGUMENT: &str = e::INSERT_BAD_ARGUMENT;
const RB2_CF_CAPACITY_MIN: &str = e::CF_CAPACITY_MIN;

/// `RMUtil_ArgIndex`: the first argument of all argv (command name and key
/// included) equal to `kw`, case-insensitively.
fn arg_index<'a>(args: &impl ArgList<'a>, kw: &str) -> Option<usize> {
    (0..args.count()).find(|&i| args.arg(i).is_some_and(|a| is_keyword(a, kw)))
}

/// The lowercased byte `i` of an argument, `0` past its end (the C string's NUL
/// and beyond: RedisBloom reads `argstr[2]` of a one-letter token; the live
/// module then takes `n` as NONSCALING, as here).
fn lower_at(a: &[u8], i: usize) -> u8 {
    a.get(i).map_or(0, |c| c.to_ascii_lowercase())
}

/// A new filter as RedisBloom 2.x creates it: its layout, nothing clamped.
/// `expansion` is RedisBloom's `long long`, stored in an `unsigned`.
fn bloom_params(
    error: f64,
    capacity: i64,
    expansion: i64,
    nonscaling: bool,
) -> Result<CreateParams, CmdError> {
    // SB_NewChain's `unsigned growth` keeps the low 32 bits; a scaling filter
    // whose growth truncates to 0 cannot be reproduced.
    let growth = expansion as u32;
    if growth == 0 {
        return Err(RB2_BAD_ARGUMENT.into());
    }
    Ok(CreateParams {
        error,
        capacity: capacity as u64,
        expansion: if nonscaling { 0 } else { growth },
        layout: BloomLayout::RedisBloom,
        nonscaling_growth: growth,
        ..CreateParams::default()
    })
}

/// The parameters RedisBloom 2.x's BF.ADD/BF.MADD create a missing key with:
/// its module arguments `ERROR_RATE`/`INITIAL_SIZE` (ferrobloom's
/// `bf-error-rate`/`bf-initial-size`) and its fixed expansion 2.
pub fn bf_add_params(d: &BloomDefaults) -> CreateParams {
    CreateParams {
        expansion: RB2_BF_EXPANSION,
        layout: BloomLayout::RedisBloom,
        ..CreateParams::from_defaults(d)
    }
}

/// RedisBloom 2.x's `BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING]`.
pub fn bf_reserve<'a>(args: &impl ArgList<'a>) -> Result<CreateParams, CmdError> {
    let argc = args.count();
    if !(4..=7).contains(&argc) {
        return Err(CmdError::WrongArity);
    }
    let error = args.arg(2).and_then(parse_f64).ok_or(e::BAD_ERROR_RATE)?;
    if error >= 1.0 || error <= 0.0 {
        return Err(e::ERROR_RATE_RANGE.into());
    }
    let capacity = args.arg(3).and_then(parse_i64).ok_or(e::BAD_CAPACITY)?;
    if capacity <= 0 {
        return Err(e::CAPACITY_RANGE.into());
    }
    let nonscaling = arg_index(args, "NONSCALING").is_some();
    let mut expansion = i64::from(RB2_BF_EXPANSION);
    if let Some(at) = arg_index(args, "EXPANSION") {
        if at + 1 == argc {
            return Err(e::NO_EXPANSION.into());
        }
        if nonscaling {
            return Err(e::NONSCALING_EXPAND.into());
        }
        expansion = args
            .arg(at + 1)
            .and_then(parse_i64)
            .ok_or(e::BAD_EXPANSION)?;
        if expansion < 1 {
            return Err(e::EXPANSION_RANGE.into());
        }
    }
    bloom_params(error, capacity, expansion, nonscaling)
}

/// RedisBloom 2.x's `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x]
/// [NOCREATE] [NONSCALING] ITEMS item ...`: options by first letter (`e…`
/// with `r` second is ERROR, else EXPANSION; `n…` with `c` third is NOCREATE,
/// else NONSCALING), the last occurrence wins, values checked afterwards.
pub fn bf_insert<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
) -> Result<InsertArgs<CreateParams>, CmdError> {
    let argc = args.count();
    if argc < 4 {
        return Err(CmdError::WrongArity);
    }
    let (mut error, mut capacity) = (d.error, i64::try_from(d.capacity).unwrap_or(i64::MAX));
    let mut expansion = i64::from(RB2_BF_EXPANSION);
    let (mut autocreate, mut nonscaling) = (true, false);
    let mut items = None;
    let mut i = 2;
    while i < argc && items.is_none() {
        let a = args.arg(i).ok_or(CmdError::WrongArity)?;
        match lower_at(a, 0) {
            b'i' => {
                i += 1;
                items = Some(i);
            }
            b'e' | b'c' => {
                let v = args.arg(i + 1).ok_or(CmdError::WrongArity)?;
                if lower_at(a, 0) == b'c' {
                    capacity = parse_i64(v).ok_or(e::INSERT_BAD_CAPACITY)?;
                } else if lower_at(a, 1) == b'r' {
                    error = parse_f64(v).ok_or(e::INSERT_BAD_ERROR_RATE)?;
                } else {
                    expansion = parse_i64(v).ok_or(e::INSERT_BAD_EXPANSION)?;
                }
                i += 2;
            }
            b'n' => {
                if lower_at(a, 2) == b'c' {
                    autocreate = false;
                } else {
                    nonscaling = true;
                }
                i += 1;
            }
            _ => return Err(e::UNKNOWN_ARGUMENT.into()),
        }
    }
    let items_from = match items {
        Some(at) if at < argc => at,
        _ => return Err(CmdError::WrongArity),
    };
    if error <= 0.0 || error >= 1.0 || capacity < 1 || expansion < 1 {
        return Err(RB2_BAD_ARGUMENT.into());
    }
    let create = if autocreate {
        Some(bloom_params(error, capacity, expansion, nonscaling)?)
    } else {
        None
    };
    Ok(InsertArgs {
        create,
        items_from,
        at_ms: None,
        shapes: None,
    })
}

fn cuckoo_params(
    capacity: u64,
    bucket_size: u8,
    max_iterations: u16,
    expansion: u32,
) -> CuckooParams {
    CuckooParams {
        capacity,
        bucket_size,
        max_iterations,
        expansion,
        fp_bits: DEFAULT_FP_BITS,
        error_rate: None,
        redisbloom: true,
    }
}

/// The parameters RedisBloom 2.x's CF.ADD/CF.ADDNX create a missing key with.
pub fn cf_add_params() -> CuckooParams {
    cuckoo_params(
        RB2_CF_CAPACITY,
        RB2_CF_BUCKET_SIZE,
        RB2_CF_MAX_ITERATIONS,
        RB2_CF_EXPANSION,
    )
}

/// A RESERVE option RedisBloom 2.x finds anywhere in argv; `None` if absent.
fn cf_option<'a>(
    args: &impl ArgList<'a>,
    kw: &str,
    lo: i64,
    hi: i64,
    bad: &'static str,
    range: &'static str,
) -> Result<Option<i64>, CmdError> {
    let Some(at) = arg_index(args, kw) else {
        return Ok(None);
    };
    // RedisBloom reads `argv[at + 1]` without checking that it exists (past
    // argv when the keyword is last): such a command is refused here.
    let v = args.arg(at + 1).ok_or(CmdError::WrongArity)?;
    let x = parse_i64(v).ok_or(bad)?;
    if (lo..=hi).contains(&x) {
        Ok(Some(x))
    } else {
        Err(range.into())
    }
}

/// RedisBloom 2.x's `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m]
/// [EXPANSION x]`: keywords anywhere in argv, first occurrence wins, unknown
/// tokens ignored, no upper bound on the capacity.
pub fn cf_reserve<'a>(args: &impl ArgList<'a>) -> Result<CuckooParams, CmdError> {
    let argc = args.count();
    if argc < 3 || argc % 2 == 0 {
        return Err(CmdError::WrongArity);
    }
    let capacity = args.arg(2).and_then(parse_i64).ok_or(e::CF_BAD_CAPACITY)?;
    let mi = cf_option(
        args,
        "MAXITERATIONS",
        1,
        65535,
        e::CF_PARSE_MAXITERATIONS,
        e::CF_MAXITERATIONS_RANGE,
    )?
    .unwrap_or(i64::from(RB2_CF_MAX_ITERATIONS));
    let bs = cf_option(
        args,
        "BUCKETSIZE",
        1,
        255,
        e::CF_PARSE_BUCKETSIZE,
        e::CF_BUCKETSIZE_RANGE,
    )?
    .unwrap_or(i64::from(RB2_CF_BUCKET_SIZE));
    let ex = cf_option(
        args,
        "EXPANSION",
        0,
        32768,
        e::CF_PARSE_EXPANSION,
        e::CF_EXPANSION_RANGE,
    )?
    .unwrap_or(i64::from(RB2_CF_EXPANSION));
    if bs * 2 > capacity {
        return Err(RB2_CF_CAPACITY_MIN.into());
    }
    Ok(cuckoo_params(
        capacity as u64,
        bs as u8,
        mi as u16,
        ex as u32,
    ))
}

/// RedisBloom 2.x's `CF.INSERT[NX] key [CAPACITY c] [NOCREATE] ITEMS item ...`:
/// `c…` CAPACITY (at least 4), `i…` ITEMS, `n…` NOCREATE.
pub fn cf_insert<'a>(args: &impl ArgList<'a>) -> Result<InsertArgs<CuckooParams>, CmdError> {
    let argc = args.count();
    if argc < 4 {
        return Err(CmdError::WrongArity);
    }
    let (mut capacity, mut autocreate, mut items) = (RB2_CF_CAPACITY as i64, true, None);
    let mut i = 2;
    while i < argc && items.is_none() {
        let a = args.arg(i).ok_or(CmdError::WrongArity)?;
        match lower_at(a, 0) {
            b'c' => {
                let v = args.arg(i + 1).ok_or(CmdError::WrongArity)?;
                capacity = parse_i64(v).ok_or(e::CF_BAD_CAPACITY)?;
                if 2 * i64::from(RB2_CF_BUCKET_SIZE) > capacity {
                    return Err(RB2_CF_CAPACITY_MIN.into());
                }
                i += 2;
            }
            b'i' => {
                i += 1;
                items = Some(i);
            }
            b'n' => {
                autocreate = false;
                i += 1;
            }
            _ => return Err(e::UNKNOWN_ARGUMENT.into()),
        }
    }
    let items_from = match items {
        Some(at) if at < argc => at,
        _ => return Err(CmdError::WrongArity),
    };
    let create = autocreate.then(|| {
        cuckoo_params(
            capacity as u64,
            RB2_CF_BUCKET_SIZE,
            RB2_CF_MAX_ITERATIONS,
            RB2_CF_EXPANSION,
        )
    });
    Ok(InsertArgs {
        create,
        items_from,
        at_ms: None,
        shapes: None,
    })
}

/// Whether a RESERVE names ferrobloom's `LAYOUT` option (in an option
/// position: from argv\[4\] for BF, argv\[3\] for CF), which only ferrobloom
/// writes (`super::cf_options::marks_ferrobloom`).
pub fn names_layout<'a>(args: &impl ArgList<'a>, from: usize) -> bool {
    (from..args.count()).any(|i| args.arg(i).is_some_and(super::cf_options::marks_ferrobloom))
}

/// Whether an argument `is_option` accepts stands before the items of
/// `<cmd> key [options] ITEMS ...`: BF's and CF's test for the options only
/// ferrobloom writes (`super::options::is_own`, CF's `LAYOUT`). A replicated
/// RESERVE/INSERT naming one came from a ferrobloom primary and is read with
/// ferrobloom's parser first: read with RedisBloom's, their values could pass
/// for its first-letter keywords (a `SEED` starting with `i` would be taken as
/// `ITEMS`).
pub fn names_option<'a>(args: &impl ArgList<'a>, is_option: impl Fn(&[u8]) -> bool) -> bool {
    (2..args.count())
        .map_while(|i| args.arg(i).filter(|a| !is_keyword(a, "ITEMS")))
        .any(is_option)
}

/// Runs `first`, and `second` when `first` refuses; the error is `first`'s.
pub fn either<T>(
    first: impl FnOnce() -> Result<T, CmdError>,
    second: impl FnOnce() -> Result<T, CmdError>,
) -> Result<T, CmdError> {
    first().or_else(|err| second().map_err(|_| err))
}

#[cfg(test)]
mod tests;
