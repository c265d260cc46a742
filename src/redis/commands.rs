//! Command registration: one table with each command's handler, flags, arity,
//! key spec and documentation (spec 9.2-9.3), applied with
//! `RedisModule_CreateCommand` + `RedisModule_SetCommandInfo` so that COMMAND
//! INFO/DOCS describe every command and read commands' keys are read-only.
//!
//! Every command enters through a trampoline that runs its handler under
//! [`guard`]: a panic becomes an error reply and a log line, never an abort.

use std::ffi::{c_int, CStr};
use std::ptr::null_mut;

use redis_module::raw;

use super::api::{api, Args, Ctx};
use super::guard::guard;
use super::{bf, cf, merge, stats};
use crate::cmd::CmdError;

type Handler = fn(Ctx, Args) -> Result<(), CmdError>;
type RawCmd =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// Runs a handler and sends its error, if any.
fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    h: Handler,
    meta: &'static stats::Meta,
) -> c_int {
    let c = Ctx { ptr: ctx };
    // SAFETY: Redis passes argc valid strings that outlive the call.
    let args = unsafe { Args::from_raw(argv, argc) };
    // Static (no per-command work); only logged on a panic.
    let result = guard(meta.name, Err(CmdError::Text(INTERNAL_ERROR)), || {
        stats::before();
        let r = h(c, args);
        stats::after(c, &args, meta, r.is_ok());
        r
    });
    match result {
        Ok(()) => {}
        Err(CmdError::WrongArity) => c.reply_wrong_arity(),
        Err(e) => {
            stats::refused(e.text());
            c.reply_error(e.text());
        }
    }
    raw::REDISMODULE_OK as c_int
}

const INTERNAL_ERROR: &str = "ERR ferrobloom internal error (details in the server log)";

macro_rules! trampoline {
    ($name:ident, $handler:path, $write:expr) => {
        trampoline!($name, $handler, $write, None);
    };
    ($name:ident, $handler:path, $write:expr, $lookups:expr) => {
        extern "C" fn $name(
            ctx: *mut raw::RedisModuleCtx,
            argv: *mut *mut raw::RedisModuleString,
            argc: c_int,
        ) -> c_int {
            static META: stats::Meta = stats::Meta {
                write: $write,
                lookups: $lookups,
                event: event_name(stringify!($name)),
                name: {
                    const BYTES: [u8; stringify!($name).len()] = command_name(stringify!($name));
                    match std::str::from_utf8(&BYTES) {
                        Ok(n) => n,
                        Err(_) => stringify!($name),
                    }
                },
            };
            run(ctx, argv, argc, $handler, &META)
        }
    };
}

/// `bf_add` -> `BF.ADD`, at compile time (the name a contained panic logs).
const fn command_name<const N: usize>(fn_name: &str) -> [u8; N] {
    let b = fn_name.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N && i < b.len() {
        out[i] = if b[i] == b'_' {
            b'.'
        } else {
            b[i].to_ascii_uppercase()
        };
        i += 1;
    }
    out
}

