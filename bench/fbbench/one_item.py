"""Part `one_item`: one-item commands with redis-benchmark, ops/s and server
us/call, beside RedisBloom 2.8.2 and SET/GET.
"""

import csv
import io
import subprocess
import time

from .common import Server, cmdstat, finfo, fmt_items, log, med, spread, table


ONE_ITEM = [
    # name, command, kind (write: compared to SET, read: to GET), baseline
    ("SET", "SET key:__rand_int__ xxx", "write", None),
    ("GET", "GET key:__rand_int__", "read", None),
    ("BF.ADD", "BF.ADD bf __rand_int__", "write", "SET"),
    ("BF.EXISTS", "BF.EXISTS bf __rand_int__", "read", "GET"),
    ("CF.ADD", "CF.ADD cf __rand_int__", "write", "SET"),
    ("CF.ADDNX", "CF.ADDNX cf __rand_int__", "write", "SET"),
    ("CF.EXISTS", "CF.EXISTS cf __rand_int__", "read", "GET"),
    ("CF.COUNT", "CF.COUNT cf __rand_int__", "read", "GET"),
    ("CF.DEL", "CF.DEL cf __rand_int__", "write", "SET"),
]


def one_item_commands(variants):
    """ONE_ITEM with the BF commands once per Bloom variant (see --bf-variants)."""
    cmds = [list(c) for c in ONE_ITEM[:2]]
    for v, _ in variants:
        sfx, key = (f" [{v}]", f"bf:{v}") if v else ("", "bf")
        cmds += [[f"BF.ADD{sfx}", f"BF.ADD {key} __rand_int__", "write", "SET"],
                 [f"BF.EXISTS{sfx}", f"BF.EXISTS {key} __rand_int__", "read", "GET"]]
    return cmds + [list(c) for c in ONE_ITEM[4:]]


def bf_key(variant):
    return f"bf:{variant}" if variant else "bf"


def redis_benchmark(port, cmd, clients, pipeline, n, keyspace):
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients),
            "-P", str(pipeline), "-n", str(n), "-r", str(keyspace), "--csv"] + cmd.split()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    if p.returncode != 0 or not rows:
        raise RuntimeError(f"redis-benchmark failed: {p.stderr.strip()[:500]}")
    return float(rows[-1]["rps"]), float(rows[-1]["p50_latency_ms"])


def redisbloom_variant(variants):
    """The Bloom variant RedisBloom's rows pair with: the plain (or classic) one, as
    RedisBloom has one layout."""
    return next((v for v, x in variants if not x or x == ["LAYOUT", "classic"]), None)


def in_turn(targets, k):
    """The targets of measurement `k`, the first of them alternating with `k` (so
    neither module always runs first)."""
    return targets if k % 2 == 0 else targets[::-1]


def usec_per_call(c, name):
    """Server-side µs per call of a command since the last CONFIG RESETSTAT."""
    st = cmdstat(c, name.split()[0])
    return st[1] / st[0] if st and st[0] else None


