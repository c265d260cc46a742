//! The options of BF.RESERVE and BF.INSERT, in one table ([`BF_OPTIONS`]).
//!
//! Each entry says which of the two commands take the option, whether it takes
//! a value (and how COMMAND DOCS describes it), whose option it is (RedisBloom's,
//! valkey-bloom's or ferrobloom's own), how its value is checked and recorded
//! ([`BfOption::set`]) and how a replicated BF.RESERVE spells it
//! ([`BfOption::write`]). The strict parsers (`super::bf`), the trusted
//! parse's test for ferrobloom's own options, the largest BF.RESERVE
//! ([`RESERVE_MAX_ARGS`]), the replicated BF.RESERVE ([`reserve_args`]) and the
//! COMMAND DOCS arguments (`crate::redis::commands`) all read it, so a new
//! option is one entry here (and its field in [`Given`] and
//! [`CreateParams`]).
//!
//! Errors keep RedisBloom's texts and order: a value is checked when its
//! option is met (the first bad one answers), the combinations once all
//! options are read (`super::bf`).

use std::ffi::CStr;

use super::errors::{self as e, CmdError};
use super::format::{format_arg, format_window};
use super::params::{BloomDefaults, CreateParams};
use super::parse::{parse_f64, parse_i64};
use ferrobloom_core::bloom::{
    decode_shapes, encode_shapes, BloomLayout, ChainOptions, LinkShape, MAX_CAPACITY,
    MAX_EXPANSION, MAX_PLANNED_LINKS,
};
use ferrobloom_core::window::MAX_WINDOW_MS;

/// The two commands that create Bloom filters with options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BfCommand {
    /// `BF.RESERVE key error_rate capacity [options]`.
    Reserve,
    /// `BF.INSERT key [options] ITEMS item [item ...]`.
    Insert,
}

/// Whose option it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// RedisBloom's (<https://redis.io/docs/latest/commands/bf.reserve/>,
    /// <https://redis.io/docs/latest/commands/bf.insert/>).
    RedisBloom,
    /// valkey-bloom's (<https://valkey.io/commands/bf.reserve/>).
    ValkeyBloom,
    /// ferrobloom's own.
    Ferrobloom,
}

/// The type COMMAND DOCS gives an option's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    Integer,
    Double,
    String,
}

/// An option's value as COMMAND DOCS describes it.
#[derive(Clone, Copy, Debug)]
pub struct ValueDoc {
    pub name: &'static CStr,
    pub kind: ValueType,
}

/// The options of one command as given, each value checked on its own (the
/// combinations are checked once all are read).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Given {
    /// BF.INSERT's `CAPACITY` (BF.RESERVE's is positional).
    pub capacity: Option<u64>,
    /// BF.INSERT's `ERROR` (BF.RESERVE's is positional), before any cap.
    pub error: Option<f64>,
    /// `EXPANSION`: BF.RESERVE checks its range after the scan, BF.INSERT at once.
    pub expansion: Option<i64>,
    pub nocreate: bool,
    pub nonscaling: bool,
    pub layout: Option<BloomLayout>,
    pub tightening: Option<f64>,
    pub seed: Option<[u8; 32]>,
    pub scale_to: Option<u64>,
    pub window_ms: Option<u64>,
    /// BF.INSERT's `AT ms`: the primary's time of a windowed write.
    pub at_ms: Option<u64>,
    /// BF.INSERT's `SHAPES blob`: the links the primary's write added
    /// (`ferrobloom_core::bloom::encode_shapes`), checked when decoded.
    pub shapes: Option<Vec<u8>>,
    /// BF.RESERVE's `SHAPES blob`: the first link the primary created.
    pub first_link: Option<LinkShape>,
    /// From the primary or the AOF: a second `SEED` replaces the first, as
    /// releases before the refusal applied it (a client gets `SEED given twice`).
    pub replayed: bool,
}

impl Given {
    /// The creation these options describe, with what the command says
    /// besides (its error rate and capacity, positional or options) and what
    /// follows from the combinations (`super::bf`): every option's field of
    /// [`CreateParams`] is set here, the rest from the defaults `d`.
    pub fn params(
        &self,
        error: f64,
        capacity: u64,
        expansion: u32,
        layout: BloomLayout,
        opts: ChainOptions,
        d: &BloomDefaults,
    ) -> CreateParams {
        CreateParams {
            error,
            capacity,
            expansion,
            layout,
            opts,
            scale_to: self.scale_to,
            window_ms: self.window_ms,
            first_link: self.first_link,
            ..CreateParams::from_defaults(d)
        }
    }