/// `bf_add` -> `bf.add`, at compile time (the keyspace event of the command).
const fn event_name(fn_name: &'static str) -> &'static CStr {
    match fn_name.as_bytes() {
        b"bf_reserve" => c"bf.reserve",
        b"bf_add" => c"bf.add",
        b"bf_madd" => c"bf.madd",
        b"bf_insert" => c"bf.insert",
        b"bf_loadchunk" => c"bf.loadchunk",
        b"bf_merge" => c"bf.merge",
        b"cf_reserve" => c"cf.reserve",
        b"cf_add" => c"cf.add",
        b"cf_addnx" => c"cf.addnx",
        b"cf_insert" => c"cf.insert",
        b"cf_insertnx" => c"cf.insertnx",
        b"cf_del" => c"cf.del",
        b"cf_compact" => c"cf.compact",
        b"cf_loadchunk" => c"cf.loadchunk",
        _ => c"",
    }
}

const W: bool = true;
const R: bool = false;
const BLOOM_LOOKUP: Option<bool> = Some(true);
const CUCKOO_LOOKUP: Option<bool> = Some(false);
trampoline!(bf_reserve, bf::reserve, W);
trampoline!(bf_add, bf::add, W);
trampoline!(bf_madd, bf::madd, W);
trampoline!(bf_insert, bf::insert, W);
trampoline!(bf_exists, bf::exists, R, BLOOM_LOOKUP);
trampoline!(bf_mexists, bf::mexists, R, BLOOM_LOOKUP);
trampoline!(bf_info, bf::info, R);
trampoline!(bf_card, bf::card, R);
trampoline!(bf_scandump, bf::scandump, R);
trampoline!(bf_loadchunk, bf::loadchunk, W);
trampoline!(bf_debug, bf::debug, R);
trampoline!(bf_merge, merge::merge, W);
trampoline!(cf_reserve, cf::reserve, W);
trampoline!(cf_add, cf::add, W);
trampoline!(cf_addnx, cf::addnx, W);
trampoline!(cf_insert, cf::insert, W);
trampoline!(cf_insertnx, cf::insertnx, W);
trampoline!(cf_exists, cf::exists, R, CUCKOO_LOOKUP);
trampoline!(cf_mexists, cf::mexists, R, CUCKOO_LOOKUP);
trampoline!(cf_count, cf::count, R, CUCKOO_LOOKUP);
trampoline!(cf_del, cf::del, W);
trampoline!(cf_compact, cf::compact, W);
trampoline!(cf_info, cf::info, R);
trampoline!(cf_scandump, cf::scandump, R);
trampoline!(cf_loadchunk, cf::loadchunk, W);
trampoline!(cf_debug, cf::debug, R);

/// How a command uses its key (key spec flags).
#[derive(Clone, Copy)]
enum Access {
    Read,
    Update,
    Create,
    /// BF.MERGE: a destination read and written (argv\[1\]), then `numkeys`
    /// (argv\[2\]) sources read.
    Merge,
}

/// One documented argument (COMMAND DOCS).
struct Arg {
    name: &'static CStr,
    kind: raw::RedisModuleCommandArgType,
    token: Option<&'static CStr>,
    flags: u32,
    sub: &'static [Arg],
}

const fn arg(name: &'static CStr, kind: raw::RedisModuleCommandArgType) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        flags: 0,
        sub: &[],
    }
}
const KEY: Arg = Arg {
    name: c"key",
    kind: raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
    token: None,
    flags: 0,
    sub: &[],
};
const STRING: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
const INTEGER: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
const DOUBLE: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE;
const TOKEN: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN;
const BLOCK: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK;
const ONEOF: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF;
const OPTIONAL: u32 = raw::REDISMODULE_CMD_ARG_OPTIONAL;
const MULTIPLE: u32 = raw::REDISMODULE_CMD_ARG_MULTIPLE;

const fn token(name: &'static CStr, tok: &'static CStr) -> Arg {
    Arg {
        name,
        kind: TOKEN,
        token: Some(tok),
        flags: OPTIONAL,
        sub: &[],
    }
}
/// An optional `TOKEN value` block.
const fn option(name: &'static CStr, tok: &'static CStr, value: &'static [Arg]) -> Arg {
    Arg {
        name,
        kind: BLOCK,
        token: Some(tok),
        flags: OPTIONAL,
        sub: value,
    }
}
const ITEM: Arg = arg(c"item", STRING);
const ITEMS: Arg = Arg {
    flags: MULTIPLE,
    ..ITEM
};
const ITERATOR: Arg = arg(c"iterator", INTEGER);
/// ferrobloom's `LAYOUT classic|blocked|paired|redisbloom` (BF and CF creation).
const LAYOUT: Arg = option(c"layout", c"LAYOUT", &[arg(c"layout", STRING)]);
/// valkey-bloom's creation options (BF.RESERVE, BF.INSERT).
const TIGHTENING: Arg = option(c"tightening", c"TIGHTENING", &[arg(c"ratio", DOUBLE)]);
const SEED: Arg = option(c"seed", c"SEED", &[arg(c"seed", STRING)]);
const VALIDATESCALETO: Arg = option(
    c"validatescaleto",
    c"VALIDATESCALETO",
    &[arg(c"validatescaleto", INTEGER)],
);
/// ferrobloom's windowed filters (`WINDOW seconds`, docs/windowed.md).
const WINDOW: Arg = option(c"window", c"WINDOW", &[arg(c"seconds", DOUBLE)]);

