//! The only place command code touches the raw Redis module API: a context with
//! reply helpers, argument access, typed key lookup and replication.
//!
//! Every function pointer of the API is an `Option` filled in by
//! `RedisModule_Init`; a missing one (an older server) makes the call a no-op or
//! an error instead of a panic.

use std::ffi::{c_char, c_int, c_long, c_longlong, c_void, CStr};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

use redis_module::raw;

use super::stats::{Figures, Gauges};
use super::types::FilterValue;
use crate::cmd::errors::{self, CmdError};

/// Fetches an API function pointer (a copy of the `Option`).
macro_rules! api {
    ($name:ident) => {
        // SAFETY: reading a function pointer the server filled in at load time;
        // written once during RedisModule_Init, read-only afterwards.
        unsafe { raw::$name }
    };
}
pub(crate) use api;

/// Whether the running command is trusted (see `Ctx::trusted`): unknown, no, yes.
static TRUSTED: AtomicU8 = AtomicU8::new(TRUSTED_UNKNOWN);
const TRUSTED_UNKNOWN: u8 = 0;
const TRUSTED_NO: u8 = 1;
const TRUSTED_YES: u8 = 2;

/// Whether this server may run trusted commands at all: it is a replica (its
/// primary's stream comes through the master client) or it is loading (RDB,
/// AOF). Kept by server events ([`watch_trust`]); while both are false, no
/// command is trusted and [`Ctx::trusted`] skips `RM_GetContextFlags` (which
/// also computes the server's memory state: ~10% of a one-item command).
static IS_REPLICA: AtomicBool = AtomicBool::new(true);
static LOADING: AtomicBool = AtomicBool::new(true);

/// Subscribes to the replication-role and loading events that keep
/// [`IS_REPLICA`] and [`LOADING`], and reads their current values. Without the
/// events (an older server), both stay true: every command asks the flags.
pub fn watch_trust(ctx: *mut raw::RedisModuleCtx) {
    let (Some(subscribe), Some(flags)) = (
        api!(RedisModule_SubscribeToServerEvent),
        api!(RedisModule_GetContextFlags),
    ) else {
        return;
    };
    let event = |id| raw::RedisModuleEvent { id, dataver: 1 };
    // SAFETY: valid load context; static callbacks.
    let ok = unsafe {
        subscribe(
            ctx,
            event(raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED),
            Some(on_role_changed),
        ) == raw::REDISMODULE_OK as c_int
            && subscribe(ctx, event(raw::REDISMODULE_EVENT_LOADING), Some(on_loading))
                == raw::REDISMODULE_OK as c_int
    };
    if ok {
        // SAFETY: valid load context.
        let f = unsafe { flags(ctx) } as u32;
        IS_REPLICA.store(f & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0, Relaxed);
        LOADING.store(
            f & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
                != 0,
            Relaxed,
        );
    }
}

extern "C" fn on_role_changed(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    IS_REPLICA.store(
        subevent != raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER,
        Relaxed,
    );
}

extern "C" fn on_loading(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    let ended = subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED
        || subevent == raw::REDISMODULE_SUBEVENT_LOADING_FAILED;
    LOADING.store(!ended, Relaxed);
}

/// Called before each command: its trust is read again when first asked.
pub fn forget_trusted() {
    TRUSTED.store(TRUSTED_UNKNOWN, Relaxed);
}

/// A command invocation's context.
#[derive(Clone, Copy)]
pub struct Ctx {
    pub ptr: *mut raw::RedisModuleCtx,
}

/// The arguments of a command (argv[0] is the command name).
#[derive(Clone, Copy)]
pub struct Args<'a> {
    argv: &'a [*mut raw::RedisModuleString],
}

impl<'a> Args<'a> {
    /// # Safety
    /// `argv` must point to `argc` valid strings that outlive `'a`.
    pub unsafe fn from_raw(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Self {
        let argv = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(argv, argc as usize)
        };
        Args { argv }
    }

    pub fn len(&self) -> usize {
        self.argv.len()
    }

    /// The raw string at `i`, if present.
    pub fn raw(&self, i: usize) -> Option<*mut raw::RedisModuleString> {
        self.argv.get(i).copied()
    }

