package io.ferrobloom.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrobloom.BloomFilter;
import io.ferrobloom.JedisTransfer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.JedisPooled;

/**
 * The examples run against a real server: the batch job builds and pushes the day's filter, the
 * server answers every item as present, and the service, pulling the key or loading the
 * snapshot, answers every probe as the server and takes the next day's filter.
 */
class ExamplesTest {

    @Test
    void dailyJobAndService(@TempDir Path dir) throws Exception {
        Path input = dir.resolve("clicks.txt");
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < 150_000; i++) {
            lines.add("click:" + (i * 7919L % 1_000_003));
        }
        Files.write(input, lines);
        try (AutoCloseable server = io.ferrobloom.ExampleServers.start();
                JedisPooled redis = new JedisPooled("127.0.0.1",
                        io.ferrobloom.ExampleServers.port(server))) {
            Path snapshot = dir.resolve("seen.fbf");
            long n = DailyFilterJob.run(input, snapshot, redis, "seen:today", 200_000);
            assertTrue(n > 149_000 && n <= 150_000, "items " + n);
            List<String> probes = new ArrayList<>(lines.subList(0, 2000));
            for (int i = 0; i < 2000; i++) {
                probes.add("other:" + i);
            }
            List<Boolean> reply = redis.bfMExists("seen:today", probes.toArray(new String[0]));
            boolean[] answers = new boolean[reply.size()];
            for (int i = 0; i < answers.length; i++) {
                answers[i] = reply.get(i);
            }
            try (SeenService service = SeenService.fromRedis(redis, "seen:today")) {
                assertArrayEquals(answers, service.seen(probes));
                assertTrue(service.seen("click:0"));
                try (BloomFilter next = BloomFilter.create(10)) {
                    next.put("tomorrow");
                    JedisTransfer.push(redis, "seen:today", next, true);
                }
                assertTrue(service.refresh());
                assertTrue(service.seen("tomorrow"));
                assertEquals(redis.bfExists("seen:today", "click:0"), service.seen("click:0"));
            }
            try (SeenService service = SeenService.fromSnapshot(snapshot)) {
                assertArrayEquals(answers, service.seen(probes));
                assertTrue(service.seen("click:0"));
                assertEquals(false, service.refresh());
                try (BloomFilter next = BloomFilter.create(10)) {
                    next.put("tomorrow");
                    next.save(snapshot);
                }
                Files.setLastModifiedTime(snapshot,
                        java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
                                + 5000));
                assertTrue(service.refresh());
                assertTrue(service.seen("tomorrow"));
            }
        }
    }
}
