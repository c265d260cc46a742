//! COMMAND DOCS arguments and key specs: the structures
//! `RedisModule_SetCommandInfo` takes, built from the command table
//! ([`super::table`]) and, for BF.RESERVE's and BF.INSERT's options, from the
//! option table (`crate::cmd::options`).

use std::ffi::CStr;

use redis_module::raw;

use crate::cmd::cf_options::{CfCommand, Takes, CF_OPTIONS};
use crate::cmd::info::BF_INFO;
use crate::cmd::options::{BfCommand, BfOption, ValueDoc, ValueType, BF_OPTIONS};
use crate::redis::load::{DocArg, KeySpec};

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
/// ferrobloom's `STAMP` of BF.SCANDUMP / CF.SCANDUMP (the state's stamp with each chunk).
pub(super) const STAMP: Arg = token(c"stamp", c"STAMP");

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
fn bf_option(o: &BfOption) -> DocArg {
    option_arg(o.doc_name, o.token, o.value)
}

/// An option's COMMAND DOCS argument: a pure token for a flag, an optional
/// `TOKEN value` block for the others.
fn option_arg(doc_name: &'static CStr, tok: &'static CStr, value: Option<ValueDoc>) -> DocArg {
    match value {
        None => doc_arg(&token(doc_name, tok)),
        Some(v) => {
            let kind = match v.kind {
                ValueType::Integer => INTEGER,
                ValueType::Double => DOUBLE,
                ValueType::String => STRING,
            };
            DocArg {
                sub: vec![doc_arg(&arg(v.name, kind))],
                ..doc_arg(&option(doc_name, tok, &[]))
            }
        }
    }
}

/// The documented arguments of a command, the options of BF and CF commands
/// expanded from the option tables and BF.INFO's fields from the INFO table.
pub(super) fn build_args(defs: &[Arg]) -> Vec<DocArg> {
    let mut v = Vec::with_capacity(defs.len());
    for d in defs {
        match d.kind {
            Kind::Type(_) => v.push(doc_arg(d)),
            Kind::BfOptions(cmd) => {
                for o in BF_OPTIONS.iter().filter(|o| o.takes(cmd) && o.documented) {
                    v.push(bf_option(o));
                }
            }
            Kind::CfOptions(cmd) => {
                let documented = CF_OPTIONS
                    .iter()
                    .filter(|o| o.taken_by(cmd) == Takes::Documented);
                for o in documented {
                    v.push(option_arg(o.doc_name, o.token, o.value));
                }
            }
            Kind::BfInfoFields => {
                for f in BF_INFO {
                    v.push(doc_arg(&info_field_token(f.keyword)));
                }
            }
        }
    }
    v
}

/// One argument (with its sub-arguments).
fn doc_arg(d: &Arg) -> DocArg {
    DocArg {
        name: d.name,
        kind: match d.kind {
            Kind::Type(t) => t,
            // Expanded by build_args; never documented as such.
            Kind::BfOptions(_) | Kind::CfOptions(_) | Kind::BfInfoFields => {
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
            }
        },
        token: d.token,
        flags: d.flags,
        sub: build_args(d.sub),
    }
}

/// The key specs of a command with this access.
pub(super) fn key_specs(access: Access) -> Vec<KeySpec> {
    let flags = match access {
        Access::Read => raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
        Access::Update => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_UPDATE,
        Access::Create => raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_INSERT,
        Access::Merge => return merge_key_specs(),
    };
    vec![KeySpec::At { flags, pos: 1 }]
}

/// BF.MERGE's keys, as PFMERGE and ZUNIONSTORE declare theirs: the destination
/// (RW, read and inserted into, like PFMERGE's), then the `numkeys` sources
/// (RO) found through argv\[2\], so a Cluster answers CROSSSLOT for keys of
/// several slots.
fn merge_key_specs() -> Vec<KeySpec> {
    vec![
        KeySpec::At {
            flags: raw::REDISMODULE_CMD_KEY_RW
                | raw::REDISMODULE_CMD_KEY_ACCESS
                | raw::REDISMODULE_CMD_KEY_INSERT,
            pos: 1,
        },
        KeySpec::Counted {
            flags: raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS,
            pos: 2,
        },
    ]
}
