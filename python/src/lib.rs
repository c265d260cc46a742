//! `ferrobloom._ferrobloom`: the native part of the Python package. The filters
//! are `ferrobloom_core`'s, created from the same parameters through the
//! module's own parsers and error catalogue (the `ferrobloom-cmd` crate), so a local filter takes the server's defaults,
//! limits and error texts, and its dump is the server's SCANDUMP byte for byte.
//!
//! Items are encoded as redis-py encodes command arguments (bytes as they
//! are, str as UTF-8, int and float as their `repr`), so a local filter and
//! the server agree on every item a client sends. Bloom batches hash the items
//! straight from Python's buffers under the GIL, then release it while the
//! filter works on each chunk of hashes (prefetching ahead); cuckoo batches
//! copy the items into one buffer and release the GIL while the filter works.
//! Nothing a caller passes makes the native code panic: refusals are
//! `FilterError` (`FormatError` for bad bytes, files and chunks), an
//! allocation the system refuses is `MemoryError` (large buffers are
//! allocated fallibly: [`new_bytes`], `file::write`), and no input reaches a
//! Rust panic (the core's readers refuse what no command creates; the fuzz
//! targets check it), which PyO3 would raise as `PanicException`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};

// The Redis-free command layer the module uses too: its parsers, defaults and
// one error catalogue (`crates/ferrobloom-cmd`), shared rather than copied.
use ferrobloom_cmd as cmd;

mod alloc;
mod bloom;
mod cuckoo;
mod sharded;
mod shared;
mod stream;

/// Zeroed allocations (every filter's bits) are lazily zeroed pages, as on
/// the server (`alloc.rs`).
#[global_allocator]
static ALLOC: alloc::LazyZeroed = alloc::LazyZeroed;

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

/// `bytes` of a copy of `data`, or `MemoryError` when Python cannot allocate
/// them (`PyBytes::new` panics then: a `PanicException`).
pub(crate) fn new_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, data.len(), |b| {
        b.copy_from_slice(data);
        Ok(())
    })
}

/// A refusal of the core's file writer: `MemoryError` when memory ran out,
/// else `FilterError`.
pub(crate) fn write_error(why: &str) -> PyErr {
    if why == ferrobloom_core::file::OUT_OF_MEMORY {
        pyo3::exceptions::PyMemoryError::new_err(why.to_string())
    } else {
        filter_error(why)
    }
}

/// `(chunks, bytes)` a SCANDUMP walk of a filter of `kind` (`"BF"` or
/// `"CF"`) may return after `header`, its first reply
/// (`ferrobloom_core::dump::WalkBudget`; pull stops a walk that goes past
/// it). FormatError for a header that does not load.
#[pyfunction]
fn walk_budget(kind: &str, header: &[u8]) -> PyResult<(u64, u64)> {
    use ferrobloom_core::dump::WalkBudget;
    let b = match kind {
        "BF" => WalkBudget::of::<ferrobloom_core::filter::BloomFilter>(header),
        "CF" => WalkBudget::of::<ferrobloom_core::cuckoo::CuckooFilter>(header),
        _ => return Err(PyValueError::new_err("kind must be \"BF\" or \"CF\"")),
    }
    .map_err(format_error)?;
    Ok((b.chunks, b.bytes))
}

