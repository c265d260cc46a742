//! The command table: every command's trampoline, flags, arity, key access and
//! COMMAND DOCS (summary, complexity, arguments). The options of BF.RESERVE,
//! BF.INSERT, CF.RESERVE and CF.INSERT[NX] come from the option tables
//! (`crate::cmd::options`, `crate::cmd::cf_options`) and BF.INFO's fields from
//! the INFO table (`crate::cmd::info`).

use std::ffi::{c_int, CStr};

use super::docs::*;
use super::{R, W};
use crate::redis::{bf, cf, merge};

type RawCmd = crate::redis::ffi::CommandFn;

const BLOOM_LOOKUP: Option<bool> = Some(true);
const CUCKOO_LOOKUP: Option<bool> = Some(false);
trampoline!(bf_reserve, bf::reserve, W);
trampoline!(bf_add, bf::add, W);
trampoline!(bf_madd, bf::madd, W);
trampoline!(bf_insert, bf::insert, W);
trampoline!(bf_exists, bf::exists, R, BLOOM_LOOKUP);
trampoline!(bf_mexists, bf::mexists, R, BLOOM_LOOKUP);
trampoline!(bf_info, bf::info, R);
trampoline!(bf_card, bf::card, R);
trampoline!(bf_scandump, bf::scandump, R);
trampoline!(bf_loadchunk, bf::loadchunk, W);
trampoline!(bf_debug, bf::debug, R);
trampoline!(bf_merge, merge::merge, W);
trampoline!(cf_reserve, cf::reserve, W);
trampoline!(cf_add, cf::add, W);
trampoline!(cf_addnx, cf::addnx, W);
trampoline!(cf_insert, cf::insert, W);
trampoline!(cf_insertnx, cf::insertnx, W);
trampoline!(cf_exists, cf::exists, R, CUCKOO_LOOKUP);
trampoline!(cf_mexists, cf::mexists, R, CUCKOO_LOOKUP);
trampoline!(cf_count, cf::count, R, CUCKOO_LOOKUP);
trampoline!(cf_del, cf::del, W);
trampoline!(cf_compact, cf::compact, W);
trampoline!(cf_info, cf::info, R);
trampoline!(cf_scandump, cf::scandump, R);
trampoline!(cf_loadchunk, cf::loadchunk, W);
trampoline!(cf_debug, cf::debug, R);

pub(super) struct Spec {
    pub(super) name: &'static CStr,
    pub(super) func: RawCmd,
    pub(super) flags: &'static CStr,
    pub(super) arity: c_int,
    pub(super) access: Access,
    pub(super) summary: &'static CStr,
    pub(super) complexity: &'static CStr,
    pub(super) since: &'static CStr,
    pub(super) tips: Option<&'static CStr>,
    pub(super) args: &'static [Arg],
}

const O_K: &CStr = c"O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN: &CStr =
    c"O(k * n), where k is the number of hash functions and n is the number of items";
const O_N_CAP: &CStr = c"O(n), where n is the capacity";
const CF_O_K: &CStr = c"O(k), where k is the number of sub-filters";
const CF_O_KI: &CStr = c"O(k + i), where k is the number of sub-filters and i is maxIterations";
const CF_O_NKI: &CStr =
    c"O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations";
const CF_INSERT_ARGS: &[Arg] = &[
    KEY,
    CF_INSERT_OPTIONS,
    Arg {
        flags: 0,
        ..token(c"items", c"ITEMS")
    },
    ITEMS,
];
const BF_MADD_SUMMARY: &CStr =
    c"Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";

