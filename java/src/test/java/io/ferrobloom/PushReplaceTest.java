package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * push as the Python package's push (python/ferrobloom/_server.py, python/tests/test_inputs.py
 * and test_server.py), over Jedis and Lettuce on real servers: {@code replace} replaces a
 * missing key or a filter of the same kind and refuses a key of another type (a string, a list,
 * a filter of the other kind) with the server's WRONGTYPE text, also one that changes type
 * during the push, unless {@code force}; RedisBloom 2.8.2's refusal of a header of ferrobloom's
 * layouts becomes the hint to build the filter with RedisBloom's layout, its refusal the cause,
 * and the refusal propagates as it came when the probe cannot tell (a user without
 * {@code BF.SCANDUMP}) or the server is ferrobloom.
 */
class PushReplaceTest {

    static Stream<String> servers() {
        return TestServer.servers().stream();
    }

    /** One push as the test calls it: a client (Jedis or Lettuce), replace and force. */
    interface Pusher {
        void push(String key, Filter f, boolean replace, boolean force);
    }

    static Set<String> keys(TestServer s) {
        return new TreeSet<>(s.jedis.keys("*"));
    }

    /** The refusals and replacements of replace and force, over one client. */
    static void replaceRules(TestServer s, Pusher p) {
        s.jedis.flushAll();
        try (BloomFilter f = BloomFilter.create(100); CuckooFilter c = CuckooFilter.create(100)) {
            f.putAll(BloomFilterTest.items("r", 50));
            c.addAll(BloomFilterTest.items("r", 50));
            s.jedis.set("s", "v");
            s.jedis.rpush("l", "a", "b");
            s.call("CF.RESERVE", "c", 100);
            s.call("BF.RESERVE", "b", 0.01, 100);
            for (String key : List.of("s", "l", "c")) {
                FilterException e = assertThrows(FilterException.class,
                        () -> p.push(key, f, true, false), key);
                assertEquals("WRONGTYPE Operation against a key holding the wrong kind of value"
                        + " (push replaces a filter of the same kind only; force=true replaces"
                        + " any key)", e.getMessage());
            }
            FilterException e = assertThrows(FilterException.class,
                    () -> p.push("b", c, true, false));
            assertTrue(e.getMessage().startsWith("WRONGTYPE"), e.getMessage());
            assertEquals("v", s.jedis.get("s"));
            assertEquals(List.of("a", "b"), s.jedis.lrange("l", 0, -1));
            assertEquals("MBbloomCF", s.jedis.type("c"));
            assertEquals("MBbloom--", s.jedis.type("b"));
            assertEquals(Set.of("b", "c", "l", "s"), keys(s), "nothing left behind");
            // force without replace changes nothing: an existing key is refused.
            e = assertThrows(FilterException.class, () -> p.push("s", f, false, true));
            assertEquals("ERR item exists", e.getMessage());
            assertEquals("v", s.jedis.get("s"));
            // A filter of the same kind, a missing key, or any key with force, is replaced.
            p.push("b", f, true, false);
            JedisTransferTest.assertServerHas(s, "b", f);
            p.push("new", c, true, false);
            JedisTransferTest.assertServerHas(s, "new", c);
            p.push("s", f, true, true);
            JedisTransferTest.assertServerHas(s, "s", f);
            p.push("l", c, true, true);
            JedisTransferTest.assertServerHas(s, "l", c);
            p.push("c", f, true, true);
            JedisTransferTest.assertServerHas(s, "c", f);
        }
    }

    @ParameterizedTest
    @MethodSource("servers")
    void replaceRefusesAKeyOfAnotherTypeUnlessForce(String binary) throws Exception {
        TestServer s = JedisTransferTest.server(binary);
        replaceRules(s, (k, f, r, force) -> JedisTransfer.push(s.jedis, k, f, r, force));
        RedisClient client = RedisClient.create("redis://127.0.0.1:" + s.port);
        try (StatefulRedisConnection<String, String> text = client.connect()) {
            replaceRules(s, (k, f, r, force) -> LettuceTransfer.push(text, k, f, r, force));
        } finally {
            client.shutdown();
        }
        // The three-argument push is force=false.
        s.jedis.flushAll();
        s.jedis.set("s", "v");
        try (BloomFilter f = BloomFilter.create(100)) {
            assertThrows(FilterException.class, () -> JedisTransfer.push(s.jedis, "s", f, true));
            assertEquals("v", s.jedis.get("s"));
        }
    }

