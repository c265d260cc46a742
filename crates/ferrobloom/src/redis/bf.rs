//! BF.* command handlers: parse (crate::cmd::bf) -> core (ferrobloom_core::bloom) ->
//! reply. Every handler returns `Err(CmdError)` for an error reply; the command
//! trampoline (crate::redis::commands) sends it.

use super::api::{Args, Ctx, Key, KeyState, Lookup, RStr};
use super::config::{bloom_defaults, bloom_limits};
use super::handler::{
    check_items, key_name, note_beyond_client_limits, origin, replicate_reserve, reply_scandump,
    scandump_stamp, CmdResult,
};
use super::membership;
use super::shapes;
use super::types::BLOOM;
use super::window;
use crate::cmd::bf::{parse_insert_from, parse_reserve_from};
use crate::cmd::create;
use crate::cmd::errors::{self as e, bloom as map_err, CmdError, Op};
use crate::cmd::format::{format_g, format_window};
use crate::cmd::info::{self, InfoContext, InfoValue};
use crate::cmd::lenient::{self, Origin};
use crate::cmd::params::{BloomDefaults, CreateParams, MAX_ERROR_RATE};
use crate::cmd::parse::parse_i64;
use ferrobloom_core::bloom::{BloomError, BloomLayout, MAX_CAPACITY, MAX_EXPANSION};
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::hash::HashAhead;
use ferrobloom_core::window::Window;

/// Creates a filter in a missing key. A `VALIDATESCALETO n` the filter could
/// never reach under this server's limits refuses the creation (not on a
/// replicated command, as valkey-bloom: the primary checked it).
fn create(ctx: Ctx, key: &mut Key, p: &mut CreateParams) -> CmdResult {
    if p.first_link.is_some() && !ctx.trusted() {
        return Err(e::SHAPES_FROM_CLIENT.into());
    }
    if p.capacity > MAX_CAPACITY || p.expansion > MAX_EXPANSION || p.error > MAX_ERROR_RATE {
        note_beyond_client_limits(
            ctx,
            &format!(
                "BF capacity {} error {} expansion {}",
                p.capacity, p.error, p.expansion
            ),
        );
    }
    let limits = bloom_limits(ctx.trusted());
    let filter = create::bloom(p, &limits, !ctx.trusted())?;
    // Replicated with its first link (`redis/shapes.rs`), but in
    // RedisBloom's layout (its own formula and header).
    p.first_link = filter
        .as_chain()
        .filter(|c| !c.is_redisbloom())
        .and_then(|c| c.links().first())
        .map(|l| *l.shape());
    if key.set(&BLOOM, filter) {
        Ok(())
    } else {
        Err(e::BF_COULD_NOT_CREATE.into())
    }
}

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
pub fn reserve(ctx: Ctx, args: Args) -> CmdResult {
    let mut p = parse_reserve_from(&args, &defaults(ctx), origin(ctx))?;
    let mut key = Key::open(ctx, key_name(&args)?, true);
    match key.state(&BLOOM) {
        KeyState::Missing => {}
        KeyState::WrongType => return Err(e::WRONG_TYPE.into()),
        KeyState::Found => return Err(e::ITEM_EXISTS.into()),
    }
    create(ctx, &mut key, &mut p)?;
    // Spelled out: without EXPANSION/NONSCALING the shape came from this
    // server's bf-expansion-factor, which a replica or an AOF replay may not share.
    replicate_reserve(ctx, key_name(&args)?, &p);
    ctx.reply_ok();
    Ok(())
}

/// How an add command replies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// BF.ADD: one boolean, or an error reply.
    Single,
    /// BF.MADD / BF.INSERT: an array; errors are elements; "full" stops it.
    Array,
}

