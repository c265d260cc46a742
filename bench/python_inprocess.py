"""In-process add and lookup from Python, ns/item: ferrobloom's package against
rbloom 1.5.4, fastbloom-rs 0.5.10 and pybloomfiltermmap3 0.6.3, side by side in
one process, libraries interleaved round by round, each called its fastest way.

Three ways of calling, each with a fresh filter:
  batch     one call with all n items (a list comprehension of `in` where a
            library has no batch lookup: rbloom, pybloomfiltermmap3);
  chunks    the same calls on chunks of 10,000 items, as a program streaming
            items calls them;
  per_item  one call per item in a Python loop, as most code uses a filter:
            `for x in xs: add(x)` with the bound method, `[x in f for x in xs]`
            (fastbloom-rs: its native object's `add_bytes` / `contains_bytes`,
            which skip its Python wrapper).
fastbloom-rs's batches are its native object's `add_bytes_batch` /
`contains_bytes_batch` (the wrapper's `contains_bytes_batch` with its default
`check_type=True` first checks every item's type in Python: +31%).

Run by `make bench BENCH_ARGS="--parts python"` (bench/run.py's `python` part,
with a venv outside the clone holding the package and the peers), or by hand:
  pip install ./python rbloom==1.5.4 fastbloom-rs==0.5.10 pybloomfiltermmap3==0.6.3
  python bench/python_inprocess.py --sizes 1000000 --rounds 3 [--json out.json]

Per size n: non-scaling filters of n items at 1%; items b"item-<i>", lookups of
the n items (hits) and of min(n, --probes) never-added items (misses, which give
the measured FP rate), new bytes objects for every timed call (Python caches a
bytes object's hash(), which rbloom hashes with by default). Sizes up to 2M
items run at least --small-rounds rounds (9): a round takes seconds there, and
from one run to the next a library's median over 3 rounds moved by up to 30% on
a shared 2-core machine. Memory: the filter's bytes as the library reports them
(rbloom size_in_bits/8, fastbloom-rs len(get_bytes()), pybloomfiltermmap3
num_bits/8, ferrobloom INFO Size). Also: one ferrobloom filter looked up by two
threads at once against one thread (`contains_many` of 10,000-item chunks),
the throughput ratio (2.0: the two ran fully in parallel). The machine (CPU
model, caches from lscpu, load average) is recorded with the figures."""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time

CHUNK = 10_000
MODES = ("batch", "chunks", "per_item")


