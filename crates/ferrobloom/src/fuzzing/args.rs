//! The argument parsers of every command.

use super::*;

/// The module's default configuration and a deliberately odd one.
const BLOOM_DEFAULTS: [BloomDefaults; 2] = [
    BloomDefaults {
        error: 0.01,
        capacity: 100,
        expansion: 2,
        layout: BloomLayout::Classic,
        opts: ferrobloom_core::bloom::ChainOptions::REDISBLOOM,
    },
    BloomDefaults {
        error: 0.25,
        capacity: 1 << 30,
        expansion: 0,
        layout: BloomLayout::Blocked,
        opts: ferrobloom_core::bloom::ChainOptions::REDISBLOOM,
    },
];
const CUCKOO_DEFAULTS: [CuckooDefaults; 2] = [
    CuckooDefaults {
        capacity: 1024,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
        error: None,
        redisbloom: false,
    },
    CuckooDefaults {
        capacity: 1 << 30,
        bucket_size: 255,
        max_iterations: 65535,
        expansion: 32768,
        error: Some(1e-9),
        redisbloom: true,
    },
];

/// A small cap for filters created from parsed parameters (sizing runs in full
/// before the cap is checked; a small cap keeps the allocations cheap).
const CREATE_LIMITS: Limits = Limits {
    max_bytes: 64 << 10,
    max_links: 64,
    max_filters: 64,
};

/// Every argument parser over one argument vector (`\n`-separated, argv[0]
/// first), with the checks of what each promises; parameters that parse are
/// also used to size a filter (under a 64 KiB cap), as BF.RESERVE/CF.RESERVE do.
pub fn args(data: &[u8]) {
    let argv: Vec<&[u8]> = data.split(|&b| b == b'\n').take(1024).collect();
    let args = argv.as_slice();
    for a in args {
        if let Some(v) = parse_i64(a) {
            // Redis' string2ll accepts only the canonical spelling.
            assert_eq!(
                v.to_string().as_bytes(),
                *a,
                "non-canonical integer accepted"
            );
        }
        if let Some(v) = parse_f64(a) {
            assert!(!v.is_nan() && a.len() <= 128);
            let _ = format_g(v);
        }
        if let Ok(f) = crate::cmd::info::find_bf(a) {
            // A row of the INFO table, named by its keyword.
            assert!(a.eq_ignore_ascii_case(f.keyword.as_bytes()));
            let _ = f.label;
        }
        if let Ok(p) = ccf::parse_position(a) {
            assert!(p >= 0);
        }
        let _ = is_keyword(a, "ITEMS");
    }
    let n = args.count();
    for d in &BLOOM_DEFAULTS {
        if let Ok(p) = cbf::parse_reserve(&args, d) {
            // The arity parse_reserve allows: key, rate, capacity and each option of
            // the option table once, in any order, a repeated one counting.
            assert!((4..=crate::cmd::options::RESERVE_MAX_ARGS).contains(&n));
            // The replicated BF.RESERVE parses back to the same filter, on a
            // replica with any defaults (VALIDATESCALETO is the primary's check).
            let mut back: Vec<Vec<u8>> = vec![b"BF.RESERVE".to_vec(), b"k".to_vec()];
            back.extend(crate::cmd::options::reserve_args(&p));
            let back: Vec<&[u8]> = back.iter().map(Vec::as_slice).collect();
            assert!(
                back.iter().all(|a| a.len() <= 128),
                "an argument parse_f64 cannot read"
            );
            for e in &BLOOM_DEFAULTS {
                let again = cbf::parse_reserve_from(&back.as_slice(), e, Origin::Trusted);
                assert_eq!(
                    again,
                    Ok(CreateParams {
                        scale_to: None,
                        ..p
                    })
                );
            }
            assert!(p.opts.tightening > 0.0 && p.opts.tightening < 1.0);
            assert!(p.scale_to.is_none_or(|t| t > 0 && p.expansion > 0));
            assert!(p.error > 0.0 && p.error <= MAX_ERROR_RATE);
            assert!((1..=ferrobloom_core::bloom::MAX_CAPACITY).contains(&p.capacity));
            assert!(p.expansion <= ferrobloom_core::bloom::MAX_EXPANSION);
            let _ = BloomChain::new(p.capacity, p.error, p.expansion, &CREATE_LIMITS);
            if let Ok(c) = BloomChain::with_options(
                p.capacity,
                p.error,
                p.expansion,
                p.layout,
                p.opts,
                &CREATE_LIMITS,
            ) {
                let _ = c.scale_to(p.scale_to, &CREATE_LIMITS);
            }
        }
        if let Ok(a) = cbf::parse_insert(&args, d) {
            assert!(a.items_from >= 3 && a.items_from < n);
            assert!(args
                .arg(a.items_from - 1)
                .is_some_and(|k| is_keyword(k, "ITEMS")));
            if let Some(p) = a.create {
                assert!(p.error > 0.0 && p.error <= d.error.max(MAX_ERROR_RATE));
                let _ = BloomChain::new(p.capacity, p.error, p.expansion, &CREATE_LIMITS);
            }
        }
    }
    if let Ok(m) = crate::cmd::merge::parse_merge(&args) {
        // BF.MERGE: numkeys is canonical, positive and counts argv[3..], but
        // for a trailing OVERFILL.
        let k = m.sources;
        assert!(k >= 1 && n == k + 3 + usize::from(m.overfill));
        assert_eq!(args.arg(2), Some(k.to_string().as_bytes()));
    }
    for d in &CUCKOO_DEFAULTS {
        if let Ok(p) = ccf::parse_reserve(&args, d) {
            assert!(n >= 3 && n % 2 == 1);
            assert!(p.bucket_size >= 1 && p.max_iterations >= 1);
            assert!(p.capacity >= 2 * u64::from(p.bucket_size));
            assert!(p.capacity <= ferrobloom_core::bloom::MAX_CAPACITY);
            let _ = CuckooFilter::new(&p, CREATE_LIMITS.max_bytes);
        }
        if let Ok(a) = ccf::parse_insert(&args, d) {
            assert!(a.items_from >= 3 && a.items_from < n);
            if let Some(p) = a.create {
                let _ = CuckooFilter::new(&p, CREATE_LIMITS.max_bytes);
            }
        }
        // What a primary or an AOF wrote (ferrobloom's or RedisBloom 2.x's parse).
        if let Ok(p) = ccf::parse_reserve_from(&args, d, Origin::Trusted) {
            assert!(p.bucket_size >= 1 && p.max_iterations >= 1);
            assert!(p.capacity >= 2 * u64::from(p.bucket_size));
            let _ = CuckooFilter::new(&p, CREATE_LIMITS.max_bytes);
        }
        if let Ok(a) = ccf::parse_insert_from(&args, d, Origin::Trusted) {
            assert!(a.items_from >= 3 && a.items_from < n);
        }
    }
    for d in &BLOOM_DEFAULTS {
        if let Ok(p) = cbf::parse_reserve_from(&args, d, Origin::Trusted) {
            assert!(p.error > 0.0 && p.error < 1.0 && p.capacity >= 1);
            if p.layout == BloomLayout::RedisBloom {
                let _ = BloomChain::new_redisbloom(
                    p.capacity,
                    p.error,
                    p.expansion,
                    p.nonscaling_growth,
                    &CREATE_LIMITS,
                );
            }
        }
        if let Ok(a) = cbf::parse_insert_from(&args, d, Origin::Trusted) {
            assert!(a.items_from >= 3 && a.items_from < n);
        }
    }
}
