"""Property tests (hypothesis) of the round trips: random kinds, parameters,
layouts and items (bytes, str with any Unicode, int; empty ones too) through
to_bytes/from_bytes (bytes and file objects), save/load, pickling and copies, and push/pull against
the servers, each bit for bit; and bad input: any truncation or single-byte
change of a file is refused, and a changed SCANDUMP chunk (no checksum there)
is refused with ferrobloom's error class or loads as a filter that encodes
to valid bytes again, never a crash.

Derandomized and without an example database, so every run (and CI) tries
the same examples; the example counts keep the module at a few seconds."""

import copy
import io
import os
import pickle
import tempfile

import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

import ferrobloom
from ferrobloom import BloomFilter, CuckooFilter, FilterError, FormatError
from test_local import walk
from test_server import server_walk

PROPS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

item = st.one_of(st.binary(max_size=24), st.text(max_size=12), st.integers(-(2**70), 2**70))


def _bulk(n, kind, stem):
    """n distinct items of one type (drawing hundreds of items one by one is slow)."""
    if kind == "int":
        return [i * 7919 - 10**6 for i in range(n)]
    if kind == "str":
        return ["%s-ü-%d" % (stem, i) for i in range(n)]
    return [stem.encode() + b"\x00%d" % i for i in range(n)]


# A few drawn items, and sometimes enough more to grow a small filter to
# several links / sub-filters (several data chunks).
items = st.builds(
    lambda few, bulk: few + bulk,
    st.lists(item, max_size=8),
    st.one_of(
        st.just([]),
        st.builds(_bulk, st.integers(50, 400), st.sampled_from(["int", "str", "bytes"]), st.text(max_size=3)),
    ),
)

bloom_params = st.fixed_dictionaries(
    {
        "capacity": st.one_of(st.integers(1, 60), st.integers(1, 3000)),
        "error_rate": st.floats(1e-5, 0.5),
        "layout": st.sampled_from(["classic", "blocked", "paired", "redisbloom"]),
        "growth": st.sampled_from([None, 1, 2, 4, "nonscaling"]),
        "window": st.one_of(st.none(), st.none(), st.integers(60, 10**6)),
        "tightening": st.one_of(st.none(), st.none(), st.floats(0.3, 0.9)),
    }
)

cuckoo_params = st.fixed_dictionaries(
    {
        "capacity": st.one_of(st.integers(2, 60), st.integers(2, 3000)),
        "bucket_size": st.integers(1, 8),
        "max_iterations": st.integers(1, 40),
        "expansion": st.integers(0, 4),
        "error_rate": st.one_of(st.none(), st.floats(1e-4, 0.1)),
        "layout": st.sampled_from(["ferrobloom", "redisbloom"]),
    }
)


def make_bloom(p, xs):
    kw = {"layout": p["layout"]}
    if p["growth"] == "nonscaling":
        kw["nonscaling"] = True
    elif p["growth"] is not None:
        kw["expansion"] = p["growth"]
    if p["window"] is not None:
        kw["window"] = p["window"]
    if p["tightening"] is not None:
        kw["tightening"] = p["tightening"]
    try:
        f = BloomFilter(p["capacity"], p["error_rate"], **kw)
    except FilterError:
        reject()  # a combination BF.RESERVE refuses (test_server checks those texts)
    took = f.add_many(xs)  # a full non-scaling filter ends the batch, as BF.MADD
    return f, [x for x, ok in zip(xs, took) if ok is True or ok is False]


def make_cuckoo(p, xs):
    kw = dict(p)
    cap = kw.pop("capacity")
    if kw["layout"] == "redisbloom":
        kw.pop("error_rate")
    try:
        f = CuckooFilter(cap, **kw)
    except FilterError:
        reject()
    f.insert(xs)  # -1 where there is no room, as CF.INSERT
    for x in xs[::5]:
        f.delete(x)
    return f, []  # a cuckoo filter's deletes may take another item's fingerprint


KINDS = [("BF", lay) for lay in ("classic", "blocked", "paired", "redisbloom")] + [("CF", "ferrobloom"), ("CF", "redisbloom")]


@st.composite
def filters_with_items(draw, kind, layout, xs=items):
    """(a filter of this kind and layout, the items a Bloom filter took)."""
    xs = draw(xs)
    if kind == "BF":
        p = draw(bloom_params)
        p["layout"] = layout
        return make_bloom(p, xs)
    p = draw(cuckoo_params)
    p["layout"] = layout
    return make_cuckoo(p, xs)


def a_filter(kind, layout):
    return filters_with_items(kind, layout).map(lambda made: made[0])


# Every kind and layout, each with its own examples.
each_kind = pytest.mark.parametrize("kind,layout", KINDS, ids=["%s-%s" % k for k in KINDS])


def describe(f):
    """hypothesis events (--hypothesis-show-statistics): what was tried."""
    if isinstance(f, BloomFilter):
        event("BF %s%s" % (f.layout, " windowed" if f.window is not None else ""))
    else:
        event("CF %s" % f.layout)
    event("%d data chunks" % min(len(chunks_of(f)) - 1, 3))


