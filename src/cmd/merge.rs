//! BF.MERGE argument parsing: `BF.MERGE destination numkeys source [source ...]`
//! (the syntax of RedisBloom's `CMS.MERGE`, without its WEIGHTS).

use super::errors::{self as e, CmdError};
use super::parse::{parse_i64, ArgList};

/// Index of the first source in argv.
pub const FIRST_SOURCE: usize = 3;

/// Checks the arity and `numkeys`; returns the number of sources, which are
/// argv\[3..\].
pub fn parse_merge<'a>(args: &impl ArgList<'a>) -> Result<usize, CmdError> {
    let n = args.count();
    if n < FIRST_SOURCE + 1 {
        return Err(CmdError::WrongArity);
    }
    let numkeys = args
        .arg(2)
        .and_then(parse_i64)
        .filter(|k| *k > 0)
        .ok_or(e::MERGE_BAD_NUMKEYS)?;
    if usize::try_from(numkeys).ok() != Some(n - FIRST_SOURCE) {
        return Err(e::MERGE_NUMKEYS_MISMATCH.into());
    }
    Ok(n - FIRST_SOURCE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<usize, CmdError> {
        let v: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse_merge(&v.as_slice())
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
