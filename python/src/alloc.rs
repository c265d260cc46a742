//! The package's global allocator: the system allocator, with zeroed
//! allocations of any alignment served by `calloc`, so a filter's bits cost
//! memory as they are written, not when the filter is created (as on the
//! server, whose allocator does the same: `src/redis/alloc.rs`).
//!
//! Bloom bit arrays are 64-byte aligned (one cache line per block,
//! `ferrobloom_core::bits`). The system allocator serves an alignment above
//! 16 bytes with `posix_memalign` and zeroes a zeroed allocation itself, byte
//! by byte: `BloomFilter(2**30, 0.01)` took 0.9 s and 1.4 GB of resident
//! memory at once. Here such an allocation takes `align` bytes more from
//! `calloc` (whose large blocks are fresh pages the kernel zeroes when first
//! written), and the block's start is stored just below the aligned pointer.

use std::alloc::{GlobalAlloc, Layout, System};

/// The alignment the system allocator's `malloc` and `calloc` give on every
/// 64-bit target the package is built for.
const MIN_ALIGN: usize = 16;

pub struct LazyZeroed;

/// The underlying block of an allocation aligned above [`MIN_ALIGN`].
fn outer(layout: Layout) -> Option<Layout> {
    let size = layout.size().checked_add(layout.align())?;
    Layout::from_size_align(size, MIN_ALIGN).ok()
}

/// An allocation aligned above [`MIN_ALIGN`], zeroed by `calloc` if asked.
///
/// # Safety
/// `layout` has a non-zero size and an alignment above [`MIN_ALIGN`].
unsafe fn alloc_aligned(layout: Layout, zeroed: bool) -> *mut u8 {
    let Some(outer) = outer(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `outer` is at least as large as `layout` (non-zero, the
    // caller's contract).
    let base = unsafe {
        if zeroed {
            System.alloc_zeroed(outer)
        } else {
            System.alloc(outer)
        }
    };
    if base.is_null() {
        return base;
    }
    let align = layout.align();
    // Between MIN_ALIGN (>= 8, room for the pointer) and `align` bytes past
    // `base`, inside the `size + align` bytes of the block.
    let offset = align - (base as usize & (align - 1));
    // SAFETY: as just said, the block and the 8 bytes below it lie inside
    // the allocation.
    unsafe {
        let block = base.add(offset);
        (block as *mut *mut u8).sub(1).write_unaligned(base);
        block
    }
}

// SAFETY: every layout at or below MIN_ALIGN goes to the system allocator
// unchanged; every other one is served by `alloc_aligned` and released by
// `dealloc` from the pointer stored below the block, with the same outer
// layout, so each block is freed by the allocator that gave it.
unsafe impl GlobalAlloc for LazyZeroed {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: in both branches the caller's GlobalAlloc contract (a
        // non-zero size), passed on; alloc_aligned only above MIN_ALIGN.
        unsafe {
            if layout.align() <= MIN_ALIGN {
                System.alloc(layout)
            } else {
                alloc_aligned(layout, false)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if layout.align() <= MIN_ALIGN {
                System.alloc_zeroed(layout)
            } else {
                alloc_aligned(layout, true)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() <= MIN_ALIGN {
            // SAFETY: a block of the system allocator with this layout.
            return unsafe { System.dealloc(ptr, layout) };
        }
        // SAFETY: `ptr` came from alloc_aligned with this layout, which stored
        // the system allocator's pointer in the 8 bytes below it.
        let base = unsafe { (ptr as *mut *mut u8).sub(1).read_unaligned() };
        if let Some(outer) = outer(layout) {
            // SAFETY: `base` was allocated by the system allocator with `outer`.
            unsafe { System.dealloc(base, outer) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            // SAFETY: the caller's GlobalAlloc contract, passed on.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let Ok(new) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a non-zero size (GlobalAlloc::realloc's contract) and an
        // alignment above MIN_ALIGN.
        let p = unsafe { alloc_aligned(new, false) };
        if !p.is_null() {
            // SAFETY: both blocks hold at least the bytes copied and are
            // distinct allocations; `ptr` is a live block of this allocator
            // with `layout`.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        p
    }
}
