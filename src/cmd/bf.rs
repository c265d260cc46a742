//! BF.* argument parsing (spec 3), with RedisBloom's syntax, defaults and error
//! texts, and its parsing quirks fixed: keywords match whole arguments and only
//! in option positions (Q1, Q3), nothing is read past the arguments (Q2),
//! NOCREATE with CAPACITY/ERROR is refused as documented (Q5), and an explicit
//! EXPANSION wins over a configured default of 0 (Q18).

use std::ffi::CStr;

use super::errors::{self as e, CmdError};
use super::lenient::{self, Origin};
use super::parse::{is_keyword, parse_f64, parse_i64, scan_until_items, ArgList, InsertArgs};
use ferrobloom_core::bloom::{BloomLayout, ChainOptions, MAX_CAPACITY, MAX_EXPANSION};
use ferrobloom_core::window::MAX_WINDOW_MS;

/// RedisBloom stores error rates above this as this (with a log line).
pub const MAX_ERROR_RATE: f64 = 0.25;

/// Defaults for what a command does not say (from the module configuration).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BloomDefaults {
    pub error: f64,
    pub capacity: u64,
    pub expansion: u32,
    pub layout: BloomLayout,
}

/// Everything needed to create a filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CreateParams {
    pub error: f64,
    pub capacity: u64,
    /// 0 = non-scaling.
    pub expansion: u32,
    /// ferrobloom's `LAYOUT classic|blocked` option (default: `bf.bf-layout`).
    pub layout: BloomLayout,
    /// The growth a non-scaling filter with RedisBloom's layout records (its
    /// header's `growth`): 2, or the EXPANSION RedisBloom 2.x's BF.INSERT was
    /// given beside NONSCALING.
    pub nonscaling_growth: u32,
    /// valkey-bloom's `TIGHTENING ratio` and `SEED 32-bytes` (default: RedisBloom's
    /// 0.5, no seed).
    pub opts: ChainOptions,
    /// valkey-bloom's `VALIDATESCALETO n`: refuse the creation when the filter
    /// could never hold `n` items (checked by the handler against the limits).
    pub scale_to: Option<u64>,
    /// `WINDOW seconds`, in milliseconds: a windowed filter (`core::window`).
    pub window_ms: Option<u64>,
}

/// `WINDOW seconds`: a decimal number of seconds > 0, rounded to the
/// millisecond (at least 1 ms), at most [`MAX_WINDOW_MS`].
pub fn parse_window(v: &[u8]) -> Result<u64, CmdError> {
    let s = parse_f64(v).ok_or(e::WINDOW_BAD)?;
    let ms = (s * 1000.0).round();
    if !(s > 0.0 && ms >= 1.0 && ms <= MAX_WINDOW_MS as f64) {
        return Err(e::WINDOW_BAD.into());
    }
    Ok(ms as u64)
}

/// Records a WINDOW option (refusing a second one).
fn set_window(slot: &mut Option<u64>, v: &[u8]) -> Result<(), CmdError> {
    if slot.is_some() {
        return Err(e::WINDOW_TWICE.into());
    }
    *slot = Some(parse_window(v)?);
    Ok(())
}

