//! Test-only commands (feature `fault-injection`): FERROBLOOM.FAULT arms an
//! injected panic (see `guard`), FERROBLOOM.CLOCK moves the windowed filters'
//! clock (see `window`), FERROBLOOM.RECLAIM pauses the freeing worker or shows
//! its counters (see `reclaim`).

use super::R;
use crate::cmd::CmdError;
use crate::redis::api::{Args, Ctx};
use crate::redis::load::LoadCtx;

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

/// Registers FERROBLOOM.FAULT, FERROBLOOM.CLOCK and FERROBLOOM.RECLAIM.
pub(super) fn register(ctx: LoadCtx) -> Result<(), String> {
    for (name, func) in [
        (c"FERROBLOOM.FAULT", ferrobloom_fault),
        (c"FERROBLOOM.CLOCK", ferrobloom_clock),
        (c"FERROBLOOM.RECLAIM", ferrobloom_reclaim),
    ] {
        ctx.create_command(name, func, c"readonly", (0, 0, 0))
            .map_err(|_| format!("could not register {}", name.to_string_lossy()))?;
    }
    Ok(())
}
