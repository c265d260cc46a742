//! Every `unsafe` of the Java binding: the handles Java holds and byte views
//! of Java arrays.
//!
//! A handle is a `long` holding the address of a boxed [`Slot`]: the filter
//! behind a read-write lock, `None` once closed. Java's `close()` empties the
//! slot (the filter's memory is freed at once, and every later call finds it
//! closed); the box itself is freed only by [`free`], which the Java object's
//! `Cleaner` calls once the object is unreachable: every Java method keeps its
//! object reachable until its native call returned
//! (`Reference.reachabilityFence`), so no call can meet a freed box. A handle
//! is never 0 and each Java class passes only handles of its own kind.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use jni::sys::jlong;

use crate::error::{Error, Result};

/// A filter shared with Java: readers run together, writers alone.
pub(crate) struct Slot<T> {
    f: RwLock<Option<T>>,
}

impl<T> Slot<T> {
    /// The filter, locked for reading (a panic in an earlier call does not
    /// lock it out: every operation leaves the filter consistent or refuses).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Option<T>> {
        self.f.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The filter, locked for writing.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Option<T>> {
        self.f.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the filter under the read lock.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> Result<R>) -> Result<R> {
        match &*self.read() {
            Some(t) => f(t),
            None => Err(Error::Closed),
        }
    }

    /// Runs `f` on the filter under the write lock.
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(&mut T) -> Result<R>) -> Result<R> {
        match &mut *self.write() {
            Some(t) => f(t),
            None => Err(Error::Closed),
        }
    }

    /// Drops the filter (outside the lock); later calls find it closed.
    pub(crate) fn close(&self) {
        let old = self.write().take();
        drop(old);
    }

    /// The slot's address, to tell sources apart and lock them in one order.
    pub(crate) fn addr(&self) -> usize {
        self as *const Self as usize
    }
}

/// A new handle owning `f`.
pub(crate) fn new_handle<T>(f: T) -> jlong {
    Box::into_raw(Box::new(Slot {
        f: RwLock::new(Some(f)),
    })) as jlong
}

/// The slot behind a handle Java passed.
pub(crate) fn slot<'a, T>(h: jlong) -> Result<&'a Slot<T>> {
    if h == 0 {
        return Err(Error::Closed);
    }
    // SAFETY: a non-zero handle comes from `new_handle::<T>` (each Java class
    // passes only handles of its own kind, held in a final field), and its box
    // is freed only by `free`, which the object's Cleaner calls once the object
    // is unreachable, never while one of its methods runs (see the module doc).
    Ok(unsafe { &*(h as *const Slot<T>) })
}

/// Frees a handle's box (and its filter if still open). Only the Cleaner of
/// the Java object that owned the handle calls it, once.
pub(crate) fn free<T>(h: jlong) {
    if h != 0 {
        // SAFETY: `h` came from `new_handle::<T>` and is freed exactly once, by
        // the owner's Cleaner, when no method of the owner can run any more.
        drop(unsafe { Box::from_raw(h as *mut Slot<T>) });
    }
}

/// A byte buffer as Java's `jbyte`s (same size, alignment and validity).
pub(crate) fn as_jbytes_mut(b: &mut [u8]) -> &mut [i8] {
    // SAFETY: u8 and i8 have the same size and alignment and every bit
    // pattern is valid for both; the borrow is carried over unchanged.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<i8>(), b.len()) }
}

/// Bytes as Java's `jbyte`s.
pub(crate) fn as_jbytes(b: &[u8]) -> &[i8] {
    // SAFETY: as `as_jbytes_mut`.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<i8>(), b.len()) }
}
