//! Reading a filter file from a Python binary file object chunk by chunk
//! (`ferrobloom.load`, `from_bytes(file)`): each data chunk is read straight
//! into the filter's memory, a block at a time, so the file's bytes are never
//! held whole beside the filter. The checks are `ferrobloom_core::file::read`'s
//! (docs/clients.md, "File format"), made in stream order: the framing, the
//! header (`Payload::data_lengths`) and the file's exact length against the
//! header, all before the filter is allocated (so never more than the file
//! carries), then every chunk's iterator and length as it arrives, and the
//! checksum at the end (a mismatch drops the filter and raises).
//!
//! A file object that cannot tell its length (`seek`) is read whole and given
//! to `file::read`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::format_error;
use ferrobloom_core::bloom::SCANDUMP_CHUNK;
use ferrobloom_core::cuckoo::WALK_FLAG;
use ferrobloom_core::dump::{Kind, Scandump, LOAD_LIMITS};
use ferrobloom_core::file::{
    AnyFilter, CHECKSUM, CHUNK_PREFIX, MAGIC, MAX_CHUNK, PREAMBLE, VERSION,
};
use ferrobloom_core::payload::{HeaderFormat, Payload};
use xxhash_rust::xxh3::Xxh3;

/// Bytes asked of the file object at a time.
const BLOCK: usize = 1 << 20;

/// Why a read failed: the file object raised, or the bytes are not a filter.
enum Fail {
    Py(PyErr),
    Format(String),
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Fail::Py(e)
    }
}

impl From<String> for Fail {
    fn from(e: String) -> Self {
        Fail::Format(e)
    }
}

impl From<&str> for Fail {
    fn from(e: &str) -> Self {
        Fail::Format(e.to_string())
    }
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Py(e) => e,
            Fail::Format(s) => format_error(s),
        }
    }
}

/// The file object, with what it has given so far hashed.
struct Source<'py> {
    f: Bound<'py, PyAny>,
    hash: Xxh3,
}

