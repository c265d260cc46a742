"""The RedisBloom layouts against RedisBloom 2.8.2 itself: a local filter of
RedisBloom's layout dumps byte for byte as RedisBloom's SCANDUMP for the same
parameters and items; pushed into RedisBloom, RedisBloom answers as the local
filter; pulled from RedisBloom, the local filter answers as RedisBloom; and a
filter moves from RedisBloom to ferrobloom and back unchanged."""

import pytest

import ferrobloom
from ferrobloom import BloomFilter, CuckooFilter
from test_server import ITEMS, PROBES, batches, check_same, local_walk, same_reply, server_walk

BF = [((), {}), (("NONSCALING",), {"nonscaling": True}), (("EXPANSION", 4), {"expansion": 4})]


@pytest.mark.parametrize("opts,kwargs", BF, ids=["scaling", "nonscaling", "x4"])
def test_bloom_redisbloom_layout_is_redisbloom(rb, r, opts, kwargs):
    local = BloomFilter(100, 0.01, layout="redisbloom", **kwargs)
    rb.execute_command("BF.RESERVE", "k", 0.01, 100, *opts)
    for b in batches(ITEMS):
        mine, theirs = local.add_many(b), rb.execute_command("BF.MADD", "k", *b)
        assert all(same_reply(x, y) for x, y in zip(mine, theirs)) and len(mine) == len(theirs)
    check_same(rb, "BF", "k", local)
    ferrobloom.push(rb, "pushed", local, progress=False)
    check_same(rb, "BF", "pushed", local)
    pulled = ferrobloom.pull(rb, "k")
    assert local_walk(pulled) == server_walk(rb, "BF", "k")
    # RedisBloom -> ferrobloom -> RedisBloom.
    ferrobloom.push(r, "moved", pulled, progress=False)
    check_same(r, "BF", "moved", local)
    back = ferrobloom.pull(r, "moved")
    ferrobloom.push(rb, "back", back, progress=False)
    assert server_walk(rb, "BF", "back") == server_walk(rb, "BF", "k")


@pytest.mark.parametrize("bucket_size", [2, 4])
def test_cuckoo_redisbloom_layout_is_redisbloom(rb, r, bucket_size):
    local = CuckooFilter(200, layout="redisbloom", bucket_size=bucket_size)
    rb.execute_command("CF.RESERVE", "k", 200, "BUCKETSIZE", bucket_size)
    for b in batches(ITEMS[:1200]):
        assert local.insert(b) == rb.execute_command("CF.INSERT", "k", "ITEMS", *b)
    for x in ITEMS[:300:7]:
        assert local.delete(x) == bool(rb.execute_command("CF.DEL", "k", x))
    check_same(rb, "CF", "k", local)
    ferrobloom.push(rb, "pushed", local, progress=False)
    check_same(rb, "CF", "pushed", local)
    pulled = ferrobloom.pull(rb, "k")
    assert pulled.contains_many(PROBES) == local.contains_many(PROBES)
    ferrobloom.push(r, "moved", pulled, progress=False)
    check_same(r, "CF", "moved", local)