/// Formats a window for a replicated command: seconds with 3 decimals.
pub fn format_window(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// The valkey-bloom options shared by BF.RESERVE and BF.INSERT.
#[derive(Default)]
struct ValkeyOptions {
    tightening: Option<f64>,
    seed: Option<[u8; 32]>,
    scale_to: Option<u64>,
}

impl ValkeyOptions {
    /// Parses the value of `kw` if it is one of the options; `Ok(false)` if not.
    fn take(&mut self, kw: &str, v: &[u8]) -> Result<bool, CmdError> {
        match kw {
            "TIGHTENING" => {
                let r = parse_f64(v).ok_or(e::BAD_TIGHTENING)?;
                if !(r > 0.0 && r < 1.0) {
                    return Err(e::TIGHTENING_RANGE.into());
                }
                self.tightening = Some(r);
            }
            "SEED" => {
                let seed: [u8; 32] = v.try_into().map_err(|_| e::INVALID_SEED)?;
                self.seed = Some(seed);
            }
            "VALIDATESCALETO" => {
                self.scale_to = Some(match parse_i64(v) {
                    Some(0) => return Err(e::SCALE_TO_ZERO.into()),
                    Some(n) if n > 0 => n as u64,
                    _ => return Err(e::SCALE_TO_BAD.into()),
                });
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether any of the options was given.
    fn any(&self) -> bool {
        self.tightening.is_some() || self.seed.is_some() || self.scale_to.is_some()
    }

    /// The final checks, once the expansion and layout are known.
    fn finish(&self, expansion: u32, layout: BloomLayout) -> Result<ChainOptions, CmdError> {
        if self.scale_to.is_some() && expansion == 0 {
            return Err(e::NONSCALING_SCALE_TO.into());
        }
        let opts = ChainOptions {
            tightening: self
                .tightening
                .unwrap_or(ChainOptions::default().tightening),
            seed: self.seed,
        };
        if layout == BloomLayout::RedisBloom && !opts.is_default() {
            return Err(e::REDISBLOOM_LAYOUT_OPTIONS.into());
        }
        Ok(opts)
    }
}

/// The valued keywords of valkey-bloom's options.
const VALKEY_OPTIONS: [&str; 3] = ["TIGHTENING", "SEED", "VALIDATESCALETO"];

fn parse_layout(v: &[u8]) -> Result<BloomLayout, CmdError> {
    BloomLayout::from_name(v).ok_or_else(|| e::BAD_LAYOUT.into())
}

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

/// `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
/// [LAYOUT layout] [TIGHTENING ratio] [SEED 32-bytes] [VALIDATESCALETO n]`
pub fn parse_reserve<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
) -> Result<CreateParams, CmdError> {
    reserve_strict(args, d, MAX_ERROR_RATE)
}

/// BF.RESERVE as its writer meant it (see [`lenient`]): strict for clients;
/// from the primary or the AOF, ferrobloom's form (it names `LAYOUT`) without
/// the error-rate cap, or RedisBloom 2.x's.
pub fn parse_reserve_from<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    origin: Origin,
) -> Result<CreateParams, CmdError> {
    let strict = || reserve_strict(args, d, 1.0);
    match origin {
        Origin::Client => parse_reserve(args, d),
        Origin::Trusted if lenient::names_option(args, &lenient::BF_OWN_OPTIONS) => {
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
    let strict = || insert_strict(args, d, 1.0);
    match origin {
        Origin::Client => parse_insert(args, d),
        // ferrobloom's own options (e.g. `AT`: a windowed write replicated with the
        // primary's time; an INSERT into an existing key replicated verbatim with
        // `SEED`): its own parse first, as for a RESERVE.
        Origin::Trusted if lenient::names_option(args, &lenient::BF_OWN_OPTIONS) => {
            lenient::either(strict, || lenient::bf_insert(args, d))
        }
        Origin::Trusted => lenient::either(|| lenient::bf_insert(args, d), strict),
    }
}

/// The strict BF.RESERVE with error rates above `max_error` stored as `max_error`.
fn reserve_strict<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    max_error: f64,
) -> Result<CreateParams, CmdError> {
    let n = args.count();
    if !(4..=17).contains(&n) {
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
    let mut nonscaling = false;
    let mut expansion: Option<i64> = None;
    let mut layout = None;
    let mut valkey = ValkeyOptions::default();
    let mut window_ms = None;
    let mut i = 4;
    while let Some(a) = args.arg(i) {
        if let Some(kw) = VALKEY_OPTIONS.iter().find(|k| is_keyword(a, k)) {
            valkey.take(kw, args.arg(i + 1).ok_or(CmdError::WrongArity)?)?;
            i += 2;
        } else if is_keyword(a, "NONSCALING") {
            nonscaling = true;
            i += 1;
        } else if is_keyword(a, "EXPANSION") {
            let v = args.arg(i + 1).ok_or(e::NO_EXPANSION)?;
            expansion = Some(parse_i64(v).ok_or(e::BAD_EXPANSION)?);
            i += 2;
        } else if is_keyword(a, "LAYOUT") {
            layout = Some(parse_layout(args.arg(i + 1).ok_or(e::BAD_LAYOUT)?)?);
            i += 2;
        } else if is_keyword(a, "WINDOW") {
            set_window(&mut window_ms, args.arg(i + 1).ok_or(e::WINDOW_BAD)?)?;
            i += 2;
        } else {
            return Err(e::UNKNOWN_ARGUMENT.into());
        }
    }
    let explicit = match expansion {
        Some(x) if nonscaling && x != 0 => return Err(e::NONSCALING_EXPAND.into()),
        Some(x) if x < 0 => return Err(e::EXPANSION_RANGE.into()),
        Some(x) if x > MAX_EXPANSION as i64 => return Err(e::EXPANSION_TOO_LARGE.into()),
        Some(x) => Some(x as u32),
        None => None,
    };
    let expansion = expansion_for(nonscaling, explicit, d);
    let layout = new_layout(layout, window_ms.is_some(), d)?;
    if window_ms.is_some() && valkey.any() {
        return Err(e::WINDOW_VALKEY.into());
    }
    Ok(CreateParams {
        error: error.min(max_error),
        capacity: capacity as u64,
        expansion,
        layout,
        nonscaling_growth: 2,
        opts: valkey.finish(expansion, layout)?,
        scale_to: valkey.scale_to,
        window_ms,
    })
}

/// `BF.INSERT key [CAPACITY cap] [ERROR err] [EXPANSION exp] [NOCREATE]
/// [NONSCALING] [LAYOUT layout] [TIGHTENING ratio] [SEED 32-bytes]
/// [VALIDATESCALETO n] ITEMS item [item ...]`
///
/// valkey-bloom's TIGHTENING, SEED and VALIDATESCALETO only matter when the
/// command creates the filter (as CAPACITY and ERROR); with NOCREATE they are
/// checked and ignored.
pub fn parse_insert<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
) -> Result<InsertArgs<CreateParams>, CmdError> {
    insert_strict(args, d, MAX_ERROR_RATE)
}

/// The strict BF.INSERT with error rates above `max_error` stored as `max_error`.
fn insert_strict<'a>(
    args: &impl ArgList<'a>,
    d: &BloomDefaults,
    max_error: f64,
) -> Result<InsertArgs<CreateParams>, CmdError> {
    let (mut capacity, mut error, mut expansion) = (None, None, None);
    let mut layout = None;
    let (mut nocreate, mut nonscaling) = (false, false);
    let mut valkey = ValkeyOptions::default();
    let (mut window_ms, mut at_ms) = (None, None);
    let items_from = scan_until_items(
        args,
        &["NOCREATE", "NONSCALING"],
        &[
            "CAPACITY",
            "ERROR",
            "EXPANSION",
            "LAYOUT",
            "TIGHTENING",
            "SEED",
            "VALIDATESCALETO",
            "WINDOW",
            "AT",
        ],
        |kw, v| {
            if valkey.take(kw, v)? {
                return Ok(());
            }
            match kw {
                "CAPACITY" => {
                    let c = parse_i64(v)
                        .ok_or(e::INSERT_BAD_CAPACITY)
                        .and_then(|c| in_range(c, 1, MAX_CAPACITY as i64))?;
                    capacity = Some(c as u64);
                }
                "ERROR" => {
                    let r = parse_f64(v).ok_or(e::INSERT_BAD_ERROR_RATE)?;
                    if !(r > 0.0 && r < 1.0) {
                        return Err(e::INSERT_BAD_ARGUMENT.into());
                    }
                    error = Some(r.min(max_error));
                }
                "EXPANSION" => {
                    let x = parse_i64(v)
                        .ok_or(e::INSERT_BAD_EXPANSION)
                        .and_then(|x| in_range(x, 0, MAX_EXPANSION as i64))?;
                    expansion = Some(x as u32);
                }
                "LAYOUT" => layout = Some(parse_layout(v)?),
                "WINDOW" => set_window(&mut window_ms, v)?,
                "AT" => {
                    let t = parse_i64(v).filter(|t| *t >= 0).ok_or(e::WINDOW_AT)?;
                    at_ms = Some(t as u64);
                }
                "NOCREATE" => nocreate = true,
                _ => nonscaling = true,
            }
            Ok(())
        },
    )?;
    if nocreate && (capacity.is_some() || error.is_some()) {
        return Err(e::NOCREATE_WITH_OPTIONS.into());
    }
    let expansion = expansion_for(nonscaling, expansion, d);
    if nocreate && window_ms.is_some() {
        return Err(e::WINDOW_NOCREATE.into());
    }
    let layout = new_layout(layout, window_ms.is_some(), d)?;
    let opts = valkey.finish(expansion, layout)?;
    if window_ms.is_some() && valkey.any() {
        return Err(e::WINDOW_VALKEY.into());
    }
    let create = (!nocreate).then(|| CreateParams {
        error: error.unwrap_or(d.error),
        capacity: capacity.unwrap_or(d.capacity),
        expansion,
        layout,
        nonscaling_growth: 2,
        opts,
        scale_to: valkey.scale_to,
        window_ms,
    });
    Ok(InsertArgs {
        create,
        items_from,
        at_ms,
    })
}

/// A BF.INSERT value inside `lo..=hi`, else RedisBloom 2.8's `Bad argument received`.
fn in_range(v: i64, lo: i64, hi: i64) -> Result<i64, &'static str> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(e::INSERT_BAD_ARGUMENT)
    }
}

