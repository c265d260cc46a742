//! The replicated BF.RESERVE ([`reserve_args`]) is the inverse of the parse:
//! parsed where it is applied (a replica, an AOF replay), it gives back the
//! parameters it was built from, whatever that server's defaults.

use super::*;
use crate::options::reserve_args;
use ferrobloom_core::bloom::{ChainOptions, MAX_CAPACITY, MAX_EXPANSION};
use ferrobloom_core::window::MAX_WINDOW_MS;

const D: BloomDefaults = BloomDefaults {
    error: 0.01,
    capacity: 100,
    expansion: 2,
    layout: BloomLayout::Blocked,
    opts: ferrobloom_core::bloom::ChainOptions::REDISBLOOM,
};

/// splitmix64: a small deterministic generator for the property tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.next() as usize % xs.len()]
    }

    /// Log-uniform in `[lo, hi]` (both > 0), or one of `edges`.
    fn rate(&mut self, lo: f64, hi: f64, edges: &[f64]) -> f64 {
        if self.next().is_multiple_of(4) {
            return self.pick(edges);
        }
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo.ln() + u * (hi.ln() - lo.ln())).exp().clamp(lo, hi)
    }
}

/// Creation parameters a BF.RESERVE can spell, with error rates up to
/// `max_error`: every layout, scaling or not, valkey-bloom's tightening and
/// seed, windows. Rates and ratios reach down to 1e-300: below about 1e-110
/// the plain decimal would pass the 128 bytes `parse_f64` reads, and the
/// replicated command spells them in exponent form (`format_arg`).
fn arbitrary_params(r: &mut Rng, max_error: f64) -> CreateParams {
    let layout = r.pick(&[
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
        BloomLayout::RedisBloom,
    ]);
    let window_ms = (layout != BloomLayout::RedisBloom && r.next().is_multiple_of(3)).then(|| {
        let any = r.range(1, MAX_WINDOW_MS);
        r.pick(&[
            1,
            999,
            1000,
            2500,
            600_000,
            MAX_WINDOW_MS,
            any,
            any % 100_000 + 1,
        ])
    });
    let any_expansion = r.range(1, u64::from(MAX_EXPANSION)) as u32;
    let expansion = r.pick(&[0, 0, 1, 2, 3, 4, MAX_EXPANSION, any_expansion]);
    let mut opts = ChainOptions::default();
    if layout != BloomLayout::RedisBloom && window_ms.is_none() {
        if r.next().is_multiple_of(2) {
            opts.tightening = r.rate(1e-300, 0.999_999_999, &[0.1 + 0.2, 0.9, 0.75, 1e-9]);
        }
        if r.next().is_multiple_of(2) {
            let mut seed = [0u8; 32];
            seed.iter_mut().for_each(|b| *b = r.next() as u8);
            opts.seed = Some(seed);
        }
    }
    let any_capacity = r.range(1, MAX_CAPACITY);
    CreateParams {
        error: r.rate(1e-300, max_error, &[max_error, 0.01, 0.001, 1e-9]),
        capacity: r.pick(&[1, 2, 100, 1000, MAX_CAPACITY, any_capacity]),
        expansion,
        layout,
        nonscaling_growth: 2,
        opts,
        window_ms,
        ..CreateParams::default()
    }
}

/// `BF.RESERVE k` + [`reserve_args`], as a replica or an AOF replay gets it.
fn replicated(p: &CreateParams) -> Vec<Vec<u8>> {
    let mut argv = vec![b"BF.RESERVE".to_vec(), b"k".to_vec()];
    argv.extend(reserve_args(p));
    argv
}

/// Defaults unlike anything the parameters say, so nothing can come from them.
const ODD: [BloomDefaults; 2] = [
    D,
    BloomDefaults {
        error: 0.2,
        capacity: 7,
        expansion: 0,
        layout: BloomLayout::Classic,
        opts: ferrobloom_core::bloom::ChainOptions::REDISBLOOM,
    },
];

