"""Part `java`: the Java library in-process against Guava's BloomFilter, and the bulk load
of a server from Java (build + push against pipelined BF.MADD over Jedis and Redisson's
RBloomFilter): java/bench (io.ferrobloom.bench.InProcess and BulkLoad), built by `make
bench` (`make java`, then `mvn -f java/bench package`).
"""

import json
import math
import os
import shutil
import subprocess
import tempfile

from .common import Server, fmt_bytes, fmt_items, log, med, spread, table

# The heap holds Guava's filter (120 MB at 100M items) and a chunk of items at a time.
JVM_OPTS = ["-Xms1g", "-Xmx4g", "-XX:+UseParallelGC"]


def java_classpath(bench_dir):
    """The bench's classpath (its jar, the library's jar, Maven's list), or None."""
    jar = os.path.join(bench_dir, "ferrobloom-bench-0.1.0.jar")
    cp = os.path.join(bench_dir, "classpath.txt")
    if not (os.path.exists(jar) and os.path.exists(cp)):
        return None
    return ":".join([jar, open(cp).read().strip()])


def part_java(args, env):
    a = args
    cp = java_classpath(a.java_bench)
    java = shutil.which("java")
    if not cp or not java:
        log(f"java: no built java/bench in {a.java_bench} (make bench builds it) or no java: skipped")
        return {"skipped": True}
    res = {}
    with tempfile.TemporaryDirectory(prefix="ferrobloom-javabench-") as d:
        out = os.path.join(d, "inprocess.json")
        subprocess.run([java, *JVM_OPTS, "-cp", cp, "io.ferrobloom.bench.InProcess",
                        "--sizes", a.java_sizes, "--rounds", str(a.java_rounds),
                        "--small-rounds", str(a.java_small_rounds), "--big-rounds", str(a.java_big_rounds),
                        "--probes", str(a.java_probes), "--layouts", a.java_layouts,
                        "--warmup", str(a.java_warmup), "--json", out], check=True, cwd=d)
        res["inprocess"] = json.load(open(out))
        res["bulk"] = None
        if a.java_bulk_sizes:
            srv = Server(a, "java-bulk")
            try:
                out = os.path.join(d, "bulk.json")
                # Every core: the build may use both while the server waits (it is pinned to one).
                cores = set(range(os.cpu_count() or 1))
                subprocess.run([java, *JVM_OPTS, "-cp", cp, "io.ferrobloom.bench.BulkLoad",
                                "--port", str(srv.port), "--sizes", a.java_bulk_sizes,
                                "--layouts", a.java_layouts, "--threads", str(a.java_bulk_threads),
                                "--redisson-max", str(a.java_redisson_max),
                                "--warmup", str(a.java_warmup), "--json", out], check=True, cwd=d,
                               preexec_fn=lambda: os.sched_setaffinity(0, cores))
                res["bulk"] = json.load(open(out))
            finally:
                srv.close()
    return res


MODES = {"batch": "batch calls: `putAll` / `mightContainAll` of 10,000-item arrays (Guava: its loop "
                  "of `put` / `mightContain`, it has no call on many items)",
         "per_item": "one call per item: `put` / `mightContain` in a loop"}


def guava_rows(rows, n):
    return [r for r in rows if r["n"] == n and r["library"].startswith("Guava")]


def vs_guava(r, g):
    """Guava's median ns/item ÷ this row's, for add / hit / miss."""
    return [med(g[op]) / med(r[op]) for op in ("add", "hit", "miss")]


