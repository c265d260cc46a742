//! COMMAND DOCS arguments and key specs: the structures
//! `RedisModule_SetCommandInfo` takes, built from the command table
//! ([`super::table`]) and, for BF.RESERVE's and BF.INSERT's options, from the
//! option table (`crate::cmd::options`).

use std::ffi::{c_int, CStr};
use std::ptr::null_mut;

use redis_module::raw;

use crate::cmd::cf_options::{CfCommand, Takes, CF_OPTIONS};
use crate::cmd::info::BF_INFO;
use crate::cmd::options::{BfCommand, BfOption, ValueDoc, ValueType, BF_OPTIONS};

/// How a command uses its key (key spec flags).
#[derive(Clone, Copy)]
pub(super) enum Access {
    Read,
    Update,
    Create,
    /// BF.MERGE: a destination read and written (argv\[1\]), then `numkeys`
    /// (argv\[2\]) sources read.
    Merge,
}

/// One documented argument (COMMAND DOCS).
pub(super) struct Arg {
    pub(super) name: &'static CStr,
    pub(super) kind: Kind,
    pub(super) token: Option<&'static CStr>,
    pub(super) flags: u32,
    pub(super) sub: &'static [Arg],
}

/// An argument's type, or where a BF command's options go.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Type(raw::RedisModuleCommandArgType),
    /// Stands for the documented options of the command, one argument each,
    /// in the option table's order (`crate::cmd::options::BF_OPTIONS`).
    BfOptions(BfCommand),
    /// Stands for the documented options of a CF command, in the CF option
    /// table's order (`crate::cmd::cf_options::CF_OPTIONS`).
    CfOptions(CfCommand),
    /// Stands for BF.INFO's fields, one token each, in the INFO table's order
    /// (`crate::cmd::info::BF_INFO`).
    BfInfoFields,
}

pub(super) const fn arg(name: &'static CStr, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        flags: 0,
        sub: &[],
    }
}
const KEY_TYPE: raw::RedisModuleCommandArgType =
    raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY;
pub(super) const KEY: Arg = Arg {
    name: c"key",
    kind: Kind::Type(KEY_TYPE),
    token: None,
    flags: 0,
    sub: &[],
};
pub(super) const STRING: Kind =
    Kind::Type(raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING);
pub(super) const INTEGER: Kind =
    Kind::Type(raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER);
pub(super) const DOUBLE: Kind =
    Kind::Type(raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE);
pub(super) const TOKEN: Kind =
    Kind::Type(raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN);
pub(super) const BLOCK: Kind =
    Kind::Type(raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK);
pub(super) const ONEOF: Kind =
    Kind::Type(raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF);
pub(super) const OPTIONAL: u32 = raw::REDISMODULE_CMD_ARG_OPTIONAL;
pub(super) const MULTIPLE: u32 = raw::REDISMODULE_CMD_ARG_MULTIPLE;

pub(super) const fn token(name: &'static CStr, tok: &'static CStr) -> Arg {
    Arg {
        name,
        kind: TOKEN,
        token: Some(tok),
        flags: OPTIONAL,
        sub: &[],
    }
}
/// An optional `TOKEN value` block.
pub(super) const fn option(name: &'static CStr, tok: &'static CStr, value: &'static [Arg]) -> Arg {
    Arg {
        name,
        kind: BLOCK,
        token: Some(tok),
        flags: OPTIONAL,
        sub: value,
    }
}
pub(super) const ITEM: Arg = arg(c"item", STRING);
pub(super) const ITEMS: Arg = Arg {
    flags: MULTIPLE,
    ..ITEM
};
pub(super) const ITERATOR: Arg = arg(c"iterator", INTEGER);

/// BF.RESERVE's options (after `key error_rate capacity`).
pub(super) const BF_RESERVE_OPTIONS: Arg = bf_options(BfCommand::Reserve);
/// BF.INSERT's options (before `ITEMS`).
pub(super) const BF_INSERT_OPTIONS: Arg = bf_options(BfCommand::Insert);

/// CF.RESERVE's options (after `key capacity`).
pub(super) const CF_RESERVE_OPTIONS: Arg = cf_options(CfCommand::Reserve);
/// CF.INSERT[NX]'s options (before `ITEMS`).
pub(super) const CF_INSERT_OPTIONS: Arg = cf_options(CfCommand::Insert);

