//! BF.MERGE destination numkeys source [source ...] [OVERFILL]: the union of
//! Bloom filters (ferrobloom's extension; the core is `core::bloom::merge`).
//!
//! Every check happens before anything changes: arity and numkeys, each source
//! (missing: `ERR not found`; another type: WRONGTYPE), the destination's type,
//! compatibility, `bf.merge-max-bytes`, the memory cap, a union that holds
//! more items than a link of the result does at its error rate (refused unless
//! `OVERFILL` is given) and the allocations. Replicas and AOF replay never
//! refuse an overfilled union: what the primary applied is applied (a command
//! without `OVERFILL` from a primary that did not check it keeps its capped
//! counts, `Overfill::Capped`).
//! A source listed twice is read once; the destination listed as a source is
//! merged in place (OR with itself changes nothing). The result depends only on
//! the filters' contents (a missing destination takes the first source's
//! parameters, no configured default), so the command replicates verbatim;
//! replicas and AOF replay apply it without the limits, as every trusted write.
//! (The item estimate takes `ln` of bit counts: the same bits give the same
//! rounded count on every server of one platform; another libm could differ
//! only for an estimate within an ulp of a half, and then by one item.)

use std::collections::HashSet;

use super::api::{Args, Ctx, Key, KeyState};
use super::config::{bloom_limits, merge_max_bytes};
use super::handler::CmdResult;
use super::types::BLOOM;
use crate::cmd::errors::{self as e, CmdError};
use crate::cmd::merge::{parse_merge, FIRST_SOURCE};
use ferrobloom_core::bloom::{MergeError, Overfill};
use ferrobloom_core::filter::BloomFilter;

/// Answers a key-position request (the command is registered `getkeys-api`):
/// the destination and every source. Redis 7.0's Cluster finds a module
/// command's keys only this way (its key specs serve COMMAND GETKEYS), so
/// without it a BF.MERGE across slots would run instead of answering CROSSSLOT.
/// Returns whether this call was such a request.
fn key_positions(ctx: Ctx, args: &Args) -> bool {
    if !ctx.is_keys_position_request() {
        return false;
    }
    // The sources (without a trailing OVERFILL): numkeys says how many.
    let last = parse_merge(args).map_or(args.len(), |m| FIRST_SOURCE + m.sources);
    for pos in std::iter::once(1).chain(FIRST_SOURCE..last) {
        if pos < args.len() {
            ctx.key_at_pos(pos);
        }
    }
    true
}

/// BF.MERGE destination numkeys source [source ...] [OVERFILL]
pub fn merge(ctx: Ctx, args: Args) -> CmdResult {
    if key_positions(ctx, &args) {
        return Ok(());
    }
    let parsed = parse_merge(&args)?;
    let count = parsed.sources;
    let dest_name = args.string(1).ok_or(CmdError::WrongArity)?;
    let dest_bytes = args.bytes(1);
    let mut dest = Key::open(ctx, dest_name, true);
    let dest_state = dest.state(&BLOOM);
    // The sources other than the destination, each once, in order, with their
    // 1-based position on the command line.
    let mut keys: Vec<(usize, Key)> = Vec::new();
    let mut seen: HashSet<&[u8]> = HashSet::new();
    for pos in 1..=count {
        let i = FIRST_SOURCE + pos - 1;
        let name = args.bytes(i);
        if name == dest_bytes {
            match dest_state {
                KeyState::Found => continue,
                KeyState::Missing => return Err(e::NOT_FOUND.into()),
                KeyState::WrongType => return Err(e::WRONG_TYPE.into()),
            }
        }
        if !seen.insert(name) {
            continue;
        }
        let mut key = Key::open(ctx, args.string(i).ok_or(CmdError::WrongArity)?, false);
        match key.state(&BLOOM) {
            KeyState::Found => keys.push((pos, key)),
            KeyState::Missing => return Err(e::NOT_FOUND.into()),
            KeyState::WrongType => return Err(e::WRONG_TYPE.into()),
        }
    }
    if dest_state == KeyState::WrongType {
        return Err(e::WRONG_TYPE.into());
    }
    let positions: Vec<usize> = keys.iter().map(|(p, _)| *p).collect();
    let position = |i: usize| positions.get(i).copied().unwrap_or(0);
    let mut sources: Vec<&BloomFilter> = Vec::new();
    for (_, key) in keys.iter_mut() {
        sources.push(key.existing(&BLOOM)?);
    }
    let trusted = ctx.trusted();
    let limits = bloom_limits(trusted);
    let overfill = match (parsed.overfill, trusted) {
        (true, _) => Overfill::Accept,
        (false, false) => Overfill::Refuse,
        (false, true) => Overfill::Capped,
    };
    let refuse = |err: MergeError| e::merge(&err, position);
    match dest_state {
        KeyState::Found => {
            let d = dest.existing(&BLOOM)?;
            let plan = BloomFilter::merge_plan(Some(d), &sources).map_err(refuse)?;
            check_bound(plan.touched, trusted)?;
            if !sources.is_empty() {
                d.merge_from_with(&sources, &limits, overfill)
                    .map_err(refuse)?;
                ctx.replicate_verbatim();
            }
        }
        _ => {
            let plan = BloomFilter::merge_plan(None, &sources).map_err(refuse)?;
            check_bound(plan.touched, trusted)?;
            let chain = BloomFilter::merged_with(&sources, &limits, overfill).map_err(refuse)?;
            if !dest.set(&BLOOM, chain) {
                return Err(e::BF_COULD_NOT_CREATE.into());
            }
            ctx.replicate_verbatim();
        }
    }
    ctx.reply_ok();
    Ok(())
}

/// Refuses a merge that touches more than `bf.merge-max-bytes`.
fn check_bound(touched: u64, trusted: bool) -> CmdResult {
    let max = merge_max_bytes(trusted);
    if touched > max {
        return Err(e::merge_too_large(touched, max));
    }
    Ok(())
}