struct Spec {
    name: &'static CStr,
    func: RawCmd,
    flags: &'static CStr,
    arity: c_int,
    access: Access,
    summary: &'static CStr,
    complexity: &'static CStr,
    since: &'static CStr,
    tips: Option<&'static CStr>,
    args: &'static [Arg],
}

const O_K: &CStr = c"O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN: &CStr =
    c"O(k * n), where k is the number of hash functions and n is the number of items";
const O_N_CAP: &CStr = c"O(n), where n is the capacity";
const CF_O_K: &CStr = c"O(k), where k is the number of sub-filters";
const CF_O_KI: &CStr = c"O(k + i), where k is the number of sub-filters and i is maxIterations";
const CF_O_NKI: &CStr =
    c"O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations";
const CF_INSERT_ARGS: &[Arg] = &[
    KEY,
    option(c"capacity", c"CAPACITY", &[arg(c"capacity", INTEGER)]),
    option(c"error", c"ERROR", &[arg(c"error", DOUBLE)]),
    token(c"nocreate", c"NOCREATE"),
    Arg {
        flags: 0,
        ..token(c"items", c"ITEMS")
    },
    ITEMS,
];
const BF_MADD_SUMMARY: &CStr =
    c"Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";

static SPECS: &[Spec] = &[
    Spec {
        name: c"bf.reserve",
        func: bf_reserve,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Create,
        summary: c"Creates a new Bloom Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: None,
        args: &[
            KEY,
            arg(c"error_rate", DOUBLE),
            arg(c"capacity", INTEGER),
            option(c"expansion", c"EXPANSION", &[arg(c"expansion", INTEGER)]),
            token(c"nonscaling", c"NONSCALING"),
            LAYOUT,
            TIGHTENING,
            SEED,
            VALIDATESCALETO,
            WINDOW,
        ],
    },
    Spec {
        name: c"bf.add",
        func: bf_add,
        flags: c"write deny-oom",
        arity: 3,
        access: Access::Update,
        summary: c"Adds an item to a Bloom Filter",
        complexity: O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"bf.madd",
        func: bf_madd,
        flags: c"write deny-oom",
        arity: -3,
        access: Access::Update,
        summary: BF_MADD_SUMMARY,
        complexity: O_KN,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEMS],
    },
    Spec {
        name: c"bf.insert",
        func: bf_insert,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Update,
        summary: BF_MADD_SUMMARY,
        complexity: O_KN,
        since: c"1.0.0",
        tips: None,
        args: &[
            KEY,
            option(c"capacity", c"CAPACITY", &[arg(c"capacity", INTEGER)]),
            option(c"error", c"ERROR", &[arg(c"error", DOUBLE)]),
            option(c"expansion", c"EXPANSION", &[arg(c"expansion", INTEGER)]),
            token(c"nocreate", c"NOCREATE"),
            token(c"nonscaling", c"NONSCALING"),
            LAYOUT,
            TIGHTENING,
            SEED,
            VALIDATESCALETO,
            WINDOW,
            Arg {
                flags: 0,
                ..token(c"items", c"ITEMS")
            },
            ITEMS,
        ],
    },
    Spec {
        name: c"bf.exists",
        func: bf_exists,
        flags: c"readonly fast",
        arity: 3,
        access: Access::Read,
        summary: c"Checks whether an item exists in a Bloom Filter",
        complexity: O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"bf.mexists",
        func: bf_mexists,
        flags: c"readonly fast",
        arity: -3,
        access: Access::Read,
        summary: c"Checks whether one or more items exist in a Bloom Filter",
        complexity: O_KN,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEMS],
    },
    Spec {
        name: c"bf.info",
        func: bf_info,
        flags: c"readonly fast",
        arity: -2,
        access: Access::Read,
        summary: c"Returns information about a Bloom Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[
            KEY,
            Arg {
                name: c"single_value",
                kind: ONEOF,
                token: None,
                flags: OPTIONAL,
                sub: &[
                    Arg {
                        flags: 0,
                        ..token(c"capacity", c"CAPACITY")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"size", c"SIZE")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"filters", c"FILTERS")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"items", c"ITEMS")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"expansion", c"EXPANSION")
                    },
                    // ferrobloom's and valkey-bloom's single fields.
                    Arg {
                        flags: 0,
                        ..token(c"error", c"ERROR")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"tightening", c"TIGHTENING")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"maxscaledcapacity", c"MAXSCALEDCAPACITY")
                    },
                    Arg {
                        flags: 0,
                        ..token(c"window", c"WINDOW")
                    },
                ],
            },
        ],
    },
    Spec {
        name: c"bf.card",
        func: bf_card,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Returns the cardinality of a Bloom filter",
        complexity: c"O(1)",
        since: c"2.4.4",
        tips: None,
        args: &[KEY],
    },
    Spec {
        name: c"bf.scandump",
        func: bf_scandump,
        flags: c"readonly",
        arity: 3,
        access: Access::Read,
        summary: c"Begins an incremental save of the bloom filter",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY, ITERATOR],
    },
    Spec {
        name: c"bf.loadchunk",
        func: bf_loadchunk,
        flags: c"write deny-oom",
        arity: 4,
        access: Access::Create,
        summary: c"Restores a filter previously saved using SCANDUMP",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITERATOR, arg(c"data", STRING)],
    },
    Spec {
        name: c"bf.debug",
        func: bf_debug,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Shows the layout of a Bloom filter's sub-filters (undocumented in RedisBloom)",
        complexity: c"O(n), where n is the number of sub-filters",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY],
    },
    Spec {
        name: c"bf.merge",
        func: bf_merge,
        flags: c"write deny-oom getkeys-api",
        arity: -4,
        access: Access::Merge,
        summary: c"Merges Bloom filters into a destination filter: the union of their items (ferrobloom extension)",
        complexity: c"O(b), where b is the number of bytes of the sources and the result",
        since: c"1.0.0",
        tips: None,
        args: &[
            Arg {
                name: c"destination",
                ..KEY
            },
            arg(c"numkeys", INTEGER),
            Arg {
                name: c"source",
                flags: MULTIPLE,
                ..KEY
            },
        ],
    },
    Spec {
        name: c"cf.reserve",
        func: cf_reserve,
        flags: c"write deny-oom",
        arity: -3,
        access: Access::Create,
        summary: c"Creates a new Cuckoo Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: None,
        args: &[
            KEY,
            arg(c"capacity", INTEGER),
            option(c"bucketsize", c"BUCKETSIZE", &[arg(c"bucketsize", INTEGER)]),
            option(c"maxiterations", c"MAXITERATIONS", &[arg(c"maxiterations", INTEGER)]),
            option(c"expansion", c"EXPANSION", &[arg(c"expansion", INTEGER)]),
            option(c"error", c"ERROR", &[arg(c"error", DOUBLE)]),
            LAYOUT,
        ],
    },
    Spec {
        name: c"cf.add",
        func: cf_add,
        flags: c"write deny-oom",
        arity: 3,
        access: Access::Update,
        summary: c"Adds an item to a Cuckoo Filter",
        complexity: CF_O_KI,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.addnx",
        func: cf_addnx,
        flags: c"write deny-oom",
        arity: 3,
        access: Access::Update,
        summary: c"Adds an item to a Cuckoo Filter if the item did not exist previously.",
        complexity: CF_O_KI,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.insert",
        func: cf_insert,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Update,
        summary: c"Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
        complexity: CF_O_NKI,
        since: c"1.0.0",
        tips: None,
        args: CF_INSERT_ARGS,
    },
    Spec {
        name: c"cf.insertnx",
        func: cf_insertnx,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Update,
        summary: c"Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist",
        complexity: CF_O_NKI,
        since: c"1.0.0",
        tips: None,
        args: CF_INSERT_ARGS,
    },
    Spec {
        name: c"cf.exists",
        func: cf_exists,
        flags: c"readonly fast",
        arity: 3,
        access: Access::Read,
        summary: c"Checks whether one or more items exist in a Cuckoo Filter",
        complexity: CF_O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.mexists",
        func: cf_mexists,
        flags: c"readonly fast",
        arity: -3,
        access: Access::Read,
        summary: c"Checks whether one or more items exist in a Cuckoo Filter",
        complexity: c"O(k * n), where k is the number of sub-filters and n is the number of items",
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEMS],
    },
    Spec {
        name: c"cf.count",
        func: cf_count,
        flags: c"readonly fast",
        arity: 3,
        access: Access::Read,
        summary: c"Return the number of times an item might be in a Cuckoo Filter",
        complexity: CF_O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.del",
        func: cf_del,
        flags: c"write fast",
        arity: 3,
        access: Access::Update,
        summary: c"Deletes an item from a Cuckoo Filter",
        complexity: CF_O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.compact",
        func: cf_compact,
        flags: c"write",
        arity: 2,
        access: Access::Update,
        summary: c"Moves items of newer sub-filters into older ones and frees emptied sub-filters (bounded work per call)",
        complexity: c"O(1) per call: at most about 1M slots are examined",
        since: c"1.0.0",
        tips: None,
        args: &[KEY],
    },
    Spec {
        name: c"cf.info",
        func: cf_info,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Returns information about a Cuckoo Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY],
    },
    Spec {
        name: c"cf.scandump",
        func: cf_scandump,
        flags: c"readonly",
        arity: 3,
        access: Access::Read,
        summary: c"Begins an incremental save of the bloom filter",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY, ITERATOR],
    },
    Spec {
        name: c"cf.loadchunk",
        func: cf_loadchunk,
        flags: c"write deny-oom",
        arity: 4,
        access: Access::Create,
        summary: c"Restores a filter previously saved using SCANDUMP",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITERATOR, arg(c"data", STRING)],
    },
    Spec {
        name: c"cf.debug",
        func: cf_debug,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Shows the layout of a Cuckoo filter (undocumented in RedisBloom)",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY],
    },
];

