//! Freeing what a write drops (a windowed filter's expired generations) with
//! bounded main-thread time and bounded threads, however many keys rotate at
//! once (docs/operations.md, "What is bounded, and how"):
//!
//! - up to [`FREE_INLINE_MAX`] (1 MiB) a write is freed at once;
//! - more goes to one worker thread (`ferrobloom-free`, started on first use)
//!   through a queue of [`QUEUE_JOBS`] writes' worth;
//! - when that queue is full (the worker is behind) or no thread could be
//!   started, the main thread keeps the generations in a backlog and gives
//!   their pages back to the kernel [`STEP_BYTES`] at a time
//!   (`madvise(MADV_DONTNEED)`, `BloomChain::release_step`): one step per
//!   write that drops more, and one per timer tick every [`TICK_MS`] while the
//!   backlog is not empty; a generation whose pages are all released is freed
//!   at once (no resident page left to tear down), and backlog entries go back
//!   to the worker as soon as its queue has room. The backlog is the worker's
//!   back-pressure: memory still waits to be freed, but the main thread never
//!   spends more than one step on it per write or tick.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Mutex, OnceLock};

use super::api::Ctx;
use super::ctx::Timer;
use super::guard::guard;
use ferrobloom_core::bloom::BloomChain;

/// Writes that drop at most this many bytes free them at once.
pub const FREE_INLINE_MAX: u64 = 1 << 20;
/// Writes' worth of generations waiting for the worker.
pub const QUEUE_JOBS: usize = 64;
/// Page-release budget of one main-thread step (about 1 ms where releasing
/// takes 0.25 µs a page; measured in docs/operations.md).
pub const STEP_BYTES: u64 = 4 << 20;
/// Period of the main-thread steps while a backlog waits.
pub const TICK_MS: i64 = 10;

/// One write's dropped generations.
type Job = Vec<BloomChain>;

/// The worker's end of the queue, `None` when no thread could be started.
static WORKER: OnceLock<Option<SyncSender<Job>>> = OnceLock::new();

/// Generations the main thread releases in steps: the job, the chain it is
/// at and that chain's next byte.
struct Backlog {
    jobs: VecDeque<(Job, usize, u64)>,
    timer: bool,
}

static BACKLOG: Mutex<Backlog> = Mutex::new(Backlog {
    jobs: VecDeque::new(),
    timer: false,
});

/// Counters (FERROBLOOM.RECLAIM STATS in test builds).
static QUEUED: AtomicU64 = AtomicU64::new(0);
static BACKLOGGED: AtomicU64 = AtomicU64::new(0);
static STEPS: AtomicU64 = AtomicU64::new(0);
/// The longest main-thread step so far, and all of them, in microseconds.
static STEP_MAX_US: AtomicU64 = AtomicU64::new(0);
static STEP_TOTAL_US: AtomicU64 = AtomicU64::new(0);

/// Test builds: the worker waits while this is set (so the queue fills).
static PAUSED: AtomicBool = AtomicBool::new(false);

/// The backlog (main thread only; a panic while it was held leaves it usable).
fn backlog() -> std::sync::MutexGuard<'static, Backlog> {
    BACKLOG.lock().unwrap_or_else(|e| e.into_inner())
}

fn worker() -> Option<&'static SyncSender<Job>> {
    WORKER
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<Job>(QUEUE_JOBS);
            std::thread::Builder::new()
                .name("ferrobloom-free".into())
                .spawn(move || work(rx))
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

