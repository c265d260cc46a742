//! The load context (`OnLoad`) and what is declared through it: module
//! options, server events, commands with their COMMAND INFO / DOCS and ACL
//! categories, and configuration (numeric, string, enum and bool configs,
//! whose callbacks call the safe [`NumericConfig`], [`StringConfig`],
//! [`EnumConfig`] and [`BoolConfig`] of `config.rs`). A wrapper file: the API calls and the raw
//! structures the server keeps live here, safe types and functions go out.

use std::ffi::{c_char, c_int, c_longlong, c_void, CStr};
use std::marker::PhantomData;
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering::Relaxed};

use redis_module::raw;

use super::ffi::{api, log_in, CommandFn, OwnedString};

const OK: c_int = raw::REDISMODULE_OK as c_int;

/// The context `OnLoad` runs in (valid during the load, `'a`).
#[derive(Clone, Copy)]
pub struct LoadCtx<'a> {
    ptr: *mut raw::RedisModuleCtx,
    _load: PhantomData<&'a redis_module::Context>,
}

/// Whether the server exports an API function under this name.
pub fn has_api(name: &CStr) -> bool {
    let Some(get) = api!(RedisModule_GetApi) else {
        return false;
    };
    let mut ptr: *mut c_void = null_mut();
    // SAFETY: GetApi writes one function pointer into `ptr` when the name exists.
    let rc = unsafe { get(name.as_ptr(), &mut ptr as *mut *mut c_void as *mut c_void) };
    rc == OK && !ptr.is_null()
}

/// The server's version as `RedisModule_GetServerVersion` encodes it
/// (0x00MMmmpp; 0 if the server cannot say).
pub fn server_version() -> c_int {
    match api!(RedisModule_GetServerVersion) {
        // SAFETY: no arguments.
        Some(f) => unsafe { f() },
        None => 0,
    }
}

/// Every module option the server knows (`RedisModule_GetModuleOptionsAll`; 0
/// where the call is missing).
pub fn module_options_all() -> c_int {
    match api!(RedisModule_GetModuleOptionsAll) {
        // SAFETY: no arguments.
        Some(f) => unsafe { f() },
        None => 0,
    }
}

/// What a server event subscription does with the event's sub-event.
pub trait ServerEvent {
    fn on(subevent: u64);
}

extern "C" fn server_event<E: ServerEvent>(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    E::on(subevent);
}