impl Source<'_> {
    /// Fills `dst` from the file (several `read` calls of at most [`BLOCK`]);
    /// the end of the file first is a truncated file.
    fn fill(&mut self, dst: &mut [u8], hashed: bool) -> Result<(), Fail> {
        let mut at = 0;
        while at < dst.len() {
            let want = (dst.len() - at).min(BLOCK);
            let got = self.f.call_method1("read", (want,))?;
            let got = got.downcast::<PyBytes>().map_err(|_| {
                Fail::Py(pyo3::exceptions::PyTypeError::new_err(
                    "read() must return bytes (a binary file)",
                ))
            })?;
            let b = got.as_bytes();
            if b.is_empty() {
                return Err("truncated file".into());
            }
            let end = at + b.len().min(dst.len() - at);
            dst[at..end].copy_from_slice(&b[..end - at]);
            if b.len() > end - at {
                return Err("read() returned more bytes than asked".into());
            }
            at = end;
        }
        if hashed {
            self.hash.update(dst);
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Fail> {
        let mut b = [0u8; N];
        self.fill(&mut b, true)?;
        Ok(b)
    }

    /// A chunk's iterator and length.
    fn prefix(&mut self) -> Result<(i64, usize), Fail> {
        let b: [u8; CHUNK_PREFIX] = self.array()?;
        let mut it = [0u8; 8];
        it.copy_from_slice(&b[..8]);
        let mut len = [0u8; 4];
        len.copy_from_slice(&b[8..]);
        Ok((i64::from_le_bytes(it), u32::from_le_bytes(len) as usize))
    }
}

/// The bytes left in the file object from its position, or None when it
/// cannot seek (then the caller reads it whole).
fn remaining(f: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    if !f
        .call_method0("seekable")
        .and_then(|s| s.is_truthy())
        .unwrap_or(false)
    {
        return Ok(None);
    }
    let start: u64 = f.call_method0("tell")?.extract()?;
    let end: u64 = f.call_method1("seek", (0, 2))?.extract()?;
    f.call_method1("seek", (start,))?;
    Ok(Some(end.saturating_sub(start)))
}

/// The checks of `file::parse` on the preamble: the kind and chunk count.
fn preamble(src: &mut Source<'_>, size: u64) -> Result<(Kind, u64), Fail> {
    let p: [u8; PREAMBLE] = if size >= PREAMBLE as u64 {
        src.array()?
    } else {
        let mut b = [0u8; PREAMBLE];
        let n = size as usize;
        src.fill(&mut b[..n], true)?;
        b
    };
    if size < MAGIC.len() as u64 || p[..MAGIC.len()] != MAGIC {
        return Err("not a ferrobloom filter file (bad magic)".into());
    }
    if size < (PREAMBLE + CHECKSUM) as u64 {
        return Err("truncated file (preamble)".into());
    }
    let version = u16::from_le_bytes([p[8], p[9]]);
    if version != VERSION {
        return Err(format!(
            "unsupported file format version {version} (this reader knows version {VERSION})"
        )
        .into());
    }
    let kind = Kind::from_code(p[10]).ok_or_else(|| format!("unknown kind {}", p[10]))?;
    if p[11] != 0 {
        return Err(format!("unknown flags {:#04x}", p[11]).into());
    }
    let count = u64::from(u32::from_le_bytes([p[12], p[13], p[14], p[15]]));
    if count == 0 {
        return Err("no chunks (the header is missing)".into());
    }
    Ok((kind, count))
}

/// Reads a filter of kind `T` whose preamble (`count` chunks) was read.
fn body<T: Payload>(src: &mut Source<'_>, size: u64, count: u64) -> Result<T, Fail> {
    let body = size - (PREAMBLE + CHECKSUM) as u64;
    let (first, hlen) = src.prefix()?;
    if hlen > MAX_CHUNK || (CHUNK_PREFIX + hlen) as u64 > body {
        return Err("chunk 1 runs past the end of the file".into());
    }
    if first != 1 {
        return Err(format!("the first chunk is not a header (iterator {first}, not 1)").into());
    }
    let mut header = vec![0u8; hlen];
    src.fill(&mut header, true)?;
    let lengths = T::data_lengths(&header, &LOAD_LIMITS, HeaderFormat::Any)
        .map_err(|e| format!("invalid header: {e}"))?;
    // The data chunks the header describes, and the file's exact length with
    // them (a final `(0, "")` chunk may follow, as `load_chunks` takes).
    let mut pieces: u64 = 0;
    let mut expect: u64 = (CHUNK_PREFIX + hlen) as u64;
    for len in &lengths {
        let n = len.div_ceil(SCANDUMP_CHUNK);
        pieces = pieces.saturating_add(n);
        expect = expect
            .saturating_add(n.saturating_mul(CHUNK_PREFIX as u64))
            .saturating_add(*len);
    }
    let trailer = count == pieces.saturating_add(2);
    if trailer {
        expect = expect.saturating_add(CHUNK_PREFIX as u64);
    }
    if count != pieces.saturating_add(1) && !trailer {
        return Err("the chunk count does not match the header".into());
    }
    if expect != body {
        return Err("the file's length does not match the header".into());
    }
    let mut value = T::from_header(&header, &LOAD_LIMITS, HeaderFormat::Any)
        .map_err(|e| format!("invalid header: {e}"))?;
    drop(header);
    let mut failed: Option<Fail> = None;
    let mut at: i64 = 1;
    let mut i = 0;
    let filled = value.fill_chunks(|dst| {
        i += 1;
        let r = (|| {
            let (iter, len) = src.prefix()?;
            at = at.saturating_add(len as i64);
            let walk = iter > 0 && (iter as u64) & WALK_FLAG != 0;
            if (iter != at && !walk) || len == 0 || len != dst.len() {
                return Err(Fail::from(format!(
                    "data chunk {i} has iterator {iter}, expected {at} (chunks missing, reordered or resized)"
                )));
            }
            src.fill(dst, true)
        })();
        r.map_err(|e| {
            failed = Some(e);
            String::new()
        })
    });
    if let Err(e) = filled {
        return Err(failed.unwrap_or(Fail::Format(e)));
    }
    if trailer && src.prefix()? != (0, 0) {
        return Err("more data chunks than the header describes".into());
    }
    let digest = src.hash.digest();
    let mut stored = [0u8; CHECKSUM];
    src.fill(&mut stored, false)?;
    if u64::from_le_bytes(stored) != digest {
        return Err("checksum mismatch (the file is truncated or corrupted)".into());
    }
    Ok(value)
}

/// An opened file object: read whole (it cannot seek), or streaming after
/// its preamble (the kind and chunk count).
enum Opened<'py> {
    Whole(Bound<'py, PyBytes>),
    Stream(Box<Source<'py>>, u64, Kind, u64),
}

fn open<'py>(f: &Bound<'py, PyAny>) -> PyResult<Opened<'py>> {
    let Some(size) = remaining(f)? else {
        // Not seekable: read whole (the one case with a copy of the file).
        let data = f.call_method0("read")?;
        return Ok(Opened::Whole(data.downcast_into::<PyBytes>()?));
    };
    let mut src = Box::new(Source {
        f: f.clone(),
        hash: Xxh3::new(),
    });
    let (kind, count) = preamble(&mut src, size)?;
    Ok(Opened::Stream(src, size, kind, count))
}

/// A filter file of kind `T` read from a binary file object (a file of the
/// other kind is refused by name, as `file::read` does).
pub(crate) fn read_as<T: Scandump>(f: &Bound<'_, PyAny>) -> PyResult<T> {
    match open(f)? {
        Opened::Whole(b) => {
            ferrobloom_core::file::read(b.as_bytes(), &LOAD_LIMITS).map_err(format_error)
        }
        Opened::Stream(mut src, size, kind, count) => {
            if kind != T::KIND {
                return Err(format_error(format!(
                    "the file holds a {} filter, not a {} filter",
                    kind.prefix(),
                    T::KIND.prefix()
                )));
            }
            Ok(body(&mut src, size, count)?)
        }
    }
}

/// A filter file of either kind read from a binary file object.
pub(crate) fn read_any(f: &Bound<'_, PyAny>) -> PyResult<AnyFilter> {
    match open(f)? {
        Opened::Whole(b) => {
            ferrobloom_core::file::read_any(b.as_bytes(), &LOAD_LIMITS).map_err(format_error)
        }
        Opened::Stream(mut src, size, kind, count) => Ok(match kind {
            Kind::Bloom => AnyFilter::Bloom(body(&mut src, size, count)?),
            Kind::Cuckoo => AnyFilter::Cuckoo(body(&mut src, size, count)?),
        }),
    }
}
