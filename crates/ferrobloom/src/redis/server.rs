//! What the running server is and which of its opt-in features ferrobloom
//! declares (`RedisModule_SetModuleOptions`, one call: it replaces, it does not OR).
//!
//! - `HANDLE_IO_ERRORS` (every server): a truncated payload is a clean error.
//! - `HANDLE_REPL_ASYNC_LOAD` (Redis 7.0+, Valkey): a replica with
//!   `repl-diskless-load swapdb` loads the primary's dataset from the socket into a
//!   second database while it keeps serving the old one. The module keeps no state
//!   per database: the `INFO bf` gauges count what `rdb_load` creates and what the
//!   free callback frees, so they include both copies while the load runs and are
//!   exact again once the server swaps (the old copy is freed) or aborts (the new
//!   one is). Commands of clients during the load are untrusted as always (the
//!   server does not flag them LOADING: `trust.rs`).
//! - `HANDLE_ATOMIC_SLOT_MIGRATION` (Valkey 9+, where `GetModuleOptionsAll` lists
//!   it): `CLUSTER MIGRATESLOTS` moves a slot's keys as the type's AOF rewrite
//!   (`BF.LOADCHUNK` / `CF.LOADCHUNK`) followed by the source's write stream, both
//!   through the target's slot import client, which `trust.rs` trusts like a
//!   primary's link. A cancelled import is undone by the server deleting the
//!   slot's keys (free callbacks: gauges stay exact).
//!
//! Unprefixed configuration names (Redis 8+: `REDISMODULE_CONFIG_UNPREFIXED`) are
//! decided here too (`config.rs` registers RedisBloom 8's names with them).

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use redis_module::raw;

use super::load::{has_api, module_options_all, server_version, LoadCtx};

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (Valkey 9's `valkeymodule.h`).
/// The bit means something else (or nothing) on Redis: only declared on Valkey,
/// and only where the server lists it.
const VALKEY_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;

/// Redis 8.0 as `RedisModule_GetServerVersion` encodes it (0x00MMmmpp).
const REDIS_8_0: c_int = 0x0008_0000;

static UNPREFIXED_CONFIGS: AtomicBool = AtomicBool::new(false);
static ATOMIC_SLOT_MIGRATION: AtomicBool = AtomicBool::new(false);

/// Detects the server and declares the module options (called first in OnLoad).
pub fn declare_options(ctx: LoadCtx) {
    // Valkey exports its API under both prefixes; Redis never under Valkey's.
    let valkey = has_api(c"ValkeyModule_GetServerVersion");
    let version = server_version();
    UNPREFIXED_CONFIGS.store(!valkey && version >= REDIS_8_0, Relaxed);
    let all = module_options_all();
    let mut options = (raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS
        | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD) as c_int;
    if valkey && all & VALKEY_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION != 0 {
        options |= VALKEY_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION;
        ATOMIC_SLOT_MIGRATION.store(true, Relaxed);
    }
    ctx.set_module_options(options);
}

/// The server takes unprefixed module configuration names (Redis 8+).
pub fn unprefixed_configs() -> bool {
    UNPREFIXED_CONFIGS.load(Relaxed)
}

/// ferrobloom declared atomic slot migration support (Valkey 9+).
pub fn atomic_slot_migration() -> bool {
    ATOMIC_SLOT_MIGRATION.load(Relaxed)
}

/// The opt-ins for `INFO bf` (`bf_server_features`).
pub fn features() -> String {
    let mut f = vec!["repl-async-load"];
    if atomic_slot_migration() {
        f.push("atomic-slot-migration");
    }
    if unprefixed_configs() {
        f.push("unprefixed-configs");
    }
    f.join(" ")
}
