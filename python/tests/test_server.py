"""The package against real servers: for every kind and layout, a local filter
built from the same parameters and items in the same order answers as the
server and dumps byte for byte as the server's SCANDUMP; pushed, the server
answers as the local filter; pulled, the local filter answers as the server.
Bad parameters get the server's error texts; push and pull keep their
promises (atomic replace, refusals before anything is sent, missing keys,
wrong types)."""

import itertools

import pytest
import redis

import ferrobloom
from conftest import IDENTITY_SERVERS, start_server
from ferrobloom import BloomFilter, CuckooFilter, FilterError


@pytest.fixture(scope="module", params=IDENTITY_SERVERS)
def server(request, module):
    """Every server this suite runs on (conftest.py: Redis 7.0, Valkey 8 and 9,
    Redis 8.2), where the other suites run on two."""
    s = start_server(request.param, module)
    yield s
    s.stop()


SEED = bytes(range(32))

# (name, local keyword arguments, BF.RESERVE options after `error capacity`)
BF_CASES = [
    ("classic", {}, []),
    ("classic-nonscaling", {"nonscaling": True}, ["NONSCALING"]),
    ("blocked-x3", {"layout": "blocked", "expansion": 3}, ["LAYOUT", "blocked", "EXPANSION", 3]),
    ("paired", {"layout": "paired"}, ["LAYOUT", "paired"]),
    ("redisbloom", {"layout": "redisbloom"}, ["LAYOUT", "redisbloom"]),
    (
        "redisbloom-nonscaling",
        {"layout": "redisbloom", "nonscaling": True},
        ["LAYOUT", "redisbloom", "NONSCALING"],
    ),
    (
        "classic-tightening-seed",
        {"tightening": 0.7, "seed": SEED},
        ["TIGHTENING", 0.7, "SEED", SEED],
    ),
]

# (name, local keyword arguments, CF.RESERVE options after `capacity`)
CF_CASES = [
    ("ferrobloom", {}, []),
    (
        "ferrobloom-options",
        {"bucket_size": 4, "max_iterations": 50, "expansion": 2, "error_rate": 0.001},
        ["BUCKETSIZE", 4, "MAXITERATIONS", 50, "EXPANSION", 2, "ERROR", 0.001],
    ),
    ("redisbloom", {"layout": "redisbloom"}, ["LAYOUT", "redisbloom"]),
    (
        "redisbloom-bs3",
        {"layout": "redisbloom", "bucket_size": 3},
        ["LAYOUT", "redisbloom", "BUCKETSIZE", 3],
    ),
]

# Items of every type a client sends (str, int, float, bytes), in a fixed order.
ITEMS = [("item-%d" % i) if i % 3 else (i if i % 2 else b"b\x00%d" % i) for i in range(1500)]
ITEMS += [1.5, -7, "ü", b""]
PROBES = ["item-%d" % i for i in range(0, 4000, 3)] + list(range(3000)) + ["none-%d" % i for i in range(2000)]


def batches(xs, n=250):
    for i in range(0, len(xs), n):
        yield xs[i : i + n]


def position(kind, it):
    """A cuckoo walk's iterators carry the filter's fingerprint-move count once
    fingerprints moved (bit 62, count in bits 40-61; kept in memory only, so a
    loaded copy walks with plain positions): copies compare by position."""
    if kind == "CF" and it & (1 << 62):
        return it & ((1 << 40) - 1)
    return it


def server_walk(r, kind, key):
    out, it = [], 0
    while True:
        nxt, data = r.execute_command(kind + ".SCANDUMP", key, it)
        if nxt == 0:
            return out
        out.append((position(kind, nxt), bytes(data)))
        it = nxt


def local_walk(f):
    kind = "CF" if isinstance(f, CuckooFilter) else "BF"
    out, it = [], 0
    while True:
        nxt, data = f.scandump(it)
        if nxt == 0:
            return out
        out.append((position(kind, nxt), data))
        it = nxt


