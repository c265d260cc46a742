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
#![cfg_attr(any(test, fuzzing), allow(dead_code))]

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

/// Alignment every server allocator gives (jemalloc and glibc malloc: 16 bytes).
const MIN_ALIGN: usize = 16;

/// Rounds the size up to a multiple of the alignment.
fn padded(layout: Layout) -> usize {
    (layout.size() + layout.align() - 1) & !(layout.align() - 1)
}

/// Raw allocation of `size` bytes, zeroed if asked (module doc for which call).
/// Null when the server cannot allocate.
fn raw_alloc(size: usize, zeroed: bool) -> *mut u8 {
    if zeroed {
        // SAFETY: reading function pointers the server filled in at load time,
        // read-only afterwards (here and below).
        if let Some(f) = unsafe { raw::RedisModule_TryCalloc } {
            // SAFETY: the server's calloc; any size is accepted (null on failure).
            return unsafe { f(1, size) } as *mut u8;
        }
        if size >= LAZY_ZERO_MIN {
            // SAFETY: as above.
            if let Some(f) = unsafe { raw::RedisModule_Calloc } {
                // SAFETY: the server's calloc.
                return unsafe { f(1, size) } as *mut u8;
            }
        }
    }
    // SAFETY: as above.
    let p = match unsafe { (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) } {
        // SAFETY: the server's malloc (null on failure for TryAlloc).
        (Some(f), _) => (unsafe { f(size) }) as *mut u8,
        // SAFETY: as above.
        (None, Some(f)) => (unsafe { f(size) }) as *mut u8,
        (None, None) => std::ptr::null_mut(),
    };
    if zeroed && !p.is_null() {
        // SAFETY: p is a fresh allocation of `size` bytes.
        unsafe { std::ptr::write_bytes(p, 0, size) };
    }
    p
}

/// Allocates for `layout`. Alignments above [`MIN_ALIGN`] (the 64-byte cache
/// lines of Bloom bit arrays) are served by over-allocating `align` bytes and
/// storing the allocator's pointer just below the aligned block: the servers'
/// allocators differ (jemalloc aligns large blocks to pages, glibc malloc in the
/// Valkey builds only to 16 bytes), so the module never relies on either.
fn alloc_layout(layout: Layout, zeroed: bool) -> *mut u8 {
    let size = padded(layout);
    let align = layout.align();
    if align <= MIN_ALIGN {
        return raw_alloc(size, zeroed);
    }
    let Some(total) = size.checked_add(align) else {
        return std::ptr::null_mut();
    };
    let base = raw_alloc(total, zeroed);
    if base.is_null() {
        return base;
    }
    // At least 8 bytes (MIN_ALIGN) and at most `align` bytes past `base`.
    let offset = align - (base as usize & (align - 1));
    // SAFETY: offset <= align, within the `size + align` bytes allocated; the
    // 8 bytes below `block` are at or after `base` (offset >= MIN_ALIGN >= 8).
    unsafe {
        let block = base.add(offset);
        (block as *mut *mut u8).sub(1).write_unaligned(base);
        block
    }
}

/// The pointer the server's allocator returned for a block of `align`.
///
/// # Safety
/// `block` was returned by [`alloc_layout`] with this alignment.
unsafe fn base_of(block: *mut u8, align: usize) -> *mut u8 {
    if align <= MIN_ALIGN {
        block
    } else {
        // SAFETY: alloc_layout stored the base pointer in the 8 bytes below
        // `block` (the caller's contract).
        unsafe { (block as *mut *mut u8).sub(1).read_unaligned() }
    }
}

