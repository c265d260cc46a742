//! CF.* command handlers: parse (crate::cmd::cf) -> core (ferrobloom_core::cuckoo)
//! -> reply, on the same plumbing as BF (key states, error catalogue,
//! replication of implicit creation, trampolines).

use super::api::{Args, Ctx, Key, KeyState, RStr};
use super::config::{cf_max_filters, cuckoo_defaults, max_filter_bytes};
use super::handler::{
    check_items, key_name, note_beyond_client_limits, origin, reply_scandump, scandump_stamp,
    CmdResult,
};
use super::membership;
use super::types::CUCKOO;
use crate::cmd::cf::{parse_insert_from, parse_load_position, parse_position, parse_reserve_from};
use crate::cmd::create;
use crate::cmd::errors::{self as e, cuckoo as map_err, CmdError, Op};
use crate::cmd::format::format_g;
use crate::cmd::info::{InfoContext, CF_INFO};
use crate::cmd::lenient::{self, Origin};
use ferrobloom_core::bloom::MAX_CAPACITY;
use ferrobloom_core::cuckoo::{
    hash_for, CuckooError, CuckooFilter, CuckooHash, CuckooParams, DEFAULT_FP_BITS, HEADER_LEN,
    RB_HEADER_LEN,
};
use ferrobloom_core::hash::HashAhead;

/// Work budget of one CF.COMPACT (units of `CuckooFilter::compact_step`: about
/// one slot each). A larger filter is compacted over several calls, so one call
/// never stalls the server; the pass resumes where it stopped (and is persisted).
pub const COMPACT_BUDGET: u64 = 1 << 20;

/// Creates a filter in a missing key.
fn create(ctx: Ctx, key: &mut Key, p: &CuckooParams) -> CmdResult {
    if p.capacity > MAX_CAPACITY {
        note_beyond_client_limits(ctx, &format!("CF capacity {}", p.capacity));
    }
    let f = create::cuckoo(p, max_filter_bytes(ctx.trusted()))?;
    if key.set(&CUCKOO, f) {
        Ok(())
    } else {
        Err(e::CF_COULD_NOT_CREATE.into())
    }
}

/// Replicates the creation of a filter with every parameter spelled out
/// (the arguments: `cf_options::reserve_args`).
fn replicate_reserve(ctx: Ctx, key: RStr, p: &CuckooParams) {
    let args = crate::cmd::cf_options::reserve_args(p);
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    ctx.replicate(c"CF.RESERVE", key, &args);
}

/// CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e] [ERROR rate]
pub fn reserve(ctx: Ctx, args: Args) -> CmdResult {
    let p = parse_reserve_from(&args, &cuckoo_defaults(), origin(ctx))?;
    let mut key = Key::open(ctx, key_name(&args)?, true);
    match key.state(&CUCKOO) {
        KeyState::Missing => {}
        KeyState::WrongType => return Err(e::WRONG_TYPE.into()),
        KeyState::Found => return Err(e::ITEM_EXISTS.into()),
    }
    create(ctx, &mut key, &p)?;
    // Spelled out: omitted options came from this server's cf-* configs.
    replicate_reserve(ctx, key_name(&args)?, &p);
    ctx.reply_ok();
    Ok(())
}

/// Opens the key for an insert command, creating the filter when missing and
/// allowed. Returns the parameters it was created with, if it was.
/// `create_with` gives the parameters of a filter to create when the key is
/// missing (`None`: NOCREATE); it is only called then.
fn open_for_insert(
    ctx: Ctx,
    key: &mut Key,
    create_with: impl FnOnce() -> Result<Option<CuckooParams>, CmdError>,
) -> Result<Option<CuckooParams>, CmdError> {
    match key.state(&CUCKOO) {
        KeyState::WrongType => Err(e::WRONG_TYPE.into()),
        KeyState::Found => Ok(None),
        KeyState::Missing => match create_with()? {
            None => Err(e::NOT_FOUND.into()),
            Some(p) => create(ctx, key, &p).map(|()| Some(p)),
        },
    }
}

fn replicate_insert(ctx: Ctx, name: RStr, created: Option<CuckooParams>, changed: bool) {
    if let Some(p) = created {
        replicate_reserve(ctx, name, &p);
    }
    if changed {
        ctx.replicate_verbatim();
    }
}

