package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.SafeEncoder;

/**
 * The library against real servers (every server of {@code ferrobloom.servers}): for every kind
 * and layout, a Java filter built from the same parameters and the same items in the same order
 * answers every batch as the server, dumps byte for byte as the server's SCANDUMP and reports the
 * same INFO; loaded into the server with LOADCHUNK, the server answers as the Java filter, and a
 * filter rebuilt from the server's chunks answers as the server. Bad parameters get the server's
 * error texts.
 */
class ServerIdentityTest {
    private static final TestServer.PerClass SERVERS = new TestServer.PerClass();

    static TestServer server(String binary) throws Exception {
        return SERVERS.get(binary);
    }

    @AfterAll
    static void stop() throws Exception {
        SERVERS.close();
    }

    static final byte[] SEED = new byte[32];

    static {
        for (int i = 0; i < 32; i++) {
            SEED[i] = (byte) i;
        }
    }

    /** Items of every type a Java client sends, in a fixed order. */
    static final List<Object> ITEMS = new ArrayList<>();
    static final List<Object> PROBES = new ArrayList<>();

    static {
        for (int i = 0; i < 1500; i++) {
            ITEMS.add(i % 3 != 0 ? "item-" + i
                    : i % 2 != 0 ? (Object) (long) i : new byte[] {'b', 0, (byte) i});
        }
        ITEMS.add(-7L);
        ITEMS.add("ü");
        ITEMS.add(new byte[0]);
        for (int i = 0; i < 4000; i += 3) {
            PROBES.add("item-" + i);
        }
        for (long i = 0; i < 3000; i++) {
            PROBES.add(i);
        }
        for (int i = 0; i < 2000; i++) {
            PROBES.add("none-" + i);
        }
    }

    /** An item as Jedis sends it: its own encoders, not the library's. */
    static byte[] wire(Object o) {
        if (o instanceof byte[] b) {
            return b;
        }
        if (o instanceof Long l) {
            return Protocol.toByteArray(l);
        }
        return SafeEncoder.encode((String) o);
    }

    static Object[] args(Object key, List<?> opts, List<Object> items) {
        List<Object> a = new ArrayList<>();
        a.add(key);
        a.addAll(opts);
        for (Object o : items) {
            a.add(wire(o));
        }
        return a.toArray();
    }

    record BloomCase(String name, Supplier<BloomFilter.Builder> local, List<Object> wire) {
        @Override
        public String toString() {
            return name;
        }
    }

    record CuckooCase(String name, Supplier<CuckooFilter.Builder> local, List<Object> wire) {
        @Override
        public String toString() {
            return name;
        }
    }

    static List<BloomCase> bloomCases() {
        return List.of(
                new BloomCase("classic", () -> BloomFilter.builder(), List.of()),
                new BloomCase("classic-nonscaling", () -> BloomFilter.builder().nonScaling(),
                        List.of("NONSCALING")),
                new BloomCase("blocked-x3",
                        () -> BloomFilter.builder().layout(BloomLayout.BLOCKED).expansion(3),
                        List.of("LAYOUT", "blocked", "EXPANSION", "3")),
                new BloomCase("paired", () -> BloomFilter.builder().layout(BloomLayout.PAIRED),
                        List.of("LAYOUT", "paired")),
                new BloomCase("redisbloom",
                        () -> BloomFilter.builder().layout(BloomLayout.REDISBLOOM),
                        List.of("LAYOUT", "redisbloom")),
                new BloomCase("redisbloom-nonscaling",
                        () -> BloomFilter.builder().layout(BloomLayout.REDISBLOOM).nonScaling(),
                        List.of("LAYOUT", "redisbloom", "NONSCALING")),
                new BloomCase("classic-tightening-seed",
                        () -> BloomFilter.builder().tightening(0.7).seed(SEED),
                        List.of("TIGHTENING", "0.7", "SEED", SEED)));
    }

