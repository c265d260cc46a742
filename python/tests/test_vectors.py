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
