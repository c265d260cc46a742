//! RESTORE of a cuckoo filter payload and the corrupted header variants (`bad_headers`).

use super::*;

// ---------------------------------------------------------------------------------------------
// RESTORE (the AOF and DUMP-payload helpers are in `common::rdb`)
// ---------------------------------------------------------------------------------------------

pub fn restore(con: &mut Connection, key: &[u8], payload: &[u8]) -> Value {
    raw(con, &[b"RESTORE".as_slice(), key, b"0", payload])
}

/// Corrupted variants of a valid header of a filter with 3 sub-filters (expansion 2,
/// bucket size 2, 8-bit fingerprints): `(what, header, expected LOADCHUNK error)`.
/// As RedisBloom 2.8 answers: `Invalid header` for a length that is neither
/// format's (38 or 64 bytes), `Couldn't create filter!` for one that is and
/// does not validate.
pub fn bad_headers(h: &[u8]) -> Vec<(String, Vec<u8>, &'static str)> {
    let hdr = Hdr::decode(h);
    assert_eq!(
        (hdr.nfilters, hdr.expansion, hdr.bucket_size, hdr.fp_bits),
        (3, 2, 2, 8),
        "expected a 3-sub-filter header"
    );
    let total_slots: u64 = hdr.base * 2 * (1 + 2 + 4);
    let mut out = Vec::new();
    let mut edit = |what: &str, want: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = h.to_vec();
        f(&mut v);
        let want = if [38, 64].contains(&v.len()) {
            CANNOT_CREATE
        } else {
            want
        };
        out.push((what.to_string(), v, want));
    };
    edit("empty", INVALID_HEADER, &|v| v.clear());
    edit("truncated to 3 bytes", INVALID_HEADER, &|v| v.truncate(3));
    edit("truncated by one byte", INVALID_HEADER, &|v| {
        v.pop();
    });
    edit("RedisBloom's 38-byte length", INVALID_HEADER, &|v| {
        v.truncate(38)
    });
    edit("extended by one byte", INVALID_HEADER, &|v| v.push(0));
    edit("doubled", INVALID_HEADER, &|v| {
        let c = v.clone();
        v.extend_from_slice(&c)
    });
    edit("wrong magic", INVALID_HEADER, &|v| v[0] = b'X');
    edit("bloom magic", INVALID_HEADER, &|v| {
        v[..4].copy_from_slice(b"FBbf")
    });
    edit("version 0", INVALID_HEADER, &|v| v[H_VERSION] = 0);
    edit("version 2", INVALID_HEADER, &|v| v[H_VERSION] = 2);
    edit("fingerprint bits 0", INVALID_HEADER, &|v| v[H_FP_BITS] = 0);
    edit("fingerprint bits 3", INVALID_HEADER, &|v| v[H_FP_BITS] = 3);
    edit("fingerprint bits 33", INVALID_HEADER, &|v| {
        v[H_FP_BITS] = 33
    });
    edit("fingerprint bits 99", INVALID_HEADER, &|v| {
        v[H_FP_BITS] = 99
    });
    edit("bucket size 0", INVALID_HEADER, &|v| v[H_BUCKET_SIZE] = 0);
    edit("unknown flag", INVALID_HEADER, &|v| v[H_FLAGS] = 0x80);
    edit("continue flag without a pass", INVALID_HEADER, &|v| {
        v[H_FLAGS] = 2
    });
    edit("max iterations 0", INVALID_HEADER, &|v| {
        put_u16(v, H_MAX_ITER, 0)
    });
    edit("reserved bytes set", INVALID_HEADER, &|v| {
        put_u16(v, H_RESERVED, 1)
    });
    edit("expansion 3 (not a power of two)", INVALID_HEADER, &|v| {
        put_u32(v, H_EXPANSION, 3)
    });
    edit("expansion 65536", INVALID_HEADER, &|v| {
        put_u32(v, H_EXPANSION, 65536)
    });
    edit("expansion 0 with 3 sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_EXPANSION, 0)
    });
    edit("zero sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_NFILTERS, 0)
    });
    edit("65537 sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_NFILTERS, 65537)
    });
    edit("u32::MAX sub-filters", INVALID_HEADER, &|v| {
        put_u32(v, H_NFILTERS, u32::MAX)
    });
    edit(
        "65536 sub-filters, expansion 2 (overflow)",
        CANNOT_CREATE,
        &|v| put_u32(v, H_NFILTERS, 65536),
    );
    edit(
        "64 sub-filters, expansion 2 (2^69 bytes)",
        CANNOT_CREATE,
        &|v| put_u32(v, H_NFILTERS, 64),
    );
    edit("zero buckets", INVALID_HEADER, &|v| put_u64(v, H_BASE, 0));
    edit("3 buckets", INVALID_HEADER, &|v| put_u64(v, H_BASE, 3));
    edit("u64::MAX buckets", INVALID_HEADER, &|v| {
        put_u64(v, H_BASE, u64::MAX)
    });
    edit("2^40 buckets", CANNOT_CREATE, &|v| {
        put_u64(v, H_BASE, 1 << 40)
    });
    edit("2^63 buckets", CANNOT_CREATE, &|v| {
        put_u64(v, H_BASE, 1 << 63)
    });
    edit("items = slots + 1", INVALID_HEADER, &move |v| {
        put_u64(v, H_ITEMS, total_slots + 1)
    });
    edit("items = u64::MAX", INVALID_HEADER, &|v| {
        put_u64(v, H_ITEMS, u64::MAX)
    });
    edit("error rate 1", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, 1f64.to_bits())
    });
    edit("error rate NaN", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, f64::NAN.to_bits())
    });
    edit("error rate -0.5", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, (-0.5f64).to_bits())
    });
    edit("error rate inf", INVALID_HEADER, &|v| {
        put_u64(v, H_ERROR, f64::INFINITY.to_bits())
    });
    edit("cursor without a pass", INVALID_HEADER, &|v| {
        put_u32(v, H_CURSOR_FILTER, 1)
    });
    edit("cursor slot without a pass", INVALID_HEADER, &|v| {
        put_u64(v, H_CURSOR_SLOT, 5)
    });
    edit("pass on sub-filter 3 of 3", INVALID_HEADER, &|v| {
        v[H_FLAGS] = 1;
        put_u32(v, H_CURSOR_FILTER, 3)
    });
    edit(
        "pass past the end of its sub-filter",
        INVALID_HEADER,
        &move |v| {
            v[H_FLAGS] = 3;
            put_u32(v, H_CURSOR_FILTER, 2);
            put_u64(v, H_CURSOR_SLOT, total_slots)
        },
    );
    out
}
