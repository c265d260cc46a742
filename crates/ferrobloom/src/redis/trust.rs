//! The trust state of the running command: whether it comes from the primary,
//! the AOF or (Valkey 9's atomic slot migration) the slot import client (applied
//! under the hard ceilings only, never refused by this server's own limits) or
//! from a client. Kept cheap by server events.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering::Relaxed};

use redis_module::raw;

use super::load::{LoadCtx, ServerEvent};

/// Whether the running command is trusted (see `Ctx::trusted`): unknown, no, yes.
static TRUSTED: AtomicU8 = AtomicU8::new(TRUSTED_UNKNOWN);
const TRUSTED_UNKNOWN: u8 = 0;
const TRUSTED_NO: u8 = 1;
const TRUSTED_YES: u8 = 2;

/// Whether this server may run trusted commands at all: it is a replica (its
/// primary's stream comes through the master client) or it is loading (RDB,
/// AOF). Kept by server events ([`watch_trust`]); while both are false, no
/// command is trusted and [`Ctx::trusted`] skips `RM_GetContextFlags` (which
/// also computes the server's memory state: ~10% of a one-item command).
static IS_REPLICA: AtomicBool = AtomicBool::new(true);
static LOADING: AtomicBool = AtomicBool::new(true);
/// Slot imports in progress (Valkey 9 atomic slot migration, this server the
/// target): the source's snapshot and write stream arrive through the slot
/// import client, trusted like a primary's link (its windowed writes carry the
/// source's time: `BF.INSERT … AT`).
static IMPORTS: AtomicU32 = AtomicU32::new(0);

/// Valkey 9's `ValkeyModuleEvent_AtomicSlotMigration` and its import sub-events,
/// and the context flag of the slot import client (`valkeymodule.h`; Redis uses
/// these numbers for other things: only subscribed on Valkey, see `server.rs`).
const VALKEY_EVENT_ATOMIC_SLOT_MIGRATION: u64 = 19;
const VALKEY_SUBEVENT_IMPORT_STARTED: u64 = 0;
const VALKEY_SUBEVENT_IMPORT_ABORTED: u64 = 2;
const VALKEY_SUBEVENT_IMPORT_COMPLETED: u64 = 4;
const VALKEY_CTX_FLAGS_SLOT_IMPORT_CLIENT: u32 = 1 << 25;
/// The context flags that make a command trusted (the slot import client's
/// added on servers where ferrobloom declared atomic slot migration).
static TRUSTED_FLAGS: AtomicU32 =
    AtomicU32::new(raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING);

/// Subscribes to the replication-role and loading events that keep
/// [`IS_REPLICA`] and [`LOADING`], and reads their current values. Without the
/// events (an older server), both stay true: every command asks the flags.
pub fn watch_trust(ctx: LoadCtx) {
    if !ctx.has_server_events() || ctx.flags().is_none() {
        return;
    }
    let ok = ctx.subscribe::<RoleChanged>(raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED)
        && ctx.subscribe::<Loading>(raw::REDISMODULE_EVENT_LOADING);
    if ok
        && super::server::atomic_slot_migration()
        && ctx.subscribe::<SlotMigration>(VALKEY_EVENT_ATOMIC_SLOT_MIGRATION)
    {
        TRUSTED_FLAGS.fetch_or(VALKEY_CTX_FLAGS_SLOT_IMPORT_CLIENT, Relaxed);
    }
    if let (true, Some(f)) = (ok, ctx.flags()) {
        IS_REPLICA.store(f & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0, Relaxed);
        LOADING.store(
            f & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
                != 0,
            Relaxed,
        );
    }
}

struct RoleChanged;
impl ServerEvent for RoleChanged {
    fn on(subevent: u64) {
        IS_REPLICA.store(
            subevent != raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER,
            Relaxed,
        );
    }
}

struct Loading;
impl ServerEvent for Loading {
    fn on(subevent: u64) {
        let ended = subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED
            || subevent == raw::REDISMODULE_SUBEVENT_LOADING_FAILED;
        LOADING.store(!ended, Relaxed);
    }
}

struct SlotMigration;
impl ServerEvent for SlotMigration {
    fn on(subevent: u64) {
        match subevent {
            VALKEY_SUBEVENT_IMPORT_STARTED => {
                IMPORTS.fetch_add(1, Relaxed);
            }
            VALKEY_SUBEVENT_IMPORT_ABORTED | VALKEY_SUBEVENT_IMPORT_COMPLETED => {
                let _ = IMPORTS.fetch_update(Relaxed, Relaxed, |n| Some(n.saturating_sub(1)));
            }
            _ => {}
        }
    }
}

/// Called before each command: its trust is read again when first asked.
pub fn forget_trusted() {
    TRUSTED.store(TRUSTED_UNKNOWN, Relaxed);
}

/// [`Ctx::trusted`](super::ctx::Ctx::trusted) of the running command, whose
/// context flags `flags` reads (only when they are needed).
pub fn trusted(flags: impl FnOnce() -> u32) -> bool {
    match TRUSTED.load(Relaxed) {
        TRUSTED_NO => return false,
        TRUSTED_YES => return true,
        _ => {}
    }
    if !IS_REPLICA.load(Relaxed) && !LOADING.load(Relaxed) && IMPORTS.load(Relaxed) == 0 {
        TRUSTED.store(TRUSTED_NO, Relaxed);
        return false;
    }
    let trusted = flags() & TRUSTED_FLAGS.load(Relaxed) != 0;
    TRUSTED.store(if trusted { TRUSTED_YES } else { TRUSTED_NO }, Relaxed);
    trusted
}