fn work(rx: Receiver<Job>) {
    while let Ok(job) = rx.recv() {
        while PAUSED.load(Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(job);
    }
}

/// Frees a write's dropped generations (see the module doc).
pub fn free_retired(ctx: Ctx, retired: Job) {
    if retired.is_empty() {
        return;
    }
    let bytes: u64 = retired.iter().map(BloomChain::mem_usage).sum();
    if bytes <= FREE_INLINE_MAX {
        return;
    }
    let mut b = backlog();
    // Older entries first: the queue takes what waits before this write.
    let job = if b.jobs.is_empty() {
        match offer(retired) {
            None => return,
            Some(job) => job,
        }
    } else {
        retired
    };
    BACKLOGGED.fetch_add(1, Relaxed);
    if b.jobs.try_reserve(1).is_err() {
        // No room even for the entry: the chains drop here.
        return;
    }
    b.jobs.push_back((job, 0, 0));
    step(&mut b);
    arm_timer(ctx, &mut b);
}

/// Hands `job` to the worker; gives it back when the queue is full or there
/// is no worker.
fn offer(job: Job) -> Option<Job> {
    let Some(tx) = worker() else {
        return Some(job);
    };
    match tx.try_send(job) {
        Ok(()) => {
            QUEUED.fetch_add(1, Relaxed);
            None
        }
        Err(TrySendError::Full(job)) | Err(TrySendError::Disconnected(job)) => Some(job),
    }
}

/// One main-thread step: entries go back to the worker while its queue has
/// room; else at most [`STEP_BYTES`] of the first entry's pages are released,
/// and the entry is freed once all are.
fn step(b: &mut Backlog) {
    while matches!(b.jobs.front(), Some((_, 0, 0))) {
        let Some((job, _, _)) = b.jobs.pop_front() else {
            break;
        };
        if let Some(job) = offer(job) {
            b.jobs.push_front((job, 0, 0));
            break;
        }
    }
    let Some((job, chain, at)) = b.jobs.front_mut() else {
        return;
    };
    STEPS.fetch_add(1, Relaxed);
    let began = std::time::Instant::now();
    let mut budget = STEP_BYTES;
    while budget > 0 {
        let Some(c) = job.get_mut(*chain) else {
            break;
        };
        match c.release_step(*at, budget) {
            Some(next) => {
                budget = budget.saturating_sub(next.saturating_sub(*at));
                *at = next;
            }
            None => {
                *chain += 1;
                *at = 0;
            }
        }
    }
    if *chain >= job.len() {
        // Every page released: freeing it tears down nothing resident.
        b.jobs.pop_front();
    }
    let us = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
    STEP_MAX_US.fetch_max(us, Relaxed);
    STEP_TOTAL_US.fetch_add(us, Relaxed);
}

fn arm_timer(ctx: Ctx, b: &mut Backlog) {
    if b.timer || b.jobs.is_empty() {
        return;
    }
    if ctx.create_timer::<Tick>(TICK_MS) {
        b.timer = true;
    }
}

/// The timer of the main-thread steps.
struct Tick;

impl Timer for Tick {
    fn fire(ctx: Ctx) {
        guard("free timer", (), || {
            let mut b = backlog();
            b.timer = false;
            step(&mut b);
            arm_timer(ctx, &mut b);
        });
    }
}

/// Test builds: `PAUSE` / `RESUME` the worker, or the counters (`STATS`):
/// writes handed to the worker, writes kept in the backlog, main-thread
/// steps, the longest step and all steps in microseconds, entries and bytes in
/// the backlog now.
#[cfg(feature = "fault-injection")]
pub fn reclaim_cmd(ctx: Ctx, args: super::api::Args) -> super::handler::CmdResult {
    use crate::cmd::errors::CmdError;
    if args.len() != 2 {
        return Err(CmdError::WrongArity);
    }
    match args.bytes(1).to_ascii_uppercase().as_slice() {
        b"PAUSE" => PAUSED.store(true, Relaxed),
        b"RESUME" => PAUSED.store(false, Relaxed),
        b"STATS" => {
            let b = backlog();
            let bytes = b
                .jobs
                .iter()
                .flat_map(|(j, _, _)| j.iter())
                .map(BloomChain::mem_usage)
                .sum::<u64>();
            let entries = b.jobs.len() as u64;
            drop(b);
            let v = [
                QUEUED.load(Relaxed),
                BACKLOGGED.load(Relaxed),
                STEPS.load(Relaxed),
                STEP_MAX_US.load(Relaxed),
                STEP_TOTAL_US.load(Relaxed),
                entries,
                bytes,
            ];
            ctx.reply_array(v.len());
            for n in v {
                ctx.reply_count(n);
            }
            return Ok(());
        }
        _ => return Err(CmdError::Text("ERR PAUSE, RESUME or STATS")),
    }
    ctx.reply_ok();
    Ok(())
}
