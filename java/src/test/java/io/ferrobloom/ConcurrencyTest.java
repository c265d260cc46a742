package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Thread-safety as documented: readers run together while a writer adds, a close racing with
 * readers ends them with IllegalStateException and nothing worse, merges in both directions at
 * once do not deadlock; and filters that are created, filled and closed or dropped do not leak
 * native memory.
 */
class ConcurrencyTest {

    @Test
    @Timeout(120)
    void readersSeeEveryItemAddedBeforeThemWhileAWriterAdds() throws Exception {
        try (BloomFilter f = BloomFilter.create(200_000, 0.01)) {
            List<String> first = BloomFilterTest.items("first", 20_000);
            AtomicInteger added = new AtomicInteger(count(f.putAll(first)));
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger rounds = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            List<Future<?>> readers = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                readers.add(pool.submit(() -> {
                    while (!stop.get()) {
                        for (boolean b : f.mightContainAll(first)) {
                            if (!b) {
                                throw new AssertionError("an added item was not found");
                            }
                        }
                        assertTrue(f.mightContain("first7"));
                        rounds.incrementAndGet();
                    }
                    return null;
                }));
            }
            Future<?> writer = pool.submit(() -> {
                for (int r = 0; r < 20; r++) {
                    added.addAndGet(count(f.putAll(BloomFilterTest.items("w" + r + "-", 5_000))));
                }
                return null;
            });
            writer.get(60, TimeUnit.SECONDS);
            stop.set(true);
            for (Future<?> r : readers) {
                r.get(60, TimeUnit.SECONDS);
            }
            pool.shutdown();
            assertTrue(rounds.get() > 0);
            // BF.CARD counts the adds that answered "new" (a false positive answers "not new").
            assertEquals(added.get(), f.cardinality());
            assertTrue(added.get() > 119_000);
        }
    }

    @Test
    @Timeout(120)
    void closeRacingWithReadersEndsThemCleanly() throws Exception {
        for (int round = 0; round < 20; round++) {
            BloomFilter f = BloomFilter.create(10_000, 0.01);
            CuckooFilter c = CuckooFilter.create(10_000);
            f.putAll(BloomFilterTest.items("x", 5000));
            c.addAll(BloomFilterTest.items("x", 5000));
            CountDownLatch started = new CountDownLatch(4);
            ExecutorService pool = Executors.newFixedThreadPool(4);
            List<Future<?>> calls = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int k = t;
                calls.add(pool.submit(() -> {
                    started.countDown();
                    try {
                        while (true) {
                            switch (k) {
                                case 0 -> f.mightContainAll(BloomFilterTest.items("x", 500));
                                case 1 -> f.put("more" + System.nanoTime());
                                case 2 -> c.mightContain("x1");
                                default -> c.toBytes();
                            }
                        }
                    } catch (IllegalStateException e) {
                        assertEquals("the filter is closed", e.getMessage());
                    }
                    return null;
                }));
            }
            started.await();
            f.close();
            c.close();
            for (Future<?> call : calls) {
                call.get(30, TimeUnit.SECONDS);
            }
            pool.shutdown();
        }
    }

    @Test
    @Timeout(60)
    void mergesInBothDirectionsAtOnceFinish() throws Exception {
        try (BloomFilter a = BloomFilter.create(10_000, 0.01);
                BloomFilter b = BloomFilter.create(10_000, 0.01)) {
            a.put("a");
            b.put("b");
            ExecutorService pool = Executors.newFixedThreadPool(3);
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                fs.add(pool.submit(() -> a.merge(b)));
                fs.add(pool.submit(() -> b.merge(a)));
                fs.add(pool.submit(() -> a.union(b, a).close()));
            }
            for (Future<?> f : fs) {
                f.get(30, TimeUnit.SECONDS);
            }
            pool.shutdown();
            assertTrue(a.mightContain("b") && b.mightContain("a"));
        }
    }

    static int count(boolean[] r) {
        int n = 0;
        for (boolean b : r) {
            n += b ? 1 : 0;
        }
        return n;
    }

    static long rssKiB() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmRSS");
    }

    /**
     * 750 filters of about 1.2 MiB each, filled (their pages touched): closed, or dropped for
     * the Cleaner. Leaked, they would hold about 0.9 GiB; the process may grow by at most 128 MiB
     * after a warm-up (the JVM's own heap and code settle).
     */
    @Test
    @Timeout(300)
    void createFillAndDropKeepsTheResidentSizeFlat() throws Exception {
        long[] items = new long[20_000];
        for (int i = 0; i < items.length; i++) {
            items[i] = i * 104_729L;
        }
        Runnable round = () -> {
            for (int i = 0; i < 50; i++) {
                BloomFilter f = BloomFilter.create(1_000_000, 0.01);
                f.putAll(items);
                CuckooFilter c = CuckooFilter.create(20_000);
                c.addAll(items);
                if (i % 2 == 0) {
                    f.close();
                    c.close();
                } // else: dropped, freed by the Cleaner
            }
            System.gc();
        };
        assertResidentSizeFlat("create/fill/drop", round, 4, 15);
    }

    /**
     * Runs {@code round} {@code warm} times (the JVM's own heap and code settle), then {@code
     * times} more: the process's resident size may grow by at most 128 MiB over the latter.
     */
    static void assertResidentSizeFlat(String what, Runnable round, int warm, int times)
            throws Exception {
        for (int r = 0; r < warm; r++) {
            round.run();
        }
        System.gc();
        Thread.sleep(200);
        long before = rssKiB();
        for (int r = 0; r < times; r++) {
            round.run();
        }
        Thread.sleep(200);
        System.gc();
        Thread.sleep(200);
        long after = rssKiB();
        System.out.println(what + ": RSS " + before + " KiB -> " + after + " KiB");
        assertTrue(after - before < 128 * 1024,
                "RSS grew from " + before + " KiB to " + after + " KiB");
    }

    /**
     * A thread keeps its batch buffers (about 1.2 MiB here: 10,000 items of 90 bytes, their
     * hashes and answers) for its next batch, and frees them when it ends: 600 threads that
     * each ran one batch and ended would hold about 0.7 GiB if the buffers outlived them.
     */
    @Test
    @Timeout(300)
    void endedThreadsFreeTheirBatchBuffers() throws Exception {
        byte[][] items = new byte[10_000][];
        for (int i = 0; i < items.length; i++) {
            items[i] = String.format("%090d", i).getBytes(StandardCharsets.US_ASCII);
        }
        try (BloomFilter f = BloomFilter.create(100_000, 0.01)) {
            Runnable threads = () -> {
                for (int i = 0; i < 100; i++) {
                    Thread t = new Thread(() -> {
                        f.putAll(items);
                        f.mightContainAll(items);
                    });
                    t.start();
                    try {
                        t.join();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }
            };
            assertResidentSizeFlat("ended threads", threads, 1, 6);
        }
    }
}
