//! Panic containment at the FFI boundary: a panic in ferrobloom must never
//! unwind into (or abort) the Redis server. Every command handler and every
//! data-type callback runs inside [`guard`] (or [`guard_persist`] for the
//! callbacks that write a persistence stream).
//!
//! With the `fault-injection` feature (test builds only: `make test`), the
//! hidden command `FERROBLOOM.FAULT <point> [count]` arms a deliberate panic at
//! the entry of the guarded code named `<point>` (a command name such as
//! `BF.ADD`, or a callback: `rdb_load`, `rdb_save`, `aof_rewrite`, `copy`,
//! `digest`, `mem_usage`, `free_effort`, `defrag`, `INFO`), so tests can prove the
//! containment on the real server.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

use super::ffi::{exit_child, getpid, log};

/// The server's process id, recorded at load: callbacks running in another
/// process run in a fork child (BGSAVE, BGREWRITEAOF, a replication sync).
static MAIN_PID: AtomicI32 = AtomicI32::new(0);

pub fn record_main_pid() {
    MAIN_PID.store(getpid(), Relaxed);
}

fn in_fork_child() -> bool {
    let main = MAIN_PID.load(Relaxed);
    main != 0 && getpid() != main
}

/// Runs `f`, logging and reporting a panic as `Err`.
fn contain<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, ()> {
    catch_unwind(AssertUnwindSafe(|| {
        fault::hit(what);
        f()
    }))
    .map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        log(
            c"warning",
            &format!("ferrobloom: internal error in {what}: {msg} (contained; please report)"),
        );
    })
}

/// Runs `f`; if it panics, logs the panic as a warning and returns `fallback`.
pub fn guard<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    contain(what, f).unwrap_or(fallback)
}

/// For callbacks that write a persistence stream (`rdb_save`, `aof_rewrite`),
/// where a half-written value would corrupt the file: a panic in a fork child
/// (BGSAVE, BGREWRITEAOF, a replication sync: every automatic save) ends the
/// child with exit code 1, so Redis reports the save as failed and keeps the
/// previous file. In the main process (a foreground SAVE) the panic is logged
/// and the value is left incomplete, so loading that file is refused with a log
/// line rather than loading a damaged filter.
pub fn guard_persist(what: &str, f: impl FnOnce()) {
    if contain(what, f).is_err() && in_fork_child() {
        log(
            c"warning",
            &format!("ferrobloom: failing this {what} child so the previous file is kept"),
        );
        // Ends the fork child at once, without running the parent's atexit
        // handlers or flushing its stdio buffers.
        exit_child(1);
    }
}

#[cfg(feature = "fault-injection")]
pub mod fault {
    //! Test-only panic injection (see the module doc).
    use std::sync::Mutex;

    /// The armed point and how many hits remain.
    static ARMED: Mutex<Option<(String, u32)>> = Mutex::new(None);

    /// Arms `point` for `count` hits (0 disarms).
    pub fn arm(point: &str, count: u32) {
        if let Ok(mut a) = ARMED.lock() {
            *a = (count > 0).then(|| (point.to_ascii_lowercase(), count));
        }
    }

    /// Panics if `point` is armed.
    pub fn hit(point: &str) {
        let fire = match ARMED.lock() {
            Ok(mut a) => match a.as_mut() {
                Some((p, n)) if p.eq_ignore_ascii_case(point) => {
                    *n -= 1;
                    if *n == 0 {
                        *a = None;
                    }
                    true
                }
                _ => false,
            },
            Err(_) => false,
        };
        if fire {
            panic!("injected fault at {point}");
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
pub mod fault {
    /// Fault injection is compiled out of the module.
    #[inline(always)]
    pub fn hit(_point: &str) {}
}
