"""In-process batch add and lookup from Python, ns/item, ferrobloom's package
against rbloom 1.5.4 and fastbloom-rs 0.5.10 (issue 29's bench, not yet a part of
`make bench`): `pip install ./python rbloom==1.5.4 fastbloom-rs==0.5.10`, then
`python bench/python_inprocess.py 1000000`. Non-scaling filters of n items at 1%;
rbloom has no batch lookup (a Python `in` loop); bytes items."""

import sys, time, gc
import ferrobloom, rbloom, fastbloom_rs
n = int(sys.argv[1])
items = [b"item-%d" % i for i in range(n)]
probes = [b"none-%d" % i for i in range(n)]
def t(f):
    gc.collect(); s = time.perf_counter(); r = f(); return (time.perf_counter() - s) * 1e9 / n, r
rows = []
for layout in ("classic", "blocked"):
    f = ferrobloom.BloomFilter(n, 0.01, layout=layout, nonscaling=True)
    add, _ = t(lambda: f.update(items))
    hit, r = t(lambda: f.contains_many(items)); assert all(r)
    miss, r = t(lambda: f.contains_many(probes)); fp = sum(r) / n
    rows.append(("ferrobloom " + layout, add, hit, miss, fp, f.info()["Size"]))
b = rbloom.Bloom(n, 0.01)
add, _ = t(lambda: b.update(items))
hit, r = t(lambda: [x in b for x in items]); assert all(r)
miss, r = t(lambda: [x in b for x in probes]); fp = sum(r) / n
rows.append(("rbloom 1.5.4 (update; `in` loop)", add, hit, miss, fp, b.size_in_bits // 8))
fb = fastbloom_rs.BloomFilter(n, 0.01)
add, _ = t(lambda: fb.add_bytes_batch(items))
hit, r = t(lambda: fb.contains_bytes_batch(items)); assert all(r)
miss, r = t(lambda: fb.contains_bytes_batch(probes)); fp = sum(r) / n
rows.append(("fastbloom-rs 0.5.10 (batch)", add, hit, miss, fp, len(fb.get_bytes())))
print("n=%d" % n)
for r in rows:
    print("%-36s add %6.1f ns  hit %6.1f ns  miss %6.1f ns  fp %.4f  bytes %d" % r)
