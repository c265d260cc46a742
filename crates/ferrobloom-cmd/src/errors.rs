//! The one catalogue of error replies, with RedisBloom's exact wire texts (as
//! RedisBloom 2.8 sends them, e.g. the `RedisModule_ReplyWithError` calls of
//! <https://github.com/RedisBloom/RedisBloom/blob/v2.8.2/src/rebloom.c>): the
//! text after the `-`, with `ERR ` only where RedisBloom sends it.
//! Core errors are mapped here, per the kind of operation that met them.

use ferrobloom_core::bloom::{BloomError, MergeError};
use ferrobloom_core::cuckoo::CuckooError;

/// A command's error reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    /// The server's standard `ERR wrong number of arguments for '<cmd>' command`.
    WrongArity,
    /// An exact wire text.
    Text(&'static str),
    /// A text built at run time (limits that name their configuration).
    Owned(String),
}

impl CmdError {
    pub fn text(&self) -> &str {
        match self {
            CmdError::WrongArity => "ERR wrong number of arguments",
            CmdError::Text(t) => t,
            CmdError::Owned(s) => s,
        }
    }
}

impl From<&'static str> for CmdError {
    fn from(t: &'static str) -> Self {
        CmdError::Text(t)
    }
}

// Key outcomes (RedisBloom's `statusStrerror`).
pub const NOT_FOUND: &str = "ERR not found";
pub const ITEM_EXISTS: &str = "ERR item exists";
pub const WRONG_TYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

// BF.RESERVE.
pub const BAD_ERROR_RATE: &str = "ERR bad error rate";
pub const BAD_CAPACITY: &str = "ERR bad capacity";
pub const BAD_EXPANSION: &str = "ERR bad expansion";
pub const NO_EXPANSION: &str = "ERR no expansion";
// Range errors: RedisBloom 2.8's texts (what docs/compatibility.md promises);
// ferrobloom's own upper bounds (2^30 capacity, 32768 expansion) in the same style.
pub const ERROR_RATE_RANGE: &str = "ERR (0 < error rate range < 1) ";
pub const CAPACITY_RANGE: &str = "ERR (capacity should be larger than 0)";
pub const CAPACITY_TOO_LARGE: &str = "ERR (capacity should be at most 1073741824)";
/// ferrobloom takes EXPANSION 0 (non-scaling, as RedisBloom 8); 2.8 wants >= 1.
pub const EXPANSION_RANGE: &str = "ERR expansion should be greater or equal to 0";
pub const EXPANSION_TOO_LARGE: &str = "ERR expansion should be at most 32768";
pub const NONSCALING_EXPAND: &str = "Nonscaling filters cannot expand";

// BF.INSERT (and CF.INSERT*).
pub const INSERT_BAD_ERROR_RATE: &str = "Bad error rate";
pub const INSERT_BAD_CAPACITY: &str = "Bad capacity";
pub const INSERT_BAD_EXPANSION: &str = "Bad expansion";
pub const UNKNOWN_ARGUMENT: &str = "Unknown argument received";
/// BF.INSERT with a value out of range (RedisBloom 2.8).
pub const INSERT_BAD_ARGUMENT: &str = "Bad argument received";
/// An item longer than `bf.max-item-size` (ferrobloom's limit; RedisBloom has none).
pub fn item_too_large(len: usize, max: u64) -> CmdError {
    CmdError::Owned(format!(
        "ERR item too large: {len} bytes, bf.max-item-size is {max}"
    ))
}

/// ferrobloom's LAYOUT option (not in RedisBloom).
pub const BAD_LAYOUT: &str = "ERR bad layout (expected classic, blocked, paired or redisbloom)";
/// ferrobloom enforces the documented rule (NOCREATE does not combine with
/// CAPACITY or ERROR, <https://redis.io/docs/latest/commands/bf.insert/>) that
/// RedisBloom 2.x's parser ignores.
pub const NOCREATE_WITH_OPTIONS: &str = "ERR NOCREATE cannot be combined with CAPACITY or ERROR";

// valkey-bloom's BF.INSERT / BF.RESERVE options (TIGHTENING, SEED, VALIDATESCALETO),
// with valkey-bloom 1.0's texts.
pub const BAD_TIGHTENING: &str = "ERR bad tightening ratio";
pub const TIGHTENING_RANGE: &str = "ERR (0 < tightening ratio range < 1)";
pub const INVALID_SEED: &str = "ERR invalid seed";
pub const SEED_TWICE: &str = "ERR SEED given twice";
pub const SCALE_TO_ZERO: &str = "ERR (capacity should be larger than 0)";
pub const SCALE_TO_BAD: &str = "ERR bad capacity";
pub const NONSCALING_SCALE_TO: &str =
    "ERR cannot use NONSCALING and VALIDATESCALETO options together";
