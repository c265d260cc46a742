//! Reading a filter file from a Python binary file object chunk by chunk
//! (`ferrobloom.load`, `from_bytes(file)`): a `std::io::Read` over the file
//! object, 1 MiB per `read()` call, given to the core's streaming reader
//! (`ferrobloom_core::file::read_from`), which makes every check of the
//! format (docs/clients.md, "File format"). A file object that can seek
//! tells its length from its position: then the data chunks are read
//! straight into the filter, which is allocated once the header's sizes
//! were checked against that length; one that cannot is read to its end,
//! its chunks held until the checksum matched.

use std::io;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::format_error;
use ferrobloom_core::dump::{Scandump, LOAD_LIMITS};
use ferrobloom_core::file::{self, AnyFilter};

/// Bytes asked of the file object at a time.
const BLOCK: usize = 1 << 20;

/// The file object as a reader; what it raised is kept for the caller.
struct PyReader<'py> {
    f: Bound<'py, PyAny>,
    raised: Option<PyErr>,
}

impl PyReader<'_> {
    fn read_into(&self, buf: &mut [u8]) -> PyResult<usize> {
        let want = buf.len().min(BLOCK);
        let got = self.f.call_method1("read", (want,))?;
        let got = got.downcast::<PyBytes>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("read() must return bytes (a binary file)")
        })?;
        let b = got.as_bytes();
        let Some(dst) = buf.get_mut(..b.len()).filter(|_| b.len() <= want) else {
            return Err(format_error("read() returned more bytes than asked"));
        };
        dst.copy_from_slice(b);
        Ok(b.len())
    }
}

impl io::Read for PyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.read_into(buf).map_err(|e| {
            self.raised = Some(e);
            io::Error::other("the file object raised")
        })
    }
}

/// The bytes left in the file object from its position, or None when it
/// cannot seek.
fn remaining(f: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
    if !f
        .call_method0("seekable")
        .and_then(|s| s.is_truthy())
        .unwrap_or(false)
    {
        return Ok(None);
    }
    // What the file object raises is raised as it was; a position that is
    // not a byte offset (negative, past 2^64, not an int) is a file object
    // that does not behave as a file: FormatError, as bad bytes are.
    let offset = |v: Bound<'_, PyAny>, what: &str| -> PyResult<u64> {
        v.extract::<u64>()
            .map_err(|_| format_error(format!("the file object's {what} is not a byte offset")))
    };
    let start = offset(f.call_method0("tell")?, "tell()")?;
    let end = offset(f.call_method1("seek", (0, 2))?, "seek(0, 2)")?;
    f.call_method1("seek", (start,))?;
    Ok(Some(end.saturating_sub(start)))
}

/// Runs a core reader over the file object; the file object's own exception
/// is raised as it was, a refusal of the bytes as FormatError.
fn with_reader<T>(
    f: &Bound<'_, PyAny>,
    read: impl FnOnce(&mut PyReader<'_>, Option<u64>) -> Result<T, String>,
) -> PyResult<T> {
    let len = remaining(f)?;
    let mut r = PyReader {
        f: f.clone(),
        raised: None,
    };
    let got = read(&mut r, len);
    match r.raised.take() {
        Some(e) => Err(e),
        None => got.map_err(format_error),
    }
}

/// A filter file of kind `T` read from a binary file object (a file of the
/// other kind is refused by name, as `file::read` does).
pub(crate) fn read_as<T: Scandump>(f: &Bound<'_, PyAny>) -> PyResult<T> {
    with_reader(f, |r, len| file::read_from(r, len, &LOAD_LIMITS))
}

/// A filter file of either kind read from a binary file object.
pub(crate) fn read_any(f: &Bound<'_, PyAny>) -> PyResult<AnyFilter> {
    with_reader(f, |r, len| file::read_any_from(r, len, &LOAD_LIMITS))
}
