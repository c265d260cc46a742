"""pull returns exactly a state the key held, or raises a clear error, on
every server kind: ferrobloom on Redis 7.0 and Valkey 9 (a SCANDUMP walk
whose every reply carries the state's stamp) and RedisBloom 2.8.2 (DUMP).

Two filters of equal SCANDUMP headers (the same parameters, as many items)
but different bits take turns under one key while pulls run: every pull must
be one of them bit for bit. One test replaces the key at a chosen point of a
walk (between two data chunks), the other loops pushes against pulls as an
application would."""

import threading
import time

import pytest
import redis

import ferrobloom
from ferrobloom import BloomFilter, FilterError

# 20M items at 1%: 23 MiB, two SCANDUMP data chunks of at most 16 MiB.
CAPACITY = 20_000_000


def pair(layout):
    """Two non-scaling filters with 100,000 different items each: equal
    headers, different bits."""
    a = BloomFilter(CAPACITY, 0.01, nonscaling=True, layout=layout)
    b = BloomFilter(CAPACITY, 0.01, nonscaling=True, layout=layout)
    a.update([b"a-%d" % i for i in range(100_000)])
    b.update([b"b-%d" % i for i in range(100_000)])
    assert a.scandump(0) == b.scandump(0), "the headers must be equal"
    assert a.scandump(1)[0] != 0 and a.scandump(a.scandump(1)[0])[0] != 0, "two data chunks at least"
    return a, b


@pytest.fixture(scope="module")
def native_pair():
    return pair(None)


@pytest.fixture(scope="module")
def redisbloom_pair():
    return pair("redisbloom")


class SwapAfterFirstChunk:
    """A redis-py client whose first SCANDUMP data chunk is followed, before
    the next call, by a RENAME of ``src`` over ``key`` on another connection:
    another filter with an equal header takes the key in the middle of a walk."""

    def __init__(self, client, key, src):
        self._c, self._key, self._src, self.swapped = client, key, src, False
        self._other = redis.Redis(connection_pool=client.connection_pool)

    def execute_command(self, *args, **options):
        reply = self._c.execute_command(*args, **options)
        name = str(args[0]).upper()
        if name.endswith(".SCANDUMP") and int(args[2]) != 0 and not self.swapped:
            self.swapped = True
            self._other.rename(self._src, self._key)
        return reply

    def __getattr__(self, name):
        return getattr(self._c, name)


def test_a_replacement_with_an_equal_header_during_a_walk(r, native_pair):
    replaced_during_a_walk(r, native_pair)


def test_a_replacement_with_an_equal_header_during_a_walk_on_redisbloom(rb, redisbloom_pair):
    replaced_during_a_walk(rb, redisbloom_pair)


def test_pushes_and_pulls_in_a_loop_never_mix_two_filters(r, native_pair):
    pushes_against_pulls(r, native_pair)


def test_pushes_and_pulls_in_a_loop_never_mix_two_filters_on_redisbloom(rb, redisbloom_pair):
    pushes_against_pulls(rb, redisbloom_pair)


def replaced_during_a_walk(client, pair):
    a, b = pair
    ferrobloom.push(client, "k", a, progress=False)
    ferrobloom.push(client, "b", b, progress=False)
    wrapped = SwapAfterFirstChunk(client, "k", "b")
    try:
        got = ferrobloom.pull(wrapped, "k", progress=False)
    except FilterError as e:
        assert "changed" in str(e)
        return
    # The walk that crossed the RENAME was refused and walked again (a
    # server with stamps), or the pull read the key at once (DUMP).
    assert got.to_bytes() in (a.to_bytes(), b.to_bytes())
    if wrapped.swapped:
        assert got.to_bytes() == b.to_bytes()


def pushes_against_pulls(client, pair):
    """One client pushes A and B in turn with ``replace=True``, another
    pulls; every pull equals A or B exactly or raises FilterError ("changed
    during every one of 3 SCANDUMP walks")."""
    a, b = pair
    ab = {a.to_bytes(): "A", b.to_bytes(): "B"}
    ferrobloom.push(client, "k", a, replace=True, progress=False)
    stop = threading.Event()
    pushes = []
    errors = []

    def pusher():
        c = redis.Redis(connection_pool=client.connection_pool)
        i = 0
        try:
            while not stop.is_set():
                ferrobloom.push(c, "k", b if i % 2 == 0 else a, replace=True, progress=False)
                pushes.append(i)
                i += 1
                # Some pulls then fall between two pushes, others cross a
                # rename (on a loaded machine without a pause every walk did).
                stop.wait(0.2)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=pusher)
    t.start()
    got, refused = [], 0
    deadline = time.monotonic() + 60
    try:
        while len(got) + refused < 15 and time.monotonic() < deadline:
            try:
                f = ferrobloom.pull(client, "k", progress=False)
            except FilterError as e:
                assert "changed during every one" in str(e), e
                refused += 1
                continue
            which = ab.get(f.to_bytes())
            assert which is not None, "pull %d mixed the two filters" % len(got)
            got.append(which)
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert len(pushes) >= 2, "the key was replaced during the pulls"
    assert got, "no pull succeeded (%d refused)" % refused
