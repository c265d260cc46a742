//! Panic containment at the FFI boundary: a panic in ferrobloom must never
//! unwind into (or abort) the Redis server. Every command handler and every
//! data-type callback runs inside [`guard`].

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::api::log;

/// Runs `f`; if it panics, logs the panic as a warning and returns `fallback`.
pub fn guard<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            log(
                std::ptr::null_mut(),
                c"warning",
                &format!("ferrobloom: internal error in {what}: {msg} (contained; please report)"),
            );
            fallback
        }
    }
}
