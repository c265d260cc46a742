package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A cuckoo filter in-process: behaviour, the server's texts, files and chunks. */
class CuckooFilterTest {

    @Test
    void addDeleteCount() {
        try (CuckooFilter f = CuckooFilter.create(1000)) {
            assertTrue(f.add("x"));
            assertTrue(f.add("x"), "CF.ADD adds again");
            assertEquals(2, f.count("x"));
            assertFalse(f.addIfAbsent("x"));
            assertTrue(f.addIfAbsent(42));
            assertTrue(f.mightContain("42"));
            assertTrue(f.delete("x"));
            assertEquals(1, f.count("x"));
            assertTrue(f.delete("x"));
            assertFalse(f.mightContain("x"));
            assertFalse(f.delete("x"), "CF.DEL of a missing item answers 0");
            assertEquals(1, f.cardinality());
            CuckooInfo i = f.info();
            assertEquals(1, i.numberOfItemsInserted());
            assertEquals(2, i.numberOfItemsDeleted());
            assertEquals(2, i.bucketSize());
            assertEquals(1, i.expansionRate());
            assertEquals(20, i.maxIterations());
            assertEquals(List.of("Size", "Number of buckets", "Number of filters",
                    "Number of items inserted", "Number of items deleted", "Bucket size",
                    "Expansion rate", "Max iterations"), new ArrayList<>(i.asMap().keySet()));
            assertEquals(CuckooLayout.FERROBLOOM, f.layout());
            assertTrue(f.errorRate().isEmpty());
            assertEquals(8, f.fingerprintBits());
        }
    }

    @Test
    void optionsAndLayouts() {
        try (CuckooFilter f = CuckooFilter.builder().capacity(1000).errorRate(0.0001)
                .bucketSize(4).build()) {
            assertEquals(0.0001, f.errorRate().getAsDouble());
            assertTrue(f.fingerprintBits() > 8);
            assertEquals(4, f.info().bucketSize());
        }
        try (CuckooFilter f = CuckooFilter.builder().capacity(1000)
                .layout(CuckooLayout.REDISBLOOM).build()) {
            assertEquals(CuckooLayout.REDISBLOOM, f.layout());
            f.addAll(new String[] {"a", "b"});
            assertArrayEquals(new boolean[] {true, true, false},
                    f.mightContainAll(new String[] {"a", "b", "c"}));
        }
        FilterException e = assertThrows(FilterException.class, () -> CuckooFilter.create(2));
        assertEquals("Capacity must be at least (BucketSize * 2)", e.getMessage());
    }

    @Test
    void batchesAnswerAsInsertAndMexists() {
        try (CuckooFilter f = CuckooFilter.builder().capacity(8).bucketSize(1).expansion(0)
                .build()) {
            List<Object> items = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                items.add("c" + i);
            }
            int[] r = f.insertNx(items);
            int added = 0;
            for (int x : r) {
                assertTrue(x == 1 || x == -1 || x == 0);
                added += x == 1 ? 1 : 0;
            }
            assertTrue(added > 0 && added < 40);
            BatchException e = assertThrows(BatchException.class, () -> f.addAll(items));
            assertEquals("Filter is full", e.getMessage());
            assertEquals(40, e.reply().size());
            assertInstanceOf(FilterException.class, e.reply().get(e.index()));
            FilterException one = assertThrows(FilterException.class, () -> f.add("more"));
            assertEquals("Filter is full", one.getMessage());
        }
    }

    @Test
    void filesAndChunks(@TempDir Path dir) throws Exception {
        try (CuckooFilter f = CuckooFilter.create(5000)) {
            long[] items = new long[3000];
            for (int i = 0; i < items.length; i++) {
                items[i] = i * 7L;
            }
            f.addAll(items);
            byte[] bytes = f.toBytes();
            assertEquals("CF", Filter.kindOf(bytes));
            try (CuckooFilter g = CuckooFilter.fromBytes(bytes)) {
                assertArrayEquals(bytes, g.toBytes());
                assertEquals(f.info(), g.info());
                assertArrayEquals(f.mightContainAll(items), g.mightContainAll(items));
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            f.writeTo(out);
            assertArrayEquals(bytes, out.toByteArray());
            try (Filter g = Filter.readFrom(new ByteArrayInputStream(bytes))) {
                assertInstanceOf(CuckooFilter.class, g);
            }
            Path p = dir.resolve("c.fbf");
            f.save(p);
            try (CuckooFilter g = CuckooFilter.load(p); CuckooFilter h = f.copy();
                    CuckooFilter k = CuckooFilter.fromChunks(f.chunks())) {
                assertArrayEquals(bytes, g.toBytes());
                assertArrayEquals(bytes, h.toBytes());
                assertArrayEquals(bytes, k.toBytes());
            }
            FormatException e = assertThrows(FormatException.class,
                    () -> BloomFilter.fromBytes(bytes));
            assertEquals("the file holds a CF filter, not a BF filter", e.getMessage());
        }
    }
}