impl<'a> LoadCtx<'a> {
    /// The load context of `OnLoad` (redis-module builds `ctx` from the pointer
    /// the server passes it).
    pub fn new(ctx: &'a redis_module::Context) -> LoadCtx<'a> {
        LoadCtx {
            ptr: ctx.ctx,
            _load: PhantomData,
        }
    }

    /// The raw context, for the API calls of the wrapper files (`io.rs`).
    pub(super) fn as_ptr(&self) -> *mut raw::RedisModuleCtx {
        self.ptr
    }

    /// Logs to the server log (as the module).
    pub fn log(&self, level: &CStr, msg: &str) {
        // SAFETY: the valid load context.
        unsafe { log_in(self.ptr, level, msg) }
    }

    /// The context flags (`RedisModule_GetContextFlags`; 0 if the server cannot say).
    pub fn flags(&self) -> Option<u32> {
        let f = api!(RedisModule_GetContextFlags)?;
        // SAFETY: the valid load context.
        Some(unsafe { f(self.ptr) } as u32)
    }

    /// Declares the module options (one call: it replaces, it does not OR).
    pub fn set_module_options(&self, options: c_int) {
        if let Some(f) = api!(RedisModule_SetModuleOptions) {
            // SAFETY: the valid load context.
            unsafe { f(self.ptr, options) };
        }
    }

    /// Whether the server can subscribe to server events at all.
    pub fn has_server_events(&self) -> bool {
        api!(RedisModule_SubscribeToServerEvent).is_some()
    }

    /// Subscribes `E` to the server event `id`; whether the server took it.
    pub fn subscribe<E: ServerEvent>(&self, id: u64) -> bool {
        let Some(subscribe) = api!(RedisModule_SubscribeToServerEvent) else {
            return false;
        };
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // SAFETY: the valid load context; a static callback.
        unsafe { subscribe(self.ptr, event, Some(server_event::<E>)) == OK }
    }

    /// Whether the server has the command API of Redis 7.0 (creation and
    /// COMMAND INFO).
    pub fn has_command_api(&self) -> bool {
        api!(RedisModule_CreateCommand).is_some()
            && api!(RedisModule_GetCommand).is_some()
            && api!(RedisModule_SetCommandInfo).is_some()
    }

    /// Creates the command `name` (`RedisModule_CreateCommand`) and returns it.
    pub fn create_command(
        &self,
        name: &CStr,
        func: CommandFn,
        flags: &CStr,
        (first, last, step): (c_int, c_int, c_int),
    ) -> Result<Command, String> {
        let (Some(create), Some(get)) = (
            api!(RedisModule_CreateCommand),
            api!(RedisModule_GetCommand),
        ) else {
            return Err("this Redis lacks the command API of 7.0".into());
        };
        // SAFETY: the valid load context, NUL-terminated strings (copied by the
        // server), a command function for the server to call.
        let rc = unsafe {
            create(
                self.ptr,
                name.as_ptr(),
                Some(func),
                flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if rc != OK {
            return Err(format!("could not register {}", name.to_string_lossy()));
        }
        // SAFETY: the command was just created.
        let cmd = unsafe { get(self.ptr, name.as_ptr()) };
        NonNull::new(cmd)
            .map(Command)
            .ok_or_else(|| format!("could not find {}", name.to_string_lossy()))
    }

    /// Whether the server can add module ACL categories
    /// (`RedisModule_AddACLCategory`: Valkey 8+, Redis 7.4+).
    pub fn has_acl_categories(&self) -> bool {
        api!(RedisModule_AddACLCategory).is_some()
            && api!(RedisModule_SetCommandACLCategories).is_some()
    }

    /// Adds the ACL category `name`; whether the server took it.
    pub fn add_acl_category(&self, name: &CStr) -> bool {
        match api!(RedisModule_AddACLCategory) {
            // SAFETY: the valid load context, a NUL-terminated name.
            Some(add) => (unsafe { add(self.ptr, name.as_ptr()) }) == OK,
            None => false,
        }
    }
}

/// A command of this module (valid for the server's lifetime).
#[derive(Clone, Copy)]
pub struct Command(NonNull<raw::RedisModuleCommand>);

impl Command {
    /// Sets COMMAND INFO / DOCS (`RedisModule_SetCommandInfo`); whether the
    /// server took it. The structures are built here and leaked: the server
    /// keeps pointers into them for its lifetime.
    pub fn set_info(&self, info: &CommandInfo) -> bool {
        let Some(set_info) = api!(RedisModule_SetCommandInfo) else {
            return false;
        };
        let info: &'static raw::RedisModuleCommandInfo =
            Box::leak(Box::new(raw::RedisModuleCommandInfo {
                version: &INFO_VERSION,
                summary: info.summary.as_ptr(),
                complexity: info.complexity.as_ptr(),
                since: info.since.as_ptr(),
                history: null_mut(),
                tips: info.tips.map_or(std::ptr::null(), |t| t.as_ptr()),
                arity: info.arity,
                key_specs: raw_key_specs(info.key_specs),
                args: raw_args(info.args),
            }));
        // SAFETY: a command of this module; a complete command info whose every
        // pointer is 'static (leaked or static strings).
        unsafe { set_info(self.0.as_ptr(), info) == OK }
    }

    /// Puts the command in these (space-separated) ACL categories; whether the
    /// server took them.
    pub fn set_acl_categories(&self, categories: &CStr) -> bool {
        match api!(RedisModule_SetCommandACLCategories) {
            // SAFETY: a command of this module; NUL-terminated categories.
            Some(set) => (unsafe { set(self.0.as_ptr(), categories.as_ptr()) }) == OK,
            None => false,
        }
    }
}

/// A command's COMMAND INFO and COMMAND DOCS.
pub struct CommandInfo<'s> {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    pub since: &'static CStr,
    pub tips: Option<&'static CStr>,
    pub arity: c_int,
    pub key_specs: &'s [KeySpec],
    pub args: &'s [DocArg],
}

/// One documented argument (COMMAND DOCS), with its sub-arguments.
pub struct DocArg {
    pub name: &'static CStr,
    pub kind: raw::RedisModuleCommandArgType,
    pub token: Option<&'static CStr>,
    pub flags: u32,
    pub sub: Vec<DocArg>,
}

/// Where a command finds a key (a key spec).
#[derive(Clone, Copy)]
pub enum KeySpec {
    /// One key at argument `pos`.
    At { flags: u32, pos: c_int },
    /// `argv[pos]` says how many keys follow it (`keynumidx` 0, `firstkey` 1,
    /// `keystep` 1 after it).
    Counted { flags: u32, pos: c_int },
}

/// The versions of the command info structures this module fills in.
static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// An all-zero key spec (the array's terminator, and the base of each spec).
fn zero_key_spec() -> raw::RedisModuleCommandKeySpec {
    // SAFETY: an all-zero RedisModuleCommandKeySpec is valid (null pointers,
    // zero integers, zeroed unions of integers).
    unsafe { std::mem::zeroed() }
}

/// A zero-terminated, leaked array of key specs.
fn raw_key_specs(specs: &[KeySpec]) -> *mut raw::RedisModuleCommandKeySpec {
    let mut v: Vec<raw::RedisModuleCommandKeySpec> = Vec::with_capacity(specs.len() + 1);
    for s in specs {
        let mut k = zero_key_spec();
        k.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        match *s {
            KeySpec::At { flags, pos } => {
                k.flags = u64::from(flags);
                k.bs.index.pos = pos;
                k.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
                k.fk.range.lastkey = 0;
                k.fk.range.keystep = 1;
                k.fk.range.limit = 0;
            }
            KeySpec::Counted { flags, pos } => {
                k.flags = u64::from(flags);
                k.bs.index.pos = pos;
                k.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
                k.fk.keynum.keynumidx = 0;
                k.fk.keynum.firstkey = 1;
                k.fk.keynum.keystep = 1;
            }
        }
        v.push(k);
    }
    v.push(zero_key_spec());
    Box::leak(v.into_boxed_slice()).as_mut_ptr()
}

/// An all-zero command argument (the array's terminator, and the base of each).
fn zero_arg() -> raw::RedisModuleCommandArg {
    // SAFETY: an all-zero RedisModuleCommandArg is valid (null pointers, 0s).
    unsafe { std::mem::zeroed() }
}

/// A zero-terminated, leaked array of command args (the server keeps pointers
/// into it for its lifetime). The n-th key argument refers to the n-th key spec.
fn raw_args(defs: &[DocArg]) -> *mut raw::RedisModuleCommandArg {
    let mut v: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(defs.len() + 1);
    let mut keys = 0;
    for d in defs {
        let mut a = zero_arg();
        a.name = d.name.as_ptr();
        a.type_ = d.kind;
        a.key_spec_index = if a.type_ == raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY {
            keys += 1;
            keys - 1
        } else {
            -1
        };
        a.token = d.token.map_or(std::ptr::null(), |t| t.as_ptr());
        a.flags = d.flags as c_int;
        a.subargs = if d.sub.is_empty() {
            null_mut()
        } else {
            raw_args(&d.sub)
        };
        v.push(a);
    }
    v.push(zero_arg());
    Box::leak(v.into_boxed_slice()).as_mut_ptr()
}

// ---- configuration ----

/// A numeric config's value (`privdata` of its registration).
pub trait NumericConfig: Sync + 'static {
    fn get(&self) -> i64;
    /// Sets the value, or says why not (CONFIG SET's error).
    fn set(&self, v: i64) -> Result<(), String>;
}

/// A string config's value.
pub trait StringConfig: Sync + 'static {
    /// What CONFIG GET shows.
    fn text(&self) -> &ConfigText;
    /// Sets the value from CONFIG SET's bytes, or says why not.
    fn set(&self, v: &[u8]) -> Result<(), String>;
}

