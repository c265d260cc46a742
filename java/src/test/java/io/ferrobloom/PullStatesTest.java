package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import redis.clients.jedis.Jedis;

/**
 * pull returns exactly a state the key held, or a clear exception, on every server kind:
 * ferrobloom on every server of {@code ferrobloom.servers} (a SCANDUMP walk whose every reply
 * carries the state's stamp) and RedisBloom 2.8.2 (DUMP). The Python package's
 * python/tests/test_pull_states.py and test_server.py, over Jedis:
 *
 * <ul>
 *   <li>a writer thread adds items while pulls run: every pull holds every item acknowledged
 *       before it began, and is bit for bit the state after some prefix of the writer's adds
 *       (a filter replaying the adds here finds it);
 *   <li>a write between two chunks of a walk makes pull walk again, and writes during every
 *       walk make it refuse;
 *   <li>a cuckoo filter that moves items during a walk is walked again;
 *   <li>two 23 MiB filters with equal headers but different bits: one renamed over the key
 *       between two chunks of a walk, and pushes of the two in turn against a loop of pulls:
 *       every pull is one of them bit for bit or the exception.
 * </ul>
 */
class PullStatesTest {
    private static TestServer redisBloom;

    static synchronized TestServer server(String binary) throws Exception {
        if (binary.equals("redisbloom")) {
            if (redisBloom == null) {
                redisBloom = TestServer.startWith("redis-server", PullTest.redisBloom());
            }
            redisBloom.jedis.flushAll();
            return redisBloom;
        }
        return PullTest.server(binary);
    }

    @AfterAll
    static void stop() throws Exception {
        if (redisBloom != null) {
            redisBloom.close();
            redisBloom = null;
        }
        PullTest.stop();
    }

    /** Every server, and RedisBloom (skipped when not given). */
    static Stream<String> everyServer() {
        List<String> out = new ArrayList<>(TestServer.servers());
        out.add("redisbloom");
        return out.stream();
    }

    static Stream<Arguments> serversAndKinds() {
        return everyServer().flatMap(s -> Stream.of(Arguments.of(s, "BF"), Arguments.of(s, "CF")));
    }

    static boolean rb(String binary) {
        return binary.equals("redisbloom");
    }

    /** The local twin of the key the writer writes (RedisBloom's layout for RedisBloom). */
    static Filter twin(String kind, boolean redisBloom) {
        if (kind.equals("BF")) {
            BloomFilter.Builder b = BloomFilter.builder().capacity(1000);
            return (redisBloom ? b.layout(BloomLayout.REDISBLOOM) : b).build();
        }
        CuckooFilter.Builder c = CuckooFilter.builder().capacity(1000).expansion(2);
        return (redisBloom ? c.layout(CuckooLayout.REDISBLOOM) : c).build();
    }

    static boolean add(Filter f, String item) {
        return f instanceof BloomFilter b ? b.put(item) : ((CuckooFilter) f).add(item);
    }

    static boolean[] contains(Filter f, List<String> items) {
        return f instanceof BloomFilter b ? b.mightContainAll(items)
                : ((CuckooFilter) f).mightContainAll(items);
    }