    /// Whether any of valkey-bloom's options was given.
    pub fn any_valkey(&self) -> bool {
        self.tightening.is_some() || self.seed.is_some() || self.scale_to.is_some()
    }

    /// valkey-bloom's options, checked once the expansion and layout are known;
    /// what was not given comes from `defaults` (the configured ones), but for
    /// RedisBloom's layout and windowed filters, which keep RedisBloom's.
    pub fn chain_options(
        &self,
        expansion: u32,
        layout: BloomLayout,
        windowed: bool,
        defaults: ChainOptions,
    ) -> Result<ChainOptions, CmdError> {
        if self.scale_to.is_some() && expansion == 0 {
            return Err(e::NONSCALING_SCALE_TO.into());
        }
        let given = ChainOptions {
            tightening: self
                .tightening
                .unwrap_or(ChainOptions::REDISBLOOM.tightening),
            seed: self.seed,
        };
        if layout == BloomLayout::RedisBloom && !given.is_default() {
            return Err(e::REDISBLOOM_LAYOUT_OPTIONS.into());
        }
        if layout == BloomLayout::RedisBloom || windowed {
            return Ok(given);
        }
        Ok(ChainOptions {
            tightening: self.tightening.unwrap_or(defaults.tightening),
            seed: self.seed.or(defaults.seed),
        })
    }
}

/// One option of BF.RESERVE and/or BF.INSERT.
pub struct BfOption {
    /// The keyword (matched as a whole argument, case-insensitively) and its
    /// COMMAND DOCS token.
    pub token: &'static CStr,
    /// The COMMAND DOCS argument name: the keyword in lower case.
    pub doc_name: &'static CStr,
    /// Whether BF.RESERVE takes it.
    pub reserve: bool,
    /// Whether BF.INSERT takes it.
    pub insert: bool,
    /// `None`: a flag; else the value the keyword is followed by.
    pub value: Option<ValueDoc>,
    pub source: Source,
    /// Listed by COMMAND DOCS (`AT` is not: only a primary writes it, for its
    /// replicas and its AOF).
    pub documented: bool,
    /// BF.RESERVE's reply to the keyword without its value (RedisBloom's
    /// `ERR no expansion`); `None`: wrong arity. BF.INSERT always answers
    /// wrong arity.
    pub reserve_missing: Option<&'static str>,
    /// The keyword argument of a binding's constructor (`BF.RESERVE`'s
    /// options; `None` where the constructor has none): the Python package's
    /// keywords (and its command line's `--options`) are checked against it.
    pub binding: Option<&'static str>,
    /// Checks the value (empty for a flag) and records it.
    pub set: fn(&mut Given, BfCommand, &[u8]) -> Result<(), CmdError>,
    /// The option in a replicated BF.RESERVE: `None` to leave it out, else its
    /// value (empty for a flag). Only read for BF.RESERVE's options.
    pub write: fn(&CreateParams) -> Option<Vec<u8>>,
}

impl BfOption {
    /// The keyword's bytes.
    pub fn keyword(&self) -> &'static [u8] {
        self.token.to_bytes()
    }

    /// Whether `cmd` takes this option.
    pub fn takes(&self, cmd: BfCommand) -> bool {
        match cmd {
            BfCommand::Reserve => self.reserve,
            BfCommand::Insert => self.insert,
        }
    }

    /// Whether the option is followed by a value.
    pub fn valued(&self) -> bool {
        self.value.is_some()
    }

    /// Whether `arg` is this option's keyword.
    pub fn is(&self, arg: &[u8]) -> bool {
        arg.eq_ignore_ascii_case(self.keyword())
    }
}

const fn value(name: &'static CStr, kind: ValueType) -> Option<ValueDoc> {
    Some(ValueDoc { name, kind })
}

/// An option a replicated BF.RESERVE never spells out.
fn never(_: &CreateParams) -> Option<Vec<u8>> {
    None
}

