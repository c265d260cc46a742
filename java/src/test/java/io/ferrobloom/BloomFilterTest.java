package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A Bloom filter in-process: behaviour, the server's texts, files and chunks. */
class BloomFilterTest {

    static List<String> items(String prefix, int n) {
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(prefix + i);
        }
        return out;
    }

    @Test
    void putAndMightContain() {
        try (BloomFilter f = BloomFilter.create(1000, 0.01)) {
            assertTrue(f.put("alice"));
            assertFalse(f.put("alice"), "BF.ADD of a present item answers 0");
            assertTrue(f.mightContain("alice"));
            assertFalse(f.mightContain("bob"));
            assertTrue(f.add(new byte[] {1, 2, 3}));
            assertTrue(f.mightContain(new byte[] {1, 2, 3}));
            assertEquals(2, f.cardinality());
        }
    }

    @Test
    void itemsAreEncodedAsJedisSendsThem() {
        try (BloomFilter f = BloomFilter.create(1000, 0.001)) {
            f.put(7);
            assertTrue(f.mightContain("7"), "a long is its decimal text");
            assertTrue(f.mightContain("7".getBytes(StandardCharsets.US_ASCII)));
            f.put(-42L);
            assertTrue(f.mightContain("-42"));
            f.put("héllo ✓");
            assertTrue(f.mightContain("héllo ✓".getBytes(StandardCharsets.UTF_8)));
            boolean[] r = f.mightContainAll(Arrays.asList("7", 7, (short) 7, (byte) 7, 7L, "x"));
            assertArrayEquals(new boolean[] {true, true, true, true, true, false}, r);
        }
    }

    @Test
    void batchesAnswerAsMaddAndMexists() {
        try (BloomFilter f = BloomFilter.create(100_000, 0.001)) {
            List<String> a = items("a", 40_000); // more than one native call
            boolean[] added = f.putAll(a);
            assertEquals(a.size(), added.length);
            for (boolean b : added) {
                assertTrue(b);
            }
            boolean[] again = f.putAll(a.toArray(new String[0]));
            for (boolean b : again) {
                assertFalse(b);
            }
            List<String> probes = new ArrayList<>(a.subList(0, 1000));
            probes.addAll(items("b", 1000));
            boolean[] found = f.mightContainAll(probes);
            int falsePositives = 0;
            for (int i = 0; i < found.length; i++) {
                if (i < 1000) {
                    assertTrue(found[i]);
                } else if (found[i]) {
                    falsePositives++;
                }
                assertEquals(f.mightContain(probes.get(i)), found[i]);
            }
            assertTrue(falsePositives < 20, "fp " + falsePositives);
            long[] longs = {1, 2, 3};
            f.putAll(longs);
            assertArrayEquals(new boolean[] {true, true, true, false},
                    f.mightContainAll(new String[] {"1", "2", "3", "4"}));
        }
    }

    @Test
    void arrayBatchesOfAnySizeAnswerAsOneCallPerItem() {
        // More items than one native call takes (16,384), and one item larger than its 4 MiB.
        byte[][] bytes = new byte[40_000][];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = ("b" + i).getBytes(StandardCharsets.UTF_8);
        }
        bytes[20_000] = new byte[5 << 20];
        Arrays.fill(bytes[20_000], (byte) 'x');
        String[] text = new String[20_000];
        for (int i = 0; i < text.length; i++) {
            text[i] = (i % 3 == 0 ? "é" : "t") + i; // UTF-8 wider than its chars, and ASCII
        }
        try (BloomFilter batch = BloomFilter.create(100_000, 0.001);
                BloomFilter one = BloomFilter.create(100_000, 0.001)) {
            boolean[] a = batch.putAll(bytes);
            boolean[] t = batch.putAll(text);
            assertEquals(bytes.length, a.length);
            assertEquals(text.length, t.length);
            for (int i = 0; i < bytes.length; i++) {
                assertEquals(one.put(bytes[i]), a[i], "item " + i);
            }
            for (int i = 0; i < text.length; i++) {
                assertEquals(one.put(text[i]), t[i], "text " + i);
            }
            assertArrayEquals(one.toBytes(), batch.toBytes());
            boolean[] found = batch.mightContainAll(bytes);
            for (int i = 0; i < found.length; i++) {
                assertTrue(found[i], "item " + i);
            }
            // A null anywhere refuses the whole array before any of it is added.
            Object[] withNull = {"new-1", "new-2", null};
            long before = batch.cardinality();
            assertThrows(NullPointerException.class, () -> batch.putAll(Arrays.asList(withNull)));
            assertThrows(NullPointerException.class,
                    () -> batch.putAll(new String[] {"new-1", null}));
            assertEquals(before, batch.cardinality());
            assertFalse(batch.mightContain("new-1"));
        }
    }

    @Test
    void aFullNonScalingFilterRefusesAsTheServer() {
        try (BloomFilter f = BloomFilter.builder().capacity(10).errorRate(0.01).nonScaling()
                .build()) {
            BatchException e = assertThrows(BatchException.class,
                    () -> f.putAll(items("x", 50)));
            assertEquals("ERR non scaling filter is full", e.getMessage());
            // The reply ends after the "full" element, as BF.MADD's does.
            assertEquals(e.index() + 1, e.reply().size());
            assertInstanceOf(FilterException.class, e.reply().get(e.index()));
            for (int i = 0; i < e.index(); i++) {
                assertEquals(Boolean.TRUE, e.reply().get(i));
            }
            FilterException one = assertThrows(FilterException.class, () -> f.put("another"));
            assertEquals("ERR non scaling filter is full", one.getMessage());
            assertEquals(e.index(), f.cardinality());
        }
    }

    @Test
    void creationIsRefusedWithTheServersTexts() {
        FilterException e = assertThrows(FilterException.class,
                () -> BloomFilter.create(1000, 2.0));
        assertEquals("ERR (0 < error rate range < 1) ", e.getMessage());
        e = assertThrows(FilterException.class, () -> BloomFilter.create(0, 0.01));
        assertEquals("ERR (capacity should be larger than 0)", e.getMessage());
        e = assertThrows(FilterException.class,
                () -> BloomFilter.builder().capacity(100).expansion(4).nonScaling().build());
        assertEquals("Nonscaling filters cannot expand", e.getMessage());
        e = assertThrows(FilterException.class,
                () -> BloomFilter.builder().capacity(100).seed(new byte[3]).build());
        assertEquals("ERR invalid seed", e.getMessage());
        e = assertThrows(FilterException.class,
                () -> BloomFilter.builder().capacity(100).window(Duration.ZERO).build());
        assertTrue(e.getMessage().startsWith("ERR bad window"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> BloomFilter.builder().build());
    }

    @Test
    void infoHasTheServersFields() {
        try (BloomFilter f = BloomFilter.create(1000, 0.01)) {
            f.putAll(items("i", 10));
            BloomInfo i = f.info();
            assertEquals(1000, i.capacity());
            assertEquals(1, i.numberOfFilters());
            assertEquals(10, i.numberOfItemsInserted());
            assertEquals(2L, i.expansionRate());
            assertTrue(i.size() > 1000 * 9 / 8);
            Map<String, Object> m = i.asMap();
            assertEquals(List.of("Capacity", "Size", "Number of filters",
                    "Number of items inserted", "Expansion rate"), new ArrayList<>(m.keySet()));
            assertEquals(0.01, f.errorRate());
            assertEquals(BloomLayout.CLASSIC, f.layout());
            assertTrue(f.window().isEmpty());
        }
        try (BloomFilter f = BloomFilter.builder().capacity(100).nonScaling()
                .layout(BloomLayout.BLOCKED).build()) {
            assertNull(f.info().expansionRate());
            assertTrue(f.expansion().isEmpty());
            assertEquals(BloomLayout.BLOCKED, f.layout());
        }
    }

    @Test
    void everyLayoutAndAWindow() {
        for (BloomLayout l : BloomLayout.values()) {
            try (BloomFilter f = BloomFilter.builder().capacity(500).errorRate(0.01).layout(l)
                    .build()) {
                f.putAll(items("k", 2000)); // grows
                assertEquals(l, f.layout());
                assertTrue(f.info().numberOfFilters() > 1);
                for (boolean b : f.mightContainAll(items("k", 2000))) {
                    assertTrue(b);
                }
            }
        }
        try (BloomFilter f = BloomFilter.builder().capacity(100).window(Duration.ofMinutes(5))
                .build()) {
            assertEquals(Duration.ofMinutes(5), f.window().orElseThrow());
            f.put("w");
            assertTrue(f.mightContain("w"));
            assertTrue(f.mightContain("w", Instant.now().plusSeconds(60)));
            assertFalse(f.mightContain("w", Instant.now().plus(Duration.ofMinutes(30))),
                    "forgotten after the window");
        }
        assertEquals("0.0015", BloomFilter.seconds(Duration.ofNanos(1_500_000)));
        assertEquals("300", BloomFilter.seconds(Duration.ofMinutes(5)));
    }

    @Test
    void unionAndMergeFollowBfMerge() {
        try (BloomFilter a = BloomFilter.create(1000, 0.01);
                BloomFilter b = BloomFilter.create(1000, 0.01);
                BloomFilter c = BloomFilter.create(1000, 0.001)) {
            a.putAll(items("a", 100));
            b.putAll(items("b", 100));
            try (BloomFilter u = a.union(b)) {
                for (boolean x : u.mightContainAll(items("a", 100))) {
                    assertTrue(x);
                }
                for (boolean x : u.mightContainAll(items("b", 100))) {
                    assertTrue(x);
                }
                assertFalse(a.mightContain("b5") && a.mightContain("b6") && a.mightContain("b7"));
            }
            FilterException e = assertThrows(FilterException.class, () -> a.union(c));
            assertTrue(e.getMessage().startsWith("ERR incompatible filters: source 2 differs"),
                    e.getMessage());
            a.merge(b);
            assertTrue(a.mightContain("b42"));
            a.merge(a); // the union with itself
            assertThrows(FilterException.class, () -> b.merge(c));
        }
    }

    @Test
    void copyIsIndependent() {
        try (BloomFilter a = BloomFilter.create(1000, 0.01); BloomFilter b = a.copy()) {
            a.put("only-a");
            assertFalse(b.mightContain("only-a"));
            assertArrayEquals(BloomFilter.create(1000, 0.01).toBytes(), b.toBytes());
        }
    }

    @Test
    void filesAndChunksRoundTrip(@TempDir Path dir) throws Exception {
        try (BloomFilter f = BloomFilter.create(5000, 0.01)) {
            f.putAll(items("f", 12_000));
            byte[] bytes = f.toBytes();
            assertEquals("BF", Filter.kindOf(bytes));
            try (BloomFilter g = BloomFilter.fromBytes(bytes)) {
                assertArrayEquals(bytes, g.toBytes());
                assertEquals(f.info(), g.info());
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            f.writeTo(out);
            assertArrayEquals(bytes, out.toByteArray());
            try (BloomFilter g = BloomFilter.readFrom(new ByteArrayInputStream(bytes))) {
                assertArrayEquals(bytes, g.toBytes());
            }
            Path p = dir.resolve("f.fbf");
            f.save(p);
            assertArrayEquals(bytes, Files.readAllBytes(p));
            try (Filter g = Filter.load(p)) {
                assertInstanceOf(BloomFilter.class, g);
                assertArrayEquals(bytes, g.toBytes());
            }
            List<Chunk> chunks = f.chunks();
            assertEquals(1, chunks.get(0).iterator());
            assertTrue(f.scandump(chunks.get(chunks.size() - 1).iterator()).isEnd());
            try (BloomFilter g = BloomFilter.fromChunks(chunks)) {
                assertArrayEquals(bytes, g.toBytes());
            }
            assertNotEquals(0, chunks.size());
        }
    }
}
