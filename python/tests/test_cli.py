"""The command-line tool, as a user runs it (a subprocess): build from files
and stdin, info, query, merge, push and pull against a real server, and Unix
exit codes and messages for failures."""

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import ferrobloom
from test_server import server_walk


def run(*args, input=None):
    return subprocess.run(
        [sys.executable, "-m", "ferrobloom", *map(str, args)], input=input, capture_output=True
    )


def test_build_info_query_merge(tmp_path):
    items = tmp_path / "items.txt"
    items.write_bytes(b"".join(b"item-%d\n" % i for i in range(1000)) + b"crlf\r\n")
    a, b, m = tmp_path / "a.fbf", tmp_path / "b.fbf", tmp_path / "m.fbf"
    assert run("build", "-c", 1000, "-e", 0.001, "-o", a, items).returncode == 0
    assert run("build", "-c", 1000, "-e", 0.001, "-o", b, "-", input=b"other\n").returncode == 0
    f = ferrobloom.load(a)
    assert len(f) == 1001 and "crlf" in f and "item-5" in f
    info = run("info", a).stdout.decode()
    assert "Kind: BF" in info and "Number of items inserted: 1001" in info
    q = run("query", a, "item-1", "nope")
    assert q.returncode == 0 and q.stdout == b"1\titem-1\n0\tnope\n"
    assert run("query", "-q", a, "item-1").returncode == 0
    assert run("query", "-q", a, "item-1", "nope").returncode == 1
    assert run("query", a, input=b"item-2\nnope\n").stdout == b"1\titem-2\n0\tnope\n"
    assert run("merge", m, a, b).returncode == 0
    assert ferrobloom.load(m).contains_many(["item-3", "other"]) == [True, True]
    c = tmp_path / "c.fbf"
    assert run("build", "-k", "cuckoo", "-c", 2000, "-o", c, items).returncode == 0
    assert "Kind: CF" in run("info", c).stdout.decode()
    bad = run("merge", m, a, c)
    assert bad.returncode == 1 and b"ferrobloom:" in bad.stderr


def test_errors_and_exit_codes(tmp_path):
    r = run("build", "-c", 0, "-o", tmp_path / "x.fbf", input=b"")
    assert r.returncode == 1 and r.stderr == b"ferrobloom: ERR (capacity should be larger than 0)\n"
    r = run("info", tmp_path / "missing.fbf")
    assert r.returncode == 1 and b"No such file" in r.stderr
    junk = tmp_path / "junk"
    junk.write_bytes(b"junk")
    r = run("info", junk)
    assert r.returncode == 1 and b"bad magic" in r.stderr
    assert run("frobnicate").returncode == 2
    assert run("build").returncode == 2


def test_push_and_pull(server, r, tmp_path):
    url = "redis://127.0.0.1:%d/0" % server.port
    f = tmp_path / "f.fbf"
    assert run("build", "-c", 500, "-o", f, input=b"a\nb\nc\n").returncode == 0
    assert run("push", url, "k", f).returncode == 0
    assert r.execute_command("BF.MEXISTS", "k", "a", "z") == [1, 0]
    again = run("push", url, "k", f)
    assert again.returncode == 1 and again.stderr == b"ferrobloom: ERR item exists\n"
    assert run("push", "--replace", url, "k", f).returncode == 0
    g = tmp_path / "g.fbf"
    assert run("pull", url, "k", g).returncode == 0
    assert f.read_bytes() == g.read_bytes()
    missing = run("pull", url, "nothing", g)
    assert missing.returncode == 1 and missing.stderr == b"ferrobloom: ERR not found\n"
    down = run("pull", "redis://127.0.0.1:1/0", "k", g)
    assert down.returncode == 1 and b"ConnectionError" in down.stderr
    assert server_walk(r, "BF", "k")


def test_a_test_server_never_answers_from_another_process(module, monkeypatch):
    # The flake of test_push_and_pull[redis] ("received bad data" from
    # LOADCHUNK): its server is the first the session starts, on a port
    # _free_port found free a moment before; when another process (a parallel
    # run's RedisBloom, whose LOADCHUNK refuses ferrobloom's header with that
    # text) took it meanwhile, the ping reached that server and the test
    # talked to it. Now the port is taken first on purpose: the server must
    # come up on another port, answering with its own pid and module.
    import conftest

    other = conftest.Server(conftest._binary("redis"), module)
    ports = iter([other.port])
    real = conftest._free_port
    monkeypatch.setattr(conftest, "_free_port", lambda: next(ports, None) or real())
    try:
        s = conftest.Server(conftest._binary("redis"), module)
        try:
            assert s.port != other.port
            assert int(s.client.info("server")["process_id"]) == s.proc.pid != other.proc.pid
            assert s.client.execute_command("BF.ADD", "k", "x") == 1 and not other.client.exists("k")
        finally:
            s.stop()
    finally:
        other.stop()


