//! Pools of real headers, chunks and DUMP payloads for the stress generator, refreshed from
//! the hostile keys by SCANDUMP and DUMP (`sample_key`).

use super::*;

#[derive(Default)]
pub(crate) struct Pool {
    /// Index 0: Bloom, 1: cuckoo.
    pub(crate) headers: [Vec<Vec<u8>>; 2],
    pub(crate) chunks: [Vec<(i64, Vec<u8>)>; 2],
    pub(crate) dumps: [Vec<ModulePayload>; 2],
}

pub(crate) fn pool_add<T>(r: &mut Rng, v: &mut Vec<T>, x: T) {
    if v.len() < POOL_CAP {
        v.push(x);
    } else {
        let i = r.index(v.len());
        v[i] = x;
    }
}

/// `(type index, header, first data chunk)` of a filter by SCANDUMP, if `key` holds one.
pub(crate) fn sample_key(g: &mut Gen, con: &mut Connection, key: &[u8]) {
    let t = match raw(con, &[b"TYPE", key]) {
        Value::SimpleString(s) if s == "MBbloom--" => 0,
        Value::SimpleString(s) if s == "MBbloomCF" => 1,
        _ => return,
    };
    let scandump: &[u8] = if t == 0 {
        b"BF.SCANDUMP"
    } else {
        b"CF.SCANDUMP"
    };
    let mut it = 0i64;
    for step in 0..2 {
        let v = raw(con, &[scandump, key, it.to_string().as_bytes()]);
        let Value::Array(a) = v else { return };
        let (Some(Value::Int(next)), Some(Value::BulkString(data))) = (a.first(), a.get(1)) else {
            return;
        };
        if *next == 0 {
            break;
        }
        if step == 0 {
            pool_add(&mut g.r, &mut g.pool.headers[t], data.clone());
        } else if data.len() <= POOL_CHUNK_MAX {
            pool_add(&mut g.r, &mut g.pool.chunks[t], (*next, data.clone()));
        }
        it = *next;
    }
    let usage = match raw(con, &[b"MEMORY", b"USAGE", key]) {
        Value::Int(n) => n as usize,
        _ => usize::MAX,
    };
    if usage <= POOL_DUMP_MAX {
        if let Value::BulkString(d) = raw(con, &[b"DUMP", key]) {
            if d.first() == Some(&common::rdb::RDB_TYPE_MODULE_2) {
                let p = ModulePayload::parse(&d);
                pool_add(&mut g.r, &mut g.pool.dumps[t], p);
            }
        }
    }
}
