package io.ferrobloom.bench;

import io.ferrobloom.BloomLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * In-process add and lookup, ns/item: ferrobloom's {@code BloomFilter} (per layout) against
 * Guava's {@code BloomFilter} over {@code Funnels.byteArrayFunnel()}, the same {@code byte[]}
 * items for both ({@link Gen}).
 *
 * <p>Per size n: non-scaling filters of n items at 1%, filled with the n items, then looked up
 * with {@code min(n, --probes)} of them (hits) and as many never-added items (misses; their
 * share of positives is the measured false-positive rate). Two ways of calling, each with a
 * fresh filter: {@code batch}, {@code putAll} / {@code mightContainAll} on arrays of
 * {@code --chunk} items (10,000: one native call each), and {@code per_item}, {@code put} /
 * {@code mightContain} in a loop. Guava has no call on many items: its one row is its loop.
 *
 * <p>Timing: the items of a chunk are made first (untimed), then the chunk's calls are timed
 * as one span with {@link System#nanoTime}; every call's answers are counted into a sink, and
 * a fill must answer true for every hit probe (no false negative). Before the first size, one
 * round at 200,000 items of every library and way of calling warms the JIT (discarded).
 * Libraries run in a rotated order each round; a garbage collection runs between
 * measurements, untimed. Sizes up to 2M run at least {@code --small-rounds} rounds, sizes from
 * 50M at most {@code --big-rounds}.
 *
 * <pre>
 * java -cp ... io.ferrobloom.bench.InProcess --sizes 1000000,10000000 --rounds 3 --json out.json
 * </pre>
 */
public final class InProcess {
    static volatile long sink;

    private InProcess() {}

    /** One measurement's figures: ns/item add, hit, miss, and the FP rate and bytes. */
    record Run(double add, double hit, double miss, double fp, long bytes, long hitProbes,
            long missProbes) {}

    static Run measure(Subject.Kind k, long n, boolean batch, long probes, int chunkSize) {
        try (Subject s = k.create(n, batch)) {
            byte[][] chunk = new byte[chunkSize][];
            long sum = 0;
            long addNs = 0;
            for (long i = 0; i < n; i += chunkSize) {
                int c = (int) Math.min(chunkSize, n - i);
                byte[][] a = c == chunkSize ? chunk : new byte[c][];
                Gen.items(a, c, i, 1);
                long t0 = System.nanoTime();
                sum += s.put(a, c);
                addNs += System.nanoTime() - t0;
            }
            long hp = Math.min(n, probes);
            long stride = n / hp;
            long hitNs = 0;
            long found = 0;
            for (long j = 0; j < hp; j += chunkSize) {
                int c = (int) Math.min(chunkSize, hp - j);
                byte[][] a = c == chunkSize ? chunk : new byte[c][];
                Gen.items(a, c, j * stride, stride);
                long t0 = System.nanoTime();
                found += s.contains(a, c);
                hitNs += System.nanoTime() - t0;
            }
            if (found != hp) {
                throw new IllegalStateException(k.name() + ": " + (hp - found)
                        + " added items not found");
            }
            long mp = hp;
            long missNs = 0;
            long positives = 0;
            Gen.Misses misses = new Gen.Misses();
            for (long j = 0; j < mp; j += chunkSize) {
                int c = (int) Math.min(chunkSize, mp - j);
                byte[][] a = c == chunkSize ? chunk : new byte[c][];
                misses.fill(a, c);
                long t0 = System.nanoTime();
                positives += s.contains(a, c);
                missNs += System.nanoTime() - t0;
            }
            sink += sum;
            return new Run((double) addNs / n, (double) hitNs / hp, (double) missNs / mp,
                    (double) positives / mp, s.bytes(), hp, mp);
        }
    }

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        List<Long> sizes = a.nums("sizes", "1000000,10000000");
        int rounds = (int) a.num("rounds", 3);
        int smallRounds = (int) a.num("small-rounds", 5);
        int bigRounds = (int) a.num("big-rounds", 1);
        long probes = a.num("probes", 10_000_000);
        int chunk = (int) a.num("chunk", 10_000);
        long warm = a.num("warmup", 200_000);
        List<Subject.Kind> kinds = new ArrayList<>();
        for (String l : a.str("layouts", "classic,blocked").split(",")) {
            if (!l.isBlank()) {
                kinds.add(Subject.Ferro.kind(BloomLayout.valueOf(l.trim().toUpperCase(Locale.ROOT))));
            }
        }
        kinds.add(Subject.Guava.KIND);

        if (warm > 0) {
            long t = System.nanoTime();
            for (Subject.Kind k : kinds) {
                for (boolean batch : modes(k)) {
                    measure(k, warm, batch, warm, chunk);
                }
            }
            Args.log(String.format("java: JIT warm-up at %,d items: %.1f s", warm,
                    (System.nanoTime() - t) / 1e9));
        }

        Map<String, Map<String, Object>> rows = new LinkedHashMap<>();
        for (long n : sizes) {
            int r = n <= 2_000_000 ? Math.max(rounds, smallRounds)
                    : n >= 50_000_000 ? Math.min(rounds, bigRounds) : rounds;
            for (int round = 0; round < r; round++) {
                for (int i = 0; i < kinds.size(); i++) {
                    Subject.Kind k = kinds.get((i + round) % kinds.size());
                    for (boolean batch : modes(k)) {
                        System.gc();
                        long t = System.nanoTime();
                        Run run = measure(k, n, batch, probes, chunk);
                        String mode = batch ? "batch" : "per_item";
                        Args.log(String.format(Locale.ROOT,
                                "java: n=%,d round %d %s %s: add %.1f hit %.1f miss %.1f ns/item, "
                                        + "FP %.5f, %,d bytes (%.1f s)",
                                n, round + 1, k.name(), mode, run.add(), run.hit(), run.miss(),
                                run.fp(), run.bytes(), (System.nanoTime() - t) / 1e9));
                        Map<String, Object> row = rows.computeIfAbsent(n + "/" + k.name() + "/" + mode,
                                x -> {
                                    Map<String, Object> m = new LinkedHashMap<>();
                                    m.put("n", n);
                                    m.put("library", k.name());
                                    m.put("mode", mode);
                                    m.put("batch_call", k.hasBatch() && batch);
                                    for (String op : new String[] {"add", "hit", "miss", "fp"}) {
                                        m.put(op, new ArrayList<Double>());
                                    }
                                    return m;
                                });
                        add(row, "add", run.add());
                        add(row, "hit", run.hit());
                        add(row, "miss", run.miss());
                        add(row, "fp", run.fp());
                        row.put("bytes", run.bytes());
                        row.put("hit_probes", run.hitProbes());
                        row.put("miss_probes", run.missProbes());
                    }
                }
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jvm", Args.jvm());
        out.put("guava", Args.version("com.google.guava", "guava"));
        out.put("chunk", chunk);
        out.put("rounds", rounds);
        out.put("small_rounds", smallRounds);
        out.put("big_rounds", bigRounds);
        out.put("probes", probes);
        out.put("rows", new ArrayList<>(rows.values()));
        String json = Json.of(out);
        String path = a.str("json", "");
        if (path.isEmpty()) {
            System.out.print(json);
        } else {
            Files.writeString(Path.of(path), json);
        }
    }

    @SuppressWarnings("unchecked")
    private static void add(Map<String, Object> row, String op, double v) {
        ((List<Double>) row.get(op)).add(v);
    }

    private static boolean[] modes(Subject.Kind k) {
        return k.hasBatch() ? new boolean[] {true, false} : new boolean[] {false};
    }
}
