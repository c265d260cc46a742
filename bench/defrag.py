"""Active defragmentation of filters against plain strings, on Redis 8.2.3.

Each scenario starts a fresh server (Redis 8.2.3 from `scripts/peers.sh redis8`: the
only server at hand linked with the jemalloc active defragmentation needs), creates
40,000 small values, deletes 85% of them at random, then sets `activedefrag yes` with
settings that force it (as Redis' own tests do) and samples INFO memory's
`allocator_frag_ratio` while the server defragments. Scenarios:

- strings: the control, plain strings of 50-200 bytes (the filters' table sizes);
- bloom, cuckoo: small filters of those sizes (`BF.RESERVE k 0.01 <50-200>` + one item,
  `CF.RESERVE k <50-200>` + one item);
- mixed: half Bloom, half cuckoo, plus 200 windowed filters (`WINDOW 0.4`: a generation
  made and one dropped every 0.1 s) written to from a second connection all along, from
  creation to the end, and a cuckoo filter of 3,751 sub-filters (moved in the server's
  bounded steps).

`hz 100`, as Redis' own defrag tests run: a cycle at 75% of the CPU then lasts up to
7.5 ms by the server's design (75 ms at the default `hz 10`). The latency monitor
records every event of 1 ms or more; the table gives the longest defrag cycle and the
longest command.

Usage: python3 bench/defrag.py --server <redis-server 8.2.3> --module <libferrobloom.so>
       [--seconds 30] [--out bench/results/defrag.md]
"""
import argparse
import random
import socket
import subprocess
import tempfile
import threading
import time

import redis

N = 40_000
DELETED = 0.85


def start(server, module):
    d = tempfile.mkdtemp(prefix="fb-defrag-")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                          "--save", "", "--appendonly", "no", "--logfile", d + "/redis.log",
                          "--loadmodule", module, "--bf.cf-max-expansions", "4096"])
    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            return p, r, port
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit(f"server did not start (see {d}/redis.log)")


def small(pipe, kind, key, rng):
    size = rng.randrange(50, 201)
    if kind == "strings":
        pipe.set(key, "x" * size)
    elif kind == "bloom" or (kind == "mixed" and int(key[1:]) % 2 == 0):
        pipe.execute_command("BF.RESERVE", key, 0.01, size)
        pipe.execute_command("BF.ADD", key, "a")
    else:
        pipe.execute_command("CF.RESERVE", key, size)
        pipe.execute_command("CF.ADD", key, "a")


def rotate(port, keys, stop):
    r = redis.Redis(port=port)
    n = 0
    while not stop.is_set():
        pipe = r.pipeline(transaction=False)
        for k in keys:
            pipe.execute_command("BF.ADD", k, f"i{n}")
        pipe.execute()
        n += 1
        time.sleep(0.005)


def scenario(kind, args):
    p, r, port = start(args.server, args.module)
    stop = threading.Event()
    writer = None
    try:
        rng = random.Random(7)
        if kind == "mixed":
            windowed = [f"w{i}" for i in range(200)]
            for k in windowed:
                r.execute_command("BF.INSERT", k, "CAPACITY", 100, "WINDOW", 0.4, "ITEMS", "a")
            writer = threading.Thread(target=rotate, args=(port, windowed, stop))
            writer.start()
            r.execute_command("CF.RESERVE", "bigcf", 64, "BUCKETSIZE", 2, "EXPANSION", 1)
            for s in range(0, 240_000, 2000):
                r.execute_command("CF.INSERT", "bigcf", "ITEMS",
                                  *[f"y{j}" for j in range(s, s + 2000)])
        pipe = r.pipeline(transaction=False)
        for i in range(N):
            small(pipe, kind, f"k{i}", rng)
            if i % 1000 == 999:
                pipe.execute()
        pipe.execute()
        keys = list(range(N))
        rng.shuffle(keys)
        for i in keys[: int(N * DELETED)]:
            pipe.delete(f"k{i}")
        pipe.execute()
        time.sleep(1)  # INFO memory is refreshed by the server's cron
        before = r.info("memory")["allocator_frag_ratio"]
        for name, value in [("active-defrag-ignore-bytes", 1),
                            ("active-defrag-threshold-lower", 1),
                            ("active-defrag-cycle-min", 25),
                            ("active-defrag-cycle-max", 75),
                            ("hz", 100),
                            ("latency-monitor-threshold", 1)]:
            r.config_set(name, value)
        r.execute_command("LATENCY", "RESET")
        r.config_set("activedefrag", "yes")
        samples = {}
        t0 = time.time()
        for mark in (5, 10, args.seconds):
            time.sleep(max(0, t0 + mark - time.time()))
            samples[mark] = r.info("memory")["allocator_frag_ratio"]
        latest = {e[0].decode(): int(e[3]) for e in r.execute_command("LATENCY", "LATEST")}
        bf = r.info("bf")
        return {
            "before": before,
            "samples": samples,
            "cycle_ms": latest.get("active-defrag-cycle", 0),
            "command_ms": latest.get("command", 0),
            "hits": bf.get("bf_defrag_hits", 0),
            "paused": bf.get("bf_defrag_paused", 0),
        }
    finally:
        stop.set()
        if writer:
            writer.join()
        p.terminate()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for kind in ("strings", "bloom", "cuckoo", "mixed"):
        res = scenario(kind, args)
        s = res["samples"]
        row = (f"| {kind} | {res['before']:.2f} | {s[5]:.2f} | {s[10]:.2f} | "
               f"{s[args.seconds]:.2f} | {res['cycle_ms']} | {res['command_ms']} | "
               f"{res['hits']} | {res['paused']} |")
        print(row, flush=True)
        rows.append(row)
    table = "\n".join([
        f"| keyspace | frag ratio before | after 5 s | after 10 s | after {args.seconds} s "
        "| longest defrag cycle (ms) | longest command (ms) | blocks moved (bf_defrag_hits) "
        "| resumed steps (bf_defrag_paused) |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
    ])
    print()
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