const OPTIONS: [BfOption; 12] = [
    BfOption {
        token: c"CAPACITY",
        doc_name: c"capacity",
        reserve: false,
        insert: true,
        value: value(c"capacity", ValueType::Integer),
        source: Source::RedisBloom,
        documented: true,
        reserve_missing: None,
        binding: None,
        set: |g, _, v| {
            let c = parse_i64(v)
                .ok_or(e::INSERT_BAD_CAPACITY)
                .and_then(|c| in_range(c, 1, MAX_CAPACITY as i64))?;
            g.capacity = Some(c as u64);
            Ok(())
        },
        write: never,
    },
    BfOption {
        token: c"ERROR",
        doc_name: c"error",
        reserve: false,
        insert: true,
        value: value(c"error", ValueType::Double),
        source: Source::RedisBloom,
        documented: true,
        reserve_missing: None,
        binding: None,
        set: |g, _, v| {
            g.error = Some(open_unit(
                v,
                e::INSERT_BAD_ERROR_RATE,
                e::INSERT_BAD_ARGUMENT,
            )?);
            Ok(())
        },
        write: never,
    },
    BfOption {
        token: c"EXPANSION",
        doc_name: c"expansion",
        reserve: true,
        insert: true,
        value: value(c"expansion", ValueType::Integer),
        source: Source::RedisBloom,
        documented: true,
        reserve_missing: Some(e::NO_EXPANSION),
        binding: Some("expansion"),
        set: |g, cmd, v| {
            g.expansion = Some(match cmd {
                BfCommand::Reserve => parse_i64(v).ok_or(e::BAD_EXPANSION)?,
                BfCommand::Insert => parse_i64(v)
                    .ok_or(e::INSERT_BAD_EXPANSION)
                    .and_then(|x| in_range(x, 0, MAX_EXPANSION as i64))?,
            });
            Ok(())
        },
        write: |p| (p.expansion != 0).then(|| p.expansion.to_string().into_bytes()),
    },
    BfOption {
        token: c"NOCREATE",
        doc_name: c"nocreate",
        reserve: false,
        insert: true,
        value: None,
        source: Source::RedisBloom,
        documented: true,
        reserve_missing: None,
        binding: None,
        set: |g, _, _| {
            g.nocreate = true;
            Ok(())
        },
        write: never,
    },
    BfOption {
        token: c"NONSCALING",
        doc_name: c"nonscaling",
        reserve: true,
        insert: true,
        value: None,
        source: Source::RedisBloom,
        documented: true,
        reserve_missing: None,
        binding: Some("nonscaling"),
        set: |g, _, _| {
            g.nonscaling = true;
            Ok(())
        },
        write: |p| (p.expansion == 0).then(Vec::new),
    },
    BfOption {
        token: c"LAYOUT",
        doc_name: c"layout",
        reserve: true,
        insert: true,
        value: value(c"layout", ValueType::String),
        source: Source::Ferrobloom,
        documented: true,
        reserve_missing: Some(e::BAD_LAYOUT),
        binding: Some("layout"),
        set: |g, _, v| {
            g.layout = Some(BloomLayout::from_name(v).ok_or(e::BAD_LAYOUT)?);
            Ok(())
        },
        // Always: the layout a replica's `bf.bf-layout` would pick may differ.
        write: |p| Some(p.layout.name().as_bytes().to_vec()),
    },
    BfOption {
        token: c"TIGHTENING",
        doc_name: c"tightening",
        reserve: true,
        insert: true,
        value: value(c"ratio", ValueType::Double),
        source: Source::ValkeyBloom,
        documented: true,
        reserve_missing: None,
        binding: Some("tightening"),
        set: |g, _, v| {
            g.tightening = Some(open_unit(v, e::BAD_TIGHTENING, e::TIGHTENING_RANGE)?);
            Ok(())
        },
        write: |p| {
            let r = p.opts.tightening;
            (r != ChainOptions::default().tightening).then(|| format_arg(r).into_bytes())
        },
    },
    BfOption {
        token: c"SEED",
        doc_name: c"seed",
        reserve: true,
        insert: true,
        value: value(c"seed", ValueType::String),
        source: Source::ValkeyBloom,
        documented: true,
        reserve_missing: None,
        binding: Some("seed"),
        set: |g, _, v| {
            // Twice is refused, as WINDOW twice: the seed fixes the filter's
            // hashing for good, so a second one is a mistake, not an override.
            if g.seed.is_some() && !g.replayed {
                return Err(e::SEED_TWICE.into());
            }
            g.seed = Some(v.try_into().map_err(|_| e::INVALID_SEED)?);
            Ok(())
        },
        write: |p| p.opts.seed.map(|s| s.to_vec()),
    },
    BfOption {
        token: c"VALIDATESCALETO",
        doc_name: c"validatescaleto",
        reserve: true,
        insert: true,
        value: value(c"validatescaleto", ValueType::Integer),
        source: Source::ValkeyBloom,
        documented: true,
        reserve_missing: None,
        binding: Some("validate_scale_to"),
        set: |g, _, v| {
            g.scale_to = Some(match parse_i64(v) {
                Some(0) => return Err(e::SCALE_TO_ZERO.into()),
                Some(n) if n > 0 => n as u64,
                _ => return Err(e::SCALE_TO_BAD.into()),
            });
            Ok(())
        },
        // Never: the primary checked it, against its own limits (as valkey-bloom).
        write: never,
    },
    BfOption {
        token: c"WINDOW",
        doc_name: c"window",
        reserve: true,
        insert: true,
        value: value(c"seconds", ValueType::Double),
        source: Source::Ferrobloom,
        documented: true,
        reserve_missing: Some(e::WINDOW_BAD),
        binding: Some("window"),
        set: |g, _, v| {
            if g.window_ms.is_some() {
                return Err(e::WINDOW_TWICE.into());
            }
            g.window_ms = Some(parse_window(v)?);
            Ok(())
        },
        write: |p| p.window_ms.map(|ms| format_window(ms).into_bytes()),
    },
    BfOption {
        token: c"AT",
        doc_name: c"at",
        reserve: false,
        insert: true,
        value: value(c"ms", ValueType::Integer),
        source: Source::Ferrobloom,
        documented: false,
        reserve_missing: None,
        binding: None,
        set: |g, _, v| {
            let t = parse_i64(v).filter(|t| *t >= 0).ok_or(e::WINDOW_AT)?;
            g.at_ms = Some(t as u64);
            Ok(())
        },
        write: never,
    },
    BfOption {
        token: c"SHAPES",
        doc_name: c"shapes",
        reserve: true,
        insert: true,
        value: value(c"blob", ValueType::String),
        source: Source::Ferrobloom,
        documented: false,
        reserve_missing: None,
        binding: None,
        set: |g, cmd, v| {
            let shapes = decode_shapes(v).map_err(|_| e::SHAPES_BAD)?;
            if g.shapes.is_some() || g.first_link.is_some() || shapes.len() > MAX_PLANNED_LINKS {
                return Err(e::SHAPES_BAD.into());
            }
            match (cmd, &shapes[..]) {
                (BfCommand::Reserve, [first]) => g.first_link = Some(*first),
                (BfCommand::Reserve, _) => return Err(e::SHAPES_BAD.into()),
                _ => g.shapes = Some(v.to_vec()),
            }
            Ok(())
        },
        write: |p| p.first_link.map(|s| encode_shapes(&[s])),
    },
];

