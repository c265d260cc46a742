//! The Redis data types and their callbacks (RDB, AOF, COPY, DEBUG DIGEST,
//! MEMORY USAGE, lazy free).
//!
//! # RDB encoding of `MBbloom--`, encoding version 5 (ferrobloom's first)
//! Versions 0-4 belong to RedisBloom's own payloads and are refused (a loader for
//! them can be added later without touching this one). Version 5 is:
//! 1. one string buffer: the Bloom header, exactly as documented on
//!    [`BloomChain::encode_header`] (magic `FBbf`, header format version 1);
//! 2. for each link, oldest first, its bit bytes split into string buffers of
//!    [`SCANDUMP_CHUNK`] (16 MiB) bytes, the last one shorter; the count and
//!    lengths follow from the header, and every length is checked on load.
//!
//! Loading validates the header completely (including the per-filter memory cap)
//! before allocating, then checks every buffer's length; anything wrong returns
//! null, which Redis reports as `ERR Bad data format` for RESTORE (and refuses
//! a corrupt RDB file) instead of crashing (HANDLE_IO_ERRORS is set).

use std::ffi::{c_char, c_int, c_void, CStr};

use redis_module::raw;

use super::api::{api, log, ModuleType};
use super::config;
use super::guard::guard;
use crate::core::bloom::{BloomChain, Limits, SCANDUMP_CHUNK};

/// RedisBloom's type name, so RESTORE payloads and RDB files name the same type.
pub const BLOOM_TYPE_NAME: &CStr = c"MBbloom--";
/// ferrobloom's RDB encoding version for Bloom filters.
pub const BLOOM_ENCVER: c_int = 5;

pub static BLOOM: ModuleType<BloomChain> = ModuleType::new();