/// An enum config's value (the code of one of the registered names).
pub trait EnumConfig: Sync + 'static {
    fn get(&self) -> c_int;
    fn set(&self, v: c_int) -> Result<(), String>;
}

/// A bool config's value.
pub trait BoolConfig: Sync + 'static {
    fn get(&self) -> bool;
    fn set(&self, v: bool) -> Result<(), String>;
}

/// The text a string config shows: a module string owned by the module,
/// replaced on every change (the server copies it when it reads it).
pub struct ConfigText(AtomicPtr<raw::RedisModuleString>);

impl ConfigText {
    pub const fn new() -> ConfigText {
        ConfigText(AtomicPtr::new(null_mut()))
    }

    /// Replaces the text (kept as it was if no string can be made).
    pub fn store(&self, text: &str) {
        let Some(s) = OwnedString::new(text.as_bytes()) else {
            return;
        };
        let old = self.0.swap(s.into_raw(), Relaxed);
        // SAFETY: the previous text came from `into_raw` above and nobody else
        // owns it (the server copies the text it reads).
        drop(unsafe { OwnedString::from_raw(old) });
    }
}

/// Hands CONFIG SET's error to the server and returns `REDISMODULE_ERR`.
///
/// # Safety
/// `err` is null or where the server takes an error string.
unsafe fn config_error(err: *mut *mut raw::RedisModuleString, msg: &str) -> c_int {
    if !err.is_null() {
        if let Some(s) = OwnedString::new(msg.as_bytes()) {
            // SAFETY: the server's error slot (the caller's contract); the
            // server takes ownership of the string.
            unsafe { *err = s.into_raw() };
        }
    }
    raw::REDISMODULE_ERR as c_int
}

