//! Windowed filters under real conditions (issue #27): a live SCANDUMP copy
//! across a generation boundary (and live copies of every other kind: plain
//! filters gaining links, cuckoo filters growing and compacting), clock steps
//! back, a failover to a replica whose clock lags, a payload dated 50 years
//! ahead, and the parsing corners. Time moves with the per-server test clock
//! (FERROBLOOM.CLOCK).

use super::*;

/// [`live_copy_of`] with BF.SCANDUMP and BF.LOADCHUNK.
fn live_copy(
    con: &mut Connection,
    key: &str,
    copy: &str,
    between: impl FnMut(&mut Connection, usize),
) -> Result<(), String> {
    live_copy_of("BF", con, key, copy, between)
}

/// Items of `tag`: `n` of them.
fn batch(tag: &str, n: u64) -> Vec<String> {
    (0..n).map(|i| item(tag, i)).collect()
}

/// Items of a BF.MADD of `items` not taken: error elements, and the items
/// after a `non scaling filter is full` (the reply stops there).
fn refused_of(con: &mut Connection, key: &str, items: &[String]) -> usize {
    let v = madd_raw(con, key, items);
    items.len() - v.iter().filter(|x| matches!(x, Value::Int(_))).count()
}

/// A live copy of a windowed filter across a generation boundary: four
/// generations of 800 items, SCANDUMP's first data chunk taken, then the clock
/// moves on and a write drops the oldest generation, then the walk goes on.
/// Position iterators shifted every later chunk (the copy lost 800 of the
/// items still inside their window); walk iterators name their generation, so
/// every item the source still holds answers 1 in the copy.
#[test]
fn window_live_scandump_copy_across_a_generation_boundary() {
    let s = Server::start();
    let mut con = s.conn();
    set_clock(&mut con, 0);
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "w", "0.01", "4000", "WINDOW", "600"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let gens: Vec<Vec<String>> = (0..4)
        .map(|g| {
            set_clock(&mut con, g * W_MS / 4);
            let items = batch(&format!("g{g}"), 800);
            madd(&mut con, "w", &items);
            items
        })
        .collect();
    let res = live_copy(&mut con, "w", "copy", |con, step| {
        if step == 1 {
            // 1.5 W after the first generation: it is dropped by this write.
            set_clock(con, 3 * W_MS / 2);
            exec::<i64>(con, &["BF.ADD", "w", "during-the-walk"]).unwrap();
        }
    });
    assert_eq!(res, Ok(()));
    // Items of the generations the source still holds, and those the copy lost.
    let (mut live, mut held, mut lost) = (0, 0, 0);
    for (g, items) in gens.iter().enumerate() {
        let src = ones(&mexists(&mut con, "w", items));
        if src < items.len() {
            // Dropped at the source (only false positives answer).
            assert!(g < 2 && src < 40, "generation {g}: {src}");
            continue;
        }
        live += 1;
        held += items.len();
        lost += items.len() - ones(&mexists(&mut con, "copy", items));
    }
    assert_eq!(
        lost, 0,
        "the copy lost {lost} of the {held} items the source holds"
    );
    assert!(live >= 2, "generations 2 and 3 are inside the window");
    // A position iterator other than 1 is refused on a windowed filter.
    assert_eq!(
        exec_err(&mut con, &["BF.SCANDUMP", "w", "2"]),
        "ERR invalid SCANDUMP iterator for a windowed filter (start the walk again at 0)"
    );
}

