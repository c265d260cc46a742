//! Test-only commands (feature `fault-injection`): FERROBLOOM.FAULT arms an
//! injected panic (see `guard`), FERROBLOOM.CLOCK moves the windowed filters'
//! clock (see `window`), FERROBLOOM.RECLAIM pauses the freeing worker or shows
//! its counters (see `reclaim`).

use std::ffi::c_int;

use redis_module::raw;

use super::R;
use crate::cmd::CmdError;
use crate::redis::api::{Args, Ctx};

/// FERROBLOOM.FAULT point [count]: arms an injected panic (test builds only;
/// see `guard`).
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
    crate::redis::guard::fault::arm(&point, count);
    ctx.reply_ok();
    Ok(())
}

trampoline!(ferrobloom_fault, fault, R);
trampoline!(ferrobloom_clock, crate::redis::window::clock, R);
trampoline!(ferrobloom_reclaim, crate::redis::reclaim::reclaim_cmd, R);

/// Registers FERROBLOOM.FAULT and FERROBLOOM.CLOCK with `create`
/// (`RedisModule_CreateCommand`).
pub(super) fn register(
    ctx: *mut raw::RedisModuleCtx,
    create: unsafe extern "C" fn(
        *mut raw::RedisModuleCtx,
        *const std::ffi::c_char,
        raw::RedisModuleCmdFunc,
        *const std::ffi::c_char,
        c_int,
        c_int,
        c_int,
    ) -> c_int,
) -> Result<(), String> {
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
    // SAFETY: as above.
    let rc = unsafe {
        create(
            ctx,
            c"FERROBLOOM.RECLAIM".as_ptr(),
            Some(ferrobloom_reclaim),
            c"readonly".as_ptr(),
            0,
            0,
            0,
        )
    };
    if rc != raw::REDISMODULE_OK as c_int {
        return Err("could not register FERROBLOOM.RECLAIM".into());
    }
    Ok(())
}
