package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The routing of ShardedBloomFilter against tests/vectors/routing.tsv (written once by the
 * Python package; its test_vectors.py reads it too): the same shard for every item and shard
 * count, the same key names, and the same bytes for the same items.
 */
class RoutingTest {

    /** make_vectors.routing_items(), in Java. */
    static List<Object> routingItems() {
        List<Object> out = new ArrayList<>(List.of("", "a", "clicks:2026-11-28", "ü✓",
                "x".repeat(200)));
        for (int i = 0; i < 200; i++) {
            out.add("user-" + i);
        }
        for (long i = -5; i < 100; i++) {
            out.add(i);
        }
        out.add(Long.MAX_VALUE);
        out.add(Long.MIN_VALUE);
        for (int i = 1; i < 40; i++) {
            byte[] b = new byte[i % 17];
            Arrays.fill(b, (byte) i);
            out.add(b);
        }
        return out;
    }

    @Test
    void routingAndKeysAreThePythonPackages() throws Exception {
        List<String> lines = Files.readAllLines(VectorsTest.DIR.resolve("routing.tsv"));
        assertEquals("item_hex\tshards_16\tshards_7\tshards_1000", lines.get(0));
        List<Object> items = routingItems();
        int row = 0;
        int keyRows = 0;
        for (String line : lines.subList(1, lines.size())) {
            String[] c = line.split("\t", -1);
            if (c[0].startsWith("keys:")) {
                String[] spec = c[0].split(":");
                String name = String.join(":", Arrays.copyOfRange(spec, 1, spec.length - 1));
                int n = Integer.parseInt(spec[spec.length - 1]);
                assertEquals(List.of(c[1].split(" ")), ShardedBloomFilter.shardKeys(name, n));
                keyRows++;
                continue;
            }
            byte[] b = HexFormat.of().parseHex(c[0]);
            assertEquals(c[0], HexFormat.of().formatHex(Items.of(items.get(row))),
                    "item " + row + " encodes as in Python");
            assertEquals(Integer.parseInt(c[1]), ShardedBloomFilter.shardOf(b, 16));
            assertEquals(Integer.parseInt(c[2]), ShardedBloomFilter.shardOf(b, 7));
            assertEquals(Integer.parseInt(c[3]), ShardedBloomFilter.shardOf(b, 1000));
            row++;
        }
        assertEquals(items.size(), row);
        assertEquals(3, keyRows);
        assertTrue(Files.exists(Path.of(VectorsTest.DIR.toString(), "make_vectors.py")));
    }
}