    /**
     * A writer thread adds items {@code w-0, w-1, ...} one command at a time while this thread
     * pulls (50 pulls and 300 writes at least). Each pull holds every item acknowledged before
     * it began, and is bit for bit the local twin after some prefix of the adds: the state the
     * key held after them, never a mix. On ferrobloom the writes also made some walks start
     * again (counted).
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("serversAndKinds")
    void aWriterDuringPulls(String binary, String kind) throws Exception {
        TestServer s = server(binary);
        // Several links or sub-filters: a walk of several chunks.
        if (kind.equals("BF")) {
            s.call("BF.RESERVE", "k", "0.01", "1000");
        } else {
            s.call("CF.RESERVE", "k", "1000", "EXPANSION", "2");
        }
        List<String> pre = BloomFilterTest.items("pre-", 20_000);
        try (Filter mirror = twin(kind, rb(binary))) {
            for (int at = 0; at < pre.size(); at += 1000) {
                List<String> batch = pre.subList(at, at + 1000);
                if (kind.equals("BF")) {
                    s.call("BF.MADD", ServerIdentityTest.args("k", List.of(),
                            new ArrayList<>(batch)));
                    ((BloomFilter) mirror).putAll(batch);
                } else {
                    s.call("CF.INSERT", ServerIdentityTest.args("k", List.of("ITEMS"),
                            new ArrayList<>(batch)));
                    ((CuckooFilter) mirror).addAll(batch);
                }
            }
            ServerIdentityTest.assertSameWalk(kind, s.scandump(kind, "k"), mirror.chunks());
            AtomicLong acked = new AtomicLong();
            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            Thread writer = new Thread(() -> {
                try (Jedis j = new Jedis("127.0.0.1", s.port)) {
                    byte[] add = (kind + ".ADD").getBytes(StandardCharsets.US_ASCII);
                    for (long i = 0; !stop.get(); i++) {
                        j.sendCommand(JedisTransfer.command(add), "k".getBytes(),
                                ("w-" + i).getBytes(StandardCharsets.UTF_8));
                        acked.set(i + 1);
                        Thread.sleep(3);
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            writer.start();
            Around wire = Around.counting(JedisTransfer.wire(s.jedis));
            int pulls = 0;
            int refused = 0;
            long applied = 0;
            long deadline = System.nanoTime() + 60_000_000_000L;
            try {
                while ((pulls < 50 || acked.get() < 300
                        || (!rb(binary) && wire.walks == pulls + refused))
                        && System.nanoTime() < deadline) {
                    long before = acked.get();
                    try (Filter p = pullOrNull(wire)) {
                        if (p == null) {
                            refused++;
                            continue;
                        }
                        List<String> acknowledged = new ArrayList<>();
                        for (long i = 0; i < before; i++) {
                            acknowledged.add("w-" + i);
                        }
                        boolean[] has = contains(p, acknowledged);
                        for (int i = 0; i < has.length; i++) {
                            assertTrue(has[i], "w-" + i + " was acknowledged before the pull");
                        }
                        for (boolean b : contains(p, pre)) {
                            assertTrue(b);
                        }
                        // The twin replays the writer's adds until it holds as many items.
                        while (mirror.cardinality() < p.cardinality()) {
                            add(mirror, "w-" + applied++);
                        }
                        assertEquals(mirror.cardinality(), p.cardinality());
                        ServerIdentityTest.assertSameWalk(kind, mirror.chunks(), p.chunks());
                    }
                    pulls++;
                }
            } finally {
                stop.set(true);
                writer.join();
            }
            assertTrue(errors.isEmpty(), errors.toString());
            System.out.printf("aWriterDuringPulls %s %s: %d pulls, %d refused, %d walks, %d"
                    + " writes%n", binary, kind, pulls, refused, wire.walks, acked.get());
            assertTrue(pulls >= 50 && acked.get() >= 300, pulls + " pulls succeeded, "
                    + refused + " refused, " + acked.get() + " writes");
            if (!rb(binary)) {
                assertTrue(wire.walks > pulls + refused, "no walk was started again ("
                        + wire.walks + " walks for " + pulls + " pulls)");
            }
        }
    }

    /** A pull, or null when it was refused because the key changed during every walk. */
    static Filter pullOrNull(Push.Wire w) {
        try {
            return Pull.pull(w, "k".getBytes(), Filter.class);
        } catch (FilterException e) {
            assertTrue(e.getMessage().startsWith("the key changed during every one"),
                    e.getMessage());
            return null;
        }
    }

    /** Another client adds an item after each SCANDUMP call of the first {@code n} walks. */
    static Around writing(TestServer s, String key, int n) {
        return new Around(JedisTransfer.wire(s.jedis)) {
            int added;

            @Override
            void after(byte[][] c, long at) {
                if (at >= 0 && walks <= n) {
                    s.call("BF.ADD", key, "concurrent-" + n + "-" + added++);
                }
            }
        };
    }

