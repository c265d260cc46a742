#!/usr/bin/env python3
"""Compares `make bench` result directories measured on two builds (before, after).

    python3 bench/compare.py BEFORE_DIR [BEFORE_DIR ...] -- AFTER_DIR [AFTER_DIR ...]

Each side may have several runs (directories of <part>.json written by bench/run.py --out);
a cell is the median over a side's runs. Prints Markdown tables of the core's ns per
operation, the server's batch ns per item, the one-item server microseconds per call,
BF.MERGE, SAVE/load and windowed filters,
each row with after/before, and each table's geometric mean of those ratios. Run the same
build on both sides to see the noise of the machine: a ratio inside it is no change.
"""

import json
import os
import statistics as st
import sys


def _result(d, part):
    path = os.path.join(d, part + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["result"]


def core(d):
    r = _result(d, "core")
    out = {}
    for row in (r or {}).get("rows", []):
        if row.get("kind") == "core_meta" or "bytes" not in row:
            continue
        name = f"{row['kind'][5:]} {row.get('layout', '')} {row['bytes']:,} B".replace("  ", " ")
        for k, v in row.items():
            if k.endswith("_ns_median") and not k.startswith("floor"):
                out[f"{name} {k[:-10]}"] = v
    return out


def batch(d):
    r = _result(d, "batch")
    return {
        f"{row['command']} {row['capacity']:,} {row['phase']}": st.median(row["ns_per_item"])
        for row in (r or {}).get("rows", [])
        if row.get("ns_per_item")
    }


def one_item(d):
    r = _result(d, "one_item")
    runs = {}
    for run in (r or {}).get("runs", []):
        if run["module"] == "ferrobloom":
            runs.setdefault(f"{run['command']} pipeline {run['pipeline']}", []).append(run["usec_per_call"])
    return {k: st.median(v) for k, v in runs.items()}


def merge(d):
    r = _result(d, "merge")
    return {
        f"BF.MERGE {row['layout']} {row['data_bytes'] >> 20} MiB, {row['case']} (server µs)": st.median(row["usec"])
        for row in (r or {}).get("rows", [])
        if row.get("usec")
    }


def persistence(d):
    r = _result(d, "persistence")
    out = {}
    for run in (r or {}).get("runs", []):
        if run["kind"] == "filter":
            for k in ("create_s", "save_s", "load_s"):
                out.setdefault(f"{run['data_bytes'] >> 20} MiB filter, {k[:-2]} (s)", []).append(run[k])
    return {k: st.median(v) for k, v in out.items()}


def window(d):
    r = _result(d, "window")
    out = {}
    names = {"bw": "windowed", "bf": "plain", "two": "two plain keys"}
    for row in (r or {}).get("rows", []):
        for what in ("fill_ns", "lookup_ns"):
            for k, v in row.get(what, {}).items():
                if k in names and v:
                    out[f"{names[k]} {row['capacity']:,}/window, {what[:-3]} (ns/item)"] = st.median(v)
    return out


TABLES = [("core, ns per operation", core), ("server batch, ns per item", batch),
          ("server one item, µs per call (INFO commandstats)", one_item),
          ("BF.MERGE", merge), ("persistence", persistence), ("windowed filters", window)]


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    i = argv.index("--")
    before, after = argv[:i], argv[i + 1:]
    if not before or not after:
        sys.exit(__doc__)
    for title, read in TABLES:
        b_runs, a_runs = [read(d) for d in before], [read(d) for d in after]
        keys = [k for k in b_runs[0] if all(k in x for x in b_runs + a_runs)]
        if not keys:
            continue
        print(f"\n### {title}\n\n| measurement | before | after | after / before |\n|---|---|---|---|")
        ratios = []
        for k in keys:
            b = st.median(x[k] for x in b_runs)
            a = st.median(x[k] for x in a_runs)
            ratios.append(a / b)
            print(f"| {k} | {b:.3g} | {a:.3g} | {a / b:.2f} |")
        print(f"| **geometric mean** | | | **{st.geometric_mean(ratios):.3f}** |")


if __name__ == "__main__":
    main(sys.argv[1:])
