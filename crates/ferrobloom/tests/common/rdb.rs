//! AOF and DUMP-payload helpers shared by the persistence tests of both types.
//!
//! Use from a test file (after `mod common;`) as `use common::rdb::*;`.
#![allow(dead_code)]

use std::fs;
use std::time::Duration;

use redis::{Connection, Value};

use super::{exec, wait_until, Server};

// ---------------------------------------------------------------------------------------------
// AOF helpers
// ---------------------------------------------------------------------------------------------

pub fn wait_aof_rewrite_idle(s: &Server) {
    wait_until(Duration::from_secs(60), "AOF rewrite to finish", || {
        let i = s.info("persistence");
        i.get("aof_rewrite_in_progress").map(String::as_str) == Some("0")
            && i.get("aof_rewrite_scheduled").map(String::as_str) == Some("0")
    });
}

pub fn bgrewriteaof(s: &Server) {
    wait_aof_rewrite_idle(s);
    let mut con = s.conn();
    let r: String =
        exec(&mut con, &["BGREWRITEAOF"]).unwrap_or_else(|e| panic!("BGREWRITEAOF failed: {e}"));
    assert!(r.contains("rewriting"), "BGREWRITEAOF: {r}");
    wait_aof_rewrite_idle(s);
    assert_eq!(
        s.info_field("persistence", "aof_last_bgrewrite_status")
            .as_deref(),
        Some("ok")
    );
}

