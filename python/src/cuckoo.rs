//! `ferrobloom.CuckooFilter`: a `CF.*` filter in-process.

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::cmd::create;
use crate::cmd::errors::{self as e, Op};
use crate::shared::{self, lock};
use crate::{encode, filter_error, Items};
use ferrobloom_core::cuckoo::{CuckooError, CuckooFilter as Core};
use ferrobloom_core::dump::{cuckoo_insert_items, SERVER_DEFAULT_LIMITS};

/// A cuckoo filter (ferrobloom's layout or RedisBloom's).
#[pyclass(module = "ferrobloom._ferrobloom")]
pub struct CuckooFilter {
    /// Locked for each call (batches run without the GIL).
    f: Mutex<Core>,
}

impl CuckooFilter {
    pub(crate) fn wrap(f: Core) -> Self {
        CuckooFilter { f: Mutex::new(f) }
    }

    /// The filter, locked (a panic in an earlier call does not lock it out).
    fn g(&self) -> MutexGuard<'_, Core> {
        lock(&self.f)
    }

    /// RedisBloom's per-command check kept for filters of its layout
    /// (`check_expansions` in `crates/ferrobloom/src/redis/cf.rs`).
    fn check_expansions(&self) -> PyResult<()> {
        let max = SERVER_DEFAULT_LIMITS.max_filters;
        let f = self.g();
        if f.is_redisbloom() && f.num_filters() as u64 >= u64::from(max) {
            return Err(filter_error(e::CF_MAX_EXPANSIONS));
        }
        Ok(())
    }

    /// `CF.INSERT`'s (`nx`: `CF.INSERTNX`'s) result per item: the items are
    /// copied into one buffer under the GIL, then inserted without it.
    fn insert_batch(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        nx: bool,
    ) -> PyResult<Vec<Result<bool, CuckooError>>> {
        let items = Items::collect(items)?;
        self.check_expansions()?;
        let m = &self.f;
        Ok(py.allow_threads(|| {
            cuckoo_insert_items(&mut lock(m), items.iter(), nx, &SERVER_DEFAULT_LIMITS)
        }))
    }
}

fn insert_error(err: &CuckooError) -> PyErr {
    filter_error(e::cuckoo(Op::Insert, err).text())
}

