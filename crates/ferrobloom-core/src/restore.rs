//! A filter from a `DUMP` reply: the serialized value a server gives for one
//! key in one atomic step, so a filter read this way is exactly a state the
//! key held, on any server (RedisBloom 2.x as well as ferrobloom). Clients use
//! it where the server cannot prove a SCANDUMP walk consistent (see
//! docs/clients.md, "push and pull").
//!
//! A DUMP payload of a module value is (Redis' `rdb.c`, `cluster.c`:
//! `createDumpPayload`; the same in Valkey):
//!
//! | field | encoding |
//! |---|---|
//! | object type | one byte, `7` (`RDB_TYPE_MODULE_2`) |
//! | module type id | an RDB length: the 9-character type name in 6-bit characters (bits 10-63), the encoding version (bits 0-9) |
//! | the value | what the type's `rdb_save` wrote, each field behind an opcode: `2` unsigned (an RDB length), `4` double (8 bytes, little-endian), `5` string (an RDB string) |
//! | end of value | opcode `0` |
//! | RDB version | 2 bytes, little-endian |
//! | checksum | CRC-64 (Jones, reflected) of every byte before it, 8 bytes little-endian |
//!
//! An RDB length is one byte `00xxxxxx` (6 bits), `01xxxxxx xxxxxxxx` (14
//! bits), `0x80` + 4 bytes or `0x81` + 8 bytes big-endian; an RDB string is a
//! length and its bytes, or `0xC0`/`0xC1`/`0xC2` + a little-endian integer of
//! 1, 2 or 4 bytes (a short string that reads as an integer, as decimal text),
//! or `0xC3` + compressed length + length + LZF data.
//!
//! The value is read by the readers the module's `rdb_load` runs
//! ([`load_module_value`]): RedisBloom's encoding versions 0-4 and
//! ferrobloom's 5 and 6. Nothing is allocated for more data than the payload
//! can carry (LZF expands at most 88 times).

use std::borrow::Cow;

use crate::bloom::Limits;
use crate::file::AnyFilter;
use crate::payload::{load_payload_as, HeaderFormat, Payload, RdbRead};

/// The RDB encoding version ferrobloom writes, for both types: one unsigned,
/// the filter's hash scheme and header format (`payload`'s `SCHEME_*`: each
/// says which kind's header follows), then version 5's buffers.
pub const ENCVER_SCHEME: i32 = 6;
/// ferrobloom's first: the header, then the SCANDUMP data chunks, each an RDB
/// string buffer (ferrobloom's headers only).
pub const ENCVER_CHUNKS: i32 = 5;
/// The newest RedisBloom encoding version (RedisBloom 2.x).
pub const ENCVER_REDISBLOOM: i32 = 4;

/// Reads a module value of encoding version `encver` from `r`, as the
/// module's `rdb_load` does.
pub fn load_module_value<T: Payload, R: RdbRead>(
    encver: i32,
    r: &mut R,
    limits: &Limits,
) -> Result<T, String> {
    match encver {
        ENCVER_SCHEME => {
            let s = r.unsigned().ok_or("truncated payload (scheme)")?;
            match T::scheme_format(s) {
                Some(format) => load_payload_as::<T, _>(limits, format, || r.buffer()),
                None => Err(format!("unknown hash scheme {s}")),
            }
        }
        ENCVER_CHUNKS => load_payload_as::<T, _>(limits, HeaderFormat::Native, || r.buffer()),
        0..=ENCVER_REDISBLOOM => T::from_redisbloom_rdb(encver, r, limits),
        _ => Err(format!(
            "unknown encoding version {encver} (this module reads 0-{ENCVER_SCHEME})"
        )),
    }
}