def server_info(r, kind, key):
    flat = r.execute_command(kind + ".INFO", key)
    if isinstance(flat, dict):
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in flat.items()}
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def same_reply(local, server):
    """An element of a local batch reply against the server's."""
    if isinstance(local, FilterError):
        return isinstance(server, redis.ResponseError) and str(local).endswith(str(server))
    return int(local) == int(server)


def build_bloom(r, name, kwargs, opts, capacity=100, error=0.01):
    local = BloomFilter(capacity, error, **kwargs)
    r.execute_command("BF.RESERVE", name, error, capacity, *opts)
    for b in batches(ITEMS):
        mine = local.add_many(b)
        theirs = r.execute_command("BF.MADD", name, *b)
        assert len(mine) == len(theirs)
        assert all(same_reply(x, y) for x, y in zip(mine, theirs)), (mine, theirs)
    return local


def build_cuckoo(r, name, kwargs, opts, capacity=200):
    local = CuckooFilter(capacity, **kwargs)
    r.execute_command("CF.RESERVE", name, capacity, *opts)
    for b in batches(ITEMS[:1200]):
        assert local.insert(b) == r.execute_command("CF.INSERT", name, "ITEMS", *b)
    for x in ITEMS[:300:7]:
        assert local.delete(x) == bool(r.execute_command("CF.DEL", name, x))
    return local


def check_same(r, kind, key, local):
    assert local_walk(local) == server_walk(r, kind, key)
    assert local.contains_many(PROBES) == [bool(x) for x in r.execute_command(kind + ".MEXISTS", key, *PROBES)]
    assert local.info() == server_info(r, kind, key)


@pytest.mark.parametrize("name,kwargs,opts", BF_CASES, ids=[c[0] for c in BF_CASES])
def test_bloom_identical_to_server(r, name, kwargs, opts):
    local = build_bloom(r, "k", kwargs, opts)
    check_same(r, "BF", "k", local)
    assert len(local) == r.execute_command("BF.CARD", "k")
    # The file format and pickling keep it byte for byte.
    again = ferrobloom.from_bytes(local.to_bytes())
    assert local_walk(again) == local_walk(local)


@pytest.mark.parametrize("name,kwargs,opts", CF_CASES, ids=[c[0] for c in CF_CASES])
def test_cuckoo_identical_to_server(r, name, kwargs, opts):
    local = build_cuckoo(r, "k", kwargs, opts)
    check_same(r, "CF", "k", local)
    for x in ITEMS[:50]:
        assert local.count(x) == r.execute_command("CF.COUNT", "k", x)


@pytest.mark.parametrize("name,kwargs,opts", BF_CASES, ids=[c[0] for c in BF_CASES])
def test_bloom_push_and_pull(r, name, kwargs, opts):
    local = build_bloom(r, "built", kwargs, opts)
    ferrobloom.push(r, "pushed", local, progress=False)
    check_same(r, "BF", "pushed", local)
    assert r.ttl("pushed") == -1
    pulled = ferrobloom.pull(r, "built")
    assert local_walk(pulled) == server_walk(r, "BF", "built")
    assert pulled.contains_many(PROBES) == local.contains_many(PROBES)


@pytest.mark.parametrize("name,kwargs,opts", CF_CASES, ids=[c[0] for c in CF_CASES])
def test_cuckoo_push_and_pull(r, name, kwargs, opts):
    local = build_cuckoo(r, "built", kwargs, opts)
    ferrobloom.push(r, "pushed", local, progress=False)
    check_same(r, "CF", "pushed", local)
    pulled = ferrobloom.pull(r, "built")
    check_same(r, "CF", "built", pulled)


