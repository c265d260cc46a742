//! The module's global allocator: Redis' allocator (so `used_memory`, maxmemory
//! and MEMORY STATS account for every filter), but fallible. `RedisAlloc` from
//! redis-module uses `RedisModule_Alloc`, which aborts the server when memory
//! runs out; this one uses `RedisModule_TryAlloc` / `RedisModule_TryCalloc`, so
//! an allocation failure comes back as null and the filter code turns it into
//! `ERR Insufficient memory ...` (Rust's infallible paths still abort, but no
//! filter-sized allocation takes them: see `core::bits::Words::zeroed`).
//!
//! # Zeroed allocations (every filter's bits and slots)
//! They must cost no time proportional to their size, so that reserving a 2.5 GB
//! filter does not stall the server: the allocator's calloc maps fresh pages that
//! the OS zeroes when they are first written (RSS grows with use, as RedisBloom's
//! filters do). Which call gets that depends on the server:
//! - `RedisModule_TryCalloc` (Redis 7.4+, Valkey 8+): lazy and fallible, always used
//!   when present.
//! - Redis 7.0-7.2 have no fallible calloc. A zeroed allocation of at least
//!   [`LAZY_ZERO_MIN`] bytes then uses `RedisModule_Calloc` (lazy, but it aborts if
//!   the allocator gets no address space, exactly as RedisBloom's calloc does);
//!   smaller ones use `RedisModule_TryAlloc` and zero the bytes (fallible, and at
//!   most 1 MiB of writes). Every such allocation is bounded before it is made by
//!   `bf.max-filter-memory` (and the command refused above `maxmemory` by Redis,
//!   as every command of the module is `deny-oom`); with the kernel's default
//!   overcommit an address-space failure of that size does not happen in practice,
//!   while zeroing 2.5 GB eagerly took 2.7-3.3 s of main-thread time.

// Unit tests use the system allocator instead.
#![cfg_attr(any(test, fuzzing, feature = "system-alloc"), allow(dead_code))]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use redis_module::raw;

pub struct FerroAlloc;

/// Zeroed allocations at least this large use the server's lazy calloc even
/// where it aborts on failure (module doc).
pub const LAZY_ZERO_MIN: usize = 1 << 20;

/// Which zeroed allocation the server offers (for `INFO bf`).
pub fn zeroed_allocator() -> &'static str {
    // SAFETY: reading function pointers filled in at load time.
    if unsafe { raw::RedisModule_TryCalloc }.is_some() {
        "trycalloc"
    } else {
        "calloc-above-1mb"
    }
}

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
            return aligned(f(1, size) as *mut u8, layout);
        }
        if size >= LAZY_ZERO_MIN {
            if let Some(f) = raw::RedisModule_Calloc {
                return aligned(f(1, size) as *mut u8, layout);
            }
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

/// `p`, or null (an allocation failure) if the allocator did not align it as the
/// layout asks. jemalloc aligns large allocations to pages, so this only guards
/// against an allocator that does not.
///
/// # Safety
/// `p` is null or was just returned by the server's allocator.
unsafe fn aligned(p: *mut u8, layout: Layout) -> *mut u8 {
    if p.is_null() || (p as usize).is_multiple_of(layout.align()) {
        return p;
    }
    if let Some(f) = raw::RedisModule_Free {
        f(p as *mut c_void);
    }
    std::ptr::null_mut()
}
