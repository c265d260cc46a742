#!/usr/bin/env python3
r"""ferrobloom benchmark driver (`make bench`).

Runs every part of the benchmark, prints Markdown tables and writes them to
bench/results/<part>.md (raw data: <part>.json, plots: <part>*.png), then
bench/results/summary.md with each target as a ratio and met / not met.

Parts (select with --parts, comma-separated; default all, in this order):
  one_item     BF.ADD/BF.EXISTS/CF.ADD/CF.ADDNX/CF.EXISTS/CF.COUNT/CF.DEL with redis-benchmark,
               ops/s and server us/call, beside RedisBloom 2.8.2 (--redisbloom) and SET/GET
  batch        BF.MADD/CF.INSERT filling 1M/10M/100M filters to capacity, then BF.MEXISTS/
               CF.MEXISTS on them, 1000 items per command, server ns/item from INFO
               commandstats, beside RedisBloom 2.8.2 and the random-read reference
               (crates/ferrobloom-core/examples/bench_memref.rs)
  core         crates/ferrobloom-core/examples/bench_core.rs: ns per add/contains by filter size, hashing cost
  accuracy     crates/ferrobloom-core/examples/bench_accuracy.rs: FPR and bits/item (Bloom, cuckoo)
  persistence  SAVE and restart-load time of a 1 GiB filter vs a 1 GiB string
  merge        BF.MERGE of two filters of random bits (16 MiB to 1 GiB each), into a new key
               and into an existing filter: server time and GB/s of bytes touched
  window       windowed filters (see part_window)
  python       the Python package (--python: a venv's interpreter with ferrobloom, rbloom 1.5.4,
               fastbloom-rs 0.5.10, pybloomfiltermmap3 0.6.3 and redis; the Makefile makes it):
               in-process add/lookup ns/item at 1M/10M, as one batch, in chunks of 10,000
               and one call per item, and two threads on one filter (bench/python_inprocess.py)
               and bulk load build+push vs pipelined BF.MADD, pull, local lookups vs
               BF.MEXISTS (bench/python_bulkload.py)
The summary is rebuilt from every <part>.json present, so re-running one part
(e.g. `make bench BENCH_ARGS="--parts batch"`) refreshes the summary too.

The module and the examples must be built first (the Makefile's bench target does it):
  cargo build --release -p ferrobloom-core --example bench_core \
      --example bench_accuracy --example bench_memref --example bench_window \
      --example bench_window_memory
  cargo build --release            # the module (the only crate that uses Redis' allocator)
  python3 bench/run.py --module $CARGO_TARGET_DIR/release/libferrobloom.so \
      --examples $CARGO_TARGET_DIR/release/examples

Every knob has a flag (see --help); --quick shrinks everything for a smoke test.

Comparing Bloom layouts: `--layouts classic,blocked` adds a row per layout to the core and
accuracy tables (the names must be known to examples/common/layouts.rs, the one place that
maps a name to a constructor); `--bf-variants 'classic:;blocked:LAYOUT blocked'` runs the
one-item and batch BF commands once per variant, each on a filter created with
`BF.RESERVE key 0.01 <n> <extra args>` (whatever syntax the module gets for its layout).
Pass them through make with BENCH_ARGS="...".
"""

import argparse
import math
import csv
import datetime
import io
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PARTS = ["one_item", "batch", "core", "accuracy", "persistence", "merge", "window", "python"]
MiB = 1 << 20
GiB = 1 << 30


# --------------------------------------------------------------------------- utilities


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def med(v):
    return statistics.median(v) if v else float("nan")


def fmt_num(x, digits=3):
    """Compact number: 3 significant digits, thousands separators for big ones."""
    if x is None or (isinstance(x, float) and x != x):
        return "n/a"
    if x == 0:
        return "0"
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 0.01:
        return f"{x:.{digits}g}" if ax < 100 else f"{x:.0f}"
    return f"{x:.{digits - 1}e}"


def fmt_bytes(b):
    for unit, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 0.999 * (1 << s):
            v = b / (1 << s)
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{b} B"


def fmt_items(n):
    for unit, s in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= s:
            v = n / s
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f}{unit}"
    return str(n)


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def spread(vals, fmt=fmt_num):
    """'median (min-max)' of samples."""
    if not vals:
        return "n/a"
    if len(vals) == 1:
        return fmt(vals[0])
    return f"{fmt(med(vals))} ({fmt(min(vals))}-{fmt(max(vals))})"


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except Exception:
        return "unknown"


def machine():
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
        thp = thp[thp.index("[") + 1:thp.index("]")]
    except Exception:
        thp = "unknown"
    try:
        rv = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
        rv = next((w.split("=")[1] for w in rv if w.startswith("v=")), "?")
    except Exception:
        rv = "?"
    return {"cpu": cpu, "cores": os.cpu_count(), "thp": thp, "redis": rv, "commit": git_rev(),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}


def loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def env_line(env, load_before, load_after):
    return (f"_{env['date']}, commit {env['commit']}, {env['cpu']} ({env['cores']} cores), "
            f"Redis {env['redis']}, THP {env['thp']}; load average {load_before:.1f} before, "
            f"{load_after:.1f} after this part._")


# --------------------------------------------------------------------------- redis-server


class Server:
    """A redis-server with the module on a free local port, in its own directory."""

    def __init__(self, args, name, extra=(), workdir=None, module=None):
        self.args = args
        self.module = module or args.module
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix=f"ferrobloom-bench-{name}-")
        self.port = free_port()
        self.extra = list(extra)
        self.proc = None
        self.start()

    def cmdline(self):
        # Servers on core 0, this process and its load generators on the others.
        pin = ["taskset", "-c", "0"] if getattr(self.args, "pin", False) else []
        return pin + ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                      "--dir", self.dir, "--save", "", "--appendonly", "no",
                      "--protected-mode", "no", "--logfile", os.path.join(self.dir, "redis.log"),
                      "--loadmodule", self.module] + self.extra

    def start(self, timeout=120.0):
        """Starts the server; returns the seconds until it answered PING (not -LOADING)."""
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.cmdline(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited ({self.proc.returncode}); see {self.dir}/redis.log:\n"
                                   + self.log_tail())
            try:
                c = redis.Redis(port=self.port, socket_connect_timeout=0.2, socket_timeout=5)
                if c.ping():
                    c.close()
                    return time.perf_counter() - t0
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            except redis.BusyLoadingError:
                pass
            except redis.ResponseError as e:
                if "LOADING" not in str(e):
                    raise
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError("redis-server did not answer in time")
            time.sleep(0.002)

    def log_tail(self):
        try:
            return "".join(open(os.path.join(self.dir, "redis.log")).readlines()[-20:])
        except OSError:
            return ""

    def client(self):
        return redis.Redis(port=self.port, socket_timeout=None)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.client().shutdown(nosave=True)
            except Exception:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def close(self):
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def check_module_allocator(c, min_bytes):
    """The module must allocate through Redis (memory it allocated elsewhere would not count)."""
    used = int(c.info("memory")["used_memory"])
    if used < min_bytes:
        raise RuntimeError(f"used_memory {used} < {min_bytes}: is the loaded module the "
                           "module built from this repository (cargo build --release)?")
    return used


