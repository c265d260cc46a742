"""The command line of bench/run.py: options, the parts in order, their
tables, plots and JSON in --out, then the summary.
"""

import argparse
import json
import os
import sys
import time

from .common import GiB, HERE, MiB, PARTS, ROOT, env_line, loadavg, log, machine
from .one_item import part_one_item, plot_one_item, render_one_item
from .batch import part_batch, plot_batch, render_batch
from .core import part_core, plot_core, render_core
from .accuracy import part_accuracy, plot_accuracy, render_accuracy
from .persistence import part_persistence, plot_persistence, render_persistence
from .merge import part_merge, plot_merge, render_merge
from .window import part_window, render_window
from .python import part_python, render_python
from .java import part_java, render_java
from .summary import summary


def main(doc):
    """Runs bench/run.py; `doc` is its docstring (the --help text)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--module", required=True, help="the module .so (Redis-allocator build)")
    ap.add_argument("--examples", required=True, help="directory of the built bench_* examples")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--parts", default=",".join(PARTS))
    ap.add_argument("--rounds", type=int, default=3, help="rounds per measurement (min/median/max)")
    ap.add_argument("--layouts", default="classic,blocked", help="Bloom layouts for core/accuracy (comma-separated)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test of the whole harness")
    ap.add_argument("--redisbloom", default="",
                    help="RedisBloom's .so, measured beside ferrobloom in one_item and batch (empty: skipped)")
    ap.add_argument("--pin", action=argparse.BooleanOptionalAction, default=(os.cpu_count() or 1) > 1,
                    help="pin the servers to core 0 and this process to the others")
    ap.add_argument("--bf-variants", default="classic:LAYOUT classic;blocked:LAYOUT blocked",
                    help="Bloom variants for one_item and batch: 'name:EXTRA RESERVE ARGS;name2:…', "
                         "e.g. 'classic:;blocked:LAYOUT blocked' (default: one plain BF.RESERVE)")
    g = ap.add_argument_group("one_item")
    g.add_argument("--clients", type=int, default=50)
    g.add_argument("--pipelines", default="1,16")
    g.add_argument("--keyspace", type=int, default=1_000_000)
    g.add_argument("--run-seconds", type=float, default=1.5, help="target length of one redis-benchmark run")
    g.add_argument("--min-requests", type=int, default=20_000)
    g.add_argument("--max-requests", type=int, default=1_000_000, help="most requests per run")
    g.add_argument("--cf-add-fill", type=float, default=0.2,
                   help="most CF.ADD requests per run, as a fraction of --keyspace (the reserved "
                        "capacity): a cuckoo filter with 20 kicks can fail well below full")
    g.add_argument("--cf-add-keyspace", type=int, default=10_000_000,
                   help="key space of CF.ADD only: from 1M, an item drawn 5+ times (expected "
                        "after ~300k adds) cannot fit in its two buckets and the filter grows")
    g = ap.add_argument_group("batch")
    g.add_argument("--batch-capacities", default="1000000,10000000,100000000")
    g.add_argument("--batch-items", type=int, default=1000)
    g.add_argument("--batch-calls", type=int, default=100, help="commands per measurement")
    g.add_argument("--batch-fill", type=float, default=1.0,
                   help="fill each filter to this fraction of its capacity (the measured adds)")
    g.add_argument("--memref-reads", type=int, default=2_000_000)
    g = ap.add_argument_group("core")
    g.add_argument("--core-sizes", default="16K,256K,4M,64M,128M,1G")
    g.add_argument("--core-ops", type=int, default=1_000_000)
    g.add_argument("--hash-ops", type=int, default=4_000_000)
    g = ap.add_argument_group("accuracy")
    g.add_argument("--acc-capacity", type=int, default=1_000_000)
    g.add_argument("--acc-probes", type=int, default=1_000_000)
    g.add_argument("--cf-slots", type=int, default=1 << 18)
    g.add_argument("--cf-max-iterations", type=int, default=500)
    g = ap.add_argument_group("window")
    g.add_argument("--window-capacities", default="1000000,10000000", help="items per window")
    g.add_argument("--window-probes", type=int, default=1_000_000)
    g.add_argument("--window-speed", action=argparse.BooleanOptionalAction, default=True,
                   help="the server part (--no-window-speed: the arrival patterns only, keeping "
                        "the committed server rows)")
    g.add_argument("--window-pattern-capacity", type=int, default=200_000,
                   help="items per window of the arrival-pattern filters")
    g.add_argument("--window-seconds", type=float, default=60.0,
                   help="the window; a quarter of it must hold a quarter's fill plus the lookups")
    g = ap.add_argument_group("persistence")
    g.add_argument("--persist-bytes", type=int, default=GiB)
    g.add_argument("--persist-rounds", type=int, default=1)
    g = ap.add_argument_group("python")
    g.add_argument("--python", default="", help="a venv's python with the package and the peers (empty: part skipped)")
    g.add_argument("--python-sizes", default="1000000,10000000",
                   help="in-process sizes (100M: run python_inprocess.py by hand, about an hour with three ways of calling)")
    g.add_argument("--python-rounds", type=int, default=3)
    g.add_argument("--python-small-rounds", type=int, default=9,
                   help="least rounds for sizes up to 2M items (seconds each; medians of 3 swapped libraries)")
    g.add_argument("--python-bulk-sizes", default="10000000", help="bulk-load sizes (empty: none)")
    g = ap.add_argument_group("java")
    g.add_argument("--java-bench", default=os.path.join(ROOT, "java", "bench", "target"),
                   help="java/bench's built target directory (make bench builds it; missing: part skipped)")
    g.add_argument("--java-sizes", default="1000000,10000000,100000000", help="in-process sizes")
    g.add_argument("--java-rounds", type=int, default=3)
    g.add_argument("--java-small-rounds", type=int, default=5, help="least rounds up to 2M items")
    g.add_argument("--java-big-rounds", type=int, default=1, help="most rounds from 50M items")
    g.add_argument("--java-probes", type=int, default=10_000_000, help="most hit and miss lookups per filter")
    g.add_argument("--java-layouts", default="classic,blocked", help="ferrobloom layouts measured")
    g.add_argument("--java-warmup", type=int, default=200_000, help="items of the discarded JIT warm-up round")
    g.add_argument("--java-bulk-sizes", default="100000000", help="bulk-load sizes (empty: none)")
    g.add_argument("--java-bulk-threads", type=int, default=2,
                   help="threads of the second build (putAll on one filter; 1: only the one-thread build)")
    g.add_argument("--java-redisson-max", type=int, default=1_000_000,
                   help="most items Redisson loads; above, its time and bytes are extrapolated to n")
    g = ap.add_argument_group("merge")
    g.add_argument("--merge-mib", default="16,64,256", help="size of each merged filter, MiB")
    a = ap.parse_args()
    a.pipelines = [int(x) for x in a.pipelines.split(",")]
    a.bf_variants = [(v.split(":", 1)[0].strip(), v.split(":", 1)[1].split() if ":" in v else [])
                     for v in a.bf_variants.split(";") if v.strip()] or [("", [])]
    a.batch_capacities = [int(float(x)) for x in a.batch_capacities.split(",")]
    a.window_capacities = [int(float(x)) for x in a.window_capacities.split(",")]
    if a.quick:
        a.rounds = min(a.rounds, 2)
        a.run_seconds, a.min_requests, a.max_requests = 0.2, 2000, 50_000
        a.batch_capacities, a.batch_calls, a.memref_reads = [100_000, 1_000_000], 10, 100_000
        a.core_sizes, a.core_ops, a.hash_ops = "16K,4M", 100_000, 200_000
        a.acc_capacity, a.acc_probes, a.cf_slots = 100_000, 100_000, 1 << 14
        a.persist_bytes = 64 * MiB
        a.merge_mib = "16,64"
        a.window_capacities, a.window_probes, a.window_seconds = [100_000], 100_000, 8.0
        a.python_sizes, a.python_bulk_sizes, a.python_rounds = "100000", "100000", 1
        a.python_small_rounds = 1
        a.java_sizes, a.java_bulk_sizes, a.java_probes = "100000", "100000", 100_000
        a.java_rounds = a.java_small_rounds = a.java_big_rounds = 1
        a.java_redisson_max, a.java_warmup = 100_000, 20_000
    a.module = os.path.abspath(a.module)
    if a.redisbloom and not os.path.exists(a.redisbloom):
        log(f"RedisBloom not found at {a.redisbloom}: measured without it")
        a.redisbloom = ""
    if a.pin:
        os.sched_setaffinity(0, set(range(1, os.cpu_count() or 2)) or {0})
    if not os.path.exists(a.module):
        sys.exit(f"module not found: {a.module}")
    os.makedirs(a.out, exist_ok=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
        log("matplotlib not available: tables only, no plots")

    env = machine()
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    for p in parts:
        if p not in PARTS:
            sys.exit(f"unknown part {p!r}; known: {', '.join(PARTS)}")
    titles = {"one_item": "One-item commands vs RedisBloom 2.8.2 (and SET/GET)",
              "batch": "Batch commands vs RedisBloom 2.8.2",
              "core": "Core microbenchmarks", "accuracy": "Accuracy and memory",
              "persistence": "Persistence: SAVE and load", "merge": "BF.MERGE",
              "window": "Windowed Bloom filters (WINDOW seconds)",
              "python": "The Python package: in-process against rbloom, fastbloom-rs, pybloomfiltermmap3; bulk load",
              "java": "The Java library: in-process against Guava's BloomFilter; bulk load against BF.MADD and Redisson"}
    runners = {"one_item": part_one_item, "batch": part_batch, "core": part_core,
               "accuracy": part_accuracy, "persistence": part_persistence, "merge": part_merge,
               "window": part_window, "python": part_python, "java": part_java}
    renderers = {"one_item": render_one_item, "batch": render_batch, "core": render_core,
                 "accuracy": render_accuracy, "persistence": render_persistence,
                 "merge": render_merge, "window": render_window, "python": render_python,
                 "java": render_java}
    t_all = time.perf_counter()
    for p in parts:
        log(f"== {p}")
        lb, t = loadavg(), time.perf_counter()
        result = runners[p](a, env)
        secs, la = time.perf_counter() - t, loadavg()
        data = {"env": env, "load_before": lb, "load_after": la, "seconds": secs, "quick": a.quick,
                "result": result}
        with open(os.path.join(a.out, p + ".json"), "w") as f:
            json.dump(data, f, indent=1)
        md = f"## {titles[p]}\n\n{env_line(env, lb, la)}\n\n{renderers[p](result)}\n"
        if plt:
            try:
                pngs = []
                if p == "accuracy":
                    pngs = [p + "_fpr.png", p + "_bits.png"]
                    plot_accuracy(result, plt, *[os.path.join(a.out, x) for x in pngs])
                elif p not in ("window", "python", "java"):
                    pngs = [p + ".png"]
                    {"one_item": plot_one_item, "batch": plot_batch, "core": plot_core,
                     "persistence": plot_persistence, "merge": plot_merge}[p](result, plt, os.path.join(a.out, pngs[0]))
                if pngs:
                    md += "\n" + "\n".join(f"![{p}]({x})" for x in pngs) + "\n"
            except Exception as e:  # a plot must never lose the tables
                log(f"plot for {p} failed: {e!r}")
        with open(os.path.join(a.out, p + ".md"), "w") as f:
            f.write(md)
        print(md, flush=True)
        log(f"== {p}: {secs:.0f} s")
    print(summary(a.out), flush=True)
    log(f"bench: {time.perf_counter() - t_all:.0f} s; results in {a.out}")