/// A plain filter (ferrobloom's layout and RedisBloom's) that gains links
/// during a walk: the chunks read keep every item of the walk's start, and a
/// chunk of a link the copy's header does not have is refused by LOADCHUNK
/// (`no link found`): the copy is exact or the walk fails, never silently
/// different.
#[test]
fn plain_live_scandump_copy_while_links_are_added() {
    let s = Server::start();
    let mut con = s.conn();
    for layout in ["paired", "redisbloom"] {
        let key = format!("p-{layout}");
        let copy = format!("c-{layout}");
        let ok: String = exec(
            &mut con,
            &["BF.RESERVE", &key, "0.01", "100", "LAYOUT", layout],
        )
        .unwrap();
        assert_eq!(ok, "OK");
        let first = batch("first", 100);
        madd(&mut con, &key, &first);
        // A second link before the walk, so the walk has links to read after
        // the writes.
        let second = batch("second", 150);
        madd(&mut con, &key, &second);
        let res = live_copy(&mut con, &key, &copy, |con, step| {
            if step == 1 {
                madd(con, &key, &batch("during", 2_000));
            }
        });
        match res {
            Ok(()) => {}
            Err(e) => assert!(
                e.starts_with("LOADCHUNK") && e.ends_with("invalid offset - no link found"),
                "{layout}: {e}"
            ),
        }
        assert_eq!(ones(&mexists(&mut con, &copy, &first)), 100, "{layout}");
        assert_eq!(ones(&mexists(&mut con, &copy, &second)), 150, "{layout}");
    }
}

/// Streams `per_batch` items every `step_ms` of test clock from `from` (a
/// clock offset) for `batches` batches into `key`; returns the items refused.
fn stream(
    con: &mut Connection,
    key: &str,
    tag: &str,
    from: i64,
    step_ms: i64,
    batches: i64,
    per_batch: u64,
) -> usize {
    let mut no = 0;
    for b in 0..batches {
        set_clock(con, from + b * step_ms);
        no += refused_of(con, key, &batch(&format!("{tag}{b}"), per_batch));
    }
    no
}

/// A clock step back of 10 windows (W = 60 s, capacity 1,000, a stream at
/// 80%: 50 items every 3.75 s) on a NONSCALING and a scaling filter: no item
/// refused, the size stays at the steady state, an item added after the step
/// answers 1 for W and is forgotten by 1.25 W of the clock time after the step.
/// Before, every write after the step landed in one generation until the clock
/// caught up: the NONSCALING filter refused 7,200 of 11,200 items.
#[test]
fn window_clock_step_back_of_ten_windows() {
    const W: i64 = 60_000;
    const STEP: i64 = 3_750;
    let s = Server::start();
    let mut con = s.conn();
    for (key, opt) in [("sc", "EXPANSION"), ("ns", "NONSCALING")] {
        let mut args = vec!["BF.RESERVE", key, "0.01", "1000", "WINDOW", "60"];
        if opt == "EXPANSION" {
            args.extend(["EXPANSION", "2"]);
        } else {
            args.push(opt);
        }
        let ok: String = exec(&mut con, &args).unwrap();
        assert_eq!(ok, "OK");
        // 10 windows of steady state: the largest size and most links over the
        // last 4 (generations are sized from the stream, so the size varies a
        // little from one generation to the next).
        let before = stream(&mut con, key, "a", 0, STEP, 96, 50);
        assert_eq!(before, 0, "{key}");
        let (mut steady, mut links) = (0, 0);
        for b in 96..160 {
            set_clock(&mut con, b * STEP);
            assert_eq!(refused_of(&mut con, key, &batch(&format!("a{b}"), 50)), 0);
            steady = steady.max(info_int(&mut con, key, "SIZE"));
            links = links.max(info_int(&mut con, key, "FILTERS"));
        }
        // The clock steps back 10 windows; 14 windows of stream follow.
        let back = 160 * STEP - 10 * W;
        let watched = batch("watched", 50);
        set_clock(&mut con, back);
        assert_eq!(refused_of(&mut con, key, &watched), 0);
        // Refused items, largest size and links, fewest watched items held
        // within W, most held from 1.25 W + one batch on.
        let (mut no, mut size, mut most_links, mut kept, mut late) = (0, 0, 0, 50, 0);
        // The largest size and most links over the last 4 windows.
        let (mut tail_size, mut tail_links) = (0, 0);
        for b in 1..=224 {
            let t = back + b * STEP;
            set_clock(&mut con, t);
            no += refused_of(&mut con, key, &batch(&format!("b{b}"), 50));
            let (now_size, now_links) = (
                info_int(&mut con, key, "SIZE"),
                info_int(&mut con, key, "FILTERS"),
            );
            size = size.max(now_size);
            most_links = most_links.max(now_links);
            if b > 160 {
                tail_size = tail_size.max(now_size);
                tail_links = tail_links.max(now_links);
            }
            let held = ones(&mexists(&mut con, key, &watched));
            if b * STEP <= W {
                kept = kept.min(held);
            }
            if b * STEP >= W + W / 4 + STEP {
                late = late.max(held);
            }
        }
        let dbg: Vec<String> = exec(&mut con, &["BF.DEBUG", key]).unwrap();
        // The filter runs ahead of the clock by the step, less the 3.75 s
        // between the last write before it and the step (and the real
        // milliseconds between those two commands).
        let ahead: i64 = dbg[1]
            .rsplit_once(" ahead_ms:")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_else(|| panic!("{key}: {}", dbg[1]));
        assert!(
            (10 * W - STEP - 1_000..=10 * W - STEP).contains(&ahead),
            "{key}: {}",
            dbg[1]
        );
        let got = (no, size, most_links, tail_size, tail_links, kept, late);
        eprintln!("{key}: refused, largest size (steady {steady}), most links (steady {links}), the same over the last 4 windows, held within W, most held after 1.25 W: {got:?}");
        // The first write after the step lands at the filter's newest change (the
        // clock time between the last write before the step and the first after
        // it cannot be known), so one batch arrives on top of another: a scaling
        // generation sizes links for that burst for about a window (measured: up
        // to 3,232 bytes and 11 links, then back to the steady state), a
        // NONSCALING one opens its second link. Before,
        // the rotation stalled: 52,000 bytes and 11 links for the 14 windows.
        assert_eq!(
            got,
            (
                0,
                // NONSCALING: the burst's generation opens its second link,
                // sized for the rest of a window's capacity (measured 4,384 to
                // 4,448 bytes, with the real milliseconds between commands).
                size.min(if key == "ns" {
                    steady * 5 / 2
                } else {
                    steady + steady / 2
                }),
                most_links.min(2 * links + 1),
                tail_size.min(steady),
                tail_links.min(links),
                50,
                late.min(5)
            ),
            "{key}: (refused of 11,200, largest size (steady {steady}), most links \
             (steady {links}), largest size and most links over the last 4 windows, \
             watched held within W, most held after 1.25 W)"
        );
    }
}