pub const SCALE_TO_MEMORY: &str =
    "ERR provided VALIDATESCALETO causes bloom object to exceed memory limit";
pub const SCALE_TO_ERROR_RATE: &str =
    "ERR provided VALIDATESCALETO causes false positive to degrade to 0";
/// ferrobloom's own: its link limit, which valkey-bloom's check does not have.
pub const SCALE_TO_LINKS: &str =
    "ERR provided VALIDATESCALETO exceeds the maximum number of sub-filters (bf.bf-max-links)";
/// ferrobloom's own: RedisBloom's layout and header have no room for them.
pub const REDISBLOOM_LAYOUT_OPTIONS: &str =
    "ERR TIGHTENING and SEED cannot be used with LAYOUT redisbloom";

/// Maps why a filter cannot scale to a VALIDATESCALETO target to its reply.
pub fn scale_limit(l: ferrobloom_core::bloom::ScaleLimit) -> CmdError {
    use ferrobloom_core::bloom::ScaleLimit::*;
    CmdError::Text(match l {
        Memory => SCALE_TO_MEMORY,
        Links => SCALE_TO_LINKS,
        ErrorRate => SCALE_TO_ERROR_RATE,
        NonScaling => NONSCALING_SCALE_TO,
    })
}

// Windowed Bloom filters (`WINDOW seconds`, ferrobloom's; docs/windowed.md).
pub const WINDOW_BAD: &str =
    "ERR bad window (expected seconds: a number > 0 with millisecond precision, at most 315576000)";
pub const WINDOW_TWICE: &str = "ERR WINDOW given twice";
pub const CF_SCANDUMP_MOVED: &str =
    "ERR the filter moved items since this SCANDUMP walk began (start the walk again at 0)";
/// A position iterator the cuckoo filter cannot tie to a walk (ferrobloom's
/// layout: one without the walk mark; RedisBloom's: not the next call of a
/// walk this connection began), when the filter moved items after it answered
/// SCANDUMP (or after it was loaded): the walk it may belong to began before
/// the move.
pub const CF_SCANDUMP_UNKNOWN: &str = "ERR the filter moved items after it answered SCANDUMP, and this iterator is not one of a walk it knows began since (start the walk again at 0 on one connection)";
pub const CF_SCANDUMP_WALK: &str =
    "ERR invalid SCANDUMP iterator for this filter (start the walk again at 0)";
pub const SCANDUMP_WALK: &str =
    "ERR invalid SCANDUMP iterator for a windowed filter (start the walk again at 0)";
pub const WINDOW_NOCREATE: &str = "ERR NOCREATE cannot be combined with WINDOW";
pub const WINDOW_EXISTS: &str =
    "ERR WINDOW given for a key that holds a filter without that window";
pub const WINDOW_VALKEY: &str =
    "ERR WINDOW cannot be combined with TIGHTENING, SEED or VALIDATESCALETO";
pub const WINDOW_LAYOUT: &str = "ERR WINDOW cannot be combined with LAYOUT redisbloom";
pub const WINDOW_CF: &str = "ERR WINDOW is only for Bloom filters (BF.RESERVE, BF.INSERT)";
pub const WINDOW_AT: &str = "ERR AT is only accepted from the primary or the AOF";
/// BF.INSERT's internal `SHAPES` (the links a primary's write added).
pub const SHAPES_FROM_CLIENT: &str = "ERR SHAPES is only accepted from the primary or the AOF";
/// A `SHAPES` value that is not valid link records.
pub const SHAPES_BAD: &str = "ERR bad SHAPES value";

// Creation and insertion.
pub const NO_MEMORY_CREATE: &str = "ERR Insufficient memory to create filter";
pub const BF_COULD_NOT_CREATE: &str = "ERR could not create filter";
pub const BF_NONSCALING_FULL: &str = "ERR non scaling filter is full";
pub const BF_PROBLEM_INSERTING: &str = "ERR problem inserting into filter";
pub const BF_MAX_LINKS: &str =
    "ERR filter reached its maximum number of sub-filters (bf.bf-max-links)";
pub const BF_MEMORY_CAP: &str =
    "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)";
pub const BF_TOO_MANY_HASHES: &str =
    "ERR sub-filter error rate too small (more than 128 hash functions)";

// BF.INFO.
pub const INVALID_INFO_VALUE: &str = "Invalid information value";

// BF.SCANDUMP / BF.LOADCHUNK.
pub const SCANDUMP_NOT_NUMERIC: &str = "Second argument must be numeric";
pub const LOADCHUNK_NOT_NUMERIC: &str = "ERR Second argument must be numeric";
pub const BAD_DATA: &str = "ERR received bad data";
pub const NO_LINK: &str = "ERR invalid offset - no link found";
pub const CHUNK_TOO_BIG: &str = "ERR invalid chunk - Too big for current filter";

