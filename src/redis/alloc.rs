//! The module's global allocator: Redis' allocator (so `used_memory`, maxmemory
//! and MEMORY STATS account for every filter), but fallible. `RedisAlloc` from
//! redis-module uses `RedisModule_Alloc`, which aborts the server when memory
//! runs out; this one uses `RedisModule_TryAlloc` / `RedisModule_TryCalloc`, so
//! an allocation failure comes back as null and the filter code turns it into
//! `ERR Insufficient memory ...` (Rust's infallible paths still abort, but no
//! filter-sized allocation takes them: see `core::bits::Words::zeroed`).

// Unit tests use the system allocator instead.
#![cfg_attr(any(test, fuzzing, feature = "system-alloc"), allow(dead_code))]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use redis_module::raw;

pub struct FerroAlloc;

/// Rounds the size up to a multiple of the alignment; the Redis allocator
/// (jemalloc) aligns every size class to its largest power-of-two divisor.
fn padded(layout: Layout) -> usize {
    (layout.size() + layout.align() - 1) & !(layout.align() - 1)
}

unsafe impl GlobalAlloc for FerroAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
            (Some(f), _) => f(size) as *mut u8,
            (None, Some(f)) => f(size) as *mut u8,
            (None, None) => std::ptr::null_mut(),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        if let Some(f) = raw::RedisModule_TryCalloc {
            return f(1, size) as *mut u8;
        }
        let p = self.alloc(layout);
        if !p.is_null() {
            std::ptr::write_bytes(p, 0, size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        if let Some(f) = raw::RedisModule_Free {
            f(ptr as *mut c_void);
        }
    }
}