def test_windowed_pull_and_push(r):
    r.execute_command("BF.RESERVE", "w", 0.01, 1000, "WINDOW", 3600)
    r.execute_command("BF.MADD", "w", *ITEMS[:800])
    w = ferrobloom.pull(r, "w")
    assert w.window == 3600.0
    assert local_walk(w) == server_walk(r, "BF", "w")
    assert w.contains_many(PROBES) == [bool(x) for x in r.execute_command("BF.MEXISTS", "w", *PROBES)]
    assert len(w) == r.execute_command("BF.CARD", "w")
    # As of long after the window: nothing is live.
    assert not any(w.contains_many(ITEMS[:800], as_of=4102444800.0))
    ferrobloom.push(r, "w2", w, progress=False)
    assert server_walk(r, "BF", "w2") == server_walk(r, "BF", "w")


def test_push_refuses_existing_key_and_replaces_atomically(r):
    a = BloomFilter(1000)
    a.update(["x", "y"])
    b = BloomFilter(1000)
    b.update(["z"])
    ferrobloom.push(r, "k", a, progress=False)
    with pytest.raises(FilterError, match="ERR item exists"):
        ferrobloom.push(r, "k", b, progress=False)
    assert r.execute_command("BF.MEXISTS", "k", "x", "z") == [1, 0]
    ferrobloom.push(r, "k", b, replace=True, progress=False)
    assert r.execute_command("BF.MEXISTS", "k", "x", "z") == [0, 1]
    # A key of another type is replaced only when asked to.
    r.set("s", "v")
    with pytest.raises(FilterError):
        ferrobloom.push(r, "s", a, progress=False)
    assert r.get("s") == b"v"
    assert r.keys("*ferrobloom-push*") == []


class FailingClient:
    """A redis-py client whose n-th LOADCHUNK fails (a dropped connection)."""

    def __init__(self, client, fail_at):
        self.c, self.n, self.fail_at = client, 0, fail_at

    def execute_command(self, *args, **options):
        if str(args[0]).endswith("LOADCHUNK"):
            self.n += 1
            if self.n == self.fail_at:
                raise redis.ConnectionError("simulated")
        return self.c.execute_command(*args, **options)

    def pipeline(self, transaction=True, **kw):
        # push pipelines its LOADCHUNKs: replay them one by one through this
        # client, so that the n-th one fails where a dropped connection would.
        if transaction:
            return self.c.pipeline(transaction=True, **kw)
        return Sequential(self)

    def __getattr__(self, name):
        return getattr(self.c, name)


class Sequential:
    """A non-transactional pipeline that sends its commands one by one through a wrapper client."""

    def __init__(self, owner):
        self.owner, self.queued = owner, []

    def execute_command(self, *args, **options):
        self.queued.append(args)
        return self

    def expire(self, name, seconds):
        return self.execute_command("EXPIRE", name, seconds)

    def execute(self):
        q, self.queued = self.queued, []
        return [self.owner.execute_command(*a) for a in q]


def test_failed_push_leaves_the_old_key(r):
    old = BloomFilter(100)
    old.update(["old"])
    ferrobloom.push(r, "{t}k", old, progress=False)
    big = BloomFilter(100)
    big.update(str(i) for i in range(5000))  # several links: several chunks
    for fail_at in (1, 2, 3):
        with pytest.raises(redis.ConnectionError):
            ferrobloom.push(FailingClient(r, fail_at), "{t}k", big, replace=True, progress=False)
        assert r.execute_command("BF.MEXISTS", "{t}k", "old", "1") == [1, 0]
        assert r.keys("*ferrobloom-push*") == []


def test_push_refuses_what_the_server_would_refuse(r):
    r.config_set("bf.max-filter-memory", 65536)
    try:
        f = BloomFilter(100000, 0.001)
        with pytest.raises(FilterError) as e:
            ferrobloom.push(r, "k", f, progress=False)
        assert str(e.value) == "ERR filter would exceed the per-filter memory limit (bf.max-filter-memory)"
        assert not r.exists("k")
    finally:
        r.config_set("bf.max-filter-memory", 4 << 30)
    r.config_set("bf.bf-max-links", 2)
    try:
        f = BloomFilter(10)
        f.update(str(i) for i in range(100))
        with pytest.raises(FilterError, match="bf-max-links"):
            ferrobloom.push(r, "k", f, progress=False)
        assert not r.exists("k")
    finally:
        r.config_set("bf.bf-max-links", 64)