    static List<CuckooCase> cuckooCases() {
        return List.of(
                new CuckooCase("ferrobloom", () -> CuckooFilter.builder(), List.of()),
                new CuckooCase("ferrobloom-options",
                        () -> CuckooFilter.builder().bucketSize(4).maxIterations(50)
                                .expansion(2).errorRate(0.001),
                        List.of("BUCKETSIZE", "4", "MAXITERATIONS", "50", "EXPANSION", "2",
                                "ERROR", "0.001")),
                new CuckooCase("redisbloom",
                        () -> CuckooFilter.builder().layout(CuckooLayout.REDISBLOOM),
                        List.of("LAYOUT", "redisbloom")),
                new CuckooCase("redisbloom-bs3",
                        () -> CuckooFilter.builder().layout(CuckooLayout.REDISBLOOM)
                                .bucketSize(3),
                        List.of("LAYOUT", "redisbloom", "BUCKETSIZE", "3")));
    }

    static Stream<Arguments> bloom() {
        return TestServer.servers().stream()
                .flatMap(s -> bloomCases().stream().map(c -> Arguments.of(s, c)));
    }

    static Stream<Arguments> cuckoo() {
        return TestServer.servers().stream()
                .flatMap(s -> cuckooCases().stream().map(c -> Arguments.of(s, c)));
    }

    /**
     * A cuckoo walk's iterators carry the filter's move count once fingerprints moved (bit 62,
     * the count in bits 40-61, kept in memory only): copies compare by position.
     */
    static long position(String kind, long it) {
        if (kind.equals("CF") && (it & (1L << 62)) != 0) {
            return it & ((1L << 40) - 1);
        }
        return it;
    }

