"""The cross-language vectors (tests/vectors/, written once by this package
with tests/vectors/make_vectors.py; the Java library's VectorsTest reads them
too): every file loads, answers every probe as when it was written, reports
the same INFO, re-encodes byte for byte, and the same filter built again from
the same arguments and items writes the same bytes."""

import os
import sys

import pytest

import ferrobloom

DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "vectors")
sys.path.insert(0, DIR)
import make_vectors  # noqa: E402  (the vectors' definitions: items, probes, build)


def rows():
    with open(os.path.join(DIR, "vectors.tsv")) as f:
        lines = f.read().splitlines()
    assert lines[0] == "file\tkind\targs\titems\tas_of_ms\tafter_ms\tanswers\tinfo"
    out = [dict(zip(lines[0].split("\t"), line.split("\t"))) for line in lines[1:]]
    assert len(out) >= 8
    return out


def parse_args(text):
    return [bytes.fromhex(a[4:]) if a.startswith("hex:") else a for a in text.split(" ")]


@pytest.mark.parametrize("v", rows(), ids=lambda v: v["file"])
def test_vectors_load_answer_and_reencode(v):
    with open(os.path.join(DIR, v["file"]), "rb") as f:
        data = f.read()
    assert ferrobloom.file_kind(data) == v["kind"]
    n = int(v["items"])
    windowed = v["as_of_ms"] != "-"
    f = ferrobloom.load(os.path.join(DIR, v["file"]))
    assert f.to_bytes() == data
    probes = make_vectors.probes(n)
    if windowed:
        answers = f.contains_many(probes, as_of=int(v["as_of_ms"]) / 1000)
        later = f.contains_many(make_vectors.probes(n)[:n], as_of=int(v["after_ms"]) / 1000)
        assert not any(later)
    else:
        answers = f.contains_many(probes)
    assert "".join("1" if a else "0" for a in answers) == v["answers"]
    info = ["" if x is None else str(x) for x in f.info().values()]
    expected = v["info"].split(";")
    if windowed:  # items live now depend on now
        info[3] = expected[3] = "*"
    assert info == expected
    if windowed:
        return  # its generations carry their creation time
    g = make_vectors.build(v["kind"], parse_args(v["args"]))
    g.update([make_vectors.item(i) for i in range(n)])
    if v["kind"] == "CF":
        for i in range(0, n // 2, 7):
            assert g.delete(make_vectors.item(i))
    assert g.to_bytes() == data


def test_routing_vectors():
    """ShardedBloomFilter's routing and key names (tests/vectors/routing.tsv, which the Java
    RoutingTest reads too) are what they were when written."""
    from ferrobloom._sharded import encode, shard_keys, shard_of

    with open(os.path.join(DIR, "routing.tsv")) as f:
        lines = f.read().splitlines()
    assert lines[0] == "item_hex\tshards_16\tshards_7\tshards_1000"
    items = make_vectors.routing_items()
    rows = [line.split("\t") for line in lines[1:] if not line.startswith("keys:")]
    assert len(rows) == len(items)
    for x, (hx, s16, s7, s1000) in zip(items, rows):
        b = encode(x)
        assert b.hex() == hx
        assert (shard_of(b, 16), shard_of(b, 7), shard_of(b, 1000)) == (int(s16), int(s7), int(s1000))
    keys = [line.split("\t") for line in lines[1:] if line.startswith("keys:")]
    assert len(keys) == 3
    for spec, names in keys:
        name, n = spec[len("keys:"):].rsplit(":", 1)
        assert shard_keys(name, int(n)) == names.split(" ")
