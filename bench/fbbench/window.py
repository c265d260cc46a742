"""Part `window`: windowed Bloom filters (WINDOW seconds).
"""

import json
import math
import os
import subprocess
import time

from .common import (
    Server,
    check_module_allocator,
    cmdstat,
    finfo,
    fmt_items,
    fmt_num,
    log,
    med,
    run_example,
    spread,
    table,
)
from .batch import items, resp, send_batches, timed_send


def part_window(args, env):
    """Windowed Bloom filters (WINDOW seconds) against a plain filter, RedisBloom's plain
    filter and the one-key-per-window approach, at each capacity per window: a steady
    stream in real time (a quarter of the capacity per generation, six generations, so
    five are live), then lookups, memory and the false-positive rate."""
    a = args
    patterns = part_window_patterns(a)
    if not a.window_speed:
        # Only the arrival patterns: the server rows of the committed run stay.
        try:
            with open(os.path.join(a.out, "window.json")) as f:
                old = json.load(f)
            res = {k: v for k, v in old["result"].items() if k != "patterns"}
            res["speed_from"] = old["result"].get("speed_from") or {
                "date": old["env"]["date"], "commit": old["env"]["commit"]}
        except (OSError, KeyError, ValueError):
            res = {"rows": [], "batch_items": a.batch_items, "calls": a.batch_calls,
                   "rounds": a.rounds, "error": 0.01, "redisbloom": False}
        res["patterns"] = patterns
        return res
    bsz = a.batch_items
    srv = Server(a, "window")
    c = srv.client()
    rb = Server(a, "window-rb", module=a.redisbloom) if a.redisbloom else None
    rc = rb.client() if rb else None
    res = {"batch_items": bsz, "calls": a.batch_calls, "rounds": a.rounds, "error": 0.01,
           "redisbloom": bool(rb), "rows": []}
    try:
        for cap in a.window_capacities:
            c.flushall()
            # A generation's span (w/4) must hold its fill, and the lookups and probes
            # after the last fill must end before the oldest live generation dies.
            w = a.window_seconds
            span = w / 4
            # Fills are timed on three filters of each kind (the median is reported), so one
            # disturbed quarter on this shared machine does not decide the ratio.
            wkeys, pkeys = ["bw", "bv", "bu"], ["bf", "be", "bd"]
            for k in wkeys:
                c.execute_command("BF.RESERVE", k, 0.01, cap, "WINDOW", w)
            for k in pkeys:
                c.execute_command("BF.RESERVE", k, 0.01, cap)
            c.execute_command("BF.RESERVE", "bf2", 0.01, cap)  # the previous window's key
            if rc:
                rc.flushall()
                for k in pkeys:
                    rc.execute_command("BF.RESERVE", k, 0.01, cap)
            quarter = cap // 4
            fill = {"bw": [[0, 0] for _ in wkeys], "bf": [[0, 0] for _ in pkeys],
                    "rb": [[0, 0] for _ in pkeys]}
            # The windowed filters: a quarter of the capacity per generation, in real time
            # (each quarter's commands encoded during the previous span); measured right
            # after the sixth quarter, when five generations are live and full. The plain
            # filters (and RedisBloom's) get `cap` items in the same schedule, a quarter
            # right after each of the first four windowed quarters, so that every fill
            # meets the same idle gaps (caches and clocks cooled by 15 s of idling). Keys
            # of one kind have names of the same length: a quarter is encoded once and the
            # key swapped in the bytes.
            def encode(key, lo, hi):
                return b"".join(resp(["BF.MADD", key] + items(b"m", y, min(bsz, hi - y)))
                                for y in range(lo, hi, bsz))

            def swap(data, key, other):
                return data.replace(b"$2\r\n%s\r\n" % key.encode(), b"$2\r\n%s\r\n" % other.encode())

            def timed_raw(port, client, data, n):
                client.config_resetstat()
                send_raw(port, data, n)
                return cmdstat(client, "BF.MADD")[1]

            def plain_quarter(g, order):
                start = g * quarter
                end = cap if g == 3 else start + quarter
                n_p = len(range(start, end, bsz))
                data = encode("bf", start, end)
                for r in order:
                    d = swap(data, "bf", pkeys[r])
                    fill["bf"][r][0] += timed_raw(srv.port, c, d, n_p)
                    fill["bf"][r][1] += end - start
                    if rc:
                        fill["rb"][r][0] += timed_raw(rb.port, rc, d, n_p)
                        fill["rb"][r][1] += end - start
                batches = [items(b"o" + b"m", y, min(bsz, end - y)) for y in range(start, end, bsz)]
                send_batches(srv.port, "BF.MADD", "bf2", batches)
            n_cmds = len(range(0, quarter, bsz))
            most = 0
            data = encode("bw", 0, quarter)
            # Generations start at multiples of the span since the epoch (every server
            # agrees on them): start on one, so that each quarter lands in one generation.
            t0 = (math.floor(time.time() / span) + 1) * span + 0.05
            time.sleep(max(0.0, t0 - time.time()))
            late = 0.0
            for g in range(6):
                late = max(late, time.time() - (t0 + g * span))
                # Which filter goes first alternates per quarter.
                order = [(g + r) % len(wkeys) for r in range(len(wkeys))]
                for r in order:
                    fill["bw"][r][0] += timed_raw(srv.port, c, swap(data, "bw", wkeys[r]), n_cmds)
                    fill["bw"][r][1] += quarter
                most = max(most, int(finfo(c, "BF.INFO", "bw")["Size"]))
                if g < 4:
                    plain_quarter(g, order)
                if g < 5:
                    data = encode("bw", (g + 1) * quarter, (g + 2) * quarter)
                    pause = t0 + (g + 1) * span - time.time()
                    if pause > 0:
                        time.sleep(pause)
            for k in wkeys[1:] + pkeys[1:]:
                c.delete(k)
            if rc:
                for k in pkeys[1:]:
                    rc.delete(k)
            t_measure = time.time()
            # Lookups: half items of the live window, half never added.
            live_from = 2 * quarter
            look = {"bw": [], "bf": [], "rb": [], "two": []}
            for rnd in range(a.rounds):
                batches = []
                for i in range(a.batch_calls):
                    pres = items(b"m", live_from + (i * 7919 * (bsz // 2)) % max(4 * quarter - live_from - bsz, 1), bsz // 2)
                    absent = items(b"x%d:" % rnd, i * bsz, bsz - bsz // 2)
                    batches.append([x for pair in zip(pres, absent) for x in pair])
                for key in ("bw", "bf"):
                    calls, usec = timed_send(srv.port, c, "BF.MEXISTS", key, batches)
                    look[key].append(usec * 1000.0 / (calls * bsz))
                # One key per window: every lookup asks the current and the previous key.
                c.config_resetstat()
                send_batches(srv.port, "BF.MEXISTS", "bf", batches)
                send_batches(srv.port, "BF.MEXISTS", "bf2", batches)
                calls, usec = cmdstat(c, "BF.MEXISTS")
                look["two"].append(usec * 1000.0 / (calls / 2 * bsz))
                if rc:
                    calls, usec = timed_send(rb.port, rc, "BF.MEXISTS", "bf", batches)
                    look["rb"].append(usec * 1000.0 / (calls * bsz))
            # False positives: never-added items.
            n_fp = a.window_probes
            hits = {"bw": 0, "bf": 0, "two": 0}
            for x in range(0, n_fp, 10_000):
                probe = items(b"fp:", x, min(10_000, n_fp - x))
                r1 = c.execute_command("BF.MEXISTS", "bw", *probe)
                r2 = c.execute_command("BF.MEXISTS", "bf", *probe)
                r3 = c.execute_command("BF.MEXISTS", "bf2", *probe)
                hits["bw"] += sum(r1)
                hits["bf"] += sum(r2)
                hits["two"] += sum(1 for p, q in zip(r2, r3) if p or q)
            # Valid if everything ran inside the last generation's span (five live).
            valid = time.time() < t0 + 6 * span and late < span / 2
            plain = int(finfo(c, "BF.INFO", "bf")["Size"])
            row = {"capacity": cap, "window_s": w, "probes": n_fp, "valid": valid,
                   "measure_s": time.time() - t_measure,
                   "fill_ns": {k: [u * 1000.0 / n for u, n in v if n] for k, v in fill.items()},
                   "lookup_ns": look,
                   "bits_per_item": {"bw": most * 8 / cap, "bf": plain * 8 / cap, "two": 2 * plain * 8 / cap},
                   "fpr": {k: v / n_fp for k, v in hits.items()},
                   "links": int(finfo(c, "BF.INFO", "bw")["Number of filters"])}
            res["rows"].append(row)
            log(f"  {fmt_items(cap)}/window: fill ns/item {({k: med(v) for k, v in row['fill_ns'].items() if v})}, lookups {({k: med(v) for k, v in look.items() if v})}, "
                f"bits/item {row['bits_per_item']}, FPR {row['fpr']}")
        check_module_allocator(c, 1)
    finally:
        srv.close()
        if rb:
            rb.close()
    res["patterns"] = patterns
    return res


WINDOW_PATTERNS = [
    ("steady", "the capacity per window"),
    ("swing30", "0.99x capacity, ±30% over a window (sine)"),
    ("swing20", "0.9x capacity, ±20% over a third of a window"),
    ("poisson", "Poisson counts, mean 0.95x capacity"),
    ("batches", "capacity/52 at once every W/50"),
    ("batches20", "capacity/22 at once every W/20"),
    ("batches17", "capacity/19 at once every W/17 (4.25 a generation)"),
    ("batches19", "capacity/21 at once every W/19 (4.75 a generation)"),
    ("batches21", "capacity/23 at once every W/21 (5.25 a generation)"),
    ("batches23", "capacity/25 at once every W/23 (5.75 a generation)"),
    ("half", "half the capacity"),
    ("peak130", "±30% around the capacity over two windows (peaks 1.3x)"),
    ("quarter25", "capacity/4 at once in every generation, at a random time within it"),
    ("quarter30", "0.3x capacity at once in every generation (20% over the capacity)"),
    ("whole", "the capacity at once every 1.02·W (two batches live at once)"),
]


def part_window_patterns(a):
    """Memory and false positives per arrival pattern, in process with an injected clock
    (crates/ferrobloom-core/examples/bench_window_memory.rs): streams not aligned to
    generation boundaries, at 1% and 0.1%."""
    cap, windows, probes = (20_000, 4, 10_000) if a.quick else (a.window_pattern_capacity, 10, 100_000)
    rows = run_example(a, "bench_window_memory", "--capacity", cap, "--windows", windows,
                       "--probes", probes, "--errors", "0.01,0.001")
    return {"capacity": cap, "windows": windows, "probes": probes, "rows": rows}


def render_window_patterns(pat):
    if not pat or not pat.get("rows"):
        return ""
    desc = dict(WINDOW_PATTERNS)
    rows = []
    for r in pat["rows"]:
        ratio = f"{r['ratio']:.2f}x"
        if "ratio_to_actual" in r:
            ratio += f" ({r['ratio_to_actual']:.2f}x of half)"
        rows.append([r["pattern"], desc.get(r["pattern"], ""), f"{r['error']:g}",
                     f"{r['most_in_a_window'] / r['capacity']:.3f}",
                     f"{r['bits_per_item']:.2f}", f"{r['plain_bits_per_item']:.2f}", ratio,
                     f"{r['ratio_from_start']:.2f}x", str(r["links"]),
                     f"{r['fp_worst']:.4%}", f"{r['fp_mean']:.4%}"])
    hdr = ["pattern", "stream", "error", "most in a window ÷ capacity", "bits/item",
           "plain bits/item", "memory vs plain", "from the start", "links",
           "FPR worst", "FPR mean"]
    return (f"### Memory and false positives per arrival pattern\n\n"
            f"In process (`examples/bench_window_memory.rs`, injected clock): a windowed filter "
            f"of {fmt_items(pat['capacity'])} per window of 60 s (paired links) gets each stream "
            f"for {pat['windows']} windows from 12.345 s past a generation boundary, in steps of "
            f"100 ms. Memory: the largest BF.INFO Size from the third window on ÷ a plain "
            f"scaling filter of the same capacity and error holding the capacity (bits/item: "
            f"÷ capacity); \"from the start\": the largest over the whole run. FPR: "
            f"{pat['probes']} never-added items at the fullest moment of every generation after "
            f"the first window.\n\n" + table(hdr, rows))


def send_raw(port, data, n_cmds):
    """Sends pre-encoded commands through `redis-cli --pipe` (see send_batches)."""
    p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"], input=data,
                       capture_output=True, timeout=600)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0 or "errors: 0," not in out or f"replies: {n_cmds}" not in out:
        raise RuntimeError(f"redis-cli --pipe: {out.strip()[-300:]} {p.stderr.decode()[-300:]}")


def render_window(res):
    pat = render_window_patterns(res.get("patterns"))
    if pat:
        pat = "\n\n" + pat
    speed = ""
    if res.get("speed_from"):
        speed = (f"_Server rows from the run of {res['speed_from']['date']}, commit "
                 f"{res['speed_from']['commit']}: this run measured the arrival patterns "
                 f"only._\n\n")
    return speed + render_window_speed(res) + pat


def render_window_speed(res):
    rows = []
    for r in res["rows"]:
        f, l, b, p = r["fill_ns"], r["lookup_ns"], r["bits_per_item"], r["fpr"]
        for name, key, fk in (("windowed (`WINDOW`)", "bw", "bw"), ("plain", "bf", "bf"),
                              ("one key per window (2 lookups)", "two", None),
                              ("RedisBloom 2.8.2 plain", "rb", "rb")):
            if not l.get(key):
                continue
            ratio, fratio = "", ""
            if key == "bw":
                ratio = f"{med(l['bw']) / med(l['bf']):.2f}x plain"
                if f.get("bw") and f.get("bf"):
                    fratio = f"{med(f['bw']) / med(f['bf']):.2f}x plain"
            if not r.get("valid", True):
                name += " (timing overran the window: not steady state)"
            fill_cell = "-"
            if fk and f.get(fk):
                # Older results hold one number per filter kind.
                fill_cell = fmt_num(f[fk]) if isinstance(f[fk], (int, float)) else f"{spread(f[fk])} {fratio}".strip()
            rows.append([fmt_items(r["capacity"]), name,
                         fill_cell,
                         f"{spread(l[key])} {ratio}".strip(),
                         f"{b[key]:.2f}" if key in b else "-",
                         f"{p[key]:.4%}" if key in p else "-"])
    hdr = ["per window", "filter", "BF.MADD server ns/item", "BF.MEXISTS server ns/item",
           "bits/item", "measured FPR"]
    w = res["rows"][0]["window_s"] if res["rows"] else 0
    return (f"Error rate 1%. The windowed filter (`BF.RESERVE bw 0.01 <n> WINDOW {w:g}`) gets a "
            f"quarter of its capacity per generation in real time for six generations; lookups and "
            f"probes run right after the sixth, while five generations are live and full (the "
            f"fullest moment); its bits/item is its largest BF.INFO Size over that stream ÷ "
            f"capacity. The plain filters (ferrobloom's, RedisBloom's) get the capacity in the same "
            f"schedule, a quarter right after each of the first four windowed quarters, so every "
            f"BF.MADD figure meets the same idle gaps; fills are timed on three filters of each "
            f"kind, median (min-max); one-key-per-window is two plain "
            f"keys (this window's and the previous one's), each lookup asking both (its ns/item is "
            f"the two commands' time per item, its FPR a hit in either). Lookups: half items of "
            f"the live window, half never added, {res['calls']} commands of {res['batch_items']} "
            f"items, {res['rounds']} rounds, median (min-max); FPR over "
            f"{res['rows'][0]['probes'] if res['rows'] else 0} never-added items.\n\n"
            + table(hdr, rows))
