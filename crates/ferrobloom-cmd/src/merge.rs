//! BF.MERGE argument parsing: `BF.MERGE destination numkeys source [source ...]
//! [OVERFILL]` (the syntax of RedisBloom's `CMS.MERGE`, without its WEIGHTS;
//! `OVERFILL` is ferrobloom's: accept a union that overfills the destination).

use super::errors::{self as e, CmdError};
use super::parse::{parse_i64, ArgList};

/// Index of the first source in argv.
pub const FIRST_SOURCE: usize = 3;

/// A parsed BF.MERGE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeArgs {
    /// Number of sources: argv\[3..3 + sources\].
    pub sources: usize,
    /// `OVERFILL` was given (after the sources): take a union that holds more
    /// items than the destination's links do at their error rates, reporting
    /// the estimated count.
    pub overfill: bool,
}

/// Checks the arity, `numkeys` and the optional trailing `OVERFILL`. `numkeys`
/// decides: when it counts every argument after it, they are all sources (a
/// key may be named `overfill`); when it counts all but the last, the last
/// must be `OVERFILL` (any case).
pub fn parse_merge<'a>(args: &impl ArgList<'a>) -> Result<MergeArgs, CmdError> {
    let n = args.count();
    if n < FIRST_SOURCE + 1 {
        return Err(CmdError::WrongArity);
    }
    let numkeys = args
        .arg(2)
        .and_then(parse_i64)
        .filter(|k| *k > 0)
        .ok_or(e::MERGE_BAD_NUMKEYS)?;
    let sources = usize::try_from(numkeys).map_err(|_| e::MERGE_NUMKEYS_MISMATCH)?;
    if sources == n - FIRST_SOURCE {
        return Ok(MergeArgs {
            sources,
            overfill: false,
        });
    }
    let last_is_overfill = args
        .arg(n - 1)
        .is_some_and(|a| a.eq_ignore_ascii_case(b"OVERFILL"));
    if sources + 1 == n - FIRST_SOURCE && last_is_overfill {
        return Ok(MergeArgs {
            sources,
            overfill: true,
        });
    }
    Err(e::MERGE_NUMKEYS_MISMATCH.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<usize, CmdError> {
        let v: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse_merge(&v.as_slice()).map(|a| {
            assert!(!a.overfill, "{line}");
            a.sources
        })
    }

    fn overfill(line: &str) -> Result<MergeArgs, CmdError> {
        let v: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse_merge(&v.as_slice())
    }

    #[test]
    fn overfill_is_a_trailing_token_numkeys_decides() {
        let yes = |sources| {
            Ok(MergeArgs {
                sources,
                overfill: true,
            })
        };
        assert_eq!(overfill("BF.MERGE d 1 a OVERFILL"), yes(1));
        assert_eq!(overfill("BF.MERGE d 2 a b overfill"), yes(2));
        // numkeys counts it: a key named overfill.
        assert_eq!(p("BF.MERGE d 2 a OVERFILL"), Ok(2));
        assert_eq!(p("BF.MERGE d 1 OVERFILL"), Ok(1));
        for bad in [
            "BF.MERGE d 1 a b",
            "BF.MERGE d 1 a OVERFILLS",
            "BF.MERGE d 1 a OVERFILL OVERFILL",
            "BF.MERGE d 2 a OVERFILL OVERFILL OVERFILL",
        ] {
            assert_eq!(
                overfill(bad),
                Err(e::MERGE_NUMKEYS_MISMATCH.into()),
                "{bad}"
            );
        }
        assert_eq!(overfill("BF.MERGE d OVERFILL"), Err(CmdError::WrongArity));
    }

    #[test]
    fn numkeys_must_be_positive_and_match() {
        assert_eq!(p("BF.MERGE d 1 a"), Ok(1));
        assert_eq!(p("BF.MERGE d 3 a b a"), Ok(3));
        assert_eq!(p("BF.MERGE d 1"), Err(CmdError::WrongArity));
        assert_eq!(p("BF.MERGE d"), Err(CmdError::WrongArity));
        for bad in [
            "0",
            "-1",
            "x",
            "01",
            "1.0",
            " 1",
            "",
            "99999999999999999999",
        ] {
            assert_eq!(
                p(&format!("BF.MERGE d {bad} a")),
                Err(e::MERGE_BAD_NUMKEYS.into()),
                "{bad:?}"
            );
        }
        assert_eq!(p("BF.MERGE d 2 a"), Err(e::MERGE_NUMKEYS_MISMATCH.into()));
        assert_eq!(p("BF.MERGE d 1 a b"), Err(e::MERGE_NUMKEYS_MISMATCH.into()));
    }
}