/// The add path shared by BF.ADD, BF.MADD and BF.INSERT.
fn add_items(
    ctx: Ctx,
    args: Args,
    items_from: usize,
    create_with: Option<CreateParams>,
    shape: Shape,
    at: Option<u64>,
    given: Option<Vec<u8>>,
) -> CmdResult {
    check_items(ctx, &args, items_from)?;
    if at.is_some() && !ctx.trusted() {
        return Err(e::WINDOW_AT.into());
    }
    if given.is_some() && !ctx.trusted() {
        return Err(e::SHAPES_FROM_CLIENT.into());
    }
    let name = key_name(&args)?;
    let mut key = Key::open(ctx, name, true);
    let created = match (key.state(&BLOOM), create_with) {
        (KeyState::WrongType, _) => return Err(e::WRONG_TYPE.into()),
        (
            KeyState::Found,
            Some(CreateParams {
                window_ms: Some(ms),
                ..
            }),
        ) => {
            // WINDOW on an existing key: only for the same window.
            let same = key.existing(&BLOOM)?.as_window().map(|w| w.window_ms()) == Some(ms);
            if !same {
                return Err(e::WINDOW_EXISTS.into());
            }
            None
        }
        (KeyState::Found, _) => None,
        (KeyState::Missing, None) => return Err(e::NOT_FOUND.into()),
        (KeyState::Missing, Some(mut p)) => {
            create(ctx, &mut key, &mut p)?;
            Some(p)
        }
    };
    let chain = match key.existing(&BLOOM)? {
        BloomFilter::Chain(c) => c,
        BloomFilter::Window(w) => {
            let single = shape == Shape::Single;
            let given = given.as_deref();
            return window::add(ctx, &args, name, w, items_from, created, single, at, given);
        }
    };
    let limits = bloom_limits(ctx.trusted());
    let mut changed = false;
    chain.set_plan(shapes::plan(given.as_deref()));
    match shape {
        Shape::Single => {
            let h = chain.hash(args.bytes(items_from));
            let r = chain.add(&h, &limits);
            changed = matches!(r, Ok(true));
            let blob = shapes::finish(ctx, chain.take_plan());
            match blob {
                Some(blob) if changed => {
                    replicate_add(ctx, name, created, false);
                    let head = shapes_head(&blob);
                    let end = items_from + 1;
                    ctx.replicate_items(c"BF.INSERT", &args, &head, items_from, end, &[]);
                }
                _ => replicate_add(ctx, name, created, changed),
            }
            let added = r.map_err(|err| map_err(Op::Insert, &err))?;
            ctx.reply_bool(added);
        }
        Shape::Array => {
            ctx.reply_array_postponed();
            let mut replied = 0;
            // Items refused by an error: a limit (bf-max-links, max-filter-memory)
            // does not apply where the command is replayed, so they must not be.
            let mut refused: Vec<usize> = Vec::new();
            let scheme = chain.scheme();
            let mut ahead = HashAhead::new(args.iter_from(items_from), |i| scheme.bloom(i));
            while let Some(h) = ahead.next_with(|h| chain.prefetch(h)) {
                replied += 1;
                match chain.add(&h, &limits) {
                    Ok(added) => {
                        changed |= added;
                        ctx.reply_bool(added);
                    }
                    Err(err) => {
                        ctx.reply_error(map_err(Op::Insert, &err).text());
                        if refused.try_reserve(1).is_ok() {
                            refused.push(items_from + replied - 1);
                        }
                        if err == BloomError::Full {
                            break;
                        }
                    }
                }
            }
            ctx.set_array_len(replied);
            let blob = shapes::finish(ctx, chain.take_plan());
            if refused.is_empty() && blob.is_none() {
                replicate_add(ctx, name, created, changed);
            } else {
                // The items this server applied (those that were already present
                // are no-ops on the replay too), as a BF.MADD on the existing key,
                // or a BF.INSERT with the shapes of the links they added.
                replicate_add(ctx, name, created, false);
                if changed {
                    let upto = items_from + replied;
                    match &blob {
                        Some(blob) => {
                            let head = shapes_head(blob);
                            let r = &refused;
                            ctx.replicate_items(c"BF.INSERT", &args, &head, items_from, upto, r);
                        }
                        None => {
                            let r = &refused;
                            ctx.replicate_items(c"BF.MADD", &args, &[], items_from, upto, r);
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `NOCREATE SHAPES <blob> ITEMS`: the head of an add replicated with the
/// shapes of the links it added (`redis/shapes.rs`).
fn shapes_head(blob: &[u8]) -> [&[u8]; 4] {
    [b"NOCREATE", b"SHAPES", blob, b"ITEMS"]
}

/// Replicates an add: the explicit creation first if the command created the
/// filter, then the command itself if it changed anything.
fn replicate_add(ctx: Ctx, name: RStr, created: Option<CreateParams>, changed: bool) {
    if let Some(p) = created {
        replicate_reserve(ctx, name, &p);
    }
    if changed {
        ctx.replicate_verbatim();
    }
}

/// BF.ADD key item
pub fn add(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 3 {
        return Err(CmdError::WrongArity);
    }
    add_items(
        ctx,
        args,
        2,
        Some(create_defaults(ctx)),
        Shape::Single,
        None,
        None,
    )
}

/// BF.MADD key item [item ...]
pub fn madd(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() < 3 {
        return Err(CmdError::WrongArity);
    }
    add_items(
        ctx,
        args,
        2,
        Some(create_defaults(ctx)),
        Shape::Array,
        None,
        None,
    )
}

/// What BF.ADD/BF.MADD create a missing key with. From the primary or the AOF
/// that is RedisBloom 2.x's BF.ADD (ferrobloom replicates every creation as
/// an explicit BF.RESERVE first, so its own adds never find the key missing).
fn create_defaults(ctx: Ctx) -> CreateParams {
    let d = defaults(ctx);
    if origin(ctx) == Origin::Trusted {
        return lenient::bf_add_params(&d);
    }
    CreateParams::from_defaults(&d)
}

/// The configured defaults for a creation by this command: a client's gets
/// the configured tightening ratio and seed (`bf.bloom-tightening-ratio`,
/// `bf.bloom-use-random-seed`); a replicated or replayed one RedisBloom's,
/// since its writer spelled out any other.
fn defaults(ctx: Ctx) -> BloomDefaults {
    bloom_defaults(origin(ctx) == Origin::Client)
}

/// BF.INSERT key [CAPACITY cap] [ERROR err] [EXPANSION exp] [NOCREATE]
/// [NONSCALING] ITEMS item [item ...]
pub fn insert(ctx: Ctx, args: Args) -> CmdResult {
    let a = parse_insert_from(&args, &defaults(ctx), origin(ctx))?;
    let (from, create, at) = (a.items_from, a.create, a.at_ms);
    add_items(ctx, args, from, create, Shape::Array, at, a.shapes)
}

/// BF.EXISTS key item
pub fn exists(ctx: Ctx, args: Args) -> CmdResult {
    membership::exists(ctx, args, &BLOOM)
}

/// BF.MEXISTS key item [item ...]
pub fn mexists(ctx: Ctx, args: Args) -> CmdResult {
    membership::mexists(ctx, args, &BLOOM)
}

/// Replies with one INFO value as its type says.
pub(super) fn reply_info(ctx: Ctx, v: InfoValue) {
    match v {
        InfoValue::Count(n) => ctx.reply_count(n),
        InfoValue::Integer(n) => ctx.reply_integer(n),
        InfoValue::Double(x) => ctx.reply_double(x),
        InfoValue::Null => ctx.reply_null(),
    }
}

/// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION | ERROR |
/// TIGHTENING | MAXSCALEDCAPACITY]
///
/// The default reply is RedisBloom's five fields for every kind of filter (strict
/// clients refuse any other key). valkey-bloom's ERROR, TIGHTENING and
/// MAXSCALEDCAPACITY exist only as single fields, in RedisBloom's single-field
/// shape; TIGHTENING and MAXSCALEDCAPACITY only for scaling filters, as in
/// valkey-bloom.
pub fn info(ctx: Ctx, args: Args) -> CmdResult {
    if !(2..=3).contains(&args.len()) {
        return Err(CmdError::WrongArity);
    }
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let c = key.existing(&BLOOM)?;
    let cx = InfoContext {
        clock: &window::now_ms,
        limits: bloom_limits(ctx.trusted()),
    };
    if args.len() == 3 {
        let f = info::find_bf(args.bytes(2))?;
        if !f.describes(c) {
            return Err(e::INVALID_INFO_VALUE.into());
        }
        if ctx.is_resp3() {
            ctx.reply_map(1);
            ctx.reply_simple(f.label);
        } else {
            ctx.reply_array(1);
        }
        reply_info(ctx, (f.value)(c, &cx));
        return Ok(());
    }
    let fields = info::BF_INFO.iter().filter(|f| f.default);
    ctx.reply_map(fields.clone().count());
    for f in fields {
        ctx.reply_simple(f.label);
        reply_info(ctx, (f.value)(c, &cx));
    }
    Ok(())
}

/// Items within the live window of a windowed filter (by this server's
/// clock), or all items of a plain one.
fn live_items(c: &BloomFilter) -> u64 {
    c.live_items(if c.is_timed() { window::now_ms() } else { 0 })
}

/// BF.CARD key
pub fn card(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 2 {
        return Err(CmdError::WrongArity);
    }
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let items = match key.lookup(&BLOOM) {
        Lookup::Found(c) => live_items(c),
        Lookup::Missing => 0,
        Lookup::WrongType => return Err(e::WRONG_TYPE.into()),
    };
    ctx.reply_count(items);
    Ok(())
}

/// BF.SCANDUMP key iterator
pub fn scandump(ctx: Ctx, args: Args) -> CmdResult {
    let with_stamp = scandump_stamp(&args)?;
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let (c, stamp) = key.existing_stamped(&BLOOM)?;
    let stamp = with_stamp.then_some(stamp);
    let iter = parse_i64(args.bytes(2)).ok_or(e::SCANDUMP_NOT_NUMERIC)?;
    if iter == 0 {
        reply_scandump(ctx, Some((1, &c.encode_header())), stamp);
        return Ok(());
    }
    // A windowed filter's iterators name their generation, so a walk that
    // writes cross is exact (docs/windowed.md, "Copies").
    let chunk = c.scandump_walk(iter).map_err(|_| e::SCANDUMP_WALK)?;
    reply_scandump(ctx, chunk, stamp);
    Ok(())
}

/// BF.LOADCHUNK key iterator data
pub fn loadchunk(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 4 {
        return Err(CmdError::WrongArity);
    }
    let iter = parse_i64(args.bytes(2)).ok_or(e::LOADCHUNK_NOT_NUMERIC)?;
    let data = args.bytes(3);
    let mut key = Key::open(ctx, key_name(&args)?, true);
    match key.state(&BLOOM) {
        KeyState::WrongType => return Err(e::WRONG_TYPE.into()),
        KeyState::Missing if iter == 1 => {
            let mut filter = BloomFilter::from_header(data, &bloom_limits(ctx.trusted()))
                .map_err(|err| map_err(Op::Load, &err))?;
            // The core's rule after every load (the local loaders' too).
            filter.anchor_clock(window::now_ms());
            if !key.set(&BLOOM, filter) {
                return Err(e::BAD_DATA.into());
            }
        }
        KeyState::Missing => return Err(e::NOT_FOUND.into()),
        KeyState::Found => {
            key.existing(&BLOOM)?
                .load_chunk(iter, data)
                .map_err(|err| map_err(Op::Load, &err))?;
        }
    }
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(())
}

/// BF.DEBUG key
pub fn debug(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 2 {
        return Err(CmdError::WrongArity);
    }
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let c = match key.existing(&BLOOM)? {
        BloomFilter::Chain(c) => c,
        BloomFilter::Window(w) => return debug_window(ctx, w),
    };
    ctx.reply_array(1 + c.links().len());
    ctx.reply_bulk(format!("size:{}", c.items()).as_bytes());
    for l in c.links() {
        let s = l.shape();
        let line = format!(
            "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}{}",
            s.bytes(),
            if s.bits != 0 { s.bits } else { s.modulus() },
            s.hashes,
            c.scheme().width(),
            s.entries,
            l.items(),
            format_g(s.error),
            layout_suffix(s.layout)
        );
        ctx.reply_bulk(line.as_bytes());
    }
    Ok(())
}

/// BF.DEBUG's mention of a link's layout (none for RedisBloom's own two).
fn layout_suffix(layout: BloomLayout) -> &'static str {
    match layout {
        BloomLayout::Classic | BloomLayout::ClassicDouble | BloomLayout::RedisBloom => "",
        BloomLayout::Blocked => " layout:blocked",
        BloomLayout::Paired => " layout:paired",
    }
}

/// BF.DEBUG on a windowed filter: `size:<items in the live window>`, a line
/// with the window, then one line per link as for a plain filter, each with
/// its generation's index and whether it is live by this server's clock.
fn debug_window(ctx: Ctx, w: &Window) -> CmdResult {
    let now = w.effective(window::now_ms());
    ctx.reply_array(2 + w.link_count());
    ctx.reply_bulk(format!("size:{}", w.items_at(now)).as_bytes());
    ctx.reply_bulk(
        format!(
            "window:{} generations:{} parts:{} last_change_ms:{} ahead_ms:{}",
            format_window(w.window_ms()),
            w.generation_list().count(),
            w.parts(),
            w.last_ms(),
            w.ahead_ms()
        )
        .as_bytes(),
    );
    for (index, g) in w.generation_list() {
        let live = w.is_live_at(index, now);
        for l in g.links() {
            let s = l.shape();
            let line = format!(
                "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}{} generation:{index}{}",
                s.bytes(),
                s.bits,
                s.hashes,
                w.scheme().width(),
                s.entries,
                l.items(),
                format_g(s.error),
                layout_suffix(s.layout),
                if live { "" } else { " forgotten" }
            );
            ctx.reply_bulk(line.as_bytes());
        }
    }
    Ok(())
}
