package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * push over Jedis against real servers: for every kind and layout (windowed filters included)
 * the pushed key walks byte for byte as the Java filter's chunks and answers every probe as it
 * does, with no TTL left; an existing key is refused without {@code replace} and replaced with
 * it, and a key that appears meanwhile is not overwritten; a filter the server's limits refuse
 * is refused before anything is written, with the text the Python package gives; nothing is left behind;
 * pooled clients; and RedisBloom 2.8.2 takes the RedisBloom layouts.
 */
class JedisTransferTest {
    private static final TestServer.PerClass SERVERS = new TestServer.PerClass();

    static TestServer server(String binary) throws Exception {
        return SERVERS.get(binary);
    }

    @AfterAll
    static void stop() throws Exception {
        SERVERS.close();
    }

    static Stream<Arguments> filters() {
        List<Arguments> out = new ArrayList<>();
        for (String s : TestServer.servers()) {
            for (ServerIdentityTest.BloomCase c : ServerIdentityTest.bloomCases()) {
                out.add(Arguments.of(s, "BF " + c.name(), c));
            }
            out.add(Arguments.of(s, "BF window", null));
            for (ServerIdentityTest.CuckooCase c : ServerIdentityTest.cuckooCases()) {
                out.add(Arguments.of(s, "CF " + c.name(), c));
            }
        }
        return out.stream();
    }

    static Filter build(Object c) {
        List<Object> items = ServerIdentityTest.ITEMS;
        if (c instanceof ServerIdentityTest.BloomCase b) {
            BloomFilter f = b.local().get().capacity(100).errorRate(0.01).build();
            try {
                f.putAll(items);
            } catch (BatchException full) {
                // a non-scaling filter fills up: what it holds is pushed
            }
            return f;
        }
        if (c instanceof ServerIdentityTest.CuckooCase k) {
            CuckooFilter f = k.local().get().capacity(200).build();
            f.insert(items.subList(0, 1200));
            return f;
        }
        BloomFilter w = BloomFilter.builder().capacity(1000).window(Duration.ofHours(1)).build();
        w.putAll(items.subList(0, 800));
        return w;
    }

