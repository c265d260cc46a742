"""ShardedBloomFilter over a three-node Redis Cluster: keys spread over the
slots (and so over the nodes), items routed by their own hash, batches
answered in order, and the shards moved out and in with pull and push."""

import pytest

import ferrobloom
from ferrobloom import FilterError, ShardedBloomFilter
from ferrobloom._sharded import shard_of
from test_server import ITEMS, PROBES, local_walk, server_walk


def test_sharded_filter_over_a_cluster(cluster):
    rc, nodes = cluster
    s = ShardedBloomFilter(rc, "clicks", shards=12)
    slots = [rc.keyslot(k) for k in s.keys]
    assert len(set(rc.get_node_from_key(k).port for k in s.keys)) == 3
    assert max(slots) - min(slots) > 12000
    s.create(12000, 0.01)
    added = s.add_many(ITEMS)
    # The same answers as one filter per shard fed the routed items.
    local = s.local_shards(12000, 0.01)
    for f, items in zip(local, s.route(ITEMS)):
        f.add_many(items)
    assert added == [x for x in _in_order(local, s, ITEMS)]
    assert all(s.contains_many(ITEMS))
    assert s.contains_many(PROBES) == [local[shard_of(ferrobloom._sharded.encode(p), 12)].exists(p) for p in PROBES]
    assert len(s) == sum(len(f) for f in local)
    pulled = s.pull()
    for k, f in zip(s.keys, pulled):
        assert local_walk(f) == server_walk(rc, "BF", k)
    # Offline shards pushed into another sharded filter answer the same.
    t = ShardedBloomFilter(rc, "copy", shards=12)
    t.push(local)
    assert t.contains_many(PROBES) == s.contains_many(PROBES)
    with pytest.raises(FilterError):
        t.push(local[:3])
    with pytest.raises(FilterError, match=r"error rate range"):
        ShardedBloomFilter(rc, "bad", shards=2).create(100, 2)
    s.delete()
    t.delete()


def _in_order(local, s, items):
    """Adds each item to its local shard again in input order; the answers a
    second add gives are not the first's, so recompute from scratch."""
    fresh = s.local_shards(12000, 0.01)
    for x in items:
        e = ferrobloom._sharded.encode(x)
        yield fresh[shard_of(e, s.shards)].add(e)


def test_routing_is_independent_and_even():
    counts = [0] * 8
    for i in range(80000):
        counts[shard_of(b"item-%d" % i, 8)] += 1
    assert min(counts) > 9500 and max(counts) < 10500
