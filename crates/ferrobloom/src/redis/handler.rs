//! What every BF and CF command handler shares: the result type, argument
//! access in the parsers' terms, the key argument, item-size checks and the
//! origin (client or primary/AOF) of the running command, the replicated
//! creation of a Bloom filter, and SCANDUMP's replies.

use super::api::{Args, Ctx, RStr};
use super::config::max_item_bytes;
use crate::cmd::errors::CmdError;
use crate::cmd::lenient::Origin;
use crate::cmd::options::reserve_args;
use crate::cmd::params::CreateParams;
use crate::cmd::parse::{check_item_sizes, ArgList};

pub type CmdResult = Result<(), CmdError>;

impl<'a> ArgList<'a> for Args<'a> {
    fn count(&self) -> usize {
        self.len()
    }
    fn arg(&self, i: usize) -> Option<&'a [u8]> {
        (i < self.len()).then(|| self.bytes(i))
    }
}

/// The key argument (argv\[1\]) of every BF and CF command.
pub fn key_name<'a>(args: &Args<'a>) -> Result<RStr<'a>, CmdError> {
    args.string(1).ok_or(CmdError::WrongArity)
}

/// Refuses items longer than `bf.max-item-size` (shared by BF and CF commands).
pub fn check_items(ctx: Ctx, args: &Args, from: usize) -> CmdResult {
    check_item_sizes(args, from, max_item_bytes(ctx.trusted()))
}

/// Who wrote the running command: a client, or the primary / the AOF.
pub fn origin(ctx: Ctx) -> Origin {
    if ctx.trusted() {
        Origin::Trusted
    } else {
        Origin::Client
    }
}

/// Logs (once per server run) that the primary or the AOF created a filter a
/// client of this server could not have asked for: it is applied all the same,
/// so the replica does not diverge.
pub fn note_beyond_client_limits(ctx: Ctx, what: &str) {
    static LOGGED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !LOGGED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        ctx.log(
            c"warning",
            &format!(
                "ferrobloom: applied a filter creation from the primary or the AOF beyond the \
                 limits for clients ({what}); logged once"
            ),
        );
    }
}

/// Replicates the creation of a filter with every parameter spelled out, so a
/// replica (or the AOF) builds the same filter whatever its own defaults are
/// (the arguments: [`reserve_args`]).
pub fn replicate_reserve(ctx: Ctx, key: RStr, p: &CreateParams) {
    let args = reserve_args(p);
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    ctx.replicate(c"BF.RESERVE", key, &args);
}

/// Whether a `SCANDUMP key iterator [STAMP]` asks for the stamp; any other
/// fourth argument, or more, is RedisBloom's wrong-arity error.
pub fn scandump_stamp(args: &Args) -> Result<bool, CmdError> {
    match args.len() {
        3 => Ok(false),
        4 if args.bytes(3).eq_ignore_ascii_case(b"STAMP") => Ok(true),
        _ => Err(CmdError::WrongArity),
    }
}

/// A SCANDUMP reply: `[iterator, data]` (RedisBloom's, `[0, ""]` past the
/// end), or with STAMP `[iterator, data, stamp]`, the stamp of the state the
/// chunk was read from (`value::Stored`).
pub fn reply_scandump(ctx: Ctx, chunk: Option<(i64, &[u8])>, stamp: Option<u64>) {
    ctx.reply_array(if stamp.is_some() { 3 } else { 2 });
    let (next, data) = chunk.unwrap_or((0, b""));
    ctx.reply_integer(next);
    ctx.reply_bulk(data);
    if let Some(s) = stamp {
        ctx.reply_integer(s as i64);
    }
}
