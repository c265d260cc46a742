"""Shared by every part: constants, formatting, tables, the machine line, the
redis-server wrapper and the helpers that run the core examples.
"""

import datetime
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


# bench/ (this package is bench/fbbench/).
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


ROOT = os.path.dirname(HERE)


PARTS = ["one_item", "batch", "core", "accuracy", "persistence", "merge", "window", "python", "java"]


MiB = 1 << 20


GiB = 1 << 30


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


def cmdstat(c, cmd):
    st = c.info("commandstats").get("cmdstat_" + cmd.lower())
    if not st:
        return None
    return int(st["calls"]), int(st["usec"])
