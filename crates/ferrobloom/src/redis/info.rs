//! The module's INFO section (`INFO bf` / `INFO modules`): ferrobloom's own
//! version beside the RedisBloom API level it implements.

use std::ffi::{c_char, c_int, CString};

use redis_module::raw;

use super::api::api;
use super::config;
use super::guard::guard;

extern "C" fn info_func(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    guard("INFO", (), || {
        let (Some(section), Some(field_str), Some(field_ll)) = (
            api!(RedisModule_InfoAddSection),
            api!(RedisModule_InfoAddFieldCString),
            api!(RedisModule_InfoAddFieldLongLong),
        ) else {
            return;
        };
        let version = CString::new(crate::VERSION).unwrap_or_default();
        // SAFETY: valid info context; NUL-terminated strings.
        unsafe {
            section(ctx, c"ferrobloom".as_ptr() as *mut c_char);
            field_str(
                ctx,
                c"version".as_ptr() as *mut c_char,
                version.as_ptr() as *mut c_char,
            );
            field_ll(
                ctx,
                c"api_level".as_ptr() as *mut c_char,
                crate::MODULE_VERSION as i64,
            );
            field_ll(
                ctx,
                c"max_filter_memory".as_ptr() as *mut c_char,
                config::MAX_FILTER_MEMORY.get(),
            );
            field_ll(
                ctx,
                c"bf_max_links".as_ptr() as *mut c_char,
                config::BF_MAX_LINKS.get(),
            );
            let zeroed = CString::new(super::alloc::zeroed_allocator()).unwrap_or_default();
            field_str(
                ctx,
                c"zeroed_allocator".as_ptr() as *mut c_char,
                zeroed.as_ptr() as *mut c_char,
            );
            let acl = CString::new(super::commands::acl_categories()).unwrap_or_default();
            field_str(
                ctx,
                c"acl_categories".as_ptr() as *mut c_char,
                acl.as_ptr() as *mut c_char,
            );
            let features = CString::new(super::server::features()).unwrap_or_default();
            field_str(
                ctx,
                c"server_features".as_ptr() as *mut c_char,
                features.as_ptr() as *mut c_char,
            );
            for (name, value) in super::stats::info_fields() {
                let Ok(name) = CString::new(name) else {
                    continue;
                };
                field_ll(ctx, name.as_ptr() as *mut c_char, value);
            }
            for (name, value) in super::defrag::info_fields() {
                let Ok(name) = CString::new(name) else {
                    continue;
                };
                field_ll(ctx, name.as_ptr() as *mut c_char, value);
            }
        }
    })
}

pub fn register(ctx: *mut raw::RedisModuleCtx) {
    if let Some(f) = api!(RedisModule_RegisterInfoFunc) {
        // SAFETY: valid load context.
        unsafe { f(ctx, Some(info_func)) };
    }
}
