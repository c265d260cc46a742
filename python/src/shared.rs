//! What `BloomFilter` and `CuckooFilter` do alike, written once over the
//! core's [`Scandump`] (both filter types implement it): the filter's lock,
//! the file format (`to_bytes` / `from_bytes`), `SCANDUMP` replies, loading
//! SCANDUMP chunks (`from_chunks`) and pickling. The file work and chunk
//! loading run without the GIL.
//!
//! **The lock rule.** A filter's lock is a reader-writer lock: lookups share
//! it (two threads looking up one filter run in parallel), writes take it
//! alone. No Python code runs while it is held: items are hashed or encoded
//! (which may call an `int` subclass's `__repr__`) before it is taken, and no
//! Python object that the garbage collector tracks is created and no
//! reference dropped under it (either may run a finalizer). A batch takes it
//! only after releasing the GIL and drops it before taking the GIL back; a
//! call on one item holds the GIL while it waits for it. So no holder of the
//! lock ever waits for the GIL, and an item's own code may use the filter.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};

use crate::cmd::info::{InfoContext, InfoField, InfoValue};
use crate::{format_error, new_bytes, write_error};
use ferrobloom_core::dump::{load_chunks, Scandump, LOAD_LIMITS};

/// The filter, locked for a lookup (a panic in an earlier call does not lock
/// it out).
pub(crate) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|p| p.into_inner())
}

/// The filter, locked for a write.
pub(crate) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|p| p.into_inner())
}

/// The filter file format of the locked filter (written without the GIL).
pub(crate) fn to_bytes<'py, T: Scandump + Send + Sync>(
    py: Python<'py>,
    m: &RwLock<T>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    py.allow_threads(|| ferrobloom_core::file::write(&*read(m), &mut out))
        .map_err(|s| write_error(&s))?;
    new_bytes(py, &out)
}

/// What `from_bytes` was given.
pub(crate) enum Source<'a> {
    /// Bytes: a `bytes` object as it is, a `bytearray` or `memoryview` copied
    /// (another thread could change it while the GIL is released).
    Bytes(Cow<'a, [u8]>),
    /// A binary file object, read chunk by chunk (`stream.rs`).
    File,
}

/// Tells what `from_bytes` was given: bytes-like, a binary file object, or
/// else a TypeError (a text file object too, whose `read()` would decode the
/// file's bytes as text).
pub(crate) fn source<'a>(data: &'a Bound<'_, PyAny>) -> PyResult<Source<'a>> {
    if let Ok(b) = data.downcast::<PyBytes>() {
        return Ok(Source::Bytes(Cow::Borrowed(b.as_bytes())));
    }
    if let Ok(b) = data.downcast::<PyByteArray>() {
        return Ok(Source::Bytes(Cow::Owned(b.to_vec())));
    }
    if data.is_instance_of::<PyMemoryView>() {
        let b = data.call_method0("tobytes")?;
        let b = b.downcast::<PyBytes>()?;
        return Ok(Source::Bytes(Cow::Owned(b.as_bytes().to_vec())));
    }
    if data.hasattr("read")? {
        let text = data.py().import("io")?.getattr("TextIOBase")?;
        if data.is_instance(&text)? {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "expected a binary file object (open(path, \"rb\")), not a text file",
            ));
        }
        return Ok(Source::File);
    }
    Err(not_bytes(data))
}

/// Reads the file format from bytes (without the GIL) or from a binary file
/// object (chunk by chunk, `stream.rs`); a file of the other kind is refused
/// with FormatError.
pub(crate) fn from_bytes<T: Scandump + Send>(data: &Bound<'_, PyAny>) -> PyResult<T> {
    match source(data)? {
        Source::Bytes(bytes) => data
            .py()
            .allow_threads(|| ferrobloom_core::file::read(&bytes, &LOAD_LIMITS))
            .map_err(format_error),
        Source::File => crate::stream::read_as(data),
    }
}

/// The TypeError for a `from_bytes` argument that is neither bytes nor a file.
pub(crate) fn not_bytes(data: &Bound<'_, PyAny>) -> PyErr {
    let t = data
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    pyo3::exceptions::PyTypeError::new_err(format!(
        "expected bytes, bytearray, memoryview or a binary file object, not {t}"
    ))
}

/// `SCANDUMP key iter`'s reply for the filter: `(0, b"")` past the end (a
/// bytes object, which the garbage collector does not track, is made under
/// the lock; the tuple after it).
pub(crate) fn scandump<'py, T: Scandump>(
    py: Python<'py>,
    m: &RwLock<T>,
    iter: i64,
) -> PyResult<(i64, Bound<'py, PyBytes>)> {
    let f = read(m);
    Ok(match f.scandump(iter) {
        Some((n, d)) => (n, new_bytes(py, &d)?),
        None => (0, new_bytes(py, b"")?),
    })
}

/// A filter rebuilt from SCANDUMP replies in order (loaded without the GIL),
/// every chunk checked against the header before allocating.
pub(crate) fn from_chunks<T: Scandump + Send>(
    py: Python<'_>,
    chunks: &[(i64, Vec<u8>)],
) -> PyResult<T> {
    let refs: Vec<(i64, &[u8])> = chunks.iter().map(|(i, d)| (*i, &d[..])).collect();
    py.allow_threads(|| load_chunks(&refs, &LOAD_LIMITS))
        .map_err(format_error)
}

/// `__reduce__`'s value: `ferrobloom.from_bytes(<the file format>)`.
pub(crate) fn reduce<'py, T: Scandump + Send + Sync>(
    py: Python<'py>,
    m: &RwLock<T>,
) -> PyResult<(PyObject, (Bound<'py, PyBytes>,))> {
    let load = py.import("ferrobloom")?.getattr("from_bytes")?.unbind();
    Ok((load, (to_bytes(py, m)?,)))
}

/// An INFO command's default reply as a dict (`BF.INFO` / `CF.INFO` under the
/// server's names), from the command layer's INFO table: the values read
/// under one lookup lock, the dict made after it is released.
pub(crate) fn info_dict<'py, F>(
    py: Python<'py>,
    fields: &[InfoField<F>],
    m: &RwLock<F>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let cx = InfoContext {
        clock: &crate::now_ms,
        limits: ferrobloom_core::api::SERVER_DEFAULT_LIMITS,
    };
    let values: Vec<(String, InfoValue)> = {
        let f = read(m);
        fields
            .iter()
            .filter(|x| x.default)
            .map(|field| {
                let label = field.label.to_string_lossy().into_owned();
                (label, (field.value)(&f, &cx))
            })
            .collect()
    };
    let d = pyo3::types::PyDict::new(py);
    for (label, value) in values {
        match value {
            InfoValue::Count(n) => d.set_item(label, n)?,
            InfoValue::Integer(n) => d.set_item(label, n)?,
            InfoValue::Double(x) => d.set_item(label, x)?,
            InfoValue::Null => d.set_item(label, py.None())?,
        }
    }
    Ok(d)
}