const fn cf_options(cmd: CfCommand) -> Arg {
    Arg {
        name: c"",
        kind: Kind::CfOptions(cmd),
        token: None,
        flags: 0,
        sub: &[],
    }
}

/// BF.INFO's single fields (the alternatives of its `single_value`).
pub(super) const BF_INFO_FIELDS: Arg = Arg {
    name: c"",
    kind: Kind::BfInfoFields,
    token: None,
    flags: 0,
    sub: &[],
};

/// The COMMAND DOCS token of an INFO field (leaked once at load).
fn info_field_token(keyword: &str) -> Arg {
    let leak = |s: String| -> &'static CStr {
        Box::leak(
            std::ffi::CString::new(s)
                .unwrap_or_default()
                .into_boxed_c_str(),
        )
    };
    Arg {
        flags: 0,
        ..token(
            leak(keyword.to_ascii_lowercase()),
            leak(keyword.to_string()),
        )
    }
}

const fn bf_options(cmd: BfCommand) -> Arg {
    Arg {
        name: c"",
        kind: Kind::BfOptions(cmd),
        token: None,
        flags: 0,
        sub: &[],
    }
}

/// The COMMAND DOCS argument of an option of the table: a pure token for a
/// flag, an optional `TOKEN value` block for the others.
fn bf_option(o: &BfOption) -> Arg {
    option_arg(o.doc_name, o.token, o.value)
}

/// An option's COMMAND DOCS argument: a pure token for a flag, an optional
/// `TOKEN value` block for the others.
fn option_arg(doc_name: &'static CStr, tok: &'static CStr, value: Option<ValueDoc>) -> Arg {
    match value {
        None => token(doc_name, tok),
        Some(v) => {
            let kind = match v.kind {
                ValueType::Integer => INTEGER,
                ValueType::Double => DOUBLE,
                ValueType::String => STRING,
            };
            // Leaked once per command at load, as the rest of the command info.
            let value: &'static [Arg] = Box::leak(Box::new([arg(v.name, kind)]));
            option(doc_name, tok, value)
        }
    }
}

/// Builds a zero-terminated, leaked array of command args (Redis keeps
/// pointers into it for the server's lifetime), a BF command's options
/// expanded from the option table.
/// The n-th key argument refers to the n-th key spec.
pub(super) fn build_args(defs: &[Arg]) -> *mut raw::RedisModuleCommandArg {
    let mut v: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(defs.len() + 1);
    let mut keys = 0;
    for d in defs {
        match d.kind {
            Kind::Type(_) => v.push(raw_arg(d, &mut keys)),
            Kind::BfOptions(cmd) => {
                for o in BF_OPTIONS.iter().filter(|o| o.takes(cmd) && o.documented) {
                    v.push(raw_arg(&bf_option(o), &mut keys));
                }
            }
            Kind::CfOptions(cmd) => {
                let documented = CF_OPTIONS
                    .iter()
                    .filter(|o| o.taken_by(cmd) == Takes::Documented);
                for o in documented {
                    v.push(raw_arg(
                        &option_arg(o.doc_name, o.token, o.value),
                        &mut keys,
                    ));
                }
            }
            Kind::BfInfoFields => {
                for f in BF_INFO {
                    v.push(raw_arg(&info_field_token(f.keyword), &mut keys));
                }
            }
        }
    }
    // SAFETY: the terminator is all zeros.
    v.push(unsafe { std::mem::zeroed() });
    Box::leak(v.into_boxed_slice()).as_mut_ptr()
}

/// One argument (with its sub-arguments); `keys` counts the key arguments so far.
fn raw_arg(d: &Arg, keys: &mut c_int) -> raw::RedisModuleCommandArg {
    // SAFETY: an all-zero RedisModuleCommandArg is valid (null pointers, 0s).
    let mut a: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
    a.name = d.name.as_ptr();
    a.type_ = match d.kind {
        Kind::Type(t) => t,
        // Expanded by build_args; never documented as such.
        Kind::BfOptions(_) | Kind::CfOptions(_) | Kind::BfInfoFields => {
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
        }
    };
    a.key_spec_index = if a.type_ == KEY_TYPE {
        *keys += 1;
        *keys - 1
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
    a
}

pub(super) fn key_specs(access: Access) -> *mut raw::RedisModuleCommandKeySpec {
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

pub(super) static INFO_VERSION: raw::RedisModuleCommandInfoVersion =
    raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
