package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The cross-language vectors (tests/vectors/, written once by the Python package; its
 * test_vectors.py reads them too): every file loads here, answers every probe as it answered in
 * Python, reports the same INFO, re-encodes byte for byte, and the same filter built here from
 * the same arguments and items writes the same bytes.
 */
class VectorsTest {
    static final Path DIR = Path.of(System.getProperty("ferrobloom.root", ".."), "tests",
            "vectors");

    record Vector(String file, String kind, List<byte[]> args, int items, String asOf,
            String after, String answers, String info) {
        @Override
        public String toString() {
            return file;
        }
    }

    static Stream<Vector> vectors() throws Exception {
        List<String> lines = Files.readAllLines(DIR.resolve("vectors.tsv"));
        assertEquals("file\tkind\targs\titems\tas_of_ms\tafter_ms\tanswers\tinfo", lines.get(0));
        List<Vector> out = new ArrayList<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] c = line.split("\t", -1);
            List<byte[]> args = new ArrayList<>();
            for (String a : c[2].split(" ")) {
                args.add(a.startsWith("hex:") ? HexFormat.of().parseHex(a.substring(4))
                        : a.getBytes(StandardCharsets.UTF_8));
            }
            out.add(new Vector(c[0], c[1], args, Integer.parseInt(c[3]), c[4], c[5], c[6],
                    c[7]));
        }
        assertTrue(out.size() >= 8);
        return out.stream();
    }

    /** Item i as the vectors define it: the text v<i> for odd i, the integer i for even i. */
    static Object item(int i) {
        return i % 2 != 0 ? "v" + i : (Object) (long) i;
    }

    static List<Object> items(int n) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(item(i));
        }
        return out;
    }

    static List<Object> probes(int n) {
        List<Object> out = items(2 * n);
        for (int i = 0; i < n; i++) {
            out.add("none-" + i);
        }
        return out;
    }

    static String bits(boolean[] b) {
        StringBuilder s = new StringBuilder();
        for (boolean x : b) {
            s.append(x ? '1' : '0');
        }
        return s.toString();
    }

    static String info(Map<String, Object> m, boolean windowed) {
        List<String> v = new ArrayList<>();
        for (Map.Entry<String, Object> e : m.entrySet()) {
            boolean skip = windowed && e.getKey().equals("Number of items inserted");
            v.add(e.getValue() == null ? "" : skip ? "*" : e.getValue().toString());
        }
        return String.join(";", v);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void vectorsLoadAnswerAndReencode(Vector v) throws Exception {
        byte[] file = Files.readAllBytes(DIR.resolve(v.file()));
        assertEquals(v.kind(), Filter.kindOf(file));
        boolean windowed = !v.asOf().equals("-");
        try (Filter f = Filter.load(DIR.resolve(v.file()))) {
            assertArrayEquals(file, f.toBytes(), "re-encoded byte for byte");
            String expectedInfo = v.info();
            if (windowed) {
                // Items live now depend on now: compare the other fields.
                String[] parts = expectedInfo.split(";", -1);
                parts[3] = "*";
                expectedInfo = String.join(";", parts);
            }
            if (f instanceof BloomFilter b) {
                boolean[] answers = windowed
                        ? b.mightContainAll(probes(v.items()),
                                Instant.ofEpochMilli(Long.parseLong(v.asOf())))
                        : b.mightContainAll(probes(v.items()));
                assertEquals(v.answers(), bits(answers));
                assertEquals(expectedInfo, info(b.info().asMap(), windowed));
                if (windowed) {
                    boolean[] later = b.mightContainAll(items(v.items()),
                            Instant.ofEpochMilli(Long.parseLong(v.after())));
                    assertFalse(bits(later).contains("1"), "nothing is live after the window");
                }
            } else {
                CuckooFilter c = assertInstanceOf(CuckooFilter.class, f);
                assertEquals(v.answers(), bits(c.mightContainAll(probes(v.items()))));
                assertEquals(expectedInfo, info(c.info().asMap(), false));
            }
        }
        if (windowed) {
            return; // its generations carry their creation time
        }
        // The same filter built here from the same arguments and items.
        byte[][] args = v.args().toArray(new byte[0][]);
        if (v.kind().equals("BF")) {
            try (BloomFilter b = new BloomFilter(Native.reserve(Native.BLOOM, args))) {
                b.putAll(items(v.items()));
                assertArrayEquals(file, b.toBytes(), "built in Java");
            }
        } else {
            try (CuckooFilter c = new CuckooFilter(Native.reserve(Native.CUCKOO, args))) {
                c.addAll(items(v.items()));
                for (int i = 0; i < v.items() / 2; i += 7) {
                    Object x = item(i);
                    assertTrue(x instanceof Long l ? c.delete(l) : c.delete((String) x));
                }
                assertArrayEquals(file, c.toBytes(), "built in Java");
            }
        }
    }
}
