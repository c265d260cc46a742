//! Active defragmentation: the data types' `defrag` callback.
//!
//! With `activedefrag yes`, the server walks the keyspace and asks each value's
//! type to move its allocations out of sparsely used allocator pages
//! (`RedisModule_DefragAlloc`: the allocator copies the block to a fuller page
//! and frees the old one, or declines). The server moves the module value's
//! own wrapper; this callback moves the rest: the filter's top-level box, then
//! every heap block the filter owns, in the order of the core's relocation pass
//! (`ferrobloom_core::relocate`): a Bloom chain's link list and each link's bit
//! array and written-chunk map; a windowed filter's box, generation list, each
//! generation's chain and the sizing cache; a cuckoo filter's sub-filter list,
//! each table and its map, and its open SCANDUMP walks.
//!
//! **Which blocks move.** Blocks of [`MOVE_MAX`] bytes or more are never
//! offered: they are lazily zeroed (`alloc`), so a copy would make the pages
//! the filter never wrote resident, and it would cost main-thread time
//! proportional to the block. Nothing is lost by it: the servers' jemalloc
//! moves only blocks its small size classes serve (up to 14 KiB with 4 KiB
//! pages); larger blocks are runs of whole pages that jemalloc returns to the
//! OS itself when freed, so they leave no fragmented pages behind.
//!
//! **Bounded steps.** A value whose free effort (`types::free_effort`: one
//! unit per block, plus one per 64 KiB) exceeds the server's
//! `active-defrag-max-scan-fields` is deferred by the server to its "late"
//! pass: there `RedisModule_DefragShouldStop` says when the cycle's time is up,
//! and the callback stores where it stopped (`RedisModule_DefragCursorSet`)
//! and returns 1; the server calls it again later with that cursor. A smaller
//! value is moved in one call (a bounded number of blocks, each a copy of at
//! most 14 KiB with jemalloc).
//!
//! **Servers that cannot.** Redis 7.0 built with the system's jemalloc, and
//! Valkey built with libc malloc, refuse `activedefrag yes`: the callback is
//! registered but never called. Where the API is missing the callback does
//! nothing.

use std::alloc::Layout;
use std::ffi::{c_int, c_ulong, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use redis_module::raw;

use super::alloc;
// `bf.bloom-defrag-enabled` (valkey-bloom's name): whether the callback moves anything.
use super::config::defrag_enabled;
use super::ffi::api;
use super::guard::guard;
use super::value::{FilterValue, Stored};
use ferrobloom_core::relocate::{Pass, Relocation, Relocator};

/// Blocks at least this large are not offered (module doc).
pub const MOVE_MAX: usize = alloc::LAZY_ZERO_MIN;

/// Blocks the allocator moved, blocks it declined, and late passes that
/// stopped for time and resume later (`INFO bf`).
static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);
static PAUSED: AtomicU64 = AtomicU64::new(0);

