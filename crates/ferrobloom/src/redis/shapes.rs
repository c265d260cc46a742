//! Replicated link shapes (`ferrobloom_core::bloom::ShapePlan`): a write that
//! adds links (a chain's growth link, a windowed generation's first and
//! growth links) replicates as a `BF.INSERT … SHAPES <blob> ITEMS …` whose
//! blob holds those links' records, so a replica or an AOF replay builds the
//! primary's links instead of running its own sizing rules (another release's,
//! another C library's `ln`/`exp`). `SHAPES` is accepted only from the
//! primary's stream, the AOF and a slot import (`Ctx::trusted`); writes that
//! add no link replicate as before. A given shape that does not fit where the
//! replay offers it is computed there instead (logged once), never refused.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::api::Ctx;
use ferrobloom_core::bloom::{decode_shapes, encode_shapes, ShapePlan};

/// The plan of a write: the primary's shapes to take (`SHAPES`, checked by
/// the parse), or none to take (a client's write records what it adds).
pub fn plan(given: Option<&[u8]>) -> ShapePlan {
    match given.map(decode_shapes) {
        Some(Ok(shapes)) => ShapePlan::replay(shapes),
        _ => ShapePlan::record(),
    }
}

/// After the write: logs once when the replay could not take every given
/// shape, and returns the `SHAPES` value to replicate (`None`: no link added).
pub fn finish(ctx: Ctx, plan: Option<ShapePlan>) -> Option<Vec<u8>> {
    let plan = plan?;
    if plan.diverged() {
        static LOGGED: AtomicBool = AtomicBool::new(false);
        if !LOGGED.swap(true, Relaxed) {
            ctx.log(
                c"warning",
                "ferrobloom: a write from the primary or the AOF carried link shapes this \
                 server could not take; it sized those links itself (the replica may differ \
                 from its primary: run the same or a newer release than the primary); logged once",
            );
        }
    }
    (!plan.added().is_empty()).then(|| encode_shapes(plan.added()))
}
