//! What the server hands the module's callbacks: the data types' callbacks
//! (RDB load and save, AOF rewrite, DEBUG DIGEST, MEMORY USAGE, free, COPY;
//! active defragmentation's is `defrag.rs`) with their RDB, AOF and digest streams, and the INFO callback with its
//! output. A wrapper file: the callbacks the server calls are generic
//! trampolines here that turn its pointers into safe values and call the safe
//! [`DataType`] (implemented in `types.rs`) and [`InfoSource`] (`info.rs`).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::marker::PhantomData;
use std::ptr::null_mut;

use redis_module::raw;

use super::alloc::usable_size;
use super::ffi::{api, RStr};
use super::key::ModuleType;
use super::load::LoadCtx;
use super::value::{FilterValue, Stored};
use ferrobloom_core::payload::RdbRead;

/// What a data type does in each callback, in safe terms (`types.rs`).
pub trait DataType: FilterValue {
    /// Reads a value saved with encoding version `encver` (`None`: refused).
    fn rdb_load(rdb: &mut RdbIn, encver: c_int) -> Option<Self>;
    fn rdb_save(&self, rdb: &mut RdbOut);
    /// Emits the commands that rebuild the value at `key`.
    fn aof_rewrite(&self, aof: &mut AofOut, key: RStr);
    /// MEMORY USAGE.
    fn memory_usage(held: &Held<Self>) -> usize;
    fn digest(&self, md: &mut Digest);
    /// The server drops the value (DEL, UNLINK, FLUSHALL, a replaced value,
    /// lazy free on the background thread).
    fn free(value: Box<Self>);
    /// Above 64, the server frees the value on the lazy-free thread.
    fn free_effort(&self) -> usize;
    /// COPY (`None`: refused).
    fn copy(&self) -> Option<Self>;
}

/// The value the server passes to a callback: the filter of a `Stored<T>`.
///
/// # Safety
/// `value` is null or a `Stored<T>` this module stored (the server passes only
/// values of the type the callback was registered for), live for `'a`.
unsafe fn value<'a, T>(value: *const c_void) -> Option<&'a T> {
    // SAFETY: null or a live Stored<T> (the caller's contract).
    unsafe { stored::<T>(value) }.map(|s| &s.filter)
}

/// # Safety
/// As [`value`].
unsafe fn stored<'a, T>(value: *const c_void) -> Option<&'a Stored<T>> {
    // SAFETY: null or a live Stored<T> (the caller's contract).
    unsafe { (value as *const Stored<T>).as_ref() }
}

/// # Safety
/// Called by the server only (every trampoline below): a valid IO handle,
/// key or digest for the call, and values of type `T`.
unsafe extern "C" fn rdb_load<T: DataType>(
    rdb: *mut raw::RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    let mut io = RdbIn {
        io: rdb,
        _call: PhantomData,
    };
    match T::rdb_load(&mut io, encver) {
        // A new value: a fresh stamp (`value::Stored`).
        Some(v) => Box::into_raw(Box::new(Stored::new(v))) as *mut c_void,
        None => null_mut(),
    }
}

/// # Safety
/// See [`rdb_load`].
unsafe extern "C" fn rdb_save<T: DataType>(rdb: *mut raw::RedisModuleIO, v: *mut c_void) {
    // SAFETY: the server passes a value of this type.
    if let Some(v) = unsafe { value::<T>(v) } {
        v.rdb_save(&mut RdbOut {
            io: rdb,
            _call: PhantomData,
        });
    }
}

/// # Safety
/// See [`rdb_load`].
unsafe extern "C" fn aof_rewrite<T: DataType>(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    v: *mut c_void,
) {
    // SAFETY: the server passes a value of this type and its key, valid
    // during the call.
    if let (Some(v), Some(key)) = (unsafe { value::<T>(v) }, unsafe { RStr::from_raw(key) }) {
        v.aof_rewrite(
            &mut AofOut {
                io: aof,
                _call: PhantomData,
            },
            key,
        );
    }
}