/// Contents of the AOF files of the given manifest type (`b` base, `i` incr).
pub fn aof_files(s: &Server, kind: &str) -> Vec<Vec<u8>> {
    let dir = s.aof_dir();
    let manifest = fs::read_dir(&dir)
        .expect("appendonlydir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".manifest"))
        .expect("AOF manifest");
    let text = fs::read_to_string(&manifest).expect("read manifest");
    text.lines()
        .filter_map(|line| {
            let t: Vec<&str> = line.split_whitespace().collect();
            let name = t.windows(2).find(|w| w[0] == "file").map(|w| w[1])?;
            let ty = t.windows(2).find(|w| w[0] == "type").map(|w| w[1])?;
            (ty == kind).then(|| fs::read(dir.join(name)).expect("read AOF file"))
        })
        .collect()
}

pub fn count_occurrences(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

// ---------------------------------------------------------------------------------------------
// DUMP payloads: CRC64 (Jones) and the module value layout
// ---------------------------------------------------------------------------------------------

/// Redis' `crc64`: Jones polynomial 0xad93d23594c935a9, reflected in and out, init 0,
/// xorout 0 (bitwise, with the reflected polynomial).
pub fn crc64(data: &[u8]) -> u64 {
    // 0xad93d23594c935a9 bit-reversed.
    const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// RDB length encoding (`rdbSaveLen`).
pub fn rdb_len(n: u64) -> Vec<u8> {
    if n < 64 {
        vec![n as u8]
    } else if n < 16384 {
        vec![0x40 | (n >> 8) as u8, n as u8]
    } else if n <= u64::from(u32::MAX) {
        let mut v = vec![0x80];
        v.extend_from_slice(&(n as u32).to_be_bytes());
        v
    } else {
        let mut v = vec![0x81];
        v.extend_from_slice(&n.to_be_bytes());
        v
    }
}

/// RDB length decoding (`rdbLoadLen`) at `*pos`, advancing it.
pub fn read_rdb_len(buf: &[u8], pos: &mut usize) -> u64 {
    let first = buf[*pos];
    *pos += 1;
    match first >> 6 {
        0 => u64::from(first & 0x3f),
        1 => {
            let v = (u64::from(first & 0x3f) << 8) | u64::from(buf[*pos]);
            *pos += 1;
            v
        }
        2 if first == 0x80 => {
            let v = u32::from_be_bytes(buf[*pos..*pos + 4].try_into().unwrap());
            *pos += 4;
            u64::from(v)
        }
        2 if first == 0x81 => {
            let v = u64::from_be_bytes(buf[*pos..*pos + 8].try_into().unwrap());
            *pos += 8;
            v
        }
        _ => panic!(
            "special RDB string encoding {first:#x} at {}: the DUMP must be made with \
             `rdbcompression no`",
            *pos - 1
        ),
    }
}

pub const RDB_TYPE_MODULE_2: u8 = 7;
pub const MODULE_OPCODE_EOF: u8 = 0;
pub const MODULE_OPCODE_UINT: u8 = 2;
pub const MODULE_OPCODE_STRING: u8 = 5;

/// A DUMP payload of a module value, split into its parts.
#[derive(Clone, Debug)]
pub struct ModulePayload {
    pub module_id: u64,
    /// Encoding version 6's leading unsigned (the hash scheme: 0 = ferrobloom's,
    /// 1 = RedisBloom's); `None` for version 5 payloads.
    pub scheme: Option<u64>,
    /// The string buffers written by `rdb_save`, in order (header, then the data).
    pub strings: Vec<Vec<u8>>,
    /// RDB version trailer (2 bytes, little-endian).
    pub rdb_version: [u8; 2],
}

impl ModulePayload {
    /// Parses an uncompressed DUMP (`rdbcompression no`) and checks its CRC.
    pub fn parse(dump: &[u8]) -> ModulePayload {
        let n = dump.len();
        assert!(n > 10);
        let crc = u64::from_le_bytes(dump[n - 8..].try_into().unwrap());
        assert_eq!(crc64(&dump[..n - 8]), crc, "CRC64 of a real DUMP");
        assert_eq!(dump[0], RDB_TYPE_MODULE_2, "not a module value");
        let mut pos = 1;
        let module_id = read_rdb_len(dump, &mut pos);
        let mut strings = Vec::new();
        let mut scheme = None;
        if dump[pos] == MODULE_OPCODE_UINT {
            pos += 1;
            scheme = Some(read_rdb_len(dump, &mut pos));
        }
        loop {
            let op = read_rdb_len(dump, &mut pos);
            if op == u64::from(MODULE_OPCODE_EOF) {
                break;
            }
            assert_eq!(
                op,
                u64::from(MODULE_OPCODE_STRING),
                "unexpected module opcode"
            );
            let len = read_rdb_len(dump, &mut pos) as usize;
            strings.push(dump[pos..pos + len].to_vec());
            pos += len;
        }
        assert_eq!(pos, n - 10, "trailing bytes after the module EOF marker");
        ModulePayload {
            module_id,
            scheme,
            strings,
            rdb_version: [dump[n - 10], dump[n - 9]],
        }
    }

    /// The module value bytes (type byte to EOF marker), without the trailer.
    pub fn body(&self) -> Vec<u8> {
        let mut out = vec![RDB_TYPE_MODULE_2];
        out.extend(rdb_len(self.module_id));
        if let Some(v) = self.scheme {
            out.extend(rdb_len(u64::from(MODULE_OPCODE_UINT)));
            out.extend(rdb_len(v));
        }
        for s in &self.strings {
            out.extend(rdb_len(u64::from(MODULE_OPCODE_STRING)));
            out.extend(rdb_len(s.len() as u64));
            out.extend_from_slice(s);
        }
        out.extend(rdb_len(u64::from(MODULE_OPCODE_EOF)));
        out
    }

    pub fn encode(&self) -> Vec<u8> {
        seal(self.body(), self.rdb_version)
    }
}

/// The same value in ferrobloom's previous RDB encoding (version 5: no scheme field),
/// from an uncompressed DUMP (`rdbcompression no`) of a filter with ferrobloom's hashing;
/// `None` for a filter with RedisBloom's hashing, which version 5 cannot describe.
pub fn as_version5(dump: &[u8]) -> Option<Vec<u8>> {
    let mut p = ModulePayload::parse(dump);
    assert_eq!(p.module_id & 1023, 6, "a version 6 payload");
    if p.scheme != Some(0) {
        return None;
    }
    p.scheme = None;
    p.module_id = (p.module_id & !1023) | 5;
    Some(p.encode())
}

/// Appends the RDB version and a correct CRC64.
pub fn seal(mut body: Vec<u8>, rdb_version: [u8; 2]) -> Vec<u8> {
    body.extend_from_slice(&rdb_version);
    let crc = crc64(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// `DUMP key`; panics unless the reply is a bulk string.
pub fn dump(con: &mut Connection, key: &[u8]) -> Vec<u8> {
    match redis::cmd("DUMP").arg(key).query::<Value>(con) {
        Ok(Value::BulkString(b)) => b,
        other => panic!("DUMP {:?}: {other:?}", String::from_utf8_lossy(key)),
    }
}

// ---------------------------------------------------------------------------------------------
// Little-endian header fields
// ---------------------------------------------------------------------------------------------

pub fn put_u32(h: &mut [u8], at: usize, v: u32) {
    h[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(h: &mut [u8], at: usize, v: u64) {
    h[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn get_u64(h: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(h[at..at + 8].try_into().unwrap())
}