/// Registers the data types (called from OnLoad).
pub fn create_types(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let Some(create) = api!(RedisModule_CreateDataType) else {
        return Err("no RedisModule_CreateDataType".into());
    };
    let mut methods = raw::RedisModuleTypeMethods {
        version: 4,
        rdb_load: Some(bloom_rdb_load),
        rdb_save: Some(bloom_rdb_save),
        aof_rewrite: Some(bloom_aof_rewrite),
        mem_usage: Some(bloom_mem_usage),
        digest: Some(bloom_digest),
        free: Some(bloom_free),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(bloom_free_effort),
        unlink: None,
        copy: Some(bloom_copy),
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    };
    // SAFETY: valid load context; Redis copies the methods.
    let t = unsafe { create(ctx, BLOOM_TYPE_NAME.as_ptr(), BLOOM_ENCVER, &mut methods) };
    if t.is_null() {
        return Err("could not create data type MBbloom-- (is RedisBloom loaded too?)".into());
    }
    BLOOM.raw.store(t, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// A string buffer read from RDB, freed on drop.
struct RdbBuffer {
    ptr: *mut c_char,
    len: usize,
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

/// Reads a Bloom filter in encoding version 5; `None` on any inconsistency.
fn load_bloom(rdb: *mut raw::RedisModuleIO, limits: &Limits) -> Result<BloomChain, String> {
    let header = RdbBuffer::load(rdb).ok_or("truncated payload (header)")?;
    let mut chain = BloomChain::from_header(header.bytes(), limits)
        .map_err(|e| format!("invalid Bloom header: {e:?}"))?;
    drop(header);
    for link in chain.links_mut() {
        let data = link.data_mut();
        for piece in data.chunks_mut(SCANDUMP_CHUNK as usize) {
            let buf = RdbBuffer::load(rdb).ok_or("truncated payload (bits)")?;
            if buf.bytes().len() != piece.len() {
                return Err("bit array length does not match the header".into());
            }
            piece.copy_from_slice(buf.bytes());
        }
    }
    Ok(chain)
}

extern "C" fn bloom_rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    guard("MBbloom-- rdb_load", std::ptr::null_mut(), || {
        if encver != BLOOM_ENCVER {
            log(
                std::ptr::null_mut(),
                c"warning",
                &format!("ferrobloom: cannot load MBbloom-- encoding version {encver} (RedisBloom's own format); only version {BLOOM_ENCVER} is supported"),
            );
            return std::ptr::null_mut();
        }
        match load_bloom(rdb, &config::bloom_limits()) {
            Ok(chain) => Box::into_raw(Box::new(chain)) as *mut c_void,
            Err(why) => {
                log(
                    std::ptr::null_mut(),
                    c"warning",
                    &format!("ferrobloom: refusing Bloom payload: {why}"),
                );
                std::ptr::null_mut()
            }
        }
    })
}

/// # Safety
/// `value` must be a `BloomChain` we stored.
unsafe fn chain<'a>(value: *const c_void) -> Option<&'a BloomChain> {
    (value as *const BloomChain).as_ref()
}

extern "C" fn bloom_rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    guard("MBbloom-- rdb_save", (), || {
        // SAFETY: Redis passes our value.
        let Some(c) = (unsafe { chain(value) }) else {
            return;
        };
        save_buffer(rdb, &c.encode_header());
        for link in c.links() {
            for piece in link.data().chunks(SCANDUMP_CHUNK as usize) {
                save_buffer(rdb, piece);
            }
        }
    })
}

/// Emits one `<cmd> key <iterator> <data>` command into an AOF rewrite (the
/// SCANDUMP/LOADCHUNK protocol: iterator 1 carries the header).
pub(crate) fn emit_loadchunk(
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

extern "C" fn bloom_aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    guard("MBbloom-- aof_rewrite", (), || {
        // SAFETY: Redis passes our value.
        let Some(c) = (unsafe { chain(value) }) else {
            return;
        };
        emit_loadchunk(aof, c"BF.LOADCHUNK", key, 1, &c.encode_header());
        let mut iter = 1i64;
        while let Some((next, data)) = c.scandump_chunk(iter) {
            emit_loadchunk(aof, c"BF.LOADCHUNK", key, next, data);
            iter = next;
        }
    })
}

extern "C" fn bloom_mem_usage(value: *const c_void) -> usize {
    guard("MBbloom-- mem_usage", 0, || {
        // SAFETY: Redis passes our value.
        unsafe { chain(value) }.map_or(0, |c| c.mem_usage() as usize)
    })
}

extern "C" fn bloom_digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    guard("MBbloom-- digest", (), || {
        // SAFETY: Redis passes our value.
        let (Some(c), Some(add), Some(end)) = (
            unsafe { chain(value) },
            api!(RedisModule_DigestAddStringBuffer),
            api!(RedisModule_DigestEndSequence),
        ) else {
            return;
        };
        let header = c.encode_header();
        // SAFETY: valid digest; buffers readable.
        unsafe {
            add(md, header.as_ptr() as *const c_char, header.len());
            for link in c.links() {
                add(md, link.data().as_ptr() as *const c_char, link.data().len());
            }
            end(md);
        }
    })
}

extern "C" fn bloom_free(value: *mut c_void) {
    guard("MBbloom-- free", (), || {
        if !value.is_null() {
            // SAFETY: created with Box::into_raw by us; freed once.
            drop(unsafe { Box::from_raw(value as *mut BloomChain) });
        }
    })
}

/// Large filters are freed on the lazy-free thread (effort above 64).
extern "C" fn bloom_free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    guard("MBbloom-- free_effort", 1, || {
        // SAFETY: Redis passes our value.
        unsafe { chain(value) }.map_or(1, |c| 1 + (c.mem_usage() >> 16) as usize)
    })
}

extern "C" fn bloom_copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    guard("MBbloom-- copy", std::ptr::null_mut(), || {
        // SAFETY: Redis passes our value.
        match unsafe { chain(value) }.map(|c| c.try_clone()) {
            Some(Ok(copy)) => Box::into_raw(Box::new(copy)) as *mut c_void,
            _ => std::ptr::null_mut(),
        }
    })
}
