//! BF.* argument parsing, with RedisBloom's syntax, defaults and error texts
//! (<https://redis.io/docs/latest/commands/bf.reserve/>,
//! <https://redis.io/docs/latest/commands/bf.insert/>), the options read through
//! the one table of [`super::options`].
//!
//! RedisBloom 2.x's own parse (`BFReserve_RedisCommand` and
//! `BFInsert_RedisCommand` in
//! <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/rebloom.c>) is
//! looser than its documentation; for clients ferrobloom follows the
//! documentation instead: a keyword matches a whole argument (not its first
//! letter), and only in an option position (not the key or a value); nothing
//! is read past the last argument; NOCREATE with CAPACITY or ERROR is refused,
//! as documented; and an explicit EXPANSION wins over a configured default
//! expansion of 0. What a RedisBloom 2.x primary or AOF wrote is still read as
//! RedisBloom read it ([`lenient`], for [`Origin::Trusted`]).

use super::errors::{self as e, CmdError};
use super::lenient::{self, Origin};
use super::options::{self, BfCommand, Given, RESERVE_MAX_ARGS};
use super::parse::{parse_f64, parse_i64, scan_options, ArgList, InsertArgs};
use ferrobloom_core::bloom::{BloomLayout, MAX_CAPACITY, MAX_EXPANSION};

use super::params::{BloomDefaults, CreateParams, MAX_ERROR_RATE};

/// The layout of a new filter: the `LAYOUT` given, else `bf.bf-layout` for a
/// plain filter and the paired layout for a windowed one (its lookups ask up
/// to five generations; paired links answer most of them from one cache line
/// each, see `core::window`). RedisBloom's layout has no windowed filters.
fn new_layout(
    given: Option<BloomLayout>,
    windowed: bool,
    d: &BloomDefaults,
) -> Result<BloomLayout, CmdError> {
    match (given, windowed) {
        (Some(BloomLayout::RedisBloom), true) => Err(e::WINDOW_LAYOUT.into()),
        (Some(l), _) => Ok(l),
        (None, true) => Ok(BloomLayout::Paired),
        (None, false) => Ok(d.layout),
    }
}

fn expansion_for(nonscaling: bool, explicit: Option<u32>, d: &BloomDefaults) -> u32 {
    if nonscaling {
        0
    } else {
        explicit.unwrap_or(d.expansion)
    }
}

/// The largest error rate a creation from `origin` records: a client's is
/// capped at [`MAX_ERROR_RATE`] (as RedisBloom), a replayed one never (it was
/// capped where it was first given, if at all).
fn max_error(origin: Origin) -> f64 {
    match origin {
        Origin::Client => MAX_ERROR_RATE,
        Origin::Trusted => 1.0,
    }
}

/// `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
/// [LAYOUT layout] [TIGHTENING ratio] [SEED 32-bytes] [VALIDATESCALETO n]
/// [WINDOW seconds]`
pub fn parse_reserve<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
) -> Result<CreateParams, CmdError> {
    reserve_strict(args, d, Origin::Client)
}

/// BF.RESERVE as its writer meant it (see [`lenient`]): strict for clients;
/// from the primary or the AOF, ferrobloom's form (it names `LAYOUT`) without
/// the error-rate cap, or RedisBloom 2.x's.
pub fn parse_reserve_from<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    origin: Origin,
) -> Result<CreateParams, CmdError> {
    let strict = || reserve_strict(args, d, Origin::Trusted);
    match origin {
        Origin::Client => parse_reserve(args, d),
        Origin::Trusted if lenient::names_option(args, options::is_own) => {
            lenient::either(strict, || lenient::bf_reserve(args))
        }
        Origin::Trusted => lenient::either(|| lenient::bf_reserve(args), strict),
    }
}

/// BF.INSERT as its writer meant it (see [`lenient`]).
pub fn parse_insert_from<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    origin: Origin,
) -> Result<InsertArgs<CreateParams>, CmdError> {
    let strict = || insert_strict(args, d, Origin::Trusted);
    match origin {
        Origin::Client => parse_insert(args, d),
        // ferrobloom's own options (e.g. `AT`: a windowed write replicated with the
        // primary's time; an INSERT into an existing key replicated verbatim with
        // `SEED`): its own parse first, as for a RESERVE.
        Origin::Trusted if lenient::names_option(args, options::is_own) => {
            lenient::either(strict, || lenient::bf_insert(args, d))
        }
        Origin::Trusted => lenient::either(|| lenient::bf_insert(args, d), strict),
    }
}

