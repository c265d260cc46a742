package io.ferrobloom;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Run in a JVM of its own by {@link StreamingFileTest} (with a small {@code -Xmx}): writes a
 * Bloom filter of {@code args[0]} MiB to the file {@code args[1]} with {@code writeTo} and with
 * {@code save}, and reads it back with {@code load} and {@code readFrom}, printing how far each
 * write raised the process's peak resident memory ({@code VmHWM}, reset before it through {@code
 * /proc/self/clear_refs}) as {@code peak-kib <writeTo> <save>}. The filter's pages are all
 * written before (so reading them for the file costs nothing): what a write adds is its own
 * buffers.
 */
final class FileProbe {
    private FileProbe() {}

    public static void main(String[] args) throws IOException {
        long mib = Long.parseLong(args[0]);
        Path file = Path.of(args[1]);
        // About 9.6 bits an item at 1%: a filter of at least `mib` MiB.
        long capacity = (mib << 23) / 9;
        // Enough items to write every page of the filter (7 bits each).
        int items = 200_000;
        try (BloomFilter small = BloomFilter.create(1000);
                BloomFilter f = BloomFilter.builder().capacity(capacity).nonScaling().build()) {
            // Loads the classes and code a write uses.
            small.put("x");
            small.writeTo(OutputStream.nullOutputStream());
            small.save(file);
            for (int i = 0; i < items; i++) {
                f.put("probe" + i);
            }
            if (f.info().size() < (mib << 20)) {
                throw new AssertionError("the filter is smaller than asked: " + f.info());
            }
            long written;
            resetPeak();
            long base = peakKib();
            try (OutputStream out = Files.newOutputStream(file)) {
                f.writeTo(out);
            }
            written = peakKib() - base;
            resetPeak();
            base = peakKib();
            f.save(file);
            long saved = peakKib() - base;
            try (Filter g = Filter.load(file)) {
                check(g, items);
            }
            try (InputStream in = new BufferedInputStream(Files.newInputStream(file));
                    BloomFilter g = BloomFilter.readFrom(in)) {
                check(g, items);
            }
            System.out.println("peak-kib " + written + " " + saved);
        }
    }

    private static void check(Filter g, int items) {
        BloomFilter b = (BloomFilter) g;
        for (int i = 0; i < items; i += 97) {
            if (!b.mightContain("probe" + i)) {
                throw new AssertionError("item " + i + " missing after the round trip");
            }
        }
        if (b.cardinality() != items) {
            throw new AssertionError("cardinality " + b.cardinality());
        }
    }

    private static void resetPeak() throws IOException {
        Files.write(Path.of("/proc/self/clear_refs"), "5".getBytes(StandardCharsets.US_ASCII));
    }

    private static long peakKib() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IOException("no VmHWM in /proc/self/status");
    }
}