    static void assertSameWalk(String kind, List<Chunk> expected, List<Chunk> actual) {
        assertEquals(expected.size(), actual.size(), "chunks");
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(position(kind, expected.get(i).iterator()),
                    position(kind, actual.get(i).iterator()), "iterator of chunk " + i);
            assertArrayEquals(expected.get(i).data(), actual.get(i).data(), "chunk " + i);
        }
    }

    static Map<String, Object> serverInfo(TestServer s, String kind, String key) {
        List<?> flat = (List<?>) s.call(kind + ".INFO", key);
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < flat.size(); i += 2) {
            m.put(SafeEncoder.encode((byte[]) flat.get(i)), flat.get(i + 1));
        }
        return m;
    }

    static boolean[] serverMexists(TestServer s, String kind, String key) {
        List<?> r = (List<?>) s.call(kind + ".MEXISTS", args(key, List.of(), PROBES));
        boolean[] out = new boolean[r.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (Long) r.get(i) == 1;
        }
        return out;
    }

    /** Builds the filter here and on the server with the same batches; checks every reply. */
    static BloomFilter buildBloom(TestServer s, String key, BloomCase c, long capacity) {
        BloomFilter local = c.local().get().capacity(capacity).errorRate(0.01).build();
        List<Object> reserve = new ArrayList<>(List.of("0.01", Long.toString(capacity)));
        reserve.addAll(c.wire());
        s.call("BF.RESERVE", args(key, reserve, List.of()));
        for (int at = 0; at < ITEMS.size(); at += 250) {
            List<Object> batch = ITEMS.subList(at, Math.min(ITEMS.size(), at + 250));
            List<?> theirs = (List<?>) s.call("BF.MADD", args(key, List.of(), batch));
            List<Object> mine;
            try {
                boolean[] r = local.putAll(batch);
                mine = new ArrayList<>();
                for (boolean b : r) {
                    mine.add(b);
                }
            } catch (BatchException e) {
                mine = e.reply();
            }
            assertEquals(theirs.size(), mine.size(), "BF.MADD reply length");
            for (int i = 0; i < mine.size(); i++) {
                Object m = mine.get(i);
                Object t = theirs.get(i);
                if (m instanceof FilterException fe) {
                    assertInstanceOf(JedisDataException.class, t);
                    assertEquals(((JedisDataException) t).getMessage(), fe.getMessage());
                } else {
                    assertEquals((Boolean) m ? 1L : 0L, t);
                }
            }
        }
        return local;
    }

    static CuckooFilter buildCuckoo(TestServer s, String key, CuckooCase c) {
        CuckooFilter local = c.local().get().capacity(200).build();
        List<Object> reserve = new ArrayList<>(List.of("200"));
        reserve.addAll(c.wire());
        s.call("CF.RESERVE", args(key, reserve, List.of()));
        for (int at = 0; at < 1200; at += 250) {
            List<Object> batch = ITEMS.subList(at, Math.min(1200, at + 250));
            List<?> theirs = (List<?>) s.call("CF.INSERT", args(key, List.of("ITEMS"), batch));
            int[] mine = local.insert(batch);
            assertEquals(theirs.size(), mine.length);
            for (int i = 0; i < mine.length; i++) {
                assertEquals((long) mine[i], theirs.get(i));
            }
        }
        for (int i = 0; i < 300; i += 7) {
            Object x = ITEMS.get(i);
            boolean theirs = (Long) s.call("CF.DEL", key, wire(x)) == 1;
            assertEquals(theirs, x instanceof byte[] b ? local.delete(b)
                    : x instanceof Long l ? local.delete(l) : local.delete((String) x));
        }
        return local;
    }

    static void checkSame(TestServer s, String kind, String key, Filter local) {
        assertSameWalk(kind, s.scandump(kind, key), local.chunks());
        boolean[] mine = local instanceof BloomFilter b ? b.mightContainAll(PROBES)
                : ((CuckooFilter) local).mightContainAll(PROBES);
        assertArrayEquals(serverMexists(s, kind, key), mine);
        Map<String, Object> info = local instanceof BloomFilter b ? b.info().asMap()
                : ((CuckooFilter) local).info().asMap();
        assertEquals(serverInfo(s, kind, key), info);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("bloom")
    void bloomIdenticalToServer(String binary, BloomCase c) throws Exception {
        TestServer s = server(binary);
        try (BloomFilter local = buildBloom(s, "k", c, 100)) {
            checkSame(s, "BF", "k", local);
            assertEquals(s.call("BF.CARD", "k"), local.cardinality());
            // Loaded into the server, it answers as the Java filter.
            s.loadChunks("BF", "loaded", local.chunks());
            checkSame(s, "BF", "loaded", local);
            // Rebuilt from the server's chunks, the Java filter answers as the server.
            try (BloomFilter pulled = BloomFilter.fromChunks(s.scandump("BF", "k"))) {
                checkSame(s, "BF", "k", pulled);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cuckoo")
    void cuckooIdenticalToServer(String binary, CuckooCase c) throws Exception {
        TestServer s = server(binary);
        try (CuckooFilter local = buildCuckoo(s, "k", c)) {
            checkSame(s, "CF", "k", local);
            for (Object x : ITEMS.subList(0, 50)) {
                long theirs = (Long) s.call("CF.COUNT", "k", wire(x));
                assertEquals(theirs, local.count(wire(x)));
            }
            s.loadChunks("CF", "loaded", local.chunks());
            checkSame(s, "CF", "loaded", local);
            try (CuckooFilter pulled = CuckooFilter.fromChunks(s.scandump("CF", "k"))) {
                checkSame(s, "CF", "k", pulled);
            }
        }
    }

    static Stream<String> servers() {
        return TestServer.servers().stream();
    }

    @ParameterizedTest
    @MethodSource("servers")
    void fullFiltersAnswerAsTheServer(String binary) throws Exception {
        TestServer s = server(binary);
        BloomCase nonscaling = bloomCases().get(1);
        try (BloomFilter local = buildBloom(s, "n", nonscaling, 50)) {
            checkSame(s, "BF", "n", local);
        }
        try (CuckooFilter c = CuckooFilter.builder().capacity(8).expansion(0).bucketSize(1)
                .build()) {
            s.call("CF.RESERVE", "c", 8, "EXPANSION", 0, "BUCKETSIZE", 1);
            List<Object> items = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                items.add("c" + i);
            }
            List<?> theirs = (List<?>) s.call("CF.INSERT", args("c", List.of("ITEMS"), items));
            int[] mine = c.insert(items);
            for (int i = 0; i < mine.length; i++) {
                assertEquals((long) mine[i], theirs.get(i));
            }
            BatchException e = assertThrows(BatchException.class, () -> c.addAll(items));
            JedisDataException one = assertThrows(JedisDataException.class,
                    () -> s.call("CF.ADD", "c", "c39"));
            assertEquals(one.getMessage(), e.getMessage());
            checkSame(s, "CF", "c", c);
        }
    }

    record Bad(String kind, Supplier<Filter> local, List<Object> wire) {
        @Override
        public String toString() {
            return kind + " " + wire;
        }
    }

    static List<Bad> badParameters() {
        return List.of(
                new Bad("BF", () -> BloomFilter.create(0, 0.01), List.of("0.01", "0")),
                new Bad("BF", () -> BloomFilter.create(100, 2), List.of("2.0", "100")),
                new Bad("BF", () -> BloomFilter.create(100, Double.NaN), List.of("NaN", "100")),
                new Bad("BF", () -> BloomFilter.create(100, 1e-300), List.of("1.0E-300", "100")),
                new Bad("BF", () -> BloomFilter.create(1L << 31, 0.01),
                        List.of("0.01", Long.toString(1L << 31))),
                new Bad("BF", () -> BloomFilter.builder().capacity(100).expansion(1).nonScaling()
                        .build(), List.of("0.01", "100", "EXPANSION", "1", "NONSCALING")),
                new Bad("BF", () -> BloomFilter.builder().capacity(100).expansion(40000).build(),
                        List.of("0.01", "100", "EXPANSION", "40000")),
                new Bad("BF", () -> BloomFilter.builder().capacity(100).expansion(-1).build(),
                        List.of("0.01", "100", "EXPANSION", "-1")),
                new Bad("BF", () -> BloomFilter.builder().capacity(100).tightening(1.5).build(),
                        List.of("0.01", "100", "TIGHTENING", "1.5")),
                new Bad("BF", () -> BloomFilter.builder().capacity(100)
                        .seed("short".getBytes()).build(),
                        List.of("0.01", "100", "SEED", "short")),
                new Bad("BF", () -> BloomFilter.builder().capacity(100)
                        .layout(BloomLayout.REDISBLOOM).seed(SEED).build(),
                        List.of("0.01", "100", "LAYOUT", "redisbloom", "SEED", SEED)),
                new Bad("BF", () -> BloomFilter.builder().capacity(100)
                        .window(java.time.Duration.ZERO).build(),
                        List.of("0.01", "100", "WINDOW", "0")),
                new Bad("BF", () -> BloomFilter.builder().capacity(100).nonScaling()
                        .validateScaleTo(1_000_000_000_000L).build(),
                        List.of("0.01", "100", "VALIDATESCALETO", "1000000000000", "NONSCALING")),
                new Bad("CF", () -> CuckooFilter.create(1), List.of("1")),
                new Bad("CF", () -> CuckooFilter.create(1L << 31),
                        List.of(Long.toString(1L << 31))),
                new Bad("CF", () -> CuckooFilter.builder().capacity(100).bucketSize(0).build(),
                        List.of("100", "BUCKETSIZE", "0")),
                new Bad("CF", () -> CuckooFilter.builder().capacity(100).maxIterations(70000)
                        .build(), List.of("100", "MAXITERATIONS", "70000")),
                new Bad("CF", () -> CuckooFilter.builder().capacity(100).expansion(-1).build(),
                        List.of("100", "EXPANSION", "-1")),
                new Bad("CF", () -> CuckooFilter.builder().capacity(100).errorRate(1.0).build(),
                        List.of("100", "ERROR", "1.0")),
                new Bad("CF", () -> CuckooFilter.builder().capacity(100).errorRate(1e-12)
                        .build(), List.of("100", "ERROR", "1.0E-12")),
                new Bad("CF", () -> CuckooFilter.builder().capacity(100)
                        .layout(CuckooLayout.REDISBLOOM).errorRate(0.01).build(),
                        List.of("100", "LAYOUT", "redisbloom", "ERROR", "0.01")));
    }

    static Stream<Arguments> bad() {
        return TestServer.servers().stream()
                .flatMap(s -> badParameters().stream().map(c -> Arguments.of(s, c)));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("bad")
    void parametersGetTheServersErrorTexts(String binary, Bad c) throws Exception {
        TestServer s = server(binary);
        FilterException mine = assertThrows(FilterException.class, () -> c.local().get());
        JedisDataException theirs = assertThrows(JedisDataException.class,
                () -> s.call(c.kind() + ".RESERVE", args("bad", c.wire(), List.of())));
        assertEquals(theirs.getMessage(), mine.getMessage());
        assertTrue(!mine.getMessage().isEmpty());
    }
}
