#!/usr/bin/env python3
"""De-duplicate a stream of click events within a time window on a Redis Cluster.

One logical windowed Bloom filter over the cluster: `ferrobloom.ShardedBloomFilter`
(the Python package, `pip install ./python`) creates `--shards` windowed filters
(`BF.RESERVE ... WINDOW`) under keys whose hash tags spread them over the cluster's
slots, so the shards spread over its primaries, and routes each click id to one shard by
a hash independent of the filters' (the two-level sharding of a hand-made client-side
design, as a library class). A batch goes out as one `BF.MADD` per shard, pipelined per
node; an answer of True means "not seen within the window": a new click.

The script keeps an exact reference (each id's last send time) and classifies every
answer, with the client's send times bounding the server's:
- a repeat sent at most one window after the previous send of its id must answer 0
  (a false negative is a broken guarantee: the script exits 1);
- an id never sent, or last sent at least 1.25 windows before, must answer 1; a 0 is
  a false positive (expected at about the error rate);
- in between (the filter's slack) either answer is correct.

    python3 examples/dedup_pipeline.py --port 7000 --window 600 --duration 60

prints throughput, duplicates caught and false positives against the exact set.
"""

import argparse
import random
import sys
import time

from redis.cluster import RedisCluster

from ferrobloom import ShardedBloomFilter


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7000)
    ap.add_argument("--window", type=float, default=600.0, help="seconds")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of stream")
    ap.add_argument("--rate", type=int, default=5000, help="events per second")
    ap.add_argument("--dup", type=float, default=0.3, help="share of repeated ids")
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--error", type=float, default=0.01)
    ap.add_argument("--batch", type=int, default=2000, help="events per round trip")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()

    rc = RedisCluster(host=a.host, port=a.port, decode_responses=False)
    w = a.window
    per_shard = max(1, int(a.rate * w / a.shards * 2))  # capacity per window, 2x headroom
    clicks = ShardedBloomFilter(rc, "clicks", shards=a.shards)
    clicks.delete()
    clicks.create(per_shard * a.shards, a.error, window=w)

    rng = random.Random(a.seed)
    last = {}  # id -> (send start, send end) of its last send
    recent = []  # ids sent, in order, for repeats
    next_id = 0
    counts = dict(events=0, new=0, dups_caught=0, dups_must=0, fp=0, must_new=0, fn=0, slack=0)
    start = time.time()
    sent_until = start
    while time.time() - start < a.duration:
        # A batch of events: new ids, or repeats of ids from the last 2.5 windows.
        batch = []
        for _ in range(a.batch):
            if recent and rng.random() < a.dup:
                batch.append(recent[-1 - int(rng.random() ** 2 * min(len(recent), a.rate * w * 2.5))])
            else:
                batch.append(next_id)
                next_id += 1
        t0 = time.time()
        answers = clicks.add_many([f"click-{c}" for c in batch])
        t1 = time.time()
        seen_in_batch = {}
        for pos, (cid, r) in enumerate(zip(batch, answers)):
            if isinstance(r, Exception):
                raise r
            counts["events"] += 1
            prev = last.get(cid)
            if cid in seen_in_batch:
                prev = (t0, t1)  # an earlier copy in this very batch
            if prev is not None and t1 - prev[0] <= w:
                counts["dups_must"] += 1
                if not r:
                    counts["dups_caught"] += 1
                else:
                    counts["fn"] += 1
            elif prev is None or t0 - prev[1] >= 1.25 * w:
                counts["must_new"] += 1
                if r:
                    counts["new"] += 1
                else:
                    counts["fp"] += 1
            else:
                counts["slack"] += 1
            seen_in_batch.setdefault(cid, pos)
        for cid in batch:
            last[cid] = (t0, t1)
            recent.append(cid)
        # Pace to the requested rate.
        sent_until += a.batch / a.rate
        pause = sent_until - time.time()
        if pause > 0:
            time.sleep(pause)
    took = time.time() - start
    fp_rate = counts["fp"] / max(1, counts["must_new"])
    print(
        f"events {counts['events']} in {took:.1f} s ({counts['events'] / took:,.0f}/s) over "
        f"{a.shards} windowed filters (window {w} s, {per_shard} per window each)"
    )
    print(
        f"duplicates caught: {counts['dups_caught']} of {counts['dups_must']} "
        f"(false negatives: {counts['fn']})"
    )
    print(
        f"false positives: {counts['fp']} of {counts['must_new']} new events "
        f"({fp_rate:.4%}, error rate {a.error:.2%}); in the slack: {counts['slack']}"
    )
    if counts["fn"]:
        print("FAILED: a duplicate within the window was not caught", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
