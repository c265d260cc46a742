//! A command's context (reply helpers, replication, keyspace events, the log)
//! and its arguments, and the entry point the server calls for every command
//! ([`command_entry`]): the only place a command's raw pointers become a [`Ctx`]
//! and [`Args`].

use std::ffi::{c_char, c_int, c_long, c_longlong, c_void, CStr};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use redis_module::raw;

use super::ffi::{api, log_in, RStr};

/// Set by every replication call of the running command ([`Ctx::replicate`]
/// and the like), read and cleared by the command trampoline (`stats::after`).
static CHANGED: AtomicBool = AtomicBool::new(false);

/// Records that the running command replicated something (it changed data).
fn mark_changed() {
    CHANGED.store(true, Relaxed);
}

/// Whether the running command replicated anything since the last call; clears it.
pub fn take_changed() -> bool {
    CHANGED.swap(false, Relaxed)
}

/// What the server runs for a command: `commands.rs` implements it once per
/// command (the handler inside its panic guard) and registers
/// [`command_entry`] for it.
pub trait Command {
    fn call(ctx: Ctx, args: Args);
}

/// The function the server calls for the command `C` (registered with
/// `RedisModule_CreateCommand`).
///
/// # Safety
/// Called by the server only: `ctx` is the command's context and `argv` holds
/// `argc` valid strings, all valid until the call returns.
pub unsafe extern "C" fn command_entry<C: Command>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let c = Ctx {
        ptr: ctx,
        _call: PhantomData,
    };
    // SAFETY: the server passes argc valid strings that outlive the call.
    let args = unsafe { Args::from_raw(argv, argc) };
    C::call(c, args);
    raw::REDISMODULE_OK as c_int
}

/// What a timer does when it fires ([`Ctx::create_timer`]).
pub trait Timer {
    fn fire(ctx: Ctx);
}

/// The function the server calls when a timer of `T` fires.
///
/// # Safety
/// Called by the server only, with a valid context for the call.
unsafe extern "C" fn timer_entry<T: Timer>(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    T::fire(Ctx {
        ptr: ctx,
        _call: PhantomData,
    });
}

/// A command invocation's context, valid during the command (`'a`).
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    ptr: *mut raw::RedisModuleCtx,
    _call: PhantomData<&'a ()>,
}

/// The arguments of a command (argv[0] is the command name).
#[derive(Clone, Copy)]
pub struct Args<'a> {
    argv: &'a [*mut raw::RedisModuleString],
}

impl<'a> Args<'a> {
    /// # Safety
    /// `argv` must point to `argc` valid strings that outlive `'a`.
    unsafe fn from_raw(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Self {
        let argv = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            // SAFETY: argc valid pointers at argv for 'a (the caller's contract).
            unsafe { std::slice::from_raw_parts(argv, argc as usize) }
        };
        Args { argv }
    }

    pub fn len(&self) -> usize {
        self.argv.len()
    }

    /// The module string at `i`, if present (a key name, or an argument to
    /// replicate as it came).
    pub fn string(&self, i: usize) -> Option<RStr<'a>> {
        // SAFETY: the server's argument strings live for 'a (`from_raw`).
        self.argv.get(i).and_then(|&s| unsafe { RStr::from_raw(s) })
    }

    /// The bytes of argument `i` (empty if absent).
    pub fn bytes(&self, i: usize) -> &'a [u8] {
        self.string(i).map_or(&[], |s| s.bytes())
    }

    /// All arguments from `i` on, as byte slices.
    pub fn iter_from(&self, i: usize) -> impl Iterator<Item = &'a [u8]> + '_ {
        (i..self.len()).map(|i| self.bytes(i))
    }
}

