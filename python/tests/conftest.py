"""Real servers for the Python package's tests, as the Rust integration tests
start them (crates/ferrobloom/tests/common/): throw-away processes on free loopback ports, each
in its own temporary directory, with the freshly built module.

- The module: ``FERROBLOOM_MODULE`` (a path), else ``libferrobloom.so`` in
  ``$CARGO_TARGET_DIR/release`` (or its ``deps/``), else it is built with
  ``cargo build --release -p ferrobloom``.
- Servers: ``redis`` is ``REDIS_SERVER`` (default ``redis-server``, Redis 7.0
  on the CI machine); ``valkey9`` comes from ``scripts/peers.sh valkey9``;
  RedisBloom 2.8.2 (``scripts/peers.sh redisbloom``) runs on ``redis-server``.
  ``FERROBLOOM_PY_SERVERS`` (default ``redis valkey9``) lists the servers the
  ferrobloom tests run on; ``test_server.py`` (a local filter against the
  server, every kind and layout) runs on ``FERROBLOOM_PY_IDENTITY_SERVERS``
  (default ``redis valkey8 valkey9 redis8``: Valkey 8.1.8 and Redis 8.2.3 from
  ``scripts/peers.sh`` too). A listed server that cannot be found fails the
  run, RedisBloom missing skips its tests.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

ROOT = Path(__file__).resolve().parents[2]


def _module() -> str:
    p = os.environ.get("FERROBLOOM_MODULE")
    if p:
        assert os.path.isfile(p), "FERROBLOOM_MODULE=%s does not exist" % p
        return p
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    for c in (target / "release" / "libferrobloom.so", target / "release" / "deps" / "libferrobloom.so"):
        if c.is_file():
            return str(c)
    subprocess.run(["cargo", "build", "--release", "-p", "ferrobloom"], cwd=ROOT, check=True)
    return str(target / "release" / "libferrobloom.so")


def _peer(name: str) -> str:
    try:
        out = subprocess.run(
            [str(ROOT / "scripts" / "peers.sh"), name], capture_output=True, text=True, check=True
        ).stdout
    except (subprocess.CalledProcessError, OSError):
        return ""
    for line in out.splitlines():
        if line.startswith(name + "="):
            return line.split("=", 1)[1].strip()
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tls_files(directory: str) -> dict:
    """A throw-away CA, and a server and a client certificate it signed (for
    127.0.0.1 / localhost), made with ``openssl`` in ``directory``."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not found: the TLS tests need it to make certificates")
    d = Path(directory)
    f = {n: str(d / n) for n in ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key")}

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=ferrobloom-test-ca",
            "-keyout", f["ca.key"], "-out", f["ca.crt"])
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for who in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + who,
                "-keyout", f[who + ".key"], "-out", str(d / (who + ".csr")))
        openssl("x509", "-req", "-in", str(d / (who + ".csr")), "-CA", f["ca.crt"], "-CAkey", f["ca.key"],
                "-CAcreateserial", "-days", "2", "-extfile", str(d / "san.cnf"), "-out", f[who + ".crt"])
    return f


def tls_server_args(tls: dict) -> tuple:
    # tls-auth-clients stays at its default (yes): clients need a certificate too.
    return ("--tls-cert-file", tls["server.crt"], "--tls-key-file", tls["server.key"],
            "--tls-ca-cert-file", tls["ca.crt"])


def tls_client_kwargs(tls) -> dict:
    if not tls:
        return {}
    return {"ssl": True, "ssl_ca_certs": tls["ca.crt"], "ssl_certfile": tls["client.crt"],
            "ssl_keyfile": tls["client.key"]}


