package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input gets a clear Java exception and never crashes the JVM: truncated and corrupted
 * bytes, streams and chunks, a file of the other kind, lying headers and huge sizes (refused
 * before anything is allocated for them), nulls, items of other types, and closed filters.
 */
class BadInputTest {

    static byte[] smallBloom() {
        try (BloomFilter f = BloomFilter.create(50, 0.01)) {
            f.putAll(BloomFilterTest.items("t", 120));
            return f.toBytes();
        }
    }

    @Test
    void malformedNativeBatchesAreRefusedAndChangeNothing() {
        byte[] buf = "abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        try (BloomFilter f = BloomFilter.create(1000, 0.01);
                CuckooFilter c = CuckooFilter.create(1000)) {
            // A count beyond the ends, a negative count, ends that go back or past the bytes.
            int[][] ends = {{3, 6}, {3, 6}, {4, 2}, {3, 7}, {-1, 6}};
            int[] counts = {3, -1, 2, 2, 2};
            for (int i = 0; i < counts.length; i++) {
                int[] e = ends[i];
                int n = counts[i];
                assertThrows(IllegalArgumentException.class,
                        () -> Native.bfAddAll(f.handle, buf, e, n), "bloom case " + i);
                assertThrows(IllegalArgumentException.class,
                        () -> Native.bfContainsAll(f.handle, buf, e, n, -1), "lookup case " + i);
                assertThrows(IllegalArgumentException.class,
                        () -> Native.cfInsert(c.handle, buf, e, n, false), "cuckoo case " + i);
                assertThrows(IllegalArgumentException.class,
                        () -> Native.cfContainsAll(c.handle, buf, e, n), "cuckoo lookup " + i);
            }
            assertThrows(NullPointerException.class,
                    () -> Native.bfAddAll(f.handle, null, new int[] {0}, 1));
            assertThrows(NullPointerException.class,
                    () -> Native.bfAddAll(f.handle, buf, null, 1));
            assertEquals(0, f.cardinality());
            assertEquals(0, c.cardinality());
            // The next batch on this thread is not disturbed by the refused ones.
            assertArrayEquals(new byte[] {1, 1}, Native.bfAddAll(f.handle, buf, new int[] {3, 6}, 2));
            assertArrayEquals(new boolean[] {true, true, false},
                    f.mightContainAll(new String[] {"abc", "def", "abcdef"}));
        }
    }

    @Test
    void everyTruncationAndEveryFlippedByteIsRefused() throws Exception {
        byte[] good = smallBloom();
        for (int n = 0; n < good.length; n++) {
            byte[] cut = Arrays.copyOf(good, n);
            assertThrows(FormatException.class, () -> Filter.fromBytes(cut), "length " + n);
            assertThrows(FormatException.class,
                    () -> Filter.readFrom(new ByteArrayInputStream(cut)), "stream length " + n);
        }
        for (int i = 0; i < good.length; i++) {
            byte[] bad = good.clone();
            bad[i] ^= 0x5a;
            assertThrows(FormatException.class, () -> BloomFilter.fromBytes(bad), "byte " + i);
            assertThrows(FormatException.class,
                    () -> BloomFilter.readFrom(new ByteArrayInputStream(bad)), "stream " + i);
        }
        // Trailing bytes.
        byte[] longer = Arrays.copyOf(good, good.length + 1);
        assertThrows(FormatException.class, () -> Filter.fromBytes(longer));
        assertThrows(FormatException.class, () -> Filter.kindOf(new byte[] {1, 2, 3}));
    }

    /** A file's framing around the given chunks, with a checksum that does not match. */
    static byte[] framing(int kind, long count, List<Chunk> chunks, int lengthOverride) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0x89, 'F', 'B', 'F', '\r', '\n', 0x1a, '\n'});
        b.putShort((short) 1).put((byte) kind).put((byte) 0).putInt((int) count);
        out.writeBytes(b.array());
        for (Chunk c : chunks) {
            ByteBuffer p = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
            p.putLong(c.iterator()).putInt(lengthOverride >= 0 ? lengthOverride : c.data().length);
            out.writeBytes(p.array());
            out.writeBytes(c.data());
        }
        out.writeBytes(new byte[8]);
        return out.toByteArray();
    }

    @Test
    void lyingHeadersAndHugeSizesAreRefusedBeforeAllocating(@TempDir Path dir) throws Exception {
        // The header of a 1 GiB filter with the data of a small one.
        List<Chunk> big;
        try (BloomFilter f = BloomFilter.create(1L << 29, 0.01)) {
            big = List.of(f.scandump(0));
        }
        List<Chunk> small;
        try (BloomFilter f = BloomFilter.create(50, 0.01)) {
            small = f.chunks();
        }
        List<Chunk> lying = new ArrayList<>(big);
        lying.addAll(small.subList(1, small.size()));
        assertThrows(FormatException.class, () -> BloomFilter.fromChunks(big));
        assertThrows(FormatException.class, () -> BloomFilter.fromChunks(lying));
        byte[] file = framing(1, lying.size(), lying, -1);
        Path p = dir.resolve("lying.fbf");
        Files.write(p, file);
        // Streams: the header is checked against the file's length (known) or the data held
        // as it arrives (unknown) before the filter is allocated.
        assertThrows(FormatException.class, () -> Filter.load(p));
        assertThrows(FormatException.class,
                () -> Filter.readFrom(new ByteArrayInputStream(file)));
        assertThrows(FormatException.class, () -> Filter.fromBytes(file));
        // A chunk count and a chunk length of 4 GiB in a few bytes.
        byte[] hugeCount = framing(1, 0xFFFFFFFFL, small.subList(0, 1), -1);
        byte[] hugeLen = framing(1, 1, small.subList(0, 1), -1 >>> 1);
        for (byte[] b : List.of(hugeCount, hugeLen)) {
            assertThrows(FormatException.class, () -> Filter.fromBytes(b));
            assertThrows(FormatException.class, () -> Filter.readFrom(new ByteArrayInputStream(b)));
        }
        // Chunks out of order, or missing, or the walk's end given.
        try (BloomFilter f = BloomFilter.create(100, 0.001)) {
            f.putAll(BloomFilterTest.items("o", 500)); // several links: several chunks
            List<Chunk> c = f.chunks();
            assertTrue(c.size() > 2);
            List<Chunk> swapped = new ArrayList<>(c);
            swapped.set(1, c.get(2));
            swapped.set(2, c.get(1));
            assertThrows(FormatException.class, () -> BloomFilter.fromChunks(swapped));
            assertThrows(FormatException.class,
                    () -> BloomFilter.fromChunks(c.subList(0, c.size() - 1)));
            assertThrows(FormatException.class, () -> BloomFilter.fromChunks(c.subList(1, 3)));
            assertThrows(FormatException.class, () -> BloomFilter.fromChunks(List.of()));
            assertThrows(FormatException.class, () -> CuckooFilter.fromChunks(c));
            List<Chunk> withEnd = new ArrayList<>(c);
            withEnd.add(new Chunk(0, new byte[0]));
            try (BloomFilter g = BloomFilter.fromChunks(withEnd)) {
                assertArrayEquals(f.toBytes(), g.toBytes());
            }
        }
    }

    @Test
    void aFileOfTheOtherKind() {
        byte[] bloom = smallBloom();
        FormatException e = assertThrows(FormatException.class,
                () -> CuckooFilter.fromBytes(bloom));
        assertEquals("the file holds a BF filter, not a CF filter", e.getMessage());
        assertThrows(FormatException.class,
                () -> CuckooFilter.readFrom(new ByteArrayInputStream(bloom)));
    }

    @Test
    void streamsThatFailPropagateTheirException() {
        byte[] good = smallBloom();
        IOException boom = new IOException("disk on fire");
        InputStream failing = new InputStream() {
            int left = 40;

            @Override
            public int read() throws IOException {
                if (left-- <= 0) {
                    throw boom;
                }
                return good[40 - left - 1] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (left <= 0) {
                    throw boom;
                }
                int n = Math.min(len, left);
                System.arraycopy(good, 40 - left, b, off, n);
                left -= n;
                return n;
            }
        };
        IOException got = assertThrows(IOException.class, () -> Filter.readFrom(failing));
        assertSame(boom, got);
        OutputStream broken = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw boom;
            }
        };
        try (BloomFilter f = BloomFilter.create(100)) {
            assertSame(boom, assertThrows(IOException.class, () -> f.writeTo(broken)));
            f.put("still works");
            assertTrue(f.mightContain("still works"));
        }
    }

    @Test
    void nullsAndItemsOfOtherTypesChangeNothing() {
        try (BloomFilter f = BloomFilter.create(100); CuckooFilter c = CuckooFilter.create(100)) {
            byte[] before = f.toBytes();
            assertThrows(NullPointerException.class, () -> f.put((byte[]) null));
            assertThrows(NullPointerException.class, () -> f.put((String) null));
            assertThrows(NullPointerException.class, () -> f.mightContain((byte[]) null));
            assertThrows(NullPointerException.class,
                    () -> f.putAll(Arrays.asList("a", "b", null)));
            assertThrows(NullPointerException.class, () -> f.putAll(new String[] {"a", null}));
            assertThrows(IllegalArgumentException.class,
                    () -> f.putAll(Arrays.asList("a", 1.5)));
            assertThrows(IllegalArgumentException.class,
                    () -> f.putAll(Arrays.asList("a", new Object())));
            assertThrows(NullPointerException.class, () -> f.putAll((List<?>) null));
            assertArrayEquals(before, f.toBytes(), "a refused batch changes nothing");
            assertThrows(NullPointerException.class, () -> c.add((byte[]) null));
            assertThrows(NullPointerException.class, () -> c.addAll(Arrays.asList("x", null)));
            assertEquals(0, c.cardinality());
            assertThrows(NullPointerException.class, () -> Filter.fromBytes(null));
            assertThrows(NullPointerException.class, () -> Filter.readFrom(null));
            assertThrows(NullPointerException.class, () -> BloomFilter.fromChunks(null));
            assertThrows(NullPointerException.class,
                    () -> BloomFilter.fromChunks(Arrays.asList((Chunk) null)));
            assertThrows(NullPointerException.class, () -> f.union((BloomFilter) null));
            assertThrows(NullPointerException.class, () -> f.merge(null));
            assertThrows(NullPointerException.class, () -> f.writeTo(null));
        }
    }

    @Test
    void closedFiltersRefuseEveryCall() throws Exception {
        BloomFilter f = BloomFilter.create(100);
        BloomFilter other = BloomFilter.create(100);
        f.put("x");
        f.close();
        f.close(); // twice is fine
        assertTrue(f.isClosed());
        assertEquals("BloomFilter(closed)", f.toString());
        List<Executable> calls = List.of(
                () -> f.put("x"), () -> f.mightContain("x"), () -> f.putAll(List.of("a")),
                () -> f.mightContainAll(List.of("a")), f::info, f::cardinality, f::toBytes,
                f::chunks, () -> f.scandump(0), f::copy, () -> f.union(other),
                () -> other.union(f), () -> f.merge(other), () -> other.merge(f),
                () -> f.writeTo(new ByteArrayOutputStream()), f::layout, f::errorRate,
                () -> f.checkLimits(-1, -1));
        for (Executable call : calls) {
            IllegalStateException e = assertThrows(IllegalStateException.class, call);
            assertEquals("the filter is closed", e.getMessage());
        }
        assertFalse(other.isClosed());
        other.put("y");
        other.close();
        CuckooFilter c = CuckooFilter.create(100);
        c.close();
        for (Executable call : List.<Executable>of(() -> c.add("x"), () -> c.delete("x"),
                () -> c.count("x"), () -> c.mightContain("x"), c::info, c::toBytes)) {
            assertThrows(IllegalStateException.class, call);
        }
    }
}