/// The strict BF.RESERVE as `origin` wrote it: a client's error rates above
/// [`MAX_ERROR_RATE`] are stored as that; the primary's or the AOF's are not capped.
fn reserve_strict<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    origin: Origin,
) -> Result<CreateParams, CmdError> {
    let n = args.count();
    let shapes = (3..n).any(|i| {
        args.arg(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(b"SHAPES"))
    });
    let max = RESERVE_MAX_ARGS + if shapes { 2 } else { 0 };
    if !(4..=max).contains(&n) {
        return Err(CmdError::WrongArity);
    }
    let error = args.arg(2).and_then(parse_f64).ok_or(e::BAD_ERROR_RATE)?;
    if !(error > 0.0 && error < 1.0) {
        return Err(e::ERROR_RATE_RANGE.into());
    }
    let capacity = args.arg(3).and_then(parse_i64).ok_or(e::BAD_CAPACITY)?;
    if capacity < 1 {
        return Err(e::CAPACITY_RANGE.into());
    }
    if capacity > MAX_CAPACITY as i64 {
        return Err(e::CAPACITY_TOO_LARGE.into());
    }
    let max_error = max_error(origin);
    let mut g = Given {
        replayed: origin == Origin::Trusted,
        ..Given::default()
    };
    let mut i = 4;
    while let Some(a) = args.arg(i) {
        let o = options::find(BfCommand::Reserve, a).ok_or(e::UNKNOWN_ARGUMENT)?;
        let v: &[u8] = if o.valued() {
            let missing = || {
                o.reserve_missing
                    .map_or(CmdError::WrongArity, CmdError::from)
            };
            args.arg(i + 1).ok_or_else(missing)?
        } else {
            &[]
        };
        (o.set)(&mut g, BfCommand::Reserve, v)?;
        i += if o.valued() { 2 } else { 1 };
    }
    let explicit = match g.expansion {
        Some(x) if g.nonscaling && x != 0 => return Err(e::NONSCALING_EXPAND.into()),
        Some(x) if x < 0 => return Err(e::EXPANSION_RANGE.into()),
        Some(x) if x > MAX_EXPANSION as i64 => return Err(e::EXPANSION_TOO_LARGE.into()),
        Some(x) => Some(x as u32),
        None => None,
    };
    let expansion = expansion_for(g.nonscaling, explicit, d);
    let layout = new_layout(g.layout, g.window_ms.is_some(), d)?;
    if g.window_ms.is_some() && g.any_valkey() {
        return Err(e::WINDOW_VALKEY.into());
    }
    let opts = g.chain_options(expansion, layout, g.window_ms.is_some(), d.opts)?;
    Ok(g.params(
        error.min(max_error),
        capacity as u64,
        expansion,
        layout,
        opts,
        d,
    ))
}

/// `BF.INSERT key [CAPACITY cap] [ERROR err] [EXPANSION exp] [NOCREATE]
/// [NONSCALING] [LAYOUT layout] [TIGHTENING ratio] [SEED 32-bytes]
/// [VALIDATESCALETO n] [WINDOW seconds] ITEMS item [item ...]`
///
/// valkey-bloom's TIGHTENING, SEED and VALIDATESCALETO only matter when the
/// command creates the filter (as CAPACITY and ERROR); with NOCREATE they are
/// checked and ignored.
pub fn parse_insert<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
) -> Result<InsertArgs<CreateParams>, CmdError> {
    insert_strict(args, d, Origin::Client)
}

/// The strict BF.INSERT as `origin` wrote it: a client's error rates above
/// [`MAX_ERROR_RATE`] are stored as that; the primary's or the AOF's are not capped.
fn insert_strict<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    origin: Origin,
) -> Result<InsertArgs<CreateParams>, CmdError> {
    let max_error = max_error(origin);
    let mut g = Given {
        replayed: origin == Origin::Trusted,
        ..Given::default()
    };
    let items_from = scan_options(
        args,
        |a| options::find(BfCommand::Insert, a).map(|o| (o, o.valued())),
        |o, v| (o.set)(&mut g, BfCommand::Insert, v),
    )?;
    if g.nocreate && (g.capacity.is_some() || g.error.is_some()) {
        return Err(e::NOCREATE_WITH_OPTIONS.into());
    }
    // BF.INSERT's EXPANSION was checked to be within 0..=MAX_EXPANSION.
    let explicit = g.expansion.and_then(|x| u32::try_from(x).ok());
    let expansion = expansion_for(g.nonscaling, explicit, d);
    if g.nocreate && g.window_ms.is_some() {
        return Err(e::WINDOW_NOCREATE.into());
    }
    let layout = new_layout(g.layout, g.window_ms.is_some(), d)?;
    let opts = g.chain_options(expansion, layout, g.window_ms.is_some(), d.opts)?;
    if g.window_ms.is_some() && g.any_valkey() {
        return Err(e::WINDOW_VALKEY.into());
    }
    let create = (!g.nocreate).then(|| {
        let error = g.error.map_or(d.error, |r| r.min(max_error));
        g.params(
            error,
            g.capacity.unwrap_or(d.capacity),
            expansion,
            layout,
            opts,
            d,
        )
    });
    Ok(InsertArgs {
        create,
        items_from,
        at_ms: g.at_ms,
        shapes: g.shapes,
    })
}

#[cfg(test)]
#[path = "bf/tests/round_trip.rs"]
mod round_trip;
#[cfg(test)]
mod tests;
