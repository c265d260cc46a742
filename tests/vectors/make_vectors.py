#!/usr/bin/env python3
"""Writes the cross-language test vectors in this directory with the Python
package (run once; the committed files are the vectors, never rewritten):
filter files of every kind and layout and `vectors.tsv`, which says how each
was made and what it answers. python/tests/test_vectors.py and the Java
library's VectorsTest read them: each loads every file, checks the answers,
re-encodes it byte for byte, and builds the same filter from the same
arguments and items to compare bytes (windowed filters aside: their
generations carry their creation time).

Items are those a client sends: item i is the text `v<i>` for odd i and the
integer i (its decimal text) for even i, added in order; the probes are items
0 .. 2n-1, then `none-0` .. `none-<n-1>`. Cuckoo vectors then delete the
items i < n/2 with i % 7 == 0. `as_of_ms` (windowed filters) is the time the
answers hold at; `after_ms` a time when nothing is live any more.

`routing.tsv`: the routing of the package's ShardedBloomFilter (which shard
holds an item, `BLAKE2b-64(item) mod shards`, and the shards' key names), so
that a writer in one language and a reader in another agree on it.

Usage: python tests/vectors/make_vectors.py  (with the package installed; a
file that exists is never rewritten)
"""
import os
import time

import ferrobloom

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = bytes(range(32))

# (file, kind, RESERVE arguments after the key, items)
CASES = [
    ("bloom-classic.fbf", "BF", ["0.01", "100"], 300),
    ("bloom-blocked-nonscaling.fbf", "BF", ["0.001", "500", "LAYOUT", "blocked", "NONSCALING"], 400),
    ("bloom-paired-x4.fbf", "BF", ["0.01", "100", "LAYOUT", "paired", "EXPANSION", "4"], 1000),
    ("bloom-redisbloom.fbf", "BF", ["0.01", "100", "LAYOUT", "redisbloom"], 300),
    ("bloom-tightening-seed.fbf", "BF", ["0.02", "100", "TIGHTENING", "0.7", "SEED", SEED], 500),
    ("bloom-window.fbf", "BF", ["0.01", "100", "WINDOW", "3600"], 250),
    ("cuckoo-ferrobloom.fbf", "CF", ["200", "BUCKETSIZE", "4", "ERROR", "0.001"], 300),
    ("cuckoo-redisbloom.fbf", "CF", ["200", "LAYOUT", "redisbloom"], 300),
]


def item(i):
    return "v%d" % i if i % 2 else i


def probes(n):
    return [item(i) for i in range(2 * n)] + ["none-%d" % i for i in range(n)]


def arg_text(a):
    return "hex:" + a.hex() if isinstance(a, bytes) else a


def value(v):
    """A command argument as the package's parameter of its type: an int, a
    float, or as it is (a layout's name, a seed's bytes)."""
    if isinstance(v, bytes):
        return v
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def build(kind, args):
    """The filter `<kind>.RESERVE key <args>` creates (the package's keywords)."""
    if kind == "CF":
        kw = {}
        names = {"BUCKETSIZE": "bucket_size", "ERROR": "error_rate", "LAYOUT": "layout",
                 "EXPANSION": "expansion", "MAXITERATIONS": "max_iterations"}
        for k, v in zip(args[1::2], args[2::2]):
            kw[names[k]] = value(v)
        return ferrobloom.CuckooFilter(value(args[0]), **kw)
    kw, rest = {}, args[2:]
    names = {"LAYOUT": "layout", "EXPANSION": "expansion", "TIGHTENING": "tightening",
             "SEED": "seed", "WINDOW": "window"}
    while rest:
        if rest[0] == "NONSCALING":
            kw["nonscaling"] = True
            rest = rest[1:]
        else:
            kw[names[rest[0]]] = value(rest[1])
            rest = rest[2:]
    return ferrobloom.BloomFilter(value(args[1]), value(args[0]), **kw)


def routing_items():
    """Items of every kind a client sends: texts (ASCII and not), integers, bytes."""
    out = ["", "a", "clicks:2026-11-28", "ü✓", "x" * 200]
    out += ["user-%d" % i for i in range(200)]
    out += list(range(-5, 100)) + [2**63 - 1, -(2**63)]
    out += [bytes([i]) * (i % 17) for i in range(1, 40)]
    return out


def write_routing(path):
    from ferrobloom._sharded import encode, shard_keys, shard_of

    rows = ["item_hex\tshards_16\tshards_7\tshards_1000"]
    for x in routing_items():
        b = encode(x)
        rows.append("%s\t%d\t%d\t%d" % (b.hex(), shard_of(b, 16), shard_of(b, 7), shard_of(b, 1000)))
    for name, n in (("clicks", 16), ("seen", 5), ("a{b}", 3)):
        rows.append("keys:%s:%d\t%s" % (name, n, " ".join(shard_keys(name, n))))
    with open(path, "w") as out:
        out.write("\n".join(rows) + "\n")


def main():
    routing = os.path.join(HERE, "routing.tsv")
    if not os.path.exists(routing):
        write_routing(routing)
    if os.path.exists(os.path.join(HERE, "vectors.tsv")):
        return
    rows = ["file\tkind\targs\titems\tas_of_ms\tafter_ms\tanswers\tinfo"]
    for name, kind, args, n in CASES:
        f = build(kind, args)
        f.update([item(i) for i in range(n)])
        if kind == "CF":
            for i in range(0, n // 2, 7):
                assert f.delete(item(i))
        as_of = after = "-"
        if kind == "BF" and f.window:
            t = time.time() + 1
            as_of, after = str(int(t * 1000)), str(int((t + 100 * 3600) * 1000))
            answers = f.contains_many(probes(n), as_of=int(as_of) / 1000)
        else:
            answers = f.contains_many(probes(n))
        info = ";".join("" if v is None else str(v) for v in f.info().values())
        with open(os.path.join(HERE, name), "wb") as out:
            out.write(f.to_bytes())
        rows.append("\t".join([name, kind, " ".join(arg_text(a) for a in args), str(n), as_of,
                               after, "".join("1" if a else "0" for a in answers), info]))
    with open(os.path.join(HERE, "vectors.tsv"), "w") as out:
        out.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