/// The bounds of a command's inserts, read once per command (the context flags
/// and configs would otherwise be read for every item).
#[derive(Clone, Copy)]
struct InsertLimits {
    max_filters: u32,
    max_bytes: u64,
}

impl InsertLimits {
    fn of(ctx: Ctx) -> Self {
        let trusted = ctx.trusted();
        InsertLimits {
            // Every layout grows at most to `cf-max-expansions`, checked for
            // each added item. RedisBloom checks once per command (its CF insert
            // path in https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/rebloom.c),
            // so one CF.INSERT grew a filter past the limit: past what any
            // client RESTORE or LOADCHUNK accepts (it could not move) and into
            // thousands of sub-filters (it stalled the server). A filter of
            // RedisBloom's layout also keeps its per-command refusal
            // (`check_expansions`). Trusted writes keep only the core's ceiling.
            max_filters: cf_max_filters(trusted),
            max_bytes: max_filter_bytes(trusted),
        }
    }
}

/// Inserts one item; `Ok(false)` only for NX when the item tests present.
fn insert_one(
    lim: InsertLimits,
    f: &mut CuckooFilter,
    h: &CuckooHash,
    nx: bool,
) -> Result<bool, ferrobloom_core::cuckoo::CuckooError> {
    if nx {
        f.insert_unique(h, lim.max_filters, lim.max_bytes)
    } else {
        f.insert(h, lim.max_filters, lim.max_bytes).map(|()| true)
    }
}

/// RedisBloom's per-command check, kept for filters migrated from it: a filter
/// that already has `cf-max-expansions` sub-filters refuses the whole command.
fn check_expansions(ctx: Ctx, f: &CuckooFilter) -> CmdResult {
    if f.is_redisbloom() && f.num_filters() as u64 >= u64::from(cf_max_filters(ctx.trusted())) {
        return Err(e::CF_MAX_EXPANSIONS.into());
    }
    Ok(())
}

fn add_one(ctx: Ctx, args: Args, nx: bool) -> CmdResult {
    if args.len() != 3 {
        return Err(CmdError::WrongArity);
    }
    check_items(ctx, &args, 2)?;
    let name = key_name(&args)?;
    let mut key = Key::open(ctx, name, true);
    let created = open_for_insert(ctx, &mut key, || {
        if origin(ctx) == Origin::Trusted {
            // RedisBloom 2.x's CF.ADD (ferrobloom's own adds never find the key
            // missing: it replicates every creation as an explicit CF.RESERVE).
            return Ok(Some(lenient::cf_add_params()));
        }
        let d = cuckoo_defaults();
        d.params(d.capacity, None).map(Some)
    })?;
    let f = key.existing(&CUCKOO)?;
    check_expansions(ctx, f)?;
    let r = insert_one(InsertLimits::of(ctx), f, &f.hash(args.bytes(2)), nx);
    replicate_insert(ctx, name, created, matches!(r, Ok(true)));
    ctx.reply_bool(r.map_err(|err| map_err(Op::Insert, &err))?);
    Ok(())
}

/// CF.ADD key item
pub fn add(ctx: Ctx, args: Args) -> CmdResult {
    add_one(ctx, args, false)
}

/// CF.ADDNX key item
pub fn addnx(ctx: Ctx, args: Args) -> CmdResult {
    add_one(ctx, args, true)
}

