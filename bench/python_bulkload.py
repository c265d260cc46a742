"""Bulk load from Python (issue 29's bench, not yet a part of `make bench`):
pipelined BF.MADD (1000 items a command) against `BloomFilter.update` + `push`,
wall time and bytes the server received (INFO stats), then pull and local
lookups against pipelined BF.MEXISTS. `pip install ./python redis`, then
`FERROBLOOM_MODULE=/path/libferrobloom.so python bench/python_bulkload.py 1000000`."""

import os
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
from conftest import Server
import ferrobloom, redis
n = int(sys.argv[1])
s = Server(os.environ.get("REDIS_SERVER", "redis-server"), os.environ["FERROBLOOM_MODULE"])
r = s.client
items = [b"item-%d" % i for i in range(n)]
def wire():
    st = r.info("stats"); return st["total_net_input_bytes"]
w0 = wire(); t0 = time.perf_counter()
r.execute_command("BF.RESERVE", "madd", 0.01, n, "NONSCALING")
p = r.pipeline(transaction=False)
for i in range(0, n, 1000):
    p.execute_command("BF.MADD", "madd", *items[i:i+1000])
    if (i // 1000) % 50 == 49: p.execute()
p.execute()
t_madd = time.perf_counter() - t0; w_madd = wire() - w0
w0 = wire(); t0 = time.perf_counter()
f = ferrobloom.BloomFilter(n, 0.01, nonscaling=True); f.update(items)
t_build = time.perf_counter() - t0
ferrobloom.push(r, "pushed", f, progress=False)
t_push = time.perf_counter() - t0; w_push = wire() - w0
t0 = time.perf_counter(); g = ferrobloom.pull(r, "pushed"); t_pull = time.perf_counter() - t0
assert r.execute_command("BF.SCANDUMP", "madd", 0) == r.execute_command("BF.SCANDUMP", "pushed", 0)
probe = items[:100000]
t0 = time.perf_counter(); g.contains_many(probe); t_local = (time.perf_counter() - t0) / len(probe) * 1e9
t0 = time.perf_counter()
p = r.pipeline(transaction=False)
for i in range(0, len(probe), 1000): p.execute_command("BF.MEXISTS", "pushed", *probe[i:i+1000])
p.execute(); t_remote = (time.perf_counter() - t0) / len(probe) * 1e9
print("n=%d  BF.MADD pipelined (1000/cmd): %.2f s, %d bytes in | build %.2f s + push: %.2f s total, %d bytes in | pull %.2f s | local lookup %.0f ns/item vs pipelined BF.MEXISTS %.0f ns/item" % (n, t_madd, w_madd, t_build, t_push, w_push, t_pull, t_local, t_remote))
s.stop()
