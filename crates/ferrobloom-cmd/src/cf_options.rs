//! The options of CF.RESERVE and CF.INSERT[NX], in one table ([`CF_OPTIONS`]),
//! as [`super::options`] is BF's: each entry says which commands take the
//! option and whether COMMAND DOCS lists it there, its value, whose option it
//! is, how its value is checked and recorded ([`CfOption::set`]), how a
//! replicated CF.RESERVE spells it ([`CfOption::write`]) and its keyword in a
//! binding's constructor. The strict parsers (`super::cf`), the test that tells
//! ferrobloom's replicated form from RedisBloom's (`super::lenient`), the
//! replicated CF.RESERVE ([`reserve_args`]), COMMAND DOCS
//! (`crate::redis::commands` in the module) and the bindings' keyword checks
//! all read it.
//!
//! Errors keep RedisBloom's texts and order: a value is checked when its
//! option is met (the first bad one answers); the capacity against the bucket
//! size once all options are read (CF.RESERVE).

use std::ffi::CStr;

use super::errors::{self as e, CmdError};
use super::options::{Source, ValueDoc, ValueType};
use super::parse::{parse_f64, parse_i64};
use ferrobloom_core::bloom::MAX_CAPACITY;
use ferrobloom_core::cuckoo::{CuckooParams, MAX_EXPANSION};

/// The commands that create cuckoo filters with options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfCommand {
    /// `CF.RESERVE key capacity [options]` (every option takes a value).
    Reserve,
    /// `CF.INSERT[NX] key [options] ITEMS item [item ...]`.
    Insert,
}

/// How a command takes an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    No,
    /// Taken and listed by COMMAND DOCS.
    Documented,
    /// Taken, not listed (RedisBloom's COMMAND DOCS of the command does not
    /// have it and clients build requests from them).
    Undocumented,
}

/// The options of one command as given, each value checked on its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CfGiven {
    /// CF.INSERT's `CAPACITY` (CF.RESERVE's is positional).
    pub capacity: Option<u64>,
    /// The bucket size (the configured default until `BUCKETSIZE`): CF.INSERT
    /// checks its `CAPACITY` against it at once.
    pub bucket_size: u8,
    pub max_iterations: Option<u16>,
    pub expansion: Option<u32>,
    pub error: Option<f64>,
    /// `LAYOUT`: whether the filter uses RedisBloom's layout.
    pub redisbloom: Option<bool>,
    pub nocreate: bool,
}

impl CfGiven {
    /// Nothing given yet, with the configured bucket size.
    pub fn new(bucket_size: u8) -> Self {
        CfGiven {
            capacity: None,
            bucket_size,
            max_iterations: None,
            expansion: None,
            error: None,
            redisbloom: None,
            nocreate: false,
        }
    }
}

/// One option of CF.RESERVE and/or CF.INSERT[NX].
pub struct CfOption {
    /// The keyword (matched as a whole argument, case-insensitively) and its
    /// COMMAND DOCS token.
    pub token: &'static CStr,
    /// The COMMAND DOCS argument name: the keyword in lower case.
    pub doc_name: &'static CStr,
    pub reserve: Takes,
    pub insert: Takes,
    /// `None`: a flag; else the value the keyword is followed by.
    pub value: Option<ValueDoc>,
    pub source: Source,
    /// Only ferrobloom writes it, and its replicated CF.RESERVE always does:
    /// a trusted command naming it came from a ferrobloom primary (`super::lenient`).
    pub marks_ferrobloom: bool,
    /// The keyword argument of a binding's constructor (`CF.RESERVE`'s
    /// options; `None` where the constructor has none).
    pub binding: Option<&'static str>,
    /// Checks the value (empty for a flag) and records it.
    pub set: fn(&mut CfGiven, &[u8]) -> Result<(), CmdError>,
    /// The option in a replicated CF.RESERVE: `None` to leave it out, else
    /// its value. Only read for CF.RESERVE's options.
    pub write: fn(&CuckooParams) -> Option<Vec<u8>>,
}