def test_pull_missing_and_wrong_type(r):
    with pytest.raises(FilterError, match="^ERR not found$"):
        ferrobloom.pull(r, "missing")
    r.set("s", "v")
    with pytest.raises(FilterError, match="^WRONGTYPE"):
        ferrobloom.pull(r, "s")


BF_BAD = [
    ((0,), {}, ["0.01", "0"]),
    ((100, 2), {}, ["2", "100"]),
    ((100, float("nan")), {}, ["nan", "100"]),
    ((2**31,), {}, ["0.01", str(2**31)]),
    ((100,), {"expansion": 1, "nonscaling": True}, ["0.01", "100", "EXPANSION", "1", "NONSCALING"]),
    ((100,), {"expansion": 40000}, ["0.01", "100", "EXPANSION", "40000"]),
    ((100,), {"layout": "nope"}, ["0.01", "100", "LAYOUT", "nope"]),
    ((100,), {"tightening": 1.5}, ["0.01", "100", "TIGHTENING", "1.5"]),
    ((100,), {"seed": b"short"}, ["0.01", "100", "SEED", "short"]),
    ((100,), {"layout": "redisbloom", "seed": SEED}, ["0.01", "100", "LAYOUT", "redisbloom", "SEED", SEED]),
    ((100,), {"window": 0}, ["0.01", "100", "WINDOW", "0"]),
    ((100,), {"validate_scale_to": 10**12, "nonscaling": True}, ["0.01", "100", "NONSCALING", "VALIDATESCALETO", str(10**12)]),
]

CF_BAD = [
    ((1,), {}, ["1"]),
    ((2**31,), {}, [str(2**31)]),
    ((100,), {"bucket_size": 0}, ["100", "BUCKETSIZE", "0"]),
    ((100,), {"max_iterations": 70000}, ["100", "MAXITERATIONS", "70000"]),
    ((100,), {"expansion": -1}, ["100", "EXPANSION", "-1"]),
    ((100,), {"error_rate": 1.0}, ["100", "ERROR", "1.0"]),
    ((100,), {"error_rate": 1e-12}, ["100", "ERROR", "1e-12"]),
    ((100,), {"layout": "redisbloom", "error_rate": 0.01}, ["100", "LAYOUT", "redisbloom", "ERROR", "0.01"]),
    ((100,), {"layout": "x"}, ["100", "LAYOUT", "x"]),
]


@pytest.mark.parametrize("args,kwargs,wire", BF_BAD)
def test_bloom_parameters_get_the_servers_error_texts(server, args, kwargs, wire):
    with pytest.raises(FilterError) as e:
        BloomFilter(*args, **kwargs)
    reply = server.raw("BF.RESERVE", "bad-bf", *wire)
    assert reply.startswith(b"-"), reply
    assert str(e.value).encode() == reply[1:]


@pytest.mark.parametrize("args,kwargs,wire", CF_BAD)
def test_cuckoo_parameters_get_the_servers_error_texts(server, args, kwargs, wire):
    with pytest.raises(FilterError) as e:
        CuckooFilter(*args, **kwargs)
    reply = server.raw("CF.RESERVE", "bad-cf", *wire)
    assert reply.startswith(b"-"), reply
    assert str(e.value).encode() == reply[1:]


