"""The package without a server: items of every type, batches, set-like
methods, union rules, copies, pickling, the file format, and bad input
(truncated, corrupted, lying or foreign bytes) refused with FormatError."""

import copy
import io
import pickle
import threading
import tracemalloc

import pytest

import ferrobloom
from ferrobloom import BloomFilter, CuckooFilter, FilterError, FormatError


def filters():
    out = []
    for layout in ("classic", "blocked", "paired", "redisbloom"):
        f = BloomFilter(100, 0.01, layout=layout)
        f.update("i%d" % i for i in range(500))
        out.append(f)
    for layout in ("ferrobloom", "redisbloom"):
        c = CuckooFilter(100, layout=layout)
        c.update("i%d" % i for i in range(300))
        out.append(c)
    return out


def walk(f):
    """The SCANDUMP walk, a cuckoo filter's iterators as positions: once
    fingerprints moved they carry the filter's move count (bit 62, count in
    bits 40-61), which lives in memory only (a loaded copy has none)."""
    cuckoo = isinstance(f, ferrobloom.CuckooFilter)
    out, it = [], 0
    while True:
        it, d = f.scandump(it)
        if it == 0:
            return out
        out.append((it & ((1 << 40) - 1) if cuckoo and it & (1 << 62) else it, d))


def test_items_are_encoded_as_redis_py_sends_them():
    f = BloomFilter(1000)
    f.update([b"7", "x", 1.5, bytearray(b"ba"), memoryview(b"mv")])
    assert 7 in f and "7" in f and b"7" in f
    assert "1.5" in f and b"ba" in f and "mv" in f
    with pytest.raises(TypeError, match="bool"):
        f.add(True)
    with pytest.raises(TypeError):
        f.add(None)
    with pytest.raises(TypeError):
        f.update("not an iterable of items")
    assert f.add("ü") and f.exists("ü".encode())


def test_set_like_methods():
    f = BloomFilter(1000)
    assert f.add_many(["a", "b", "a"]) == [True, True, False]
    assert f.add("c") is True and f.add("c") is False
    assert len(f) == 3 and "a" in f and "zz" not in f
    assert f.contains_many(["a", "zz"]) == [True, False]
    c = CuckooFilter(100)
    assert c.insert(["a", "a", "b"]) == [1, 1, 1]
    assert c.insert(["a", "z"], nx=True) == [0, 1]
    assert c.count("a") == 2 and c.delete("a") and c.count("a") == 1
    assert c.add_nx("a") is False and len(c) == 3


def test_union_follows_bf_merge():
    a, b = BloomFilter(1000), BloomFilter(1000)
    a.update(["x"])
    b.update(["y"])
    u = a | b
    assert "x" in u and "y" in u and "y" not in a
    assert a.union(b, b, a).contains_many(["x", "y"]) == [True, True]
    a |= b
    assert "y" in a
    a |= a
    with pytest.raises(FilterError, match="incompatible filters: source 2 differs"):
        a | BloomFilter(10)
    with pytest.raises(TypeError):
        a | CuckooFilter(100)


def test_copies_and_pickles_are_identical():
    for f in filters():
        for g in (copy.copy(f), copy.deepcopy(f), pickle.loads(pickle.dumps(f)), ferrobloom.from_bytes(f.to_bytes())):
            assert type(g) is type(f) and walk(g) == walk(f)
        g = f.copy()
        g.update(["new"])
        assert walk(g) != walk(f)


def test_save_and_load(tmp_path):
    for i, f in enumerate(filters()):
        p = tmp_path / ("f%d.fbf" % i)
        ferrobloom.save(f, p)
        assert walk(ferrobloom.load(p)) == walk(f)
    with pytest.raises(FormatError):
        ferrobloom.load(__file__)


