//! Raw access to the Redis module API: the function pointers the server fills in
//! at load time ([`api!`]), module strings, the server log, the server clock and
//! the process calls the panic guard needs.
//!
//! `unsafe` lives only in the wrapper files of the Redis layer (this one,
//! `ctx.rs`, `key.rs`, `io.rs`, `load.rs`, `alloc.rs`, `defrag.rs`; checked by
//! `scripts/check-structure.py`): everything else calls the API through the safe
//! functions and types they export. [`api!`] is for those files only.
//!
//! Every function pointer of the API is an `Option` filled in by
//! `RedisModule_Init`; a missing one (an older server) makes the call a no-op or
//! an error instead of a panic.

use std::ffi::{c_char, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

use redis_module::raw;

/// Fetches an API function pointer (a copy of the `Option`).
macro_rules! api {
    ($name:ident) => {
        // SAFETY: reading a function pointer the server filled in at load time;
        // written once during RedisModule_Init, read-only afterwards.
        unsafe { redis_module::raw::$name }
    };
}
pub(crate) use api;

/// A command's entry point as the server calls it (`ctx::command_entry`).
pub type CommandFn = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *mut *mut raw::RedisModuleString,
    std::ffi::c_int,
) -> std::ffi::c_int;

/// The bytes of a module string.
///
/// # Safety
/// `s` is null or a valid module string that lives (unchanged) for `'a`.
pub unsafe fn str_bytes<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let Some(f) = api!(RedisModule_StringPtrLen) else {
        return &[];
    };
    if s.is_null() {
        return &[];
    }
    let mut len: usize = 0;
    // SAFETY: s is a valid module string (the caller's contract).
    let p = unsafe { f(s, &mut len) };
    if p.is_null() {
        return &[];
    }
    // SAFETY: Redis guarantees `len` readable bytes at `p`, valid while `s`
    // lives unchanged, which the caller guarantees for `'a`.
    unsafe { std::slice::from_raw_parts(p as *const u8, len) }
}

/// A module string the server lent for `'a` (a command's argument, the key of
/// an AOF rewrite callback): its bytes live as long as it does.
#[derive(Clone, Copy)]
pub struct RStr<'a> {
    ptr: NonNull<raw::RedisModuleString>,
    _life: PhantomData<&'a [u8]>,
}

impl<'a> RStr<'a> {
    /// # Safety
    /// `ptr` is null (giving `None`) or a valid module string that lives,
    /// unchanged, for `'a`.
    pub unsafe fn from_raw(ptr: *mut raw::RedisModuleString) -> Option<RStr<'a>> {
        NonNull::new(ptr).map(|ptr| RStr {
            ptr,
            _life: PhantomData,
        })
    }

    /// Its bytes (borrowed from the server for `'a`).
    pub fn bytes(&self) -> &'a [u8] {
        // SAFETY: a valid module string for 'a (the constructor's contract).
        unsafe { str_bytes(self.ptr.as_ptr()) }
    }

    /// The raw pointer, for the API calls of the wrapper files.
    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.ptr.as_ptr()
    }
}

/// A module string the module owns (created without a context), freed on drop
/// unless handed to the server with [`OwnedString::into_raw`].
pub struct OwnedString(NonNull<raw::RedisModuleString>);

impl OwnedString {
    /// A new module string holding `bytes` (`None` if the server has no
    /// string API or cannot allocate).
    pub fn new(bytes: &[u8]) -> Option<OwnedString> {
        let create = api!(RedisModule_CreateString)?;
        // SAFETY: a null context creates a string owned by the caller; `bytes`
        // is readable for its length.
        let p = unsafe {
            create(
                std::ptr::null_mut(),
                bytes.as_ptr() as *const c_char,
                bytes.len(),
            )
        };
        NonNull::new(p).map(OwnedString)
    }

    /// Gives up ownership (to the server, which frees it).
    pub fn into_raw(self) -> *mut raw::RedisModuleString {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    /// Takes back a string [`OwnedString::into_raw`] gave up.
    ///
    /// # Safety
    /// `p` is null or came from `into_raw` and is not owned by anyone else.
    pub unsafe fn from_raw(p: *mut raw::RedisModuleString) -> Option<OwnedString> {
        NonNull::new(p).map(OwnedString)
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        if let Some(free) = api!(RedisModule_FreeString) {
            // SAFETY: created with a null context by us, owned, freed once.
            unsafe { free(std::ptr::null_mut(), self.0.as_ptr()) };
        }
    }
}

/// Logs to the server log as the module (no context).
pub fn log(level: &CStr, msg: &str) {
    // SAFETY: a null context is always accepted.
    unsafe { log_in(std::ptr::null_mut(), level, msg) }
}

/// Logs to the server log within a context.
///
/// # Safety
/// `ctx` is null or a valid context of the running command or load.
pub unsafe fn log_in(ctx: *mut raw::RedisModuleCtx, level: &CStr, msg: &str) {
    let Some(f) = api!(RedisModule_Log) else {
        return;
    };
    let mut buf = Vec::with_capacity(msg.len() + 1);
    buf.extend(msg.bytes().filter(|&b| b != 0));
    buf.push(0);
    // SAFETY: "%s" with a NUL-terminated buffer; ctx per the caller's contract.
    unsafe {
        f(
            ctx,
            level.as_ptr(),
            c"%s".as_ptr(),
            buf.as_ptr() as *const c_char,
        )
    };
}

/// The server clock in milliseconds since the Unix epoch (0 if the server has
/// no such call).
pub fn milliseconds() -> i64 {
    match api!(RedisModule_Milliseconds) {
        // SAFETY: no arguments; callable from any thread.
        Some(f) => unsafe { f() },
        None => 0,
    }
}

/// This process's id.
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

/// Ends this (fork child) process at once with `code`, without running the
/// parent's atexit handlers or flushing its stdio buffers.
pub fn exit_child(code: i32) -> ! {
    // SAFETY: _exit has no preconditions; it does not return.
    unsafe { libc::_exit(code) }
}
