//! The Redis data types and their callbacks (RDB, AOF, COPY, DEBUG DIGEST,
//! MEMORY USAGE, lazy free, active defragmentation: `defrag.rs`), written once
//! for both filter types through the [`FilterValue`] trait.
//!
//! # RDB encoding versions, for `MBbloom--` and `MBbloomCF`
//! ferrobloom registers RedisBloom's type names, so every RedisBloom payload
//! reaches these loaders with its own encoding version:
//!
//! - **0-4: RedisBloom's own payloads** (its `BFRdbLoad` / `CFRdbLoad` field
//!   orders, documented on `BloomChain::from_redisbloom_rdb` and
//!   `CuckooFilter::from_redisbloom_rdb`). Such filters keep RedisBloom's hashing
//!   and formats; they are saved back as version 6.
//! - **5: ferrobloom's first** (kept loadable): the SCANDUMP stream stored as RDB
//!   string buffers:
//!   1. one string buffer: the filter's header (Bloom: magic `FBbf`, documented
//!      on `BloomChain::encode_header`; Cuckoo: magic `FBcf`, documented on
//!      `CuckooFilter::encode_header`);
//!   2. the filter's data, as the SCANDUMP data chunks in order (at most 16 MiB
//!      each, never spanning two sub-filters): one string buffer per chunk. The
//!      count and lengths follow from the header, and every length is checked on
//!      load.
//! - **6: the current one**: one unsigned, the filter's hash scheme and header
//!   format (0 = ferrobloom's, 1 = RedisBloom's: RedisBloom's SCANDUMP header,
//!   documented in `crates/ferrobloom-core/src/bloom/redisbloom.rs` and
//!   `crates/ferrobloom-core/src/cuckoo/redisbloom.rs`; 2 = a windowed Bloom
//!   filter, header `FBbw`, documented on `Window::encode_header`), then exactly
//!   version 5's buffers.
//!
//! Loading validates the header completely (including the per-filter memory cap)
//! before allocating, then checks every buffer; anything wrong returns null, which
//! Redis reports as `ERR Bad data format` for RESTORE (and refuses a corrupt RDB
//! file) instead of crashing (HANDLE_IO_ERRORS is set). AOF rewrite emits the same
//! stream as `BF.LOADCHUNK` / `CF.LOADCHUNK` commands.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

use super::config;
use super::ffi::{log, RStr};
use super::guard::{guard, guard_persist};
use super::io::{create_data_type, AofOut, DataType, Digest, Held, RdbIn, RdbOut};
use super::key::ModuleType;
use super::load::LoadCtx;
use super::value::{self, FilterValue};
use ferrobloom_core::cuckoo::CuckooFilter;
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::restore::{load_module_value, ENCVER_SCHEME};

/// The RDB encoding version ferrobloom writes, for both types (the versions
/// are the core's, `ferrobloom_core::restore`, which reads them for this
/// module and for clients that read a `DUMP`). Version 6 introduced the
/// scheme word before the buffers (filters migrated from RedisBloom keep its
/// header; windowed filters, scheme 2, came later without a new version:
/// docs/design.md, "Versions"); the scheme values are the core's
/// (`ferrobloom_core::payload`'s `SCHEME_*`): each says which kind's header
/// follows.
pub const ENCVER: c_int = ENCVER_SCHEME;

pub static BLOOM: ModuleType<BloomFilter> = ModuleType::new();
pub static CUCKOO: ModuleType<CuckooFilter> = ModuleType::new();

/// Registers the data types (called from OnLoad).
pub fn create_types(ctx: LoadCtx) -> Result<(), String> {
    create_data_type(ctx, &BLOOM, ENCVER)?;
    create_data_type(ctx, &CUCKOO, ENCVER)
}

/// Both filter types' callbacks (`io.rs` calls them for the server).
impl<T: FilterValue> DataType for T {
    fn rdb_load(rdb: &mut RdbIn, encver: c_int) -> Option<Self> {
        rdb_load(rdb, encver)
    }
    fn rdb_save(&self, rdb: &mut RdbOut) {
        rdb_save(self, rdb)
    }
    fn aof_rewrite(&self, aof: &mut AofOut, key: RStr) {
        aof_rewrite(self, aof, key)
    }
    fn memory_usage(held: &Held<Self>) -> usize {
        mem_usage(held)
    }
    fn digest(&self, md: &mut Digest) {
        digest(self, md)
    }
    fn free(value: Box<Self>) {
        free(value)
    }
    fn free_effort(&self) -> usize {
        free_effort(self)
    }
    fn copy(&self) -> Option<Self> {
        copy(self)
    }
}

