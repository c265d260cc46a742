//! Windowed Bloom filters in Redis (`WINDOW seconds`, `ferrobloom_core::window`):
//! the server clock, the add path and its replication; the generations a write
//! drops are freed by `reclaim`.
//!
//! # Time and replication
//! The primary's clock drives the window. A write reads the clock once
//! (`RedisModule_Milliseconds`), uses the filter's time
//! (`Window::write_time`: the clock, run on from the filter's newest change
//! when the clock is behind it), and, when it changed the filter (an item
//! inserted or a generation dropped), replicates itself as `BF.INSERT key
//! NOCREATE AT <that time> ITEMS <the items it applied>`. `AT` is accepted
//! only from the primary's stream and the AOF (`Ctx::trusted`), so a replica
//! and an AOF replay apply every write at the primary's time and reach the
//! primary's state, whatever their own clocks; each such write, and each
//! load, anchors the filter's time to the local clock (`Window::anchor`), so
//! a promoted replica whose clock lags goes on from the last replicated time.
//! Reads (EXISTS, MEXISTS, CARD, INFO) use the filter's time by the local
//! clock and skip the generations that are older than the window by it,
//! without changing anything, as Redis treats expired keys on replicas.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

use super::api::{Args, Ctx, RStr};

use super::config::bloom_limits;
use super::handler::{replicate_reserve, CmdResult};
use super::reclaim::free_retired;
use super::shapes;
use crate::cmd::errors::{bloom as map_err, Op};
use crate::cmd::params::CreateParams;
use ferrobloom_core::bloom::BloomError;
use ferrobloom_core::window::Window;

/// Test builds only: milliseconds added to the server clock (FERROBLOOM.CLOCK).
static CLOCK_OFFSET_MS: AtomicI64 = AtomicI64::new(0);

/// The server time in milliseconds since the Unix epoch (plus the test offset).
pub fn now_ms() -> u64 {
    let ms = super::ffi::milliseconds().saturating_add(CLOCK_OFFSET_MS.load(Relaxed));
    u64::try_from(ms).unwrap_or(0)
}

/// FERROBLOOM.CLOCK [offset_ms]: sets (or reads) the offset added to the server
/// clock for windowed filters, so tests can move time (test builds only).
#[cfg(feature = "fault-injection")]
pub fn clock(ctx: Ctx, args: Args) -> CmdResult {
    use crate::cmd::errors::CmdError;
    match args.len() {
        1 => {}
        2 => {
            let v = crate::cmd::parse::parse_i64(args.bytes(1))
                .ok_or(CmdError::Text("ERR bad offset"))?;
            CLOCK_OFFSET_MS.store(v, Relaxed);
        }
        _ => return Err(CmdError::WrongArity),
    }
    ctx.reply_integer(CLOCK_OFFSET_MS.load(Relaxed));
    Ok(())
}

/// BF.ADD / BF.MADD / BF.INSERT on a windowed filter. `single`: BF.ADD's reply.
#[allow(clippy::too_many_arguments)]
pub fn add(
    ctx: Ctx,
    args: &Args,
    name: RStr,
    w: &mut Window,
    items_from: usize,
    created: Option<CreateParams>,
    single: bool,
    at: Option<u64>,
    given: Option<&[u8]>,
) -> CmdResult {
    let limits = bloom_limits(ctx.trusted());
    w.set_plan(shapes::plan(given));
    let scheme = w.scheme();
    // The filter's time: the primary's (AT), else this server's clock run on
    // from the newest change when it is behind it (`Window::write_time`).
    let now = match at {
        Some(at) => at.max(w.last_ms()),
        None => w.write_time(now_ms()),
    };
    let mut changed = w.advance(now);
    let mut refused: Vec<usize> = Vec::new();
    let mut replied = 0;
    let mut outcome = Ok(());
    if single {
        let h = scheme.bloom(args.bytes(items_from));
        replied = 1;
        match w.add(&h, now, &limits) {
            Ok(a) => {
                changed |= a.changed();
                ctx.reply_bool(a.is_new());
            }
            Err(err) => {
                refused.push(items_from);
                outcome = Err(map_err(Op::Insert, &err));
            }
        }
    } else {
        // Hashed first, then added as a batch (`Window::add_batch`).
        let n = args.len().saturating_sub(items_from);
        let mut hashes = Vec::new();
        if hashes.try_reserve_exact(n).is_err() {
            free_retired(ctx, w.take_retired());
            w.take_plan();
            return Err(map_err(Op::Insert, &BloomError::AllocFailed));
        }
        hashes.extend(args.iter_from(items_from).map(|i| scheme.bloom(i)));
        ctx.reply_array_postponed();
        w.add_batch(&hashes, now, &limits, |r| {
            replied += 1;
            match r {
                Ok(a) => {
                    changed |= a.changed();
                    ctx.reply_bool(a.is_new());
                    true
                }
                Err(err) => {
                    ctx.reply_error(map_err(Op::Insert, &err).text());
                    if refused.try_reserve(1).is_ok() {
                        refused.push(items_from + replied - 1);
                    }
                    err != BloomError::Full
                }
            }
        });
        ctx.set_array_len(replied);
    }
    free_retired(ctx, w.take_retired());
    let blob = shapes::finish(ctx, w.take_plan());
    if at.is_some() {
        // A replica goes on from the primary's last time, at its own clock's
        // rate, if it is promoted (docs/windowed.md, "Clock steps").
        w.anchor(now_ms());
    }
    if let Some(p) = created {
        replicate_reserve(ctx, name, &p);
    }
    // Replicated with the time it used; items refused here (limits that do not
    // apply where the command is replayed) are left out. A write whose every
    // item was refused replicates nothing: generations it dropped stay on the
    // replica, where reads skip them, until the next replicated write.
    if changed && refused.len() < replied {
        let at = now.to_string();
        let mut head: Vec<&[u8]> = vec![b"NOCREATE", b"AT", at.as_bytes()];
        if let Some(blob) = &blob {
            head.extend_from_slice(&[b"SHAPES", blob]);
        }
        head.push(b"ITEMS");
        ctx.replicate_items(
            c"BF.INSERT",
            args,
            &head,
            items_from,
            items_from + replied,
            &refused,
        );
    }
    outcome
}
