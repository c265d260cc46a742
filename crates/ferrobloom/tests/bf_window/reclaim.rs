//! Freeing the generations windowed filters drop (`src/redis/reclaim.rs`):
//! one worker thread however many keys rotate at once (counted by name in
//! `/proc/<pid>/task`; before, one thread per dropped generation over 1 MiB),
//! the main thread's bounded steps while the worker is behind (paused here:
//! FERROBLOOM.RECLAIM PAUSE), and every byte back (`used_memory`) once the
//! keys are gone.

use std::time::Duration;

use super::*;

/// Threads of the server: all, and the module's freeing workers.
fn threads(pid: u32) -> (usize, usize) {
    let mut all = 0;
    let mut free = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        all += 1;
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        free += usize::from(comm.trim() == "ferrobloom-free");
    }
    (all, free)
}

/// FERROBLOOM.RECLAIM STATS: handed to the worker, kept in the backlog,
/// main-thread steps, longest step and all steps (µs), backlog entries,
/// backlog bytes.
fn stats(con: &mut Connection) -> Vec<u64> {
    exec(con, &["FERROBLOOM.RECLAIM", "STATS"]).unwrap()
}

const KEYS: usize = 200;

/// Moves the clock past the window and writes every key: each write drops
/// the key's generation (about 1.65 MB: a write after an idle window starts a
/// generation of a quarter of the capacity) and starts another.
fn rotate(con: &mut Connection, clock: &mut i64, round: usize, pid: u32, base: usize) {
    *clock += 5_000;
    set_clock(con, *clock);
    for k in 0..KEYS {
        let items: Vec<String> = (0..20).map(|i| item(&format!("r{round}"), i)).collect();
        madd(con, &format!("w{k}"), &items);
    }
    let (all, free) = threads(pid);
    assert!(free <= 1, "round {round}: {free} freeing threads");
    assert!(
        all <= base + 1 + 2,
        "round {round}: {all} threads (at start {base})"
    );
}

#[test]
fn dropped_generations_are_freed_by_one_worker_or_in_bounded_steps() {
    let s = Server::start();
    let mut con = s.conn();
    let pid = s.pid().unwrap();
    let (base, _) = threads(pid);
    let before = s.used_memory();
    let mut clock = 0i64;
    for k in 0..KEYS {
        let ok: String = exec(
            &mut con,
            &[
                "BF.RESERVE",
                &format!("w{k}"),
                "0.01",
                "4000000",
                "WINDOW",
                "4",
            ],
        )
        .unwrap();
        assert_eq!(ok, "OK");
    }
    // The worker frees 200 generations a rotation, one thread.
    for round in 0..8 {
        rotate(&mut con, &mut clock, round, pid, base);
        let gen = info_int(&mut con, "w0", "SIZE");
        assert!(gen > 1 << 20, "{gen} bytes: freed off the main thread");
    }
    let st = stats(&mut con);
    assert_eq!(st[0] + st[1], (KEYS * 7) as u64, "{st:?}");
    // The worker behind (paused): its queue fills, the rest waits in the
    // backlog, whose pages the main thread releases in steps.
    let ok: String = exec(&mut con, &["FERROBLOOM.RECLAIM", "PAUSE"]).unwrap();
    assert_eq!(ok, "OK");
    for round in 8..12 {
        rotate(&mut con, &mut clock, round, pid, base);
    }
    let paused = stats(&mut con);
    assert!(paused[1] > 0 && paused[2] > 0, "{paused:?}");
    let ok: String = exec(&mut con, &["FERROBLOOM.RECLAIM", "RESUME"]).unwrap();
    assert_eq!(ok, "OK");
    wait_until(Duration::from_secs(20), "the backlog drains", || {
        stats(&mut con)[5] == 0
    });
    eprintln!(
        "reclaim: {} writes to the worker, {} to the backlog, {} steps, longest {} µs; \
         threads {} (at start {base})",
        paused[0],
        paused[1],
        paused[2],
        paused[3],
        threads(pid).0
    );
    // Every byte back once the keys are gone.
    for k in 0..KEYS {
        let _: i64 = exec(&mut con, &["DEL", &format!("w{k}")]).unwrap();
    }
    wait_until(
        Duration::from_secs(30),
        "used_memory back to its start",
        || s.used_memory() <= before + (1 << 20),
    );
    assert!(threads(pid).1 <= 1);
}
