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

    from ferrobloom import cli

    def by_line(data):
        out = []
        for line in io.BytesIO(data):
            if line.endswith(b"\n"):
                line = line[:-1]
                if line.endswith(b"\r"):
                    line = line[:-1]
            out.append(line)
        return out

    saved = cli.BLOCK
    try:
        for block in (1, 2, 3, 7, 64):
            cli.BLOCK = block
            got = [x for b in cli._line_blocks(io.BytesIO(data)) for x in b]
            assert got == by_line(data), (data, block)
    finally:
        cli.BLOCK = saved