    /** Another client sets {@code key} to a string once the chunks are loaded. */
    static Push.Wire retypedAfterTheChunks(Push.Wire w, Jedis other, String key) {
        return new Around(w) {
            @Override
            void after(byte[][] c, long at) {}

            @Override
            public void pipeline(List<byte[][]> commands) {
                super.pipeline(commands);
                other.set(key, "arrived");
            }
        };
    }

    @ParameterizedTest
    @MethodSource("servers")
    void aKeyThatChangesTypeDuringThePushIsNotReplaced(String binary) throws Exception {
        TestServer s = JedisTransferTest.server(binary);
        RedisClient client = RedisClient.create("redis://127.0.0.1:" + s.port);
        try (Jedis other = new Jedis("127.0.0.1", s.port);
                StatefulRedisConnection<String, String> lettuce = client.connect();
                BloomFilter f = BloomFilter.create(1000)) {
            f.putAll(BloomFilterTest.items("t", 500));
            for (Push.Wire w : List.of(JedisTransfer.wire(s.jedis),
                    LettuceTransfer.wire(lettuce))) {
                s.jedis.flushAll();
                s.call("BF.RESERVE", "k", 0.01, 100);
                FilterException e = assertThrows(FilterException.class,
                        () -> Push.push(retypedAfterTheChunks(w, other, "k"), "k".getBytes(), f,
                                true, false));
                assertTrue(e.getMessage().startsWith("WRONGTYPE"), e.getMessage());
                assertEquals("arrived", s.jedis.get("k"));
                assertEquals(Set.of("k"), keys(s), "the temporary key is deleted");
                // With force the push replaces it.
                s.jedis.del("k");
                s.call("BF.RESERVE", "k", 0.01, 100);
                Push.push(retypedAfterTheChunks(w, other, "k"), "k".getBytes(), f, true, true);
                JedisTransferTest.assertServerHas(s, "k", f);
            }
        } finally {
            client.shutdown();
        }
    }

    /** The clients push(replace) runs over, each through its public push. */
    static List<Pusher> clients(TestServer s, StatefulRedisConnection<String, String> lettuce,
            JedisPooled pooled, UnifiedJedis unified) {
        return List.of(
                (k, f, r, force) -> JedisTransfer.push(s.jedis, k, f, r, force),
                (k, f, r, force) -> JedisTransfer.push(pooled, k, f, r, force),
                (k, f, r, force) -> JedisTransfer.push(unified, k, f, r, force),
                (k, f, r, force) -> LettuceTransfer.push(lettuce, k, f, r, force));
    }

    /** Runs {@code body} with {@link Push#beforeRename} set to {@code hook}, then clears it. */
    static void withHook(Consumer<byte[]> hook, Runnable body) {
        Push.beforeRename = hook;
        try {
            body.run();
        } finally {
            Push.beforeRename = null;
        }
    }