/// The config a callback was registered with.
///
/// # Safety
/// `privdata` is null or the `&'static T` registered with the callback.
unsafe fn registered<T>(privdata: *mut c_void) -> Option<&'static T> {
    // SAFETY: null or the registered &'static T (the caller's contract).
    unsafe { (privdata as *const T).as_ref() }
}

/// A setter's answer to the server: OK, or the error in its slot.
///
/// # Safety
/// `err` is the server's error slot for this call.
unsafe fn set_result(
    r: Option<Result<(), String>>,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    match r.unwrap_or_else(|| Err("unknown config".into())) {
        Ok(()) => OK,
        // SAFETY: the server's error slot (the caller's contract).
        Err(msg) => unsafe { config_error(err, &msg) },
    }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback.
unsafe extern "C" fn get_numeric<T: NumericConfig>(
    _name: *const c_char,
    privdata: *mut c_void,
) -> c_longlong {
    // SAFETY: the registered &'static T (the caller's contract).
    match unsafe { registered::<T>(privdata) } {
        Some(n) => n.get(),
        None => 0,
    }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback; `err` the
/// server's error slot.
unsafe extern "C" fn set_numeric<T: NumericConfig>(
    _name: *const c_char,
    val: c_longlong,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the registered &'static T (the caller's contract).
    let r = unsafe { registered::<T>(privdata) }.map(|n| n.set(val));
    // SAFETY: the server's error slot.
    unsafe { set_result(r, err) }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback.
unsafe extern "C" fn get_string<T: StringConfig>(
    _name: *const c_char,
    privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    // SAFETY: the registered &'static T (the caller's contract).
    match unsafe { registered::<T>(privdata) } {
        Some(s) => s.text().0.load(Relaxed),
        None => null_mut(),
    }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback; `val` a
/// valid module string for the call; `err` the server's error slot.
unsafe extern "C" fn set_string<T: StringConfig>(
    _name: *const c_char,
    val: *mut raw::RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the registered &'static T (the caller's contract).
    let config = unsafe { registered::<T>(privdata) };
    // SAFETY: the server's string, valid during the call.
    let r = config.map(|s| s.set(unsafe { super::ffi::str_bytes(val) }));
    // SAFETY: the server's error slot.
    unsafe { set_result(r, err) }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback.
unsafe extern "C" fn get_enum<T: EnumConfig>(_name: *const c_char, privdata: *mut c_void) -> c_int {
    // SAFETY: the registered &'static T (the caller's contract).
    match unsafe { registered::<T>(privdata) } {
        Some(e) => e.get(),
        None => 0,
    }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback; `err` the
/// server's error slot.
unsafe extern "C" fn set_enum<T: EnumConfig>(
    _name: *const c_char,
    val: c_int,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the registered &'static T (the caller's contract).
    let r = unsafe { registered::<T>(privdata) }.map(|e| e.set(val));
    // SAFETY: the server's error slot.
    unsafe { set_result(r, err) }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback.
unsafe extern "C" fn get_bool<T: BoolConfig>(_name: *const c_char, privdata: *mut c_void) -> c_int {
    // SAFETY: the registered &'static T (the caller's contract).
    match unsafe { registered::<T>(privdata) } {
        Some(b) => c_int::from(b.get()),
        None => 0,
    }
}

/// # Safety
/// `privdata` is the `&'static T` registered with this callback; `err` the
/// server's error slot.
unsafe extern "C" fn set_bool<T: BoolConfig>(
    _name: *const c_char,
    val: c_int,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    // SAFETY: the registered &'static T (the caller's contract).
    let r = unsafe { registered::<T>(privdata) }.map(|b| b.set(val != 0));
    // SAFETY: the server's error slot.
    unsafe { set_result(r, err) }
}

impl LoadCtx<'_> {
    /// Whether the server has module configs (Redis 7.0+).
    pub fn has_config_api(&self) -> bool {
        api!(RedisModule_RegisterNumericConfig).is_some()
            && api!(RedisModule_RegisterStringConfig).is_some()
            && api!(RedisModule_RegisterBoolConfig).is_some()
    }

    /// Registers a numeric config; whether the server took it.
    pub fn register_numeric<T: NumericConfig>(
        &self,
        name: &CStr,
        default: i64,
        flags: u32,
        (min, max): (i64, i64),
        config: &'static T,
    ) -> bool {
        let Some(reg) = api!(RedisModule_RegisterNumericConfig) else {
            return false;
        };
        // SAFETY: the valid load context; the server copies the name; privdata
        // is a &'static T, the type the callbacks are instantiated with.
        unsafe {
            reg(
                self.ptr,
                name.as_ptr(),
                default,
                flags,
                min,
                max,
                Some(get_numeric::<T>),
                Some(set_numeric::<T>),
                None,
                config as *const T as *mut c_void,
            ) == OK
        }
    }

    /// Registers a string config; whether the server took it.
    pub fn register_string<T: StringConfig>(
        &self,
        name: &CStr,
        default: &CStr,
        flags: u32,
        config: &'static T,
    ) -> bool {
        let Some(reg) = api!(RedisModule_RegisterStringConfig) else {
            return false;
        };
        // SAFETY: the valid load context; NUL-terminated name and default
        // (copied); privdata is a &'static T, the callbacks' type.
        unsafe {
            reg(
                self.ptr,
                name.as_ptr(),
                default.as_ptr(),
                flags,
                Some(get_string::<T>),
                Some(set_string::<T>),
                None,
                config as *const T as *mut c_void,
            ) == OK
        }
    }

    /// Registers an enum config (`values`: name and code of each choice);
    /// whether the server took it.
    pub fn register_enum<T: EnumConfig>(
        &self,
        name: &CStr,
        default: c_int,
        flags: u32,
        values: &[(&CStr, c_int)],
        config: &'static T,
    ) -> bool {
        let Some(reg) = api!(RedisModule_RegisterEnumConfig) else {
            return false;
        };
        let names: Vec<*const c_char> = values.iter().map(|(n, _)| n.as_ptr()).collect();
        let codes: Vec<c_int> = values.iter().map(|(_, v)| *v).collect();
        // SAFETY: the valid load context; the server copies the names; the
        // arrays outlive the call; privdata is a &'static T, the callbacks' type.
        unsafe {
            reg(
                self.ptr,
                name.as_ptr(),
                default,
                flags,
                names.as_ptr() as *mut *const c_char,
                codes.as_ptr(),
                names.len() as c_int,
                Some(get_enum::<T>),
                Some(set_enum::<T>),
                None,
                config as *const T as *mut c_void,
            ) == OK
        }
    }

    /// Registers a bool config; whether the server took it.
    pub fn register_bool<T: BoolConfig>(
        &self,
        name: &CStr,
        default: bool,
        flags: u32,
        config: &'static T,
    ) -> bool {
        let Some(reg) = api!(RedisModule_RegisterBoolConfig) else {
            return false;
        };
        // SAFETY: the valid load context; the server copies the name; privdata
        // is a &'static T, the type the callbacks are instantiated with.
        unsafe {
            reg(
                self.ptr,
                name.as_ptr(),
                c_int::from(default),
                flags,
                Some(get_bool::<T>),
                Some(set_bool::<T>),
                None,
                config as *const T as *mut c_void,
            ) == OK
        }
    }

    /// Applies the module's configs from the server's configuration file
    /// (`RedisModule_LoadConfigs`); false if the server refused them.
    pub fn load_configs(&self) -> bool {
        match api!(RedisModule_LoadConfigs) {
            // SAFETY: the valid load context.
            Some(load) => (unsafe { load(self.ptr) }) == OK,
            None => true,
        }
    }
}
