#!/usr/bin/env python3
"""The table of docs/performance.md ("Which classic derivation, and its speed") from
bench/results/classic_derivation_ab.jsonl: interleaved runs of `bench_core --parts bloom
--layouts classic --sizes 16K,256K,4M,64M --rounds 3` (pinned with `taskset -c 1`) built at
02834f7 ("before", code 0), 68a3827 ("main", code 4 on every classic link) and the
derivation rule ("after"). Per size and operation: median and min over every round, and
the median over runs of the ratio of one run's median to the same alternation's before."""
import json
import statistics as st
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/classic_derivation_ab.jsonl"
ops = {"add": "add", "contains_member": "contains member", "contains_absent": "contains absent",
       "contains_mixed": "contains mixed", "contains_mixed_batch_prefetch": "batch+prefetch"}
rounds, runs = {}, {}
for line in open(path):
    r = json.loads(line)
    for op in ops:
        rounds.setdefault((r["arm"], r["target_bytes"], op), []).extend(r[op])
        runs.setdefault((r["series"], r["run"], r["target_bytes"], op), {})[r["arm"]] = st.median(r[op])


def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def ratios(s, op, arm):
    return st.median(v[arm] / v["before"] for k, v in runs.items() if k[2:] == (s, op) and len(v) == 3)


print("| size | operation | 02834f7, code 0 (median / min ns) | main, code 4 | rule, code 0 | rule / 02834f7 (median, min, paired) | main / 02834f7 (median, min, paired) |")
print("|---|---|---|---|---|---|---|")
for s in sorted({k[1] for k in rounds}):
    for op, name in ops.items():
        med = {a: st.median(rounds[(a, s, op)]) for a in ("before", "main", "after")}
        low = {a: min(rounds[(a, s, op)]) for a in ("before", "main", "after")}
        cell = lambda a: f"{med[a]:.1f} / {low[a]:.1f}"
        rel = lambda a: f"{med[a] / med['before']:.2f}, {low[a] / low['before']:.2f}, {ratios(s, op, a):.2f}"
        print(f"| {size(s)} | {name} | {cell('before')} | {cell('main')} | {cell('after')} | {rel('after')} | {rel('main')} |")