def test_full_filters_answer_as_the_server(r):
    # A non-scaling Bloom filter fills up: BF.MADD's reply ends with the error.
    local = build_bloom(r, "n", {"nonscaling": True}, ["NONSCALING"], capacity=50)
    check_same(r, "BF", "n", local)
    # A cuckoo filter that cannot grow reports -1 per refused item.
    c = CuckooFilter(8, expansion=0, bucket_size=1)
    r.execute_command("CF.RESERVE", "c", 8, "EXPANSION", 0, "BUCKETSIZE", 1)
    items = ["c%d" % i for i in range(40)]
    assert c.insert(items) == r.execute_command("CF.INSERT", "c", "ITEMS", *items)
    check_same(r, "CF", "c", c)


def test_push_and_pull_over_resp3(server):
    r3 = redis.Redis(port=server.port, protocol=3)
    r3.flushall()
    for f in (BloomFilter(100), CuckooFilter(100)):
        f.update(ITEMS[:150])
        ferrobloom.push(r3, "k", f, progress=False)
        g = ferrobloom.pull(r3, "k")
        assert local_walk(g) == local_walk(f)
        r3.delete("k")
    r3.close()


class WritingClient:
    """A client that adds items to the key between the SCANDUMP calls of the
    first `walks` walks (another client writing during a pull)."""

    # Item names unique across instances: `id(self)` was reused by the next
    # instance once the first was freed, so its adds were of items already
    # added, changed nothing, and the walk found the key unchanged.
    names = itertools.count()

    def __init__(self, client, key, walks):
        self.c, self.key, self.walks, self.started, self.n = client, key, walks, 0, 0

    def execute_command(self, *args, **options):
        r = self.c.execute_command(*args, **options)
        if str(args[0]).endswith("SCANDUMP"):
            if int(args[2]) == 0:
                self.started += 1  # a walk begins with the header
            if self.started <= self.walks:
                self.n += 1
                self.c.execute_command("BF.ADD", self.key, "concurrent-%d" % next(self.names))
        return r

    def __getattr__(self, name):
        return getattr(self.c, name)


def test_pull_retries_when_the_key_changes_during_the_walk(r):
    r.execute_command("BF.RESERVE", "k", 0.01, 100)
    r.execute_command("BF.MADD", "k", *ITEMS[:1000])
    # Written during the first walk only: the second walk is consistent.
    f = ferrobloom.pull(WritingClient(r, "k", 1), "k")
    assert local_walk(f) == server_walk(r, "BF", "k")
    # Written during every walk: refused rather than a mixed state.
    with pytest.raises(FilterError, match="changed during every one of 3"):
        ferrobloom.pull(WritingClient(r, "k", 99), "k")


class CompactingClient:
    """A client that deletes items and compacts the cuckoo filter after the
    first data chunk of the first walk (another client writing during a pull)."""

    def __init__(self, client, key, items):
        self.c, self.key, self.items, self.done = client, key, items, False

    def execute_command(self, *args, **options):
        r = self.c.execute_command(*args, **options)
        if str(args[0]).endswith("SCANDUMP") and int(args[2]) == 1 and not self.done:
            self.done = True
            for it in self.items:
                self.c.execute_command("CF.DEL", self.key, it)
            self.c.execute_command("CF.COMPACT", self.key)
        return r

    def __getattr__(self, name):
        return getattr(self.c, name)


@pytest.mark.parametrize("layout", ["ferrobloom", "redisbloom"])
def test_pull_walks_again_when_a_cuckoo_filter_moves_items(r, layout):
    r.execute_command("CF.RESERVE", "k", 256, "EXPANSION", 2, "LAYOUT", layout)
    r.execute_command("CF.INSERT", "k", "ITEMS", *ITEMS[:1500])
    # The compaction moves fingerprints into the first sub-filter, already
    # read: the server refuses the rest of the walk and pull walks again.
    with pytest.raises(redis.ResponseError, match="the filter moved items since"):
        walk = CompactingClient(r, "k", ITEMS[:300])
        it = walk.execute_command("CF.SCANDUMP", "k", 0)[0]
        while it:
            it = walk.execute_command("CF.SCANDUMP", "k", it)[0]
    r.delete("k")
    r.execute_command("CF.RESERVE", "k", 256, "EXPANSION", 2, "LAYOUT", layout)
    r.execute_command("CF.INSERT", "k", "ITEMS", *ITEMS[:1500])
    f = ferrobloom.pull(CompactingClient(r, "k", ITEMS[:300]), "k")
    assert local_walk(f) == server_walk(r, "CF", "k")
    assert all(it in f for it in ITEMS[300:1500])


