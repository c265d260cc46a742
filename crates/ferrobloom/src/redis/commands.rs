//! Command registration: one table ([`table`]) with each command's handler,
//! flags, arity, key spec and documentation, applied with
//! `RedisModule_CreateCommand` + `RedisModule_SetCommandInfo` (the Redis 7.0
//! module API, <https://redis.io/docs/latest/develop/reference/modules/modules-api-ref/>)
//! so that COMMAND INFO/DOCS describe every command and read commands' keys are
//! read-only; [`docs`] turns the table's argument lists and key accesses into
//! the structures that API takes.
//!
//! Every command enters through a trampoline that runs its handler under
//! [`guard`]: a panic becomes an error reply and a log line, never an abort.

use super::api::{Args, Ctx};
use super::guard::guard;
use super::load::{Command, CommandInfo, LoadCtx};
use super::stats;
use crate::cmd::CmdError;

type Handler = fn(Ctx, Args) -> Result<(), CmdError>;

/// Runs a handler and sends its error, if any.
fn run(c: Ctx, args: Args, h: Handler, meta: &'static stats::Meta) {
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
}

const INTERNAL_ERROR: &str = "ERR ferrobloom internal error (details in the server log)";

/// Defines the command entry point `$name` (a `CommandFn` the table
/// registers): `$handler` run by [`run`] with the command's static metadata.
macro_rules! trampoline {
    ($name:ident, $handler:path, $write:expr) => {
        trampoline!($name, $handler, $write, None);
    };
    ($name:ident, $handler:path, $write:expr, $lookups:expr) => {
        #[allow(non_upper_case_globals)]
        const $name: $crate::redis::ffi::CommandFn = {
            struct Entry;
            impl $crate::redis::ctx::Command for Entry {
                fn call(ctx: $crate::redis::ctx::Ctx, args: $crate::redis::ctx::Args) {
                    use $crate::redis::commands::{command_name, event_name, run};
                    static META: $crate::redis::stats::Meta = $crate::redis::stats::Meta {
                        write: $write,
                        lookups: $lookups,
                        // Every write command's keyspace event is its name in
                        // lower case, derived here so that none can be missed.
                        event: if $write {
                            const EVENT: [u8; stringify!($name).len() + 1] =
                                event_name(stringify!($name));
                            match std::ffi::CStr::from_bytes_with_nul(&EVENT) {
                                Ok(e) => e,
                                Err(_) => c"",
                            }
                        } else {
                            c""
                        },
                        name: {
                            const BYTES: [u8; stringify!($name).len()] =
                                command_name(stringify!($name));
                            match std::str::from_utf8(&BYTES) {
                                Ok(n) => n,
                                Err(_) => stringify!($name),
                            }
                        },
                    };
                    run(ctx, args, $handler, &META)
                }
            }
            $crate::redis::ctx::command_entry::<Entry>
        };
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

/// `bf_add` -> `bf.add\0`, at compile time (the keyspace event of a write
/// command: its name in lower case).
const fn event_name<const N: usize>(fn_name: &str) -> [u8; N] {
    let b = fn_name.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i + 1 < N && i < b.len() {
        out[i] = if b[i] == b'_' { b'.' } else { b[i] };
        i += 1;
    }
    out
}

/// A command that changes its key, and one that only reads (the trampolines' `write`).
const W: bool = true;
const R: bool = false;

mod docs;
mod table;
#[cfg(feature = "fault-injection")]
mod testing;

use docs::{build_args, key_specs};
use table::{Spec, SPECS};

/// Registers every command (called from OnLoad).
pub fn register(ctx: LoadCtx) -> Result<(), String> {
    if !ctx.has_command_api() {
        return Err("this Redis lacks the command API of 7.0".into());
    }
    let acl = add_acl_categories(ctx)?;
    for s in SPECS {
        let cmd = ctx.create_command(s.name, s.func, s.flags, (1, 1, 1))?;
        let info = CommandInfo {
            summary: s.summary,
            complexity: s.complexity,
            since: s.since,
            tips: s.tips,
            arity: s.arity,
            key_specs: &key_specs(s.access),
            args: &build_args(s.args),
        };
        if !cmd.set_info(&info) {
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
    testing::register(ctx)?;
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
fn add_acl_categories(ctx: LoadCtx) -> Result<bool, String> {
    if !ctx.has_acl_categories() {
        return Ok(false);
    }
    for cat in [c"bloom", c"cuckoo"] {
        if !ctx.add_acl_category(cat) {
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
fn set_acl_categories(cmd: Command, s: &Spec) -> Result<(), String> {
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
    if !cmd.set_acl_categories(&cats) {
        return Err(format!(
            "could not set the ACL categories of {}",
            s.name.to_string_lossy()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_write_commands_event_is_its_name_in_lower_case() {
        assert_eq!(&super::event_name::<7>("bf_add"), b"bf.add\0");
        assert_eq!(&super::event_name::<12>("cf_insertnx"), b"cf.insertnx\0");
    }
}