/// # Safety
/// See [`rdb_load`].
unsafe extern "C" fn mem_usage<T: DataType>(v: *const c_void) -> usize {
    // SAFETY: the server passes a value of this type.
    match unsafe { stored::<T>(v) } {
        Some(stored) => T::memory_usage(&Held { stored }),
        None => 0,
    }
}

/// # Safety
/// See [`rdb_load`].
unsafe extern "C" fn digest<T: DataType>(md: *mut raw::RedisModuleDigest, v: *mut c_void) {
    // SAFETY: the server passes a value of this type.
    if let Some(v) = unsafe { value::<T>(v) } {
        v.digest(&mut Digest {
            md,
            _call: PhantomData,
        });
    }
}

/// # Safety
/// See [`rdb_load`]; the server frees each value once.
unsafe extern "C" fn free<T: DataType>(v: *mut c_void) {
    if !v.is_null() {
        // SAFETY: created with Box::into_raw by this module (rdb_load, copy,
        // `Key::set`); the server gives it back once.
        let stored = unsafe { Box::from_raw(v as *mut Stored<T>) };
        T::free(Box::new(stored.filter));
    }
}

/// # Safety
/// See [`rdb_load`].
unsafe extern "C" fn free_effort<T: DataType>(
    _key: *mut raw::RedisModuleString,
    v: *const c_void,
) -> usize {
    // SAFETY: the server passes a value of this type.
    unsafe { value::<T>(v) }.map_or(1, T::free_effort)
}

/// # Safety
/// See [`rdb_load`].
unsafe extern "C" fn copy<T: DataType>(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    v: *const c_void,
) -> *mut c_void {
    // SAFETY: the server passes a value of this type.
    match unsafe { value::<T>(v) }.and_then(T::copy) {
        // A new value: a fresh stamp.
        Some(copy) => Box::into_raw(Box::new(Stored::new(copy))) as *mut c_void,
        None => null_mut(),
    }
}

/// Registers the data type `T` (RDB encoding version `encver`) with the
/// trampolines above, and records it in `ty`.
pub fn create_data_type<T: DataType>(
    ctx: LoadCtx,
    ty: &ModuleType<T>,
    encver: c_int,
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
        defrag: Some(super::defrag::defrag::<T>),
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    };
    // SAFETY: the valid load context; a NUL-terminated name; the server copies
    // the methods.
    let t = unsafe { create(ctx.as_ptr(), T::TYPE_NAME.as_ptr(), encver, &mut methods) };
    if t.is_null() {
        return Err(format!(
            "could not create data type {} (is RedisBloom loaded too?)",
            T::TYPE_NAME.to_string_lossy()
        ));
    }
    ty.registered(t);
    Ok(())
}

/// A value as the server holds it, for MEMORY USAGE.
pub struct Held<'a, T> {
    /// The server's value: a `Box<Stored<T>>` of the module's global allocator.
    stored: &'a Stored<T>,
}

impl<T: FilterValue> Held<'_, T> {
    pub fn value(&self) -> &T {
        &self.stored.filter
    }

    /// What the allocator really holds for the value and every heap block it
    /// owns (each block's usable size, as `used_memory` counts it), or `None`
    /// where the server cannot say.
    pub fn allocated(&self) -> Option<usize> {
        api!(RedisModule_MallocSize)?;
        let v = self.stored as *const Stored<T> as *const u8;
        // SAFETY: the value is a live Box<Stored<T>> of the module's global
        // allocator (the server's value, `Held` is only made from it), and
        // every block `heap_blocks` lists is a live allocation of it with that
        // alignment (`BloomFilter::heap_blocks`, `CuckooFilter::heap_blocks`).
        let mut total = unsafe {
            usable_size(
                v,
                std::mem::align_of::<Stored<T>>(),
                std::mem::size_of::<Stored<T>>(),
            )
        };
        self.stored.filter.heap_blocks(&mut |p, n, align| {
            // SAFETY: as above.
            total = total.saturating_add(unsafe { usable_size(p, align, n) });
        });
        Some(total)
    }
}