#[pymethods]
impl CuckooFilter {
    /// `CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e]
    /// [ERROR rate] [LAYOUT layout]`, with the server's defaults, limits and
    /// error texts.
    #[new]
    #[pyo3(signature = (capacity, *, bucket_size=None, max_iterations=None, expansion=None,
        error_rate=None, layout=None))]
    fn new(
        capacity: &Bound<'_, PyAny>,
        bucket_size: Option<&Bound<'_, PyAny>>,
        max_iterations: Option<&Bound<'_, PyAny>>,
        expansion: Option<&Bound<'_, PyAny>>,
        error_rate: Option<&Bound<'_, PyAny>>,
        layout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut args: Vec<Vec<u8>> = vec![encode(capacity)?];
        for (name, v) in [
            (&b"BUCKETSIZE"[..], bucket_size),
            (b"MAXITERATIONS", max_iterations),
            (b"EXPANSION", expansion),
            (b"ERROR", error_rate),
            (b"LAYOUT", layout),
        ] {
            if let Some(v) = v {
                args.push(name.to_vec());
                args.push(encode(v)?);
            }
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let f = create::reserve_cuckoo(&refs).map_err(|c| filter_error(c.text()))?;
        Ok(CuckooFilter::wrap(f))
    }

    /// `CF.ADD`: True; raises FilterError with the server's text when there is
    /// no room (`Filter is full`, `Maximum expansions reached`).
    fn add(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.check_expansions()?;
        let h = self.g().hash(&encode(item)?);
        let l = SERVER_DEFAULT_LIMITS;
        self.g()
            .insert(&h, l.max_filters, l.max_bytes)
            .map(|()| true)
            .map_err(|err| insert_error(&err))
    }

    /// `CF.ADDNX`: True if added, False if the item tests present.
    fn add_nx(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.check_expansions()?;
        let h = self.g().hash(&encode(item)?);
        let l = SERVER_DEFAULT_LIMITS;
        self.g()
            .insert_unique(&h, l.max_filters, l.max_bytes)
            .map_err(|err| insert_error(&err))
    }

    /// `CF.INSERT`'s (`nx=True`: `CF.INSERTNX`'s) RESP2 reply: per item 1
    /// added, 0 already present (NX), -1 no room. The GIL is released meanwhile.
    #[pyo3(signature = (items, *, nx=false))]
    fn insert(&self, py: Python<'_>, items: &Bound<'_, PyAny>, nx: bool) -> PyResult<Vec<i64>> {
        Ok(self
            .insert_batch(py, items, nx)?
            .into_iter()
            .map(|r| match r {
                Ok(true) => 1,
                Ok(false) => 0,
                Err(_) => -1,
            })
            .collect())
    }

    /// Adds every item (set.update); raises FilterError at the first that finds no room.
    fn update(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<()> {
        match self
            .insert_batch(py, items, false)?
            .into_iter()
            .find_map(Result::err)
        {
            Some(err) => Err(insert_error(&err)),
            None => Ok(()),
        }
    }

    /// `CF.EXISTS`.
    fn exists(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok({
            let f = self.g();
            f.contains(&f.hash(&encode(item)?))
        })
    }

    fn __contains__(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.exists(item)
    }

    /// `CF.MEXISTS`'s reply (the GIL is released meanwhile).
    fn contains_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let items = Items::collect(items)?;
        let m = &self.f;
        Ok(py.allow_threads(|| lock(m).contains_items(items.iter())))
    }

    /// `CF.COUNT`: how many times the item's fingerprint is stored (an upper bound).
    fn count(&self, item: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok({
            let f = self.g();
            f.count(&f.hash(&encode(item)?))
        })
    }

    /// `CF.DEL`: removes one copy; False if the item is not found.
    fn delete(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let h = self.g().hash(&encode(item)?);
        Ok(self.g().delete(&h))
    }

    /// Items inserted minus items deleted (`CF.INFO` `Number of items inserted`).
    fn __len__(&self) -> usize {
        self.g().num_items() as usize
    }

    /// `CF.INFO`'s eight fields, under the server's names.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        shared::info_dict(py, crate::cmd::info::CF_INFO, &*self.g())
    }

    /// The layout: `ferrobloom` or `redisbloom`.
    #[getter]
    fn layout(&self) -> &'static str {
        if self.g().is_redisbloom() {
            "redisbloom"
        } else {
            "ferrobloom"
        }
    }

    /// The error rate given at creation (None: 8-bit fingerprints).
    #[getter]
    fn error_rate(&self) -> Option<f64> {
        self.g().error_rate()
    }

    /// Fingerprint width in bits.
    #[getter]
    fn fingerprint_bits(&self) -> u8 {
        self.g().fp_bits()
    }

    /// Raises FilterError, with the server's text, when a server with these
    /// limits (`bf.max-filter-memory`, `bf.cf-max-expansions`; None: the
    /// default) would refuse this filter.
    #[pyo3(signature = (max_bytes=None, max_filters=None))]
    fn check_limits(&self, max_bytes: Option<u64>, max_filters: Option<u32>) -> PyResult<()> {
        let d = SERVER_DEFAULT_LIMITS;
        let f = self.g();
        Core::header_table_bytes(
            &f.encode_header(),
            max_bytes.unwrap_or(d.max_bytes),
            max_filters.unwrap_or(d.max_filters),
            None,
        )
        .map(|_| ())
        .map_err(|err| insert_error(&err))
    }

    /// A deep copy.
    fn copy(&self) -> PyResult<Self> {
        self.g()
            .try_clone(u64::MAX)
            .map(CuckooFilter::wrap)
            .map_err(|err| filter_error(e::cuckoo(Op::Create, &err).text()))
    }

    fn __copy__(&self) -> PyResult<Self> {
        self.copy()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.copy()
    }

    /// The filter file format (docs/clients.md, "File format").
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        shared::to_bytes(py, &self.f)
    }

    /// Reads the file format; a file of a Bloom filter is refused.
    #[staticmethod]
    fn from_bytes(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        shared::from_bytes(data).map(CuckooFilter::wrap)
    }

    /// `CF.SCANDUMP key iter`'s reply: `(1, header)` for 0, then each data
    /// chunk with the iterator to ask for next; `(0, b"")` past the end.
    fn scandump<'py>(&self, py: Python<'py>, iter: i64) -> PyResult<(i64, Bound<'py, PyBytes>)> {
        shared::scandump(py, &*self.g(), iter)
    }

    /// Rebuilds a filter from its SCANDUMP replies in order, checking every
    /// chunk against the header before allocating.
    #[staticmethod]
    fn from_chunks(py: Python<'_>, chunks: Vec<(i64, Vec<u8>)>) -> PyResult<Self> {
        shared::from_chunks(py, &chunks).map(CuckooFilter::wrap)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(PyObject, (Bound<'py, PyBytes>,))> {
        shared::reduce(py, &self.f)
    }

    fn __repr__(&self) -> String {
        let f = self.g();
        let layout = if f.is_redisbloom() {
            "redisbloom"
        } else {
            "ferrobloom"
        };
        format!(
            "CuckooFilter(buckets={}, bucket_size={}, filters={}, layout='{layout}', items={})",
            f.base_buckets(),
            f.bucket_size(),
            f.num_filters(),
            f.num_items()
        )
    }
}