def same(f, g, xs=()):
    assert type(g) is type(f)
    assert walk(g) == walk(f)
    assert g.info() == f.info()
    assert g.contains_many(list(xs)) == f.contains_many(list(xs))


@each_kind
@settings(PROPS, max_examples=20)
@given(data=st.data())
def test_bytes_pickle_copies_and_files_round_trip(kind, layout, data):
    xs = data.draw(items)
    f, took = data.draw(filters_with_items(kind, layout, st.just(xs)))
    describe(f)
    b = f.to_bytes()
    g = ferrobloom.from_bytes(b)
    same(f, g, xs)
    assert g.to_bytes() == b
    assert type(f).from_bytes(b).to_bytes() == b
    assert ferrobloom.from_bytes(io.BytesIO(b)).to_bytes() == b
    assert type(f).from_bytes(io.BytesIO(b)).to_bytes() == b
    for h in (pickle.loads(pickle.dumps(f)), copy.deepcopy(f), copy.copy(f), f.copy()):
        same(f, h, xs)
    # save() fsyncs: in memory where there is a tmpfs, to keep the examples fast.
    fd, path = tempfile.mkstemp(prefix="ferrobloom-prop-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.close(fd)
    try:
        ferrobloom.save(f, path)
        same(f, ferrobloom.load(path), xs)
    finally:
        os.unlink(path)
    # No false negatives: every item a Bloom filter took is found in the copy.
    if isinstance(f, BloomFilter) and f.window is None:
        assert all(g.contains_many(took))


@each_kind
@settings(PROPS, max_examples=10)
@given(data=st.data())
def test_a_changed_file_is_refused(kind, layout, data):
    f = data.draw(a_filter(kind, layout))
    b = f.to_bytes()
    cut = data.draw(st.integers(0, len(b) - 1), label="truncate at")
    i = data.draw(st.integers(0, len(b) - 1), label="byte")
    m = bytearray(b)
    m[i] = (m[i] + data.draw(st.integers(1, 255), label="added")) % 256
    for bad in (b[:cut], bytes(m)):
        # Bytes, and a file object read chunk by chunk (stream.rs).
        for load in (ferrobloom.from_bytes, lambda x: ferrobloom.from_bytes(io.BytesIO(x)), type(f).from_bytes):
            try:
                load(bad)
                raise AssertionError("a truncated or changed file loaded (cut %d, byte %d)" % (cut, i))
            except FormatError:
                pass


def chunks_of(f):
    out, it = [], 0
    while True:
        it, d = f.scandump(it)
        if it == 0:
            return out
        out.append((it, d))


@each_kind
@settings(PROPS, max_examples=20)
@given(data=st.data())
def test_changed_chunks_are_refused_or_load_as_a_valid_filter(kind, layout, data):
    f = data.draw(a_filter(kind, layout))
    chunks = chunks_of(f)
    c = data.draw(st.integers(0, len(chunks) - 1), label="chunk")
    it, d = chunks[c]
    if data.draw(st.booleans(), label="truncate"):
        d = d[: data.draw(st.integers(0, max(0, len(d) - 1)), label="at")]
    elif d:
        i = data.draw(st.integers(0, len(d) - 1), label="byte")
        m = bytearray(d)
        m[i] = (m[i] + data.draw(st.integers(1, 255), label="added")) % 256
        d = bytes(m)
    changed = chunks[:c] + [(it, d)] + chunks[c + 1 :]
    try:
        g = type(f).from_chunks(changed)
    except FilterError:  # FormatError is one
        event("changed chunk refused")
        return
    event("changed chunk accepted")
    # Accepted (data bytes carry no checks): a filter whose bytes load again.
    again = ferrobloom.from_bytes(g.to_bytes())
    assert walk(again) == walk(g)
    g.contains_many([b"probe", "ü", 7])


@each_kind
@settings(PROPS, max_examples=6)
@given(data=st.data())
def test_push_and_pull_are_bit_identical(r, kind, layout, data):
    f = data.draw(a_filter(kind, layout))
    ferrobloom.push(r, "prop", f, replace=True, progress=False)
    assert server_walk(r, kind, "prop") == walk(f)
    g = ferrobloom.pull(r, "prop")
    assert walk(g) == walk(f) and g.info() == f.info()
    assert g.to_bytes() == f.to_bytes() or kind == "CF"
    assert r.keys("*ferrobloom-push*") == []


@settings(PROPS, max_examples=100)
@given(st.binary(min_size=0, max_size=300))
def test_junk_is_refused(junk):
    def stream(x):
        return ferrobloom.from_bytes(io.BytesIO(x))

    for load in (ferrobloom.from_bytes, BloomFilter.from_bytes, CuckooFilter.from_bytes, ferrobloom.file_kind, stream):
        try:
            load(junk)
            raise AssertionError("junk accepted")
        except FormatError:
            pass