    static void assertServerHas(TestServer s, String key, Filter f) {
        String kind = f.kind();
        ServerIdentityTest.assertSameWalk(kind, f.chunks(), s.scandump(kind, key));
        boolean[] mine = f instanceof BloomFilter b
                ? b.mightContainAll(ServerIdentityTest.PROBES)
                : ((CuckooFilter) f).mightContainAll(ServerIdentityTest.PROBES);
        assertArrayEquals(mine, ServerIdentityTest.serverMexists(s, kind, key));
        assertEquals(-1L, s.jedis.ttl(key));
        assertTrue(s.jedis.keys("*ferrobloom-push*").isEmpty(), "no temporary key left");
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("filters")
    void pushEveryKindAndLayout(String binary, String name, Object c) throws Exception {
        TestServer s = server(binary);
        try (Filter f = build(c)) {
            JedisTransfer.push(s.jedis, "pushed", f, false);
            assertServerHas(s, "pushed", f);
            JedisTransfer.push(s.jedis, "pushed", f, true);
            assertServerHas(s, "pushed", f);
        }
    }

    static Stream<String> servers() {
        return TestServer.servers().stream();
    }

    @ParameterizedTest
    @MethodSource("servers")
    void replaceRefusesOrReplacesAtomically(String binary) throws Exception {
        TestServer s = server(binary);
        try (BloomFilter a = BloomFilter.create(1000); BloomFilter b = BloomFilter.create(1000)) {
            a.put("a");
            b.put("b");
            JedisTransfer.push(s.jedis, "k", a, false);
            FilterException e = assertThrows(FilterException.class,
                    () -> JedisTransfer.push(s.jedis, "k", b, false));
            assertEquals("ERR item exists", e.getMessage());
            assertServerHas(s, "k", a);
            s.jedis.set("other", "x");
            assertThrows(FilterException.class,
                    () -> JedisTransfer.push(s.jedis, "other", b, false));
            assertEquals("x", s.jedis.get("other"));
            JedisTransfer.push(s.jedis, "k", b, true);
            assertServerHas(s, "k", b);
            // replace refuses a key of another type (PushReplaceTest); force replaces it.
            assertThrows(FilterException.class,
                    () -> JedisTransfer.push(s.jedis, "other", b, true));
            assertEquals("x", s.jedis.get("other"));
            JedisTransfer.push(s.jedis, "other", b, true, true);
            assertServerHas(s, "other", b);
            // Keys with a hash tag, with braces that form none, and binary keys.
            for (String key : List.of("{user:1}:seen", "a}b{", "x{}y")) {
                JedisTransfer.push(s.jedis, key, a, false);
                assertServerHas(s, key, a);
            }
            assertEquals(Push.slot("{t}:x".getBytes()), Push.slot("t".getBytes()));
            for (String key : List.of("plain", "{tag}rest", "a}b{", "x{}y")) {
                byte[] k = key.getBytes();
                assertEquals(Push.slot(k), Push.slot(Push.tempKey(k)), key);
                assertEquals(redis.clients.jedis.util.JedisClusterCRC16.getSlot(k),
                        Push.slot(k), key);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("servers")
    void aFilterTheServerWouldRefuseIsRefusedBeforeAnythingIsSent(String binary)
            throws Exception {
        TestServer s = server(binary);
        s.jedis.configSet("bf.max-filter-memory", "65536");
        try (BloomFilter f = BloomFilter.create(100_000, 0.001)) {
            FilterException e = assertThrows(FilterException.class,
                    () -> JedisTransfer.push(s.jedis, "k", f, false));
            assertEquals("ERR filter would exceed the per-filter memory limit"
                    + " (bf.max-filter-memory)", e.getMessage());
            assertFalse(s.jedis.exists("k"));
            // The server refuses the header too (LOADCHUNK's own text: received bad data).
            assertThrows(JedisDataException.class,
                    () -> s.loadChunks("BF", "direct", List.of(f.scandump(0))));
        } finally {
            s.jedis.configSet("bf.max-filter-memory", Long.toString(4L << 30));
        }
        s.jedis.configSet("bf.bf-max-links", "2");
        try (BloomFilter f = BloomFilter.create(10)) {
            f.putAll(BloomFilterTest.items("", 100));
            FilterException e = assertThrows(FilterException.class,
                    () -> JedisTransfer.push(s.jedis, "k", f, false));
            assertTrue(e.getMessage().contains("bf-max-links"), e.getMessage());
            assertFalse(s.jedis.exists("k"));
        } finally {
            s.jedis.configSet("bf.bf-max-links", "64");
        }
        assertTrue(s.jedis.keys("*").isEmpty());
    }

    /** The ACL rule docs/clients.md gives for a user confined to the keys {@code app:*}. */
    @ParameterizedTest
    @MethodSource("servers")
    void anAclUserWithTheDocumentedRule(String binary) throws Exception {
        TestServer s = server(binary);
        s.call("ACL", "SETUSER", "loader", "reset", "on", ">secret", "~app:*", "~{app:*",
                "+exists", "+del", "+expire", "+persist", "+rename", "+renamenx", "+multi",
                "+exec", "+type", "+watch", "+unwatch", "+bf.loadchunk", "+bf.scandump", "+cf.loadchunk",
                "+cf.scandump");
        try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis("127.0.0.1", s.port);
                BloomFilter b = BloomFilter.create(1000);
                CuckooFilter c = CuckooFilter.create(1000)) {
            j.auth("loader", "secret");
            b.putAll(BloomFilterTest.items("acl", 300));
            c.addAll(BloomFilterTest.items("acl", 300));
            JedisTransfer.push(j, "app:seen", b, false);
            JedisTransfer.push(j, "app:seen", b, true);
            JedisTransfer.push(j, "app:cf", c, false);
            assertServerHas(s, "app:seen", b);
            assertServerHas(s, "app:cf", c);
            JedisDataException e = assertThrows(JedisDataException.class,
                    () -> JedisTransfer.push(j, "other", b, true));
            assertTrue(e.getMessage().contains("NOPERM"), e.getMessage());
            assertFalse(s.jedis.exists("other"));
            assertTrue(s.jedis.keys("*ferrobloom-push*").isEmpty());
        } finally {
            s.call("ACL", "DELUSER", "loader");
        }
    }

    @Test
    void pooledClients() throws Exception {
        TestServer s = server(TestServer.servers().get(0));
        try (JedisPooled pool = new JedisPooled("127.0.0.1", s.port);
                CuckooFilter f = CuckooFilter.create(1000)) {
            f.addAll(BloomFilterTest.items("p", 500));
            JedisTransfer.push(pool, "pooled", f, false);
            assertServerHas(s, "pooled", f);
            assertThrows(FilterException.class, () -> JedisTransfer.push(pool, "pooled", f, false));
        }
    }

    @Test
    void redisBloomTakesItsLayouts() throws Exception {
        String rb = System.getProperty("ferrobloom.redisbloom", "");
        Assumptions.assumeFalse(rb.isEmpty(),
                "RedisBloom 2.8.2 not given (-Dferrobloom.redisbloom, scripts/peers.sh)");
        try (TestServer s = TestServer.startWith("redis-server", rb);
                BloomFilter b = BloomFilter.builder().capacity(100).layout(BloomLayout.REDISBLOOM)
                        .build();
                CuckooFilter c = CuckooFilter.builder().capacity(200)
                        .layout(CuckooLayout.REDISBLOOM).build()) {
            b.putAll(ServerIdentityTest.ITEMS);
            c.insert(ServerIdentityTest.ITEMS.subList(0, 1200));
            JedisTransfer.push(s.jedis, "b", b, false);
            JedisTransfer.push(s.jedis, "c", c, false);
            assertArrayEquals(b.mightContainAll(ServerIdentityTest.PROBES),
                    ServerIdentityTest.serverMexists(s, "BF", "b"));
            assertArrayEquals(c.mightContainAll(ServerIdentityTest.PROBES),
                    ServerIdentityTest.serverMexists(s, "CF", "c"));
            ServerIdentityTest.assertSameWalk("BF", b.chunks(), s.scandump("BF", "b"));
            ServerIdentityTest.assertSameWalk("CF", c.chunks(), s.scandump("CF", "c"));
            assertEquals(-1L, s.jedis.ttl("b"));
            assertEquals(2, s.jedis.keys("*").size());
        }
    }
}
