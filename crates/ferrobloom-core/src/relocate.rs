//! Moving a filter's heap blocks to new addresses: what a server's active
//! defragmentation needs, without knowing the server.
//!
//! A filter owns its blocks through `Vec`s and boxes (links, bit arrays, the
//! written-chunk maps, generations, cuckoo tables). A pass offers each block in a
//! fixed order to a [`Relocator`], which may move it (the server's allocator
//! copies it to a less fragmented place and frees the old one); the filter then
//! holds the new address in place of the old. Nothing else changes: the same
//! bytes, the same capacities, the same answers.
//!
//! Blocks are numbered in the order a pass offers them, and every block counts
//! whether it exists or not (an empty map still takes its number), so a value's
//! numbering depends only on its shape. A pass may stop when the relocator says
//! time is up ([`Relocator::should_stop`], asked before every block but the
//! first of a pass, so each pass makes progress) and is resumed later from the
//! number it stopped at ([`Relocation::Paused`]). If the value changed shape in
//! between (a link added, a generation dropped) the resumed pass may offer some
//! blocks twice or miss some until the next visit: never a wrong pointer, as
//! every pass reads the addresses it moves from the value as it is.

use std::alloc::Layout;
use std::ptr::NonNull;

/// What moves a block: implemented by the server layer over its defrag API.
///
/// # Safety
/// When [`relocate`](Relocator::relocate) returns `Some(new)`:
/// - `new` is a block of the **global allocator** that can be freed (and
///   reallocated) with `layout`, exactly as the old one could: the old block was
///   allocated by the global allocator with `layout`, and the implementation
///   must move it within that allocator (so a `Vec` or `Box` rebuilt on `new`
///   frees it correctly later);
/// - its first `layout.size()` bytes equal the old block's;
/// - the old block is freed: the caller never reads or frees it again.
///
/// When it returns `None`, the block is untouched and stays where it was.
pub unsafe trait Relocator {
    /// Moves `block`, allocated by the global allocator with `layout`, or not.
    fn relocate(&mut self, block: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>>;
    /// Whether the pass must stop now (a time budget); asked before every block
    /// but the first of a pass.
    fn should_stop(&mut self) -> bool;
}

/// Where a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relocation {
    /// Every block from the starting number on was offered.
    Done,
    /// Stopped before the block with this number (never 0): resume there.
    Paused(u64),
}

/// One pass over a value's blocks (see the module doc).
pub struct Pass<'a> {
    relocator: &'a mut dyn Relocator,
    /// Number of the next block.
    next: u64,
    /// The first block this pass offers.
    from: u64,
    /// Blocks offered in this pass.
    offered: u64,
    paused: Option<u64>,
}

impl<'a> Pass<'a> {
    /// A pass that offers the blocks numbered `from` and on.
    pub fn new(relocator: &'a mut dyn Relocator, from: u64) -> Self {
        Pass {
            relocator,
            next: 0,
            from,
            offered: 0,
            paused: None,
        }
    }

    /// How the pass ended.
    pub fn finish(self) -> Relocation {
        match self.paused {
            Some(at) => Relocation::Paused(at),
            None => Relocation::Done,
        }
    }

    /// Blocks offered so far.
    pub fn offered(&self) -> u64 {
        self.offered
    }

    /// Whether the pass stopped.
    pub(crate) fn stopped(&self) -> bool {
        self.paused.is_some()
    }

    /// Skips `n` blocks at once if they all come before the first one this
    /// pass offers (so resuming a value of many links costs no walk over those
    /// already done). True if skipped.
    pub(crate) fn skip(&mut self, n: u64) -> bool {
        match self.next.checked_add(n) {
            Some(end) if end <= self.from => {
                self.next = end;
                true
            }
            _ => false,
        }
    }

    /// Takes the next number: whether that block is to be offered.
    fn take(&mut self) -> bool {
        let i = self.next;
        self.next = self.next.saturating_add(1);
        if self.paused.is_some() || i < self.from {
            return false;
        }
        if self.offered > 0 && self.relocator.should_stop() {
            self.paused = Some(i);
            return false;
        }
        self.offered += 1;
        true
    }

    /// Offers the block of `ptr` with `layout` (none for an empty one).
    fn offer(&mut self, ptr: *mut u8, layout: Option<Layout>) -> Option<NonNull<u8>> {
        if !self.take() {
            return None;
        }
        let layout = layout.filter(|l| l.size() > 0)?;
        self.relocator.relocate(NonNull::new(ptr)?, layout)
    }

    /// A `Vec`'s buffer (one block number).
    pub(crate) fn vec<T>(&mut self, v: &mut Vec<T>) {
        let (len, cap) = (v.len(), v.capacity());
        let layout = Layout::array::<T>(cap).ok();
        if let Some(new) = self.offer(v.as_mut_ptr() as *mut u8, layout) {
            // SAFETY: by the `Relocator` contract, `new` is a global-allocator
            // block for `Layout::array::<T>(cap)` (the layout the Vec allocated
            // with) holding the old buffer's bytes, i.e. its `len` initialised
            // elements moved bitwise; the old buffer is freed, so the old Vec is
            // overwritten without being dropped.
            unsafe { std::ptr::write(v, Vec::from_raw_parts(new.as_ptr() as *mut T, len, cap)) };
        }
    }

    /// A boxed slice (one block number).
    pub(crate) fn boxed_slice<T>(&mut self, b: &mut Box<[T]>) {
        let len = b.len();
        let layout = Layout::array::<T>(len).ok();
        if let Some(new) = self.offer(b.as_mut_ptr() as *mut u8, layout) {
            // SAFETY: as in `vec`: the layout is the one a `Box<[T]>` of `len`
            // elements is allocated and freed with.
            unsafe {
                std::ptr::write(
                    b,
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                        new.as_ptr() as *mut T,
                        len,
                    )),
                )
            };
        }
    }

    /// A box (one block number).
    pub(crate) fn boxed<T>(&mut self, b: &mut Box<T>) {
        let ptr: *mut T = &mut **b;
        if let Some(new) = self.offer(ptr as *mut u8, Some(Layout::new::<T>())) {
            // SAFETY: as in `vec`, with `Layout::new::<T>()`, the box's layout.
            unsafe { std::ptr::write(b, Box::from_raw(new.as_ptr() as *mut T)) };
        }
    }

    /// Offers each item's blocks (`blocks(item)` numbers each, `each` offers
    /// them), skipping whole items that come before the pass's start.
    pub(crate) fn items<T>(
        &mut self,
        items: &mut [T],
        blocks: impl Fn(&T) -> u64,
        mut each: impl FnMut(&mut Self, &mut T),
    ) {
        for item in items {
            if self.stopped() {
                return;
            }
            if !self.skip(blocks(item)) {
                each(self, item);
            }
        }
    }
}
