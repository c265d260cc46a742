//! Chain options (valkey-bloom's `TIGHTENING` and `SEED`) and header version 2.

use super::*;

#[test]
fn tightening_sets_each_new_links_error_and_default_keeps_redisbloom() {
    let limits = Limits::default();
    for r in [0.5, 0.9, 0.1] {
        let mut c =
            BloomChain::with_options(10, 0.01, 2, BloomLayout::Classic, opts(r, None), &limits)
                .unwrap();
        for i in 0..200 {
            c.add(&h(&format!("t{i}")), &limits).unwrap();
        }
        assert!(c.links().len() >= 4);
        // The first link keeps RedisBloom's error / 2; each next one is r times the previous.
        assert_eq!(c.links()[0].shape().error, 0.005);
        for w in c.links().windows(2) {
            let want = w[0].shape().error * r;
            assert_eq!(w[1].shape().error, want);
            assert_eq!(
                *w[1].shape(),
                LinkShape::new(w[0].shape().entries * 2, want).unwrap()
            );
        }
        assert_eq!(c.error_rate(), 0.01);
    }
    // The defaults are exactly BloomChain::new's chain, written as header version 1.
    let a = BloomChain::new(100, 0.01, 2, &limits).unwrap();
    let b = BloomChain::with_options(
        100,
        0.01,
        2,
        BloomLayout::Classic,
        ChainOptions::default(),
        &limits,
    )
    .unwrap();
    assert_eq!(a.encode_header(), b.encode_header());
    assert_eq!(a.encode_header()[4], HEADER_VERSION_BASE);
    for bad in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(BloomChain::with_options(
            10,
            0.01,
            2,
            BloomLayout::Classic,
            opts(bad, None),
            &limits
        )
        .is_err());
    }
    // RedisBloom's layout takes neither.
    for o in [opts(0.9, None), opts(0.5, Some([1; 32]))] {
        assert!(
            BloomChain::with_options(10, 0.01, 2, BloomLayout::RedisBloom, o, &limits).is_err()
        );
    }
}

#[test]
fn a_seed_changes_the_bit_positions_and_is_persisted_in_header_version_2() {
    let limits = Limits::default();
    let make = |seed: Option<[u8; 32]>, tightening: f64, layout: BloomLayout| {
        BloomChain::with_options(1000, 0.01, 2, layout, opts(tightening, seed), &limits).unwrap()
    };
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        let plain = make(None, 0.5, layout);
        let s1 = make(Some([7; 32]), 0.5, layout);
        let s2 = make(Some([8; 32]), 0.5, layout);
        assert_eq!(plain.scheme(), HashScheme::Xxh3);
        assert_ne!(s1.scheme(), s2.scheme());
        assert!(!plain.same_hashing(&s1) && !s1.same_hashing(&s2));
        assert!(s1.same_hashing(&make(Some([7; 32]), 0.9, layout)));
        assert_ne!(s1.hash(b"x"), plain.hash(b"x"));
        assert_ne!(s1.hash(b"x"), s2.hash(b"x"));

        let mut c = make(Some([7; 32]), 0.75, layout);
        for i in 0..3000 {
            let h = c.hash(format!("s{i}").as_bytes());
            c.add(&h, &limits).unwrap();
        }
        let header = c.encode_header();
        assert_eq!(header[4], HEADER_VERSION_OPTIONS);
        assert_eq!(header.len(), 72 + 40 * c.links().len());
        let mut d = BloomChain::from_header(&header, &limits).unwrap();
        c.for_each_chunk(|it, data| d.load_chunk(it, data).unwrap());
        assert_eq!(d.options(), c.options());
        assert_eq!(d.scheme(), c.scheme());
        assert_eq!(d.encode_header(), header);
        for i in 0..3000 {
            assert!(d.contains(&d.hash(format!("s{i}").as_bytes())));
        }
        // Only the tightening ratio: version 2, not seeded.
        let t = make(None, 0.75, layout);
        let th = t.encode_header();
        assert_eq!((th[4], th[32]), (HEADER_VERSION_OPTIONS, 0));
        assert_eq!(
            BloomChain::from_header(&th, &limits).unwrap().options(),
            t.options()
        );

        // Corrupt version 2 fields are refused.
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = header.clone();
            f(&mut b);
            assert!(BloomChain::from_native_header(&b, &limits).is_err());
        };
        bad(&|b| b[24..32].copy_from_slice(&1.0f64.to_bits().to_le_bytes()));
        bad(&|b| b[24..32].copy_from_slice(&0.0f64.to_bits().to_le_bytes()));
        bad(&|b| b[32] = 2);
        bad(&|b| b[33] = 1);
        bad(&|b| b[32] = 0); // seed bytes without the flag
        bad(&|b| b.truncate(b.len() - 1));
        bad(&|b| b[4] = 3);
        let mut v1_opts = make(None, 0.5, layout).encode_header();
        v1_opts[4] = HEADER_VERSION_OPTIONS;
        assert!(BloomChain::from_native_header(&v1_opts, &limits).is_err());
    }
}
