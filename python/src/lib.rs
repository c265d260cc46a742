//! `ferrobloom._ferrobloom`: the native part of the Python package. The filters
//! are `ferrobloom_core`'s, created from the same parameters through the
//! module's own parsers and error catalogue (`src/cmd`, compiled in here as
//! well: it needs no Redis), so a local filter takes the server's defaults,
//! limits and error texts, and its dump is the server's SCANDUMP byte for byte.
//!
//! Items are encoded as redis-py encodes command arguments (bytes as they
//! are, str as UTF-8, int and float as their `repr`), so a local filter and
//! the server agree on every item a client sends. Batches copy the items into
//! one buffer and release the GIL while the filter works on them. Panics
//! never cross into Python as a crash: PyO3 turns them into exceptions.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};

// The module's Redis-free command layer: its parsers and its one error
// catalogue (`src/cmd/errors.rs`), shared rather than copied.
#[allow(dead_code, unused_imports, clippy::all)]
#[path = "../../src/cmd/mod.rs"]
mod cmd;

mod bloom;
mod cuckoo;

pyo3::create_exception!(
    ferrobloom,
    FilterError,
    PyValueError,
    "A refused operation, with the server's error text (e.g. `ERR bad error rate`)."
);
pyo3::create_exception!(
    ferrobloom,
    FormatError,
    FilterError,
    "Bytes, a file or chunks that are not a valid filter (truncated, corrupted, another kind)."
);

pub(crate) fn filter_error(text: &str) -> PyErr {
    FilterError::new_err(text.to_string())
}

pub(crate) fn format_error(text: impl Into<String>) -> PyErr {
    FormatError::new_err(text.into())
}

/// Milliseconds since the Unix epoch (windowed filters' clock, as the server's).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Appends an argument's bytes as redis-py sends it (`Encoder.encode`).
pub(crate) fn encode_into(obj: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        out.extend_from_slice(b.as_bytes());
    } else if let Ok(s) = obj.downcast::<PyString>() {
        out.extend_from_slice(s.to_cow()?.as_bytes());
    } else if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "Invalid input of type: 'bool'. Convert to a bytes, string, int or float first.",
        ));
    } else if obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>() {
        out.extend_from_slice(obj.repr()?.to_cow()?.as_bytes());
    } else if let Ok(b) = obj.downcast::<PyByteArray>() {
        out.extend_from_slice(&b.to_vec());
    } else if obj.is_instance_of::<PyMemoryView>() {
        let b: Vec<u8> = obj.call_method0("tobytes")?.extract()?;
        out.extend_from_slice(&b);
    } else {
        let t = obj.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "Invalid input of type: '{t}'. Convert to a bytes, string, int or float first."
        )));
    }
    Ok(())
}

/// One argument's bytes.
pub(crate) fn encode(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut v = Vec::new();
    encode_into(obj, &mut v)?;
    Ok(v)
}

/// A batch of items in one buffer: item `i` is `buf[ends[i-1]..ends[i]]`.
pub(crate) struct Items {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Items {
    pub(crate) fn collect(items: &Bound<'_, PyAny>) -> PyResult<Self> {
        if items.is_instance_of::<PyString>() || items.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(
                "expected an iterable of items, not a single str or bytes",
            ));
        }
        let mut it = Items {
            buf: Vec::new(),
            ends: Vec::new(),
        };
        // Lists and tuples (the common case) without the iterator protocol.
        if let Ok(list) = items.downcast::<PyList>() {
            it.reserve(list.len());
            for obj in list.iter() {
                it.push(&obj)?;
            }
        } else if let Ok(tuple) = items.downcast::<PyTuple>() {
            it.reserve(tuple.len());
            for obj in tuple.iter() {
                it.push(&obj)?;
            }
        } else {
            for obj in items.try_iter()? {
                it.push(&obj?)?;
            }
        }
        Ok(it)
    }

    fn reserve(&mut self, n: usize) {
        self.ends.reserve(n);
        self.buf.reserve(n.saturating_mul(16));
    }

    #[inline]
    fn push(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        encode_into(obj, &mut self.buf)?;
        self.ends.push(self.buf.len());
        Ok(())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = &self.buf[start..end];
            start = end;
            s
        })
    }
}

/// Reads a file of either kind as the matching Python class.
#[pyfunction]
fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<PyObject> {
    use ferrobloom_core::dump::LOAD_LIMITS;
    use ferrobloom_core::file::{read_any, AnyFilter};
    let f = py
        .allow_threads(|| read_any(data, &LOAD_LIMITS))
        .map_err(format_error)?;
    Ok(match f {
        AnyFilter::Bloom(f) => bloom::BloomFilter::wrap(f)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        AnyFilter::Cuckoo(f) => cuckoo::CuckooFilter::wrap(f)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
    })
}

/// The kind (`"BF"` or `"CF"`) of a filter file's bytes, after checking its framing.
#[pyfunction]
fn file_kind(data: &[u8]) -> PyResult<&'static str> {
    ferrobloom_core::file::parse(data)
        .map(|p| p.kind.prefix())
        .map_err(format_error)
}

#[pymodule]
fn _ferrobloom(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<bloom::BloomFilter>()?;
    m.add_class::<cuckoo::CuckooFilter>()?;
    m.add("FilterError", m.py().get_type::<FilterError>())?;
    m.add("FormatError", m.py().get_type::<FormatError>())?;
    m.add_function(wrap_pyfunction!(from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(file_kind, m)?)?;
    m.add("FILE_FORMAT_VERSION", ferrobloom_core::file::VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
