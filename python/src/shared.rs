//! What `BloomFilter` and `CuckooFilter` do alike, written once over the
//! core's [`Scandump`] (both filter types implement it): the filter's lock,
//! the file format (`to_bytes` / `from_bytes`), `SCANDUMP` replies, loading
//! SCANDUMP chunks (`from_chunks`) and pickling. The file work and chunk
//! loading run without the GIL.

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::cmd::info::{InfoContext, InfoField, InfoValue};
use crate::{format_error, new_bytes, write_error};
use ferrobloom_core::dump::{load_chunks, Scandump, LOAD_LIMITS};

/// The filter, locked (a panic in an earlier call does not lock it out).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The filter file format of the locked filter (written without the GIL).
pub(crate) fn to_bytes<'py, T: Scandump + Send>(
    py: Python<'py>,
    m: &Mutex<T>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    py.allow_threads(|| ferrobloom_core::file::write(&*lock(m), &mut out))
        .map_err(|s| write_error(&s))?;
    new_bytes(py, &out)
}

/// Reads the file format from bytes (without the GIL) or from a binary file
/// object (chunk by chunk, `stream.rs`); a file of the other kind is refused
/// with FormatError.
pub(crate) fn from_bytes<T: Scandump + Send>(data: &Bound<'_, PyAny>) -> PyResult<T> {
    match data.downcast::<PyBytes>() {
        Ok(b) => {
            let bytes = b.as_bytes();
            data.py()
                .allow_threads(|| ferrobloom_core::file::read(bytes, &LOAD_LIMITS))
                .map_err(format_error)
        }
        Err(_) if data.hasattr("read")? => crate::stream::read_as(data),
        Err(_) => Err(not_bytes(data)),
    }
}

/// The TypeError for a `from_bytes` argument that is neither bytes nor a file.
pub(crate) fn not_bytes(data: &Bound<'_, PyAny>) -> PyErr {
    let t = data
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    pyo3::exceptions::PyTypeError::new_err(format!(
        "expected bytes or a binary file object, not {t}"
    ))
}

/// `SCANDUMP key iter`'s reply for the filter: `(0, b"")` past the end.
pub(crate) fn scandump<'py, T: Scandump>(
    py: Python<'py>,
    f: &T,
    iter: i64,
) -> PyResult<(i64, Bound<'py, PyBytes>)> {
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
pub(crate) fn reduce<'py, T: Scandump + Send>(
    py: Python<'py>,
    m: &Mutex<T>,
) -> PyResult<(PyObject, (Bound<'py, PyBytes>,))> {
    let load = py.import("ferrobloom")?.getattr("from_bytes")?.unbind();
    Ok((load, (to_bytes(py, m)?,)))
}

/// An INFO command's default reply as a dict (`BF.INFO` / `CF.INFO` under the
/// server's names), from the command layer's INFO table.
pub(crate) fn info_dict<'py, F>(
    py: Python<'py>,
    fields: &[InfoField<F>],
    f: &F,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let cx = InfoContext {
        clock: &crate::now_ms,
        limits: ferrobloom_core::api::SERVER_DEFAULT_LIMITS,
    };
    let d = pyo3::types::PyDict::new(py);
    for field in fields.iter().filter(|x| x.default) {
        let label = field.label.to_string_lossy();
        match (field.value)(f, &cx) {
            InfoValue::Count(n) => d.set_item(label, n)?,
            InfoValue::Integer(n) => d.set_item(label, n)?,
            InfoValue::Double(x) => d.set_item(label, x)?,
            InfoValue::Null => d.set_item(label, py.None())?,
        }
    }
    Ok(d)
}