impl CfOption {
    /// The keyword's bytes.
    pub fn keyword(&self) -> &'static [u8] {
        self.token.to_bytes()
    }

    /// How `cmd` takes this option.
    pub fn taken_by(&self, cmd: CfCommand) -> Takes {
        match cmd {
            CfCommand::Reserve => self.reserve,
            CfCommand::Insert => self.insert,
        }
    }

    /// Whether `cmd` takes this option.
    pub fn takes(&self, cmd: CfCommand) -> bool {
        self.taken_by(cmd) != Takes::No
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

/// An option a replicated CF.RESERVE never spells out.
fn never(_: &CuckooParams) -> Option<Vec<u8>> {
    None
}

/// An integer option's value within `lo..=hi`: `bad` when it is not an
/// integer, `range` when it is out of range.
fn ranged(
    v: &[u8],
    lo: i64,
    hi: i64,
    bad: &'static str,
    range: &'static str,
) -> Result<i64, CmdError> {
    let x = parse_i64(v).ok_or(bad)?;
    if (lo..=hi).contains(&x) {
        Ok(x)
    } else {
        Err(range.into())
    }
}

/// An error rate for the ERROR option: strictly inside (0, 1).
fn error_rate(v: &[u8]) -> Result<f64, CmdError> {
    let r = parse_f64(v).ok_or(e::CF_BAD_ERROR)?;
    if r > 0.0 && r < 1.0 {
        Ok(r)
    } else {
        Err(e::CF_ERROR_RANGE.into())
    }
}

/// A capacity of at least two buckets and at most 2^30 (RedisBloom 2.8's
/// text for the first, ferrobloom's bound in the same style for the second).
pub fn check_capacity(capacity: i64, bucket_size: u8) -> Result<(), CmdError> {
    if capacity < 2 * i64::from(bucket_size) {
        Err(e::CF_CAPACITY_MIN.into())
    } else if capacity > MAX_CAPACITY as i64 {
        Err(e::CF_CAPACITY_TOO_LARGE.into())
    } else {
        Ok(())
    }
}

/// `LAYOUT ferrobloom|redisbloom`: whether the filter uses RedisBloom's layout.
pub fn parse_layout(v: &[u8]) -> Result<bool, CmdError> {
    if v.eq_ignore_ascii_case(b"redisbloom") {
        Ok(true)
    } else if v.eq_ignore_ascii_case(b"ferrobloom") {
        Ok(false)
    } else {
        Err(e::CF_BAD_LAYOUT.into())
    }
}

const OPTIONS: [CfOption; 8] = [
    CfOption {
        token: c"CAPACITY",
        doc_name: c"capacity",
        reserve: Takes::No,
        insert: Takes::Documented,
        value: value(c"capacity", ValueType::Integer),
        source: Source::RedisBloom,
        marks_ferrobloom: false,
        binding: None,
        set: |g, v| {
            let c = parse_i64(v).ok_or(e::CF_BAD_CAPACITY)?;
            check_capacity(c, g.bucket_size)?;
            g.capacity = Some(c as u64);
            Ok(())
        },
        write: never,
    },
    CfOption {
        token: c"BUCKETSIZE",
        doc_name: c"bucketsize",
        reserve: Takes::Documented,
        insert: Takes::No,
        value: value(c"bucketsize", ValueType::Integer),
        source: Source::RedisBloom,
        marks_ferrobloom: false,
        binding: Some("bucket_size"),
        set: |g, v| {
            g.bucket_size =
                ranged(v, 1, 255, e::CF_PARSE_BUCKETSIZE, e::CF_BUCKETSIZE_RANGE)? as u8;
            Ok(())
        },
        write: |p| Some(p.bucket_size.to_string().into_bytes()),
    },
    CfOption {
        token: c"MAXITERATIONS",
        doc_name: c"maxiterations",
        reserve: Takes::Documented,
        insert: Takes::No,
        value: value(c"maxiterations", ValueType::Integer),
        source: Source::RedisBloom,
        marks_ferrobloom: false,
        binding: Some("max_iterations"),
        set: |g, v| {
            let mi = ranged(
                v,
                1,
                65535,
                e::CF_PARSE_MAXITERATIONS,
                e::CF_MAXITERATIONS_RANGE,
            )?;
            g.max_iterations = Some(mi as u16);
            Ok(())
        },
        write: |p| Some(p.max_iterations.to_string().into_bytes()),
    },
    CfOption {
        token: c"EXPANSION",
        doc_name: c"expansion",
        reserve: Takes::Documented,
        insert: Takes::No,
        value: value(c"expansion", ValueType::Integer),
        source: Source::RedisBloom,
        marks_ferrobloom: false,
        binding: Some("expansion"),
        set: |g, v| {
            let x = ranged(
                v,
                0,
                MAX_EXPANSION as i64,
                e::CF_PARSE_EXPANSION,
                e::CF_EXPANSION_RANGE,
            )?;
            g.expansion = Some(x as u32);
            Ok(())
        },
        write: |p| Some(p.expansion.to_string().into_bytes()),
    },
    CfOption {
        token: c"ERROR",
        doc_name: c"error",
        reserve: Takes::Documented,
        insert: Takes::Documented,
        value: value(c"error", ValueType::Double),
        source: Source::Ferrobloom,
        marks_ferrobloom: false,
        binding: Some("error_rate"),
        set: |g, v| {
            g.error = Some(error_rate(v)?);
            Ok(())
        },
        write: |p| p.error_rate.map(|r| format!("{r}").into_bytes()),
    },
    CfOption {
        token: c"LAYOUT",
        doc_name: c"layout",
        reserve: Takes::Documented,
        insert: Takes::Undocumented,
        value: value(c"layout", ValueType::String),
        source: Source::Ferrobloom,
        marks_ferrobloom: true,
        binding: Some("layout"),
        set: |g, v| {
            g.redisbloom = Some(parse_layout(v)?);
            Ok(())
        },
        // Always: the layout a replica's `cf-layout` would pick may differ.
        write: |p| {
            let l: &[u8] = if p.redisbloom {
                b"redisbloom"
            } else {
                b"ferrobloom"
            };
            Some(l.to_vec())
        },
    },
    CfOption {
        token: c"NOCREATE",
        doc_name: c"nocreate",
        reserve: Takes::No,
        insert: Takes::Documented,
        value: None,
        source: Source::RedisBloom,
        marks_ferrobloom: false,
        binding: None,
        set: |g, _| {
            g.nocreate = true;
            Ok(())
        },
        write: never,
    },
    // BF's WINDOW given to CF: refused with a text that says why.
    CfOption {
        token: c"WINDOW",
        doc_name: c"window",
        reserve: Takes::Undocumented,
        insert: Takes::Undocumented,
        value: value(c"seconds", ValueType::Double),
        source: Source::Ferrobloom,
        marks_ferrobloom: false,
        binding: None,
        set: |_, _| Err(e::WINDOW_CF.into()),
        write: never,
    },
];

/// Every option of CF.RESERVE and CF.INSERT[NX], in COMMAND DOCS order.
pub static CF_OPTIONS: &[CfOption] = &OPTIONS;

/// The option of `cmd` that `arg` names, if any.
pub fn find(cmd: CfCommand, arg: &[u8]) -> Option<&'static CfOption> {
    CF_OPTIONS.iter().find(|o| o.takes(cmd) && o.is(arg))
}

