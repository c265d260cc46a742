//! `ShardedBloomFilter`'s routing and answer gathering in native code
//! (`ferrobloom/_sharded.py` sends the commands): each item goes to shard
//! `BLAKE2b-64(item) mod shards` (the item's bytes as redis-py sends them; the
//! 8-byte digest read little-endian), a hash independent of the filters' own.
//! The per-shard lists hold the caller's own objects, which redis-py encodes
//! as it sends them, so routing copies no item.

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyList};

use crate::{encode, hash_one};

/// The shard of an item's bytes.
fn shard_of(item: &[u8], shards: u64) -> u64 {
    let mut h = [0u8; 8];
    // An 8-byte BLAKE2b (the digest length is a parameter of the hash, as
    // hashlib's digest_size): never refused for 8.
    if let Ok(mut b) = Blake2bVar::new(8) {
        b.update(item);
        let _ = b.finalize_variable(&mut h);
    }
    u64::from_le_bytes(h) % shards
}

/// Items split by shard, and where each came from.
#[pyclass(module = "ferrobloom._ferrobloom", frozen)]
pub struct Routed {
    /// Per shard, the positions of its items in the batch.
    positions: Vec<Vec<usize>>,
    /// Items in the batch.
    n: usize,
}

#[pymethods]
impl Routed {
    /// The batch's answers in its order, from the replies of the shards in
    /// `used` (each a list, one element per item of that shard, in order):
    /// True/False, or the error instance the reply holds for an item. A reply
    /// that is an error itself is raised.
    fn gather(
        &self,
        py: Python<'_>,
        used: Vec<usize>,
        replies: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyList>> {
        let none = py.None();
        let out = PyList::new(py, std::iter::repeat_n(&none, self.n))?;
        for (s, reply) in used.iter().zip(replies) {
            if reply.is_instance_of::<pyo3::exceptions::PyBaseException>() {
                return Err(PyErr::from_value(reply));
            }
            let pos = self
                .positions
                .get(*s)
                .ok_or_else(|| PyValueError::new_err("no such shard"))?;
            for (i, r) in pos.iter().zip(reply.try_iter()?) {
                let r = r?;
                if r.is_instance_of::<pyo3::exceptions::PyBaseException>() {
                    out.set_item(*i, r)?;
                } else {
                    out.set_item(*i, PyBool::new(py, r.is_truthy()?))?;
                }
            }
        }
        Ok(out.unbind())
    }
}

/// Routes a batch: `(routed, lists)`, `lists[s]` the items of shard `s` in
/// the batch's order (the objects given, or with `encoded` their bytes as
/// redis-py sends them).
#[pyfunction]
#[pyo3(signature = (items, shards, encoded=false))]
pub fn route(
    py: Python<'_>,
    items: &Bound<'_, PyAny>,
    shards: usize,
    encoded: bool,
) -> PyResult<(Routed, Vec<Py<PyList>>)> {
    if shards == 0 {
        return Err(PyValueError::new_err("shards must be at least 1"));
    }
    let lists: Vec<Bound<'_, PyList>> = (0..shards).map(|_| PyList::empty(py)).collect();
    let mut positions = vec![Vec::new(); shards];
    let mut n = 0;
    for obj in items.try_iter()? {
        let obj = obj?;
        let s = hash_one(&obj, |b| shard_of(b, shards as u64))? as usize;
        // `s < shards` (a remainder); `get` keeps it checked.
        let (Some(list), Some(pos)) = (lists.get(s), positions.get_mut(s)) else {
            continue;
        };
        if encoded {
            list.append(PyBytes::new(py, &encode(&obj)?))?;
        } else {
            list.append(&obj)?;
        }
        pos.push(n);
        n += 1;
    }
    Ok((
        Routed { positions, n },
        lists.into_iter().map(Bound::unbind).collect(),
    ))
}

/// `BLAKE2b-64(item) mod shards` of one item.
#[pyfunction]
pub fn shard_of_item(item: &Bound<'_, PyAny>, shards: u64) -> PyResult<u64> {
    if shards == 0 {
        return Err(PyValueError::new_err("shards must be at least 1"));
    }
    hash_one(item, |b| shard_of(b, shards))
}