#[test]
fn replicated_reserve_parses_back_to_the_same_filter() {
    let mut r = Rng(0x5EED);
    for round in 0..20_000 {
        // Every origin takes what a client may create; a replica and an AOF
        // replay (trusted) also take error rates above the clients' 0.25 cap.
        let trusted_only = round % 3 == 0;
        let p = arbitrary_params(&mut r, if trusted_only { 0.999_999 } else { 0.25 });
        let argv = replicated(&p);
        let v: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        // Ctx::replicate sends up to 11 arguments after the key.
        assert!(v.len() - 2 <= 11, "{p:?}");
        let shown = || {
            v.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
        };
        for d in &ODD {
            assert_eq!(
                parse_reserve_from(&v.as_slice(), d, Origin::Trusted),
                Ok(p),
                "{:?}",
                shown()
            );
            if !trusted_only {
                assert_eq!(
                    parse_reserve_from(&v.as_slice(), d, Origin::Client),
                    Ok(p),
                    "{:?}",
                    shown()
                );
            }
        }
    }
}

#[test]
fn what_the_parse_creates_is_replicated_as_parsed() {
    // The other way round: whatever a client's BF.RESERVE or BF.INSERT creates,
    // its replicated BF.RESERVE creates the same (VALIDATESCALETO aside: the
    // primary checked it), whatever the replica's defaults.
    let seed = "0123456789abcdef0123456789abcdef";
    let cases: &[&[&str]] = &[
        &["BF.RESERVE", "k", "0.01", "100"],
        &["BF.RESERVE", "k", "0.9", "1", "NONSCALING"],
        &[
            "BF.RESERVE",
            "k",
            "1e-9",
            "1073741824",
            "EXPANSION",
            "32768",
        ],
        &[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "0",
            "LAYOUT",
            "paired",
        ],
        &["BF.RESERVE", "k", "0.01", "10", "LAYOUT", "redisbloom"],
        &[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "TIGHTENING",
            "0.9",
            "SEED",
            seed,
        ],
        &[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "EXPANSION",
            "2",
            "VALIDATESCALETO",
            "1000",
        ],
        &["BF.RESERVE", "k", "0.01", "10", "WINDOW", "0.0015"],
        &[
            "BF.RESERVE",
            "k",
            "0.01",
            "10",
            "NONSCALING",
            "WINDOW",
            "315576000",
        ],
        &["BF.INSERT", "k", "ITEMS", "a"],
        &["BF.INSERT", "k", "ERROR", "0.5", "NONSCALING", "ITEMS", "a"],
        &[
            "BF.INSERT",
            "k",
            "CAPACITY",
            "5",
            "LAYOUT",
            "classic",
            "ITEMS",
            "a",
        ],
        &["BF.INSERT", "k", "TIGHTENING", "0.3", "ITEMS", "a"],
        &[
            "BF.INSERT",
            "k",
            "WINDOW",
            "2.5",
            "EXPANSION",
            "4",
            "ITEMS",
            "a",
        ],
    ];
    for args in cases {
        let v: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        for d in &ODD {
            let p = if args[0] == "BF.RESERVE" {
                parse_reserve(&v.as_slice(), d)
            } else {
                parse_insert(&v.as_slice(), d).map(|a| a.create.unwrap())
            }
            .unwrap();
            let argv = replicated(&p);
            let back: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            for e in &ODD {
                let want = CreateParams {
                    scale_to: None,
                    ..p
                };
                assert_eq!(
                    parse_reserve_from(&back.as_slice(), e, Origin::Trusted),
                    Ok(want),
                    "{args:?}"
                );
            }
        }
    }
}

#[test]
fn reserve_args_spell_every_parameter() {
    let p = CreateParams {
        error: 0.01,
        capacity: 1000,
        expansion: 0,
        layout: BloomLayout::Blocked,
        nonscaling_growth: 2,
        opts: ChainOptions {
            tightening: 0.9,
            seed: Some(*b"0123456789abcdef0123456789abcdef"),
        },
        scale_to: Some(5000),
        ..CreateParams::default()
    };
    let s = |p: &CreateParams| {
        reserve_args(p)
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        s(&p),
        "0.01 1000 NONSCALING LAYOUT blocked TIGHTENING 0.9 SEED 0123456789abcdef0123456789abcdef"
    );
    let p = CreateParams {
        expansion: 4,
        layout: BloomLayout::Paired,
        opts: ChainOptions::default(),
        window_ms: Some(2500),
        ..p
    };
    assert_eq!(s(&p), "0.01 1000 EXPANSION 4 LAYOUT paired WINDOW 2.500");
}