/// A number strictly between 0 and 1 (an error rate, a tightening ratio):
/// `bad` when it is not a number, `range` when it is out of range.
fn open_unit(v: &[u8], bad: &'static str, range: &'static str) -> Result<f64, CmdError> {
    let r = parse_f64(v).ok_or(bad)?;
    if !(r > 0.0 && r < 1.0) {
        return Err(range.into());
    }
    Ok(r)
}

/// Every option of BF.RESERVE and BF.INSERT, in COMMAND DOCS order.
pub static BF_OPTIONS: &[BfOption] = &OPTIONS;

/// The most arguments BF.RESERVE takes: `BF.RESERVE key error_rate capacity`
/// and each of its options once (a repeated option counts against it).
pub const RESERVE_MAX_ARGS: usize = reserve_max_args();

/// The index of `SHAPES` in [`OPTIONS`].
const SHAPES_INDEX: usize = OPTIONS.len() - 1;

const fn reserve_max_args() -> usize {
    let mut n = 4;
    let mut i = 0;
    while i < OPTIONS.len() {
        // `SHAPES` (internal) is left out: a client's BF.RESERVE keeps its
        // arity; the parse allows for it when it is named.
        if OPTIONS[i].reserve && i != SHAPES_INDEX {
            n += if OPTIONS[i].value.is_some() { 2 } else { 1 };
        }
        i += 1;
    }
    n
}

