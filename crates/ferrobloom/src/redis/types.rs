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

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

use redis_module::raw;

use super::alloc::usable_size;
use super::config;
use super::defrag::defrag;
use super::ffi::{api, log};
use super::guard::{guard, guard_persist};
use super::key::ModuleType;
use super::value::{self, FilterValue};
use ferrobloom_core::cuckoo::CuckooFilter;
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::payload::{load_payload_as, HeaderFormat, RdbRead};

/// The RDB encoding version ferrobloom writes, for both types.
pub const ENCVER: c_int = ENCVER_SCHEME;
/// Version 6 introduced the scheme word before the buffers (filters migrated
/// from RedisBloom keep its header; windowed filters, scheme 2, came later
/// without a new version: docs/design.md, "Versions").
const ENCVER_SCHEME: c_int = 6;
/// Version 5, ferrobloom's first: the SCANDUMP stream as buffers (no scheme
/// word: ferrobloom's headers only).
const ENCVER_CHUNKS: c_int = 5;
/// The newest RedisBloom encoding version (RedisBloom 2.x).
const ENCVER_REDISBLOOM: c_int = 4;
// The scheme values of version 6 are the core's (`ferrobloom_core::payload`'s
// `SCHEME_*`): each value says which kind's header follows.

pub static BLOOM: ModuleType<BloomFilter> = ModuleType::new();
pub static CUCKOO: ModuleType<CuckooFilter> = ModuleType::new();

