//! `ferrobloom.BloomFilter`: a `BF.*` filter in-process.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{RwLock, RwLockReadGuard};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::cmd::errors::{self as e, Op};
use crate::cmd::{create, defaults};
use crate::shared::{self, read, write};
use crate::{filter_error, for_each_hash_chunk, hash_one, now_ms, param, Param};
use ferrobloom_core::bloom::{BloomError, PREFETCH_ONE_FROM};
use ferrobloom_core::dump::{AddResult, SERVER_DEFAULT_LIMITS};
use ferrobloom_core::filter::BloomFilter as Core;
use ferrobloom_core::hash::{HashScheme, ItemHash};

/// A Bloom filter: scalable or not, any layout (ferrobloom's classic, blocked
/// or paired, or RedisBloom's), or windowed.
#[pyclass(module = "ferrobloom._ferrobloom", frozen)]
pub struct BloomFilter {
    /// Shared by lookups, taken alone by writes (`shared.rs`: no Python code
    /// runs while it is held).
    f: RwLock<Core>,
    /// How the filter hashes items, fixed for its life: items are hashed
    /// before the lock is taken.
    scheme: HashScheme,
    /// Whether it is windowed: only windowed filters read the clock.
    windowed: bool,
    /// Whether the filter is large enough ([`PREFETCH_ONE_FROM`]) that a
    /// call on one item first prefetches the lines it reads, so they arrive
    /// together; kept by every write.
    large: AtomicBool,
}

/// Whether a filter is large enough to prefetch for a call on one item.
fn is_large(f: &Core) -> bool {
    f.mem_usage() >= PREFETCH_ONE_FROM
}