/// The RDB stream a value is loaded from (valid during the callback).
pub struct RdbIn<'a> {
    io: *mut raw::RedisModuleIO,
    _call: PhantomData<&'a mut ()>,
}

impl RdbIn<'_> {
    /// Whether the stream failed (a truncated payload).
    fn failed(&self) -> bool {
        match api!(RedisModule_IsIOError) {
            // SAFETY: a valid IO handle.
            Some(f) => unsafe { f(self.io) != 0 },
            None => false,
        }
    }

    pub fn unsigned(&self) -> Option<u64> {
        let f = api!(RedisModule_LoadUnsigned)?;
        // SAFETY: a valid IO handle.
        let v = unsafe { f(self.io) };
        (!self.failed()).then_some(v)
    }

    pub fn double(&self) -> Option<f64> {
        let f = api!(RedisModule_LoadDouble)?;
        // SAFETY: a valid IO handle.
        let v = unsafe { f(self.io) };
        (!self.failed()).then_some(v)
    }

    pub fn buffer(&self) -> Option<RdbBuffer> {
        let f = api!(RedisModule_LoadStringBuffer)?;
        let mut len = 0usize;
        // SAFETY: a valid IO handle.
        let ptr = unsafe { f(self.io, &mut len) };
        let buf = RdbBuffer { ptr, len };
        if self.failed() || ptr.is_null() {
            return None;
        }
        Some(buf)
    }

    /// Whether the payload comes from the server's own data or from its
    /// primary: the server is loading (startup, DEBUG RELOAD, full sync), or
    /// this is a read-only replica (`replica-read-only yes`, the default:
    /// clients cannot write there, so a RESTORE came from the primary's stream).
    pub fn trusted(&self) -> bool {
        let (Some(get_ctx), Some(flags)) = (
            api!(RedisModule_GetContextFromIO),
            api!(RedisModule_GetContextFlags),
        ) else {
            return false;
        };
        // SAFETY: a valid IO handle; the context it returns lives as long as the IO.
        let ctx = unsafe { get_ctx(self.io) };
        !ctx.is_null() && {
            // SAFETY: a valid (non-null) context.
            let f = unsafe { flags(ctx) } as u32;
            let read_only_replica =
                raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_READONLY;
            f & raw::REDISMODULE_CTX_FLAGS_LOADING != 0
                || f & read_only_replica == read_only_replica
        }
    }
}

/// RedisBloom's RDB primitives.
impl RdbRead for RdbIn<'_> {
    type Buf = RdbBuffer;
    fn unsigned(&mut self) -> Option<u64> {
        RdbIn::unsigned(self)
    }
    fn double(&mut self) -> Option<f64> {
        RdbIn::double(self)
    }
    fn buffer(&mut self) -> Option<RdbBuffer> {
        RdbIn::buffer(self)
    }
}

/// A string buffer read from RDB, freed on drop.
pub struct RdbBuffer {
    ptr: *mut c_char,
    len: usize,
}

impl AsRef<[u8]> for RdbBuffer {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the server returned `len` bytes at `ptr` (non-null: `buffer`),
        // owned by this value until it drops.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for RdbBuffer {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        if let Some(free) = api!(RedisModule_Free) {
            // SAFETY: allocated by the server for us, freed once.
            unsafe { free(self.ptr as *mut c_void) };
        }
    }
}

/// The RDB stream a value is saved to (valid during the callback).
pub struct RdbOut<'a> {
    io: *mut raw::RedisModuleIO,
    _call: PhantomData<&'a mut ()>,
}

