//! Hostile argument values for the stress generator: the hostile keys, numbers (huge,
//! negative, non-finite, malformed), keywords, error rates, capacities and small numbers.

use super::*;

// ---------------------------------------------------------------------------------------------
// Hostile values
// ---------------------------------------------------------------------------------------------

pub(crate) fn hostile_key(i: usize) -> Vec<u8> {
    match i {
        31 => Vec::new(),
        30 => b"k:\x00\xff\r\n bin".to_vec(),
        _ => format!("k:{i}").into_bytes(),
    }
}

pub(crate) const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "NaN",
    "nan",
    "-nan",
    "inf",
    "-inf",
    "+inf",
    "infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "4.9e-324",
    "2.2250738585072014e-308",
    "1.7976931348623157e308",
    "0x10",
    " 1",
    "1 ",
    "",
    "+1",
    "00001",
    "1.",
    ".5",
    "-.5",
    "1e3",
    "1E3",
    "0.5",
    "0.25",
    "0.2500001",
    "0.9999999999999999",
    "1e-17",
    "abc",
    "1abc",
    "1\x00",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "65535",
    "65536",
    "32767",
    "32768",
    "32769",
    "255",
    "256",
    "1073741823",
    "1073741824",
    "1073741825",
    "99999999999999999999999999",
];

pub(crate) const KEYWORDS: &[&str] = &[
    "ITEMS",
    "NOCREATE",
    "NONSCALING",
    "CAPACITY",
    "ERROR",
    "EXPANSION",
    "BUCKETSIZE",
    "MAXITERATIONS",
    "SIZE",
    "FILTERS",
    "items",
    "ITEM",
    "ITEMSX",
    "I",
    "NOCREATEX",
    "capacity",
];

pub(crate) fn number(r: &mut Rng) -> Vec<u8> {
    match r.below(10) {
        0..=2 => r.pick(HOSTILE_NUMBERS).as_bytes().to_vec(),
        3 | 4 => r.below(301).to_string().into_bytes(),
        5 => (r.next() as i64).to_string().into_bytes(),
        6 => r.next().to_string().into_bytes(),
        7 => format!("{}", r.unit()).into_bytes(),
        8 => format!("{:e}", r.unit() * 10f64.powi(r.below(40) as i32 - 20)).into_bytes(),
        _ => {
            let n = r.index(9);
            r.bytes(n)
        }
    }
}

/// An error rate: mostly valid, sometimes hostile.
pub(crate) fn rate(r: &mut Rng) -> Vec<u8> {
    if r.percent(70) {
        let p = (0.05 + 0.9 * r.unit()) * 10f64.powi(-(r.range(1, 6) as i32));
        format!("{p}").into_bytes()
    } else {
        number(r)
    }
}

/// A capacity: mostly small, sometimes large, sometimes hostile.
pub(crate) fn capacity(r: &mut Rng) -> Vec<u8> {
    match r.below(20) {
        0..=11 => r.range(1, 2_000).to_string().into_bytes(),
        12..=14 => r.range(2_000, 200_000).to_string().into_bytes(),
        15 => r.range(200_000, 4_000_000).to_string().into_bytes(),
        // Around the per-filter memory cap (about 27M items at 1% in 32 MiB).
        16 if r.one_in(10) => r.range(4_000_000, 60_000_000).to_string().into_bytes(),
        _ => number(r),
    }
}

/// A small number (expansion, bucket size, iterations) or a hostile one.
pub(crate) fn small(r: &mut Rng, hi: u64) -> Vec<u8> {
    if r.percent(60) {
        r.below(hi + 1).to_string().into_bytes()
    } else {
        number(r)
    }
}