/// `RDB_TYPE_MODULE_2`: a module value whose fields carry opcodes.
const RDB_TYPE_MODULE_2: u8 = 7;
const OPCODE_EOF: u64 = 0;
const OPCODE_UINT: u64 = 2;
const OPCODE_DOUBLE: u64 = 4;
const OPCODE_STRING: u64 = 5;
/// The footer: RDB version (2 bytes) and CRC-64 (8 bytes).
const FOOTER: usize = 10;
/// The most bytes LZF makes of one input byte (a 3-byte back reference of 264).
const LZF_MAX_RATIO: u64 = 88;
/// The characters of a module type name, 6 bits each (Redis' `ModuleTypeNameCharSet`).
const NAME_CHARS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Reads a `DUMP` reply of a Bloom (`MBbloom--`) or cuckoo (`MBbloomCF`) key.
/// `limits` bound the filter as for a file; no filter is allocated beyond
/// what the payload can carry.
pub fn read_dump(payload: &[u8], limits: &Limits) -> Result<AnyFilter, String> {
    let body_len = payload
        .len()
        .checked_sub(FOOTER)
        .filter(|&n| n > 0)
        .ok_or("a DUMP payload too short")?;
    let (body, footer) = payload.split_at(body_len);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if crc64(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err("the DUMP payload's checksum does not match".into());
    }
    let mut r = DumpReader {
        rest: body,
        error: None,
    };
    if r.byte()? != RDB_TYPE_MODULE_2 {
        return Err("the DUMP payload is not a module value".into());
    }
    let id = r.length()?;
    let name = type_name(id);
    let encver = i32::try_from(id & 1023).map_err(|_| "module id")?;
    let bound = Limits {
        max_bytes: limits
            .max_bytes
            .min((payload.len() as u64).saturating_mul(LZF_MAX_RATIO)),
        ..*limits
    };
    let f = match &name {
        b"MBbloom--" => load_module_value(encver, &mut r, &bound).map(AnyFilter::Bloom),
        b"MBbloomCF" => load_module_value(encver, &mut r, &bound).map(AnyFilter::Cuckoo),
        _ => {
            return Err(format!(
                "the DUMP payload holds a value of module type {}, not a filter",
                String::from_utf8_lossy(&name)
            ))
        }
    };
    // The reader's own reason first: the loaders see only that a field is missing.
    let f = match (f, r.error.take()) {
        (Ok(f), None) => f,
        (_, Some(why)) | (Err(why), None) => return Err(format!("a bad DUMP payload: {why}")),
    };
    if r.length()? != OPCODE_EOF || !r.rest.is_empty() {
        return Err("the DUMP payload has more fields than the filter".into());
    }
    Ok(f)
}

/// The 9-character type name of a module type id.
fn type_name(id: u64) -> [u8; 9] {
    let mut name = [0u8; 9];
    for (i, c) in name.iter_mut().enumerate() {
        *c = NAME_CHARS[((id >> (64 - 6 * (i + 1))) & 63) as usize];
    }
    name
}

/// The fields of a DUMP payload's value, as `RedisModule_Load*` reads them.
struct DumpReader<'a> {
    rest: &'a [u8],
    /// Why a field could not be read (the loaders see `None` only).
    error: Option<String>,
}