    @ParameterizedTest
    @MethodSource("io.ferrobloom.PullTest#servers")
    void aWriteDuringTheWalkMakesPullWalkAgain(String binary) throws Exception {
        TestServer s = server(binary);
        s.call("BF.RESERVE", "k", "0.01", "100");
        s.call("BF.MADD", ServerIdentityTest.args("k", List.of(),
                ServerIdentityTest.ITEMS.subList(0, 1000)));
        Around once = writing(s, "k", 1);
        try (Filter f = Pull.pull(once, "k".getBytes(), Filter.class)) {
            assertEquals(2, once.walks);
            PullTest.assertIsTheKey(s, "k", f);
        }
        Around always = writing(s, "k", 99);
        FilterException e = assertThrows(FilterException.class,
                () -> Pull.pull(always, "k".getBytes(), Filter.class));
        assertEquals("the key changed during every one of 3 SCANDUMP walks (the last: the key's"
                + " stamp changed during the walk)", e.getMessage());
        assertEquals(3, always.walks);
    }

    static Stream<Arguments> cuckooLayouts() {
        return TestServer.servers().stream().flatMap(s -> Stream.of(
                Arguments.of(s, "ferrobloom"), Arguments.of(s, "redisbloom")));
    }

    /**
     * Deletes and a compaction after the first data chunk move fingerprints into the first
     * sub-filter, already read: the walk is refused or sees another stamp, and pull walks again.
     */
    @ParameterizedTest
    @MethodSource("cuckooLayouts")
    void aCuckooFilterThatMovesItemsIsWalkedAgain(String binary, String layout) throws Exception {
        TestServer s = server(binary);
        List<Object> items = ServerIdentityTest.ITEMS;
        s.call("CF.RESERVE", "k", "256", "EXPANSION", "2", "LAYOUT", layout);
        s.call("CF.INSERT", ServerIdentityTest.args("k", List.of("ITEMS"),
                items.subList(0, 1500)));
        Around compacting = new Around(JedisTransfer.wire(s.jedis)) {
            boolean done;

            @Override
            void after(byte[][] c, long at) {
                if (at == 1 && !done) {
                    done = true;
                    for (Object x : items.subList(0, 300)) {
                        s.call("CF.DEL", "k", ServerIdentityTest.wire(x));
                    }
                    s.call("CF.COMPACT", "k");
                }
            }
        };
        try (CuckooFilter f = Pull.pull(compacting, "k".getBytes(), CuckooFilter.class)) {
            assertEquals(2, compacting.walks);
            PullTest.assertIsTheKey(s, "k", f);
            boolean[] kept = f.mightContainAll(items.subList(300, 1500));
            for (boolean b : kept) {
                assertTrue(b);
            }
        }
    }

    // Two filters of equal headers and different bits (python/tests/test_pull_states.py).

    /** 20M items at 1%: 23 MiB, two SCANDUMP data chunks of at most 16 MiB. */
    static final long CAPACITY = 20_000_000;
    static final BloomFilter[][] PAIRS = new BloomFilter[2][];

    @BeforeAll
    static void pairs() {
        for (int i = 0; i < 2; i++) {
            BloomLayout layout = i == 0 ? BloomLayout.CLASSIC : BloomLayout.REDISBLOOM;
            BloomFilter a = BloomFilter.builder().capacity(CAPACITY).nonScaling().layout(layout)
                    .build();
            BloomFilter b = BloomFilter.builder().capacity(CAPACITY).nonScaling().layout(layout)
                    .build();
            a.putAll(BloomFilterTest.items("a-", 100_000));
            b.putAll(BloomFilterTest.items("b-", 100_000));
            assertArrayEquals(a.scandump(0).data(), b.scandump(0).data(), "equal headers");
            assertTrue(a.chunks().size() >= 3, "two data chunks at least");
            PAIRS[i] = new BloomFilter[] {a, b};
        }
    }

    @AfterAll
    static void freePairs() {
        for (BloomFilter[] p : PAIRS) {
            if (p != null) {
                Arrays.stream(p).forEach(BloomFilter::close);
            }
        }
    }

