//! RedisBloom's own RDB payloads (encoding versions 0-4) of either type, and
//! their seeds.

use super::checks::{check_bloom, check_cuckoo};
use super::*;

/// RedisBloom's RDB fields read from the fuzz input (see the module doc).
struct FuzzRdb<'a> {
    input: Input<'a>,
}

impl<'a> FuzzRdb<'a> {
    fn tagged(&mut self, tag: u8) -> Option<()> {
        (self.input.u8()? % 3 == tag).then_some(())
    }
}

impl<'a> RdbRead for FuzzRdb<'a> {
    type Buf = &'a [u8];
    fn unsigned(&mut self) -> Option<u64> {
        self.tagged(0)?;
        Some(u64::from_le_bytes(self.input.array::<8>()?))
    }
    fn double(&mut self) -> Option<f64> {
        self.tagged(1)?;
        Some(f64::from_le_bytes(self.input.array::<8>()?))
    }
    fn buffer(&mut self) -> Option<&'a [u8]> {
        self.tagged(2)?;
        self.input.buffer()
    }
}

/// RedisBloom's own RDB payload of either type (input format in the module doc).
pub fn rdb_redisbloom(data: &[u8]) {
    let mut input = Input::new(data);
    let Some(sel) = input.u8() else {
        return;
    };
    let encver = i32::from(sel / 2 % 5);
    let mut r = FuzzRdb { input };
    if sel & 1 == 0 {
        if let Ok(c) = BloomChain::from_redisbloom_rdb(encver, &mut r, &limits()) {
            assert!(c.is_redisbloom());
            let mut c = BloomFilter::from(c);
            check_bloom(&c);
            super::after_load::exercise_bloom(&mut c);
        }
    } else if let Ok(mut f) =
        CuckooFilter::from_redisbloom_rdb(encver, &mut r, MAX_BYTES, MAX_FILTERS)
    {
        assert!(f.is_redisbloom());
        check_cuckoo(&f);
        super::after_load::exercise_cuckoo(&mut f);
    }
}

/// One RedisBloom RDB field of a [`rdb_redisbloom`] seed.
enum RbField {
    U(u64),
    D(f64),
    B(Vec<u8>),
}

fn rb_seed(sel: u8, fields: &[RbField]) -> Vec<u8> {
    let mut out = vec![sel];
    for f in fields {
        match f {
            RbField::U(v) => {
                out.push(0);
                out.extend_from_slice(&v.to_le_bytes());
            }
            RbField::D(v) => {
                out.push(1);
                out.extend_from_slice(&v.to_le_bytes());
            }
            RbField::B(b) => {
                out.push(2);
                put_buffer(&mut out, b);
            }
        }
    }
    out
}

/// Seeds of [`rdb_redisbloom`]: Bloom payloads of versions 0, 1 and 4 and cuckoo
/// payloads of versions 2 and 4, as RedisBloom writes them.
pub(super) fn redisbloom_seeds() -> Vec<Seed> {
    use RbField::{B, D, U};
    let e: f64 = 0.01;
    let bpe = (e.ln() / 0.480453013918201).abs();
    let k = 7u64; // ceil(ln 2 · bpe) at 1%
    let mut set = vec![0u8; 120];
    set[3] = 0x41;
    vec![
        (
            "bloom-v4",
            rb_seed(
                8,
                &[
                    U(1),
                    U(1),
                    U(5),
                    U(2),
                    U(100),
                    D(e),
                    U(k),
                    D(bpe),
                    U(960),
                    U(0),
                    B(set.clone()),
                    U(1),
                ],
            ),
        ),
        (
            "bloom-v0",
            rb_seed(
                0,
                &[
                    U(0),
                    U(1),
                    U(100),
                    D(e),
                    U(k),
                    D(bpe),
                    B(vec![0; 120]),
                    U(0),
                ],
            ),
        ),
        (
            "bloom-v1-pow2",
            rb_seed(
                2,
                &[
                    U(0),
                    U(1),
                    U(100),
                    D(e),
                    U(k),
                    D(bpe),
                    U(1024),
                    U(10),
                    B(vec![0; 128]),
                    U(0),
                ],
            ),
        ),
        (
            "cuckoo-v4",
            rb_seed(
                9,
                &[
                    U(2),
                    U(8),
                    U(1),
                    U(0),
                    U(2),
                    U(20),
                    U(2),
                    U(8),
                    B(vec![0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                    U(16),
                    B(vec![0; 32]),
                ],
            ),
        ),
        (
            "cuckoo-v2",
            rb_seed(5, &[U(1), U(16), U(0), B(vec![0; 32])]),
        ),
    ]
    .into_iter()
    .map(|(name, data)| ("rdb_redisbloom", name.to_string(), data))
    .collect()
}
