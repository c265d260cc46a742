package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * pull against real servers: for every kind and layout (windowed filters included), a filter
 * pushed and pulled back, and a key the server built with its own commands, pulled, walk byte
 * for byte as the server's SCANDUMP and answer every probe as the server; the same through
 * every client push supports, through DUMP (the path of a server without stamps) and from
 * RedisBloom 2.8.2; a windowed filter keeps its window and answers as of a later time as the
 * server does then; missing keys, other types and the other kind get the Python package's
 * texts; a server whose walk never ends is cut at what its header describes; ACL users.
 */
class PullTest {
    private static final TestServer.PerClass SERVERS = new TestServer.PerClass();

    static TestServer server(String binary) throws Exception {
        return SERVERS.get(binary);
    }

    @AfterAll
    static void stop() throws Exception {
        SERVERS.close();
    }

    static Stream<String> servers() {
        return TestServer.servers().stream();
    }

    static String redisBloom() {
        String rb = System.getProperty("ferrobloom.redisbloom", "");
        Assumptions.assumeFalse(rb.isEmpty(),
                "RedisBloom 2.8.2 not given (-Dferrobloom.redisbloom, scripts/peers.sh)");
        return rb;
    }

    static boolean[] probe(Filter f) {
        return f instanceof BloomFilter b ? b.mightContainAll(ServerIdentityTest.PROBES)
                : ((CuckooFilter) f).mightContainAll(ServerIdentityTest.PROBES);
    }

    /** The pulled filter is the key's state: the server's walk, the server's answers. */
    static void assertIsTheKey(TestServer s, String key, Filter pulled) {
        String kind = pulled.kind();
        ServerIdentityTest.assertSameWalk(kind, s.scandump(kind, key), pulled.chunks());
        assertArrayEquals(ServerIdentityTest.serverMexists(s, kind, key), probe(pulled));
        if (pulled instanceof BloomFilter b) {
            assertEquals(s.call("BF.CARD", key), b.cardinality());
        }
    }

    /** As RedisBloom answers SCANDUMP's fourth argument: a server without stamps. */
    static Push.Wire withoutStamps(Push.Wire w) {
        return new Around(w) {
            @Override
            public Object call(byte[]... c) {
                if (scandumpAt(c) >= 0 && c.length == 4) {
                    throw new JedisDataException("ERR wrong number of arguments for '"
                            + name(c).toLowerCase(java.util.Locale.ROOT) + "' command");
                }
                return super.call(c);
            }

            @Override
            void after(byte[][] c, long at) {}
        };
    }

