//! The trust state of the running command: whether it comes from the primary
//! or the AOF (applied under the hard ceilings only, never refused by this
//! server's own limits) or from a client. Kept cheap by server events.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering::Relaxed};

use redis_module::raw;

use super::ffi::api;

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

/// Subscribes to the replication-role and loading events that keep
/// [`IS_REPLICA`] and [`LOADING`], and reads their current values. Without the
/// events (an older server), both stay true: every command asks the flags.
pub fn watch_trust(ctx: *mut raw::RedisModuleCtx) {
    let (Some(subscribe), Some(flags)) = (
        api!(RedisModule_SubscribeToServerEvent),
        api!(RedisModule_GetContextFlags),
    ) else {
        return;
    };
    let event = |id| raw::RedisModuleEvent { id, dataver: 1 };
    // SAFETY: valid load context; static callbacks.
    let ok = unsafe {
        subscribe(
            ctx,
            event(raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED),
            Some(on_role_changed),
        ) == raw::REDISMODULE_OK as c_int
            && subscribe(ctx, event(raw::REDISMODULE_EVENT_LOADING), Some(on_loading))
                == raw::REDISMODULE_OK as c_int
    };
    if ok {
        // SAFETY: valid load context.
        let f = unsafe { flags(ctx) } as u32;
        IS_REPLICA.store(f & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0, Relaxed);
        LOADING.store(
            f & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_ASYNC_LOADING)
                != 0,
            Relaxed,
        );
    }
}

extern "C" fn on_role_changed(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    IS_REPLICA.store(
        subevent != raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER,
        Relaxed,
    );
}

extern "C" fn on_loading(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    let ended = subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED
        || subevent == raw::REDISMODULE_SUBEVENT_LOADING_FAILED;
    LOADING.store(!ended, Relaxed);
}

/// Called before each command: its trust is read again when first asked.
pub fn forget_trusted() {
    TRUSTED.store(TRUSTED_UNKNOWN, Relaxed);
}

/// [`Ctx::trusted`](super::ctx::Ctx::trusted) of the command running in `ctx`.
pub fn trusted(ctx: *mut raw::RedisModuleCtx) -> bool {
    match TRUSTED.load(Relaxed) {
        TRUSTED_NO => return false,
        TRUSTED_YES => return true,
        _ => {}
    }
    if !IS_REPLICA.load(Relaxed) && !LOADING.load(Relaxed) {
        TRUSTED.store(TRUSTED_NO, Relaxed);
        return false;
    }
    let trusted = match api!(RedisModule_GetContextFlags) {
        // SAFETY: valid context.
        Some(f) => {
            let flags = unsafe { f(ctx) } as u32;
            flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING)
                != 0
        }
        None => false,
    };
    TRUSTED.store(if trusted { TRUSTED_YES } else { TRUSTED_NO }, Relaxed);
    trusted
}
