//! RedisBloom's layout: filters migrated from RedisBloom and `LAYOUT redisbloom`
//! (sizes, SCANDUMP, legacy power-of-two links, RDB payloads).

use super::*;

#[test]
fn redisbloom_layout_sizes_and_scandump_example() {
    // RedisBloom's sizes (link bytes, bits, hashes, BF.INFO Size): `bloom_init`
    // in deps/bloom/bloom.c, `BFMemUsage` in src/rebloom.c.
    for (err, cap, bytes, k, size) in [
        (0.01, 10, 16, 8, 112),
        (0.001, 100, 200, 11, 296),
        (0.01, 100, 144, 8, 240),
        (0.05, 1000, 960, 6, 1056),
    ] {
        let c = rb_chain(cap, err, 2);
        let s = c.links()[0].shape();
        assert_eq!((s.bytes(), s.bits, s.hashes), (bytes, bytes * 8, k));
        assert_eq!(c.mem_usage(), size);
    }
    let c = rb_chain(3, 0.01, 0);
    assert_eq!(c.links()[0].shape().bytes(), 8);
    assert_eq!(c.links()[0].shape().hashes, 7);
    assert_eq!(c.expansion(), None);
    // The BF.SCANDUMP example of RedisBloom's docs (BF.RESERVE bf 0.1 10;
    // BF.ADD bf item1):
    // https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/docs/commands/bf.scandump.md
    let mut c = rb_chain(10, 0.1, 2);
    let l = Limits::default();
    assert_eq!(c.add(&c.hash(b"item1"), &l), Ok(true));
    let header = c.encode_header();
    assert_eq!(header.len(), 73);
    assert_eq!(
        &header[12..20],
        &[5, 0, 0, 0, 2, 0, 0, 0],
        "options 5, growth 2"
    );
    assert_eq!(c.links()[0].data(), b"\x01\x08\x00\x80\x00\x04 \x00");
    // The header reads back as RedisBloom's, into the same filter.
    let back = BloomChain::from_header(&header, &l).unwrap();
    assert!(back.is_redisbloom());
    assert_eq!(back.encode_header(), header);
}

#[test]
fn redisbloom_legacy_links_round_to_powers_of_two() {
    // bloom_init without NOROUND: 100 entries at 1% want 958.5 bits, get 2^10,
    // and the spare bits become 6 more entries.
    let s = LinkShape::redisbloom(100, 0.01, 0).unwrap();
    assert_eq!((s.n2, s.bits, s.storage, s.entries), (10, 1024, 128, 106));
    assert_eq!(s.modulus(), 1024);
    // Tiny links: the modulus stays 2^n2 below the 64-bit storage.
    let s = LinkShape::redisbloom(1, 0.5, 0).unwrap();
    assert_eq!((s.n2, s.bits, s.modulus()), (1, 64, 2));
    assert!(LinkShape::redisbloom(0, 0.01, 5).is_err());
    assert!(LinkShape::redisbloom(10, 0.0, 5).is_err());
    // The smallest double still needs fewer hashes than the bound.
    let s = LinkShape::redisbloom(1, 5e-324, 5).unwrap();
    assert!(s.hashes > 1000 && s.hashes <= RB_MAX_HASHES);
}

/// RedisBloom RDB fields from memory.
struct Fields(Vec<Field>);

enum Field {
    U(u64),
    D(f64),
    B(Vec<u8>),
}

impl crate::rdb::RdbRead for Fields {
    type Buf = Vec<u8>;
    fn unsigned(&mut self) -> Option<u64> {
        match (!self.0.is_empty()).then(|| self.0.remove(0))? {
            Field::U(v) => Some(v),
            _ => None,
        }
    }
    fn double(&mut self) -> Option<f64> {
        match (!self.0.is_empty()).then(|| self.0.remove(0))? {
            Field::D(v) => Some(v),
            _ => None,
        }
    }
    fn buffer(&mut self) -> Option<Vec<u8>> {
        match (!self.0.is_empty()).then(|| self.0.remove(0))? {
            Field::B(v) => Some(v),
            _ => None,
        }
    }
}

#[test]
fn redisbloom_rdb_versions_and_their_checks() {
    use Field::{B, D, U};
    let l = Limits::default();
    let e = 0.01f64;
    let bpe = (e.ln() / LN2_SQUARED).abs();
    let link = |items: u64| {
        vec![
            U(100),
            D(e),
            U(7),
            D(bpe),
            U(960),
            U(0),
            B(vec![0; 120]),
            U(items),
        ]
    };
    let v4 = |total: u64, items: u64| {
        let mut f = vec![U(total), U(1), U(5), U(4)];
        f.extend(link(items));
        Fields(f)
    };
    let c = BloomChain::from_redisbloom_rdb(4, &mut v4(3, 3), &l).unwrap();
    assert_eq!(
        (c.items(), c.expansion(), c.scheme()),
        (3, Some(4), HashScheme::Murmur64)
    );
    assert!(
        BloomChain::from_redisbloom_rdb(4, &mut v4(4, 3), &l).is_err(),
        "total != link items"
    );
    assert!(BloomChain::from_redisbloom_rdb(5, &mut v4(3, 3), &l).is_err());
    let mut truncated = v4(3, 3);
    truncated.0.pop();
    assert!(BloomChain::from_redisbloom_rdb(4, &mut truncated, &l).is_err());
    // Version 0: no options (32-bit hashing), growth 2, bits = entries * bpe.
    let mut v0 = Fields(vec![
        U(0),
        U(1),
        U(100),
        D(e),
        U(7),
        D(bpe),
        B(vec![0; 120]),
        U(0),
    ]);
    let c = BloomChain::from_redisbloom_rdb(0, &mut v0, &l).unwrap();
    assert_eq!(c.scheme(), HashScheme::Murmur32);
    assert_eq!(c.scheme().width(), 32);
    assert_eq!(c.links()[0].shape().modulus(), 958);
    assert_eq!(c.expansion(), Some(2));
    // The memory cap applies to what the payload carries.
    let small = Limits {
        max_bytes: 100,
        ..l
    };
    assert_eq!(
        BloomChain::from_redisbloom_rdb(4, &mut v4(3, 3), &small).err(),
        Some(BloomError::MemoryCap)
    );
}
