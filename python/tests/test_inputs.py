"""What the package takes as input, decided and documented in
docs/clients.md: constructor parameters of the right types only (the
server's parser would read "1000" too; a program passing strings has a bug),
``CuckooFilter``'s error rate second as ``BloomFilter``'s, bytes-like objects
and binary files for ``from_bytes``/``load``, filters only for ``save``, and
``pull`` with ``decode_responses=True`` clients."""

import enum
import io

import pytest
import redis

import ferrobloom
from ferrobloom import BloomFilter, CuckooFilter, FilterError, FormatError


class Size(enum.IntEnum):
    SMALL = 1000


@pytest.mark.parametrize(
    "make",
    [
        lambda: BloomFilter("1000", "0.01"),
        lambda: BloomFilter(1000, "0.01"),
        lambda: BloomFilter("1000"),
        lambda: BloomFilter(1000.0),
        lambda: BloomFilter(True),
        lambda: BloomFilter(1000, expansion="2"),
        lambda: BloomFilter(1000, expansion=2.0),
        lambda: BloomFilter(1000, layout=1),
        lambda: BloomFilter(1000, window="60"),
        lambda: BloomFilter(1000, seed="x" * 32),
        lambda: BloomFilter(1000, validate_scale_to="10"),
        lambda: CuckooFilter("1000"),
        lambda: CuckooFilter(1000, "0.01"),
        lambda: CuckooFilter(1000, bucket_size="4"),
        lambda: CuckooFilter(1000, max_iterations=2.5),
    ],
)
def test_parameters_of_the_wrong_type_raise_type_error(make):
    with pytest.raises(TypeError, match="must be"):
        make()


def test_parameters_take_int_subclasses_and_floats_by_value():
    # An IntEnum capacity is its value (not its repr, as an item would be).
    assert BloomFilter(Size.SMALL).capacity == 1000
    assert BloomFilter(1000, 1e-5).error_rate == 1e-5
    assert BloomFilter(1000, 0.01, window=1.5).window == 1.5
    assert CuckooFilter(Size.SMALL, bucket_size=4).info()["Bucket size"] == 4


def test_cuckoo_error_rate_comes_second_as_bloom_s():
    """``CuckooFilter(1000, 0.01)`` is ``CF.RESERVE key 1000 ERROR 0.01``."""
    c = CuckooFilter(1000, 0.001)
    assert c.error_rate == 0.001
    assert c.fingerprint_bits == CuckooFilter(1000, error_rate=0.001).fingerprint_bits > 8
    assert CuckooFilter(1000).error_rate is None


def test_from_bytes_takes_bytes_like_objects():
    f = BloomFilter(1000, 0.01)
    f.update(["a", "b"])
    data = f.to_bytes()
    for form in (data, bytearray(data), memoryview(data), memoryview(bytearray(data))):
        for read in (ferrobloom.from_bytes, BloomFilter.from_bytes):
            g = read(form)
            assert g.to_bytes() == data and "a" in g
    with pytest.raises(FormatError):
        ferrobloom.from_bytes(bytearray(b"junk"))
    with pytest.raises(TypeError, match="expected bytes"):
        ferrobloom.from_bytes("not bytes")


def test_save_takes_filters_only(tmp_path):
    with pytest.raises(TypeError, match="BloomFilter or a CuckooFilter"):
        ferrobloom.save("abc", tmp_path / "x.fbf")
    assert not (tmp_path / "x.fbf").exists()


def test_load_refuses_a_text_file_clearly(tmp_path):
    p = tmp_path / "f.fbf"
    ferrobloom.save(BloomFilter(100), p)
    with open(p) as text:
        with pytest.raises(TypeError, match="binary file object"):
            ferrobloom.load(text)
    with pytest.raises(TypeError, match="binary file object"):
        ferrobloom.from_bytes(io.StringIO("x"))
    with open(p, "rb") as binary:
        assert isinstance(ferrobloom.load(binary), BloomFilter)


def test_pull_and_push_with_decode_responses(server):
    """A client that decodes replies to str (``decode_responses=True``)
    pushes and pulls Bloom and cuckoo filters bit for bit, also over RESP3."""
    for protocol in (2, 3):
        c = redis.Redis(port=server.port, decode_responses=True, protocol=protocol)
        c.flushall()
        b = BloomFilter(1000, 0.01)
        b.update(["x", b"\xff\xfe"])
        k = CuckooFilter(1000, layout="redisbloom")
        k.update(["x", b"\xff"])
        ferrobloom.push(c, "b", b)
        ferrobloom.push(c, "k", k)
        assert ferrobloom.pull(c, "b").to_bytes() == b.to_bytes()
        assert ferrobloom.pull(c, "k").to_bytes() == k.to_bytes()
        c.close()


def test_pull_from_redisbloom_with_decode_responses(redisbloom):
    c = redis.Redis(port=redisbloom.port, decode_responses=True)
    c.flushall()
    c.execute_command("BF.RESERVE", "b", 0.01, 1000)
    c.execute_command("BF.MADD", "b", "x", "y")
    c.execute_command("CF.RESERVE", "k", 1000)
    c.execute_command("CF.ADD", "k", "x")
    assert ferrobloom.pull(c, "b").contains_many(["x", "y"]) == [True, True]
    assert ferrobloom.pull(c, "k").exists("x")
    c.close()


def test_push_replace_refuses_a_key_of_another_type(r):
    f = BloomFilter(100)
    r.set("s", "v")
    r.execute_command("CF.RESERVE", "c", 100)
    for key in ("s", "c"):
        with pytest.raises(FilterError, match="^WRONGTYPE.*force=True"):
            ferrobloom.push(r, key, f, replace=True)
    assert r.get("s") == b"v" and r.type("c") == b"MBbloomCF"
    # Nothing was left behind.
    assert sorted(r.keys()) == [b"c", b"s"]
    # A filter of the same kind, or force=True, is replaced.
    r.execute_command("BF.RESERVE", "b", 0.01, 10)
    ferrobloom.push(r, "b", f, replace=True)
    ferrobloom.push(r, "s", f, replace=True, force=True)
    assert ferrobloom.pull(r, "s").to_bytes() == f.to_bytes()


def test_push_into_redisbloom_says_which_layout_it_takes(rb):
    for f in (BloomFilter(100), CuckooFilter(100), BloomFilter(100, window=60)):
        with pytest.raises(FilterError, match='layout="redisbloom"'):
            ferrobloom.push(rb, "k", f)
    assert rb.keys() == []
    # RedisBloom's layouts go in.
    ferrobloom.push(rb, "b", BloomFilter(100, layout="redisbloom"))
    ferrobloom.push(rb, "c", CuckooFilter(100, layout="redisbloom"))


def test_from_dump_reads_a_ferrobloom_dump(r):
    """pull reads RedisBloom's keys with DUMP; the same reader takes
    ferrobloom's payloads of every kind (a server without STAMP)."""
    b = BloomFilter(1000, 0.01, layout="blocked")
    b.update(["a", "b"])
    w = BloomFilter(100, 0.01, window=60)
    w.add("x")
    c = CuckooFilter(1000)
    c.add("a")
    for name, f in (("b", b), ("w", w), ("c", c)):
        ferrobloom.push(r, name, f)
        assert ferrobloom._ferrobloom.from_dump(r.dump(name)).to_bytes() == ferrobloom.pull(r, name).to_bytes()
    with pytest.raises(FormatError):
        ferrobloom._ferrobloom.from_dump(r.dump("b")[:-1])