/// Builds a zero-terminated, leaked array of command args (Redis keeps
/// pointers into it for the server's lifetime).
/// The n-th key argument refers to the n-th key spec.
fn build_args(defs: &[Arg]) -> *mut raw::RedisModuleCommandArg {
    let mut v: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(defs.len() + 1);
    let mut keys = 0;
    for d in defs {
        // SAFETY: an all-zero RedisModuleCommandArg is valid (null pointers, 0s).
        let mut a: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
        a.name = d.name.as_ptr();
        a.type_ = d.kind;
        a.key_spec_index = if d.kind == raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY {
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
            build_args(d.sub)
        };
        v.push(a);
    }
    // SAFETY: the terminator is all zeros.
    v.push(unsafe { std::mem::zeroed() });
    Box::leak(v.into_boxed_slice()).as_mut_ptr()
}

fn key_specs(access: Access) -> *mut raw::RedisModuleCommandKeySpec {
    let flags = match access {
        Access::Read => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        Access::Update => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        Access::Create => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT,
        Access::Merge => return merge_key_specs(),
    };
    // SAFETY: all-zero key specs are valid; the second one terminates the array.
    let mut specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
    specs[0].flags = u64::from(flags);
    specs[0].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    specs[0].bs.index.pos = 1;
    specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    specs[0].fk.range.lastkey = 0;
    specs[0].fk.range.keystep = 1;
    specs[0].fk.range.limit = 0;
    Box::leak(Box::new(specs)).as_mut_ptr()
}