// CF.* (RedisBloom 2.8's texts).
pub const CF_BAD_CAPACITY: &str = "Bad capacity";
pub const CF_PARSE_BUCKETSIZE: &str = "Couldn't parse BUCKETSIZE";
pub const CF_PARSE_MAXITERATIONS: &str = "Couldn't parse MAXITERATIONS";
pub const CF_PARSE_EXPANSION: &str = "Couldn't parse EXPANSION";
pub const CF_BUCKETSIZE_RANGE: &str =
    "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.";
pub const CF_MAXITERATIONS_RANGE: &str =
    "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.";
pub const CF_EXPANSION_RANGE: &str =
    "EXPANSION: value must be an integer between 0 and 32768, inclusive.";
/// CF.RESERVE and CF.INSERT[NX] (RedisBloom 2.8 has one text for both).
pub const CF_CAPACITY_MIN: &str = "Capacity must be at least (BucketSize * 2)";
pub const CF_CAPACITY_TOO_LARGE: &str = "Capacity must be at most 1073741824";
/// ferrobloom's ERROR option (same style as the other CF option errors).
pub const CF_BAD_ERROR: &str = "Couldn't parse ERROR";
pub const CF_ERROR_RANGE: &str = "ERROR: value must be a number between 0 and 1, exclusive.";
pub const CF_ERROR_TOO_SMALL: &str = "ERROR: rate too small even for 32-bit fingerprints";
pub const CF_COULD_NOT_CREATE: &str = "ERR Could not create filter";
pub const CF_MAX_EXPANSIONS: &str = "Maximum expansions reached";
pub const CF_FULL: &str = "Filter is full";
pub const CF_BAD_LAYOUT: &str = "ERR bad layout (expected ferrobloom or redisbloom)";
pub const CF_LAYOUT_NO_ERROR: &str =
    "ERR LAYOUT redisbloom has RedisBloom's 8-bit fingerprints: ERROR does not apply";
pub const CF_NO_MEMORY: &str = "ERR Insufficient memory";
pub const CF_MEMORY_CAP: &str = BF_MEMORY_CAP;
pub const CF_DEL_NOT_FOUND: &str = "Not found";
pub const CF_COMPACT_NOT_FOUND: &str = "Cuckoo filter was not found";
pub const CF_INVALID_POSITION: &str = "Invalid position";
pub const CF_INVALID_HEADER: &str = "Invalid header";
pub const CF_CANNOT_CREATE: &str = "Couldn't create filter!";
pub const CF_CANNOT_LOAD_CHUNK: &str = "Couldn't load chunk!";

// BF.MERGE (ferrobloom's extension).
pub const MERGE_BAD_NUMKEYS: &str = "ERR numkeys must be a positive integer";
pub const MERGE_NUMKEYS_MISMATCH: &str = "ERR numkeys does not match the number of sources";
pub const MERGE_NO_MEMORY: &str = "ERR Insufficient memory to merge";
/// A merge above `bf.merge-max-bytes`.
pub fn merge_too_large(touched: u64, max: u64) -> CmdError {
    CmdError::Owned(format!(
        "ERR merge would touch {touched} bytes, above bf.merge-max-bytes ({max})"
    ))
}

/// A union that overfills sub-filter `link` (0-based) of the result.
pub fn merge_overfilled(link: usize, estimate: u64, capacity: u64) -> CmdError {
    CmdError::Owned(format!(
        "ERR the union holds about {estimate} items in sub-filter {}, above its capacity of \
         {capacity} at its error rate: create the filters with a capacity for the union, or \
         add OVERFILL to accept a higher error rate",
        link + 1
    ))
}

/// Maps a refused merge to its reply. `position` turns the core's source index
/// into the source's 1-based position on the command line.
pub fn merge(e: &MergeError, position: impl Fn(usize) -> usize) -> CmdError {
    let who = |input: &Option<usize>| match input {
        Some(i) => format!("source {}", position(*i)),
        None => "the destination".to_string(),
    };
    match e {
        MergeError::Unmergeable { input, why } => {
            CmdError::Owned(format!("ERR cannot merge {}: {why}", who(input)))
        }
        MergeError::Incompatible { input, what, link } => CmdError::Owned(match link {
            Some(l) => format!(
                "ERR incompatible filters: {} differs in the {what} of sub-filter {}",
                who(input),
                l + 1
            ),
            None => format!("ERR incompatible filters: {} differs in {what}", who(input)),
        }),
        MergeError::Bloom(BloomError::MemoryCap) => BF_MEMORY_CAP.into(),
        MergeError::Bloom(BloomError::MaxLinks) => BF_MAX_LINKS.into(),
        MergeError::Bloom(_) => MERGE_NO_MEMORY.into(),
        MergeError::Overfilled {
            link,
            estimate,
            capacity,
        } => merge_overfilled(*link, *estimate, *capacity),
    }
}