impl BloomFilter {
    pub(crate) fn wrap(f: Core) -> Self {
        BloomFilter {
            scheme: f.scheme(),
            windowed: f.is_timed(),
            large: AtomicBool::new(is_large(&f)),
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
    fn hash(&self, item: &Bound<'_, PyAny>) -> PyResult<ItemHash> {
        let scheme = self.scheme;
        hash_one(item, move |b| scheme.bloom(b))
    }

    /// A lookup of one hashed item (prefetching first in a large filter).
    #[inline]
    fn lookup(&self, h: &ItemHash, now: u64) -> bool {
        let f = self.g();
        if self.large.load(Relaxed) {
            f.prefetch(h);
        }
        f.contains_hash(h, now)
    }

    /// The time a lookup asks about (`as_of`, else now); 0 for a filter
    /// without a window, which has no use for it.
    #[inline]
    fn time(&self, as_of: Option<f64>) -> u64 {
        if self.windowed {
            at(as_of)
        } else {
            0
        }
    }

    /// Adds a batch: items hashed from Python's buffers under the GIL, then
    /// added chunk by chunk without it (each chunk under the filter's lock, so
    /// another thread's batch may interleave between chunks). `each` gets every
    /// chunk's `BF.MADD` results; the batch ends after a "full" error.
    fn add_batch(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        mut each: impl FnMut(&mut Vec<AddResult>),
    ) -> PyResult<()> {
        let m = &self.f;
        let now = self.time(None);
        let scheme = self.scheme;
        let mut out = Vec::new();
        for_each_hash_chunk(
            items,
            |i| scheme.bloom(i),
            |hs| {
                out.clear();
                let large = py.allow_threads(|| {
                    let mut f = write(m);
                    f.add_hashes(hs, now, &SERVER_DEFAULT_LIMITS, &mut out);
                    is_large(&f)
                });
                self.large.store(large, Relaxed);
                let full = out.last() == Some(&Err(BloomError::Full));
                each(&mut out);
                Ok(!full)
            },
        )
    }
}

/// A time given in seconds since the epoch (`None`: now), in milliseconds.
fn at(as_of: Option<f64>) -> u64 {
    match as_of {
        Some(s) if s.is_finite() && s > 0.0 => (s * 1000.0) as u64,
        Some(_) => 0,
        None => now_ms(),
    }
}

fn insert_error(err: &ferrobloom_core::bloom::BloomError) -> PyErr {
    filter_error(e::bloom(Op::Insert, err).text())
}

#[pymethods]
impl BloomFilter {
    /// `BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
    /// [LAYOUT layout] [TIGHTENING t] [SEED s] [VALIDATESCALETO n] [WINDOW seconds]`,
    /// with the server's defaults, limits and error texts.
    #[new]
    #[pyo3(signature = (capacity, error_rate=None, *, expansion=None, nonscaling=false,
        layout=None, tightening=None, seed=None, validate_scale_to=None, window=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        capacity: &Bound<'_, PyAny>,
        error_rate: Option<&Bound<'_, PyAny>>,
        expansion: Option<&Bound<'_, PyAny>>,
        nonscaling: bool,
        layout: Option<&Bound<'_, PyAny>>,
        tightening: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        validate_scale_to: Option<&Bound<'_, PyAny>>,
        window: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut args: Vec<Vec<u8>> = Vec::new();
        args.push(match error_rate {
            Some(r) => param("error_rate", r, Param::Number)?,
            None => defaults::BLOOM.error.to_string().into_bytes(),
        });
        args.push(param("capacity", capacity, Param::Int)?);
        for (name, token, v, want) in [
            ("expansion", &b"EXPANSION"[..], expansion, Param::Int),
            ("layout", b"LAYOUT", layout, Param::Text),
            ("tightening", b"TIGHTENING", tightening, Param::Number),
            ("seed", b"SEED", seed, Param::Bytes),
            (
                "validate_scale_to",
                b"VALIDATESCALETO",
                validate_scale_to,
                Param::Int,
            ),
            ("window", b"WINDOW", window, Param::Number),
        ] {
            if let Some(v) = v {
                args.push(token.to_vec());
                args.push(param(name, v, want)?);
            }
        }
        if nonscaling {
            args.push(b"NONSCALING".to_vec());
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let f = create::reserve_bloom(&refs).map_err(|c| filter_error(c.text()))?;
        Ok(BloomFilter::wrap(f))
    }

    /// `BF.ADD`: True if the item is new; raises FilterError with the server's
    /// text when the filter refuses it (a full non-scaling filter, a limit).
    fn add(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let h = self.hash(item)?;
        let now = self.time(None);
        let added = {
            let mut f = write(&self.f);
            if self.large.load(Relaxed) {
                f.prefetch(&h);
            }
            let added = f.add_hashed_item(&h, now, &SERVER_DEFAULT_LIMITS);
            // A new link or generation may have made it large.
            if !self.large.load(Relaxed) && added.is_ok() && is_large(&f) {
                self.large.store(true, Relaxed);
            }
            added
        };
        added.map_err(|err| insert_error(&err))
    }

    /// `BF.MADD`'s reply: per item True (new) or False, or a FilterError
    /// instance for an item the filter refused; the list ends after a "full"
    /// error, as the server's reply does. The GIL is released meanwhile.
    fn add_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Py<PyList>> {
        let mut out = Vec::new();
        self.add_batch(py, items, |r| out.append(r))?;
        let list = PyList::empty(py);
        for r in out {
            match r {
                Ok(b) => list.append(b)?,
                Err(err) => list.append(insert_error(&err).value(py))?,
            }
        }
        Ok(list.unbind())
    }

    /// Adds every item (set.update); raises the first refusal as FilterError.
    fn update(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut first = None;
        self.add_batch(py, items, |r| {
            if first.is_none() {
                first = r.drain(..).find_map(Result::err);
            }
        })?;
        match first {
            Some(err) => Err(insert_error(&err)),
            None => Ok(()),
        }
    }

    /// `BF.EXISTS`; `as_of` (seconds since the epoch) asks a windowed filter
    /// about another time than now.
    #[pyo3(signature = (item, *, as_of=None))]
    fn exists(&self, item: &Bound<'_, PyAny>, as_of: Option<f64>) -> PyResult<bool> {
        let (h, now) = (self.hash(item)?, self.time(as_of));
        Ok(self.lookup(&h, now))
    }

    /// `BF.MEXISTS`'s reply (the GIL is released meanwhile).
    #[pyo3(signature = (items, *, as_of=None))]
    fn contains_many(
        &self,
        py: Python<'_>,
        items: &Bound<'_, PyAny>,
        as_of: Option<f64>,
    ) -> PyResult<Vec<bool>> {
        let m = &self.f;
        let now = self.time(as_of);
        let scheme = self.scheme;
        let mut out = Vec::new();
        for_each_hash_chunk(
            items,
            |i| scheme.bloom(i),
            |hs| {
                py.allow_threads(|| read(m).contains_hashes(hs, now, &mut out));
                Ok(true)
            },
        )?;
        Ok(out)
    }

    fn __contains__(&self, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (h, now) = (self.hash(item)?, self.time(None));
        Ok(self.lookup(&h, now))
    }

    /// `BF.CARD`: items added (a windowed filter: within the live window).
    fn __len__(&self) -> usize {
        self.items() as usize
    }

    /// `BF.INFO`'s fields, under the server's names.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        shared::info_dict(py, crate::cmd::info::BF_INFO, &self.f)
    }

    /// The error rate the filter was created with (`BF.INFO key ERROR`).
    #[getter]
    fn error_rate(&self) -> f64 {
        self.g().error_rate()
    }

    /// Item capacity (`BF.INFO key CAPACITY`).
    #[getter]
    fn capacity(&self) -> u64 {
        self.g().capacity()
    }

    /// The growth factor; None for a non-scaling filter.
    #[getter]
    fn expansion(&self) -> Option<u32> {
        self.g().expansion()
    }

    /// The bit layout (`classic`, `blocked`, `paired` or `redisbloom`).
    #[getter]
    fn layout(&self) -> &'static str {
        layout_of(&self.g())
    }