/// BF.MERGE's keys, as PFMERGE and ZUNIONSTORE declare theirs: the destination
/// (RW, read and inserted into, like PFMERGE's), then the `numkeys` sources
/// (RO) found through argv\[2\], so a Cluster answers CROSSSLOT for keys of
/// several slots.
fn merge_key_specs() -> *mut raw::RedisModuleCommandKeySpec {
    // SAFETY: all-zero key specs are valid; the third one terminates the array.
    let mut specs: [raw::RedisModuleCommandKeySpec; 3] = unsafe { std::mem::zeroed() };
    specs[0].flags = u64::from(
        raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_INSERT,
    );
    specs[0].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    specs[0].bs.index.pos = 1;
    specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    specs[0].fk.range.lastkey = 0;
    specs[0].fk.range.keystep = 1;
    specs[0].fk.range.limit = 0;
    specs[1].flags = u64::from(raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS);
    specs[1].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    specs[1].bs.index.pos = 2;
    specs[1].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
    specs[1].fk.keynum.keynumidx = 0;
    specs[1].fk.keynum.firstkey = 1;
    specs[1].fk.keynum.keystep = 1;
    Box::leak(Box::new(specs)).as_mut_ptr()
}

static INFO_VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

/// Registers every command (called from OnLoad).
pub fn register(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let (Some(create), Some(get), Some(set_info)) = (
        api!(RedisModule_CreateCommand),
        api!(RedisModule_GetCommand),
        api!(RedisModule_SetCommandInfo),
    ) else {
        return Err("this Redis lacks the command API of 7.0".into());
    };
    let acl = add_acl_categories(ctx)?;
    for s in SPECS {
        // SAFETY: valid load context, static NUL-terminated strings.
        let rc = unsafe {
            create(
                ctx,
                s.name.as_ptr(),
                Some(s.func),
                s.flags.as_ptr(),
                1,
                1,
                1,
            )
        };
        if rc != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not register {}", s.name.to_string_lossy()));
        }
        // SAFETY: the command was just created.
        let cmd = unsafe { get(ctx, s.name.as_ptr()) };
        if cmd.is_null() {
            return Err(format!("could not find {}", s.name.to_string_lossy()));
        }
        let info = Box::leak(Box::new(raw::RedisModuleCommandInfo {
            version: &INFO_VERSION,
            summary: s.summary.as_ptr(),
            complexity: s.complexity.as_ptr(),
            since: s.since.as_ptr(),
            history: null_mut(),
            tips: s.tips.map_or(std::ptr::null(), |t| t.as_ptr()),
            arity: s.arity,
            key_specs: key_specs(s.access),
            args: build_args(s.args),
        }));
        // SAFETY: a complete, leaked (hence 'static) command info.
        if unsafe { set_info(cmd, info) } != raw::REDISMODULE_OK as c_int {
            return Err(format!(
                "could not set command info of {}",
                s.name.to_string_lossy()
            ));
        }
        if acl {
            set_acl_categories(cmd, s)?;
        }
    }
    #[cfg(feature = "fault-injection")]
    {
        // SAFETY: valid load context, static NUL-terminated strings.
        let rc = unsafe {
            create(
                ctx,
                c"FERROBLOOM.FAULT".as_ptr(),
                Some(ferrobloom_fault),
                c"readonly".as_ptr(),
                0,
                0,
                0,
            )
        };
        if rc != raw::REDISMODULE_OK as c_int {
            return Err("could not register FERROBLOOM.FAULT".into());
        }
        // SAFETY: as above.
        let rc = unsafe {
            create(
                ctx,
                c"FERROBLOOM.CLOCK".as_ptr(),
                Some(ferrobloom_clock),
                c"readonly".as_ptr(),
                0,
                0,
                0,
            )
        };
        if rc != raw::REDISMODULE_OK as c_int {
            return Err("could not register FERROBLOOM.CLOCK".into());
        }
    }
    Ok(())
}