def render_java(res):
    if res.get("skipped"):
        return "Skipped (no built `java/bench` or no `java`)."
    ip = res["inprocess"]
    jvm = ip.get("jvm", {})
    out = ("In-process add and lookup from Java, ns/item (`java/bench`, `io.ferrobloom.bench.InProcess`): "
           f"ferrobloom's `BloomFilter` against Guava {ip.get('guava', '?')}'s "
           "`com.google.common.hash.BloomFilter` over `Funnels.byteArrayFunnel()`, the same `byte[]` "
           "items (`item-<i>` in UTF-8); non-scaling filters of n items at 1% (Guava: "
           "`create(funnel, n, 0.01)`), hits = min(n, "
           f"{ip.get('probes', 0):,}) added items, misses = as many never-added items drawn with a fixed "
           "seed (their share of positives = the measured FP rate); a fresh filter per way of calling; "
           "each chunk's calls timed as one span, items made outside it; a JIT warm-up round first; "
           "libraries rotated round by round; median (min-max) of "
           f"{ip.get('rounds')} round(s) (at least {ip.get('small_rounds')} up to 2M items, at most "
           f"{ip.get('big_rounds')} from 50M). Filter bytes: ferrobloom's `BF.INFO` Size, Guava's bit "
           "array (its `writeTo` length less the 6-byte header); \"at this FP rate\": Guava's bytes rescaled "
           "to ferrobloom's measured FP rate (bytes × ln(rate) ÷ ln(Guava's rate): at the optimal hash count a "
           "Bloom filter's rate is exp(-bits per item · ln²2)). \"Guava ÷\": Guava's median ns/item ÷ "
           f"ferrobloom's, add / hit / miss (above 1: ferrobloom faster). JVM: {jvm.get('java', '?')}, "
           f"{jvm.get('cpus', '?')} CPU(s) visible, {jvm.get('gc', '?')}, `{jvm.get('args', '')}`.")
    rows = ip["rows"]
    for mode in ("batch", "per_item"):
        trs = []
        for n in sorted({r["n"] for r in rows}):
            g = guava_rows(rows, n)
            for r in [x for x in rows if x["n"] == n and (x["mode"] == mode or x["library"].startswith("Guava"))]:
                ratio = ("" if r["library"].startswith("Guava") or not g else
                         " / ".join(f"{x:.2f}x" for x in vs_guava(r, g[0])))
                same = ("" if r["library"].startswith("Guava") or not g else
                        f"{r['bytes'] / same_fp_bytes(g[0]['bytes'], med(g[0]['fp']), med(r['fp'])):.4f}")
                trs.append([fmt_items(n), r["library"], spread(r["add"]), spread(r["hit"]), spread(r["miss"]),
                            f"{med(r['fp']):.5f}", f"{r['bytes']:,}", same, ratio])
        out += f"\n\n**{MODES[mode]}**\n\n" + table(
            ["n", "library", "add", "hit", "miss", "FP rate", "filter bytes", "bytes ÷ Guava's at this FP rate",
             "Guava ÷ (add / hit / miss)"], trs)
    bulk = res.get("bulk")
    if bulk:
        brs, rrs = [], []
        for b in bulk["rows"]:
            for layout, L in b["layouts"].items():
                p, m, t = L["build_push"], L["madd"], L.get("build_push_threads")
                brs.append([fmt_items(b["n"]), layout, f"{b['items_s']:.2f} s",
                            f"{p['build_seconds']:.2f} + {p['seconds'] - p['build_seconds']:.2f} s",
                            f"{t['build_seconds']:.2f} + {t['seconds'] - t['build_seconds']:.2f} s" if t else "-",
                            fmt_bytes(p["wire"]), f"{m['seconds']:.2f} s",
                            f"{m['server_command_seconds']:.2f} s" if "server_command_seconds" in m else "-",
                            fmt_bytes(m["wire"]),
                            f"{m['seconds'] / p['seconds']:.1f}x" + (f" / {m['seconds'] / t['seconds']:.1f}x" if t else ""),
                            f"{m['wire'] / p['wire']:.0f}x"])
            rd = b.get("redisson")
            if rd:
                ext = (f"{rd['seconds']:.1f} s (extrapolated from {fmt_items(rd['loaded'])} items: "
                       f"{rd['measured_seconds']:.1f} s, {fmt_bytes(rd['measured_wire'])})"
                       if rd["extrapolated"] else f"{rd['seconds']:.1f} s")
                vs = " / ".join(f"{layout} {rd['seconds'] / L['build_push']['seconds']:.1f}x"
                                for layout, L in b["layouts"].items())
                wvs = " / ".join(f"{layout} {rd['wire'] / L['build_push']['wire']:.0f}x"
                                 for layout, L in b["layouts"].items())
                rrs.append([fmt_items(b["n"]), ext, fmt_bytes(rd["wire"]), f"{rd['bits']:,} bits, "
                            f"{rd['hash_iterations']} hashes", vs, wvs])
        threads = next((L["build_push_threads"]["threads"] for b in bulk["rows"] for L in b["layouts"].values()
                        if L.get("build_push_threads")), None)
        out += ("\n\nBulk load of n items into Redis from one Java process (`io.ferrobloom.bench.BulkLoad`, "
                f"Jedis {bulk.get('jedis', '?')}, Redisson {bulk.get('redisson', '?')}), wall time end to end "
                "from the items (`item-<i>`, made in the loop; \"items\": making them alone) and bytes the "
                "server received (INFO stats `total_net_input_bytes`). build + push: a local non-scaling "
                "filter filled by `putAll` of 10,000-item arrays, then `JedisTransfer.push` (pipelined "
                "`BF.LOADCHUNK`s)"
                + (f"; again on {threads} threads as a batch job's partitions: thread t fills a filter of "
                   f"its own with arrays t, t + {threads}, t + 2·{threads}, ..., and the filters are merged "
                   "(`merge`, `BF.MERGE`'s OR of the bits; the pushed filter's chunks equal the one-thread "
                   "filter's, checked) before the push"
                   if threads else "")
                + ". `BF.MADD`: `BF.RESERVE ... LAYOUT l NONSCALING`, then 1,000 items a command, 50 commands "
                "a Jedis pipeline; its server command time: `INFO commandstats` usec of `BF.MADD` (the module's "
                "own work, the loop a local build runs too; the rest is reading and parsing the commands and the "
                "replies). The pushed filter's SCANDUMP header equals the `BF.MADD` one's (checked). "
                "The Java process may use both cores, the server is pinned to one.\n\n"
                + table(["n", "layout", "items", "build + push", f"build + push, {threads or '-'} threads",
                         "bytes in", "BF.MADD", "its server command time", "bytes in", "build + push faster (1 thread"
                         + (f" / {threads}" if threads else "") + ")", "fewer bytes"], brs))
        if rrs:
            out += ("\n\nRedisson's `RBloomFilter` over `ByteArrayCodec` (a bitmap the client sets with one "
                    "`EVAL` of `SETBIT`s per call), `tryInit(n, 0.01)`, `add` of 1,000 items a call; where it "
                    "loaded fewer than n items (into the filter sized for n), its time and bytes are "
                    "extrapolated linearly to n.\n\n"
                    + table(["n", "Redisson", "bytes in", "filter", "÷ build + push (1 thread)",
                             "bytes ÷ build + push's"], rrs))
    return out


