"""Part `python`: the Python package in-process and its bulk load
(bench/python_inprocess.py, bench/python_bulkload.py in the --python venv).
"""

import json
import os
import subprocess
import tempfile

from .common import HERE, fmt_bytes, fmt_items, log, med, spread, table


def part_python(args, env):
    a = args
    if not a.python:
        log("python: no --python interpreter given: skipped")
        return {"inprocess": [], "bulk": [], "skipped": True}
    res = {"rounds": a.python_rounds, "small_rounds": a.python_small_rounds}
    with tempfile.TemporaryDirectory(prefix="ferrobloom-pybench-") as d:
        out = os.path.join(d, "inprocess.json")
        subprocess.run([a.python, os.path.join(HERE, "python_inprocess.py"), "--sizes", a.python_sizes,
                        "--rounds", str(a.python_rounds), "--small-rounds", str(a.python_small_rounds),
                        "--json", out], check=True, cwd=d)
        res["inprocess"] = json.load(open(out))
        out = os.path.join(d, "bulk.json")
        if a.python_bulk_sizes:
            subprocess.run([a.python, os.path.join(HERE, "python_bulkload.py"), "--sizes",
                            a.python_bulk_sizes, "--json", out], check=True, cwd=d,
                           env={**os.environ, "FERROBLOOM_MODULE": a.module})
            res["bulk"] = json.load(open(out))
        else:
            res["bulk"] = []
    return res


PY_MODES = {"batch": "one call, all n items", "chunks": "calls of 10,000 items",
            "per_item": "one call per item"}


def render_python(res):
    if res.get("skipped"):
        return "Skipped (no `--python`)."
    inproc = res["inprocess"]
    # Runs before the per-call modes existed wrote a list of batch rows.
    if isinstance(inproc, list):
        inproc = {"rows": [dict(r, mode=r.get("mode", "batch")) for r in inproc], "machine": {}}
    mach = inproc.get("machine") or {}
    where = (f"{mach.get('cpu', '?')}, {mach.get('cores', '?')} cores, L1d {mach.get('L1d', '?')}, "
             f"L2 {mach.get('L2', '?')}, L3 {mach.get('L3', '?')}; load average "
             f"{mach.get('load_before', '?')} before, {mach.get('load_after', '?')} after")
    out = ("In-process add and lookup from Python, ns/item (`bench/python_inprocess.py`): "
           "non-scaling filters of n items at 1%, items `b\"item-<i>\"`, hits = the n items, misses = "
           "up to 10M never-added items (their share of positives = the measured FP rate); the "
           "libraries interleaved round by round in one process, "
           f"{res['rounds']} round(s) (at least {res.get('small_rounds', res['rounds'])} up to 2M items), "
           "median (min-max), each library called its fastest way (the script's doc). "
           "\"vs fastest\": the fastest other library's median / ferrobloom's, for add / hit / miss "
           "(above 1: ferrobloom faster).")
    for mode in ("batch", "chunks", "per_item"):
        rows = []
        for n in sorted({r["n"] for r in inproc["rows"] if r["mode"] == mode}):
            rs = [r for r in inproc["rows"] if r["n"] == n and r["mode"] == mode]
            peers = [r for r in rs if not r["library"].startswith("ferrobloom")]
            best = {op: min((med(r[op]) for r in peers), default=float("nan")) for op in ("add", "hit", "miss")}
            for r in rs:
                ratio = "" if r in peers else " / ".join(f"{best[op] / med(r[op]):.2f}x" for op in ("add", "hit", "miss"))
                rows.append([fmt_items(n), r["library"], spread(r["add"]), spread(r["hit"]), spread(r["miss"]),
                             f"{r['fp']:.4f}", f"{r['bytes']:,}", ratio])
        if not rows:
            continue
        note = {"batch": " (rbloom and pybloomfiltermmap3 have no batch lookup: a list comprehension of `in`)",
                "chunks": " (the batch calls on chunks, as a program streaming items makes them)",
                "per_item": " (`for x in xs: add(x)`, `[x in f for x in xs]`)"}[mode]
        out += (f"\n\n**{PY_MODES[mode]}**{note}; machine: {where}.\n\n"
                + table(["n", "library", "add", "hit", "miss", "FP rate", "filter bytes",
                         "vs fastest (add / hit / miss)"], rows))
    thr = inproc.get("threads")
    if thr:
        out += (f"\n\nOne ferrobloom filter (classic, {fmt_items(thr['n'])} items) looked up from two "
                f"threads at once (`contains_many` of 10,000-item chunks each): {thr['ratio']:.2f}x the "
                f"throughput of one thread ({med(thr['one_thread']):.0f} ns/item on one thread, "
                f"{med(thr['two_threads']):.0f} ns/item of both on two; 2.00x: fully parallel); machine: {where}.")
    if res["bulk"]:
        brows = [[fmt_items(b["n"]), fmt_bytes(b["file_bytes"]), f"{b['madd_s']:.1f} s",
                  fmt_bytes(b["madd_wire"]), f"{b['build_s']:.2f} + {b['build_push_s'] - b['build_s']:.2f} s",
                  fmt_bytes(b["push_wire"]), f"{b['madd_s'] / b['build_push_s']:.1f}x",
                  f"{b['madd_wire'] / b['push_wire']:.0f}x", f"{b['pull_s']:.2f} s",
                  f"{b['local_ns']:.0f} / {b['mexists_ns']:.0f}"] for b in res["bulk"]]
        out += ("\n\nBulk load from a file of one item per line (`bench/python_bulkload.py`), from one "
                "redis-py client: pipelined `BF.MADD` (1000 items a command, 50 commands a pipeline) "
                "against the CLI's build path (`update` of each 4 MiB block's lines; both read the file with the CLI's reader) + `push` "
                "(pipelined `LOADCHUNK`s), wall time end to end and bytes the server received; "
                "then `pull` of the pushed filter and lookups of up to 1M added items, local "
                "`contains_many` against pipelined `BF.MEXISTS` (1000 a command), ns/item.\n\n"
                + table(["n", "file", "BF.MADD", "bytes in", "build + push", "bytes in", "faster",
                         "fewer bytes", "pull", "lookup ns: local / BF.MEXISTS"], brows))
    return out