/// Milliseconds since the Unix epoch (windowed filters' clock, as the
/// server's): the core's, which its loaders anchor windowed filters to.
pub(crate) fn now_ms() -> u64 {
    ferrobloom_core::dump::clock_ms()
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

/// What a constructor's parameter must be (a string such as `"1000"` is
/// refused with TypeError, though the server's parser would read it).
#[derive(Clone, Copy)]
pub(crate) enum Param {
    /// An `int` (not `bool`), sent as its decimal value.
    Int,
    /// An `int` or a `float`, sent as its `repr` (a float's shortest form).
    Number,
    /// A `str`.
    Text,
    /// `bytes`, `bytearray` or `memoryview`.
    Bytes,
}

/// A constructor parameter's bytes for the server's parser, after checking
/// its type: `name` must be of the kind `want`.
pub(crate) fn param(name: &str, obj: &Bound<'_, PyAny>, want: Param) -> PyResult<Vec<u8>> {
    let is_int = obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>();
    let ok = match want {
        Param::Int => is_int,
        Param::Number => is_int || obj.is_instance_of::<PyFloat>(),
        Param::Text => obj.is_instance_of::<PyString>(),
        Param::Bytes => {
            obj.is_instance_of::<PyBytes>()
                || obj.is_instance_of::<PyByteArray>()
                || obj.is_instance_of::<PyMemoryView>()
        }
    };
    if !ok {
        let what = match want {
            Param::Int => "an int",
            Param::Number => "an int or a float",
            Param::Text => "a str",
            Param::Bytes => "bytes",
        };
        let t = obj.get_type().name()?;
        return Err(PyTypeError::new_err(format!(
            "{name} must be {what}, not {t}"
        )));
    }
    if is_int {
        // The value of an int subclass (an IntEnum member), not its repr.
        return Ok(obj
            .call_method0("__index__")?
            .repr()?
            .to_cow()?
            .as_bytes()
            .to_vec());
    }
    if obj.is_instance_of::<PyFloat>() {
        let v: f64 = obj.extract()?;
        return Ok(PyFloat::new(obj.py(), v)
            .repr()?
            .to_cow()?
            .as_bytes()
            .to_vec());
    }
    encode(obj)
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

/// Items per chunk of a batch hashed from Python's buffers: 64 KiB of hashes,
/// which stay in the L2 cache beside the filter's lines (chunks of 64 Ki items,
/// 1 MiB of hashes, pushed them out); releasing the GIL once per chunk costs
/// well under 0.1 ns per item.
const HASH_CHUNK: usize = 1 << 12;

/// Hashes one item with `hash`: bytes and str straight from the object's
/// buffer (no copy), anything else through [`encode_into`] into `scratch`.
#[inline]
fn hash_item<H>(
    obj: &Bound<'_, PyAny>,
    hash: &impl Fn(&[u8]) -> H,
    scratch: &mut Vec<u8>,
) -> PyResult<H> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        return Ok(hash(b.as_bytes()));
    }
    if obj.is_instance_of::<PyString>() {
        let mut n: pyo3::ffi::Py_ssize_t = 0;
        // SAFETY: `obj` is a str (checked above) kept alive by the caller; the
        // UTF-8 buffer lives as long as the str and is read before any Python
        // code runs.
        let p = unsafe { pyo3::ffi::PyUnicode_AsUTF8AndSize(obj.as_ptr(), &mut n) };
        if !p.is_null() {
            if let Ok(n) = usize::try_from(n) {
                // SAFETY: `p` (not null) points to the str's `n` UTF-8 bytes,
                // valid while `obj` lives and no Python code runs (as above).
                let s = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
                return Ok(hash(s));
            }
        }
        // Lone surrogates: the exception `encode_into` raises.
        let _ = PyErr::take(obj.py());
    }
    scratch.clear();
    encode_into(obj, scratch)?;
    Ok(hash(scratch))
}

/// One item's hash (bytes and str straight from their buffers), computed
/// before any filter lock is taken: encoding another type may run Python code.
#[inline]
pub(crate) fn hash_one<H>(obj: &Bound<'_, PyAny>, hash: impl Fn(&[u8]) -> H) -> PyResult<H> {
    let mut scratch = Vec::new();
    hash_item(obj, &hash, &mut scratch)
}