def same_fp_bytes(nbytes, fp, to_fp):
    """A Bloom filter's bytes rescaled from FP rate `fp` to `to_fp`: at the optimal hash count
    the rate is exp(-bits/item · ln²2), so bits scale with ln(rate)."""
    if not (0 < fp < 1 and 0 < to_fp < 1):
        return float("nan")
    return nbytes * math.log(to_fp) / math.log(fp)


def same_fp_ratio_sd(fp, n, gfp, gn):
    """The standard deviation of `bytes ÷ Guava's at the same FP rate` from the two measured
    rates alone (binomial counts of n and gn misses; a rate p moves ln(bits) by
    dp / (p·|ln p|)); 0 when a count is unknown."""
    if not (n and gn and 0 < fp < 1 and 0 < gfp < 1):
        return 0.0
    rel = [math.sqrt((1 - p) / (p * k)) / abs(math.log(p)) for p, k in ((fp, n), (gfp, gn))]
    return math.hypot(*rel)


def java_summary_rows(res):
    """The Java targets as summary rows: [target, measured ratio, target ratio, status]."""
    rows = []
    if res.get("skipped"):
        return rows
    ip = res["inprocess"]["rows"]
    for n in sorted({r["n"] for r in ip}):
        g = guava_rows(ip, n)
        if not g:
            continue
        g = g[0]
        for r in [x for x in ip if x["n"] == n and not x["library"].startswith("Guava")]:
            need = (2.0 if r["mode"] == "batch" and n >= 10_000_000 else
                    1.0 if r["mode"] == "per_item" and n < 10_000_000 else None)
            if need is not None:
                v = vs_guava(r, g)
                rows.append([f"Java {r['library']} {'batches' if r['mode'] == 'batch' else 'one item per call'} "
                             f"on {fmt_items(n)}: Guava ns/item ÷ ferrobloom's, add / hit / miss",
                             " / ".join(f"{x:.2f}" for x in v), f"≥ {need:g}",
                             "met" if min(v) >= need else "**not met**"])
            if r["mode"] == "batch":
                fp, gfp = med(r["fp"]), med(g["fp"])
                mem = r["bytes"] / same_fp_bytes(g["bytes"], gfp, fp)
                sd = same_fp_ratio_sd(fp, r.get("miss_probes"), gfp, g.get("miss_probes"))
                verdict = ("met" if mem <= 1 else
                           f"met within the measurement's precision (≤ 1 + 2σ, σ = {sd:.4f})"
                           if mem <= 1 + 2 * sd else "**not met**")
                rows.append([f"Java {r['library']} memory on {fmt_items(n)}: filter bytes ÷ Guava's at the same "
                             f"measured FP rate ({r['bytes']:,} at {fp:.5f}; Guava {g['bytes']:,} at {gfp:.5f})",
                             f"{mem:.4f}", "≤ 1", verdict])
    bulk = res.get("bulk")
    for b in (bulk or {}).get("rows", []):
        rd = b.get("redisson")
        for layout, L in b["layouts"].items():
            ways = [("", L["build_push"])]
            if L.get("build_push_threads"):
                ways.append((f" ({L['build_push_threads']['threads']} threads)", L["build_push_threads"]))
            peers = [("pipelined BF.MADD (Jedis)", L["madd"])]
            if rd:
                peers.append(("Redisson RBloomFilter" + (" (extrapolated)" if rd["extrapolated"] else ""), rd))
            for wname, p in ways:
                for name, x in peers:
                    ratio = x["seconds"] / p["seconds"]
                    rows.append([f"Java bulk load {fmt_items(b['n'])}, {layout}: {name} time ÷ build+push{wname}",
                                 f"{ratio:.1f}", "≥ 5 (at 100M)",
                                 (f"met at {fmt_items(b['n'])}" if ratio >= 5 else "**not met**")])
            for name, x in peers:
                rows.append([f"Java bulk load {fmt_items(b['n'])}, {layout}: {name} bytes in ÷ build+push's",
                             f"{x['wire'] / L['build_push']['wire']:.0f}", "(reported)", "-"])
    return rows