    /// The bytes of argument `i` (empty if absent).
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        match self.argv.get(i) {
            Some(&s) => str_bytes(s),
            None => &[],
        }
    }

    /// All arguments from `i` on, as byte slices.
    pub fn iter_from(&self, i: usize) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.argv.iter().skip(i).map(|&s| str_bytes(s))
    }
}

/// The bytes of a module string.
pub fn str_bytes<'a>(s: *const raw::RedisModuleString) -> &'a [u8] {
    let Some(f) = api!(RedisModule_StringPtrLen) else {
        return &[];
    };
    if s.is_null() {
        return &[];
    }
    let mut len: usize = 0;
    // SAFETY: s is a valid module string; the pointer stays valid while it lives.
    let p = unsafe { f(s, &mut len) };
    if p.is_null() {
        return &[];
    }
    // SAFETY: Redis guarantees `len` readable bytes at `p`.
    unsafe { std::slice::from_raw_parts(p as *const u8, len) }
}

impl Ctx {
    pub fn is_resp3(&self) -> bool {
        match api!(RedisModule_GetContextFlags) {
            // SAFETY: valid context.
            Some(f) => (unsafe { f(self.ptr) } as u32) & raw::REDISMODULE_CTX_FLAGS_RESP3 != 0,
            None => false,
        }
    }

