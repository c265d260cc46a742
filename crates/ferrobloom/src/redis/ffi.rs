//! Raw access to the Redis module API: the function pointers the server fills in
//! at load time ([`api!`]), module strings and the server log. Nothing else in
//! the Redis layer calls the API except through these and `ctx`/`key`.
//!
//! Every function pointer of the API is an `Option` filled in by
//! `RedisModule_Init`; a missing one (an older server) makes the call a no-op or
//! an error instead of a panic.

use std::ffi::{c_char, CStr};

use redis_module::raw;

/// Fetches an API function pointer (a copy of the `Option`).
macro_rules! api {
    ($name:ident) => {
        // SAFETY: reading a function pointer the server filled in at load time;
        // written once during RedisModule_Init, read-only afterwards.
        unsafe { raw::$name }
    };
}
pub(crate) use api;

/// The bytes of a module string.
pub fn str_bytes<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let Some(f) = api!(RedisModule_StringPtrLen) else {
        return &[];
    };
    if s.is_null() {
        return &[];
    }
    let mut len: usize = 0;
    // SAFETY: s is a valid module string; the pointer stays valid while it lives.
    let p = unsafe { f(s, &mut len) };
    if p.is_null() {
        return &[];
    }
    // SAFETY: Redis guarantees `len` readable bytes at `p`.
    unsafe { std::slice::from_raw_parts(p as *const u8, len) }
}

/// Logs to the server log (a null context logs as the module).
pub fn log(ctx: *mut raw::RedisModuleCtx, level: &CStr, msg: &str) {
    let Some(f) = api!(RedisModule_Log) else {
        return;
    };
    let mut buf = Vec::with_capacity(msg.len() + 1);
    buf.extend(msg.bytes().filter(|&b| b != 0));
    buf.push(0);
    // SAFETY: "%s" with a NUL-terminated buffer.
    unsafe {
        f(
            ctx,
            level.as_ptr(),
            c"%s".as_ptr(),
            buf.as_ptr() as *const c_char,
        )
    };
}