    /// A windowed filter's window in seconds (`BF.INFO key WINDOW`), else None.
    #[getter]
    fn window(&self) -> Option<f64> {
        self.g().window_ms().map(|ms| ms as f64 / 1000.0)
    }

    /// `BF.MERGE dest n self other...` into a new filter: the union, with
    /// BF.MERGE's rules and error texts.
    #[pyo3(signature = (*others))]
    fn union(&self, others: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let refs: Vec<PyRef<'_, BloomFilter>> = others
            .iter()
            .map(|o| o.extract::<PyRef<'_, BloomFilter>>())
            .collect::<PyResult<_>>()?;
        // Each filter locked once, however often it is given (BF.MERGE reads a
        // source given twice once).
        let me = self.g();
        let mut guards: Vec<Option<RwLockReadGuard<'_, Core>>> = Vec::new();
        for (i, r) in refs.iter().enumerate() {
            let seen =
                std::ptr::eq(&**r, self) || refs[..i].iter().any(|o| std::ptr::eq(&**o, &**r));
            guards.push(if seen { None } else { Some(r.g()) });
        }
        let mut sources: Vec<&Core> = vec![&*me];
        for (i, r) in refs.iter().enumerate() {
            match &guards[i] {
                Some(g) => sources.push(&**g),
                None => {
                    let j = refs[..i].iter().position(|o| std::ptr::eq(&**o, &**r));
                    sources.push(match j.and_then(|j| guards[j].as_deref()) {
                        Some(g) => g,
                        None => &*me,
                    });
                }
            }
        }
        let merged = Core::merged(&sources, &SERVER_DEFAULT_LIMITS)
            .map_err(|err| filter_error(e::merge(&err, |i| i + 1).text()))?;
        Ok(BloomFilter::wrap(merged))
    }

    fn __or__(&self, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let py = other.py();
        let Ok(o) = other.extract::<PyRef<'_, BloomFilter>>() else {
            return Ok(py.NotImplemented());
        };
        let t = pyo3::types::PyTuple::new(py, [o])?;
        Ok(self.union(&t)?.into_pyobject(py)?.into_any().unbind())
    }