@settings(derandomize=True, database=None, deadline=None, max_examples=300)
@given(st.binary(max_size=40).map(lambda b: bytes(b"ab\r\n"[x % 4] for x in b)))
def test_build_reads_lines_across_blocks(data):
    # The build reads blocks and splits lines in C; every split point (tiny
    # blocks), "\r\n" and "\n" endings, empty lines and a last line without
    # "\n" must give the lines Python's own line iteration gives.
    import io
    import tempfile

    from ferrobloom import _lines

    def by_line(data):
        out = []
        for line in io.BytesIO(data):
            if line.endswith(b"\n"):
                line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
            out.append(line)
        return out

    saved = _lines.BLOCK
    try:
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            for block in (1, 2, 3, 7, 64):
                _lines.BLOCK = block
                got = [x for b in _lines.line_blocks(io.BytesIO(data)) for x in b]
                assert got == by_line(data), (data, block)
                # The package's reader and the count the CLI sizes filters with.
                assert list(_lines.lines(f.name)) == got
                assert _lines.count_lines([f.name]) == len(got)
    finally:
        _lines.BLOCK = saved


def test_build_sizes_the_filter_from_its_input_files(tmp_path):
    """Without -c a build is sized for its input files' lines: a cuckoo
    filter of 100,000 lines builds (with the default 1024 it ran out of
    expansions after reading everything), a Bloom filter is one link."""
    items = tmp_path / "items.txt"
    items.write_bytes(b"".join(b"item-%d\n" % i for i in range(100_000)))
    c, b = tmp_path / "c.fbf", tmp_path / "b.fbf"
    r = run("build", "-k", "cuckoo", "-o", c, items)
    assert r.returncode == 0, r.stderr
    cf = ferrobloom.load(c)
    assert len(cf) == 100_000 and cf.info()["Number of filters"] == 1
    assert run("build", "-o", b, items, items).returncode == 0
    bf = ferrobloom.load(b)
    assert bf.capacity == 200_000 and bf.info()["Number of filters"] == 1
    assert bf.info()["Size"] == ferrobloom.BloomFilter(200_000, 0.01).info()["Size"]
    # From standard input the defaults stay (documented).
    assert run("build", "-o", b, "-", input=b"a\nb\n").returncode == 0
    assert ferrobloom.load(b).capacity == 100


def test_usage_errors_say_ferrobloom_and_exit_2(tmp_path):
    f = tmp_path / "f.fbf"
    assert run("build", "-c", 10, "-o", f, input=b"a\n").returncode == 0
    for args, text in [
        (("push", "bogus://x", "k", f), b"ferrobloom: bad URL 'bogus://x'"),
        (("pull", "redis://[::1", "k", f), b"ferrobloom: bad URL 'redis://[::1'"),
        (("build", "--bucket-size", 4, "-o", f), b"ferrobloom: --bucket-size and --max-iterations"),
        (("build", "--max-iterations", 4, "-o", f), b"ferrobloom: --bucket-size and --max-iterations"),
        (("build", "-k", "cuckoo", "--nonscaling", "-o", f), b"ferrobloom: --nonscaling: options of Bloom filters"),
        (("build", "-k", "cuckoo", "--window", 60, "-o", f), b"ferrobloom: --window: options of Bloom filters"),
        (("pull", "--tls-ca-cert", tmp_path / "nope.crt", "rediss://127.0.0.1:1", "k", f),
         b"ferrobloom: --tls-ca-cert %s: no such file" % str(tmp_path / "nope.crt").encode()),
        (("push", "--force", "redis://127.0.0.1:1", "k", f), b"ferrobloom: --force needs --replace"),
    ]:
        r = run(*args, input=b"")
        assert r.returncode == 2 and r.stderr.startswith(text), (args, r.stderr)
        assert b"Traceback" not in r.stderr
    v = run("--version")
    assert v.returncode == 0 and v.stdout.decode().strip() == "ferrobloom %s" % ferrobloom.__version__


def test_an_unwritable_output_fails_before_the_build(tmp_path):
    items = tmp_path / "items.txt"
    items.write_bytes(b"a\n")
    for out in ("/nonexistent/x.fbf", str(tmp_path)):
        r = run("build", "-o", out, items)
        assert r.returncode == 1 and r.stderr.startswith(b"ferrobloom: cannot write %s" % out.encode()), r.stderr
        assert b".ferrobloom-" not in r.stderr
        r = run("pull", "redis://127.0.0.1:1/0", "k", out)
        assert r.returncode == 1 and r.stderr.startswith(b"ferrobloom: cannot write %s" % out.encode()), r.stderr
    # save() itself names the file asked for.
    import pytest

    with pytest.raises(FileNotFoundError, match="/nonexistent/x.fbf"):
        ferrobloom.save(ferrobloom.BloomFilter(10), "/nonexistent/x.fbf")


def test_an_error_rate_above_a_quarter_is_said(tmp_path):
    f = tmp_path / "f.fbf"
    r = run("build", "-e", 0.5, "-c", 1000, "-o", f, input=b"a\n")
    assert r.returncode == 0 and b"note: an error rate above 0.25 makes a filter of 0.25" in r.stderr
    assert ferrobloom.load(f).error_rate == 0.25
    assert run("build", "-e", 0.2, "-c", 1000, "-o", f, input=b"a\n").stderr == b""