def test_the_other_kind_is_refused():
    b, c = BloomFilter(100).to_bytes(), CuckooFilter(100).to_bytes()
    assert ferrobloom.file_kind(b) == "BF" and ferrobloom.file_kind(c) == "CF"
    with pytest.raises(FormatError, match="holds a CF filter"):
        BloomFilter.from_bytes(c)
    with pytest.raises(FormatError, match="holds a BF filter"):
        CuckooFilter.from_bytes(b)


def test_bad_bytes_are_refused_never_crash():
    # Every truncation point of a sample; random filters, truncations, changed
    # bytes and chunks, and junk: test_properties.py.
    for f in filters():
        data = f.to_bytes()
        for cut in range(0, len(data), max(1, len(data) // 200)):
            with pytest.raises(FormatError):
                ferrobloom.from_bytes(data[:cut])
    # A header that lies about its size, with the chunks behind it missing.
    big = BloomFilter(10**8, 0.001)
    header = big.scandump(0)
    with pytest.raises(FormatError):
        BloomFilter.from_chunks([header])
    with pytest.raises(FormatError):
        BloomFilter.from_chunks([header, (2, b"x")])
    with pytest.raises(FormatError):
        BloomFilter.from_chunks([])


def test_full_and_limits():
    n = BloomFilter(10, nonscaling=True)
    r = n.add_many(str(i) for i in range(30))
    assert r[:10] == [True] * 10 and isinstance(r[10], FilterError) and len(r) == 11
    assert str(r[10]) == "ERR non scaling filter is full"
    with pytest.raises(FilterError, match="^ERR non scaling filter is full$"):
        n.update(["more", "and more"])
    big = BloomFilter(10**6)
    with pytest.raises(FilterError, match="max-filter-memory"):
        big.check_limits(max_bytes=4096)
    big.check_limits()


def test_batches_run_beside_other_threads():
    f = BloomFilter(10**6)
    f.update(range(200000))
    results = []

    def probe():
        results.append(sum(f.contains_many(range(200000))))

    threads = [threading.Thread(target=probe) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200000] * 4


class Unseekable:
    """A binary stream that cannot seek (a pipe, a socket): read whole."""

    def __init__(self, data):
        self.b = io.BytesIO(data)

    def read(self, n=-1):
        return self.b.read(n)

    def seekable(self):
        return False


def test_load_reads_a_file_chunk_by_chunk(tmp_path):
    # A 26 MiB file (two data chunks): load() reads it straight into the
    # filter, a 1 MiB block at a time, where reading it whole holds all of it
    # in Python memory at once (tracemalloc sees Python's allocations only,
    # not the filter's, which the core allocates).
    f = BloomFilter(20_000_000, 0.01)
    f.update(range(50000))
    path = tmp_path / "big.fbf"
    ferrobloom.save(f, path)
    size = path.stat().st_size

    def peak(fn):
        tracemalloc.start()
        try:
            g = fn()
            return g, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole, whole_peak = peak(lambda: ferrobloom.from_bytes(path.read_bytes()))
    assert whole_peak > size
    for load in (lambda: ferrobloom.load(path), lambda: BloomFilter.from_bytes(open(path, "rb"))):
        g, p = peak(load)
        assert p < 4 << 20, p
        assert walk(g) == walk(f) == walk(whole)
    # From the file object's position; a stream that cannot seek; the other kind.
    data = f.to_bytes()
    b = io.BytesIO(b"prefix" + data)
    b.seek(6)
    assert walk(ferrobloom.load(b)) == walk(f)
    assert walk(ferrobloom.from_bytes(Unseekable(data))) == walk(f)
    with pytest.raises(FormatError, match="holds a BF filter"):
        CuckooFilter.from_bytes(io.BytesIO(data))
    with pytest.raises(FormatError, match="holds a BF filter"):
        CuckooFilter.from_bytes(Unseekable(data))
    with pytest.raises(FormatError, match="bad magic"):
        ferrobloom.load(io.BytesIO(b"junk"))
    assert walk(ferrobloom.from_bytes(bytearray(data))) == walk(f)
    with pytest.raises(TypeError):
        ferrobloom.from_bytes(io.StringIO("text"))
