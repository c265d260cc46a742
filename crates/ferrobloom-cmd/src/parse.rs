//! Argument access, option scanning and number parsing with Redis' own
//! strictness.

use super::errors::{self, CmdError};

/// Read access to a command's arguments (argv[0] is the command name), so the
/// parsers work on Redis arguments and on plain slices (tests, fuzzing) alike.
pub trait ArgList<'a> {
    fn count(&self) -> usize;
    fn arg(&self, i: usize) -> Option<&'a [u8]>;
}

impl<'a> ArgList<'a> for &[&'a [u8]] {
    fn count(&self) -> usize {
        self.len()
    }
    fn arg(&self, i: usize) -> Option<&'a [u8]> {
        self.get(i).copied()
    }
}

/// Parses a signed 64-bit integer the way Redis does (`string2ll`): an optional
/// `-`, then decimal digits without leading zeros, no spaces, no `+`.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    // No leading zeros, and no "-0" (string2ll refuses it; found by fuzzing).
    if digits.first() == Some(&b'0') && (digits.len() > 1 || neg) {
        return None;
    }
    let mut v: i128 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i128::from(d - b'0');
    }
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// Parses a double the way Redis does (`strtod` over the whole string): no
/// leading space, nothing trailing, NaN refused, overflow and underflow refused.
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    if b.first().is_none_or(|c| c.is_ascii_whitespace()) || b.len() > 128 {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    // strtod reports ERANGE for overflow to infinity and underflow to zero, and
    // Redis refuses both; a literal "inf" is fine.
    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
    let literal_inf = mantissa
        .trim_start_matches(['+', '-'])
        .starts_with(['i', 'I']);
    if v.is_infinite() && !literal_inf {
        return None;
    }
    if v == 0.0 && mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
        return None;
    }
    Some(v)
}

/// Parsed options of an INSERT command (BF.INSERT with `P` = Bloom creation
/// parameters, CF.INSERT[NX] with cuckoo ones).
#[derive(Clone, Debug, PartialEq)]
pub struct InsertArgs<P> {
    /// How to create a missing key; `None` with NOCREATE.
    pub create: Option<P>,
    /// Index of the first item in argv.
    pub items_from: usize,
    /// BF.INSERT's `AT ms`: the primary's time of a windowed write (accepted only
    /// when replicated or loading).
    pub at_ms: Option<u64>,
    /// BF.INSERT's `SHAPES blob` (accepted only when replicated or loading).
    pub shapes: Option<Vec<u8>>,
}

/// Walks the options of `<cmd> key [OPTION ...] ITEMS item [item ...]` (BF.INSERT,
/// CF.INSERT, CF.INSERTNX) from argv[2]: `find` names the option an argument
/// is and whether it takes the next argument as its value. Calls `on` with the
/// option and its value (empty for a flag); returns the index of the first
/// item. A missing value, no ITEMS or no item after it is wrong arity; any
/// other token is `Unknown argument received`. Items may look like keywords.
pub fn scan_options<'a, K>(
    args: &impl ArgList<'a>,
    find: impl Fn(&[u8]) -> Option<(K, bool)>,
    mut on: impl FnMut(K, &'a [u8]) -> Result<(), CmdError>,
) -> Result<usize, CmdError> {
    if args.count() < 4 {
        return Err(CmdError::WrongArity);
    }
    let mut i = 2;
    loop {
        let a = args.arg(i).ok_or(CmdError::WrongArity)?;
        if is_keyword(a, "ITEMS") {
            return if i + 1 < args.count() {
                Ok(i + 1)
            } else {
                Err(CmdError::WrongArity)
            };
        }
        match find(a) {
            Some((kw, false)) => {
                on(kw, &[])?;
                i += 1;
            }
            Some((kw, true)) => {
                on(kw, args.arg(i + 1).ok_or(CmdError::WrongArity)?)?;
                i += 2;
            }
            None => return Err(errors::UNKNOWN_ARGUMENT.into()),
        }
    }
}

/// [`scan_options`] with the keywords listed: those in `flags` stand alone,
/// those in `valued` take the next argument; `on` gets the keyword as listed.
pub fn scan_until_items<'a>(
    args: &impl ArgList<'a>,
    flags: &[&'static str],
    valued: &[&'static str],
    on: impl FnMut(&'static str, &'a [u8]) -> Result<(), CmdError>,
) -> Result<usize, CmdError> {
    let find = |a: &[u8]| {
        let listed = |list: &[&'static str]| list.iter().copied().find(|k| is_keyword(a, k));
        listed(flags)
            .map(|k| (k, false))
            .or_else(|| listed(valued).map(|k| (k, true)))
    };
    scan_options(args, find, on)
}

/// Case-insensitive keyword match of a whole argument (never a prefix).
pub fn is_keyword(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

/// Refuses the command when any item from argument `from` on is longer than
/// `max` bytes (`bf.max-item-size`), before anything is looked up or changed.
pub fn check_item_sizes<'a>(
    args: &impl ArgList<'a>,
    from: usize,
    max: u64,
) -> Result<(), CmdError> {
    let mut i = from;
    while let Some(a) = args.arg(i) {
        if a.len() as u64 > max {
            return Err(errors::item_too_large(a.len(), max));
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_redis_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"100"), Some(100));
        assert_eq!(parse_i64(b"-7"), Some(-7));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"-01",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"1.0",
            b"1e3",
            b"abc",
            b"9223372036854775808",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn doubles_follow_redis_rules() {
        assert_eq!(parse_f64(b"0.01"), Some(0.01));
        assert_eq!(parse_f64(b"1e-3"), Some(0.001));
        assert_eq!(parse_f64(b"-2"), Some(-2.0));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"0"), Some(0.0));
        assert_eq!(parse_f64(b"0.000"), Some(0.0));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"NaN",
            b"1e-400",
            b"1e400",
            b"abc",
            b"0.1x",
        ] {
            assert_eq!(parse_f64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn keywords_match_whole_words_only() {
        assert!(is_keyword(b"nonscaling", "NONSCALING"));
        assert!(is_keyword(b"NonScaling", "NONSCALING"));
        assert!(!is_keyword(b"NONSCALIN", "NONSCALING"));
        assert!(!is_keyword(b"n", "NONSCALING"));
        assert!(!is_keyword(b"ITEMSX", "ITEMS"));
    }
}