/// Whether `arg` names an option that marks ferrobloom's replicated form
/// (`LAYOUT`: see [`CfOption::marks_ferrobloom`]).
pub fn marks_ferrobloom(arg: &[u8]) -> bool {
    CF_OPTIONS.iter().any(|o| o.marks_ferrobloom && o.is(arg))
}

/// The arguments after the key of the CF.RESERVE that creates the filter `p`
/// describes wherever it is applied, whatever that server's defaults:
/// `capacity BUCKETSIZE b MAXITERATIONS m EXPANSION x [ERROR r] LAYOUT l`.
pub fn reserve_args(p: &CuckooParams) -> Vec<Vec<u8>> {
    let mut out = vec![p.capacity.to_string().into_bytes()];
    for o in CF_OPTIONS.iter().filter(|o| o.takes(CfCommand::Reserve)) {
        if let Some(v) = (o.write)(p) {
            out.push(o.keyword().to_vec());
            out.push(v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        for o in CF_OPTIONS {
            let kw = o.keyword();
            assert!(!kw.is_empty() && kw.iter().all(u8::is_ascii_uppercase));
            assert_eq!(o.doc_name.to_bytes(), kw.to_ascii_lowercase().as_slice());
            assert!(o.takes(CfCommand::Reserve) || o.takes(CfCommand::Insert));
            // CF.RESERVE's options come in pairs (its arity check relies on it).
            assert!(!o.takes(CfCommand::Reserve) || o.valued(), "{:?}", o.token);
            assert_eq!(CF_OPTIONS.iter().filter(|p| p.is(kw)).count(), 1);
            assert!(!o.is(b"ITEMS"));
        }
        let p = CuckooParams {
            error_rate: Some(0.001),
            ..CuckooParams::default()
        };
        let args: Vec<String> = reserve_args(&p)
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let want = format!(
            "{} BUCKETSIZE {} MAXITERATIONS {} EXPANSION {} ERROR 0.001 LAYOUT ferrobloom",
            p.capacity, p.bucket_size, p.max_iterations, p.expansion
        );
        assert_eq!(args.join(" "), want);
        assert!(marks_ferrobloom(b"layout") && !marks_ferrobloom(b"ERROR"));
    }
}