/// Whether the module's ACL categories were registered (for `INFO bf`).
static ACL_CATEGORIES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `bloom cuckoo` where the server took the module's ACL categories, else why not.
pub fn acl_categories() -> &'static str {
    if ACL_CATEGORIES.load(std::sync::atomic::Ordering::Relaxed) {
        "bloom cuckoo"
    } else {
        "none (the server cannot add module ACL categories)"
    }
}

/// Registers the ACL categories `bloom` and `cuckoo` where the server can add
/// module categories (`RedisModule_AddACLCategory`: Valkey 8+, Redis 7.4+;
/// detected, never assumed). Returns whether it did.
fn add_acl_categories(ctx: *mut raw::RedisModuleCtx) -> Result<bool, String> {
    let (Some(add), Some(_)) = (
        api!(RedisModule_AddACLCategory),
        api!(RedisModule_SetCommandACLCategories),
    ) else {
        return Ok(false);
    };
    for cat in [c"bloom", c"cuckoo"] {
        // SAFETY: valid load context, static NUL-terminated name.
        if unsafe { add(ctx, cat.as_ptr()) } != raw::REDISMODULE_OK as c_int {
            return Err(format!(
                "could not add the ACL category {}",
                cat.to_string_lossy()
            ));
        }
    }
    ACL_CATEGORIES.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(true)
}