impl<'a> DumpReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.rest.len() {
            return Err("the DUMP payload ends inside a field".into());
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    /// An RDB length, or the encoding of a special string (`Err` for that in
    /// a plain length).
    fn length_or_encoding(&mut self) -> Result<(u64, bool), String> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => (u64::from(b & 0x3f), false),
            1 => ((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?), false),
            3 => (u64::from(b & 0x3f), true),
            _ if b == 0x80 => {
                let mut w = [0u8; 4];
                w.copy_from_slice(self.take(4)?);
                (u64::from(u32::from_be_bytes(w)), false)
            }
            _ if b == 0x81 => {
                let mut w = [0u8; 8];
                w.copy_from_slice(self.take(8)?);
                (u64::from_be_bytes(w), false)
            }
            _ => return Err(format!("an unknown RDB length byte {b:#x}")),
        })
    }

    fn length(&mut self) -> Result<u64, String> {
        match self.length_or_encoding()? {
            (n, false) => Ok(n),
            _ => Err("an encoded string where a length belongs".into()),
        }
    }

    fn usize_length(&mut self) -> Result<usize, String> {
        usize::try_from(self.length()?).map_err(|_| "a length beyond memory".into())
    }

    fn opcode(&mut self, want: u64) -> Result<(), String> {
        match self.length()? {
            op if op == want => Ok(()),
            op => Err(format!("field opcode {op} where {want} belongs")),
        }
    }

    fn string(&mut self) -> Result<Cow<'a, [u8]>, String> {
        let (n, encoded) = self.length_or_encoding()?;
        if !encoded {
            let n = usize::try_from(n).map_err(|_| "a length beyond memory")?;
            return Ok(Cow::Borrowed(self.take(n)?));
        }
        let int = |b: &[u8]| -> i64 {
            match *b {
                [a] => i64::from(a as i8),
                [a, b] => i64::from(i16::from_le_bytes([a, b])),
                [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
                _ => 0,
            }
        };
        match n {
            0 => Ok(Cow::Owned(int(self.take(1)?).to_string().into_bytes())),
            1 => Ok(Cow::Owned(int(self.take(2)?).to_string().into_bytes())),
            2 => Ok(Cow::Owned(int(self.take(4)?).to_string().into_bytes())),
            3 => {
                let clen = self.usize_length()?;
                let len = self.usize_length()?;
                let input = self.take(clen)?;
                if len == 0 || len as u64 > (clen as u64).saturating_mul(LZF_MAX_RATIO) {
                    return Err("an LZF string of an impossible length".into());
                }
                lzf_decompress(input, len).map(Cow::Owned)
            }
            e => Err(format!("an unknown RDB string encoding {e}")),
        }
    }

    fn fail<T>(&mut self, r: Result<T, String>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }
}

impl<'a> RdbRead for DumpReader<'a> {
    type Buf = Cow<'a, [u8]>;
    fn unsigned(&mut self) -> Option<u64> {
        let r = self.opcode(OPCODE_UINT).and_then(|()| self.length());
        self.fail(r)
    }
    fn double(&mut self) -> Option<f64> {
        let r = self.opcode(OPCODE_DOUBLE).and_then(|()| {
            let mut w = [0u8; 8];
            w.copy_from_slice(self.take(8)?);
            Ok(f64::from_le_bytes(w))
        });
        self.fail(r)
    }
    fn buffer(&mut self) -> Option<Cow<'a, [u8]>> {
        let r = self.opcode(OPCODE_STRING).and_then(|()| self.string());
        self.fail(r)
    }
}

/// LZF decompression (liblzf's `lzf_decompress`, which Redis compresses RDB
/// strings with) into exactly `len` bytes.
fn lzf_decompress(input: &[u8], len: usize) -> Result<Vec<u8>, String> {
    let bad = || "corrupt LZF data".to_string();
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| "cannot allocate an LZF string")?;
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let lit = input.get(i..i + run).ok_or_else(bad)?;
            if out.len() + run > len {
                return Err(bad());
            }
            out.extend_from_slice(lit);
            i += run;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += usize::from(*input.get(i).ok_or_else(bad)?);
                i += 1;
            }
            let low = usize::from(*input.get(i).ok_or_else(bad)?);
            i += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            let from = out.len().checked_sub(back).ok_or_else(bad)?;
            if out.len() + n + 2 > len {
                return Err(bad());
            }
            for k in 0..n + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
    }
    if out.len() != len {
        return Err(bad());
    }
    Ok(out)
}

/// CRC-64 as Redis computes it (`crc64.c`: the Jones polynomial, reflected,
/// initial value 0, no final XOR).
pub fn crc64(data: &[u8]) -> u64 {
    const TABLE: [u64; 256] = {
        let mut t = [0u64; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u64;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x95ac_9329_ac4b_c9b5
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    let mut crc = 0u64;
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
#[path = "tests/restore.rs"]
mod tests;