    /** pull, pullBloom or pullCuckoo by the filter's kind, and the other refused. */
    static Filter pullTyped(Push.Wire w, String key, String kind) {
        Class<? extends Filter> other = kind.equals("BF") ? CuckooFilter.class : BloomFilter.class;
        FilterException e = assertThrows(FilterException.class,
                () -> Pull.pull(w, key.getBytes(StandardCharsets.UTF_8), other));
        assertTrue(e.getMessage().startsWith(Pull.WRONG_TYPE + " (the key holds a "),
                e.getMessage());
        return kind.equals("BF") ? Pull.pull(w, key.getBytes(), BloomFilter.class)
                : Pull.pull(w, key.getBytes(), CuckooFilter.class);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("io.ferrobloom.JedisTransferTest#filters")
    void pushThenPullEveryKindAndLayout(String binary, String name, Object c) throws Exception {
        TestServer s = server(binary);
        try (Filter f = JedisTransferTest.build(c)) {
            JedisTransfer.push(s.jedis, "pushed", f, false);
            try (Filter p = JedisTransfer.pull(s.jedis, "pushed")) {
                assertEquals(f.getClass(), p.getClass());
                ServerIdentityTest.assertSameWalk(f.kind(), f.chunks(), p.chunks());
                assertArrayEquals(probe(f), probe(p));
                assertIsTheKey(s, "pushed", p);
                if (p instanceof BloomFilter b) {
                    assertEquals(((BloomFilter) f).window(), b.window());
                    assertEquals(((BloomFilter) f).layout(), b.layout());
                }
            }
            // The path of a server whose SCANDUMP takes no STAMP (an older ferrobloom): DUMP,
            // decoded by the core (ferrobloom's own encodings).
            try (Filter p = pullTyped(withoutStamps(JedisTransfer.wire(s.jedis)), "pushed",
                    f.kind())) {
                ServerIdentityTest.assertSameWalk(f.kind(), f.chunks(), p.chunks());
                assertIsTheKey(s, "pushed", p);
            }
        }
        // A key the server built with its own commands.
        try (Filter local = c instanceof ServerIdentityTest.BloomCase b
                ? ServerIdentityTest.buildBloom(s, "built", b, 100)
                : c instanceof ServerIdentityTest.CuckooCase k
                        ? ServerIdentityTest.buildCuckoo(s, "built", k) : null;
                Filter p = c == null ? null : JedisTransfer.pull(s.jedis, "built")) {
            if (c != null) {
                ServerIdentityTest.assertSameWalk(p.kind(), local.chunks(), p.chunks());
                assertIsTheKey(s, "built", p);
            }
        }
    }

    /** Every client push takes, and binary keys. */
    @ParameterizedTest
    @MethodSource("servers")
    void pullOverEveryClient(String binary) throws Exception {
        TestServer s = server(binary);
        RedisClient lettuce = RedisClient.create("redis://127.0.0.1:" + s.port);
        byte[] binaryKey = {'k', (byte) 0xff, 0, '\n'};
        try (BloomFilter b = BloomFilter.builder().capacity(300).layout(BloomLayout.BLOCKED)
                        .build();
                CuckooFilter c = CuckooFilter.create(300);
                JedisPooled pool = new JedisPooled("127.0.0.1", s.port);
                UnifiedJedis unified = new UnifiedJedis(new HostAndPort("127.0.0.1", s.port));
                StatefulRedisConnection<String, String> text = lettuce.connect();
                StatefulRedisConnection<byte[], byte[]> bytes = lettuce.connect(
                        ByteArrayCodec.INSTANCE)) {
            b.putAll(BloomFilterTest.items("b", 2000));
            c.addAll(BloomFilterTest.items("c", 2000));
            JedisTransfer.push(s.jedis, "b", b, false);
            JedisTransfer.push(s.jedis, "c", c, false);
            JedisTransfer.push(s.jedis, binaryKey, c, false);
            Map<String, Function<String, Filter>> pullers = new LinkedHashMap<>();
            pullers.put("Jedis", k -> JedisTransfer.pull(s.jedis, k));
            pullers.put("JedisPooled", k -> JedisTransfer.pull(pool, k));
            pullers.put("UnifiedJedis", k -> JedisTransfer.pull(unified, k));
            pullers.put("Lettuce text", k -> LettuceTransfer.pull(text, k));
            pullers.put("Lettuce bytes", k -> LettuceTransfer.pull(bytes, k.getBytes()));
            pullers.put("Jedis typed", k -> k.equals("b") ? JedisTransfer.pullBloom(s.jedis, k)
                    : JedisTransfer.pullCuckoo(s.jedis, k));
            pullers.put("JedisPooled typed", k -> k.equals("b") ? JedisTransfer.pullBloom(pool, k)
                    : JedisTransfer.pullCuckoo(pool, k));
            pullers.put("Lettuce typed", k -> k.equals("b") ? LettuceTransfer.pullBloom(text, k)
                    : LettuceTransfer.pullCuckoo(text, k));
            for (var e : pullers.entrySet()) {
                try (Filter pb = e.getValue().apply("b"); Filter pc = e.getValue().apply("c")) {
                    assertInstanceOf(BloomFilter.class, pb, e.getKey());
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), pb.chunks());
                    ServerIdentityTest.assertSameWalk("CF", c.chunks(), pc.chunks());
                    assertArrayEquals(probe(c), probe(pc), e.getKey());
                }
            }
            try (Filter j = JedisTransfer.pull(s.jedis, binaryKey);
                    Filter l = LettuceTransfer.pullCuckoo(bytes, binaryKey)) {
                ServerIdentityTest.assertSameWalk("CF", c.chunks(), j.chunks());
                ServerIdentityTest.assertSameWalk("CF", c.chunks(), l.chunks());
            }
            // A pull leaves the connections usable and sends no write.
            assertEquals("PONG", text.sync().ping());
            assertEquals(3, s.jedis.dbSize());
        } finally {
            lettuce.shutdown();
        }
    }

    @ParameterizedTest
    @MethodSource("servers")
    void missingKeysOtherTypesAndTheOtherKind(String binary) throws Exception {
        TestServer s = server(binary);
        assertRefusals(s, JedisTransfer.wire(s.jedis));
        RedisClient lettuce = RedisClient.create("redis://127.0.0.1:" + s.port);
        try (var conn = lettuce.connect()) {
            assertRefusals(s, LettuceTransfer.wire(conn));
            FilterException e = assertThrows(FilterException.class,
                    () -> LettuceTransfer.pull(conn, "missing"));
            assertEquals("ERR not found", e.getMessage());
        } finally {
            lettuce.shutdown();
        }
        FilterException e = assertThrows(FilterException.class,
                () -> JedisTransfer.pullBloom(s.jedis, "c"));
        assertEquals(Pull.WRONG_TYPE + " (the key holds a cuckoo filter, not a Bloom filter)",
                e.getMessage());
    }

    static void assertRefusals(TestServer s, Push.Wire w) {
        s.jedis.flushAll();
        s.jedis.set("s", "v");
        s.jedis.hset("h", "f", "v");
        s.call("BF.RESERVE", "b", "0.01", "100");
        s.call("CF.RESERVE", "c", "100");
        for (Class<? extends Filter> want : List.of(Filter.class, BloomFilter.class,
                CuckooFilter.class)) {
            FilterException e = assertThrows(FilterException.class,
                    () -> Pull.pull(w, "missing".getBytes(), want));
            assertEquals("ERR not found", e.getMessage());
            for (String k : List.of("s", "h")) {
                e = assertThrows(FilterException.class, () -> Pull.pull(w, k.getBytes(), want));
                assertEquals(Pull.WRONG_TYPE, e.getMessage());
            }
        }
        FilterException e = assertThrows(FilterException.class,
                () -> Pull.pull(w, "b".getBytes(), CuckooFilter.class));
        assertEquals(Pull.WRONG_TYPE + " (the key holds a Bloom filter, not a cuckoo filter)",
                e.getMessage());
        // Refused before any SCANDUMP: nothing was read.
        assertEquals(4, s.jedis.dbSize());
    }

    /**
     * A windowed filter keeps its window: as of now it answers as the server, and as of a time
     * when the server has forgotten the first items but not the later ones (asked then), as the
     * server answers then.
     */
    @ParameterizedTest
    @MethodSource("servers")
    void aPulledWindowedFilterAnswersAsTheServerAtThatTime(String binary) throws Exception {
        TestServer s = server(binary);
        long windowMs = 4000;
        s.call("BF.RESERVE", "w", "0.01", "1000", "WINDOW", "4");
        List<Object> old = new ArrayList<>(BloomFilterTest.items("old-", 300));
        List<Object> recent = new ArrayList<>(BloomFilterTest.items("new-", 300));
        s.call("BF.MADD", ServerIdentityTest.args("w", List.of(), old));
        // Every item is forgotten at most 1.25 windows after it was added (the generations are
        // quarters of the window), and remembered for at least a window.
        long oldGoneBy = System.currentTimeMillis() + windowMs * 5 / 4;
        Thread.sleep(2200);
        long recentKeptUntil = System.currentTimeMillis() + windowMs;
        s.call("BF.MADD", ServerIdentityTest.args("w", List.of(), recent));
        List<Object> all = new ArrayList<>(old);
        all.addAll(recent);
        try (BloomFilter p = JedisTransfer.pullBloom(s.jedis, "w")) {
            assertEquals(Duration.ofSeconds(4), p.window().orElseThrow());
            assertArrayEquals(serverMexists(s, "w", all), p.mightContainAll(all, Instant.now()));
            assertIsTheKey(s, "w", p);
            Instant then = Instant.ofEpochMilli((oldGoneBy + recentKeptUntil) / 2);
            assertTrue(oldGoneBy < recentKeptUntil - 300, "the test's own timing");
            boolean[] mine = p.mightContainAll(all, then);
            Thread.sleep(Math.max(0, then.toEpochMilli() - System.currentTimeMillis()));
            assertTrue(System.currentTimeMillis() < recentKeptUntil, "the test's own timing");
            assertArrayEquals(serverMexists(s, "w", all), mine);
            int oldLeft = 0;
            for (int i = 0; i < old.size(); i++) {
                oldLeft += mine[i] ? 1 : 0;
                assertTrue(mine[old.size() + i], "a recent item is kept");
            }
            assertTrue(oldLeft < 30, oldLeft + " of 300 forgotten items still answer (1%)");
            // Long after the window, nothing is live.
            for (boolean b : p.mightContainAll(all, then.plusSeconds(3600))) {
                assertTrue(!b);
            }
        }
    }

    static boolean[] serverMexists(TestServer s, String key, List<Object> items) {
        List<?> r = (List<?>) s.call("BF.MEXISTS", ServerIdentityTest.args(key, List.of(), items));
        boolean[] out = new boolean[r.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (Long) r.get(i) == 1;
        }
        return out;
    }

    /**
     * A server whose walk never ends (its iterators cycle) costs three walks of what the header
     * describes, then a clear exception; a DUMP payload that does not check is refused.
     */
    @Test
    void aBrokenServerIsCutAtItsHeader() throws Exception {
        TestServer s = server(TestServer.servers().get(0));
        try (BloomFilter b = BloomFilter.create(100)) {
            b.putAll(BloomFilterTest.items("x", 5000));
            JedisTransfer.push(s.jedis, "k", b, false);
            int[] calls = {0};
            Around cycling = new Around(JedisTransfer.wire(s.jedis)) {
                @Override
                public Object call(byte[]... c) {
                    if (scandumpAt(c) > 1) {
                        c = c.clone();
                        c[2] = "1".getBytes();
                    }
                    return super.call(c);
                }

                @Override
                void after(byte[][] c, long at) {
                    calls[0] += at >= 0 ? 1 : 0;
                }
            };
            FilterException e = assertThrows(FilterException.class,
                    () -> Pull.pull(cycling, "k".getBytes(), Filter.class));
            assertTrue(e.getMessage().startsWith("the key changed during every one of 3 SCANDUMP"
                    + " walks (the last: the SCANDUMP walk went past what its header describes"),
                    e.getMessage());
            assertEquals(3, cycling.walks);
            // Each link is one chunk under 64 KiB: the header, a chunk per link, the refusal.
            long links = b.info().numberOfFilters();
            assertTrue(links > 3, links + " links");
            assertEquals(3 * (links + 2), calls[0], "SCANDUMP calls");
            Around corrupt = new Around(withoutStamps(JedisTransfer.wire(s.jedis))) {
                @Override
                public Object call(byte[]... c) {
                    Object r = super.call(c);
                    if (name(c).equals("DUMP")) {
                        byte[] p = ((byte[]) r).clone();
                        p[p.length / 2] ^= 1;
                        return p;
                    }
                    return r;
                }

                @Override
                void after(byte[][] c, long at) {}
            };
            FormatException f = assertThrows(FormatException.class,
                    () -> Pull.pull(corrupt, "k".getBytes(), Filter.class));
            assertEquals("the DUMP payload's checksum does not match", f.getMessage());
        }
    }

    /** The pull-only ACL rule docs/clients.md gives: reads only, and DUMP for RedisBloom. */
    @ParameterizedTest
    @MethodSource("servers")
    void aPullOnlyAclUser(String binary) throws Exception {
        TestServer s = server(binary);
        pullOnlyUser(s, true);
    }

    static void pullOnlyUser(TestServer s, boolean stamps) throws Exception {
        // RedisBloom's commands declare no read-only key access: %R~ refuses its SCANDUMP.
        s.call("ACL", "SETUSER", "reader", "reset", "on", ">secret",
                stamps ? "%R~app:*" : "~app:*", "+type", "+bf.scandump", "+cf.scandump");
        try (Jedis j = new Jedis("127.0.0.1", s.port);
                BloomFilter b = BloomFilter.builder().capacity(1000)
                        .layout(BloomLayout.REDISBLOOM).build()) {
            j.auth("reader", "secret");
            b.putAll(BloomFilterTest.items("acl", 300));
            JedisTransfer.push(s.jedis, "app:seen", b, true);
            if (stamps) {
                try (Filter p = JedisTransfer.pull(j, "app:seen")) {
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), p.chunks());
                }
            } else {
                FilterException e = assertThrows(FilterException.class,
                        () -> JedisTransfer.pull(j, "app:seen"));
                assertTrue(e.getMessage().startsWith("this server's SCANDUMP cannot show that a"
                        + " walk read one state of the key (it takes no STAMP"), e.getMessage());
                assertTrue(e.getMessage().contains("NOPERM"), e.getMessage());
                s.call("ACL", "SETUSER", "reader", "+dump");
                try (Filter p = JedisTransfer.pull(j, "app:seen")) {
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), p.chunks());
                }
                s.call("ACL", "SETUSER", "reader", "resetkeys", "%R~app:*");
                JedisDataException r = assertThrows(JedisDataException.class,
                        () -> JedisTransfer.pull(j, "app:seen"));
                assertTrue(r.getMessage().startsWith("NOPERM"), r.getMessage());
            }
            JedisDataException e = assertThrows(JedisDataException.class,
                    () -> JedisTransfer.pull(j, "other"));
            assertTrue(e.getMessage().contains("NOPERM"), e.getMessage());
        } finally {
            s.call("ACL", "DELUSER", "reader");
        }
    }

    /**
     * RedisBloom 2.8.2: filters of its layouts pushed into it and pulled back (its SCANDUMP
     * takes no STAMP: DUMP, decoded by the core), keys it built itself, over Jedis and Lettuce;
     * its refusals; a user without {@code +dump}.
     */
    @Test
    void redisBloomPushAndPull() throws Exception {
        try (TestServer s = TestServer.startWith("redis-server", redisBloom())) {
            List<Object> cases = new ArrayList<>();
            for (ServerIdentityTest.BloomCase c : ServerIdentityTest.bloomCases()) {
                if (c.name().startsWith("redisbloom")) {
                    cases.add(c);
                }
            }
            for (ServerIdentityTest.CuckooCase c : ServerIdentityTest.cuckooCases()) {
                if (c.name().startsWith("redisbloom")) {
                    cases.add(c);
                }
            }
            RedisClient lettuce = RedisClient.create("redis://127.0.0.1:" + s.port);
            try (var conn = lettuce.connect()) {
                for (Object c : cases) {
                    try (Filter f = JedisTransferTest.build(c)) {
                        JedisTransfer.push(s.jedis, "k", f, true, true);
                        Around counted = Around.counting(JedisTransfer.wire(s.jedis));
                        try (Filter p = pullTyped(counted, "k", f.kind());
                                Filter l = LettuceTransfer.pull(conn, "k")) {
                            assertEquals(1, counted.walks, "asked for STAMP once");
                            for (Filter x : List.of(p, l)) {
                                ServerIdentityTest.assertSameWalk(f.kind(), f.chunks(),
                                        x.chunks());
                                assertIsTheKey(s, "k", x);
                            }
                        }
                    }
                }
            } finally {
                lettuce.shutdown();
            }
            // Keys RedisBloom built itself (its defaults: no LAYOUT argument).
            s.call("BF.RESERVE", "bf", "0.01", "100");
            s.call("BF.MADD", ServerIdentityTest.args("bf", List.of(), ServerIdentityTest.ITEMS));
            s.call("CF.RESERVE", "cf", "200");
            s.call("CF.INSERT", ServerIdentityTest.args("cf", List.of("ITEMS"),
                    ServerIdentityTest.ITEMS.subList(0, 1200)));
            for (String k : List.of("bf", "cf")) {
                try (Filter p = JedisTransfer.pull(s.jedis, k)) {
                    assertIsTheKey(s, k, p);
                }
            }
            assertRefusals(s, JedisTransfer.wire(s.jedis));
            pullOnlyUser(s, false);
        }
    }
}
