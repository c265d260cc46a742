"""Measures cuckoo-filter deletion and compaction latency on a live server.

Fills a filter with 6M items (1M reserved, EXPANSION 2 -> 4 sub-filters), deletes
90% of them with pipelined CF.DEL (each may run a bounded automatic compaction
step), then calls CF.COMPACT until a pass completes, and prints the per-call
times from INFO commandstats and the worst latencies from LATENCY LATEST.

Usage: python3 bench/cf_compact.py [port]   (a server with ferrobloom loaded)
"""
import sys
import time

import redis

r = redis.Redis(port=int(sys.argv[1]) if len(sys.argv) > 1 else 6379)
r.execute_command("CONFIG", "SET", "latency-monitor-threshold", 1)
r.execute_command("LATENCY", "RESET")
r.delete("big")
r.execute_command("CF.RESERVE", "big", 1_000_000, "EXPANSION", 2, "BUCKETSIZE", 2)
N = 6_000_000
B = 10_000
t = time.time()
for s in range(0, N, B):
    r.execute_command("CF.INSERT", "big", "ITEMS", *[f"i{j}" for j in range(s, s + B)])
info = r.execute_command("CF.INFO", "big")
print("filled", N, "items in", round(time.time()-t,1), "s; filters", int(info[b"Number of filters"]), "size MB", int(info[b"Size"])/1e6)
r.execute_command("CONFIG", "RESETSTAT")
t = time.time()
for s in range(0, int(N * 0.9), B):
    p = r.pipeline(transaction=False)
    for j in range(s, s + B):
        p.execute_command("CF.DEL", "big", f"i{j}")
    p.execute()
print("deleted 90% in", round(time.time()-t,1), "s")
calls = 0
while True:
    before = r.execute_command("CF.INFO", "big")[b"Number of filters"]
    r.execute_command("CF.COMPACT", "big"); calls += 1
    info = r.execute_command("CF.INFO", "big")
    if int(info[b"Number of items deleted"]) == 0 and calls > 1:
        break
    if calls > 2000: break
st = r.info("commandstats")
for c in ["cmdstat_cf.del", "cmdstat_cf.compact", "cmdstat_cf.insert"]:
    if c in st: print(c, st[c])
print("compact calls", calls, "filters now", int(info[b"Number of filters"]), "size MB", int(info[b"Size"])/1e6)
print(r.execute_command("LATENCY", "LATEST"))