    /**
     * Another connection writes the key right after push's final check (WATCH and TYPE) and
     * before its MULTI: the EXEC is aborted, the write stays, push checks again and refuses
     * the key's new type (a string, a filter of the other kind), or replaces it when it is a
     * filter of the same kind; a key written before every one of the three checks is never
     * replaced (Push.KEY_CHANGED). No temporary key is left, and force watches nothing.
     */
    @ParameterizedTest
    @MethodSource("servers")
    void aKeyWrittenBetweenTheCheckAndTheRenameIsNeverReplaced(String binary) throws Exception {
        TestServer s = JedisTransferTest.server(binary);
        RedisClient client = RedisClient.create("redis://127.0.0.1:" + s.port);
        try (Jedis other = new Jedis("127.0.0.1", s.port);
                StatefulRedisConnection<String, String> lettuce = client.connect();
                JedisPooled pooled = new JedisPooled("127.0.0.1", s.port);
                UnifiedJedis unified = new UnifiedJedis(new HostAndPort("127.0.0.1", s.port));
                BloomFilter f = BloomFilter.create(1000)) {
            f.putAll(BloomFilterTest.items("t", 500));
            assertFalse(f.mightContain("theirs"));
            for (Pusher p : clients(s, lettuce, pooled, unified)) {
                // (a) a string written there: the EXEC aborts, the retry refuses it.
                s.jedis.flushAll();
                s.call("BF.RESERVE", "k", 0.01, 100);
                AtomicInteger checks = new AtomicInteger();
                withHook(k -> {
                    if (checks.incrementAndGet() == 1) {
                        other.set(k, "arrived".getBytes());
                    }
                }, () -> {
                    FilterException e = assertThrows(FilterException.class,
                            () -> p.push("k", f, true, false));
                    assertEquals(Push.NOT_REPLACEABLE, e.getMessage());
                });
                assertEquals(1, checks.get(), "the second check refuses before the hook");
                assertEquals("arrived", s.jedis.get("k"));
                assertEquals(Set.of("k"), keys(s), "the temporary key is deleted");
                // (b) a cuckoo filter put there: refused the same way.
                s.jedis.flushAll();
                s.call("BF.RESERVE", "k", 0.01, 100);
                checks.set(0);
                withHook(k -> {
                    if (checks.incrementAndGet() == 1) {
                        other.del(k);
                        other.sendCommand(JedisTransfer.command("CF.RESERVE".getBytes()),
                                k, "100".getBytes());
                    }
                }, () -> assertThrows(FilterException.class, () -> p.push("k", f, true, false)));
                assertEquals("MBbloomCF", s.jedis.type("k"));
                assertEquals(Set.of("k"), keys(s));
                // (c) a Bloom filter put there: the retry finds a filter of the same kind and
                // replaces it.
                s.jedis.flushAll();
                checks.set(0);
                withHook(k -> {
                    if (checks.incrementAndGet() == 1) {
                        other.sendCommand(JedisTransfer.command("BF.ADD".getBytes()), k,
                                "theirs".getBytes());
                    }
                }, () -> p.push("k", f, true, false));
                assertEquals(2, checks.get());
                JedisTransferTest.assertServerHas(s, "k", f);
                // (d) the key written before every EXEC: nothing replaced after three tries.
                s.jedis.flushAll();
                s.call("BF.RESERVE", "k", 0.01, 100);
                checks.set(0);
                withHook(k -> {
                    checks.incrementAndGet();
                    other.sendCommand(JedisTransfer.command("BF.ADD".getBytes()), k,
                            "theirs".getBytes());
                }, () -> {
                    FilterException e = assertThrows(FilterException.class,
                            () -> p.push("k", f, true, false));
                    assertEquals(Push.KEY_CHANGED, e.getMessage());
                });
                assertEquals(Push.RENAME_ATTEMPTS, checks.get());
                assertEquals(1L, s.call("BF.EXISTS", "k", "theirs"), "the key is not replaced");
                assertEquals(Set.of("k"), keys(s), "the temporary key is deleted");
                // force: no check, no WATCH, the key replaced.
                checks.set(0);
                withHook(k -> checks.incrementAndGet(), () -> p.push("k", f, true, true));
                assertEquals(0, checks.get());
                JedisTransferTest.assertServerHas(s, "k", f);
            }
        } finally {
            client.shutdown();
        }
    }

    static String redisBloom() {
        return PullTest.redisBloom();
    }

    static List<Filter> ferrobloomLayouts() {
        return List.of(BloomFilter.create(100),
                BloomFilter.builder().capacity(100).layout(BloomLayout.BLOCKED).build(),
                BloomFilter.builder().capacity(100).window(Duration.ofMinutes(1)).build(),
                CuckooFilter.create(100));
    }

    static void assertHint(Filter f, RuntimeException e, Class<?> cause) {
        String layout = f instanceof BloomFilter ? "BloomLayout.REDISBLOOM"
                : "CuckooLayout.REDISBLOOM";
        assertInstanceOf(FilterException.class, e);
        assertInstanceOf(cause, e.getCause());
        String refusal = e.getCause().getMessage();
        assertTrue(refusal.contains("received bad data") || refusal.contains("Invalid header"),
                refusal);
        assertEquals("the server refused the filter's header (" + refusal + "): it is not"
                + " ferrobloom (RedisBloom?), which loads only filters of RedisBloom's layout:"
                + " build the filter with " + layout + " (a windowed filter has no such layout)",
                e.getMessage());
    }