/// What a command was doing when the core refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Creating a filter (RESERVE, or auto-creation by ADD/MADD/INSERT).
    Create,
    /// Adding an item to an existing filter.
    Insert,
    /// Loading a SCANDUMP header or chunk.
    Load,
}

/// Maps a Bloom core error to its reply.
pub fn bloom(op: Op, e: &BloomError) -> CmdError {
    use BloomError::*;
    CmdError::Text(match (op, e) {
        (Op::Load, NoLinkForOffset) => NO_LINK,
        (Op::Load, ChunkTooBig) => CHUNK_TOO_BIG,
        (Op::Load, _) => BAD_DATA,
        (Op::Create, MemoryCap | AllocFailed) => NO_MEMORY_CREATE,
        (_, TooManyHashes) => BF_TOO_MANY_HASHES,
        (Op::Create, _) => BF_COULD_NOT_CREATE,
        (Op::Insert, Full) => BF_NONSCALING_FULL,
        (Op::Insert, MaxLinks) => BF_MAX_LINKS,
        (Op::Insert, MemoryCap) => BF_MEMORY_CAP,
        (Op::Insert, _) => BF_PROBLEM_INSERTING,
    })
}

/// Maps a Cuckoo core error to its reply.
pub fn cuckoo(op: Op, e: &CuckooError) -> CmdError {
    use CuckooError::*;
    CmdError::Text(match (op, e) {
        (Op::Load, BadHeader(_)) => CF_INVALID_HEADER,
        (Op::Load, BadChunk(_)) => CF_CANNOT_LOAD_CHUNK,
        (Op::Load, _) => CF_CANNOT_CREATE,
        (Op::Create, MemoryCap | AllocFailed) => NO_MEMORY_CREATE,
        (Op::Create, _) => CF_COULD_NOT_CREATE,
        (Op::Insert, Full) => CF_FULL,
        (Op::Insert, MaxExpansions) => CF_MAX_EXPANSIONS,
        (Op::Insert, MemoryCap) => CF_MEMORY_CAP,
        (Op::Insert, _) => CF_NO_MEMORY,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_redisbloom_texts() {
        assert_eq!(
            bloom(Op::Insert, &BloomError::Full).text(),
            "ERR non scaling filter is full"
        );
        assert_eq!(
            bloom(Op::Insert, &BloomError::AllocFailed).text(),
            "ERR problem inserting into filter"
        );
        assert_eq!(
            bloom(Op::Create, &BloomError::MemoryCap).text(),
            "ERR Insufficient memory to create filter"
        );
        assert_eq!(
            bloom(Op::Create, &BloomError::InvalidParams("x")).text(),
            "ERR could not create filter"
        );
        assert_eq!(
            bloom(Op::Load, &BloomError::BadHeader("x")).text(),
            "ERR received bad data"
        );
        assert_eq!(
            bloom(Op::Load, &BloomError::NoLinkForOffset).text(),
            "ERR invalid offset - no link found"
        );
        assert_eq!(
            bloom(Op::Load, &BloomError::ChunkTooBig).text(),
            "ERR invalid chunk - Too big for current filter"
        );
        assert_eq!(
            cuckoo(Op::Insert, &CuckooError::Full).text(),
            "Filter is full"
        );
        assert_eq!(
            cuckoo(Op::Insert, &CuckooError::MaxExpansions).text(),
            "Maximum expansions reached"
        );
        assert_eq!(
            cuckoo(Op::Insert, &CuckooError::AllocFailed).text(),
            "ERR Insufficient memory"
        );
        assert_eq!(
            cuckoo(Op::Create, &CuckooError::InvalidParams("x")).text(),
            "ERR Could not create filter"
        );
        assert_eq!(
            cuckoo(Op::Load, &CuckooError::BadHeader("x")).text(),
            "Invalid header"
        );
        assert_eq!(
            cuckoo(Op::Load, &CuckooError::BadChunk("x")).text(),
            "Couldn't load chunk!"
        );
        assert_eq!(
            cuckoo(Op::Load, &CuckooError::MemoryCap).text(),
            "Couldn't create filter!"
        );
        // Every reply starts with an error code word.
        for op in [Op::Create, Op::Insert, Op::Load] {
            for e in [
                BloomError::MaxLinks,
                BloomError::MemoryCap,
                BloomError::BadChunk,
            ] {
                assert!(bloom(op, &e).text().starts_with("ERR "));
            }
        }
    }
}
