package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code writeTo} and {@code save} stream the file a piece at a time (about 1 MiB, the filter's
 * lock released between pieces): a filter of any size is written with a small Java heap and
 * without a copy of its file in native memory, and a file written while other threads add is
 * still the filter in one state, the one it had when the write began.
 */
class StreamingFileTest {

    /** Bytes written to a stream, as {@code write} is called (no copy kept). */
    private static final class Counting extends OutputStream {
        long n;
        int calls;
        int largest;

        @Override
        public void write(int b) {
            n++;
            calls++;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            n += len;
            calls++;
            largest = Math.max(largest, len);
        }
    }

    @Test
    void aFileOfSeveralPiecesIsWrittenInPiecesAndIsTheSameFile() throws IOException {
        try (BloomFilter f = BloomFilter.create(5_000_000, 0.01)) {
            f.putAll(BloomFilterTest.items("p", 10_000));
            byte[] whole = f.toBytes();
            assertTrue(whole.length > 4 << 20, "several pieces: " + whole.length);
            Counting c = new Counting();
            f.writeTo(c);
            assertEquals(whole.length, c.n);
            assertTrue(c.calls >= whole.length >> 20, "written in pieces: " + c.calls);
            assertTrue(c.largest <= 1 << 20, "at most 1 MiB a write: " + c.largest);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            f.writeTo(out);
            assertArrayEquals(whole, out.toByteArray());
        }
    }

    /**
     * A JVM with a 32 MiB heap writes a filter of 128 MiB with {@code writeTo} and {@code save}
     * and reads it back; each write raises the process's peak resident memory by far less than
     * the file (a writer that made the whole file first, in Java or native memory, would raise it
     * by the file's size).
     */
    @Test
    @Timeout(300)
    void aLargeFilterIsWrittenWithASmallHeapAndNoCopyOfItsFile(@TempDir Path dir)
            throws Exception {
        Path file = dir.resolve("large.fbf");
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx32m", "-cp", System.getProperty("java.class.path")));
        String lib = System.getProperty("ferrobloom.native.lib");
        if (lib != null) {
            cmd.add("-Dferrobloom.native.lib=" + lib);
        }
        cmd.addAll(List.of(FileProbe.class.getName(), "128", file.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        String[] last = out.strip().lines().reduce((a, b) -> b).orElse("").split(" ");
        assertEquals("peak-kib", last[0], out);
        long writeTo = Long.parseLong(last[1]);
        long save = Long.parseLong(last[2]);
        assertTrue(Files.size(file) > 128L << 20, "the file: " + Files.size(file));
        // The file is 128 MiB; a write holds about 1 MiB of it at a time.
        assertTrue(writeTo < 32 << 10, "writeTo raised the peak by " + writeTo + " KiB");
        assertTrue(save < 32 << 10, "save raised the peak by " + save + " KiB");
    }

    /**
     * One thread adds while another writes the filter out to a slow stream, file after file:
     * every file loads, holds every item added before its write began, and is one state of the
     * filter (its item count and its contents agree: the first {@code count} items of the single
     * adder are all in it). Files made of pieces of several states would fail: a Bloom filter
     * that grew a link meanwhile no longer matches its header, and a cuckoo filter's fingerprints
     * move as others are inserted (a piece written early misses one that moved into it later).
     */
    @Test
    @Timeout(180)
    void aFileWrittenWhileAnotherThreadAddsIsOneStateOfTheFilter() throws Exception {
        int max = 1_500_000;
        List<String> names = BloomFilterTest.items("a", max);
        try (BloomFilter b = BloomFilter.create(200_000, 0.001);
                CuckooFilter c = CuckooFilter.builder().capacity(1_000_000).bucketSize(4).build()) {
            checkOneState(b, i -> b.put(names.get(i)), names);
            checkOneState(c, i -> c.add(names.get(i)), names);
        }
    }

    private interface Add {
        void add(int i);
    }

    /** A stream that takes its time: a write of the filter spans many adds. */
    private static final class Slow extends ByteArrayOutputStream {
        @Override
        public synchronized void write(byte[] b, int off, int len) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            super.write(b, off, len);
        }
    }

    private static void checkOneState(Filter f, Add add, List<String> names) throws Exception {
        AtomicInteger added = new AtomicInteger();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        List<Integer> befores = new ArrayList<>();
        List<byte[]> files = new ArrayList<>();
        try {
            for (int i = 0; i < 100_000; i++) {
                add.add(added.getAndIncrement());
            }
            Future<?> adder = pool.submit(() -> {
                while (added.get() < names.size()) {
                    add.add(added.get());
                    added.incrementAndGet();
                }
            });
            while (!adder.isDone()) {
                befores.add(added.get());
                Slow out = new Slow();
                f.writeTo(out);
                files.add(out.toByteArray());
            }
            adder.get();
        } finally {
            pool.shutdownNow();
        }
        assertTrue(files.size() >= 2, f.kind() + " files written while adding: " + files.size());
        int largest = files.stream().mapToInt(b -> b.length).max().orElse(0);
        assertTrue(largest > 2 << 20, "files of several pieces: " + largest);
        for (int k = 0; k < files.size(); k++) {
            try (Filter g = Filter.fromBytes(files.get(k))) {
                // A Bloom filter's count leaves out items that were not new.
                int n = (int) Math.max(g.cardinality(), befores.get(k));
                boolean[] has = g instanceof BloomFilter bf
                        ? bf.mightContainAll(names.subList(0, n))
                        : ((CuckooFilter) g).mightContainAll(names.subList(0, n));
                for (int i = 0; i < n; i++) {
                    if (!has[i]) {
                        throw new AssertionError(f.kind() + " file " + k + " of " + files.size()
                                + " (" + befores.get(k) + " items before it): item " + i + " of "
                                + n + " missing");
                    }
                }
            }
        }
    }
}