def machine():
    """CPU model, core count and cache sizes (lscpu), load average now."""
    m = {"cpu": "unknown", "cores": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"}).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            k, v = k.strip(), " ".join(v.split())
            if k == "Model name":
                m["cpu"] = v
            elif k in ("L1d cache", "L2 cache", "L3 cache"):
                m[k.split()[0]] = v
    except OSError:
        pass
    try:
        m["load"] = round(os.getloadavg()[0], 1)
    except OSError:
        m["load"] = None
    return m


def machine_line(m):
    return "%s, %s cores, L1d %s, L2 %s, L3 %s" % (
        m.get("cpu"), m.get("cores"), m.get("L1d", "?"), m.get("L2", "?"), m.get("L3", "?"))


class Lib:
    """One library's filter and its fastest calls: `add_batch(xs)`,
    `contains_batch(xs) -> list`, `add_loop(xs)`, `contains_loop(xs) -> list`."""


def libraries():
    import ferrobloom

    libs = {}

    def fb(layout):
        def make(n):
            f = ferrobloom.BloomFilter(n, 0.01, layout=layout, nonscaling=True)
            lib = Lib()
            lib.obj = f
            lib.add_batch, lib.contains_batch = f.update, f.contains_many

            def add_loop(xs, add=f.add):
                for x in xs:
                    add(x)

            lib.add_loop = add_loop
            lib.contains_loop = lambda xs: [x in f for x in xs]
            lib.size = lambda: f.info()["Size"]
            return lib
        return make

    libs["ferrobloom blocked"] = fb("blocked")
    libs["ferrobloom classic"] = fb("classic")
    try:
        import rbloom

        def rb(n):
            b = rbloom.Bloom(n, 0.01)
            lib = Lib()
            lib.obj = b
            lib.add_batch = b.update
            lib.contains_batch = lambda xs: [x in b for x in xs]

            def add_loop(xs, add=b.add):
                for x in xs:
                    add(x)

            lib.add_loop = add_loop
            lib.contains_loop = lib.contains_batch
            lib.size = lambda: b.size_in_bits // 8
            return lib
        libs["rbloom %s" % getattr(rbloom, "__version__", "1.5.4")] = rb
    except ImportError:
        print("rbloom not installed: skipped", file=sys.stderr)
    try:
        import fastbloom_rs

        def fr(n):
            b = fastbloom_rs.BloomFilter(n, 0.01)
            native = getattr(b, "_py_bloom", None)
            lib = Lib()
            lib.obj = b
            if native is not None:
                lib.add_batch, lib.contains_batch = native.add_bytes_batch, native.contains_bytes_batch
                add, contains = native.add_bytes, native.contains_bytes
            else:
                lib.add_batch = b.add_bytes_batch
                lib.contains_batch = lambda xs: b.contains_bytes_batch(xs, check_type=False)
                add, contains = b.add_bytes, b.contains_bytes

            def add_loop(xs, add=add):
                for x in xs:
                    add(x)

            lib.add_loop = add_loop
            lib.contains_loop = lambda xs, c=contains: [c(x) for x in xs]
            lib.size = lambda: len(b.get_bytes())
            return lib
        libs["fastbloom-rs 0.5.10"] = fr
    except ImportError:
        print("fastbloom-rs not installed: skipped", file=sys.stderr)
    try:
        import pybloomfilter

        def pm(n):
            b = pybloomfilter.BloomFilter(n, 0.01)
            lib = Lib()
            lib.obj = b
            lib.add_batch = b.update
            lib.contains_batch = lambda xs: [x in b for x in xs]

            def add_loop(xs, add=b.add):
                for x in xs:
                    add(x)

            lib.add_loop = add_loop
            lib.contains_loop = lib.contains_batch
            lib.size = lambda: b.num_bits // 8
            return lib
        libs["pybloomfiltermmap3 0.6.3"] = pm
    except ImportError:
        print("pybloomfiltermmap3 not installed: skipped", file=sys.stderr)
    return libs


def fresh(fmt, n):
    """`n` new bytes objects `fmt % i` (built before the timer starts)."""
    return [fmt % i for i in range(n)]


def chunked(xs):
    return [xs[i:i + CHUNK] for i in range(0, len(xs), CHUNK)]


def timed(fn, arg):
    gc.collect()
    t = time.perf_counter()
    r = fn(arg)
    return time.perf_counter() - t, r


def calls(lib, mode):
    """(add, contains) taking the whole item list, for a way of calling."""
    if mode == "batch":
        return lib.add_batch, lib.contains_batch
    if mode == "per_item":
        return lib.add_loop, lib.contains_loop

    def add(chunks):
        for c in chunks:
            lib.add_batch(c)

    def contains(chunks):
        out = []
        for c in chunks:
            out += lib.contains_batch(c)
        return out
    return add, contains


def items_for(mode, fmt, n):
    xs = fresh(fmt, n)
    return chunked(xs) if mode == "chunks" else xs


def run(sizes, rounds, probes_max, small_rounds=9, modes=MODES):
    libs = libraries()
    out = []
    for n in sizes:
        m = min(n, probes_max)
        rows = {(name, mode): {"add": [], "hit": [], "miss": [], "fp": None, "bytes": None}
                for name in libs for mode in modes}
        n_rounds = max(rounds, small_rounds) if n <= 2_000_000 else rounds
        for rnd in range(n_rounds):
            for mode in modes:
                for name, make in libs.items():
                    lib = make(n)
                    add, contains = calls(lib, mode)
                    row = rows[(name, mode)]
                    # Fresh item objects for every timed call, as items come
                    # from a client: a library that hashes with Python's hash()
                    # (rbloom's default) would otherwise reuse the hash each
                    # bytes object caches.
                    t, _ = timed(add, items_for(mode, b"item-%d", n))
                    row["add"].append(t * 1e9 / n)
                    t, r = timed(contains, items_for(mode, b"item-%d", n))
                    row["hit"].append(t * 1e9 / n)
                    if not all(r):
                        sys.exit(f"{name} ({mode}): a false negative at n={n}")
                    del r
                    t, r = timed(contains, items_for(mode, b"none-%d", m))
                    row["miss"].append(t * 1e9 / m)
                    row["fp"] = sum(map(bool, r)) / m
                    row["bytes"] = int(lib.size())
                    del lib, add, contains, r
                    gc.collect()
                    print(f"n={n} round {rnd + 1}/{n_rounds} {mode} {name}: add {row['add'][-1]:.0f} "
                          f"hit {row['hit'][-1]:.0f} miss {row['miss'][-1]:.0f} ns/item, "
                          f"fp {row['fp']:.4f}, {row['bytes']} bytes", file=sys.stderr, flush=True)
        gc.collect()
        for (name, mode), row in rows.items():
            out.append({"n": n, "library": name, "mode": mode, **row})
    return out


def threads(n, rounds):
    """Lookups of one shared ferrobloom filter (classic) from two threads at
    once against one thread: (ns/item one thread, ns/item two threads, the
    throughput ratio), medians over `rounds`."""
    import ferrobloom

    f = ferrobloom.BloomFilter(n, 0.01, nonscaling=True)
    f.update(fresh(b"item-%d", n))
    work = [chunked(fresh(b"item-%d", n)) for _ in range(2)]

    def look(chunks):
        for c in chunks:
            f.contains_many(c)

    one, two = [], []
    for _ in range(rounds):
        gc.collect()
        t = time.perf_counter()
        look(work[0])
        one.append((time.perf_counter() - t) * 1e9 / n)
        ts = [threading.Thread(target=look, args=(w,)) for w in work]
        gc.collect()
        t = time.perf_counter()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        two.append((time.perf_counter() - t) * 1e9 / (2 * n))
    a, b = statistics.median(one), statistics.median(two)
    return {"n": n, "one_thread": one, "two_threads": two, "ratio": a / b}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small-rounds", type=int, default=9, help="least rounds for sizes up to 2M")
    ap.add_argument("--probes", type=int, default=10_000_000, help="most never-added lookups per size")
    ap.add_argument("--modes", default=",".join(MODES), help="ways of calling: " + ", ".join(MODES))
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    sizes = [int(float(x)) for x in a.sizes.split(",")]
    modes = [x for x in a.modes.split(",") if x]
    m0 = machine()
    rows = run(sizes, a.rounds, a.probes, a.small_rounds, modes)
    thr = threads(min(sizes), max(a.rounds, 3))
    m1 = machine()
    res = {"machine": {**m0, "load_before": m0.get("load"), "load_after": m1.get("load")},
           "rows": rows, "threads": thr}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print("machine: %s; load average %s before, %s after" % (machine_line(m0), m0.get("load"), m1.get("load")))
    for r in rows:
        print("n=%-10d %-9s %-26s add %6.0f  hit %6.0f  miss %6.0f ns/item  fp %.4f  %d bytes" % (
            r["n"], r["mode"], r["library"], statistics.median(r["add"]), statistics.median(r["hit"]),
            statistics.median(r["miss"]), r["fp"], r["bytes"]))
    print("two threads on one filter: %.2fx one thread's lookups (n=%d)" % (thr["ratio"], thr["n"]))


if __name__ == "__main__":
    main()
