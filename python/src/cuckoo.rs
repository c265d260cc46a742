//! `ferrobloom.CuckooFilter`: a `CF.*` filter in-process.

use std::sync::{RwLock, RwLockReadGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::cmd::create;
use crate::cmd::errors::{self as e, Op};
use crate::shared::{self, read, write};
use crate::{filter_error, hash_one, param, Items, Param};
use ferrobloom_core::cuckoo::{hash_for, CuckooError, CuckooFilter as Core, CuckooHash};
use ferrobloom_core::dump::{cuckoo_insert_items, SERVER_DEFAULT_LIMITS};

/// A cuckoo filter (ferrobloom's layout or RedisBloom's).
#[pyclass(module = "ferrobloom._ferrobloom", frozen)]
pub struct CuckooFilter {
    /// Shared by lookups, taken alone by writes (`shared.rs`: no Python code
    /// runs while it is held).
    f: RwLock<Core>,
    /// Whether it hashes as RedisBloom (fixed for its life): items are hashed
    /// before the lock is taken.
    rb: bool,
}

/// Why an insert did not happen.
enum Refused {
    /// RedisBloom's per-command check, kept for filters of its layout
    /// (`check_expansions` in `crates/ferrobloom/src/redis/cf.rs`).
    MaxExpansions,
    Insert(CuckooError),
}

impl From<Refused> for PyErr {
    fn from(r: Refused) -> PyErr {
        match r {
            Refused::MaxExpansions => filter_error(e::CF_MAX_EXPANSIONS),
            Refused::Insert(err) => insert_error(&err),
        }
    }
}

/// RedisBloom's check before an insert into a filter of its layout.
fn check_expansions(f: &Core) -> Result<(), Refused> {
    let max = SERVER_DEFAULT_LIMITS.max_filters;
    if f.is_redisbloom() && f.num_filters() as u64 >= u64::from(max) {
        return Err(Refused::MaxExpansions);
    }
    Ok(())
}

impl CuckooFilter {
    pub(crate) fn wrap(f: Core) -> Self {
        CuckooFilter {
            rb: f.is_redisbloom(),
            f: RwLock::new(f),
        }
    }

    /// The filter, locked for a lookup.
    fn g(&self) -> RwLockReadGuard<'_, Core> {
        read(&self.f)
    }

    /// The item's hash, taken before any lock (encoding an `int` subclass
    /// runs its `__repr__`).
    #[inline]
    fn hash(&self, item: &Bound<'_, PyAny>) -> PyResult<CuckooHash> {
        let rb = self.rb;
        hash_one(item, move |b| hash_for(rb, b))
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
        let m = &self.f;
        let r = py.allow_threads(|| {
            let mut f = write(m);
            check_expansions(&f)?;
            Ok(cuckoo_insert_items(
                &mut f,
                items.iter(),
                nx,
                &SERVER_DEFAULT_LIMITS,
            ))
        });
        r.map_err(|r: Refused| r.into())
    }
}

fn insert_error(err: &CuckooError) -> PyErr {
    filter_error(e::cuckoo(Op::Insert, err).text())
}

#[pymethods]
impl CuckooFilter {
    /// `CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e]
    /// [ERROR rate] [LAYOUT layout]`, with the server's defaults, limits and
    /// error texts. The error rate may come second, as `BloomFilter`'s does:
    /// `CuckooFilter(1000, 0.01)` is `CF.RESERVE key 1000 ERROR 0.01`
    /// (fingerprints sized for that rate).
    #[new]
    #[pyo3(signature = (capacity, error_rate=None, *, bucket_size=None, max_iterations=None,
        expansion=None, layout=None))]
    fn new(
        capacity: &Bound<'_, PyAny>,
        error_rate: Option<&Bound<'_, PyAny>>,
        bucket_size: Option<&Bound<'_, PyAny>>,
        max_iterations: Option<&Bound<'_, PyAny>>,
        expansion: Option<&Bound<'_, PyAny>>,
        layout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut args: Vec<Vec<u8>> = vec![param("capacity", capacity, Param::Int)?];
        for (name, token, v, want) in [
            ("bucket_size", &b"BUCKETSIZE"[..], bucket_size, Param::Int),
            (
                "max_iterations",
                b"MAXITERATIONS",
                max_iterations,
                Param::Int,
            ),
            ("expansion", b"EXPANSION", expansion, Param::Int),
            ("error_rate", b"ERROR", error_rate, Param::Number),
            ("layout", b"LAYOUT", layout, Param::Text),
        ] {
            if let Some(v) = v {
                args.push(token.to_vec());
                args.push(param(name, v, want)?);
            }
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let f = create::reserve_cuckoo(&refs).map_err(|c| filter_error(c.text()))?;
        Ok(CuckooFilter::wrap(f))
    }

    /// `CF.ADD`: True; raises FilterError with the server's text when there is
    /// no room (`Filter is full`, `Maximum expansions reached`).
    fn add(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let h = self.hash(item)?;
        let l = SERVER_DEFAULT_LIMITS;
        let r = {
            let mut f = write(&self.f);
            check_expansions(&f).and_then(|()| {
                f.insert(&h, l.max_filters, l.max_bytes)
                    .map_err(Refused::Insert)
            })
        };
        r.map(|()| true).map_err(PyErr::from)
    }

    /// `CF.ADDNX`: True if added, False if the item tests present.
    fn add_nx(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let h = self.hash(item)?;
        let l = SERVER_DEFAULT_LIMITS;
        let r = {
            let mut f = write(&self.f);
            check_expansions(&f).and_then(|()| {
                f.insert_unique(&h, l.max_filters, l.max_bytes)
                    .map_err(Refused::Insert)
            })
        };
        r.map_err(PyErr::from)
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
        let h = self.hash(item)?;
        Ok(self.g().contains(&h))
    }

    fn __contains__(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.exists(item)
    }

    /// `CF.MEXISTS`'s reply (the GIL is released meanwhile).
    fn contains_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let items = Items::collect(items)?;
        let m = &self.f;
        Ok(py.allow_threads(|| read(m).contains_items(items.iter())))
    }

    /// `CF.COUNT`: how many times the item's fingerprint is stored (an upper bound).
    fn count(&self, item: &Bound<'_, PyAny>) -> PyResult<u64> {
        let h = self.hash(item)?;
        Ok(self.g().count(&h))
    }

    /// `CF.DEL`: removes one copy; False if the item is not found.
    fn delete(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let h = self.hash(item)?;
        let deleted = write(&self.f).delete(&h);
        Ok(deleted)
    }

    /// Items inserted minus items deleted (`CF.INFO` `Number of items inserted`).
    fn __len__(&self) -> usize {
        self.g().num_items() as usize
    }

    /// `CF.INFO`'s eight fields, under the server's names.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        shared::info_dict(py, crate::cmd::info::CF_INFO, &self.f)
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
        let header = self.g().encode_header();
        Core::header_table_bytes(
            &header,
            max_bytes.unwrap_or(d.max_bytes),
            max_filters.unwrap_or(d.max_filters),
            None,
        )
        .map(|_| ())
        .map_err(|err| insert_error(&err))
    }

    /// A deep copy.
    fn copy(&self) -> PyResult<Self> {
        let copy = self.g().try_clone(u64::MAX);
        copy.map(CuckooFilter::wrap)
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
        shared::scandump(py, &self.f, iter)
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
