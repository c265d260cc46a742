"""push and pull over the redis-py clients docs/clients.md promises beyond a
plain ``redis.Redis`` (RedisCluster: test_sharded.py and test_server.py):
ACL users with only the commands push and pull need, TLS (the API and the
CLI's ``rediss://`` with certificates), Sentinel across a failover (in
plaintext and all on TLS), and a Redis Cluster on TLS (client port and bus)."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel

import ferrobloom
from conftest import Server, _binary, _free_port, tls_client_kwargs, tls_files
from ferrobloom import BloomFilter, CuckooFilter
from test_server import local_walk, server_walk

# docs/clients.md, "Minimal ACL rules": the commands push and pull send, and
# the key patterns of a prefix (the temporary keys are `{<key>}:ferrobloom-push:*`).
PUSH_PULL_COMMANDS = (
    "+exists +del +expire +persist +rename +renamenx +multi +exec +type +watch +unwatch "
    "+bf.loadchunk +bf.scandump +cf.loadchunk +cf.scandump"
)
PREFIX_KEYS = "~app:* ~{app:*"


def filters():
    b = BloomFilter(200, 0.001)
    b.update("b%d" % i for i in range(1000))  # several links: several chunks
    c = CuckooFilter(500)
    c.update(["c%d" % i for i in range(800)])
    return b, c


def cli(*args):
    return subprocess.run([sys.executable, "-m", "ferrobloom", *map(str, args)], capture_output=True)


@pytest.fixture
def acl(server, r):
    """acl(user, rules) -> a client logged in as a fresh user with these rules."""
    made = []

    def make(user, rules):
        r.execute_command("ACL", "SETUSER", user, "reset", "on", ">pw", *rules.split())
        c = redis.Redis(port=server.port, username=user, password="pw", protocol=2)
        made.append((user, c))
        return c

    yield make
    for user, c in made:
        c.close()
        r.execute_command("ACL", "DELUSER", user)


def test_acl_user_with_the_minimal_rules(server, r, acl):
    u = acl("pusher", PUSH_PULL_COMMANDS + " " + PREFIX_KEYS)
    b, c = filters()
    for key, f in (("app:b", b), ("app:c", c), ("{app:t}:b", b)):
        ferrobloom.push(u, key, f, progress=False)
        ferrobloom.push(u, key, f, replace=True, progress=False)
        assert local_walk(ferrobloom.pull(u, key)) == local_walk(f)
    assert server_walk(r, "BF", "app:b") == local_walk(b)
    assert r.keys("*ferrobloom-push*") == []
    # Only pulling: read-only keys and three commands.
    reader = acl("reader", "%R~app:* +type +bf.scandump +cf.scandump")
    assert local_walk(ferrobloom.pull(reader, "app:c")) == local_walk(c)
    with pytest.raises(redis.exceptions.NoPermissionError):
        ferrobloom.push(reader, "app:x", b, replace=True, progress=False)
    # The CLI as that user (credentials in the URL).
    url = "redis://pusher:pw@127.0.0.1:%d/0" % server.port
    path = os.path.join(server.dir, "acl.fbf")
    ferrobloom.save(b, path)
    assert cli("push", "--replace", url, "app:cli", path).returncode == 0
    assert cli("pull", url, "app:cli", path + ".2").returncode == 0
    with open(path, "rb") as x, open(path + ".2", "rb") as y:
        assert x.read() == y.read()


@pytest.mark.parametrize(
    "missing,command",
    [("+bf.loadchunk", "bf.loadchunk"), ("+rename", "rename"), ("+persist", "persist"), ("+watch", "watch")],
)
def test_acl_refusals_name_the_command_and_keep_the_old_key(r, acl, missing, command):
    old, _ = filters()
    ferrobloom.push(r, "app:k", old, progress=False)
    new = BloomFilter(100)
    new.update(["new"])
    u = acl("partial", PUSH_PULL_COMMANDS.replace(missing + " ", "") + " " + PREFIX_KEYS)
    with pytest.raises(redis.exceptions.NoPermissionError, match="(?i)'%s' command" % command):
        ferrobloom.push(u, "app:k", new, replace=True, progress=False)
    assert server_walk(r, "BF", "app:k") == local_walk(old)
    assert r.keys("*ferrobloom-push*") == []


def test_acl_refusals_of_keys_and_pull(server, r, acl):
    old, _ = filters()
    ferrobloom.push(r, "app:k", old, progress=False)
    # Without the temporary keys' pattern: refused at the first LOADCHUNK.
    u = acl("nokeys", PUSH_PULL_COMMANDS + " ~app:*")
    with pytest.raises(redis.exceptions.NoPermissionError, match="(?i)no permissions to access (a key|one of the keys).*temporary key b.{app:k}:ferrobloom-push:"):
        ferrobloom.push(u, "app:k", BloomFilter(100), replace=True, progress=False)
    assert server_walk(r, "BF", "app:k") == local_walk(old)
    assert r.keys("*ferrobloom-push*") == []
    # Pull without SCANDUMP, and the CLI's report of a refusal.
    acl("noscan", PUSH_PULL_COMMANDS.replace("+bf.scandump ", "") + " " + PREFIX_KEYS)
    with pytest.raises(redis.exceptions.NoPermissionError, match="(?i)'bf.scandump' command"):
        ferrobloom.pull(redis.Redis(port=server.port, username="noscan", password="pw"), "app:k")
    out = cli("pull", "redis://noscan:pw@127.0.0.1:%d/0" % server.port, "app:k", os.path.join(server.dir, "x"))
    assert out.returncode == 1
    assert out.stderr.startswith(b"ferrobloom: NoPermissionError: ") and b"'bf.scandump' command" in out.stderr.lower()


@pytest.fixture(scope="module")
def tls_server(module, tmp_path_factory):
    tls = tls_files(str(tmp_path_factory.mktemp("tls")))
    try:
        s = Server(_binary("redis"), module, tls=tls)
    except RuntimeError as e:
        # Redis 7.0 from Debian has TLS; a server built without it (the
        # Valkey 9 peer build) says so at start.
        if "Failed finding TLS support" in str(e):
            pytest.skip("REDIS_SERVER=%s was built without TLS" % _binary("redis"))
        raise
    yield s
    s.stop()


def test_push_and_pull_over_tls(tls_server, tmp_path):
    s, tls = tls_server, tls_server.tls
    c = redis.Redis(port=s.port, **tls_client_kwargs(tls))
    c.flushall()
    for key, f in zip(("b", "c"), filters()):
        ferrobloom.push(c, key, f, progress=False)
        assert local_walk(ferrobloom.pull(c, key)) == local_walk(f)
    # Really TLS: a client that does not trust the CA is refused.
    untrusting = redis.Redis(
        port=s.port, ssl=True, ssl_certfile=tls["client.crt"], ssl_keyfile=tls["client.key"], retry=Retry(NoBackoff(), 0)
    )
    with pytest.raises(redis.ConnectionError, match="certificate verify failed"):
        untrusting.ping()
    # The CLI: rediss:// with the certificate options, or in the URL's query.
    url = "rediss://127.0.0.1:%d/0" % s.port
    opts = ("--tls-ca-cert", tls["ca.crt"], "--tls-cert", tls["client.crt"], "--tls-key", tls["client.key"])
    f, g, h = tmp_path / "f.fbf", tmp_path / "g.fbf", tmp_path / "h.fbf"
    ferrobloom.save(filters()[0], f)
    assert cli("push", *opts, url, "cli", f).returncode == 0
    assert cli("pull", *opts, url, "cli", g).returncode == 0
    assert f.read_bytes() == g.read_bytes()
    query = "?ssl_ca_certs=%s&ssl_certfile=%s&ssl_keyfile=%s" % (tls["ca.crt"], tls["client.crt"], tls["client.key"])
    assert cli("pull", url + query, "cli", h).returncode == 0
    assert h.read_bytes() == f.read_bytes()
    bad = cli("pull", url, "cli", h)
    assert bad.returncode == 1 and b"certificate verify failed" in bad.stderr
    usage = cli("pull", "--tls-ca-cert", tls["ca.crt"], "redis://127.0.0.1:%d/0" % s.port, "cli", h)
    assert usage.returncode == 2 and b"rediss://" in usage.stderr


def test_sharded_filter_and_push_pull_over_a_tls_cluster(tls_server, module):
    """Redis Cluster with TLS on the client port and the cluster bus
    (`tls-cluster yes`): RedisCluster(ssl=True) routes a sharded filter's
    batches and push/pull as it does in plaintext."""
    from redis.cluster import RedisCluster

    from ferrobloom import ShardedBloomFilter

    tls = tls_server.tls
    args = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--tls-cluster", "yes")
    nodes = []
    rc = None
    try:
        for _ in range(3):
            nodes.append(Server(_binary("redis"), module, server_args=args, tls=tls))
        for i, n in enumerate(nodes):
            n.client.execute_command("CLUSTER", "ADDSLOTSRANGE", i * 16384 // 3, (i + 1) * 16384 // 3 - 1)
        for n in nodes[1:]:
            nodes[0].client.execute_command("CLUSTER", "MEET", "127.0.0.1", n.port, n.cluster_port)
        wait_for(lambda: all(b"cluster_state:ok" in n.client.execute_command("CLUSTER", "INFO") for n in nodes),
                 "TLS cluster did not converge")
        rc = RedisCluster(host="127.0.0.1", port=nodes[0].port, protocol=2, **tls_client_kwargs(tls))
        s = ShardedBloomFilter(rc, "tls", shards=6)
        assert len({rc.get_node_from_key(k).port for k in s.keys}) == 3
        s.create(5000, 0.01)
        items = ["t%d" % i for i in range(3000)]
        assert all(s.add_many(items))
        assert all(s.contains_many(items))
        local = s.local_shards(5000, 0.01)
        for f, part in zip(local, s.route(items)):
            f.add_many(part)
        for k, f in zip(s.keys, s.pull()):
            assert local_walk(f) == local_walk(local[s.keys.index(k)])
        for key, f in zip(("{x}b", "{y}c"), filters()):
            ferrobloom.push(rc, key, f, progress=False)
            assert local_walk(ferrobloom.pull(rc, key)) == local_walk(f)
            assert server_walk(rc, "BF" if key.endswith("b") else "CF", key) == local_walk(f)
    finally:
        if rc is not None:
            rc.close()
        for n in nodes:
            n.stop()


class SentinelProcess:
    """One `redis-server --sentinel` watching `primary` as `name`, with short timeouts."""

    def __init__(self, binary, primary_port, name, tls=None):
        self.dir = tempfile.mkdtemp(prefix="ferrobloom-sentinel-")
        self.port = _free_port()
        conf = os.path.join(self.dir, "sentinel.conf")
        with open(conf, "w") as f:
            if tls:
                # TLS only, to clients and to the servers it watches.
                f.write("port 0\ntls-port %d\ntls-replication yes\n" % self.port)
                f.write("tls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"
                        % (tls["server.crt"], tls["server.key"], tls["ca.crt"]))
            else:
                f.write("port %d\n" % self.port)
            f.write(
                "bind 127.0.0.1\ndir %s\n"
                "sentinel monitor %s 127.0.0.1 %d 1\n"
                "sentinel down-after-milliseconds %s 1000\n"
                "sentinel failover-timeout %s 5000\n" % (self.dir, name, primary_port, name, name)
            )
        self.log = open(os.path.join(self.dir, "sentinel.log"), "wb")
        self.proc = subprocess.Popen([binary, conf, "--sentinel"], stdout=self.log, stderr=subprocess.STDOUT)
        self.client = redis.Redis(port=self.port, decode_responses=True, socket_timeout=5, **tls_client_kwargs(tls))
        wait_for(lambda: self.proc.poll() is None and ping(self.client), "sentinel did not start")

    def stop(self):
        self.client.close()
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def ping(c):
    try:
        return c.ping()
    except redis.ConnectionError:
        return False


def wait_for(cond, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.mark.parametrize("over", ["plain", "tls"])
def test_push_and_pull_through_sentinel_and_a_failover(module, over, request):
    binary = _binary("redis")
    # With TLS: servers, replication, the sentinel and every client on TLS only.
    tls = request.getfixturevalue("tls_server").tls if over == "tls" else None
    kw = tls_client_kwargs(tls)
    repl = ("--tls-replication", "yes") if tls else ()
    primary = Server(binary, module, server_args=repl, tls=tls)
    replica = Server(binary, module, server_args=(*repl, "--replicaof", "127.0.0.1", str(primary.port)), tls=tls)
    sentinel = None
    try:
        wait_for(lambda: replica.client.info("replication")["master_link_status"] == "up", "replica not in sync")
        sentinel = SentinelProcess(binary, primary.port, "fb", tls)
        sc = sentinel.client

        def replica_known():
            rs = sc.execute_command("SENTINEL", "REPLICAS", "fb")
            return any(
                int(x["port"]) == replica.port and x["master-link-status"] == "ok" and "disconnected" not in x["flags"]
                for x in rs
            )

        wait_for(replica_known, "sentinel does not see the replica")
        s = Sentinel([("127.0.0.1", sentinel.port)], socket_timeout=5, sentinel_kwargs=kw, **kw)
        m = s.master_for("fb", protocol=2)
        assert m.connection_pool.get_master_address() == ("127.0.0.1", primary.port)
        b, c = filters()
        ferrobloom.push(m, "b", b, progress=False)
        ferrobloom.push(m, "c", c, progress=False)
        assert local_walk(ferrobloom.pull(m, "b")) == local_walk(b)
        assert m.wait(1, 5000) == 1
        assert sc.execute_command("SENTINEL", "FAILOVER", "fb")
        def promoted():
            try:
                at = s.discover_master("fb")
            except MasterNotFoundError:  # while the failover runs
                return False
            return at == ("127.0.0.1", replica.port) and replica.client.info("replication")["role"] == "master"

        wait_for(promoted, "no failover")
        m2 = s.master_for("fb", protocol=2)
        assert m2.connection_pool.get_master_address() == ("127.0.0.1", replica.port)
        for key, f in (("b", b), ("c", c)):
            assert local_walk(ferrobloom.pull(m2, key)) == local_walk(f)
        # The new primary takes pushes (the old one is its replica now).
        n = BloomFilter(100)
        n.update(["after the failover"])
        ferrobloom.push(m2, "b", n, replace=True, progress=False)
        assert server_walk(m2, "BF", "b") == local_walk(n)
        m.close()
        m2.close()
    finally:
        if sentinel is not None:
            sentinel.stop()
        replica.stop()
        primary.stop()