class RacingClient(FailingClient):
    """Another client creates the key while the push is loading."""

    def execute_command(self, *args, **options):
        r = self.c.execute_command(*args, **options)
        if str(args[0]).endswith("LOADCHUNK") and self.n == 0:
            self.n = 1
            self.c.set(self.fail_at, "theirs")
        return r


def test_push_without_replace_loses_to_a_key_created_meanwhile(r):
    f = BloomFilter(100)
    f.update(["mine"])
    with pytest.raises(FilterError, match="^ERR item exists$"):
        ferrobloom.push(RacingClient(r, "k"), "k", f, progress=False)
    assert r.get("k") == b"theirs"
    assert r.keys("*ferrobloom-push*") == []


@pytest.mark.parametrize("theirs", ["string", "cuckoo"])
def test_a_key_written_between_the_check_and_the_rename_is_not_replaced(server, r, before_rename, theirs):
    """Another connection writes the key right after push's final check
    (WATCH, TYPE) and before its MULTI: the EXEC is aborted, the check runs
    again and refuses the new type; the write stays, no temporary key is left."""
    other = redis.Redis(port=server.port)
    f = BloomFilter(1000)
    f.update(ITEMS[:500])
    r.execute_command("BF.RESERVE", "k", 0.01, 100)

    def write(n, key):
        if n == 1 and theirs == "string":
            other.set(key, "arrived")
        elif n == 1:
            other.delete(key)
            other.execute_command("CF.RESERVE", key, 100)

    calls = before_rename(write)
    with pytest.raises(FilterError, match="^WRONGTYPE.*force=True"):
        ferrobloom.push(r, "k", f, replace=True, progress=False)
    assert calls == [b"k"]
    if theirs == "string":
        assert r.get("k") == b"arrived"
    else:
        assert r.type("k") == b"MBbloomCF"
    assert r.keys() == [b"k"]
    other.close()


def test_push_replaces_a_filter_of_the_same_kind_written_during_the_rename(server, r, before_rename):
    """A Bloom filter written there before the first EXEC: the EXEC is
    aborted, the second check finds a filter of the same kind, and the push
    replaces it. Written before every EXEC: nothing is replaced after three
    tries, with ``ERR the key changed ...``; force watches nothing."""
    other = redis.Redis(port=server.port)
    f = BloomFilter(1000)
    f.update(ITEMS[:500])
    assert "theirs" not in f
    calls = before_rename(lambda n, key: n == 1 and other.execute_command("BF.ADD", key, "theirs"))
    ferrobloom.push(r, "k", f, replace=True, progress=False)
    assert calls == [b"k", b"k"]
    assert server_walk(r, "BF", "k") == local_walk(f)
    assert r.keys() == [b"k"]

    r.delete("k")
    r.execute_command("BF.RESERVE", "k", 0.01, 100)
    calls = before_rename(lambda n, key: other.execute_command("BF.ADD", key, "theirs"))
    with pytest.raises(FilterError, match=r"^ERR the key changed during each of 3 attempts to replace it; nothing was replaced$"):
        ferrobloom.push(r, "k", f, replace=True, progress=False)
    assert len(calls) == ferrobloom._server.PUSH_ATTEMPTS == 3
    assert r.execute_command("BF.EXISTS", "k", "theirs") == 1  # not replaced
    assert r.keys() == [b"k"]

    del calls[:]
    ferrobloom.push(r, "k", f, replace=True, force=True, progress=False)
    assert calls == []
    assert server_walk(r, "BF", "k") == local_walk(f)
    other.close()