/// The single-field form of BF.INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
    /// valkey-bloom's single fields (never in the default reply).
    Error,
    Tightening,
    MaxScaledCapacity,
    /// `BF.INFO key WINDOW`: a windowed filter's window in seconds (never in
    /// the default reply, whose five fields stay RedisBloom's).
    Window,
}

impl InfoField {
    pub const ALL: [InfoField; 5] = [
        InfoField::Capacity,
        InfoField::Size,
        InfoField::Filters,
        InfoField::Items,
        InfoField::Expansion,
    ];

    pub fn parse(a: &[u8]) -> Result<Self, CmdError> {
        for (f, name) in [
            (InfoField::Capacity, "CAPACITY"),
            (InfoField::Size, "SIZE"),
            (InfoField::Filters, "FILTERS"),
            (InfoField::Items, "ITEMS"),
            (InfoField::Expansion, "EXPANSION"),
            (InfoField::Error, "ERROR"),
            (InfoField::Tightening, "TIGHTENING"),
            (InfoField::MaxScaledCapacity, "MAXSCALEDCAPACITY"),
            (InfoField::Window, "WINDOW"),
        ] {
            if is_keyword(a, name) {
                return Ok(f);
            }
        }
        Err(e::INVALID_INFO_VALUE.into())
    }