def part_one_item(args, env):
    a = args
    srv = Server(a, "one-item")
    c = srv.client()
    # RedisBloom 2.8.2 beside it: same commands, same filters, measured in turn.
    rb = Server(a, "one-item-rb", module=a.redisbloom) if a.redisbloom else None
    rc = rb.client() if rb else None
    cmds = one_item_commands(a.bf_variants)
    rb_variant = redisbloom_variant(a.bf_variants)
    rb_names = {f"BF.ADD [{rb_variant}]" if rb_variant else "BF.ADD": "BF.ADD bf __rand_int__",
                f"BF.EXISTS [{rb_variant}]" if rb_variant else "BF.EXISTS": "BF.EXISTS bf __rand_int__"}
    res = {"clients": a.clients, "keyspace": a.keyspace, "rounds": a.rounds, "commands": cmds,
           "cf_add_keyspace": a.cf_add_keyspace, "cf_add_fill": a.cf_add_fill,
           "variants": a.bf_variants, "pipelines": a.pipelines, "target_s": a.run_seconds,
           "redisbloom": bool(rb), "runs": []}
    try:
        # Calibrate the request count per pipeline depth from a short SET run, then
        # adapt it per command to the rate measured in the previous round.
        rate = {}
        for p in a.pipelines:
            n0 = 20000 if p == 1 else 100000
            r0, _ = redis_benchmark(srv.port, "SET key:__rand_int__ xxx", a.clients, p, n0, a.keyspace)
            for name, *_ in cmds:
                rate[(name, p)] = r0
        for rnd in range(a.rounds):
            for p in a.pipelines:
                # A fresh key space each round: filters reserved for 1M, so no growth.
                c.flushall()
                for v, extra in a.bf_variants:
                    c.execute_command("BF.RESERVE", bf_key(v), 0.01, a.keyspace, *extra)
                c.execute_command("CF.RESERVE", "cf", a.keyspace)
                if rc:
                    rc.flushall()
                    rc.execute_command("BF.RESERVE", "bf", 0.01, a.keyspace)
                    rc.execute_command("CF.RESERVE", "cf", a.keyspace)
                for name, cmd, kind, base in cmds:
                    n = int(min(max(rate[(name, p)] * a.run_seconds, a.min_requests), a.max_requests))
                    keyspace = a.keyspace
                    if name in ("CF.ADD", "CF.ADDNX"):
                        # A cuckoo filter stores duplicates: an item added more than 2b = 4
                        # times cannot fit in its two buckets and the filter grows, however
                        # empty it is (expected after ~300k random adds from 1M). So CF.ADD
                        # draws from a larger key space, and fills at most cf_add_fill.
                        keyspace = a.cf_add_keyspace
                        n = min(n, int(a.keyspace * a.cf_add_fill))
                    # Both modules, in turn; which goes first alternates by round.
                    targets = [("ferrobloom", srv, c, cmd)]
                    if rc and (name.startswith("CF.") or name in rb_names):
                        targets.append(("redisbloom", rb, rc, rb_names.get(name, cmd)))
                    for module, server, client, command in in_turn(targets, rnd):
                        client.config_resetstat()
                        t = time.perf_counter()
                        rps, p50 = redis_benchmark(server.port, command, a.clients, p, n, keyspace)
                        wall = time.perf_counter() - t
                        if module == "ferrobloom":
                            rate[(name, p)] = rps
                        extra = {"usec_per_call": usec_per_call(client, command)}
                        if name.startswith("CF."):
                            extra["subfilters"] = int(finfo(client, "CF.INFO", "cf")["Number of filters"])
                        if name.startswith("BF."):
                            extra["links"] = int(finfo(client, "BF.INFO", command.split()[1])["Number of filters"])
                        res["runs"].append({"round": rnd, "pipeline": p, "command": name, "module": module,
                                            "requests": n, "keyspace": keyspace,
                                            "rps": rps, "p50_ms": p50, "wall_s": wall, **extra})
                        log(f"  round {rnd + 1} P{p} {name:18s} {module:10s} {rps:12,.0f} ops/s, "
                            f"{extra['usec_per_call'] or 0:.3f} us/call ({n} requests, {wall:.1f} s)")
    finally:
        srv.close()
        if rb:
            rb.close()
    return res


def one_item_runs(res, p, name, module="ferrobloom"):
    return [r for r in res["runs"] if r["pipeline"] == p and r["command"] == name
            and r.get("module", "ferrobloom") == module]


