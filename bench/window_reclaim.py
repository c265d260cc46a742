"""Measures freeing dropped generations when many windowed filters rotate together.

KEYS windowed filters (`BF.RESERVE wK 0.01 CAP WINDOW 4`, CAP 20,000,000: a
generation of 8.25 MB) are each written once per round with ITEMS items, the test
clock (FERROBLOOM.CLOCK, a fault-injection build) moved 5 s (past the 4 s window)
before every round: each write drops the key's 8.25 MB generation and starts a new
one, so every round drops KEYS generations together. ITEMS items touch about ITEMS
pages (4 KiB) of a generation (paired layout: one cache line per item), so a
dropped generation holds about ITEMS * 4 KiB resident.

Prints, per round and in total: the module's freeing threads and all server
threads (sampled from /proc/<pid>/task every 5 ms during the round), the slowest
command (SLOWLOG, every command logged) and LATENCY LATEST, FERROBLOOM.RECLAIM
STATS (writes handed to the worker / kept in the backlog, main-thread steps and
the longest), and used_memory / RSS before, during and after DEL of every key.

Usage: python3 bench/window_reclaim.py SOCKET PID [KEYS] [ITEMS] [ROUNDS] [pause]
(a server started with the fault-injection build of the module)
"""
import sys
import threading
import time

import redis

sock, pid = sys.argv[1], int(sys.argv[2])
KEYS = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
ITEMS = int(sys.argv[4]) if len(sys.argv) > 4 else 256
ROUNDS = int(sys.argv[5]) if len(sys.argv) > 5 else 4
# `pause`: the worker is paused (FERROBLOOM.RECLAIM PAUSE), so every drop past
# its queue is released by the main thread in steps (the fallback's cost).
PAUSE = len(sys.argv) > 6 and sys.argv[6] == "pause"
CAP = 20_000_000

r = redis.Redis(unix_socket_path=sock)


def threads():
    import os
    allt = free = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        allt += 1
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                free += f.read().strip() == "ferrobloom-free"
        except OSError:
            pass
    return allt, free


peak = {"all": 0, "free": 0}
stop = threading.Event()


def sampler():
    while not stop.is_set():
        a, f = threads()
        peak["all"] = max(peak["all"], a)
        peak["free"] = max(peak["free"], f)
        time.sleep(0.005)


def stats():
    try:
        return r.execute_command("FERROBLOOM.RECLAIM", "STATS")
    except redis.ResponseError:
        return None  # a build before the freeing worker


def mem():
    i = r.info("memory")
    return i["used_memory"] / 1e6, i["used_memory_rss"] / 1e6


r.flushall()
r.execute_command("CONFIG", "SET", "slowlog-log-slower-than", 0)
r.execute_command("CONFIG", "SET", "slowlog-max-len", 100_000)
r.execute_command("CONFIG", "SET", "latency-monitor-threshold", 1)
base_threads = threads()
base_mem = mem()
print(f"start: threads {base_threads}, used/rss MB {base_mem[0]:.1f}/{base_mem[1]:.1f}")
for k in range(KEYS):
    r.execute_command("BF.RESERVE", f"w{k}", 0.01, CAP, "WINDOW", 4)
if PAUSE:
    r.execute_command("FERROBLOOM.RECLAIM", "PAUSE")
elif stats() is not None:
    r.execute_command("FERROBLOOM.RECLAIM", "RESUME")
th = threading.Thread(target=sampler)
th.start()
clock = 0
worst = (0, None)
for rnd in range(ROUNDS + 1):
    clock += 5000
    r.execute_command("FERROBLOOM.CLOCK", clock)
    r.execute_command("SLOWLOG", "RESET")
    peak["all"] = peak["free"] = 0
    t = time.time()
    for k in range(KEYS):
        r.execute_command("BF.MADD", f"w{k}", *[f"r{rnd}:{i}" for i in range(ITEMS)])
    took = time.time() - t
    slow = [e for e in r.execute_command("SLOWLOG", "GET", 100_000) if e[3][0] == b"BF.MADD"]
    top = max(slow, key=lambda e: e[2]) if slow else None
    us = sorted(e[2] for e in slow)
    pct = (us[len(us) // 2], us[len(us) * 99 // 100]) if us else (0, 0)
    if top and top[2] > worst[0]:
        worst = (top[2], [a.decode(errors="replace")[:20] for a in top[3][:3]])
    st = stats()
    used, rss = mem()
    print(
        f"round {rnd}: {KEYS} writes in {took:.1f} s; threads peak {peak['all']} "
        f"(ferrobloom-free {peak['free']}); BF.MADD p50 {pct[0]} us, p99 {pct[1]} us, "
        f"slowest {top[2] if top else 0} us "
        f"{[a.decode(errors='replace')[:12] for a in top[3][:2]] if top else ''}; "
        f"reclaim {st}; used/rss MB {used:.0f}/{rss:.0f}"
    )
if PAUSE:
    r.execute_command("FERROBLOOM.RECLAIM", "RESUME")
time.sleep(1)
stop.set()
th.join()
print("LATENCY LATEST", r.execute_command("LATENCY", "LATEST"))
print("slowest command over all rounds:", worst)
print("reclaim STATS [worker, backlog, steps, longest step us, all steps us, backlog entries, bytes]:", stats())
r.execute_command("SLOWLOG", "RESET")
r.execute_command("CONFIG", "SET", "slowlog-log-slower-than", 10_000)
for k in range(KEYS):
    r.delete(f"w{k}")
for _ in range(100):
    if mem()[0] <= base_mem[0] + 1:
        break
    time.sleep(0.1)
print(f"after DEL: used/rss MB {mem()[0]:.1f}/{mem()[1]:.1f} (start {base_mem[0]:.1f}/{base_mem[1]:.1f})")