pub(super) static SPECS: &[Spec] = &[
    Spec {
        name: c"bf.reserve",
        func: bf_reserve,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Create,
        summary: c"Creates a new Bloom Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: None,
        args: &[
            KEY,
            arg(c"error_rate", DOUBLE),
            arg(c"capacity", INTEGER),
            BF_RESERVE_OPTIONS,
        ],
    },
    Spec {
        name: c"bf.add",
        func: bf_add,
        flags: c"write deny-oom",
        arity: 3,
        access: Access::Update,
        summary: c"Adds an item to a Bloom Filter",
        complexity: O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"bf.madd",
        func: bf_madd,
        flags: c"write deny-oom",
        arity: -3,
        access: Access::Update,
        summary: BF_MADD_SUMMARY,
        complexity: O_KN,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEMS],
    },
    Spec {
        name: c"bf.insert",
        func: bf_insert,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Update,
        summary: BF_MADD_SUMMARY,
        complexity: O_KN,
        since: c"1.0.0",
        tips: None,
        args: &[
            KEY,
            BF_INSERT_OPTIONS,
            Arg {
                flags: 0,
                ..token(c"items", c"ITEMS")
            },
            ITEMS,
        ],
    },
    Spec {
        name: c"bf.exists",
        func: bf_exists,
        flags: c"readonly fast",
        arity: 3,
        access: Access::Read,
        summary: c"Checks whether an item exists in a Bloom Filter",
        complexity: O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"bf.mexists",
        func: bf_mexists,
        flags: c"readonly fast",
        arity: -3,
        access: Access::Read,
        summary: c"Checks whether one or more items exist in a Bloom Filter",
        complexity: O_KN,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEMS],
    },
    Spec {
        name: c"bf.info",
        func: bf_info,
        flags: c"readonly fast",
        arity: -2,
        access: Access::Read,
        summary: c"Returns information about a Bloom Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[
            KEY,
            Arg {
                name: c"single_value",
                kind: ONEOF,
                token: None,
                flags: OPTIONAL,
                sub: &[BF_INFO_FIELDS],
            },
        ],
    },
    Spec {
        name: c"bf.card",
        func: bf_card,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Returns the cardinality of a Bloom filter",
        complexity: c"O(1)",
        since: c"2.4.4",
        tips: None,
        args: &[KEY],
    },
    Spec {
        name: c"bf.scandump",
        func: bf_scandump,
        flags: c"readonly",
        arity: -3,
        access: Access::Read,
        summary: c"Begins an incremental save of the bloom filter",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY, ITERATOR, STAMP],
    },
    Spec {
        name: c"bf.loadchunk",
        func: bf_loadchunk,
        flags: c"write deny-oom",
        arity: 4,
        access: Access::Create,
        summary: c"Restores a filter previously saved using SCANDUMP",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITERATOR, arg(c"data", STRING)],
    },
    Spec {
        name: c"bf.debug",
        func: bf_debug,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Shows the layout of a Bloom filter's sub-filters (undocumented in RedisBloom)",
        complexity: c"O(n), where n is the number of sub-filters",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY],
    },
    Spec {
        name: c"bf.merge",
        func: bf_merge,
        flags: c"write deny-oom getkeys-api",
        arity: -4,
        access: Access::Merge,
        summary: c"Merges Bloom filters into a destination filter: the union of their items (ferrobloom extension)",
        complexity: c"O(b), where b is the number of bytes of the sources and the result",
        since: c"1.0.0",
        tips: None,
        args: &[
            Arg {
                name: c"destination",
                ..KEY
            },
            arg(c"numkeys", INTEGER),
            Arg {
                name: c"source",
                flags: MULTIPLE,
                ..KEY
            },
            token(c"overfill", c"OVERFILL"),
        ],
    },
    Spec {
        name: c"cf.reserve",
        func: cf_reserve,
        flags: c"write deny-oom",
        arity: -3,
        access: Access::Create,
        summary: c"Creates a new Cuckoo Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: None,
        args: &[
            KEY,
            arg(c"capacity", INTEGER),
            CF_RESERVE_OPTIONS,
        ],
    },
    Spec {
        name: c"cf.add",
        func: cf_add,
        flags: c"write deny-oom",
        arity: 3,
        access: Access::Update,
        summary: c"Adds an item to a Cuckoo Filter",
        complexity: CF_O_KI,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.addnx",
        func: cf_addnx,
        flags: c"write deny-oom",
        arity: 3,
        access: Access::Update,
        summary: c"Adds an item to a Cuckoo Filter if the item did not exist previously.",
        complexity: CF_O_KI,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.insert",
        func: cf_insert,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Update,
        summary: c"Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
        complexity: CF_O_NKI,
        since: c"1.0.0",
        tips: None,
        args: CF_INSERT_ARGS,
    },
    Spec {
        name: c"cf.insertnx",
        func: cf_insertnx,
        flags: c"write deny-oom",
        arity: -4,
        access: Access::Update,
        summary: c"Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist",
        complexity: CF_O_NKI,
        since: c"1.0.0",
        tips: None,
        args: CF_INSERT_ARGS,
    },
    Spec {
        name: c"cf.exists",
        func: cf_exists,
        flags: c"readonly fast",
        arity: 3,
        access: Access::Read,
        summary: c"Checks whether one or more items exist in a Cuckoo Filter",
        complexity: CF_O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.mexists",
        func: cf_mexists,
        flags: c"readonly fast",
        arity: -3,
        access: Access::Read,
        summary: c"Checks whether one or more items exist in a Cuckoo Filter",
        complexity: c"O(k * n), where k is the number of sub-filters and n is the number of items",
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEMS],
    },
    Spec {
        name: c"cf.count",
        func: cf_count,
        flags: c"readonly fast",
        arity: 3,
        access: Access::Read,
        summary: c"Return the number of times an item might be in a Cuckoo Filter",
        complexity: CF_O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.del",
        func: cf_del,
        flags: c"write fast",
        arity: 3,
        access: Access::Update,
        summary: c"Deletes an item from a Cuckoo Filter",
        complexity: CF_O_K,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITEM],
    },
    Spec {
        name: c"cf.compact",
        func: cf_compact,
        flags: c"write",
        arity: 2,
        access: Access::Update,
        summary: c"Moves items of newer sub-filters into older ones and frees emptied sub-filters (bounded work per call)",
        complexity: c"O(1) per call: at most about 1M slots are examined",
        since: c"1.0.0",
        tips: None,
        args: &[KEY],
    },
    Spec {
        name: c"cf.info",
        func: cf_info,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Returns information about a Cuckoo Filter",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY],
    },
    Spec {
        name: c"cf.scandump",
        func: cf_scandump,
        flags: c"readonly",
        arity: -3,
        access: Access::Read,
        summary: c"Begins an incremental save of the bloom filter",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY, ITERATOR, STAMP],
    },
    Spec {
        name: c"cf.loadchunk",
        func: cf_loadchunk,
        flags: c"write deny-oom",
        arity: 4,
        access: Access::Create,
        summary: c"Restores a filter previously saved using SCANDUMP",
        complexity: O_N_CAP,
        since: c"1.0.0",
        tips: None,
        args: &[KEY, ITERATOR, arg(c"data", STRING)],
    },
    Spec {
        name: c"cf.debug",
        func: cf_debug,
        flags: c"readonly fast",
        arity: 2,
        access: Access::Read,
        summary: c"Shows the layout of a Cuckoo filter (undocumented in RedisBloom)",
        complexity: c"O(1)",
        since: c"1.0.0",
        tips: Some(c"nondeterministic_output"),
        args: &[KEY],
    },
];
