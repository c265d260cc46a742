//! The module's INFO section (`INFO bf` / `INFO modules`): ferrobloom's own
//! version beside the RedisBloom API level it implements.

use std::ffi::CString;

use super::config;
use super::guard::guard;
use super::io::{register_info, InfoOut, InfoSource};
use super::load::LoadCtx;

/// The module's INFO section.
struct Info;

impl InfoSource for Info {
    fn info(out: &mut InfoOut, _for_crash_report: bool) {
        guard("INFO", (), || {
            out.section(c"ferrobloom");
            out.field_str(c"version", crate::VERSION);
            out.field_ll(c"api_level", crate::MODULE_VERSION as i64);
            out.field_ll(c"max_filter_memory", config::MAX_FILTER_MEMORY.get());
            out.field_ll(c"bf_max_links", config::BF_MAX_LINKS.get());
            out.field_str(c"zeroed_allocator", super::alloc::zeroed_allocator());
            out.field_str(c"acl_categories", super::commands::acl_categories());
            out.field_str(c"server_features", &super::server::features());
            for (name, value) in super::stats::info_fields() {
                let Ok(name) = CString::new(name) else {
                    continue;
                };
                out.field_ll(&name, value);
            }
            for (name, value) in super::defrag::info_fields() {
                let Ok(name) = CString::new(name) else {
                    continue;
                };
                out.field_ll(&name, value);
            }
        })
    }
}

pub fn register(ctx: LoadCtx) {
    register_info::<Info>(ctx);
}