/// Registers one data type with the generic callbacks.
fn create_type<T: FilterValue>(
    ctx: *mut raw::RedisModuleCtx,
    ty: &ModuleType<T>,
) -> Result<(), String> {
    let Some(create) = api!(RedisModule_CreateDataType) else {
        return Err("no RedisModule_CreateDataType".into());
    };
    let mut methods = raw::RedisModuleTypeMethods {
        version: 4,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<T>),
        unlink: None,
        copy: Some(copy::<T>),
        defrag: Some(defrag::<T>),
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    };
    // SAFETY: valid load context; Redis copies the methods.
    let t = unsafe { create(ctx, T::TYPE_NAME.as_ptr(), ENCVER, &mut methods) };
    if t.is_null() {
        return Err(format!(
            "could not create data type {} (is RedisBloom loaded too?)",
            T::TYPE_NAME.to_string_lossy()
        ));
    }
    ty.raw.store(t, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Registers the data types (called from OnLoad).
pub fn create_types(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    create_type(ctx, &BLOOM)?;
    create_type(ctx, &CUCKOO)
}

/// A string buffer read from RDB, freed on drop.
struct RdbBuffer {
    ptr: *mut c_char,
    len: usize,
}

impl AsRef<[u8]> for RdbBuffer {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl RdbBuffer {
    fn load(rdb: *mut raw::RedisModuleIO) -> Option<RdbBuffer> {
        let f = api!(RedisModule_LoadStringBuffer)?;
        let mut len = 0usize;
        // SAFETY: valid IO handle.
        let ptr = unsafe { f(rdb, &mut len) };
        let buf = RdbBuffer { ptr, len };
        if io_error(rdb) || ptr.is_null() {
            return None;
        }
        Some(buf)
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: Redis returned `len` bytes at `ptr`.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for RdbBuffer {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        if let Some(free) = api!(RedisModule_Free) {
            // SAFETY: allocated by Redis for us.
            unsafe { free(self.ptr as *mut c_void) };
        }
    }
}

fn io_error(rdb: *mut raw::RedisModuleIO) -> bool {
    match api!(RedisModule_IsIOError) {
        // SAFETY: valid IO handle.
        Some(f) => unsafe { f(rdb) != 0 },
        None => false,
    }
}

fn save_buffer(rdb: *mut raw::RedisModuleIO, data: &[u8]) {
    if let Some(f) = api!(RedisModule_SaveStringBuffer) {
        // SAFETY: valid IO handle; data readable.
        unsafe { f(rdb, data.as_ptr() as *const c_char, data.len()) };
    }
}

/// True when the payload comes from the server's own data or from its primary:
/// loading (startup, DEBUG RELOAD, full sync) or a RESTORE on a read-only
/// replica (`replica-read-only yes`, the default: clients cannot write there,
/// so the RESTORE came from the primary's stream). Only then are configured
/// limits waived: a lowered limit must never make existing data unloadable or a
/// replica diverge. A client's RESTORE on a primary or on a *writable* replica is
/// held to the configured limits (a payload does not tell which client sent it;
/// keep the limits equal on primaries and replicas, as the README says, so a
/// writable replica accepts what its primary accepted).
fn trusted_payload(rdb: *mut raw::RedisModuleIO) -> bool {
    let (Some(get_ctx), Some(flags)) = (
        api!(RedisModule_GetContextFromIO),
        api!(RedisModule_GetContextFlags),
    ) else {
        return false;
    };
    // SAFETY: valid IO handle; the context it returns lives as long as the IO.
    let ctx = unsafe { get_ctx(rdb) };
    // SAFETY: valid (non-null checked) context.
    !ctx.is_null() && {
        // SAFETY: as above.
        let f = unsafe { flags(ctx) } as u32;
        let read_only_replica =
            raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_READONLY;
        f & raw::REDISMODULE_CTX_FLAGS_LOADING != 0 || f & read_only_replica == read_only_replica
    }
}

/// RedisBloom's RDB primitives read from a `RedisModuleIO`.
struct IoReader(*mut raw::RedisModuleIO);

impl RdbRead for IoReader {
    type Buf = RdbBuffer;
    fn unsigned(&mut self) -> Option<u64> {
        load_unsigned(self.0)
    }
    fn double(&mut self) -> Option<f64> {
        let f = api!(RedisModule_LoadDouble)?;
        // SAFETY: valid IO handle.
        let v = unsafe { f(self.0) };
        (!io_error(self.0)).then_some(v)
    }
    fn buffer(&mut self) -> Option<RdbBuffer> {
        RdbBuffer::load(self.0)
    }
}

fn load_unsigned(rdb: *mut raw::RedisModuleIO) -> Option<u64> {
    let f = api!(RedisModule_LoadUnsigned)?;
    // SAFETY: valid IO handle.
    let v = unsafe { f(rdb) };
    (!io_error(rdb)).then_some(v)
}

/// Reads a filter in any encoding version this module knows (the same core
/// code the fuzz targets run); a trusted payload is held to the hard ceilings
/// only, not configured limits.
fn load<T: FilterValue>(rdb: *mut raw::RedisModuleIO, encver: c_int) -> Result<T, String> {
    let limits = config::bloom_limits(trusted_payload(rdb));
    let next = || RdbBuffer::load(rdb);
    match encver {
        ENCVER_SCHEME => {
            let s = load_unsigned(rdb).ok_or("truncated payload (scheme)")?;
            match T::scheme_format(s) {
                Some(format) => load_payload_as::<T, _>(&limits, format, next),
                None => Err(format!("unknown hash scheme {s}")),
            }
        }
        ENCVER_CHUNKS => load_payload_as::<T, _>(&limits, HeaderFormat::Native, next),
        0..=ENCVER_REDISBLOOM => T::from_redisbloom_rdb(encver, &mut IoReader(rdb), &limits),
        _ => Err(format!(
            "unknown encoding version {encver} (this module reads 0-{ENCVER})"
        )),
    }
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
    log(std::ptr::null_mut(), c"warning", &msg);
}

extern "C" fn rdb_load<T: FilterValue>(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    guard("rdb_load", std::ptr::null_mut(), || {
        let name = T::TYPE_NAME.to_string_lossy();
        match load::<T>(rdb, encver) {
            Ok(mut v) => {
                v.anchor_clock(super::window::now_ms());
                value::created(&v);
                Box::into_raw(Box::new(v)) as *mut c_void
            }
            Err(why) => {
                log_refusal(&format!(
                    "ferrobloom: refusing {name} payload (encoding version {encver}): {why}"
                ));
                std::ptr::null_mut()
            }
        }
    })
}

/// # Safety
/// `value` must be a `T` we stored (Redis only passes values of our type).
unsafe fn value<'a, T>(value: *const c_void) -> Option<&'a T> {
    (value as *const T).as_ref()
}

extern "C" fn rdb_save<T: FilterValue>(rdb: *mut raw::RedisModuleIO, v: *mut c_void) {
    guard_persist("rdb_save", || {
        // SAFETY: Redis passes our value.
        let Some(v) = (unsafe { value::<T>(v) }) else {
            return;
        };
        if let Some(save) = api!(RedisModule_SaveUnsigned) {
            // SAFETY: valid IO handle.
            unsafe { save(rdb, v.rdb_scheme()) };
        }
        save_buffer(rdb, &v.header());
        v.for_each_chunk(|_, data| save_buffer(rdb, data));
    })
}

/// Emits one `<cmd> key <iterator> <data>` command into an AOF rewrite (the
/// SCANDUMP/LOADCHUNK protocol: iterator 1 carries the header).
fn emit_loadchunk(
    aof: *mut raw::RedisModuleIO,
    cmd: &CStr,
    key: *mut raw::RedisModuleString,
    iter: i64,
    data: &[u8],
) {
    if let Some(emit) = api!(RedisModule_EmitAOF) {
        // SAFETY: "slb" = module string, long long, buffer + length.
        unsafe {
            emit(
                aof,
                cmd.as_ptr(),
                c"slb".as_ptr(),
                key,
                iter as libc::c_longlong,
                data.as_ptr() as *const c_char,
                data.len(),
            )
        };
    }
}

extern "C" fn aof_rewrite<T: FilterValue>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    v: *mut c_void,
) {
    guard_persist("aof_rewrite", || {
        // SAFETY: Redis passes our value.
        let Some(v) = (unsafe { value::<T>(v) }) else {
            return;
        };
        emit_loadchunk(aof, T::LOADCHUNK, key, 1, &v.header());
        v.for_each_chunk(|next, data| emit_loadchunk(aof, T::LOADCHUNK, key, next, data));
    })
}

/// MEMORY USAGE: what the allocator really holds for the value (each block's
/// usable size, as `used_memory` counts it), not the formula of BF.INFO `Size` /
/// CF.INFO `Size`, which leaves out the allocator's rounding and the structures
/// around the bits (about 250 bytes on a small filter).
extern "C" fn mem_usage<T: FilterValue>(v: *const c_void) -> usize {
    guard("mem_usage", 0, || {
        // SAFETY: Redis passes our value.
        let Some(value) = (unsafe { value::<T>(v) }) else {
            return 0;
        };
        if api!(RedisModule_MallocSize).is_none() {
            return value.mem_usage();
        }
        // SAFETY: `v` and every block are live allocations of the module's
        // global allocator, with these alignments.
        let mut total = unsafe {
            usable_size(
                v as *const u8,
                std::mem::align_of::<T>(),
                std::mem::size_of::<T>(),
            )
        };
        value.heap_blocks(&mut |p, n, align| {
            // SAFETY: as above.
            total = total.saturating_add(unsafe { usable_size(p, align, n) });
        });
        total
    })
}

extern "C" fn digest<T: FilterValue>(md: *mut raw::RedisModuleDigest, v: *mut c_void) {
    guard("digest", (), || {
        // SAFETY: Redis passes our value.
        let (Some(v), Some(add), Some(end)) = (
            unsafe { value::<T>(v) },
            api!(RedisModule_DigestAddStringBuffer),
            api!(RedisModule_DigestEndSequence),
        ) else {
            return;
        };
        let header = v.header();
        // SAFETY: valid digest; buffers readable.
        unsafe { add(md, header.as_ptr() as *const c_char, header.len()) };
        // SAFETY: as above.
        v.for_each_chunk(|_, data| unsafe { add(md, data.as_ptr() as *const c_char, data.len()) });
        // SAFETY: valid digest.
        unsafe { end(md) };
    })
}

extern "C" fn free<T: FilterValue>(v: *mut c_void) {
    guard("free", (), || {
        if !v.is_null() {
            // SAFETY: created with Box::into_raw by us; freed once.
            let value = unsafe { Box::from_raw(v as *mut T) };
            value::freed(&*value);
            drop(value);
        }
    })
}

/// The work of freeing (or defragmenting) a value: one unit per heap block
/// and one per 64 KiB. Redis frees values above 64 on the lazy-free thread
/// (UNLINK, FLUSHALL ASYNC), and defragments values above
/// `active-defrag-max-scan-fields` in bounded steps (`defrag`).
extern "C" fn free_effort<T: FilterValue>(
    _key: *mut raw::RedisModuleString,
    v: *const c_void,
) -> usize {
    guard("free_effort", 1, || {
        // SAFETY: Redis passes our value.
        unsafe { value::<T>(v) }.map_or(1, |v| {
            let blocks = usize::try_from(v.block_count()).unwrap_or(usize::MAX);
            1usize
                .saturating_add(blocks)
                .saturating_add(v.mem_usage() >> 16)
        })
    })
}

extern "C" fn copy<T: FilterValue>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    v: *const c_void,
) -> *mut c_void {
    guard("copy", std::ptr::null_mut(), || {
        // SAFETY: Redis passes our value.
        match unsafe { value::<T>(v) }.and_then(|v| v.try_clone()) {
            Some(copy) => {
                value::created(&copy);
                Box::into_raw(Box::new(copy)) as *mut c_void
            }
            None => std::ptr::null_mut(),
        }
    })
}
