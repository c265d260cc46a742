//! Numbers as the replies and replicated commands spell them.

/// Formats like C's `printf("%g")` (6 significant digits, trailing zeros
/// dropped, exponent form below 1e-4 and from 1e6), as RedisBloom's BF.DEBUG
/// prints ratios (`ratio:%g` in `BFDebug_RedisCommand`,
/// <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/rebloom.c>).
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

/// Spells a number for a replicated command so that the parser reads it back
/// exactly: plain decimal (`{}`, what a value always was), or, when that is
/// longer than the 128 bytes `parse_f64` reads (a tightening ratio below about
/// 1e-110), the shortest exponent form (`1e-200`), which reads back exactly.
pub fn format_arg(v: f64) -> String {
    let plain = format!("{v}");
    if plain.len() <= 128 {
        plain
    } else {
        format!("{v:e}")
    }
}

/// Formats a window (milliseconds) as seconds with 3 decimals, as a replicated
/// `WINDOW` option and BF.DEBUG spell it.
pub fn format_window(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_arg_reads_back_at_every_magnitude() {
        for v in [0.5, 0.7, 1e-9, 1e-100, 1e-110, 1e-200, 5e-324, 0.1 + 0.2] {
            let s = format_arg(v);
            assert!(s.len() <= 128, "{s}");
            assert_eq!(crate::parse::parse_f64(s.as_bytes()), Some(v), "{s}");
        }
        assert_eq!(format_arg(0.7), "0.7");
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
    fn windows_have_three_decimals() {
        assert_eq!(format_window(1), "0.001");
        assert_eq!(format_window(2500), "2.500");
        assert_eq!(format_window(315_576_000_000), "315576000.000");
    }
}
