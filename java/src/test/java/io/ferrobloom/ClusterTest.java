package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * push and pull through JedisCluster and Lettuce's cluster client with a three-primary cluster:
 * keys of every slot third land on the primary that serves them, walk and answer as the Java
 * filter, are pulled back from it bit for bit, and an existing key is refused without replace.
 */
class ClusterTest {

    static Stream<String> servers() {
        return TestServer.servers().stream();
    }

    /** Three primaries, each serving a third of the slots. */
    static List<TestServer> cluster(String binary) throws Exception {
        List<TestServer> nodes = new ArrayList<>();
        List<Integer> busPorts = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int bus = TestServer.freePort();
            busPorts.add(bus);
            nodes.add(TestServer.start(binary, "--cluster-enabled", "yes",
                    "--cluster-port", Integer.toString(bus),
                    "--cluster-config-file", "nodes-" + bus + ".conf"));
        }
        int[][] ranges = {{0, 5460}, {5461, 10922}, {10923, 16383}};
        for (int i = 0; i < 3; i++) {
            nodes.get(i).call("CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]);
        }
        for (int i = 1; i < 3; i++) {
            nodes.get(0).call("CLUSTER", "MEET", "127.0.0.1", nodes.get(i).port, busPorts.get(i));
        }
        long deadline = System.nanoTime() + 30_000_000_000L;
        for (TestServer n : nodes) {
            while (!n.jedis.clusterInfo().contains("cluster_state:ok")
                    || n.jedis.clusterNodes().lines().count() < 3) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the cluster did not form");
                }
                Thread.sleep(100);
            }
        }
        return nodes;
    }

    /**
     * ShardedBloomFilter over the cluster: its keys spread over every primary; batches answer
     * per item in order; shards built offline from route() with the same items are the
     * server's shards byte for byte; pushed, they answer as the server-built ones.
     */
    @ParameterizedTest
    @MethodSource("servers")
    void shardedFilterOverTheCluster(String binary) throws Exception {
        List<TestServer> nodes = cluster(binary);
        try (JedisCluster jc = new JedisCluster(new HostAndPort("127.0.0.1", nodes.get(0).port))) {
            ShardedBloomFilter s = new ShardedBloomFilter(jc, "clicks", 16);
            Set<Integer> primaries = new HashSet<>();
            for (String k : s.keys()) {
                primaries.add(JedisClusterCRC16.getSlot(k) * 3 / 16384);
            }
            assertEquals(3, primaries.size());
            s.create(16_000, 0.01);
            List<Object> items = new ArrayList<>(BloomFilterTest.items("click-", 5000));
            for (long i = 0; i < 1000; i++) {
                items.add(i);
            }
            List<Object> added = s.addAll(items);
            assertEquals(items.size(), added.size());
            int fresh = 0;
            for (Object a : added) {
                fresh += Boolean.TRUE.equals(a) ? 1 : 0;
            }
            assertEquals(fresh, s.cardinality());
            boolean[] found = s.mightContainAll(items);
            for (boolean f : found) {
                assertTrue(f);
            }
            List<Object> probes = new ArrayList<>(BloomFilterTest.items("other-", 3000));
            List<BloomFilter> local = s.localShards(16_000, BloomFilter.builder().errorRate(0.01));
            try {
                List<List<byte[]>> routed = s.route(items);
                for (int i = 0; i < 16; i++) {
                    local.get(i).putAll(routed.get(i));
                    String key = s.keys().get(i);
                    TestServer owner = nodes.get(JedisClusterCRC16.getSlot(key) * 3 / 16384);
                    ServerIdentityTest.assertSameWalk("BF", local.get(i).chunks(),
                            owner.scandump("BF", key));
                }
                // Pulled, every shard is the server's and the one built offline.
                List<BloomFilter> pulled = s.pull();
                try {
                    assertEquals(16, pulled.size());
                    for (int i = 0; i < 16; i++) {
                        String key = s.keys().get(i);
                        TestServer owner = nodes.get(JedisClusterCRC16.getSlot(key) * 3 / 16384);
                        ServerIdentityTest.assertSameWalk("BF", owner.scandump("BF", key),
                                pulled.get(i).chunks());
                        ServerIdentityTest.assertSameWalk("BF", local.get(i).chunks(),
                                pulled.get(i).chunks());
                        for (boolean b : pulled.get(i).mightContainAll(routed.get(i))) {
                            assertTrue(b);
                        }
                    }
                } finally {
                    pulled.forEach(BloomFilter::close);
                }
                ShardedBloomFilter copy = new ShardedBloomFilter(jc, "copy", 16);
                copy.push(local, false);
                assertArrayEquals(s.mightContainAll(probes), copy.mightContainAll(probes));
                assertEquals(s.cardinality(), copy.cardinality());
                s.delete();
                assertEquals(0, s.cardinality());
            } finally {
                local.forEach(BloomFilter::close);
            }
        } finally {
            for (TestServer n : nodes) {
                n.close();
            }
        }
    }

    /**
     * {@code push} (replace, on a key holding a filter of the pushed kind) while the key's
     * primary sets it to a string right after the final check: refused, the string kept.
     */
    static void retypedBeforeTheRename(List<TestServer> nodes, String key, Runnable push) {
        int slot = JedisClusterCRC16.getSlot(key);
        TestServer owner = nodes.get(slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
        Push.beforeRename = k -> owner.jedis.set(k, "arrived".getBytes());
        try {
            FilterException e = assertThrows(FilterException.class, push::run);
            assertEquals(Push.NOT_REPLACEABLE, e.getMessage());
        } finally {
            Push.beforeRename = null;
        }
        assertEquals("arrived", owner.jedis.get(key));
        owner.jedis.del(key);
    }

    @ParameterizedTest
    @MethodSource("servers")
    void pushThroughJedisCluster(String binary) throws Exception {
        List<TestServer> nodes = cluster(binary);
        try (JedisCluster jc = new JedisCluster(new HostAndPort("127.0.0.1", nodes.get(0).port));
                BloomFilter b = BloomFilter.create(1000, 0.01);
                CuckooFilter c = CuckooFilter.create(1000)) {
            b.putAll(ServerIdentityTest.ITEMS);
            c.insert(ServerIdentityTest.ITEMS.subList(0, 800));
            Set<Integer> thirds = new HashSet<>();
            for (String key : List.of("a", "b", "c", "d", "e", "f", "{user:7}:seen", "a}b{")) {
                int slot = JedisClusterCRC16.getSlot(key);
                thirds.add(slot / 5461);
                TestServer owner = nodes.get(Math.min(2, slot / 5461 - (slot == 10922 ? 1 : 0)));
                JedisTransfer.push(jc, key, b, false);
                JedisTransfer.push(jc, key + ":cf{" + key + "}", c, false);
                ServerIdentityTest.assertSameWalk("BF", b.chunks(), owner.scandump("BF", key));
                assertArrayEquals(b.mightContainAll(ServerIdentityTest.PROBES),
                        ServerIdentityTest.serverMexists(owner, "BF", key));
                assertEquals(-1L, owner.jedis.ttl(key));
                FilterException e = assertThrows(FilterException.class,
                        () -> JedisTransfer.push(jc, key, b, false));
                assertEquals("ERR item exists", e.getMessage());
                JedisTransfer.push(jc, key, b, true);
                try (Filter pb = JedisTransfer.pull(jc, key);
                        CuckooFilter pc = JedisTransfer.pullCuckoo(jc, key + ":cf{" + key + "}")) {
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), pb.chunks());
                    ServerIdentityTest.assertSameWalk("CF", c.chunks(), pc.chunks());
                }
            }
            assertEquals(3, thirds.size(), "keys on every primary");
            // A string written by the key's primary between the final check and the rename.
            retypedBeforeTheRename(nodes, "e", () -> JedisTransfer.push(jc, "e", b, true));
            // The same through Lettuce's cluster client.
            io.lettuce.core.cluster.RedisClusterClient lc = io.lettuce.core.cluster
                    .RedisClusterClient.create("redis://127.0.0.1:" + nodes.get(1).port);
            try (var conn = lc.connect()) {
                for (String key : List.of("la", "lb", "lc", "ld", "{user:8}:x")) {
                    int slot = JedisClusterCRC16.getSlot(key);
                    TestServer owner = nodes.get(slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
                    LettuceTransfer.push(conn, key, b, false);
                    LettuceTransfer.push(conn, "{" + key + "}b", b, false);
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), owner.scandump("BF", key));
                    assertThrows(FilterException.class,
                            () -> LettuceTransfer.push(conn, key, c, false));
                    // A filter of the other kind replaces the key with force only.
                    assertThrows(FilterException.class,
                            () -> LettuceTransfer.push(conn, key, c, true));
                    LettuceTransfer.push(conn, key, c, true, true);
                    ServerIdentityTest.assertSameWalk("CF", c.chunks(), owner.scandump("CF", key));
                    LettuceTransfer.push(conn, key, c, true);
                    ServerIdentityTest.assertSameWalk("CF", c.chunks(), owner.scandump("CF", key));
                    try (Filter p = LettuceTransfer.pull(conn, key);
                            BloomFilter other = LettuceTransfer.pullBloom(conn, "{" + key + "}b")) {
                        ServerIdentityTest.assertSameWalk("CF", c.chunks(), p.chunks());
                        ServerIdentityTest.assertSameWalk("BF", b.chunks(), other.chunks());
                    }
                }
                retypedBeforeTheRename(nodes, "lc",
                        () -> LettuceTransfer.push(conn, "lc", c, true));
            } finally {
                lc.shutdown();
            }
            for (TestServer n : nodes) {
                assertTrue(n.jedis.keys("*ferrobloom-push*").isEmpty());
            }
        } finally {
            for (TestServer n : nodes) {
                n.close();
            }
        }
    }
}