/// A primary and its replica (in sync), and a non-scaling windowed filter `w`
/// of 1,000 items per 60 s window created on the primary.
fn window_pair() -> (Server, Server, Connection, Connection) {
    let primary = Server::start();
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut pc = primary.conn();
    let rc = replica.conn();
    let ok: String = exec(
        &mut pc,
        &[
            "BF.RESERVE",
            "w",
            "0.01",
            "1000",
            "NONSCALING",
            "WINDOW",
            "60",
        ],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    (primary, replica, pc, rc)
}

/// A failover to a replica whose clock lags 10 minutes: the promoted replica
/// goes on from the filter's newest change at its own clock's rate, refuses
/// nothing and forgets on time. Before, it refused 7,198 of 8,000 items.
#[test]
fn window_failover_to_a_lagging_replica() {
    const W: i64 = 60_000;
    const STEP: i64 = 3_750;
    const LAG: i64 = 600_000;
    let (primary, replica, mut pc, mut rc) = window_pair();
    for b in 0..48 {
        set_clock(&mut rc, b * STEP - LAG);
        set_clock(&mut pc, b * STEP);
        assert_eq!(refused_of(&mut pc, "w", &batch(&format!("p{b}"), 50)), 0);
    }
    primary.wait_for_offset(&replica);
    assert_eq!(primary.digest(), replica.digest());
    let ok: String = exec(&mut rc, &["REPLICAOF", "NO", "ONE"]).unwrap();
    assert_eq!(ok, "OK");
    let start = 48 * STEP - LAG;
    let watched = batch("watched", 50);
    set_clock(&mut rc, start);
    assert_eq!(refused_of(&mut rc, "w", &watched), 0);
    let (mut no, mut kept, mut late) = (0, 50, 0);
    for b in 1..=160 {
        set_clock(&mut rc, start + b * STEP);
        no += refused_of(&mut rc, "w", &batch(&format!("r{b}"), 50));
        let held = ones(&mexists(&mut rc, "w", &watched));
        if b * STEP <= W {
            kept = kept.min(held);
        }
        if b * STEP >= W + W / 4 + STEP {
            late = late.max(held);
        }
    }
    eprintln!(
        "promoted replica: refused, held within W, most held after 1.25 W: {:?}",
        (no, kept, late)
    );
    assert_eq!(
        (no, kept, late),
        (0, 50, late.min(5)),
        "(refused of 8,000, watched held within W, most held after 1.25 W)"
    );
}

/// A failover to a replica whose clock is 5 windows ahead: its reads already
/// answered at its own time (the primary's items older than the window by it
/// are forgotten there), and after promotion its first write is a step forward
/// of 5 windows, exactly what those reads answered: nothing refused, what it
/// answered before the write it answers after, and its own items are held for
/// W and forgotten by 1.25 W.
#[test]
fn window_failover_to_a_replica_whose_clock_is_ahead() {
    const W: i64 = 60_000;
    const STEP: i64 = 3_750;
    const AHEAD: i64 = 5 * W;
    let (primary, replica, mut pc, mut rc) = window_pair();
    let mut sent = Vec::new();
    for b in 0..48 {
        set_clock(&mut rc, b * STEP + AHEAD);
        set_clock(&mut pc, b * STEP);
        let items = batch(&format!("p{b}"), 50);
        assert_eq!(refused_of(&mut pc, "w", &items), 0);
        sent.extend(items);
    }
    primary.wait_for_offset(&replica);
    assert_eq!(primary.digest(), replica.digest());
    let before = mexists(&mut rc, "w", &sent);
    let ok: String = exec(&mut rc, &["REPLICAOF", "NO", "ONE"]).unwrap();
    assert_eq!(ok, "OK");
    let start = 48 * STEP + AHEAD;
    let watched = batch("watched", 50);
    set_clock(&mut rc, start);
    assert_eq!(refused_of(&mut rc, "w", &watched), 0);
    assert_eq!(
        mexists(&mut rc, "w", &sent),
        before,
        "the write changed no answer"
    );
    let (mut no, mut kept, mut late) = (0, 50, 0);
    for b in 1..=64 {
        set_clock(&mut rc, start + b * STEP);
        no += refused_of(&mut rc, "w", &batch(&format!("r{b}"), 50));
        let held = ones(&mexists(&mut rc, "w", &watched));
        if b * STEP <= W {
            kept = kept.min(held);
        }
        if b * STEP >= W + W / 4 + STEP {
            late = late.max(held);
        }
    }
    assert_eq!(
        (no, kept, late.min(5)),
        (0, 50, late),
        "(refused, held within W, held after 1.25 W)"
    );
}

/// A client RESTORE of a payload whose newest change is 50 years ahead of the
/// server clock (a 1 s NONSCALING window of capacity 100): the filter's time
/// goes on from that change at this server's clock rate, so a stream at the
/// capacity is taken whole and its items are forgotten 1.25 s after they were
/// added. Before, the filter was pinned: it took 99 of 400 items and still
/// held an item after 2.5 s.
#[test]
fn window_restore_of_a_payload_fifty_years_ahead() {
    let s = Server::start();
    let mut con = s.conn();
    let fifty_years: i64 = 50 * 31_557_600_000;
    set_clock(&mut con, fifty_years);
    let ok: String = exec(
        &mut con,
        &[
            "BF.RESERVE",
            "f",
            "0.01",
            "100",
            "NONSCALING",
            "WINDOW",
            "1",
        ],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let old = batch("old", 20);
    madd(&mut con, "f", &old);
    let dump: Vec<u8> = redis::cmd("DUMP").arg("f").query(&mut con).unwrap();
    set_clock(&mut con, 0);
    let ok: String = redis::cmd("RESTORE")
        .arg("r")
        .arg(0)
        .arg(dump)
        .query(&mut con)
        .unwrap();
    assert_eq!(ok, "OK");
    // 400 items over 4 s: 10 every 100 ms. Refused items; most of the first
    // batch and of the payload's items held from 1.4 s on; first batch at 2.5 s.
    let (mut no, mut late_first, mut late_old) = (0, 0, 0);
    let first = batch("s0", 10);
    for b in 0..40 {
        set_clock(&mut con, b * 100);
        let items = if b == 0 {
            first.clone()
        } else {
            batch(&format!("s{b}"), 10)
        };
        no += refused_of(&mut con, "r", &items);
        if b * 100 >= 1_400 {
            late_first = late_first.max(ones(&mexists(&mut con, "r", &first)));
            late_old = late_old.max(ones(&mexists(&mut con, "r", &old)));
        }
    }
    set_clock(&mut con, 2_500);
    let at_end = ones(&mexists(&mut con, "r", &first));
    let got = (no, late_first, late_old, at_end);
    eprintln!("refused, first batch held from 1.4 s, payload's items held from 1.4 s, first batch at 2.5 s: {got:?}");
    assert!(
        no == 0 && late_first <= 2 && late_old <= 2 && at_end <= 2,
        "(refused of 400, first batch held from 1.4 s (of 10), payload's items held \
         from 1.4 s (of 20), first batch held at 2.5 s) = {got:?}"
    );
}

/// The parsing corners: a window below a millisecond is refused (not rounded
/// up), 0.0015 s is 2 ms, and SEED twice is refused like WINDOW twice.
#[test]
fn window_below_a_millisecond_and_seed_twice_are_refused() {
    let s = Server::start();
    let mut con = s.conn();
    assert_eq!(
        exec_err(&mut con, &["BF.RESERVE", "k", "0.01", "10", "WINDOW", "0.0005"]),
        "ERR bad window (expected seconds: a number > 0 with millisecond precision, at most 315576000)"
    );
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "k"]).unwrap(), 0);
    let ok: String = exec(
        &mut con,
        &["BF.RESERVE", "k", "0.01", "10", "WINDOW", "0.0015"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    let w: Vec<f64> = exec(&mut con, &["BF.INFO", "k", "WINDOW"]).unwrap();
    assert_eq!(w, vec![0.002]);
    let seed = "0123456789abcdef0123456789abcdef";
    for cmd in [
        vec!["BF.RESERVE", "s", "0.01", "10", "SEED", seed, "SEED", seed],
        vec!["BF.INSERT", "s", "SEED", seed, "SEED", seed, "ITEMS", "a"],
    ] {
        assert_eq!(exec_err(&mut con, &cmd), "ERR SEED given twice");
    }
    assert_eq!(exec::<i64>(&mut con, &["EXISTS", "s"]).unwrap(), 0);
}

/// CF.MEXISTS answers of `items` that are 1.
fn cf_held(con: &mut Connection, key: &str, items: &[String]) -> usize {
    let v: Vec<i64> = redis::cmd("CF.MEXISTS")
        .arg(key)
        .arg(items)
        .query(con)
        .unwrap();
    ones(&v)
}

/// CF.RESERVE `key` of `capacity`, expansion 2, in `layout`.
fn cf_reserve(con: &mut Connection, key: &str, capacity: &str, layout: &str) {
    let ok: String = exec(
        con,
        &[
            "CF.RESERVE",
            key,
            capacity,
            "EXPANSION",
            "2",
            "LAYOUT",
            layout,
        ],
    )
    .unwrap();
    assert_eq!(ok, "OK");
}

fn cf_insert(con: &mut Connection, key: &str, items: &[String]) {
    let _: Value = redis::cmd("CF.INSERT")
        .arg(key)
        .arg("ITEMS")
        .arg(items)
        .query(con)
        .unwrap();
}

/// Live copies of cuckoo filters. A filter of ferrobloom's layout that moves
/// fingerprints during the walk (kick-outs as it fills and grows, compaction
/// after deletes and CF.COMPACT) refuses the rest of the walk (`the filter
/// moved items since this SCANDUMP walk began`): a move can take an item from
/// a part not read yet to one already read. Before, the walk went on and the
/// copy silently lacked the moved items. A walk with no move is exact. A
/// filter of RedisBloom's layout that grows during a walk: the new
/// sub-filter's chunk is refused by LOADCHUNK, or the copy is exact; one that
/// compacts refuses the walk too (before: the copy silently lacked moved
/// items), since it keeps its walks by connection; a walk it does not know is
/// refused once items moved.
#[test]
fn cuckoo_live_scandump_copy_while_it_grows_or_compacts() {
    let s = Server::start();
    let mut con = s.conn();
    let moved = "SCANDUMP: ResponseError: the filter moved items since this SCANDUMP walk began (start the walk again at 0)";
    // A walk begun before any move has position iterators, which the filter
    // cannot tell from positions it never handed out.
    let stale = "SCANDUMP: ResponseError: the filter moved items after it answered SCANDUMP, and this iterator is not one of a walk it knows began since (start the walk again at 0 on one connection)";
    // Growth (and the kick-outs that fill a table first).
    for layout in ["ferrobloom", "redisbloom"] {
        let key = format!("g-{layout}");
        let copy = format!("gc-{layout}");
        cf_reserve(&mut con, &key, "1000", layout);
        let before = batch("before", 700);
        cf_insert(&mut con, &key, &before);
        let res = live_copy_of("CF", &mut con, &key, &copy, |con, step| {
            if step == 1 {
                cf_insert(con, &key, &batch("during", 3_000));
            }
        });
        match (layout, &res) {
            (_, Ok(())) => assert_eq!(cf_held(&mut con, &copy, &before), 700, "{layout}"),
            ("ferrobloom", Err(e)) => assert!(
                e == moved || e == stale || e.starts_with("LOADCHUNK"),
                "{e}"
            ),
            (_, Err(e)) => assert!(e.starts_with("LOADCHUNK"), "{layout}: {e}"),
        }
    }
    // Deletes and compaction move fingerprints of the newer sub-filters into
    // the first one, already read: the walk is refused, in both layouts
    // (RedisBloom's keeps its walks by connection, its iterators unchanged).
    let all = batch("all", 1_500);
    for layout in ["ferrobloom", "redisbloom"] {
        let key = format!("d-{layout}");
        cf_reserve(&mut con, &key, "256", layout);
        cf_insert(&mut con, &key, &all);
        let res = live_copy_of(
            "CF",
            &mut con,
            &key,
            &format!("dc-{layout}"),
            |con, step| {
                if step == 1 {
                    for it in &all[..300] {
                        exec::<i64>(con, &["CF.DEL", &key, it]).unwrap();
                    }
                    let ok: String = exec(con, &["CF.COMPACT", &key]).unwrap();
                    assert_eq!(ok, "OK");
                }
            },
        );
        assert_eq!(res, Err(moved.to_string()), "{layout}");
    }
    // RedisBloom's layout, a walk the filter does not know (its header read on
    // another connection): refused once items moved, answered before.
    let mut other = s.conn();
    let unknown = "ERR the filter moved items after it answered SCANDUMP, and this \
                   iterator is not one of a walk it knows began since (start the walk \
                   again at 0 on one connection)";
    assert!(exec::<Value>(&mut con, &["CF.SCANDUMP", "d-redisbloom", "0"]).is_ok());
    assert_eq!(
        exec_err(&mut other, &["CF.SCANDUMP", "d-redisbloom", "1"]),
        unknown
    );
    let ok: String = exec(
        &mut con,
        &["CF.RESERVE", "fresh", "1000", "LAYOUT", "redisbloom"],
    )
    .unwrap();
    assert_eq!(ok, "OK");
    cf_insert(&mut con, "fresh", &all[..500]);
    let (next, hdr): (i64, Vec<u8>) = exec(&mut con, &["CF.SCANDUMP", "fresh", "0"]).unwrap();
    assert_eq!(next, 1);
    let ok: String = redis::cmd("CF.LOADCHUNK")
        .arg("fresh-copy")
        .arg(1)
        .arg(hdr)
        .query(&mut con)
        .unwrap();
    assert_eq!(ok, "OK");
    let res = walk_copy_from("CF", &mut other, "fresh", "fresh-copy", 1, |_, _| {});
    assert_eq!(res, Ok(()));
    assert_eq!(cf_held(&mut con, "fresh-copy", &all[..500]), 500);
    // Without writes the walk is exact (the refused walk is begun again).
    for layout in ["ferrobloom", "redisbloom"] {
        let (key, copy) = (format!("d-{layout}"), format!("quiet-{layout}"));
        let res = live_copy_of("CF", &mut con, &key, &copy, |_, _| {});
        assert_eq!(res, Ok(()));
        assert_eq!(cf_held(&mut con, &copy, &all[300..]), 1_200, "{layout}");
    }
}