    /// True while Redis loads data (RDB, AOF, DEBUG RELOAD, full sync) or
    /// applies its primary's stream. Such writes already happened on the source
    /// of truth: they are applied under the hard ceilings only, never refused by
    /// this server's (possibly lower) configured limits, so nothing is lost and
    /// replicas do not diverge.
    ///
    /// Read once per command (`RM_GetContextFlags` also computes the server's
    /// memory state, a visible cost on one-item commands): the trampoline calls
    /// [`forget_trusted`] before each command. On a primary that is not loading
    /// the flags are not read at all ([`watch_trust`]).
    pub fn trusted(&self) -> bool {
        match TRUSTED.load(Relaxed) {
            TRUSTED_NO => return false,
            TRUSTED_YES => return true,
            _ => {}
        }
        if !IS_REPLICA.load(Relaxed) && !LOADING.load(Relaxed) {
            TRUSTED.store(TRUSTED_NO, Relaxed);
            return false;
        }
        let trusted = match api!(RedisModule_GetContextFlags) {
            // SAFETY: valid context.
            Some(f) => {
                let flags = unsafe { f(self.ptr) } as u32;
                flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING)
                    != 0
            }
            None => false,
        };
        TRUSTED.store(if trusted { TRUSTED_YES } else { TRUSTED_NO }, Relaxed);
        trusted
    }

    pub fn reply_ok(&self) {
        self.reply_simple(c"OK");
    }

    pub fn reply_simple(&self, s: &CStr) {
        if let Some(f) = api!(RedisModule_ReplyWithSimpleString) {
            // SAFETY: valid context and NUL-terminated string.
            unsafe { f(self.ptr, s.as_ptr()) };
        }
    }

    /// Replies an error with exactly this text (Redis adds the leading `-`).
    pub fn reply_error(&self, text: &str) {
        // ReplyWithError needs a C string; error texts are short, and a NUL inside
        // one would truncate it, so build it on the stack when it fits.
        let mut buf = [0u8; 256];
        let bytes = text.as_bytes();
        let n = bytes.len().min(buf.len() - 1);
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), bytes.get(..n)) {
            dst.copy_from_slice(src);
        }
        for b in buf.iter_mut().take(n) {
            if *b == 0 || *b == b'\r' || *b == b'\n' {
                *b = b' ';
            }
        }
        if let Some(f) = api!(RedisModule_ReplyWithError) {
            // SAFETY: buf is NUL-terminated (its last byte is never written).
            unsafe { f(self.ptr, buf.as_ptr() as *const c_char) };
        }
    }

    pub fn reply_wrong_arity(&self) {
        if let Some(f) = api!(RedisModule_WrongArity) {
            // SAFETY: valid context.
            unsafe { f(self.ptr) };
        }
    }

    pub fn reply_integer(&self, v: i64) {
        if let Some(f) = api!(RedisModule_ReplyWithLongLong) {
            // SAFETY: valid context.
            unsafe { f(self.ptr, v as c_longlong) };
        }
    }

    /// A count or size: never negative (a crafted header can hold counts above
    /// `i64::MAX`; they are shown as `i64::MAX`, not wrapped to -1).
    pub fn reply_count(&self, v: u64) {
        self.reply_integer(i64::try_from(v).unwrap_or(i64::MAX));
    }

    /// Integer 1/0 in RESP2, boolean in RESP3 (the server converts).
    pub fn reply_bool(&self, b: bool) {
        match api!(RedisModule_ReplyWithBool) {
            // SAFETY: valid context.
            Some(f) => unsafe {
                f(self.ptr, b as c_int);
            },
            None => self.reply_integer(b as i64),
        }
    }

    /// Null bulk in RESP2, null in RESP3.
    pub fn reply_null(&self) {
        if let Some(f) = api!(RedisModule_ReplyWithNull) {
            // SAFETY: valid context.
            unsafe { f(self.ptr) };
        }
    }

    pub fn reply_bulk(&self, data: &[u8]) {
        if let Some(f) = api!(RedisModule_ReplyWithStringBuffer) {
            // SAFETY: valid context; data is readable for its length.
            unsafe { f(self.ptr, data.as_ptr() as *const c_char, data.len()) };
        }
    }

    pub fn reply_array(&self, len: usize) {
        if let Some(f) = api!(RedisModule_ReplyWithArray) {
            // SAFETY: valid context.
            unsafe { f(self.ptr, len as c_long) };
        }
    }

    /// A double (a bulk string in RESP2).
    pub fn reply_double(&self, v: f64) {
        if let Some(f) = api!(RedisModule_ReplyWithDouble) {
            // SAFETY: valid context.
            unsafe { f(self.ptr, v) };
        }
    }

    /// An array whose length is given later with [`Ctx::set_array_len`].
    pub fn reply_array_postponed(&self) {
        if let Some(f) = api!(RedisModule_ReplyWithArray) {
            // SAFETY: valid context.
            unsafe { f(self.ptr, raw::REDISMODULE_POSTPONED_LEN as c_long) };
        }
    }

    pub fn set_array_len(&self, len: usize) {
        if let Some(f) = api!(RedisModule_ReplySetArrayLength) {
            // SAFETY: valid context with a postponed array open.
            unsafe { f(self.ptr, len as c_long) };
        }
    }

    /// A map of `len` pairs in RESP3; a flat array of `2 * len` in RESP2.
    pub fn reply_map(&self, len: usize) {
        match api!(RedisModule_ReplyWithMap) {
            // SAFETY: valid context.
            Some(f) => unsafe {
                f(self.ptr, len as c_long);
            },
            None => self.reply_array(len * 2),
        }
    }

    /// Replicates the command exactly as received (to replicas and the AOF).
    pub fn replicate_verbatim(&self) {
        super::stats::mark_changed();
        if let Some(f) = api!(RedisModule_ReplicateVerbatim) {
            // SAFETY: valid context.
            unsafe { f(self.ptr) };
        }
    }

    /// Replicates `cmd` with byte-string arguments, before whatever else this
    /// command replicates (the server wraps several in MULTI/EXEC).
    pub fn replicate(&self, cmd: &CStr, key: *mut raw::RedisModuleString, args: &[&[u8]]) {
        super::stats::mark_changed();
        let (Some(create), Some(free), Some(repl)) = (
            api!(RedisModule_CreateString),
            api!(RedisModule_FreeString),
            api!(RedisModule_Replicate),
        ) else {
            return;
        };
        let mut strs: [*mut raw::RedisModuleString; 12] = [std::ptr::null_mut(); 12];
        if args.len() + 1 > strs.len() {
            return;
        }
        strs[0] = key;
        for (slot, a) in strs.iter_mut().skip(1).zip(args) {
            // SAFETY: valid context; a is readable for its length.
            *slot = unsafe { create(self.ptr, a.as_ptr() as *const c_char, a.len()) };
        }
        let n = args.len() + 1;
        // SAFETY: "v" takes an array of n module strings and its length.
        unsafe { repl(self.ptr, cmd.as_ptr(), c"v".as_ptr(), strs.as_mut_ptr(), n) };
        for s in strs.iter().skip(1).take(args.len()) {
            // SAFETY: created above, not retained by Replicate.
            unsafe { free(self.ptr, *s) };
        }
    }

    /// Replicates `cmd key head... args[from..upto]` without the arguments whose
    /// indices are in `skip` (ascending): a multi-item command reduced to the items
    /// this server applied, for when some were refused by a local limit that the
    /// replay (a replica, an AOF load) would not apply.
    pub fn replicate_items(
        &self,
        cmd: &CStr,
        args: &Args,
        head: &[&[u8]],
        from: usize,
        upto: usize,
        skip: &[usize],
    ) {
        super::stats::mark_changed();
        let (Some(create), Some(free), Some(repl), Some(key)) = (
            api!(RedisModule_CreateString),
            api!(RedisModule_FreeString),
            api!(RedisModule_Replicate),
            args.raw(1),
        ) else {
            return;
        };
        let upto = upto.min(args.len());
        let mut v: Vec<*mut raw::RedisModuleString> = Vec::new();
        if v.try_reserve_exact(1 + head.len() + upto.saturating_sub(from))
            .is_err()
        {
            // No memory for the reduced command: the verbatim one is all that is left.
            self.replicate_verbatim();
            return;
        }
        v.push(key);
        for h in head {
            // SAFETY: valid context; h is readable for its length.
            v.push(unsafe { create(self.ptr, h.as_ptr() as *const c_char, h.len()) });
        }
        v.extend(
            (from..upto)
                .filter(|i| skip.binary_search(i).is_err())
                .filter_map(|i| args.raw(i)),
        );
        // SAFETY: "v" takes an array of module strings and its length; Redis takes
        // its own references to them.
        unsafe {
            repl(
                self.ptr,
                cmd.as_ptr(),
                c"v".as_ptr(),
                v.as_mut_ptr(),
                v.len(),
            )
        };
        for s in v.iter().skip(1).take(head.len()) {
            // SAFETY: created above, not retained by Replicate.
            unsafe { free(self.ptr, *s) };
        }
    }
}

