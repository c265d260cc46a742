"""ShardedBloomFilter over a three-node Redis Cluster: keys spread over the
slots (and so over the nodes), items routed by their own hash, batches
answered in order, and the shards moved out and in with pull and push."""

import pytest

import ferrobloom
from ferrobloom import BloomFilter, FilterError, ShardedBloomFilter
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


def test_native_routing_is_blake2b_64_of_the_items_bytes():
    """The native router sends every item where the documented hash does
    (``hashlib.blake2b(bytes, digest_size=8)``, little-endian, modulo the
    shard count): filters sharded before keep their items' shards."""
    import hashlib
    import struct

    from ferrobloom._ferrobloom import route

    items = ITEMS + [b"", "ü" * 50, 2**70, -1.25, bytearray(b"ba"), memoryview(b"mv")]
    for n in (1, 2, 7, 16, 1000):
        want = [
            struct.unpack("<Q", hashlib.blake2b(ferrobloom._sharded.encode(x), digest_size=8).digest())[0] % n
            for x in items
        ]
        assert [shard_of(x, n) for x in items] == want
        routed, lists = route(items, n)
        assert lists == [[x for x, s in zip(items, want) if s == k] for k in range(n)]
        encoded = route(items, n, encoded=True)[1]
        assert encoded == [[ferrobloom._sharded.encode(x) for x, s in zip(items, want) if s == k] for k in range(n)]
    with pytest.raises(TypeError):
        route([True], 4)


def test_sharded_batches_on_one_server_answer_in_order(r):
    """On a standalone server: answers in the items' order, a full shard's
    error instances in place, a refused command raised."""
    s = ShardedBloomFilter(r, "one", shards=5)
    s.create(50, 0.01, nonscaling=True)
    items = ["x%d" % i for i in range(400)]
    got = s.add_many(items)
    assert len(got) <= len(items)
    # Each shard's reply ends after its first "full" error, as BF.MADD's.
    assert any(isinstance(x, Exception) for x in got)
    ok = [x for x, g in zip(items, got) if g is True]
    assert all(s.contains_many(ok))
    assert s.contains_many([]) == []
    r.set(s.keys[0], "not a filter")
    with pytest.raises(Exception, match="WRONGTYPE"):
        s.add_many(items)


def test_push_replace_over_a_cluster_checks_the_key_under_watch(cluster, before_rename):
    """push(replace=True) through RedisCluster runs its final WATCH, TYPE and
    MULTI/EXEC on the key's primary: a string that primary's own client puts
    there after the check is refused and kept; a Bloom filter put there is
    replaced on the second try."""
    rc, nodes = cluster
    f = BloomFilter(1000)
    f.update(ITEMS[:500])
    keys = ["w-%d" % i for i in range(12)]
    assert len(set(rc.get_node_from_key(k).port for k in keys)) == 3
    for k in keys:
        owner = next(n for n in nodes if n.port == rc.get_node_from_key(k).port)
        before_rename(None)
        ferrobloom.push(rc, k, f, replace=True, progress=False)
        calls = before_rename(lambda n, key: n == 1 and owner.client.execute_command("BF.ADD", key, "theirs"))
        ferrobloom.push(rc, k, f, replace=True, progress=False)
        assert len(calls) == 2
        assert local_walk(f) == server_walk(rc, "BF", k)
        calls = before_rename(lambda n, key: owner.client.set(key, "arrived"))
        with pytest.raises(FilterError, match="^WRONGTYPE"):
            ferrobloom.push(rc, k, f, replace=True, progress=False)
        assert len(calls) == 1
        assert owner.client.get(k) == b"arrived"
        assert owner.client.keys("*ferrobloom-push*") == []
        rc.delete(k)