/// Puts a command in its family's category plus `read` or `write`, as
/// RedisBloom 8 does (`@fast`/`@slow` follow from the command flags).
fn set_acl_categories(cmd: *mut raw::RedisModuleCommand, s: &Spec) -> Result<(), String> {
    let Some(set) = api!(RedisModule_SetCommandACLCategories) else {
        return Ok(());
    };
    let family = if s.name.to_bytes().starts_with(b"bf.") {
        "bloom"
    } else {
        "cuckoo"
    };
    let rw = if s.flags.to_bytes().starts_with(b"write") {
        "write"
    } else {
        "read"
    };
    let cats = std::ffi::CString::new(format!("{family} {rw}")).unwrap_or_default();
    // SAFETY: a command of this module; NUL-terminated categories.
    if unsafe { set(cmd, cats.as_ptr()) } != raw::REDISMODULE_OK as c_int {
        return Err(format!(
            "could not set the ACL categories of {}",
            s.name.to_string_lossy()
        ));
    }
    Ok(())
}

/// FERROBLOOM.FAULT point [count]: arms an injected panic (test builds only;
/// see `guard`).
#[cfg(feature = "fault-injection")]
fn fault(ctx: Ctx, args: Args) -> Result<(), CmdError> {
    if !(2..=3).contains(&args.len()) {
        return Err(CmdError::WrongArity);
    }
    let point = String::from_utf8_lossy(args.bytes(1)).into_owned();
    let count = match args.len() {
        3 => crate::cmd::parse::parse_i64(args.bytes(2))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or(CmdError::Text("ERR bad count"))?,
        _ => 1,
    };
    super::guard::fault::arm(&point, count);
    ctx.reply_ok();
    Ok(())
}

#[cfg(feature = "fault-injection")]
trampoline!(ferrobloom_fault, fault, R);
#[cfg(feature = "fault-injection")]
trampoline!(ferrobloom_clock, super::window::clock, R);