/// What the allocator really holds for a block the module allocated with
/// alignment `align` (for MEMORY USAGE): its usable size, or `requested` if the
/// server cannot tell.
///
/// # Safety
/// `block` is a live allocation of the module's global allocator with `align`.
pub unsafe fn usable_size(block: *const u8, align: usize, requested: usize) -> usize {
    // SAFETY: reading a function pointer the server filled in at load time.
    match unsafe { raw::RedisModule_MallocSize } {
        // SAFETY: the base pointer of a live allocation of the server's
        // allocator (the caller's contract, `base_of`).
        Some(f) => unsafe { f(base_of(block as *mut u8, align) as *mut c_void) }.max(requested),
        None => requested,
    }
}

/// Bytes the server's allocator holds for a block of `layout` (before its
/// rounding): the padded size, plus the alignment for an over-aligned block.
pub fn allocation_size(layout: Layout) -> usize {
    let size = padded(layout);
    if layout.align() <= MIN_ALIGN {
        size
    } else {
        size.saturating_add(layout.align())
    }
}

/// Moves a block the module allocated, for active defragmentation: `move_raw`
/// is the server's move (`RedisModule_DefragAlloc`), which takes the
/// allocator's pointer and either returns null (not moved, nothing changed) or
/// a new allocation of the same size class holding a copy of all its bytes,
/// having freed the old one. Returns the block's new address.
///
/// A block of alignment at most [`MIN_ALIGN`] is the allocation itself. An
/// over-aligned one sits at an offset inside its allocation that depends on
/// where the allocation lies: the copy keeps the old offset, which need not be
/// aligned in the new place, so the bytes are moved (within the new allocation,
/// which is as large as the old) to the new aligned offset, and the new
/// allocator pointer is stored below them for `dealloc`.
///
/// So a block moved here stays a block of this allocator with the same
/// `layout` and the same bytes: the `Relocator` contract the core's
/// relocation passes rely on to rebuild their `Vec`s and boxes on it.
///
/// # Safety
/// `block` is a live allocation of [`FerroAlloc`] with `layout`, not used
/// while this runs; `move_raw` behaves as described above.
pub unsafe fn relocate(
    block: *mut u8,
    layout: Layout,
    move_raw: impl FnOnce(*mut c_void) -> *mut c_void,
) -> Option<*mut u8> {
    let align = layout.align();
    // SAFETY: a live block of alloc_layout with this alignment (the caller's contract).
    let base = unsafe { base_of(block, align) };
    let new_base = move_raw(base as *mut c_void) as *mut u8;
    if new_base.is_null() {
        return None;
    }
    if align <= MIN_ALIGN {
        return Some(new_base);
    }
    // As in `alloc_layout`: both offsets lie in 8..=align, and the allocation
    // holds `padded(layout) + align` bytes, so both ranges are inside it.
    let old_offset = block as usize - base as usize;
    let new_offset = align - (new_base as usize & (align - 1));
    // SAFETY: both offsets and the `padded(layout)` bytes after them lie inside
    // the new allocation (above); `copy` allows the ranges to overlap; the 8
    // bytes below the new block are inside it too (new_offset >= 8).
    unsafe {
        let new_block = new_base.add(new_offset);
        if new_offset != old_offset {
            std::ptr::copy(new_base.add(old_offset), new_block, padded(layout));
        }
        (new_block as *mut *mut u8).sub(1).write_unaligned(new_base);
        Some(new_block)
    }
}

// SAFETY: alloc and alloc_zeroed return null or a block of at least
// `layout.size()` bytes aligned to `layout.align()` (`alloc_layout`), valid
// until dealloc, which frees exactly what alloc_layout allocated (`base_of`).
unsafe impl GlobalAlloc for FerroAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        alloc_layout(layout, false)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        alloc_layout(layout, true)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: reading a function pointer the server filled in at load time.
        if let Some(f) = unsafe { raw::RedisModule_Free } {
            // SAFETY: `ptr` came from alloc/alloc_zeroed with this layout (the
            // GlobalAlloc contract), so base_of gives the server's block.
            unsafe { f(base_of(ptr, layout.align()) as *mut c_void) };
        }
    }
}
