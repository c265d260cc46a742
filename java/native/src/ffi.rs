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
//!
//! A slot also keeps the dumps under way ([`Dump`]: `writeTo`, `toBytes`),
//! which read the filter a piece at a time with the lock released between
//! pieces (Java code runs between them): the first write that comes while a
//! dump is under way gives it a copy of the filter first, so every dump
//! reads one state, the one it began with, and a dump of a filter nobody
//! writes meanwhile needs no copy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use jni::objects::JByteArray;
use jni::sys::jlong;
use jni::JNIEnv;

use crate::error::{Error, Result};

/// A filter shared with Java: readers run together, writers alone.
pub(crate) struct Slot<T> {
    f: RwLock<Option<T>>,
    /// The dumps under way (see the module doc), and how many.
    dumps: Mutex<Vec<Arc<Dump<T>>>>,
    dumping: AtomicUsize,
}

/// What a dump under way reads: the live filter until a write comes, then
/// the copy that write made of the state the dump began with.
pub(crate) struct Dump<T> {
    frozen: Mutex<Frozen<T>>,
    /// How a write copies the filter for the dump.
    copy: fn(&T) -> Result<T>,
}

enum Frozen<T> {
    /// No write came: the dump reads the live filter.
    Live,
    /// The state the dump began with.
    Copy(T),
    /// A write came and no copy could be made (or the filter was closed):
    /// the dump ends with this error.
    Failed(Error),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<T> Slot<T> {
    /// The filter, locked for reading (a panic in an earlier call does not
    /// lock it out: every operation leaves the filter consistent or refuses).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Option<T>> {
        self.f.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The filter, locked for writing (the dumps under way get their copy
    /// first).
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Option<T>> {
        let g = self.f.write().unwrap_or_else(|p| p.into_inner());
        self.freeze(&g, false);
        g
    }

    /// Gives each dump under way that still reads the live filter a copy of
    /// it (`closing`: the error `Closed` instead), before a write changes it.
    fn freeze(&self, g: &Option<T>, closing: bool) {
        // A dump registers under the read lock, so a write that comes after
        // it sees it here.
        if self.dumping.load(Ordering::Acquire) == 0 {
            return;
        }
        for d in lock(&self.dumps).iter() {
            let mut fr = lock(&d.frozen);
            if matches!(*fr, Frozen::Live) {
                *fr = match g {
                    Some(f) if !closing => (d.copy)(f).map_or_else(Frozen::Failed, Frozen::Copy),
                    _ => Frozen::Failed(Error::Closed),
                };
            }
        }
    }

    /// Starts a dump of the filter as it is now; it ends when the returned
    /// guard is dropped. `copy` makes the copy a write gives it.
    pub(crate) fn dump(&self, copy: fn(&T) -> Result<T>) -> Result<DumpGuard<'_, T>> {
        let g = self.read();
        if g.is_none() {
            return Err(Error::Closed);
        }
        let d = Arc::new(Dump {
            frozen: Mutex::new(Frozen::Live),
            copy,
        });
        lock(&self.dumps).push(Arc::clone(&d));
        self.dumping.fetch_add(1, Ordering::AcqRel);
        drop(g);
        Ok(DumpGuard { slot: self, d })
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
    /// A dump under way ends with `IllegalStateException` (no copy is made
    /// for it).
    pub(crate) fn close(&self) {
        let mut g = self.f.write().unwrap_or_else(|p| p.into_inner());
        self.freeze(&g, true);
        let old = g.take();
        drop(g);
        drop(old);
    }

    /// The slot's address, to tell sources apart and lock them in one order.
    pub(crate) fn addr(&self) -> usize {
        self as *const Self as usize
    }
}

/// A dump under way ([`Slot::dump`]); dropping it ends the dump.
pub(crate) struct DumpGuard<'a, T> {
    slot: &'a Slot<T>,
    d: Arc<Dump<T>>,
}

impl<T> DumpGuard<'_, T> {
    /// Runs `f` on the state the dump began with: the live filter under its
    /// read lock while no write came, else the copy a write made.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> Result<R>) -> Result<R> {
        {
            let fr = lock(&self.d.frozen);
            match &*fr {
                Frozen::Copy(t) => return f(t),
                Frozen::Failed(e) => return Err(e.clone()),
                Frozen::Live => {}
            }
        }
        // Locks in the writers' order: the filter, then the dump.
        let g = self.slot.read();
        let fr = lock(&self.d.frozen);
        match (&*fr, &*g) {
            (Frozen::Copy(t), _) => f(t),
            (Frozen::Failed(e), _) => Err(e.clone()),
            (Frozen::Live, Some(t)) => f(t),
            (Frozen::Live, None) => Err(Error::Closed),
        }
    }
}

impl<T> Drop for DumpGuard<'_, T> {
    fn drop(&mut self) {
        let mut dumps = lock(&self.slot.dumps);
        dumps.retain(|d| !Arc::ptr_eq(d, &self.d));
        self.slot.dumping.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A new handle owning `f`.
pub(crate) fn new_handle<T>(f: T) -> jlong {
    Box::into_raw(Box::new(Slot {
        f: RwLock::new(Some(f)),
        dumps: Mutex::new(Vec::new()),
        dumping: AtomicUsize::new(0),
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

/// A Java byte array's length, and its bytes copied into `buf` when they fit
/// (a one-item call's item onto the stack). Two raw JNI calls, without the
/// `ExceptionCheck` jni-rs makes after each (measured: a tenth of a one-item
/// call): `GetArrayLength` throws nothing, and `GetByteArrayRegion` throws
/// only for a region outside the array, while the region asked here is the
/// whole array as just measured. `a` must not be null (the caller checks).
pub(crate) fn item_into(env: &JNIEnv<'_>, a: &JByteArray<'_>, buf: &mut [u8]) -> Result<usize> {
    let raw = env.get_raw();
    let arr = a.as_raw();
    if raw.is_null() || arr.is_null() {
        return Err(Error::Null("item"));
    }
    // SAFETY: `raw` is the current thread's JNIEnv, valid for this native
    // call, and its function table is the JVM's (never null while it runs).
    let fns = unsafe { &**raw };
    let (Some(length), Some(region)) = (fns.GetArrayLength, fns.GetByteArrayRegion) else {
        return Err(Error::Null("JNI function table"));
    };
    // SAFETY: `arr` is a non-null local reference to a Java byte[] (the
    // parameter's type), live for this call.
    let n = unsafe { length(raw, arr) };
    let len = usize::try_from(n).unwrap_or(0);
    if let Some(dst) = buf.get_mut(..len) {
        // SAFETY: the region [0, n) is the whole array, so the call cannot
        // throw, and `dst` holds exactly n writable bytes.
        unsafe { region(raw, arr, 0, n, dst.as_mut_ptr().cast()) };
    }
    Ok(len)
}