    /// The key text in the reply.
    pub fn label(self) -> &'static CStr {
        match self {
            InfoField::Capacity => c"Capacity",
            InfoField::Size => c"Size",
            InfoField::Filters => c"Number of filters",
            InfoField::Items => c"Number of items inserted",
            InfoField::Expansion => c"Expansion rate",
            InfoField::Error => c"Error rate",
            InfoField::Tightening => c"Tightening ratio",
            InfoField::MaxScaledCapacity => c"Max scaled capacity",
            InfoField::Window => c"Window",
        }
    }
}

/// Formats like C's `printf("%g")` (6 significant digits, trailing zeros
/// dropped, exponent form below 1e-4 and from 1e6), as BF.DEBUG prints ratios.
pub fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        trim(&format!("{:.*}", (5 - exp) as usize, v))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: BloomDefaults = BloomDefaults {
        error: 0.01,
        capacity: 100,
        expansion: 2,
        layout: BloomLayout::Blocked,
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
                scale_to: None,
                window_ms: None,
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
        // Quirk Q1 fixed: a key or value that spells a keyword is just a key.
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
                scale_to: None,
                window_ms: None,
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
                scale_to: None,
                window_ms: None,
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
        // Quirk Q3 fixed: prefixes are not keywords.
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
        // Quirk Q5 fixed.
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
        for kw in VALKEY_OPTIONS {
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
        assert_eq!(InfoField::parse(b"capacity"), Ok(InfoField::Capacity));
        assert_eq!(InfoField::parse(b"ITEMS"), Ok(InfoField::Items));
        assert_eq!(
            InfoField::parse(b"CAP").unwrap_err().text(),
            "Invalid information value"
        );
        assert_eq!(InfoField::Filters.label(), c"Number of filters");
    }

    #[test]
    fn format_g_matches_printf() {
        for (v, s) in [
            (0.005, "0.005"),
            (0.0025, "0.0025"),
            (0.000625, "0.000625"),
            (6.25e-05, "6.25e-05"),
            (0.01, "0.01"),
            (0.5, "0.5"),
            (1.0 / 3.0, "0.333333"),
            (1e-10, "1e-10"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.00015625, "0.00015625"),
        ] {
            assert_eq!(format_g(v), s, "{v}");
        }
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
}
