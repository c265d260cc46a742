"""Bulk load from a file from Python (issue 29): pipelined BF.MADD (1000 items a
command, 50 commands a pipeline) against the CLI's `build` path
(`BloomFilter.update` of each 4 MiB block's lines) + `push` (LOADCHUNK), end to
end from the same file of one item per line, wall time and bytes the server
received (INFO stats total_net_input_bytes); then `pull` and local lookups
against pipelined BF.MEXISTS round trips (1000 items a command).

Run by `make bench BENCH_ARGS="--parts python"` (bench/run.py's `python` part),
or by hand: `pip install ./python redis`, then
  FERROBLOOM_MODULE=/path/libferrobloom.so python bench/python_bulkload.py --sizes 10000000

Non-scaling filters of n items at 1%; the file lives in a temporary directory
and is written before either timing starts (the page cache holds it for both).
The two loads must give the same SCANDUMP header (checked)."""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import ferrobloom
import redis
from ferrobloom.cli import _input_blocks


class Server:
    """A redis-server with the module on a free local port, no persistence."""

    def __init__(self, binary, module, dir):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
             "--appendonly", "no", "--loadmodule", module],
            stdout=open(os.path.join(dir, "server.log"), "wb"), stderr=subprocess.STDOUT)
        self.client = redis.Redis(port=port)
        for _ in range(150):
            try:
                self.client.ping()
                return
            except redis.ConnectionError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.1)
        self.stop()
        sys.exit("redis-server did not start (see %s/server.log)" % dir)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def wire(r):
    return r.info("stats")["total_net_input_bytes"]


def one(r, n, tmpdir):
    path = os.path.join(tmpdir, "items.txt")
    with open(path, "wb") as f:
        for i in range(0, n, 100_000):
            f.write(b"".join(b"item-%d\n" % j for j in range(i, min(n, i + 100_000))))
    file_bytes = os.path.getsize(path)
    r.flushall()

    w0, t0 = wire(r), time.perf_counter()
    r.execute_command("BF.RESERVE", "madd", 0.01, n, "NONSCALING")
    p = r.pipeline(transaction=False)
    cmds = 0
    for batch in _input_blocks([path]):
        for i in range(0, len(batch), 1000):
            p.execute_command("BF.MADD", "madd", *batch[i:i + 1000])
            cmds += 1
            if cmds % 50 == 0:
                p.execute()
    p.execute()
    t_madd, w_madd = time.perf_counter() - t0, wire(r) - w0

    w0, t0 = wire(r), time.perf_counter()
    f = ferrobloom.BloomFilter(n, 0.01, nonscaling=True)
    for batch in _input_blocks([path]):
        f.update(batch)
    t_build = time.perf_counter() - t0
    ferrobloom.push(r, "pushed", f, progress=False)
    t_total, w_push = time.perf_counter() - t0, wire(r) - w0
    if r.execute_command("BF.SCANDUMP", "madd", 0) != r.execute_command("BF.SCANDUMP", "pushed", 0):
        sys.exit("BF.MADD and build+push gave different filters")
    del f

    t0 = time.perf_counter()
    g = ferrobloom.pull(r, "pushed", progress=False)
    t_pull = time.perf_counter() - t0
    probe = [b"item-%d" % i for i in range(0, n, max(1, n // 1_000_000))]
    t0 = time.perf_counter()
    local = g.contains_many(probe)
    t_local = (time.perf_counter() - t0) / len(probe) * 1e9
    t0 = time.perf_counter()
    p = r.pipeline(transaction=False)
    for i in range(0, len(probe), 1000):
        p.execute_command("BF.MEXISTS", "pushed", *probe[i:i + 1000])
    remote = [bool(x) for rep in p.execute() for x in rep]
    t_remote = (time.perf_counter() - t0) / len(probe) * 1e9
    if remote != local:
        sys.exit("pulled filter and server disagree")
    os.unlink(path)
    r.flushall()
    return {"n": n, "file_bytes": file_bytes, "madd_s": t_madd, "madd_wire": w_madd,
            "build_s": t_build, "build_push_s": t_total, "push_wire": w_push, "pull_s": t_pull,
            "filter_bytes": int(g.info()["Size"]), "local_ns": t_local, "mexists_ns": t_remote}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000000")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ferrobloom-bulk-") as d:
        s = Server(os.environ.get("REDIS_SERVER", "redis-server"), os.environ["FERROBLOOM_MODULE"], d)
        try:
            for n in [int(float(x)) for x in a.sizes.split(",")]:
                row = one(s.client, n, d)
                rows.append(row)
                print("n=%d  BF.MADD pipelined: %.2f s, %d bytes in | build %.2f s + push: %.2f s "
                      "total, %d bytes in (%.1fx faster, %.0fx fewer bytes) | pull %.2f s | local "
                      "lookup %.0f ns/item vs pipelined BF.MEXISTS %.0f ns/item" % (
                          n, row["madd_s"], row["madd_wire"], row["build_s"], row["build_push_s"],
                          row["push_wire"], row["madd_s"] / row["build_push_s"],
                          row["madd_wire"] / row["push_wire"], row["pull_s"], row["local_ns"],
                          row["mexists_ns"]), flush=True)
        finally:
            s.stop()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