    /// `BF.MERGE self 1 other`: ORs `other` into this filter.
    fn __ior__(&self, other: PyRef<'_, BloomFilter>) -> PyResult<()> {
        if std::ptr::eq(&*other, self) {
            return Ok(());
        }
        let merged = {
            let src = other.g();
            let mut f = write(&self.f);
            let r = f.merge_from(&[&*src], &SERVER_DEFAULT_LIMITS);
            self.large.store(is_large(&f), Relaxed);
            r
        };
        merged.map_err(|err| filter_error(e::merge(&err, |i| i + 1).text()))
    }

    /// Raises FilterError, with the server's text, when a server with these
    /// limits (`bf.max-filter-memory`, `bf.bf-max-links`; None: the default)
    /// would refuse this filter (push asks the server's limits and calls this
    /// before sending anything).
    #[pyo3(signature = (max_bytes=None, max_links=None))]
    fn check_limits(&self, max_bytes: Option<u64>, max_links: Option<u32>) -> PyResult<()> {
        let d = SERVER_DEFAULT_LIMITS;
        let limits = ferrobloom_core::bloom::Limits {
            max_bytes: max_bytes.unwrap_or(d.max_bytes),
            max_links: max_links.unwrap_or(d.max_links),
            max_filters: d.max_filters,
        };
        let header = self.g().encode_header();
        match Core::header_link_bytes(&header, &limits, None) {
            Ok(_) => Ok(()),
            Err(err) => Err(insert_error(&err)),
        }
    }

    /// A deep copy.
    fn copy(&self) -> PyResult<Self> {
        let copy = self.g().try_clone();
        copy.map(BloomFilter::wrap)
            .map_err(|err| filter_error(e::bloom(Op::Create, &err).text()))
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

    /// Reads the file format; a file of a cuckoo filter is refused.
    #[staticmethod]
    fn from_bytes(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        shared::from_bytes(data).map(BloomFilter::wrap)
    }

    /// `BF.SCANDUMP key iter`'s reply: `(1, header)` for 0, then each data
    /// chunk with the iterator to ask for next; `(0, b"")` past the end.
    fn scandump<'py>(&self, py: Python<'py>, iter: i64) -> PyResult<(i64, Bound<'py, PyBytes>)> {
        shared::scandump(py, &self.f, iter)
    }

    /// Rebuilds a filter from its SCANDUMP replies in order (what
    /// `BF.LOADCHUNK` of each into a missing key makes), checking every chunk
    /// against the header before allocating.
    #[staticmethod]
    fn from_chunks(py: Python<'_>, chunks: Vec<(i64, Vec<u8>)>) -> PyResult<Self> {
        shared::from_chunks(py, &chunks).map(BloomFilter::wrap)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(PyObject, (Bound<'py, PyBytes>,))> {
        shared::reduce(py, &self.f)
    }

    fn __repr__(&self) -> String {
        let f = self.g();
        let window = f.window_ms().map_or(String::new(), |ms| {
            format!(", window={}", ms as f64 / 1000.0)
        });
        format!(
            "BloomFilter(capacity={}, error_rate={}, expansion={}, layout='{}'{window}, items={})",
            f.capacity(),
            f.error_rate(),
            f.expansion().map_or("None".to_string(), |x| x.to_string()),
            layout_of(&f),
            items_of(&f)
        )
    }
}

impl BloomFilter {
    fn items(&self) -> u64 {
        items_of(&self.g())
    }
}

fn items_of(f: &Core) -> u64 {
    f.live_items(if f.is_timed() { now_ms() } else { 0 })
}

fn layout_of(f: &Core) -> &'static str {
    f.layout_name()
}
