"""In-process batch add and lookup from Python (issue 29), ns/item: ferrobloom's
package against rbloom 1.5.4, fastbloom-rs 0.5.10 and pybloomfiltermmap3 0.6.3,
side by side in one process, libraries interleaved round by round.

Run by `make bench BENCH_ARGS="--parts python"` (bench/run.py's `python` part,
with a venv outside the clone holding the package and the peers), or by hand:
  pip install ./python rbloom==1.5.4 fastbloom-rs==0.5.10 pybloomfiltermmap3==0.6.3
  python bench/python_inprocess.py --sizes 1000000 --rounds 3 [--json out.json]

Per size n: non-scaling filters of n items at 1%; items b"item-<i>", lookups of
the n items (hits) and of min(n, --probes) never-added items (misses, which give
the measured FP rate), new bytes objects for every timed call (Python caches a bytes
object's hash(), which rbloom hashes with by default). Each round builds every library's filter afresh. Batch
calls where the library has them: rbloom and pybloomfiltermmap3 have no batch
lookup (a list comprehension of `in`). Sizes up to 2M items run at least
--small-rounds rounds (9): a round takes seconds there, and from one run to the
next a library's median over 3 rounds moved by up to 30% on a shared 2-core
machine, enough to swap two libraries' order. Memory: the filter's bytes as the
library reports them (rbloom size_in_bits/8, fastbloom-rs len(get_bytes()),
pybloomfiltermmap3 num_bits/8, ferrobloom INFO Size)."""

import argparse
import gc
import json
import statistics
import sys
import time


def libraries():
    import ferrobloom

    libs = {}

    def fb(layout):
        def make(n):
            f = ferrobloom.BloomFilter(n, 0.01, layout=layout, nonscaling=True)
            return (f, f.update, f.contains_many, lambda: f.info()["Size"])
        return make

    libs["ferrobloom blocked"] = fb("blocked")
    libs["ferrobloom classic"] = fb("classic")
    try:
        import rbloom

        def rb(n):
            b = rbloom.Bloom(n, 0.01)
            return (b, b.update, lambda xs: [x in b for x in xs], lambda: b.size_in_bits // 8)
        libs["rbloom %s" % getattr(rbloom, "__version__", "1.5.4")] = rb
    except ImportError:
        print("rbloom not installed: skipped", file=sys.stderr)
    try:
        import fastbloom_rs

        def fr(n):
            b = fastbloom_rs.BloomFilter(n, 0.01)
            return (b, b.add_bytes_batch, b.contains_bytes_batch, lambda: len(b.get_bytes()))
        libs["fastbloom-rs 0.5.10"] = fr
    except ImportError:
        print("fastbloom-rs not installed: skipped", file=sys.stderr)
    try:
        import pybloomfilter

        def pm(n):
            b = pybloomfilter.BloomFilter(n, 0.01)
            return (b, b.update, lambda xs: [x in b for x in xs], lambda: b.num_bits // 8)
        libs["pybloomfiltermmap3 0.6.3"] = pm
    except ImportError:
        print("pybloomfiltermmap3 not installed: skipped", file=sys.stderr)
    return libs


def fresh(fmt, n):
    """`n` new bytes objects `fmt % i` (built before the timer starts)."""
    return [fmt % i for i in range(n)]


def timed(fn, arg):
    gc.collect()
    t = time.perf_counter()
    r = fn(arg)
    return time.perf_counter() - t, r


def run(sizes, rounds, probes_max, small_rounds=9):
    libs = libraries()
    out = []
    for n in sizes:
        m = min(n, probes_max)
        rows = {name: {"add": [], "hit": [], "miss": [], "fp": None, "bytes": None} for name in libs}
        n_rounds = max(rounds, small_rounds) if n <= 2_000_000 else rounds
        for rnd in range(n_rounds):
            for name, make in libs.items():
                f, add, contains, size = make(n)
                row = rows[name]
                # Fresh item objects for every timed call, as items come from a
                # client: a library that hashes with Python's hash() (rbloom's
                # default) would otherwise reuse the hash each bytes object caches.
                t, _ = timed(add, fresh(b"item-%d", n))
                row["add"].append(t * 1e9 / n)
                t, r = timed(contains, fresh(b"item-%d", n))
                row["hit"].append(t * 1e9 / n)
                if not all(r):
                    sys.exit(f"{name}: a false negative at n={n}")
                del r
                t, r = timed(contains, fresh(b"none-%d", m))
                row["miss"].append(t * 1e9 / m)
                row["fp"] = sum(map(bool, r)) / m
                row["bytes"] = int(size())
                del f, add, contains, size, r
                gc.collect()
                print(f"n={n} round {rnd + 1}/{n_rounds} {name}: add {row['add'][-1]:.0f} "
                      f"hit {row['hit'][-1]:.0f} miss {row['miss'][-1]:.0f} ns/item, "
                      f"fp {row['fp']:.4f}, {row['bytes']} bytes", file=sys.stderr, flush=True)
        gc.collect()
        for name, row in rows.items():
            out.append({"n": n, "library": name, **row})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000,100000000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small-rounds", type=int, default=9, help="least rounds for sizes up to 2M")
    ap.add_argument("--probes", type=int, default=10_000_000, help="most never-added lookups per size")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    rows = run([int(float(x)) for x in a.sizes.split(",")], a.rounds, a.probes, a.small_rounds)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    for r in rows:
        print("n=%-10d %-26s add %6.0f  hit %6.0f  miss %6.0f ns/item  fp %.4f  %d bytes" % (
            r["n"], r["library"], statistics.median(r["add"]), statistics.median(r["hit"]),
            statistics.median(r["miss"]), r["fp"], r["bytes"]))


if __name__ == "__main__":
    main()