/// Logs to the server log (a null context logs as the module).
pub fn log(ctx: *mut raw::RedisModuleCtx, level: &CStr, msg: &str) {
    let Some(f) = api!(RedisModule_Log) else {
        return;
    };
    let mut buf = Vec::with_capacity(msg.len() + 1);
    buf.extend(msg.bytes().filter(|&b| b != 0));
    buf.push(0);
    // SAFETY: "%s" with a NUL-terminated buffer.
    unsafe {
        f(
            ctx,
            level.as_ptr(),
            c"%s".as_ptr(),
            buf.as_ptr() as *const c_char,
        )
    };
}

/// A registered module data type whose values are `Box<T>`.
pub struct ModuleType<T> {
    pub(crate) raw: std::sync::atomic::AtomicPtr<raw::RedisModuleType>,
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
pub struct Key {
    ptr: *mut raw::RedisModuleKey,
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
/// `v` points to a live `T`.
unsafe fn figures_of<T: FilterValue>(v: *const c_void) -> Figures {
    match (v as *const T).as_ref() {
        Some(v) => v.figures(),
        None => Figures::default(),
    }
}

impl Key {
    /// Opens `name` for reading, or for reading and writing.
    pub fn open(ctx: Ctx, name: *mut raw::RedisModuleString, write: bool) -> Key {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let ptr = match api!(RedisModule_OpenKey) {
            // SAFETY: valid context and key name.
            Some(f) => unsafe { f(ctx.ptr, name, mode as c_int) },
            None => std::ptr::null_mut(),
        };
        Key {
            ptr,
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
        // SAFETY: the value of a key of our type is a Box<T> we stored.
        let v = unsafe { get_value(self.ptr) } as *mut T;
        if !v.is_null() && self.write && self.acct.is_none() {
            // SAFETY: as above.
            self.account::<T>(unsafe { &*v }.figures());
        }
        match unsafe { v.as_mut() } {
            Some(v) => Lookup::Found(v),
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

    /// The value, or `ERR not found` / WRONGTYPE (spec 2.1).
    pub fn existing<T: FilterValue>(&mut self, ty: &ModuleType<T>) -> Result<&mut T, CmdError> {
        match self.lookup(ty) {
            Lookup::Found(v) => Ok(v),
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
    pub fn set<T: FilterValue>(&mut self, ty: &ModuleType<T>, value: Box<T>) -> bool {
        let Some(f) = api!(RedisModule_ModuleTypeSetValue) else {
            return false;
        };
        if self.ptr.is_null() {
            return false;
        }
        let p = Box::into_raw(value);
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

impl Drop for Key {
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