/// The option of `cmd` that `arg` names, if any.
pub fn find(cmd: BfCommand, arg: &[u8]) -> Option<&'static BfOption> {
    BF_OPTIONS.iter().find(|o| o.takes(cmd) && o.is(arg))
}

/// Whether `arg` names an option only ferrobloom writes in BF commands (its
/// own and valkey-bloom's): a replicated BF.RESERVE/BF.INSERT naming one came
/// from a ferrobloom primary (see `super::lenient`).
pub fn is_own(arg: &[u8]) -> bool {
    BF_OPTIONS
        .iter()
        .any(|o| o.source != Source::RedisBloom && o.is(arg))
}

/// The arguments after the key of the BF.RESERVE that creates the filter `p`
/// describes wherever it is applied, whatever that server's defaults: the
/// inverse of the parse (`error capacity EXPANSION x|NONSCALING LAYOUT l
/// [TIGHTENING r] [SEED s] [WINDOW w]`). `VALIDATESCALETO` is left out (the
/// primary checked it), as is RedisBloom's non-scaling growth, which no
/// BF.RESERVE can spell.
pub fn reserve_args(p: &CreateParams) -> Vec<Vec<u8>> {
    let mut out = vec![
        format_arg(p.error).into_bytes(),
        p.capacity.to_string().into_bytes(),
    ];
    for o in BF_OPTIONS.iter().filter(|o| o.reserve) {
        if let Some(v) = (o.write)(p) {
            out.push(o.keyword().to_vec());
            if o.valued() {
                out.push(v);
            }
        }
    }
    out
}

/// `WINDOW seconds`: a decimal number of seconds, at least one millisecond
/// (`0.001`) as given (`0.0005` is refused, not rounded up), then rounded to
/// the nearest millisecond, halves up (`0.0015` is 2 ms, `0.0014` 1 ms), at
/// most [`MAX_WINDOW_MS`].
pub fn parse_window(v: &[u8]) -> Result<u64, CmdError> {
    let s = parse_f64(v).ok_or(e::WINDOW_BAD)?;
    let exact = s * 1000.0;
    let ms = exact.round();
    if !(s > 0.0 && exact >= 1.0 && ms <= MAX_WINDOW_MS as f64) {
        return Err(e::WINDOW_BAD.into());
    }
    Ok(ms as u64)
}

/// A BF.INSERT value inside `lo..=hi`, else RedisBloom 2.8's `Bad argument received`.
fn in_range(v: i64, lo: i64, hi: i64) -> Result<i64, &'static str> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(e::INSERT_BAD_ARGUMENT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        for o in BF_OPTIONS {
            let kw = o.keyword();
            assert!(!kw.is_empty() && kw.iter().all(u8::is_ascii_uppercase));
            assert_eq!(o.doc_name.to_bytes(), kw.to_ascii_lowercase().as_slice());
            assert!(o.reserve || o.insert, "{:?}", o.token);
            assert!(o.reserve || o.reserve_missing.is_none(), "{:?}", o.token);
            assert!(o.valued() || o.reserve_missing.is_none(), "{:?}", o.token);
            // One option per keyword, and none spells ITEMS (BF.INSERT's end).
            assert_eq!(BF_OPTIONS.iter().filter(|p| p.is(kw)).count(), 1);
            assert!(!o.is(b"ITEMS"));
        }
        // The longest BF.RESERVE: 4 + EXPANSION x, NONSCALING, LAYOUT l,
        // TIGHTENING r, SEED s, VALIDATESCALETO n, WINDOW s.
        assert_eq!(RESERVE_MAX_ARGS, 17);
        // What a trusted parse takes as ferrobloom's.
        let own: Vec<&[u8]> = BF_OPTIONS
            .iter()
            .filter(|o| is_own(o.keyword()))
            .map(BfOption::keyword)
            .collect();
        let want: [&[u8]; 7] = [
            b"LAYOUT",
            b"TIGHTENING",
            b"SEED",
            b"VALIDATESCALETO",
            b"WINDOW",
            b"AT",
            b"SHAPES",
        ];
        assert_eq!(own, want);
        assert!(is_own(b"layout") && !is_own(b"EXPANSION") && !is_own(b"LAYOUTS"));
        assert!(find(BfCommand::Reserve, b"capacity").is_none());
        assert!(find(BfCommand::Insert, b"capacity").is_some());
        assert!(find(BfCommand::Reserve, b"AT").is_none());
    }
}