def render_one_item(res):
    rows = []
    for p in res["pipelines"]:
        for name, _, kind, base in res.get("commands", ONE_ITEM):
            runs = one_item_runs(res, p, name)
            rps = [r["rps"] for r in runs]
            if not rps:
                continue
            rbr = one_item_runs(res, p, name, "redisbloom")
            vs_rb, rng_rb = "-", ""
            if rbr:
                b = {r["round"]: r["rps"] for r in rbr}
                per = [r["rps"] / b[r["round"]] for r in runs if r["round"] in b]
                vs_rb = f"{med(rps) / med([r['rps'] for r in rbr]):.2f}"
                rng_rb = f"{min(per):.2f}-{max(per):.2f}" if per else ""
            ratio = ""
            if base:
                b = [r["rps"] for r in one_item_runs(res, p, base)]
                ratio = f"{med(rps) / med(b):.2f}" if b else "n/a"
            us = [r["usec_per_call"] for r in runs if r.get("usec_per_call")]
            us_rb = [r["usec_per_call"] for r in rbr if r.get("usec_per_call")]
            growth = ""
            if "subfilters" in runs[0]:
                growth = str(max(r["subfilters"] for r in runs + rbr))
            elif "links" in runs[0]:
                growth = str(max(r["links"] for r in runs + rbr))
            rows.append([p, name, spread(rps, lambda x: f"{x:,.0f}"),
                         spread([r["rps"] for r in rbr], lambda x: f"{x:,.0f}") if rbr else "-",
                         vs_rb, rng_rb, spread(us) if us else "-", spread(us_rb) if us_rb else "-",
                         (f"{ratio} ({base})" if base else ""),
                         f"{med([r['p50_ms'] for r in runs]):.3f}", growth])
    hdr = ["pipeline", "command", "ferrobloom ops/s median (min-max)", "RedisBloom 2.8.2 ops/s",
           "ferrobloom ÷ RedisBloom (medians)", "per round", "server µs/call ferrobloom",
           "server µs/call RedisBloom", "vs SET/GET", "p50 latency ms", "sub-filters"]
    variants = ", ".join(f"`[{v}]` = `BF.RESERVE … {' '.join(x)}`".replace(" … `", "` as is")
                         for v, x in res.get("variants", []) if v)
    return ((f"Bloom variants: {variants}. " if variants else "") +
            f"`redis-benchmark`, {res['clients']} clients, random items from a "
            f"{fmt_items(res['keyspace'])} key space (`-r {res['keyspace']}`), {res['rounds']} rounds; in "
            f"each round the commands alternate and run ~{res['target_s']} s each (request count adapted "
            f"to the previous rate). "
            + ("Each command runs on ferrobloom and on RedisBloom 2.8.2 (Debian's redis-server 7.0.15 "
               "for both) in turn, the first of the two alternating by round; servers pinned to core 0, "
               "`redis-benchmark` to the other. RedisBloom's Bloom rows use `BF.RESERVE bf 0.01 <n>` "
               "(its only layout) and pair with the classic variant. "
               if res.get("redisbloom") else "RedisBloom was not available for this run. ") +
            f"Filters are reserved for {fmt_items(res['keyspace'])} items (`BF.RESERVE bf 0.01 "
            f"{res['keyspace']}`, `CF.RESERVE cf {res['keyspace']}`) and recreated every round; "
            f"\"sub-filters\" is the most seen after a run (1 = no growth was measured). "
            f"CF.ADD and CF.ADDNX draw from a "
            f"{fmt_items(res.get('cf_add_keyspace', res['keyspace']))} key space "
            f"and each adds at most {res.get('cf_add_fill', 1):.0%} of the capacity per run (both "
            f"together stay below the ~56% load where RedisBloom's kick-out walk starts to grow a "
            f"table): a cuckoo filter keeps duplicates, and an item added more than 2b = 4 times cannot "
            f"fit in its two buckets, so with a 1M key space the filter grows after ~300k random adds "
            f"however empty it is. Server µs/call = `usec` / `calls` of `INFO commandstats` "
            f"(the command's own time, without networking and parsing; at pipeline 16 the one-core "
            f"load generator limits ops/s). vs SET/GET: median ops/s over the median of SET (writes) "
            f"or GET (reads) on ferrobloom's server.\n\n"
            + table(hdr, rows))


def plot_one_item(res, plt, path):
    fig, axes = plt.subplots(1, len(res["pipelines"]), figsize=(7 * len(res["pipelines"]), 4.2), squeeze=False)
    for ax, p in zip(axes[0], res["pipelines"]):
        names = [n for n, *_ in res.get("commands", ONE_ITEM)]
        xs = list(range(len(names)))
        for off, module, color in [(-0.2, "ferrobloom", "#1f77b4"), (0.2, "redisbloom", "#d62728")]:
            meds, lo, hi, at = [], [], [], []
            for x, n in zip(xs, names):
                v = [r["rps"] for r in one_item_runs(res, p, n, module)]
                if v:
                    meds.append(med(v))
                    lo.append(med(v) - min(v))
                    hi.append(max(v) - med(v))
                    at.append(x + off)
            if at:
                ax.bar(at, meds, width=0.4, yerr=[lo, hi], color=color, capsize=2,
                       label="ferrobloom" if module == "ferrobloom" else "RedisBloom 2.8.2")
        ax.set_xticks(xs)
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_title(f"one-item commands, pipeline {p}")
        ax.set_ylabel("ops/s (median, min-max)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