fn insert_many(ctx: Ctx, args: Args, nx: bool) -> CmdResult {
    let a = parse_insert_from(&args, &cuckoo_defaults(), origin(ctx))?;
    check_items(ctx, &args, a.items_from)?;
    let name = key_name(&args)?;
    let mut key = Key::open(ctx, name, true);
    let created = open_for_insert(ctx, &mut key, || Ok(a.create))?;
    let f = key.existing(&CUCKOO)?;
    check_expansions(ctx, f)?;
    let resp3 = ctx.is_resp3();
    let lim = InsertLimits::of(ctx);
    let mut changed = false;
    // Items refused (a failed insert changes nothing): a limit (cf-max-expansions,
    // max-filter-memory) does not apply where the command is replayed, so they
    // must not be.
    let mut refused: Vec<usize> = Vec::new();
    ctx.reply_array(args.len().saturating_sub(a.items_from));
    let rb = f.is_redisbloom();
    let mut ahead = HashAhead::new(args.iter_from(a.items_from), |i| hash_for(rb, i));
    let mut i = 0;
    while let Some(h) = ahead.next_with(|h| f.prefetch(h)) {
        let r = insert_one(lim, f, &h, nx);
        changed |= matches!(r, Ok(true));
        if r.is_err() && refused.try_reserve(1).is_ok() {
            refused.push(a.items_from + i);
        }
        match r {
            Ok(true) if nx => ctx.reply_integer(1),
            Ok(true) => ctx.reply_bool(true),
            Ok(false) => ctx.reply_integer(0),
            // No room: -1 (RESP3: false for CF.INSERT; CF.INSERTNX stays -1).
            Err(_) if resp3 && !nx => ctx.reply_bool(false),
            Err(_) => ctx.reply_integer(-1),
        }
        i += 1;
    }
    if refused.is_empty() {
        replicate_insert(ctx, name, created, changed);
    } else {
        // The items this server applied, on the existing key (items an NX insert
        // found present are no-ops on the replay too).
        replicate_insert(ctx, name, created, false);
        if changed {
            let cmd = if nx { c"CF.INSERTNX" } else { c"CF.INSERT" };
            ctx.replicate_items(cmd, &args, &[b"ITEMS"], a.items_from, args.len(), &refused);
        }
    }
    Ok(())
}

/// CF.INSERT key [CAPACITY cap] [ERROR rate] [NOCREATE] ITEMS item [item ...]
pub fn insert(ctx: Ctx, args: Args) -> CmdResult {
    insert_many(ctx, args, false)
}

/// CF.INSERTNX key [CAPACITY cap] [ERROR rate] [NOCREATE] ITEMS item [item ...]
pub fn insertnx(ctx: Ctx, args: Args) -> CmdResult {
    insert_many(ctx, args, true)
}

/// CF.EXISTS key item
pub fn exists(ctx: Ctx, args: Args) -> CmdResult {
    membership::exists(ctx, args, &CUCKOO)
}

/// CF.MEXISTS key item [item ...]
pub fn mexists(ctx: Ctx, args: Args) -> CmdResult {
    membership::mexists(ctx, args, &CUCKOO)
}

/// CF.COUNT key item
pub fn count(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 3 {
        return Err(CmdError::WrongArity);
    }
    check_items(ctx, &args, 2)?;
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let n = key
        .present(&CUCKOO)
        .map_or(0, |f| f.count(&f.hash(args.bytes(2))));
    ctx.reply_count(n);
    Ok(())
}

/// CF.DEL key item
pub fn del(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 3 {
        return Err(CmdError::WrongArity);
    }
    check_items(ctx, &args, 2)?;
    let mut key = Key::open(ctx, key_name(&args)?, true);
    if key.state(&CUCKOO) != KeyState::Found {
        return Err(e::CF_DEL_NOT_FOUND.into());
    }
    let f = key.existing(&CUCKOO)?;
    let deleted = f.delete(&f.hash(args.bytes(2)));
    if deleted {
        ctx.replicate_verbatim();
    }
    ctx.reply_bool(deleted);
    Ok(())
}

/// CF.COMPACT key
pub fn compact(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 2 {
        return Err(CmdError::WrongArity);
    }
    let mut key = Key::open(ctx, key_name(&args)?, true);
    if key.state(&CUCKOO) != KeyState::Found {
        return Err(e::CF_COMPACT_NOT_FOUND.into());
    }
    let f = key.existing(&CUCKOO)?;
    // Every layout: a bounded step of the pass (RedisBloom compacts in full at
    // once; a filter of its layout does the same whenever the pass fits in the
    // budget, i.e. unless about a million slots lie past its first sub-filter).
    f.compact_command(COMPACT_BUDGET);
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(())
}

/// CF.INFO key
pub fn info(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 2 {
        return Err(CmdError::WrongArity);
    }
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let f = key.existing(&CUCKOO)?;
    // Exactly RedisBloom's eight fields, in its order, for every kind of filter:
    // strict clients (go-redis, node-redis) refuse a map with any other key.
    let cx = InfoContext {
        clock: &|| 0,
        limits: ferrobloom_core::api::SERVER_DEFAULT_LIMITS,
    };
    ctx.reply_map(CF_INFO.len());
    for field in CF_INFO {
        ctx.reply_simple(field.label);
        super::bf::reply_info(ctx, (field.value)(f, &cx));
    }
    Ok(())
}