impl RdbOut<'_> {
    pub fn unsigned(&mut self, v: u64) {
        if let Some(save) = api!(RedisModule_SaveUnsigned) {
            // SAFETY: a valid IO handle.
            unsafe { save(self.io, v) };
        }
    }

    pub fn buffer(&mut self, data: &[u8]) {
        if let Some(f) = api!(RedisModule_SaveStringBuffer) {
            // SAFETY: a valid IO handle; data readable for its length.
            unsafe { f(self.io, data.as_ptr() as *const c_char, data.len()) };
        }
    }
}

/// The AOF rewrite a value emits commands into (valid during the callback).
pub struct AofOut<'a> {
    io: *mut raw::RedisModuleIO,
    _call: PhantomData<&'a mut ()>,
}

impl AofOut<'_> {
    /// Emits `<cmd> key <iter> <data>` (the SCANDUMP/LOADCHUNK protocol).
    pub fn emit(&mut self, cmd: &CStr, key: RStr, iter: i64, data: &[u8]) {
        if let Some(emit) = api!(RedisModule_EmitAOF) {
            // SAFETY: a valid IO handle; "slb" = module string, long long,
            // buffer + length, matching the arguments.
            unsafe {
                emit(
                    self.io,
                    cmd.as_ptr(),
                    c"slb".as_ptr(),
                    key.as_ptr(),
                    iter as libc::c_longlong,
                    data.as_ptr() as *const c_char,
                    data.len(),
                )
            };
        }
    }
}

/// The DEBUG DIGEST a value adds itself to (valid during the callback).
pub struct Digest<'a> {
    md: *mut raw::RedisModuleDigest,
    _call: PhantomData<&'a mut ()>,
}

impl Digest<'_> {
    pub fn add(&mut self, data: &[u8]) {
        if let Some(add) = api!(RedisModule_DigestAddStringBuffer) {
            // SAFETY: a valid digest; data readable for its length.
            unsafe { add(self.md, data.as_ptr() as *const c_char, data.len()) };
        }
    }

    pub fn end_sequence(&mut self) {
        if let Some(end) = api!(RedisModule_DigestEndSequence) {
            // SAFETY: a valid digest.
            unsafe { end(self.md) };
        }
    }
}

/// What the module's INFO section shows (`info.rs`).
pub trait InfoSource {
    fn info(out: &mut InfoOut, for_crash_report: bool);
}

/// The INFO output of the module's section (valid during the callback).
pub struct InfoOut<'a> {
    ctx: *mut raw::RedisModuleInfoCtx,
    _call: PhantomData<&'a mut ()>,
}

impl InfoOut<'_> {
    pub fn section(&mut self, name: &CStr) {
        if let Some(f) = api!(RedisModule_InfoAddSection) {
            // SAFETY: a valid info context; a NUL-terminated name.
            unsafe { f(self.ctx, name.as_ptr()) };
        }
    }

    pub fn field_str(&mut self, name: &CStr, value: &str) {
        let value = CString::new(value).unwrap_or_default();
        if let Some(f) = api!(RedisModule_InfoAddFieldCString) {
            // SAFETY: a valid info context; NUL-terminated strings.
            unsafe { f(self.ctx, name.as_ptr(), value.as_ptr()) };
        }
    }

    pub fn field_ll(&mut self, name: &CStr, value: i64) {
        if let Some(f) = api!(RedisModule_InfoAddFieldLongLong) {
            // SAFETY: a valid info context; a NUL-terminated name.
            unsafe { f(self.ctx, name.as_ptr(), value) };
        }
    }
}

/// # Safety
/// Called by the server only, with a valid info context for the call.
unsafe extern "C" fn info_entry<S: InfoSource>(
    ctx: *mut raw::RedisModuleInfoCtx,
    for_crash_report: c_int,
) {
    S::info(
        &mut InfoOut {
            ctx,
            _call: PhantomData,
        },
        for_crash_report != 0,
    );
}

/// Registers `S` as the module's INFO section.
pub fn register_info<S: InfoSource>(ctx: LoadCtx) {
    if let Some(f) = api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: the valid load context; a static callback.
        unsafe { f(ctx.as_ptr(), Some(info_entry::<S>)) };
    }
}