    @Test
    void pushIntoRedisBloomSaysWhichLayoutItTakes() throws Exception {
        String rb = redisBloom();
        RedisClient client = null;
        try (TestServer s = TestServer.startWith("redis-server", rb)) {
            client = RedisClient.create("redis://127.0.0.1:" + s.port);
            try (StatefulRedisConnection<String, String> lettuce = client.connect()) {
                for (Filter f : ferrobloomLayouts()) {
                    try (f) {
                        for (boolean replace : new boolean[] {false, true}) {
                            RuntimeException e = assertThrows(RuntimeException.class,
                                    () -> JedisTransfer.push(s.jedis, "k", f, replace));
                            assertHint(f, e, JedisDataException.class);
                            e = assertThrows(RuntimeException.class,
                                    () -> LettuceTransfer.push(lettuce, "k", f, replace));
                            assertHint(f, e, RedisCommandExecutionException.class);
                        }
                    }
                }
            }
            assertTrue(s.jedis.keys("*").isEmpty(), "nothing left behind");
        } finally {
            if (client != null) {
                client.shutdown();
            }
        }
    }

    @Test
    void theHintNeverMasksTheRefusalWhenTheProbeFails() throws Exception {
        String rb = redisBloom();
        try (TestServer s = TestServer.startWith("redis-server", rb)) {
            // A user who may push but not run BF.SCANDUMP: the probe is refused (NOPERM), so
            // push cannot tell RedisBloom and says what the server said.
            s.call("ACL", "SETUSER", "loader", "reset", "on", ">secret", "~*", "+@all",
                    "-bf.scandump");
            try (Jedis j = new Jedis("127.0.0.1", s.port); BloomFilter f = BloomFilter.create(100)) {
                j.auth("loader", "secret");
                JedisDataException e = assertThrows(JedisDataException.class,
                        () -> JedisTransfer.push(j, "k", f, false));
                assertEquals("ERR received bad data", e.getMessage());
                assertTrue(s.jedis.keys("*").isEmpty());
            }
        }
    }

    @ParameterizedTest
    @MethodSource("servers")
    void ferrobloomsOwnRefusalOfAHeaderIsNotTheHint(String binary) throws Exception {
        TestServer s = JedisTransferTest.server(binary);
        // A user without CONFIG: push cannot check the limit first, the server refuses the
        // header with LOADCHUNK's text, and the probe finds stamps (ferrobloom): no hint.
        s.call("ACL", "SETUSER", "nocfg", "reset", "on", ">secret", "~*", "+@all", "-config");
        s.jedis.configSet("bf.max-filter-memory", "65536");
        try (Jedis j = new Jedis("127.0.0.1", s.port);
                BloomFilter b = BloomFilter.create(100_000, 0.001);
                CuckooFilter c = CuckooFilter.create(1_000_000)) {
            j.auth("nocfg", "secret");
            JedisDataException e = assertThrows(JedisDataException.class,
                    () -> JedisTransfer.push(j, "k", b, false));
            assertEquals("ERR received bad data", e.getMessage());
            e = assertThrows(JedisDataException.class,
                    () -> JedisTransfer.push(j, "k", c, false));
            assertEquals("Couldn't create filter!", e.getMessage());
            assertFalse(s.jedis.exists("k"));
            assertTrue(s.jedis.keys("*").isEmpty());
        } finally {
            s.jedis.configSet("bf.max-filter-memory", Long.toString(4L << 30));
            s.call("ACL", "DELUSER", "nocfg");
        }
    }

    @Test
    void redisBloomsLayoutsArePushedWithoutAHint() throws Exception {
        String rb = redisBloom();
        try (TestServer s = TestServer.startWith("redis-server", rb);
                BloomFilter b = BloomFilter.builder().capacity(100).layout(BloomLayout.REDISBLOOM)
                        .build()) {
            b.putAll(BloomFilterTest.items("x", 50));
            s.jedis.set("s", "v");
            FilterException e = assertThrows(FilterException.class,
                    () -> JedisTransfer.push(s.jedis, "s", b, true));
            assertTrue(e.getMessage().startsWith("WRONGTYPE"), e.getMessage());
            JedisTransfer.push(s.jedis, "s", b, true, true);
            assertEquals("MBbloom--", s.jedis.type("s"));
            ServerIdentityTest.assertSameWalk("BF", b.chunks(), s.scandump("BF", "s"));
        }
    }
}