    static BloomFilter[] pair(String binary) {
        return PAIRS[rb(binary) ? 1 : 0];
    }

    @ParameterizedTest
    @MethodSource("everyServer")
    void aReplacementWithAnEqualHeaderDuringAWalk(String binary) throws Exception {
        TestServer s = server(binary);
        BloomFilter[] ab = pair(binary);
        JedisTransfer.push(s.jedis, "k", ab[0], false);
        JedisTransfer.push(s.jedis, "b", ab[1], false);
        boolean[] swapped = {false};
        Around swapping = new Around(JedisTransfer.wire(s.jedis)) {
            @Override
            void after(byte[][] c, long at) {
                if (at > 0 && !swapped[0]) {
                    swapped[0] = true;
                    s.jedis.rename("b", "k");
                }
            }
        };
        try (BloomFilter got = Pull.pull(swapping, "k".getBytes(), BloomFilter.class)) {
            if (rb(binary)) {
                // DUMP: one atomic read, before any swap could happen.
                assertFalse(swapped[0]);
                assertArrayEquals(ab[0].toBytes(), got.toBytes());
            } else {
                // The walk that crossed the RENAME was refused and walked again.
                assertTrue(swapped[0]);
                assertEquals(2, swapping.walks);
                assertArrayEquals(ab[1].toBytes(), got.toBytes());
            }
        }
    }

    /**
     * One client pushes A and B in turn with replace, another pulls: every pull is A or B bit
     * for bit, or refused with "changed during every one of 3 SCANDUMP walks".
     */
    @ParameterizedTest
    @MethodSource("everyServer")
    void pushesAndPullsInALoopNeverMixTwoFilters(String binary) throws Exception {
        TestServer s = server(binary);
        BloomFilter[] ab = pair(binary);
        byte[] a = ab[0].toBytes();
        byte[] b = ab[1].toBytes();
        assertFalse(Arrays.equals(a, b));
        JedisTransfer.push(s.jedis, "k", ab[0], true);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong pushes = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        Thread pusher = new Thread(() -> {
            try (Jedis j = new Jedis("127.0.0.1", s.port, 20_000)) {
                for (int i = 0; !stop.get(); i++) {
                    JedisTransfer.push(j, "k", ab[i % 2 == 0 ? 1 : 0], true);
                    pushes.incrementAndGet();
                    // Some pulls then fall between two pushes, others cross a rename.
                    Thread.sleep(200);
                }
            } catch (Throwable e) {
                errors.add(e);
            }
        });
        pusher.start();
        int got = 0;
        int refused = 0;
        long deadline = System.nanoTime() + 60_000_000_000L;
        try (Jedis puller = new Jedis("127.0.0.1", s.port, 20_000)) {
            while (got + refused < 12 && System.nanoTime() < deadline) {
                try (BloomFilter f = JedisTransfer.pullBloom(puller, "k")) {
                    byte[] bytes = f.toBytes();
                    assertTrue(Arrays.equals(bytes, a) || Arrays.equals(bytes, b),
                            "pull " + got + " mixed the two filters");
                    got++;
                } catch (FilterException e) {
                    assertTrue(e.getMessage().startsWith("the key changed during every one"),
                            e.getMessage());
                    refused++;
                }
            }
        } finally {
            stop.set(true);
            pusher.join();
        }
        assertTrue(errors.isEmpty(), errors.toString());
        assertTrue(pushes.get() >= 2, "the key was replaced during the pulls");
        assertTrue(got > 0, "no pull succeeded (" + refused + " refused)");
    }

    @Test
    void theSameFilterPulledTwiceIsEqual() throws Exception {
        TestServer s = server(TestServer.servers().get(0));
        JedisTransfer.push(s.jedis, "k", PAIRS[0][0], false);
        try (Filter x = JedisTransfer.pull(s.jedis, "k"); Filter y = JedisTransfer.pull(s.jedis,
                "k")) {
            assertArrayEquals(PAIRS[0][0].toBytes(), x.toBytes());
            assertArrayEquals(x.toBytes(), y.toBytes());
        }
    }
}