def finfo(c, cmd, key):
    """BF.INFO / CF.INFO as {field: value}, whatever shape redis-py parsed it into."""
    r = c.execute_command(cmd, key)
    if not isinstance(r, dict):
        r = dict(zip(r[0::2], r[1::2]))
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in r.items()}


def run_example(args, name, *argv):
    exe = os.path.join(args.examples, name)
    cmd = [exe] + [str(a) for a in argv]
    log(f"  $ {name} {' '.join(str(a) for a in argv)}")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{name} failed with exit code {p.returncode}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


# --------------------------------------------------------------------------- part 1


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


# --------------------------------------------------------------------------- part 2


def items(prefix, start, n):
    return [b"%s%d" % (prefix, i) for i in range(start, start + n)]


def resp(args):
    """One command in RESP (the wire protocol), from bytes/str arguments."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def send_batches(port, cmd, key, batches):
    """Sends each batch as one command through `redis-cli --pipe` (C speed: encoding 1000s
    of arguments per command with redis-py would dominate the run time)."""
    head = [cmd, key] + (["ITEMS"] if cmd == "CF.INSERT" else [])
    data = b"".join(resp(head + b) for b in batches)
    p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"], input=data,
                       capture_output=True, timeout=600)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0 or "errors: 0," not in out or f"replies: {len(batches)}" not in out:
        raise RuntimeError(f"{cmd}: redis-cli --pipe: {out.strip()[-300:]} {p.stderr.decode()[-300:]}")


def cmdstat(c, cmd):
    st = c.info("commandstats").get("cmdstat_" + cmd.lower())
    if not st:
        return None
    return int(st["calls"]), int(st["usec"])


def timed_send(port, client, cmd, key, batches):
    """Sends the batches; returns (calls, usec) of `cmd` on the server for them."""
    client.config_resetstat()
    send_batches(port, cmd, key, batches)
    return cmdstat(client, cmd)


def part_batch(args, env):
    a = args
    bsz = a.batch_items
    srv = Server(a, "batch")
    c = srv.client()
    # RedisBloom 2.8.2 beside it, same filters, same batches, measured in turn.
    rb = Server(a, "batch-rb", module=a.redisbloom) if a.redisbloom else None
    rc = rb.client() if rb else None
    res = {"batch_items": bsz, "calls": a.batch_calls, "rounds": a.rounds, "error": 0.01,
           "variants": a.bf_variants, "redisbloom": bool(rb), "fill_fraction": a.batch_fill,
           "rows": [], "memref": []}
    rb_variant = redisbloom_variant(a.bf_variants)
    try:
        for cap in a.batch_capacities:
            c.flushall()
            if rc:
                rc.flushall()
                rc.execute_command("BF.RESERVE", "bf", 0.01, cap)
                rc.execute_command("CF.RESERVE", "cf", cap)
            # (label, command, key, RedisBloom's key or None): BF per Bloom variant, then CF.
            fills, probes = [], []
            for v, extra in a.bf_variants:
                c.execute_command("BF.RESERVE", bf_key(v), 0.01, cap, *extra)
                sfx = f" [{v}]" if v else ""
                rbk = "bf" if rc and v == rb_variant else None
                fills.append((f"BF.MADD{sfx}", "BF.MADD", bf_key(v), rbk))
                probes.append((f"BF.MEXISTS{sfx}", "BF.MEXISTS", bf_key(v), rbk))
            c.execute_command("CF.RESERVE", "cf", cap)
            fills.append(("CF.INSERT", "CF.INSERT", "cf", "cf" if rc else None))
            probes.append(("CF.MEXISTS", "CF.MEXISTS", "cf", "cf" if rc else None))
            # The fill is the measurement of the adds: every filter goes from empty to
            # `fill` items in steps, each step sent to ferrobloom and RedisBloom in turn
            # (which goes first alternates), server time summed per tenth of the fill.
            fill = int(cap * a.batch_fill)
            tenths = {(label, m): [[0, 0] for _ in range(10)] for label, *_ in fills for m in ("fb", "rb")}
            t = time.perf_counter()
            step = bsz * 100
            for k, start in enumerate(range(0, fill, step)):
                batches = [items(b"m", x, min(bsz, fill - x)) for x in range(start, min(start + step, fill), bsz)]
                n_items = sum(len(b) for b in batches)
                tenth = min(start * 10 // max(fill, 1), 9)
                for label, cmd, key, rbk in fills:
                    order = [("fb", srv.port, c, key)] + ([("rb", rb.port, rc, rbk)] if rbk else [])
                    for m, port, client, kk in in_turn(order, k):
                        _, usec = timed_send(port, client, cmd, kk, batches)
                        acc = tenths[(label, m)][tenth]
                        acc[0] += usec
                        acc[1] += n_items
            log(f"  {fmt_items(cap)}: filled {fill} items per filter in {time.perf_counter() - t:.1f} s")
            size = {key: int(finfo(c, "BF.INFO" if key != "cf" else "CF.INFO", key)["Size"])
                    for _, _, key, _ in fills}
            growth = {key: int(finfo(c, "CF.INFO" if key == "cf" else "BF.INFO", key)["Number of filters"])
                      for key in size}
            rb_growth = {}
            if rc:
                rb_growth = {k: int(finfo(rc, "CF.INFO" if k == "cf" else "BF.INFO", k)["Number of filters"])
                             for k in ("bf", "cf")}
            samples = {}
            for label, cmd, key, rbk in fills:
                for m in ("fb", "rb"):
                    ts = [u * 1000.0 / n for u, n in tenths[(label, m)] if n]
                    tot_u = sum(u for u, _ in tenths[(label, m)])
                    tot_n = sum(n for _, n in tenths[(label, m)])
                    samples[(label, m)] = (tot_u * 1000.0 / tot_n if tot_n else None, ts)
            # Lookups on the filled filters: half present, half absent, interleaved;
            # `rounds` rounds, which module goes first alternating.
            for label, cmd, key, rbk in probes:
                for m in ("fb", "rb"):
                    samples[(label, m)] = (None, [])
            for rnd in range(a.rounds):
                for label, cmd, key, rbk in probes:
                    batches = []
                    for i in range(a.batch_calls):
                        pres = items(b"m", (i * 7919 * (bsz // 2)) % max(fill - bsz, 1), bsz // 2)
                        absent = items(b"x%d:" % rnd, i * bsz, bsz - bsz // 2)
                        batches.append([x for pair in zip(pres, absent) for x in pair])
                    order = [("fb", srv.port, c, key)] + ([("rb", rb.port, rc, rbk)] if rbk else [])
                    for m, port, client, kk in in_turn(order, rnd):
                        calls, usec = timed_send(port, client, cmd, kk, batches)
                        samples[(label, m)][1].append(usec * 1000.0 / (calls * bsz))
            # The reference, measured now (same run), on buffers of the filters' sizes.
            ref = run_example(a, "bench_memref", "--sizes", ",".join(str(x) for x in sorted(set(size.values()))),
                              "--batch", bsz, "--rounds", a.rounds, "--reads", a.memref_reads)
            res["memref"].extend(ref)
            refs = {r["bytes"]: r for r in ref}
            for label, cmd, key, rbk in fills + probes:
                r = refs[size[key]]
                fb_total, fb_s = samples[(label, "fb")]
                rb_total, rb_s = samples[(label, "rb")]
                fb_head = fb_total if fb_total is not None else med(fb_s)
                rb_head = (rb_total if rb_total is not None else med(rb_s)) if rb_s else None
                res["rows"].append({
                    "capacity": cap, "command": label, "key": key, "bytes": size[key], "filled": fill,
                    "phase": "fill" if fb_total is not None else "lookup",
                    "ns_per_item": fb_s, "ns_per_item_head": fb_head,
                    "ref_ns_per_read": r["ns_per_read_all"], "ref_dependent_ns": r["ns_dependent_median"],
                    "ratio": fb_head / r["ns_per_read_median"],
                    "growth": growth[key], "redisbloom_growth": rb_growth.get(rbk) if rbk else None,
                    "redisbloom_ns_per_item": rb_s, "redisbloom_ns_per_item_head": rb_head,
                    "vs_redisbloom": (rb_head / fb_head) if rb_head else None,
                })
                log(f"  {fmt_items(cap)} {label:18s} {fb_head:7.1f} ns/item"
                    + (f", RedisBloom {rb_head:7.1f} ({rb_head / fb_head:.2f}x)" if rb_head else ""))
        check_module_allocator(c, 1)
    finally:
        srv.close()
        if rb:
            rb.close()
    return res


def render_batch(res):
    rows = []
    for r in res["rows"]:
        rbs = r.get("redisbloom_ns_per_item") or []
        vs = r.get("vs_redisbloom")
        fill = r.get("phase") == "fill"
        head = r.get("ns_per_item_head", med(r["ns_per_item"]))
        rb_head = r.get("redisbloom_ns_per_item_head")
        fb_txt = (f"{fmt_num(head)} ({fmt_num(min(r['ns_per_item']))}-{fmt_num(max(r['ns_per_item']))})"
                  if fill and len(r["ns_per_item"]) > 1 else spread(r["ns_per_item"]))
        rb_txt = "-"
        if rbs:
            rb_txt = (f"{fmt_num(rb_head)} ({fmt_num(min(rbs))}-{fmt_num(max(rbs))})"
                      if fill and len(rbs) > 1 else spread(rbs))
        grew = str(r["growth"]) + (f" / {r['redisbloom_growth']}" if r.get("redisbloom_growth") else "")
        rows.append([fmt_items(r["capacity"]), r["command"] + (" (fill)" if fill else ""),
                     fmt_bytes(r["bytes"]), fb_txt, rb_txt, f"**{vs:.2f}x**" if vs else "-",
                     spread(r["ref_ns_per_read"]), f"{r['ratio']:.1f}", fmt_num(r["ref_dependent_ns"]), grew])
    hdr = ["reserved for", "command", "filter size", "ferrobloom server ns/item",
           "RedisBloom 2.8.2 ns/item", "RedisBloom ÷ ferrobloom", "reference ns/read",
           "÷ reference", "one dependent miss, ns", "links / sub-filters (fb / RB)"]
    variants = ", ".join(f"`[{v}]` = `BF.RESERVE … {' '.join(x)}`".replace(" … `", "` as is")
                         for v, x in res.get("variants", []) if v)
    frac = res.get("fill_fraction", 1.0)
    return ((f"Bloom variants: {variants}. " if variants else "") +
            f"{res['batch_items']} items per command. Filters: `BF.RESERVE bf 0.01 <n>` and "
            f"`CF.RESERVE cf <n>` (bucket size 2, 8-bit fingerprints), filled "
            f"{'to capacity' if frac == 1 else f'to {frac:.0%} of capacity'} with BF.MADD / CF.INSERT: "
            f"the \"(fill)\" rows are that fill, ns per item = the fill's total server time ÷ items, "
            f"(min-max) over its ten tenths (later tenths cost more: fuller tables, longer kick chains). "
            f"The MEXISTS rows probe the filled filters, half present and half never added items, "
            f"{res['calls']} commands per measurement, {res['rounds']} rounds: median (min-max). "
            f"Server-side time = `usec` of `INFO commandstats` (after `CONFIG RESETSTAT`). "
            + ("RedisBloom 2.8.2 (Debian's redis-server 7.0.15 for both) gets the same filters and "
               "batches, each step sent to both in turn (the first of the two alternating); servers "
               "pinned to core 0, the load generator to the other; its rows pair with the classic "
               "variant (RedisBloom has one layout). "
               if res.get("redisbloom") else "RedisBloom was not available for this run. ") +
            f"Reference: `crates/ferrobloom-core/examples/bench_memref.rs` in the same run, batches of {res['batch_items']} "
            f"independent random 64-byte reads from a buffer of the filter's size (the cost of one "
            f"cache miss per item when misses overlap); the dependent-miss column is the full latency "
            f"of one miss, for context.\n\n"
            + table(hdr, rows))


def plot_batch(res, plt, path):
    caps = sorted({r["capacity"] for r in res["rows"]})
    labels = list(dict.fromkeys(r["command"] for r in res["rows"]))
    fig, axes = plt.subplots(1, len(caps), figsize=(5 * len(caps), 4.5), squeeze=False)
    for ax, cap in zip(axes[0], caps):
        rows = {r["command"]: r for r in res["rows"] if r["capacity"] == cap}
        xs = list(range(len(labels)))
        fb = [rows[lb].get("ns_per_item_head", med(rows[lb]["ns_per_item"])) if lb in rows else 0 for lb in labels]
        rbv = [(rows[lb].get("redisbloom_ns_per_item_head") or 0) if lb in rows else 0 for lb in labels]
        ax.bar([x - 0.2 for x in xs], fb, width=0.4, color="#1f77b4", label="ferrobloom")
        if any(rbv):
            ax.bar([x + 0.2 for x in xs], rbv, width=0.4, color="#d62728", label="RedisBloom 2.8.2")
        ax.set_xticks(xs)
        ax.set_xticklabels([lb + (" (fill)" if rows.get(lb, {}).get("phase") == "fill" else "") for lb in labels],
                           rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("server ns per item")
        ax.set_title(f"filters reserved for {fmt_items(cap)} items")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"batch commands, {res['batch_items']} items per command")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- part 3


def part_core(args, env):
    a = args
    rows = run_example(a, "bench_core", "--sizes", a.core_sizes, "--ops", a.core_ops,
                       "--min-ops", a.core_ops, "--rounds", a.rounds, "--layouts", a.layouts,
                       "--lengths", "8,16,32,64,128,256", "--hash-ops", a.hash_ops)
    return {"rows": rows}


def render_core_floor(res):
    """The batch API's ns/item against the memory floor of the lines it reads,
    measured in the same rounds (bench_core's floor_*_ns)."""
    bl = [r for r in res["rows"] if r["kind"] == "core_bloom" and "floor_read_ns_all" in r]
    if not bl:
        return ""
    rows = []
    for r in bl:
        ra = [x / (f * r["lines_add"]) for x, f in zip(r["add_batch_api_ns_all"], r["floor_rmw_ns_all"])]
        rm = [x / (f * r["lines_mixed"]) for x, f in zip(r["contains_mixed_batch_api_ns_all"], r["floor_read_ns_all"])]
        rows.append([r["layout"], fmt_bytes(r["bytes"]), fmt_items(r["items"]),
                     spread(r["add_batch_api_ns_all"]), f"{r['lines_add']:.2g}",
                     spread([f * r["lines_add"] for f in r["floor_rmw_ns_all"]]), f"**{spread(ra)}**",
                     spread(r["contains_mixed_batch_api_ns_all"]), f"{r['lines_mixed']:.2g}",
                     spread([f * r["lines_mixed"] for f in r["floor_read_ns_all"]]), f"**{spread(rm)}**"])
    return ("\n\n**The batch API against the memory floor.** `BloomFilter::add_hashes` / `contains_hashes` "
            "(what the Python package runs; BF.MADD and BF.MEXISTS run the same per-item add and lookup), "
            "calls of 1000 items, the same adds and mixed lookups as above. Floor: in each round, right after "
            "the filter's timings, the loops of `crates/ferrobloom-core/examples/bench_memref.rs` on a buffer "
            "of the filter's size (independent random 64-byte lines, batches of 1000, THP off as in "
            "redis-server): read-modify-write ns for adds, read ns for lookups, times the lines the operation "
            "must read (blocked: 1; classic add: k; classic mixed lookup: half members with k, half non-members "
            "with their probes up to the first clear bit at the filter's measured fill). ÷ floor: each round's "
            "time ÷ that round's floor, median (min-max). Below the last-level cache the floor is a cache's and "
            "the ratio measures compute.\n\n"
            + table(["layout", "size", "items", "add ns", "lines", "floor ns", "÷ floor",
                     "mixed lookup ns", "lines", "floor ns", "÷ floor"], rows))


def render_core(res):
    meta = next((r for r in res["rows"] if r["kind"] == "core_meta"), {})
    bl = [r for r in res["rows"] if r["kind"] == "core_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "core_cuckoo"]
    hs = [r for r in res["rows"] if r["kind"] == "core_hash"]

    def s(r, k):
        return spread(r[k + "_all"])

    out = [f"Pure core, no Redis (`crates/ferrobloom-core/examples/bench_core.rs`). Median (min-max) of {meta.get('rounds')} rounds, "
           f"ns per operation. Item hashes are precomputed (hashing is the last table). Adds run on an "
           f"empty, pre-faulted filter up to half its capacity (at most {fmt_items(meta.get('ops', 0))} "
           f"items); lookups then probe members, non-members, and a half/half mix, item by item and in "
           f"batches of {meta.get('batch')} with each item's first cache line prefetched before the batch "
           f"is probed.",
           "", "**Bloom filter** (one non-scaling link at error "
           f"{meta.get('error')}):", ""]
    out.append(table(["layout", "size", "k", "items", "add", "contains member", "contains non-member",
                      "contains mixed", "mixed, batch + prefetch"],
                     [[r["layout"], fmt_bytes(r["bytes"]), r["hashes"], fmt_items(r["items"]), s(r, "add_ns"),
                       s(r, "contains_member_ns"), s(r, "contains_absent_ns"), s(r, "contains_mixed_ns"),
                       s(r, "contains_mixed_batch_prefetch_ns")] for r in bl]))
    floor = render_core_floor(res)
    if floor:
        out.append(floor)
    out += ["", "**Cuckoo filter** (bucket size 2, 8-bit fingerprints, max iterations 20):", ""]
    out.append(table(["size", "items", "add", "contains member", "contains non-member", "contains mixed"],
                     [[fmt_bytes(r["bytes"]), fmt_items(r["items"]), s(r, "add_ns"), s(r, "contains_member_ns"),
                       s(r, "contains_absent_ns"), s(r, "contains_mixed_ns")] for r in cf]))
    out += ["", "**Hashing** per item (random items of each length): `ItemHash::of` (what every command "
            "runs once per item), a direct `xxh3_128` call, and two 64-bit passes (what a scheme with a "
            "second hash would cost):", ""]
    out.append(table(["item bytes", "ItemHash::of ns", "xxh3_128 ns", "2 x xxh3_64 ns",
                      "ItemHash / xxh3_128 (fastest rounds)"],
                     [[r["len"], s(r, "itemhash_ns"), s(r, "xxh3_128_ns"), s(r, "two_pass_xxh3_64_ns"),
                       f"{r['itemhash_ns_min'] / r['xxh3_128_ns_min']:.2f}"] for r in hs]))
    return "\n".join(out)


def plot_core(res, plt, path):
    bl = [r for r in res["rows"] if r["kind"] == "core_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "core_cuckoo"]
    hs = [r for r in res["rows"] if r["kind"] == "core_hash"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    ax = axes[0]
    for layout in sorted({r["layout"] for r in bl}):
        rs = [r for r in bl if r["layout"] == layout]
        x = [r["bytes"] for r in rs]
        for k, lab in [("add_ns", "add"), ("contains_member_ns", "contains member"),
                       ("contains_absent_ns", "contains non-member"),
                       ("contains_mixed_batch_prefetch_ns", "mixed, batch+prefetch")]:
            ax.plot(x, [r[k + "_median"] for r in rs], "o-", label=f"{layout}: {lab}")
    ax.set_title("Bloom (non-scaling, 1%)")
    ax2 = axes[1]
    x = [r["bytes"] for r in cf]
    for k, lab in [("add_ns", "add"), ("contains_member_ns", "contains member"),
                   ("contains_absent_ns", "contains non-member")]:
        ax2.plot(x, [r[k + "_median"] for r in cf], "o-", label=lab)
    ax2.set_title("Cuckoo (b=2, 8-bit)")
    for a_ in (ax, ax2):
        a_.set_xscale("log", base=2)
        a_.set_yscale("log")
        a_.set_xlabel("filter bytes")
        a_.set_ylabel("ns per operation")
        a_.legend(fontsize=7)
        a_.grid(True, which="both", alpha=0.3)
    ax3 = axes[2]
    x = [r["len"] for r in hs]
    ax3.plot(x, [r["itemhash_ns_median"] for r in hs], "o-", label="ItemHash::of (one xxh3_128)")
    ax3.plot(x, [r["two_pass_xxh3_64_ns_median"] for r in hs], "s--", label="two xxh3_64 passes")
    ax3.set_xscale("log", base=2)
    ax3.set_xlabel("item bytes")
    ax3.set_ylabel("ns per item")
    ax3.set_title("hashing")
    ax3.legend(fontsize=8)
    ax3.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- part 4


def part_accuracy(args, env):
    a = args
    rows = run_example(a, "bench_accuracy", "--capacity", a.acc_capacity, "--probes", a.acc_probes,
                       "--layouts", a.layouts, "--cf-slots", a.cf_slots,
                       "--cf-max-iterations", a.cf_max_iterations)
    return {"rows": rows}


def render_accuracy(res):
    meta = next((r for r in res["rows"] if r["kind"] == "acc_meta"), {})
    bl = [r for r in res["rows"] if r["kind"] == "acc_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "acc_cuckoo"]
    out = [f"Pure core (`crates/ferrobloom-core/examples/bench_accuracy.rs`), fixed seeds; {fmt_items(meta.get('probes', 0))} "
           f"non-member probes per row. Bloom filters reserved for {fmt_items(meta.get('capacity', 0))} items: "
           f"scaling (expansion 2) after 1x and 4x that many distinct items, non-scaling filled until it "
           f"refuses an item. bits/item = storage bits of all links / distinct items added; RedisBloom = its "
           f"sizing formula (bloom_init in RedisBloom's deps/bloom/bloom.c: scaling links at e/2, e/4, ...) for the same links and items; "
           f"textbook = |ln e| / ln(2)^2. \"FPR ≤ e\" allows 3 standard deviations of sampling noise.",
           ""]
    hdr = ["layout", "error e", "mode", "fill", "links", "measured FPR", "FPR ≤ e", "bits/item",
           "RedisBloom bits/item", "textbook bits/item", "bits vs RedisBloom"]
    rows = []
    for r in bl:
        ok = "yes" if r["fpr"] <= r["fpr_limit_3sigma"] else "**no**"
        rows.append([r["layout"], r["error"], r["mode"], r["fill"], r["links"], f"{r['fpr']:.3e}", ok,
                     f"{r['bits_per_item']:.2f}", f"{r['rb_bits_per_item']:.2f}",
                     f"{r['textbook_bits_per_item']:.2f}", f"{r['bits_per_item'] / r['rb_bits_per_item']:.4f}"])
    out.append(table(hdr, rows))
    out += ["", f"**Cuckoo**: one non-growing table of {fmt_items(cf[0]['slots']) if cf else '?'} slots per "
            f"row, filled until an insert fails (max iterations {meta.get('cf_max_iterations')}; the load "
            f"at the first failure with RedisBloom's default of 20 is shown too), then probed. Bound = "
            f"`core::cuckoo::fpr_bound` = 2b/(2^f - 1); the ERROR range is what `CF.RESERVE … ERROR e` "
            f"needs to pick that width at that bucket size.", ""]
    hdr = ["fingerprint bits", "bucket size", "ERROR that selects it", "load reached",
           "first failure at 20 iterations", "measured FPR", "bound", "FPR ≤ bound", "bits/item"]
    rows = []
    for r in cf:
        probes = r["probes"]
        fpr = f"{r['fpr']:.3e}" if r["false_positives"] else f"0 in {fmt_items(probes)}"
        sigma = (r["bound"] * (1 - r["bound"]) / probes) ** 0.5
        ok = "yes" if r["fpr"] <= r["bound"] + 3 * sigma else "**no**"
        sel = (f"[{r['error_option_min']:.2g}, {r['error_option_max']:.2g})"
               if r["error_option_max"] < 1 else f"≥ {r['error_option_min']:.2g} (or none)")
        rows.append([r["fp_bits"], r["bucket_size"], sel, f"{r['load']:.3f}", f"{r['load_at_20']:.3f}",
                     fpr, f"{r['bound']:.2e}", ok, f"{r['bits_per_item']:.2f}"])
    out.append(table(hdr, rows))
    return "\n".join(out)


def plot_accuracy(res, plt, path_fpr, path_bits):
    bl = [r for r in res["rows"] if r["kind"] == "acc_bloom"]
    cf = [r for r in res["rows"] if r["kind"] == "acc_cuckoo"]
    modes = [("scaling x2", "1x"), ("scaling x2", "4x"), ("non-scaling", "full")]
    layouts = sorted({r["layout"] for r in bl})
    # FPR vs requested error (log-log), and cuckoo FPR vs bound.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    ax = axes[0]
    errs = sorted({r["error"] for r in bl})
    ax.plot(errs, errs, "k--", label="requested error (target)")
    for layout in layouts:
        for (mode, fill), m in zip(modes, ["o", "s", "^"]):
            rs = sorted([r for r in bl if r["layout"] == layout and r["mode"] == mode and r["fill"] == fill],
                        key=lambda r: r["error"])
            ax.plot([r["error"] for r in rs], [max(r["fpr"], 1e-7) for r in rs], m + "-",
                    label=f"{layout}: {mode} {fill}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("requested error rate")
    ax.set_ylabel("measured false-positive rate")
    ax.set_title("Bloom: measured FPR")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[1]
    for b, m in zip([1, 2, 4], ["o", "s", "^"]):
        rs = sorted([r for r in cf if r["bucket_size"] == b], key=lambda r: r["fp_bits"])
        ax.plot([r["fp_bits"] for r in rs], [r["bound"] for r in rs], m + "--", alpha=0.5, label=f"bound, b={b}")
        ax.plot([r["fp_bits"] for r in rs], [r["fpr"] if r["fpr"] > 0 else float("nan") for r in rs], m + "-",
                label=f"measured, b={b}")
    ax.set_yscale("log")
    ax.set_xlabel("fingerprint bits")
    ax.set_ylabel("false-positive rate")
    ax.set_title("Cuckoo: measured FPR vs bound 2b/(2^f-1) (0 not drawn)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_fpr, dpi=110)
    plt.close(fig)
    # Bits per item.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    ax = axes[0]
    for layout in layouts:
        for (mode, fill), m in zip(modes, ["o", "s", "^"]):
            rs = sorted([r for r in bl if r["layout"] == layout and r["mode"] == mode and r["fill"] == fill],
                        key=lambda r: r["error"])
            ax.plot([r["error"] for r in rs], [r["bits_per_item"] for r in rs], m + "-",
                    label=f"{layout}: {mode} {fill}")
    for (mode, fill), m in zip(modes, ["o", "s", "^"]):
        rs = sorted([r for r in bl if r["layout"] == layouts[0] and r["mode"] == mode and r["fill"] == fill],
                    key=lambda r: r["error"]) if layouts else []
        ax.plot([r["error"] for r in rs], [r["rb_bits_per_item"] for r in rs], m + ":", color="gray",
                label=f"RedisBloom formula: {mode} {fill}")
    rs = sorted([r for r in bl if r["mode"] == "non-scaling"], key=lambda r: r["error"])
    ax.plot([r["error"] for r in rs], [r["textbook_bits_per_item"] for r in rs], "k--", label="textbook |ln e|/ln²2")
    ax.set_xscale("log")
    ax.set_xlabel("requested error rate")
    ax.set_ylabel("bits per item")
    ax.set_title("Bloom: memory per item")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    ax = axes[1]
    for b, m in zip([1, 2, 4], ["o", "s", "^"]):
        rs = sorted([r for r in cf if r["bucket_size"] == b], key=lambda r: r["fp_bits"])
        ax.plot([r["fp_bits"] for r in rs], [r["bits_per_item"] for r in rs], m + "-", label=f"b={b}")
    ax.set_xlabel("fingerprint bits")
    ax.set_ylabel("bits per item at the reached load")
    ax.set_title("Cuckoo: memory per item")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path_bits, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- part 5


def random_chunks(n, size, seed=12345):
    """`n` distinct random chunks (numpy when available: fast; else os.urandom)."""
    try:
        import numpy as np
        rng = np.random.default_rng(seed)
        return [rng.bytes(size) for _ in range(n)]
    except ImportError:
        return [os.urandom(size) for _ in range(n)]


def part_persistence(args, env):
    a = args
    target = a.persist_bytes
    chunk = 16 * MiB
    res = {"target_bytes": target, "rounds": a.persist_rounds, "runs": []}
    workdir = tempfile.mkdtemp(prefix="ferrobloom-bench-persist-")
    srv = None
    try:
        srv = Server(a, "persist", extra=["--proto-max-bulk-len", "2gb", "--dbfilename", "bench.rdb"],
                     workdir=workdir)
        # Random data in 16 MiB chunks: 8 distinct chunks cycled (LZF's window is far
        # shorter than 16 MiB, so repeats cannot be compressed).
        pool = random_chunks(8, chunk)
        # Baseline: a restart with nothing to load (process start, module load).
        empty = []
        for _ in range(3):
            srv.stop()
            empty.append(srv.start())
        res["empty_start_s"] = med(empty)
        for rnd in range(a.persist_rounds):
            for kind in ("filter", "string"):
                c = srv.client()
                c.flushall()
                t = time.perf_counter()
                if kind == "filter":
                    # BF.RESERVE sized to ~target bytes: scaling link at e/2 = 0.005.
                    import math
                    bpe = abs(math.log(0.005)) / 0.480453013918201
                    cap = int(target * 8 / bpe)
                    c.execute_command("BF.RESERVE", "tmp", 0.01, cap)
                    _, header = c.execute_command("BF.SCANDUMP", "tmp", 0)
                    c.delete("tmp")
                    c.execute_command("BF.LOADCHUNK", "big", 1, header)
                    link_bytes = [int(f.split(b"bytes:")[1].split()[0])
                                  for f in c.execute_command("BF.DEBUG", "big")[1:]]
                    total = sum(link_bytes)
                    off, k = 0, 0
                    for lb in link_bytes:          # chunks never span links
                        end = off + lb
                        while off < end:
                            n = min(chunk, end - off)
                            c.execute_command("BF.LOADCHUNK", "big", off + n + 1, pool[k % len(pool)][:n])
                            off += n
                            k += 1
                    size = int(finfo(c, "BF.INFO", "big")["Size"])
                else:
                    total = res["runs"][-1]["data_bytes"] if res["runs"] else target
                    last = (total - 1) // chunk * chunk
                    # Allocate the whole string at once (the last chunk first), then fill it.
                    c.setrange("big", last, pool[0][:total - last])
                    for k, off in enumerate(range(0, last, chunk)):
                        c.setrange("big", off, pool[k % len(pool)])
                    size = int(c.strlen("big"))
                create_s = time.perf_counter() - t
                used = check_module_allocator(c, total)
                t = time.perf_counter()
                c.save()
                save_s = time.perf_counter() - t
                rdb = os.path.getsize(os.path.join(workdir, "bench.rdb"))
                c.close()
                srv.stop()
                load_s = srv.start(timeout=600)
                c = srv.client()
                ok = (int(finfo(c, "BF.INFO", "big")["Size"]) == size if kind == "filter"
                      else int(c.strlen("big")) == size)
                if kind == "filter":
                    ok = ok and c.execute_command("BF.SCANDUMP", "big", 1)[1] == pool[0][:min(chunk, link_bytes[0])]
                else:
                    ok = ok and c.getrange("big", 0, 1023) == pool[0][:1024]
                if not ok:
                    raise RuntimeError(f"{kind}: data differs after restart")
                c.close()
                os.remove(os.path.join(workdir, "bench.rdb"))
                res["runs"].append({"round": rnd, "kind": kind, "data_bytes": total, "size": size,
                                    "used_memory": used, "rdb_bytes": rdb, "create_s": create_s,
                                    "save_s": save_s, "load_s": load_s})
                log(f"  {kind}: {fmt_bytes(total)} created in {create_s:.1f} s, SAVE {save_s:.2f} s, "
                    f"restart to PING {load_s:.2f} s, RDB {fmt_bytes(rdb)}")
    finally:
        if srv:
            srv.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return res


def render_persistence(res):
    rows = []
    f = [r for r in res["runs"] if r["kind"] == "filter"]
    s = [r for r in res["runs"] if r["kind"] == "string"]
    for kind, rs in (("Bloom filter", f), ("string", s)):
        if rs:
            rows.append([kind, fmt_bytes(rs[0]["data_bytes"]), fmt_bytes(rs[0]["rdb_bytes"]),
                         spread([r["save_s"] for r in rs]), spread([r["load_s"] for r in rs])])
    if f and s:
        rows.append(["ratio filter / string", "", "", f"{med([r['save_s'] for r in f]) / med([r['save_s'] for r in s]):.2f}",
                     f"{med([r['load_s'] for r in f]) / med([r['load_s'] for r in s]):.2f}"])
    return (f"One server, sequentially, {res['rounds']} round(s): a ~{fmt_bytes(res['target_bytes'])} Bloom filter "
            f"(`BF.RESERVE` sized to it, its SCANDUMP header loaded into a fresh key, then random 16 MiB "
            f"`BF.LOADCHUNK`s), then a string of the same length (`SETRANGE` of random 16 MiB chunks, "
            f"`proto-max-bulk-len 2gb`). Random bytes, so LZF compression (on by default) gains nothing "
            f"on either side. SAVE = wall time of the `SAVE` command; load = from starting redis-server "
            f"to its first PING answered without -LOADING (an empty restart takes "
            f"{res.get('empty_start_s', float('nan')):.2f} s). Seconds.\n\n"
            + table(["value", "data", "RDB file", "SAVE s", "restart + load s"], rows))


def plot_persistence(res, plt, path):
    fig, ax = plt.subplots(figsize=(6, 4))
    kinds = ["filter", "string"]
    save = [med([r["save_s"] for r in res["runs"] if r["kind"] == k] or [0]) for k in kinds]
    load = [med([r["load_s"] for r in res["runs"] if r["kind"] == k] or [0]) for k in kinds]
    x = range(len(kinds))
    ax.bar([i - 0.2 for i in x], save, 0.4, label="SAVE")
    ax.bar([i + 0.2 for i in x], load, 0.4, label="restart + load")
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"Bloom filter ({fmt_bytes(res['target_bytes'])})", "string (same length)"])
    ax.set_ylabel("seconds")
    ax.set_title("persistence")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- summary


# --------------------------------------------------------------------------- part 6


def load_random_filter(c, key, capacity, layout, pool, chunk=16 * MiB):
    """`BF.RESERVE key 0.01 capacity LAYOUT layout`, its bits replaced by random bytes
    (LOADCHUNK of its own SCANDUMP header, then the chunks). Returns the data bytes."""
    c.execute_command("BF.RESERVE", "tmp:" + key, 0.01, capacity, "LAYOUT", layout)
    _, header = c.execute_command("BF.SCANDUMP", "tmp:" + key, 0)
    c.delete("tmp:" + key, key)
    c.execute_command("BF.LOADCHUNK", key, 1, header)
    link_bytes = [int(f.split(b"bytes:")[1].split()[0]) for f in c.execute_command("BF.DEBUG", key)[1:]]
    off, k = 0, 0
    for lb in link_bytes:
        end = off + lb
        while off < end:
            n = min(chunk, end - off)
            c.execute_command("BF.LOADCHUNK", key, off + n + 1, pool[k % len(pool)][:n])
            off += n
            k += 1
    return sum(link_bytes)


def slowlog_usec(c, name):
    """Server microseconds of the last `name` command in the SLOWLOG (threshold 0)."""
    for e in c.slowlog_get(32):
        cmd = e["command"]
        cmd = cmd.decode() if isinstance(cmd, bytes) else cmd
        if cmd.upper().startswith(name):
            return e["duration"]
    raise RuntimeError(f"{name} not in the SLOWLOG")


def part_merge(args, env):
    a = args
    sizes = [int(x) * MiB for x in a.merge_mib.split(",")]
    res = {"rounds": a.rounds, "rows": []}
    srv = Server(a, "merge", extra=["--slowlog-log-slower-than", "0", "--slowlog-max-len", "128",
                                    "--bf.merge-max-bytes", str(64 * GiB)])
    try:
        c = srv.client()
        pool = random_chunks(4, 16 * MiB)
        import math
        for layout in ("classic", "blocked"):
            for size in sizes:
                bpe = abs(math.log(0.005)) / 0.480453013918201
                cap = max(1000, int(size * 8 / bpe))
                c.flushall()
                data = load_random_filter(c, "a", cap, layout, pool)
                load_random_filter(c, "b", cap, layout, pool[1:] + pool[:1])
                check_module_allocator(c, 2 * data)
                for case, cmd, touched in (("new key", ("BF.MERGE", "d", 2, "a", "b"), 3 * data),
                                           ("into a source", ("BF.MERGE", "a", 2, "a", "b"), 2 * data)):
                    usecs = []
                    for _ in range(a.rounds):
                        c.delete("d")
                        c.slowlog_reset()
                        c.execute_command(*cmd)
                        usecs.append(slowlog_usec(c, "BF.MERGE"))
                    res["rows"].append({"layout": layout, "data_bytes": data, "case": case,
                                        "touched": touched, "usec": usecs,
                                        "gbps": [touched / u / 1e3 for u in usecs]})
                    log(f"  {layout} {fmt_bytes(data)} {case}: {med(usecs) / 1e3:.1f} ms, "
                        f"{touched / med(usecs) / 1e3:.2f} GB/s")
                c.flushall()
    finally:
        srv.close()
    return res


def render_merge(res):
    rows = [[r["layout"], fmt_bytes(r["data_bytes"]), r["case"], fmt_bytes(r["touched"]),
             spread([u / 1e3 for u in r["usec"]], lambda x: f"{x:.1f}"),
             spread(r["gbps"], lambda x: f"{x:.2f}")] for r in res["rows"]]
    return ("`BF.MERGE` of two filters of random bits (`BF.RESERVE` sized to each size, its bits "
            "replaced by random `BF.LOADCHUNK`s), `bf.merge-max-bytes` raised out of the way. "
            "\"new key\": `BF.MERGE d 2 a b` (allocates d, reads a and b: 3x the data touched); "
            "\"into a source\": `BF.MERGE a 2 a b` (reads b, reads and writes a: 2x). Server time "
            f"from the SLOWLOG (threshold 0), {res['rounds']} round(s), min/median/max; GB/s = bytes "
            "touched / server time.\n\n"
            + table(["layout", "each filter", "merge", "bytes touched", "server ms", "GB/s"], rows))


def plot_merge(res, plt, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    for layout in sorted({r["layout"] for r in res["rows"]}):
        for case in sorted({r["case"] for r in res["rows"]}):
            rs = [r for r in res["rows"] if r["layout"] == layout and r["case"] == case]
            ax.plot([r["data_bytes"] / MiB for r in rs], [med(r["gbps"]) for r in rs], marker="o",
                    label=f"{layout}, {case}")
    ax.set_xscale("log")
    ax.set_xlabel("each filter (MiB)")
    ax.set_ylabel("GB/s of bytes touched")
    ax.set_title("BF.MERGE throughput")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def summary(outdir):
    def load(part):
        p = os.path.join(outdir, part + ".json")
        return json.load(open(p)) if os.path.exists(p) else None

    lines = ["# ferrobloom benchmark summary", "",
             "The performance targets as ratios measured in one run of `make bench` (parts may come from "
             "separate runs; each part's date, commit and machine load are in its own file). "
             "Machine noise matters: see the load averages.", ""]
    rows = []
    oi = load("one_item")
    if oi:
        res = oi["result"]
        for p in res["pipelines"]:
            for name, _, kind, b in res.get("commands", ONE_ITEM):
                runs = one_item_runs(res, p, name)
                rbr = one_item_runs(res, p, name, "redisbloom")
                if not b or not runs or not rbr:
                    continue
                ratio = med([r["rps"] for r in runs]) / med([r["rps"] for r in rbr])
                us = [r["usec_per_call"] for r in runs if r.get("usec_per_call")]
                us_rb = [r["usec_per_call"] for r in rbr if r.get("usec_per_call")]
                srv = f"; server time {med(us_rb) / med(us):.2f}x" if us and us_rb else ""
                grew = [who for who, rs in (("ferrobloom's", runs), ("RedisBloom's", rbr))
                        if any(r.get("subfilters", r.get("links", 1)) > 1 for r in rs)]
                rows.append([f"{name} ops/s ≥ RedisBloom's, pipeline {p}", f"{ratio:.2f}{srv}", "≥ 1",
                             ("met" if ratio >= 1 else "**not met**")
                             + (f" ({' and '.join(grew)} filter grew in a round)" if grew else "")])
        for p in res["pipelines"]:
            base = {n: [r["rps"] for r in one_item_runs(res, p, n)] for n in ("SET", "GET")}
            for name, _, kind, b in res.get("commands", ONE_ITEM):
                runs = one_item_runs(res, p, name)
                if not b or not runs or not base[b]:
                    continue
                ratio = med([r["rps"] for r in runs]) / med(base[b])
                rows.append([f"{name} ≥ 95% of {b}, pipeline {p} (round 1)", f"{ratio:.2f}", "≥ 0.95",
                             "met" if ratio >= 0.95 else "**not met**"])
    ba = load("batch")
    if ba:
        res = ba["result"]
        top = max(r["capacity"] for r in res["rows"])
        for r in res["rows"]:
            cmd = r["command"]
            blocked = cmd.endswith("[blocked]")
            vs = r.get("vs_redisbloom")
            if blocked:
                if r["capacity"] != top:
                    continue
                # RedisBloom has one layout: compare with its (classic-paired) row.
                base = cmd.split(" ")[0]
                rbh = next((x.get("redisbloom_ns_per_item_head") for x in res["rows"]
                            if x["capacity"] == top and x["command"].split(" ")[0] == base
                            and x.get("redisbloom_ns_per_item_head")), None)
                vs = rbh / r["ns_per_item_head"] if rbh else None
            if vs is None:
                continue
            want = 4.0 if blocked else (2.0 if cmd.startswith("CF.INSERT") else 2.5)
            phase = " (fill)" if r.get("phase") == "fill" else ""
            rows.append([f"{cmd}{phase} on {fmt_items(r['capacity'])}: RedisBloom ns/item ÷ ferrobloom's",
                         f"{vs:.2f}", f"≥ {want:g}", "met" if vs >= want else "**not met**"])
    ac = load("accuracy")
    if ac:
        bl = [r for r in ac["result"]["rows"] if r["kind"] == "acc_bloom" and r["mode"] == "scaling x2"]
        for layout in sorted({r["layout"] for r in bl}):
            rs = [r for r in bl if r["layout"] == layout]
            worst_bits = max(r["bits_per_item"] / r["rb_bits_per_item"] for r in rs)
            worst_fpr = max(r["fpr"] / r["error"] for r in rs)
            fpr_ok = all(r["fpr"] <= r["fpr_limit_3sigma"] for r in rs)
            rows.append([f"{layout}: scaling-chain bits/item ≤ RedisBloom formula (all error rates, 1x and 4x)",
                         f"{worst_bits:.4f} (worst)", "≤ 1", "met" if worst_bits <= 1 + 1e-9 else "**not met**"])
            rows.append([f"{layout}: measured FPR of the whole chain ≤ requested (all error rates, 1x and 4x)",
                         f"{worst_fpr:.2f} (worst FPR / e)", "≤ 1", "met" if fpr_ok else "**not met**"])
    co = load("core")
    if co:
        hs = [r for r in co["result"]["rows"] if r["kind"] == "core_hash"]
        if hs:
            # Fastest rounds: the intrinsic cost, least disturbed by other processes.
            worst = max(r["itemhash_ns_min"] / r["xxh3_128_ns_min"] for r in hs)
            two = min(r["two_pass_xxh3_64_ns_min"] / r["itemhash_ns_min"] for r in hs)
            rows.append(["hashing: one xxh3 pass per item (ItemHash::of ÷ one xxh3_128, fastest rounds, "
                         "worst length)",
                         f"{worst:.2f}", "≈ 1 (two passes: ≥ " + f"{two:.1f}x)",
                         "met" if worst <= 1.25 else "**check**"])
    rows.append(["no per-command heap allocation on one-item paths; batch replies without per-item "
                 "allocation", "not measured by `make bench`", "", "see code review / tests"])
    pe = load("persistence")
    if pe:
        runs = pe["result"]["runs"]
        f = [r for r in runs if r["kind"] == "filter"]
        s = [r for r in runs if r["kind"] == "string"]
        if f and s:
            rs = med([r["save_s"] for r in f]) / med([r["save_s"] for r in s])
            rl = med([r["load_s"] for r in f]) / med([r["load_s"] for r in s])
            rows.append([f"persistence: SAVE of a {fmt_bytes(f[0]['data_bytes'])} filter ÷ same-size string",
                         f"{rs:.2f}", "(reported)", "-"])
            rows.append(["persistence: restart-load of the filter ÷ string", f"{rl:.2f}", "(reported)", "-"])
    me = load("merge")
    if me:
        rs = me["result"]["rows"]
        if rs:
            worst = min(med(r["gbps"]) for r in rs)
            rows.append(["BF.MERGE: GB/s of bytes touched (slowest size and layout, median)",
                         f"{worst:.2f}", "(reported)", "-"])
    py = load("python")
    if py and not py["result"].get("skipped"):
        ip = py["result"]["inprocess"]
        ip = ip["rows"] if isinstance(ip, dict) else [dict(r, mode="batch") for r in ip]
        for n, mode in sorted({(r["n"], r["mode"]) for r in ip}):
            rs = [r for r in ip if r["n"] == n and r["mode"] == mode]
            peers = [r for r in rs if not r["library"].startswith("ferrobloom")]
            if not peers:
                continue
            # Batches: ahead of every library (twice from 10M); one call per
            # item: at least as fast as the fastest other library.
            need = 1.0 if n < 10_000_000 or mode == "per_item" else 2.0
            for r in rs:
                if r in peers:
                    continue
                for op in ("add", "hit", "miss"):
                    ratio = min(med(x[op]) for x in peers) / med(r[op])
                    rows.append([f"Python {r['library']} {PY_MODES.get(mode, mode)} {op} on {fmt_items(n)}: "
                                 f"fastest of {len(peers)} libraries' ns/item ÷ ferrobloom's", f"{ratio:.2f}",
                                 f"≥ {need:g}", "met" if ratio >= need else "**not met**"])
                if mode != "batch":
                    continue
                small = min(peers, key=lambda x: x["bytes"])
                mem = r["bytes"] / small["bytes"]
                rows.append([f"Python {r['library']} memory on {fmt_items(n)}: filter bytes ÷ "
                             f"{small['library']}'s (measured FP rate {r['fp']:.4f} vs {small['fp']:.4f})",
                             f"{mem:.3f}", "≤ 1 at the same FP rate",
                             "met" if mem <= 1 and r["fp"] <= small["fp"] else
                             ("lower FP rate" if r["fp"] < small["fp"] else "**not met**")])
        for b in py["result"]["bulk"]:
            x, y = b["madd_s"] / b["build_push_s"], b["madd_wire"] / b["push_wire"]
            rows.append([f"Python bulk load {fmt_items(b['n'])}: pipelined BF.MADD time ÷ build+push",
                         f"{x:.1f}", "≥ 5 (at 100M)", (f"met at {fmt_items(b['n'])}" if x >= 5 else "**not met**")])
            rows.append([f"Python bulk load {fmt_items(b['n'])}: BF.MADD bytes ÷ push bytes",
                         f"{y:.0f}", "≥ 10 (at 100M)", (f"met at {fmt_items(b['n'])}" if y >= 10 else "**not met**")])
    lines.append(table(["target", "measured ratio", "target ratio", "status"], rows))
    lines.append("")
    for part in PARTS:
        d = load(part)
        if d:
            lines.append(f"- [{part}]({part}.md): {d['env']['date']}, commit {d['env']['commit']}, "
                         f"load average {d['load_before']:.1f} → {d['load_after']:.1f}, {d['seconds']:.0f} s")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write(text)
    return text


# --------------------------------------------------------------------------- main


# --------------------------------------------------------------------------- windowed filters


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
              "python": "The Python package: in-process against rbloom, fastbloom-rs, pybloomfiltermmap3; bulk load"}
    runners = {"one_item": part_one_item, "batch": part_batch, "core": part_core,
               "accuracy": part_accuracy, "persistence": part_persistence, "merge": part_merge,
               "window": part_window, "python": part_python}
    renderers = {"one_item": render_one_item, "batch": render_batch, "core": render_core,
                 "accuracy": render_accuracy, "persistence": render_persistence,
                 "merge": render_merge, "window": render_window, "python": render_python}
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
                elif p not in ("window", "python"):
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


if __name__ == "__main__":
    main()
