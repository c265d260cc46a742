package io.ferrobloom.examples;

import io.ferrobloom.BloomFilter;
import io.ferrobloom.BloomLayout;
import io.ferrobloom.JedisTransfer;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;

/**
 * A batch job, as a Spark or cron job would run it: builds the day's filter from a file of items
 * (one a line) in-process, saves a snapshot beside it, and pushes it to the server in one piece
 * (LOADCHUNK into a temporary key, then RENAME: services never see a half-built filter), instead
 * of one BF.MADD argument per item.
 *
 * <pre>
 * java -cp ferrobloom.jar:jedis.jar:... io.ferrobloom.examples.DailyFilterJob \
 *     clicks-2026-11-28.txt redis://cache:6379 seen:2026-11-28 100000000
 * </pre>
 */
public final class DailyFilterJob {
    private DailyFilterJob() {}

    /** Items added per batch (one native call each 16,384 of them). */
    static final int BATCH = 1 << 16;

    /** Builds the filter from {@code input}, saves it to {@code snapshot}, pushes it. */
    public static long run(Path input, Path snapshot, UnifiedJedis redis, String key,
            long expectedItems) throws IOException {
        try (BloomFilter f = BloomFilter.builder().capacity(expectedItems).errorRate(0.001)
                .layout(BloomLayout.BLOCKED).build();
                BufferedReader in = Files.newBufferedReader(input, StandardCharsets.UTF_8)) {
            List<String> batch = new ArrayList<>(BATCH);
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                batch.add(line);
                if (batch.size() == BATCH) {
                    f.putAll(batch);
                    batch.clear();
                }
            }
            f.putAll(batch);
            f.save(snapshot);
            JedisTransfer.push(redis, key, f, true);
            return f.cardinality();
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            System.err.println("usage: DailyFilterJob INPUT REDIS_URL KEY EXPECTED_ITEMS");
            System.exit(2);
        }
        Path input = Path.of(args[0]);
        try (JedisPooled redis = new JedisPooled(java.net.URI.create(args[1]))) {
            long n = run(input, Path.of(args[0] + ".fbf"), redis, args[2],
                    Long.parseLong(args[3]));
            System.out.println(args[2] + ": " + n + " items pushed");
        }
    }
}