/// The `INFO bf` fields of defragmentation.
pub fn info_fields() -> [(&'static str, i64); 3] {
    let v = |c: &AtomicU64| i64::try_from(c.load(Relaxed)).unwrap_or(i64::MAX);
    [
        ("defrag_hits", v(&HITS)),
        ("defrag_misses", v(&MISSES)),
        ("defrag_paused", v(&PAUSED)),
    ]
}

type DefragAllocFn =
    unsafe extern "C" fn(*mut raw::RedisModuleDefragCtx, *mut c_void) -> *mut c_void;

/// The server's defrag API for one callback.
struct ServerRelocator {
    ctx: *mut raw::RedisModuleDefragCtx,
    defrag_alloc: DefragAllocFn,
}

impl ServerRelocator {
    fn offer(&mut self, block: *mut u8, layout: Layout) -> Option<*mut u8> {
        if alloc::allocation_size(layout) >= MOVE_MAX {
            return None;
        }
        let (ctx, f) = (self.ctx, self.defrag_alloc);
        // SAFETY: `block` is a live allocation of the module's global
        // allocator with `layout` (every caller passes a block the value owns,
        // with the layout it was allocated with), and nothing uses it while
        // this runs (the main thread runs the callback). `RedisModule_DefragAlloc`
        // on the allocator's pointer returns null or a same-size-class copy of
        // the whole allocation and frees the old one, as `alloc::relocate`
        // requires.
        let moved = unsafe { alloc::relocate(block, layout, |p| f(ctx, p)) };
        match moved {
            Some(_) => HITS.fetch_add(1, Relaxed),
            None => MISSES.fetch_add(1, Relaxed),
        };
        moved
    }
}

// SAFETY: `relocate` returns `Some` only for a block `alloc::relocate` moved
// within the module's global allocator (the server's allocator), with the same
// layout and bytes, the old one freed by the server: the contract of
// `Relocator`.
unsafe impl Relocator for ServerRelocator {
    fn relocate(&mut self, block: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
        NonNull::new(self.offer(block.as_ptr(), layout)?)
    }

    fn should_stop(&mut self) -> bool {
        match api!(RedisModule_DefragShouldStop) {
            // SAFETY: the defrag context the server passed to this callback.
            Some(f) => unsafe { f(self.ctx) != 0 },
            None => false,
        }
    }
}

/// The `defrag` callback of both types: 1 when the value is not done (the
/// cursor is set), else 0.
pub extern "C" fn defrag<T: FilterValue>(
    ctx: *mut raw::RedisModuleDefragCtx,
    _key: *mut raw::RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    guard("defrag", 0, || defrag_value::<T>(ctx, value))
}

fn defrag_value<T: FilterValue>(
    ctx: *mut raw::RedisModuleDefragCtx,
    value: *mut *mut c_void,
) -> c_int {
    let Some(defrag_alloc) = api!(RedisModule_DefragAlloc) else {
        return 0;
    };
    if !defrag_enabled() || ctx.is_null() || value.is_null() {
        return 0;
    }
    let mut cursor: c_ulong = 0;
    if let Some(get) = api!(RedisModule_DefragCursorGet) {
        // SAFETY: the callback's defrag context; `cursor` is writable. Outside
        // a late pass the call fails and leaves it 0.
        if unsafe { get(ctx, &mut cursor) } != raw::REDISMODULE_OK as c_int {
            cursor = 0;
        }
    }
    let mut relocator = ServerRelocator { ctx, defrag_alloc };
    if cursor == 0 {
        // The value's own box, once per visit (a resumed pass starts past it).
        // SAFETY: `value` points to the module value's pointer, which holds a
        // `Box<Stored<T>>` of ours (`rdb_load`, `copy` and the commands create
        // it with `Box::into_raw`).
        let v = unsafe { *value } as *mut u8;
        if !v.is_null() {
            if let Some(new) = relocator.offer(v, Layout::new::<Stored<T>>()) {
                // SAFETY: as above; the server reads the value from there.
                unsafe { *value = new as *mut c_void };
            }
        }
    }
    // SAFETY: as above: a live `Stored<T>` of ours, used by nothing else
    // while the callback runs.
    let Some(v) = (unsafe { (*value as *mut Stored<T>).as_mut() }).map(|s| &mut s.filter) else {
        return 0;
    };
    let mut pass = Pass::new(&mut relocator, cursor as u64);
    v.relocate_blocks(&mut pass);
    match pass.finish() {
        Relocation::Done => 0,
        Relocation::Paused(at) => {
            let (Some(set), Ok(at)) = (api!(RedisModule_DefragCursorSet), c_ulong::try_from(at))
            else {
                return 0;
            };
            // SAFETY: the callback's defrag context.
            if unsafe { set(ctx, at) } == raw::REDISMODULE_OK as c_int {
                PAUSED.fetch_add(1, Relaxed);
                1
            } else {
                0
            }
        }
    }
}
