//! Test-only commands (feature `fault-injection`): FERROBLOOM.FAULT arms an
//! injected panic (see `guard`), FERROBLOOM.CLOCK moves the windowed filters'
//! clock (see `window`).

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

/// Registers FERROBLOOM.FAULT and FERROBLOOM.CLOCK.
pub(super) fn register(ctx: LoadCtx) -> Result<(), String> {
    ctx.create_command(
        c"FERROBLOOM.FAULT",
        ferrobloom_fault,
        c"readonly",
        (0, 0, 0),
    )
    .map_err(|_| "could not register FERROBLOOM.FAULT".to_string())?;
    ctx.create_command(
        c"FERROBLOOM.CLOCK",
        ferrobloom_clock,
        c"readonly",
        (0, 0, 0),
    )
    .map_err(|_| "could not register FERROBLOOM.CLOCK".to_string())?;
    Ok(())
}