impl Ctx<'_> {
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
        super::trust::trusted(|| self.flags())
    }

    /// The raw context, for the API calls of the wrapper files (`key.rs`).
    pub(super) fn as_ptr(&self) -> *mut raw::RedisModuleCtx {
        self.ptr
    }

    /// The context flags (`RedisModule_GetContextFlags`; 0 if the server cannot say).
    fn flags(&self) -> u32 {
        match api!(RedisModule_GetContextFlags) {
            // SAFETY: valid context (the command's own).
            Some(f) => (unsafe { f(self.ptr) }) as u32,
            None => 0,
        }
    }

    /// Logs to the server log (as the module, within this command).
    pub fn log(&self, level: &CStr, msg: &str) {
        // SAFETY: valid context (the command's own).
        unsafe { log_in(self.ptr, level, msg) }
    }

    /// Starts a one-shot timer that runs `T` on the main thread in `period_ms`
    /// milliseconds; whether the server took it.
    pub fn create_timer<T: Timer>(&self, period_ms: i64) -> bool {
        let Some(create) = api!(RedisModule_CreateTimer) else {
            return false;
        };
        // SAFETY: a valid context of the main thread; the callback takes no data.
        unsafe {
            create(
                self.ptr,
                period_ms,
                Some(timer_entry::<T>),
                std::ptr::null_mut(),
            )
        };
        true
    }

    /// Sends a keyspace event of the module class for `key`.
    pub fn notify_keyspace_event(&self, event: &CStr, key: RStr) {
        if let Some(f) = api!(RedisModule_NotifyKeyspaceEvent) {
            // SAFETY: valid context, NUL-terminated event name, a valid key string.
            unsafe {
                f(
                    self.ptr,
                    raw::REDISMODULE_NOTIFY_MODULE,
                    event.as_ptr() as *const c_char,
                    key.as_ptr(),
                )
            };
        }
    }

    /// Whether this call only asks for the command's key positions (a command
    /// registered `getkeys-api`): answer with [`Ctx::key_at_pos`].
    pub fn is_keys_position_request(&self) -> bool {
        match api!(RedisModule_IsKeysPositionRequest) {
            // SAFETY: valid context (the command's own).
            Some(f) => (unsafe { f(self.ptr) }) != 0,
            None => false,
        }
    }

    /// Declares argument `pos` a key (answering a key-position request).
    pub fn key_at_pos(&self, pos: usize) {
        let (Some(f), Ok(pos)) = (api!(RedisModule_KeyAtPos), c_int::try_from(pos)) else {
            return;
        };
        // SAFETY: valid context within a key-position request.
        unsafe { f(self.ptr, pos) };
    }

    /// The calling client's id (0 if the server cannot say).
    pub fn client_id(&self) -> u64 {
        match api!(RedisModule_GetClientId) {
            // SAFETY: valid context.
            Some(f) => unsafe { f(self.ptr) },
            None => 0,
        }
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
        mark_changed();
        if let Some(f) = api!(RedisModule_ReplicateVerbatim) {
            // SAFETY: valid context.
            unsafe { f(self.ptr) };
        }
    }

    /// Replicates `cmd` with byte-string arguments, before whatever else this
    /// command replicates (the server wraps several in MULTI/EXEC).
    pub fn replicate(&self, cmd: &CStr, key: RStr, args: &[&[u8]]) {
        mark_changed();
        let (Some(create), Some(free), Some(repl)) = (
            api!(RedisModule_CreateString),
            api!(RedisModule_FreeString),
            api!(RedisModule_Replicate),
        ) else {
            return;
        };
        // The longest: BF.RESERVE's key, error, capacity, every option and
        // SHAPES (`crate::cmd::options::RESERVE_MAX_ARGS` + 2, less the command).
        let mut strs: [*mut raw::RedisModuleString; 24] = [std::ptr::null_mut(); 24];
        if args.len() + 1 > strs.len() {
            return;
        }
        strs[0] = key.as_ptr();
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
        mark_changed();
        let (Some(create), Some(free), Some(repl), Some(key)) = (
            api!(RedisModule_CreateString),
            api!(RedisModule_FreeString),
            api!(RedisModule_Replicate),
            args.string(1),
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
        v.push(key.as_ptr());
        for h in head {
            // SAFETY: valid context; h is readable for its length.
            v.push(unsafe { create(self.ptr, h.as_ptr() as *const c_char, h.len()) });
        }
        v.extend(
            (from..upto)
                .filter(|i| skip.binary_search(i).is_err())
                .filter_map(|i| args.string(i))
                .map(|s| s.as_ptr()),
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
