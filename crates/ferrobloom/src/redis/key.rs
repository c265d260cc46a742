//! Typed keys: a registered module type, an open key with typed lookups, and
//! the accounting that keeps the `INFO bf` gauges exact as keys change.

use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

use redis_module::raw;

use super::ctx::Ctx;
use super::ffi::{api, RStr};
use super::stats::{Figures, Gauges};
use super::value::{next_stamp, FilterValue, Stored};
use crate::cmd::errors::{self, CmdError};

/// A registered module data type whose values are `Box<Stored<T>>`.
pub struct ModuleType<T> {
    raw: std::sync::atomic::AtomicPtr<raw::RedisModuleType>,
    _t: PhantomData<fn() -> T>,
}

impl<T> ModuleType<T> {
    pub const fn new() -> Self {
        ModuleType {
            raw: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            _t: PhantomData,
        }
    }
    pub fn get(&self) -> *mut raw::RedisModuleType {
        self.raw.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// Records the type the server created (`io::create_data_type`).
    pub(super) fn registered(&self, t: *mut raw::RedisModuleType) {
        self.raw.store(t, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What a key holds, from the point of view of one filter type.
pub enum Lookup<'k, T> {
    Missing,
    WrongType,
    Found(&'k mut T),
}

/// What a key holds, without keeping it borrowed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    Missing,
    WrongType,
    Found,
}

/// An open key, closed on drop.
///
/// A key opened for writing keeps the `INFO bf` gauges exact: the first time it
/// hands out (or stores) a filter it records the filter's figures, and when it
/// closes it applies the difference to its type's gauges (see `stats`).
pub struct Key<'a> {
    ptr: *mut raw::RedisModuleKey,
    /// Open within the command whose context opened it.
    _ctx: PhantomData<Ctx<'a>>,
    write: bool,
    acct: Option<Accounting>,
}

/// The figures a writable key recorded, and how to take them again.
struct Accounting {
    /// # Safety
    /// Called with the value pointer of a key of the recorded type.
    figures: unsafe fn(*const c_void) -> Figures,
    gauges: &'static Gauges,
    before: Figures,
}

/// # Safety
/// `v` is null or points to a live `Stored<T>`.
unsafe fn figures_of<T: FilterValue>(v: *const c_void) -> Figures {
    // SAFETY: null or a live Stored<T> (the caller's contract).
    match unsafe { (v as *const Stored<T>).as_ref() } {
        Some(v) => v.filter.figures(),
        None => Figures::default(),
    }
}

impl<'a> Key<'a> {
    /// Opens `name` for reading, or for reading and writing.
    pub fn open(ctx: Ctx<'a>, name: RStr, write: bool) -> Key<'a> {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let ptr = match api!(RedisModule_OpenKey) {
            // SAFETY: valid context (the running command's) and key name.
            Some(f) => unsafe { f(ctx.as_ptr(), name.as_ptr(), mode as c_int) },
            None => std::ptr::null_mut(),
        };
        Key {
            ptr,
            _ctx: PhantomData,
            write,
            acct: None,
        }
    }

    /// Records the figures of the filter this writable key hands out (once).
    fn account<T: FilterValue>(&mut self, before: Figures) {
        if self.write && self.acct.is_none() {
            self.acct = Some(Accounting {
                figures: figures_of::<T>,
                gauges: T::gauges(),
                before,
            });
        }
    }

    /// Classifies the key for filter type `ty`.
    pub fn lookup<'k, T: FilterValue>(&'k mut self, ty: &ModuleType<T>) -> Lookup<'k, T> {
        match self.lookup_stored(ty) {
            Lookup::Found(v) => Lookup::Found(&mut v.filter),
            Lookup::Missing => Lookup::Missing,
            Lookup::WrongType => Lookup::WrongType,
        }
    }

    /// [`lookup`](Self::lookup), with the filter's stamp. A key opened for
    /// writing gives its filter a fresh stamp before handing it out: a
    /// command may change what it is given.
    fn lookup_stored<'k, T: FilterValue>(
        &'k mut self,
        ty: &ModuleType<T>,
    ) -> Lookup<'k, Stored<T>> {
        if self.ptr.is_null() {
            return Lookup::Missing;
        }
        let (Some(key_type), Some(get_type), Some(get_value)) = (
            api!(RedisModule_KeyType),
            api!(RedisModule_ModuleTypeGetType),
            api!(RedisModule_ModuleTypeGetValue),
        ) else {
            return Lookup::WrongType;
        };
        // SAFETY: open key.
        let kt = unsafe { key_type(self.ptr) } as isize;
        if kt == raw::REDISMODULE_KEYTYPE_EMPTY {
            return Lookup::Missing;
        }
        // SAFETY: open key.
        if kt != raw::REDISMODULE_KEYTYPE_MODULE || unsafe { get_type(self.ptr) } != ty.get() {
            return Lookup::WrongType;
        }
        // SAFETY: the value of a key of our type is a Box<Stored<T>> we stored.
        let v = unsafe { get_value(self.ptr) } as *mut Stored<T>;
        if !v.is_null() && self.write && self.acct.is_none() {
            // SAFETY: as above.
            self.account::<T>(unsafe { &*v }.filter.figures());
        }
        // SAFETY: as above; the key (and its value) stays open while `self` is
        // borrowed for 'k.
        match unsafe { v.as_mut() } {
            Some(v) => {
                if self.write {
                    v.stamp = next_stamp();
                }
                Lookup::Found(v)
            }
            None => Lookup::WrongType,
        }
    }

    pub fn state<T: FilterValue>(&mut self, ty: &ModuleType<T>) -> KeyState {
        match self.lookup(ty) {
            Lookup::Missing => KeyState::Missing,
            Lookup::WrongType => KeyState::WrongType,
            Lookup::Found(_) => KeyState::Found,
        }
    }

    /// The value, or `ERR not found` / WRONGTYPE (RedisBloom's replies for a
    /// missing key and a key of another type).
    pub fn existing<T: FilterValue>(&mut self, ty: &ModuleType<T>) -> Result<&mut T, CmdError> {
        match self.lookup(ty) {
            Lookup::Found(v) => Ok(v),
            Lookup::Missing => Err(errors::NOT_FOUND.into()),
            Lookup::WrongType => Err(errors::WRONG_TYPE.into()),
        }
    }

    /// [`existing`](Self::existing), with the stamp of the filter's state
    /// (see [`Stored`]).
    pub fn existing_stamped<T: FilterValue>(
        &mut self,
        ty: &ModuleType<T>,
    ) -> Result<(&mut T, u64), CmdError> {
        match self.lookup_stored(ty) {
            Lookup::Found(v) => Ok((&mut v.filter, v.stamp)),
            Lookup::Missing => Err(errors::NOT_FOUND.into()),
            Lookup::WrongType => Err(errors::WRONG_TYPE.into()),
        }
    }

    /// The value if the key holds one of type `ty` (missing and wrong type both
    /// read as "not present" for the EXISTS family).
    pub fn present<T: FilterValue>(&mut self, ty: &ModuleType<T>) -> Option<&T> {
        match self.lookup(ty) {
            Lookup::Found(v) => Some(v),
            _ => None,
        }
    }

    /// Stores `value` in an empty key opened for writing; on failure the value is
    /// dropped and false returned.
    pub fn set<T: FilterValue>(&mut self, ty: &ModuleType<T>, value: T) -> bool {
        let Some(f) = api!(RedisModule_ModuleTypeSetValue) else {
            return false;
        };
        if self.ptr.is_null() {
            return false;
        }
        let p = Box::into_raw(Box::new(Stored::new(value)));
        // SAFETY: open writable key; ownership passes to Redis on success.
        let ok = unsafe { f(self.ptr, ty.get(), p as *mut c_void) } == raw::REDISMODULE_OK as c_int;
        if !ok {
            // SAFETY: Redis did not take ownership.
            drop(unsafe { Box::from_raw(p) });
        } else {
            // A new filter: everything it holds is added when the key closes.
            self.account::<T>(Figures::default());
        }
        ok
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        if let (Some(a), Some(get_value)) = (self.acct.take(), api!(RedisModule_ModuleTypeGetValue))
        {
            // SAFETY: open key; its value is of the type recorded (commands never
            // replace a filter by another type).
            let now = unsafe { (a.figures)(get_value(self.ptr) as *const c_void) };
            a.gauges.changed(a.before, now);
        }
        if let Some(f) = api!(RedisModule_CloseKey) {
            // SAFETY: opened by us, closed once.
            unsafe { f(self.ptr) };
        }
    }
}