/// Reads a filter in any encoding version this module knows (the same core
/// code the fuzz targets run); a trusted payload ([`RdbIn::trusted`]: loading,
/// or a RESTORE on a read-only replica) is held to the hard ceilings only, not
/// configured limits: a lowered limit must never make existing data unloadable
/// or a replica diverge. A client's RESTORE on a primary or on a *writable*
/// replica is held to the configured limits (a payload does not tell which
/// client sent it; keep the limits equal on primaries and replicas, as the
/// README says, so a writable replica accepts what its primary accepted).
fn load<T: FilterValue>(rdb: &mut RdbIn, encver: c_int) -> Result<T, String> {
    let limits = config::bloom_limits(rdb.trusted());
    load_module_value(encver, rdb, &limits)
}

/// Unix second of the last refusal logged, and refusals not logged since.
static LAST_REFUSAL_LOG: AtomicU64 = AtomicU64::new(0);
static REFUSALS_NOT_LOGGED: AtomicU64 = AtomicU64::new(0);

/// Logs a refused payload, at most one line per second: any client can send
/// RESTOREs that are refused, and must not be able to flood the log. The next
/// line logged says how many were left out.
fn log_refusal(msg: &str) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if LAST_REFUSAL_LOG.swap(now, Relaxed) == now {
        REFUSALS_NOT_LOGGED.fetch_add(1, Relaxed);
        return;
    }
    let skipped = REFUSALS_NOT_LOGGED.swap(0, Relaxed);
    let msg = if skipped > 0 {
        format!("{msg} ({skipped} more refused payloads were not logged)")
    } else {
        msg.to_string()
    };
    log(c"warning", &msg);
}

/// Reads a filter for the server (`None`: refused, logged).
fn rdb_load<T: FilterValue>(rdb: &mut RdbIn, encver: c_int) -> Option<T> {
    guard("rdb_load", None, || {
        let name = T::TYPE_NAME.to_string_lossy();
        match load::<T>(rdb, encver) {
            Ok(mut v) => {
                v.anchor_clock(super::window::now_ms());
                value::created(&v);
                Some(v)
            }
            Err(why) => {
                log_refusal(&format!(
                    "ferrobloom: refusing {name} payload (encoding version {encver}): {why}"
                ));
                None
            }
        }
    })
}

fn rdb_save<T: FilterValue>(v: &T, rdb: &mut RdbOut) {
    guard_persist("rdb_save", || {
        rdb.unsigned(v.rdb_scheme());
        rdb.buffer(&v.header());
        v.for_each_chunk(|_, data| rdb.buffer(data));
    })
}

/// Emits the SCANDUMP/LOADCHUNK protocol: iterator 1 carries the header.
fn aof_rewrite<T: FilterValue>(v: &T, aof: &mut AofOut, key: RStr) {
    guard_persist("aof_rewrite", || {
        aof.emit(T::LOADCHUNK, key, 1, &v.header());
        v.for_each_chunk(|next, data| aof.emit(T::LOADCHUNK, key, next, data));
    })
}

/// MEMORY USAGE: what the allocator really holds for the value (each block's
/// usable size, as `used_memory` counts it), not the formula of BF.INFO `Size` /
/// CF.INFO `Size`, which leaves out the allocator's rounding and the structures
/// around the bits (about 250 bytes on a small filter).
fn mem_usage<T: FilterValue>(held: &Held<T>) -> usize {
    guard("mem_usage", 0, || {
        held.allocated().unwrap_or_else(|| held.value().mem_usage())
    })
}

fn digest<T: FilterValue>(v: &T, md: &mut Digest) {
    guard("digest", (), || {
        md.add(&v.header());
        v.for_each_chunk(|_, data| md.add(data));
        md.end_sequence();
    })
}

fn free<T: FilterValue>(value: Box<T>) {
    guard("free", (), || {
        value::freed(&*value);
        drop(value);
    })
}

/// The work of freeing (or defragmenting) a value: one unit per heap block
/// and one per 64 KiB. Redis frees values above 64 on the lazy-free thread
/// (UNLINK, FLUSHALL ASYNC), and defragments values above
/// `active-defrag-max-scan-fields` in bounded steps (`defrag`).
fn free_effort<T: FilterValue>(v: &T) -> usize {
    guard("free_effort", 1, || {
        let blocks = usize::try_from(v.block_count()).unwrap_or(usize::MAX);
        1usize
            .saturating_add(blocks)
            .saturating_add(v.mem_usage() >> 16)
    })
}

fn copy<T: FilterValue>(v: &T) -> Option<T> {
    guard("copy", None, || {
        let copy = v.try_clone()?;
        value::created(&copy);
        Some(copy)
    })
}
