//! `DUMP` payloads: RedisBloom 2.8.2's own (captured from its DUMP, in
//! `tests/fixtures/dumps/`), ferrobloom's (built here as the module's
//! `rdb_save` writes them) and every damaged form of them.

use super::*;
use crate::dump::LOAD_LIMITS;
use crate::filter::BloomFilter;
use crate::payload::{SCHEME_NATIVE, SCHEME_WINDOWED};

const RB_BF: &[u8] = include_bytes!("../../tests/fixtures/dumps/redisbloom-2.8.2-bf.dump");
const RB_CF: &[u8] = include_bytes!("../../tests/fixtures/dumps/redisbloom-2.8.2-cf.dump");
const RB_BIG: &[u8] = include_bytes!("../../tests/fixtures/dumps/redisbloom-2.8.2-big.dump");

/// The refusal of a payload.
fn refusal(p: &[u8]) -> String {
    match read_dump(p, &LOAD_LIMITS) {
        Ok(_) => panic!("a filter"),
        Err(e) => e,
    }
}

fn bloom(p: &[u8]) -> BloomFilter {
    match read_dump(p, &LOAD_LIMITS) {
        Ok(AnyFilter::Bloom(f)) => f,
        Ok(AnyFilter::Cuckoo(_)) => panic!("a cuckoo filter"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn crc64_is_redis_crc64() {
    // Redis' crc64.c self-test value.
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}

/// `BF.RESERVE bf 0.01 100`, `BF.MADD bf a b c`; `CF.RESERVE cf 64`,
/// `CF.INSERT cf ITEMS a b c`; `BF.RESERVE big 0.01 5000`, `BF.MADD big x0 ..
/// x299` (its bits LZF-compressed), each DUMPed by RedisBloom 2.8.2.
#[test]
fn redisbloom_dumps_load_with_their_items() {
    let f = bloom(RB_BF);
    assert!(f.is_redisbloom());
    assert_eq!(f.items(), 3);
    for x in [&b"a"[..], b"b", b"c"] {
        assert!(f.contains_item(x, 0));
    }
    assert_eq!(f.capacity(), 100);

    let big = bloom(RB_BIG);
    assert_eq!(big.items(), 300);
    for i in 0..300 {
        assert!(big.contains_item(format!("x{i}").as_bytes(), 0));
    }
    let misses = (0..10_000)
        .filter(|i| big.contains_item(format!("y{i}").as_bytes(), 0))
        .count();
    assert!(misses < 300, "{misses} false positives in 10,000");

    let Ok(AnyFilter::Cuckoo(c)) = read_dump(RB_CF, &LOAD_LIMITS) else {
        panic!("not a cuckoo filter");
    };
    assert!(c.is_redisbloom());
    assert_eq!(c.num_items(), 3);
    for x in [&b"a"[..], b"b", b"c"] {
        assert!(c.contains(&c.hash(x)));
    }
}

/// A payload as the module's `rdb_save` and Redis' DUMP write it: encoding
/// version 6, the scheme word, the header and each data chunk as a string
/// buffer (raw: no compression), then EOF, RDB version 10 and the checksum.
fn ferrobloom_dump(name: &[u8; 9], scheme: u64, chunks: &[Vec<u8>]) -> Vec<u8> {
    fn len(out: &mut Vec<u8>, n: u64) {
        if n < 64 {
            out.push(n as u8);
        } else if n < 16384 {
            out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
        } else {
            out.push(0x81);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
    let mut id = 0u64;
    for &c in name {
        let v = NAME_CHARS.iter().position(|&x| x == c).unwrap() as u64;
        id = (id << 6) | v;
    }
    id = (id << 10) | ENCVER_SCHEME as u64;
    let mut out = vec![RDB_TYPE_MODULE_2];
    len(&mut out, id);
    len(&mut out, OPCODE_UINT);
    len(&mut out, scheme);
    for c in chunks {
        len(&mut out, OPCODE_STRING);
        len(&mut out, c.len() as u64);
        out.extend_from_slice(c);
    }
    len(&mut out, OPCODE_EOF);
    out.extend_from_slice(&10u16.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn chunks_of<T: crate::dump::Scandump>(f: &T) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    f.for_each_dump_chunk(|_, d| v.push(d.to_vec()));
    v
}

#[test]
fn ferrobloom_dumps_load_bit_for_bit() {
    let mut f: BloomFilter = crate::bloom::BloomChain::new(1000, 0.01, 2, &LOAD_LIMITS)
        .unwrap()
        .into();
    for i in 0..500 {
        f.add_item(format!("i{i}").as_bytes(), 0, &LOAD_LIMITS)
            .unwrap();
    }
    let p = ferrobloom_dump(b"MBbloom--", SCHEME_NATIVE, &chunks_of(&f));
    assert_eq!(chunks_of(&bloom(&p)), chunks_of(&f));

    // A windowed filter is a Bloom filter only.
    let w: BloomFilter = crate::window::Window::new(
        100,
        0.01,
        2,
        crate::bloom::BloomLayout::Classic,
        60_000,
        &LOAD_LIMITS,
    )
    .unwrap()
    .into();
    let p = ferrobloom_dump(b"MBbloom--", SCHEME_WINDOWED, &chunks_of(&w));
    assert_eq!(chunks_of(&bloom(&p)), chunks_of(&w));
    let p = ferrobloom_dump(b"MBbloomCF", SCHEME_WINDOWED, &chunks_of(&w));
    assert!(read_dump(&p, &LOAD_LIMITS).is_err());
}

#[test]
fn damaged_payloads_are_refused() {
    // Every truncation, and every single-byte change, of every payload: a
    // clear error (the checksum, or a field), never a panic or a filter.
    for p in [RB_BF, RB_CF, RB_BIG] {
        for n in 0..p.len() {
            assert!(
                read_dump(&p[..n], &LOAD_LIMITS).is_err(),
                "truncated at {n}"
            );
        }
        for i in 0..p.len() {
            let mut q = p.to_vec();
            q[i] ^= 0x5a;
            assert!(read_dump(&q, &LOAD_LIMITS).is_err(), "byte {i} changed");
        }
    }
}

#[test]
fn payloads_with_a_valid_checksum_but_bad_fields_are_refused() {
    // Damage before the footer, then a correct checksum: the fields are read
    // and refused (or, rarely, still make a filter), never a panic.
    let reseal = |q: &mut Vec<u8>| {
        let n = q.len() - 8;
        let crc = crc64(&q[..n]);
        q[n..].copy_from_slice(&crc.to_le_bytes());
    };
    for p in [RB_BF, RB_CF, RB_BIG] {
        for i in 0..p.len() - FOOTER {
            for x in [0x01, 0x40, 0xff] {
                let mut q = p.to_vec();
                q[i] ^= x;
                reseal(&mut q);
                let _ = read_dump(&q, &LOAD_LIMITS);
            }
        }
    }
    // Not a module value; another module's type; a field after the value.
    let mut q = RB_BF.to_vec();
    q[0] = 0;
    reseal(&mut q);
    assert!(refusal(&q).contains("not a module value"));
    let p = ferrobloom_dump(b"ReJSON-RL", SCHEME_NATIVE, &[]);
    assert!(refusal(&p).contains("ReJSON-RL"));
}

#[test]
fn lzf_lengths_beyond_the_input_are_refused_before_allocating() {
    // A 3-byte LZF string claiming 2^40 bytes.
    let mut r = DumpReader {
        rest: &[0xc3, 0x03, 0x81, 0, 0, 1, 0, 0, 0, 0, 0, 0xe0, 0xff, 0x00],
        error: None,
    };
    assert!(r.string().unwrap_err().contains("impossible length"));
    // A back reference before the start.
    assert!(lzf_decompress(&[0x20, 0x05], 3).is_err());
    // A literal run then a reference that repeats it.
    assert_eq!(
        lzf_decompress(&[0x01, b'a', b'b', 0x20, 0x01], 5).unwrap(),
        b"ababa"
    );
}