class Server:
    """A server process of ours on a free loopback port. ``_free_port`` only
    finds a port that was free a moment ago: another process (a parallel test
    run on the machine) may bind it before the server does, and then the
    server exits while the ping reaches the other process's server, whose
    module and data are not ours (a RedisBloom there answers ferrobloom's
    LOADCHUNK with ``ERR received bad data``). So the server must answer with
    its own pid; on a lost port it starts again on another one."""

    ATTEMPTS = 5

    def __init__(self, binary: str, module: str, args=(), server_args=(), tls=None):
        self.dir = tempfile.mkdtemp(prefix="ferrobloom-py-")
        self.tls = tls
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        for _ in range(self.ATTEMPTS):
            if self._start(binary, module, args, server_args):
                return
        raise RuntimeError("server did not start on any of %d free ports" % self.ATTEMPTS)

    def _start(self, binary, module, args, server_args) -> bool:
        self.port = _free_port()
        # The cluster bus on a port of its own (the default, port + 10000, may be taken).
        self.cluster_port = _free_port() if "--cluster-enabled" in server_args else None
        if self.tls:
            # TLS only: the plain port off, the TLS port and certificates (see tls_files).
            ports = ("--port", "0", "--tls-port", str(self.port), *tls_server_args(self.tls))
        else:
            ports = ("--port", str(self.port))
        cmd = [
            binary,
            *ports,
            *(("--cluster-port", str(self.cluster_port)) if self.cluster_port else ()),
            "--bind", "127.0.0.1",
            "--dir", self.dir,
            "--save", "",
            "--appendonly", "no",
            *server_args,
            "--loadmodule", module, *args,
        ]
        self.log.flush()
        start = self.log.tell()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        kwargs = tls_client_kwargs(self.tls)
        # No retries of its own: the loop below polls.
        probe = redis.Redis(port=self.port, socket_timeout=2, retry=Retry(NoBackoff(), 0), **kwargs)
        deadline = time.monotonic() + 15
        try:
            while True:
                if self.proc.poll() is not None:
                    with open(self.log.name, "rb") as f:
                        f.seek(start)
                        out = f.read().decode(errors="replace")
                    if "already in use" in out:
                        return False  # the port was taken meanwhile: another one
                    raise RuntimeError("server did not start: %s\n%s" % (" ".join(cmd), out))
                try:
                    pid = int(probe.info("server")["process_id"])
                except (redis.ConnectionError, redis.TimeoutError):
                    if time.monotonic() > deadline:
                        self._end()
                        raise RuntimeError("server did not answer: %s" % " ".join(cmd))
                    time.sleep(0.05)
                    continue
                if pid != self.proc.pid:
                    # Another process's server on "our" port: ours could not bind it.
                    self._end()
                    return False
                break
        finally:
            probe.close()
        # RESP2, whose replies the local batch methods mirror (CF.INSERT's -1);
        # test_resp3 covers push and pull over RESP3.
        self.client = redis.Redis(port=self.port, protocol=2, **kwargs)
        return True

    def _end(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def raw(self, *args) -> bytes:
        """One command over a raw socket: the reply line as the server sent it
        (error replies keep their full text, which redis-py shortens)."""
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(b"".join(parts))
            buf = b""
            while not buf.endswith(b"\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        return buf.rstrip(b"\r\n")

    def stop(self) -> None:
        self.client.close()
        self._end()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


SERVERS = os.environ.get("FERROBLOOM_PY_SERVERS", "redis valkey9").split()
IDENTITY_SERVERS = os.environ.get(
    "FERROBLOOM_PY_IDENTITY_SERVERS", "redis valkey8 valkey9 redis8"
).split()


def _binary(name: str) -> str:
    if name == "redis":
        return os.environ.get("REDIS_SERVER", "redis-server")
    path = _peer(name)
    assert path, "%s not found: scripts/peers.sh %s failed" % (name, name)
    return path


@pytest.fixture(scope="session")
def module() -> str:
    return _module()


def start_server(name: str, module: str) -> "Server":
    s = Server(_binary(name), module)
    s.name = name
    return s


@pytest.fixture(scope="session", params=SERVERS)
def server(request, module):
    s = start_server(request.param, module)
    yield s
    s.stop()


@pytest.fixture
def r(server):
    server.client.flushall()
    return server.client


@pytest.fixture(scope="session")
def redisbloom():
    so = _peer("redisbloom")
    if not so:
        pytest.skip("RedisBloom 2.8.2 not found (scripts/peers.sh redisbloom)")
    s = Server("redis-server", so)
    s.name = "redisbloom"
    yield s
    s.stop()


@pytest.fixture
def rb(redisbloom):
    redisbloom.client.flushall()
    return redisbloom.client


@pytest.fixture(scope="session")
def cluster(module):
    """A three-node Redis Cluster (no replicas) of `REDIS_SERVER`, slots split evenly."""
    nodes = [
        Server(_binary("redis"), module, server_args=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
        for _ in range(3)
    ]
    try:
        for i, n in enumerate(nodes):
            lo, hi = i * 16384 // 3, (i + 1) * 16384 // 3 - 1
            n.client.execute_command("CLUSTER", "ADDSLOTSRANGE", lo, hi)
        for n in nodes[1:]:
            nodes[0].client.execute_command("CLUSTER", "MEET", "127.0.0.1", n.port, n.cluster_port)
        deadline = time.monotonic() + 20
        while not all(b"cluster_state:ok" in n.client.execute_command("CLUSTER", "INFO") for n in nodes):
            assert time.monotonic() < deadline, "cluster did not converge"
            time.sleep(0.1)
        from redis.cluster import RedisCluster

        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port, protocol=2)
        yield rc, nodes
        rc.close()
    finally:
        for n in nodes:
            n.stop()


@pytest.fixture
def before_rename():
    """Sets push's test hook (``ferrobloom._server._before_rename``, called
    after the final WATCH and TYPE, before MULTI) to ``write(n, key)``, n the
    call's number (None: no hook); returns the keys it is called with from
    then on. Cleared after the test."""
    from ferrobloom import _server

    calls = []

    def set_hook(write):
        del calls[:]

        def hook(key):
            calls.append(key)
            write(len(calls), key)

        _server._before_rename = hook if write is not None else None
        return calls

    yield set_hook
    _server._before_rename = None