/// Hashes a batch of items with `hash` under the GIL, straight from Python's
/// buffers, and hands `f` one chunk of [`HASH_CHUNK`] hashes at a time (`f`
/// releases the GIL for the filter's work); stops when `f` returns false.
/// A list that another thread shortens meanwhile ends where it ends.
pub(crate) fn for_each_hash_chunk<H>(
    items: &Bound<'_, PyAny>,
    hash: impl Fn(&[u8]) -> H,
    mut f: impl FnMut(&[H]) -> PyResult<bool>,
) -> PyResult<()> {
    use pyo3::ffi;
    if items.is_instance_of::<PyString>() || items.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "expected an iterable of items, not a single str or bytes",
        ));
    }
    let py = items.py();
    let mut scratch = Vec::new();
    let mut chunk: Vec<H> = Vec::with_capacity(HASH_CHUNK);
    let is_list = items.is_instance_of::<PyList>();
    if is_list || items.is_instance_of::<PyTuple>() {
        // By index, without the iterator protocol or a reference count per item.
        let mut i: ffi::Py_ssize_t = 0;
        loop {
            // SAFETY: `items` is a list or tuple; GetItem checks the index
            // against the current length and returns a borrowed reference.
            let p = unsafe {
                if is_list {
                    ffi::PyList_GetItem(items.as_ptr(), i)
                } else {
                    ffi::PyTuple_GetItem(items.as_ptr(), i)
                }
            };
            if p.is_null() {
                let _ = PyErr::take(py); // IndexError: the end
                break;
            }
            // SAFETY: `p` is a valid borrowed reference (not null), read while
            // no Python code runs; anything but bytes takes a strong reference
            // first, since encoding it may run Python code.
            let obj = unsafe { pyo3::Borrowed::from_ptr(py, p) };
            chunk.push(match obj.downcast::<PyBytes>() {
                Ok(b) => hash(b.as_bytes()),
                Err(_) => hash_item(&obj.to_owned(), &hash, &mut scratch)?,
            });
            i += 1;
            if chunk.len() == HASH_CHUNK {
                if !f(&chunk)? {
                    return Ok(());
                }
                chunk.clear();
            }
        }
    } else {
        for obj in items.try_iter()? {
            chunk.push(hash_item(&obj?, &hash, &mut scratch)?);
            if chunk.len() == HASH_CHUNK {
                if !f(&chunk)? {
                    return Ok(());
                }
                chunk.clear();
            }
        }
    }
    if !chunk.is_empty() {
        f(&chunk)?;
    }
    Ok(())
}

/// Reads a file of either kind, from bytes or a binary file object (chunk by
/// chunk: `stream.rs`), as the matching Python class.
#[pyfunction]
fn from_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    use ferrobloom_core::dump::LOAD_LIMITS;
    use ferrobloom_core::file::read_any;
    let f = match shared::source(data)? {
        shared::Source::Bytes(bytes) => py
            .allow_threads(|| read_any(&bytes, &LOAD_LIMITS))
            .map_err(format_error)?,
        shared::Source::File => stream::read_any(data)?,
    };
    wrap_any(py, f)
}

/// A filter from a server's `DUMP` reply of a filter key (RedisBloom's or
/// ferrobloom's), as `ferrobloom_core::restore::read_dump` reads it: what
/// pull uses on a server whose SCANDUMP takes no STAMP.
#[pyfunction]
fn from_dump(py: Python<'_>, payload: &[u8]) -> PyResult<PyObject> {
    use ferrobloom_core::dump::LOAD_LIMITS;
    let f = py
        .allow_threads(|| ferrobloom_core::restore::read_dump(payload, &LOAD_LIMITS))
        .map_err(format_error)?;
    wrap_any(py, f)
}

/// A loaded filter of either kind as its Python class.
fn wrap_any(py: Python<'_>, f: ferrobloom_core::file::AnyFilter) -> PyResult<PyObject> {
    use ferrobloom_core::file::AnyFilter;
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
    m.add_function(wrap_pyfunction!(from_dump, m)?)?;
    m.add_class::<sharded::Routed>()?;
    m.add_function(wrap_pyfunction!(sharded::route, m)?)?;
    m.add_function(wrap_pyfunction!(sharded::shard_of_item, m)?)?;
    m.add_function(wrap_pyfunction!(walk_budget, m)?)?;
    m.add("FILE_FORMAT_VERSION", ferrobloom_core::file::VERSION)?;
    // The creation options a client may send (keyword, constructor keyword or
    // None), from the command layer's option tables: tests check every binding
    // against them. Options only a primary sends (`SHAPES`) are not a binding's.
    let bf: Vec<(String, Option<&str>)> = cmd::options::BF_OPTIONS
        .iter()
        .filter(|o| o.reserve && o.documented)
        .map(|o| (o.token.to_string_lossy().into_owned(), o.binding))
        .collect();
    m.add("BF_RESERVE_OPTIONS", bf)?;
    let cf: Vec<(String, Option<&str>)> = cmd::cf_options::CF_OPTIONS
        .iter()
        .filter(|o| o.takes(cmd::cf_options::CfCommand::Reserve))
        .map(|o| (o.token.to_string_lossy().into_owned(), o.binding))
        .collect();
    m.add("CF_RESERVE_OPTIONS", cf)?;
    // The server's texts for a missing key and a key of another type (pull, push).
    m.add("NOT_FOUND", crate::cmd::errors::NOT_FOUND)?;
    m.add("WRONG_TYPE", crate::cmd::errors::WRONG_TYPE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
