//! Bloom DUMP payloads and headers: module type ids, RESTORE, header field offsets and the
//! corrupted header variants (`bad_headers`).

use super::*;

// ---------------------------------------------------------------------------------------------
// DUMP payloads (CRC64, RDB lengths, `ModulePayload`, `dump`: see `common::rdb`)
// ---------------------------------------------------------------------------------------------

/// Redis module type id: 9 chars of a 64-symbol charset (6 bits each), then a
/// 10-bit encoding version.
pub fn module_type_id(name: &str, encver: u64) -> u64 {
    pub const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    assert_eq!(name.len(), 9);
    let mut id = 0u64;
    for c in name.bytes() {
        let pos = CHARSET
            .iter()
            .position(|x| *x == c)
            .expect("type name char");
        id = (id << 6) | pos as u64;
    }
    (id << 10) | (encver & 1023)
}

/// A named change to a parsed payload.
pub type PayloadEdit = Box<dyn Fn(&mut ModulePayload)>;

pub fn restore(con: &mut Connection, key: &[u8], payload: &[u8]) -> redis::RedisResult<Value> {
    redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(con)
}

// Header field offsets (see `BloomChain::encode_header`).
pub const H_VERSION: usize = 4;
pub const H_RESERVED: usize = 5;
pub const H_TOTAL: usize = 8;
pub const H_EXPANSION: usize = 16;
pub const H_NLINKS: usize = 20;
pub const H_FIXED: usize = 24;
pub const H_LINK: usize = 40;
pub const L_ENTRIES: usize = 0;
pub const L_ITEMS: usize = 8;
pub const L_ERROR: usize = 16;
pub const L_BITS: usize = 24;
pub const L_HASHES: usize = 32;
pub const L_LAYOUT: usize = 36;
pub const L_RESERVED: usize = 37;

pub fn link_at(i: usize, field: usize) -> usize {
    H_FIXED + H_LINK * i + field
}

/// Whether a change to header byte `i` can leave a consistent header: only a link's
/// capacity, error rate and hash count, and the expansion, may take other valid values.
/// Magic, version, reserved bytes, link count, layout and the item counters (they must
/// add up) never can; nor can the bit count when the bit arrays follow (RDB), since
/// the buffer lengths must match it.
pub fn header_byte_may_vary(i: usize, bits_may_vary: bool) -> bool {
    if i < H_FIXED {
        return (H_EXPANSION..H_EXPANSION + 4).contains(&i);
    }
    let f = (i - H_FIXED) % H_LINK;
    (L_ENTRIES..L_ENTRIES + 8).contains(&f)
        || (L_ERROR..L_ERROR + 8).contains(&f)
        || (L_HASHES..L_HASHES + 4).contains(&f)
        || (bits_may_vary && (L_BITS..L_BITS + 8).contains(&f))
}

/// Corrupted variants of a valid two-link header: `(what, header)`. Every one must
/// be refused by both RESTORE and LOADCHUNK.
pub fn bad_headers(h: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    assert_eq!(&h[..4], b"FBbf");
    assert_eq!(h.len(), H_FIXED + 2 * H_LINK, "expected a two-link header");
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let mut edit = |what: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = h.to_vec();
        f(&mut v);
        out.push((what, v));
    };
    edit("empty header", &|v| v.clear());
    edit("truncated to 3 bytes", &|v| v.truncate(3));
    edit("truncated to the fixed part", &|v| v.truncate(H_FIXED));
    edit("truncated by one byte", &|v| {
        v.pop();
    });
    edit("extended by one byte", &|v| v.push(0));
    edit("extended by a whole link record", &|v| {
        v.extend_from_slice(&[0u8; H_LINK])
    });
    edit("wrong magic", &|v| v[0] = b'X');
    edit("RedisBloom-style header (no magic)", &|v| {
        v[..4].copy_from_slice(&[0, 0, 0, 0])
    });
    edit("header version 2", &|v| v[H_VERSION] = 2);
    edit("header version 0", &|v| v[H_VERSION] = 0);
    edit("reserved byte set", &|v| v[H_RESERVED + 1] = 1);
    edit("zero links", &|v| put_u32(v, H_NLINKS, 0));
    edit("u32::MAX links", &|v| put_u32(v, H_NLINKS, u32::MAX));
    edit("three links claimed, two present", &|v| {
        put_u32(v, H_NLINKS, 3)
    });
    edit("one link claimed, two present", &|v| {
        put_u32(v, H_NLINKS, 1)
    });
    edit("expansion above 32768", &|v| put_u32(v, H_EXPANSION, 40000));
    edit("non-scaling with two links", &|v| {
        put_u32(v, H_EXPANSION, 0)
    });
    edit("total items do not add up", &|v| {
        let t = get_u64(v, H_TOTAL);
        put_u64(v, H_TOTAL, t + 1)
    });
    edit("link items do not add up", &|v| {
        let t = get_u64(v, link_at(1, L_ITEMS));
        put_u64(v, link_at(1, L_ITEMS), t.saturating_sub(1))
    });
    // Items above a link's capacity are a valid state since BF.MERGE OVERFILL
    // (an overfilled union keeps its estimated count); counts are replied as
    // signed 64-bit integers, so a link's count above 2^63 - 1 is corrupt.
    edit("link items above 2^63 - 1", &|v| {
        put_u64(v, link_at(0, L_ITEMS), 1 << 63);
        let other = get_u64(v, link_at(1, L_ITEMS));
        put_u64(v, H_TOTAL, (1u64 << 63) + other)
    });
    edit("zero capacity", &|v| {
        put_u64(v, link_at(0, L_ENTRIES), 0);
        put_u64(v, link_at(0, L_ITEMS), 0);
        let other = get_u64(v, link_at(1, L_ITEMS));
        put_u64(v, H_TOTAL, other)
    });
    edit("error rate 0", &|v| {
        put_u64(v, link_at(0, L_ERROR), 0f64.to_bits())
    });
    edit("error rate 1", &|v| {
        put_u64(v, link_at(0, L_ERROR), 1f64.to_bits())
    });
    edit("error rate NaN", &|v| {
        put_u64(v, link_at(0, L_ERROR), f64::NAN.to_bits())
    });
    edit("error rate negative", &|v| {
        put_u64(v, link_at(1, L_ERROR), (-0.01f64).to_bits())
    });
    edit("zero bits", &|v| put_u64(v, link_at(0, L_BITS), 0));
    edit("bits not a multiple of 64", &|v| {
        let b = get_u64(v, link_at(0, L_BITS));
        put_u64(v, link_at(0, L_BITS), b + 8)
    });
    edit("2^61 bits", &|v| put_u64(v, link_at(0, L_BITS), 1 << 61));
    edit("2^63 bits", &|v| put_u64(v, link_at(1, L_BITS), 1 << 63));
    edit("u64::MAX - 63 bits", &|v| {
        put_u64(v, link_at(1, L_BITS), u64::MAX - 63)
    });
    edit("a 2^40-byte link", &|v| {
        put_u64(v, link_at(1, L_BITS), 1 << 43)
    });
    edit("zero hashes", &|v| put_u32(v, link_at(0, L_HASHES), 0));
    edit("129 hashes", &|v| put_u32(v, link_at(1, L_HASHES), 129));
    edit("u32::MAX hashes", &|v| {
        put_u32(v, link_at(1, L_HASHES), u32::MAX)
    });
    edit("unknown layout", &|v| v[link_at(0, L_LAYOUT)] = 1);
    edit("link reserved byte set", &|v| {
        v[link_at(1, L_RESERVED + 2)] = 0x80
    });
    out
}