/// CF.SCANDUMP key iterator
pub fn scandump(ctx: Ctx, args: Args) -> CmdResult {
    let with_stamp = scandump_stamp(&args)?;
    let iter = parse_position(args.bytes(2))?;
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let (f, stamp) = key.existing_stamped(&CUCKOO)?;
    // A walk refused once fingerprints moved since it began; RedisBloom's
    // layout keeps its walks by client (docs/operations.md, "Live copies").
    let chunk = f
        .walk_chunk_of(ctx.client_id(), iter)
        .map_err(|err| match err {
            CuckooError::BadChunk("rearranged") => CmdError::from(e::CF_SCANDUMP_MOVED),
            CuckooError::BadChunk("unknown walk") => CmdError::from(e::CF_SCANDUMP_UNKNOWN),
            _ => CmdError::from(e::CF_SCANDUMP_WALK),
        })?;
    // Past the end `[0, ""]` like BF.SCANDUMP (RedisBloom sends `[0, nil]`
    // here, on which go-redis' CFScanDump fails with `redis: nil`).
    reply_scandump(
        ctx,
        chunk.as_ref().map(|(n, d)| (*n, &d[..])),
        with_stamp.then_some(stamp),
    );
    Ok(())
}

/// CF.LOADCHUNK key iterator data
pub fn loadchunk(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 4 {
        return Err(CmdError::WrongArity);
    }
    // As RedisBloom 2.8: only a non-integer or 0 is `Invalid position`; a
    // negative iterator is a data chunk that cannot load (after the key checks).
    let iter = parse_load_position(args.bytes(2))?;
    let data = args.bytes(3);
    let mut key = Key::open(ctx, key_name(&args)?, true);
    match (key.state(&CUCKOO), iter) {
        (KeyState::WrongType, _) => return Err(e::WRONG_TYPE.into()),
        (KeyState::Found, 1) => return Err(e::ITEM_EXISTS.into()),
        (KeyState::Missing, 1) => {
            let trusted = ctx.trusted();
            let f = CuckooFilter::from_header_within(
                data,
                max_filter_bytes(trusted),
                cf_max_filters(trusted),
            )
            .map_err(|err| header_error(data.len(), &err))?;
            if !key.set(&CUCKOO, f) {
                return Err(e::CF_CANNOT_CREATE.into());
            }
        }
        (KeyState::Missing, _) => return Err(e::NOT_FOUND.into()),
        (KeyState::Found, _) => {
            key.existing(&CUCKOO)?
                .load_chunk(iter, data)
                .map_err(|err| map_err(Op::Load, &err))?;
        }
    }
    ctx.replicate_verbatim();
    ctx.reply_ok();
    Ok(())
}

/// A refused CF.LOADCHUNK header: `Invalid header` when its length is neither
/// format's, `Couldn't create filter!` when a header of the right length fails
/// validation (RedisBloom 2.8 answers so for its 38-byte headers).
fn header_error(len: usize, err: &ferrobloom_core::cuckoo::CuckooError) -> CmdError {
    if len == RB_HEADER_LEN || len == HEADER_LEN {
        e::CF_CANNOT_CREATE.into()
    } else {
        map_err(Op::Load, err)
    }
}

/// CF.DEBUG key
pub fn debug(ctx: Ctx, args: Args) -> CmdResult {
    if args.len() != 2 {
        return Err(CmdError::WrongArity);
    }
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let f = key.existing(&CUCKOO)?;
    let line = format!(
        "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
        f.bucket_size(),
        f.base_buckets(),
        f.num_items(),
        f.num_deletes(),
        f.num_filters(),
        f.max_iterations(),
        f.expansion()
    );
    // ferrobloom's facts that RedisBloom's CF.INFO does not have, only where they
    // differ from RedisBloom's (so a default filter's line is RedisBloom's).
    let mut line = line;
    if !f.is_redisbloom() {
        if f.fp_bits() != DEFAULT_FP_BITS {
            line.push_str(&format!(" fpsize:{}", f.fp_bits()));
        }
        if let Some(r) = f.error_rate() {
            line.push_str(&format!(" error:{}", format_g(r)));
        }
    }
    ctx.reply_bulk(line.as_bytes());
    Ok(())
}
