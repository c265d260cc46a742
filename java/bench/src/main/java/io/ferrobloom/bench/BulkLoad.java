package io.ferrobloom.bench;

import io.ferrobloom.BloomFilter;
import io.ferrobloom.BloomLayout;
import io.ferrobloom.JedisTransfer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.redisson.Redisson;
import org.redisson.api.RBloomFilter;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.ByteArrayCodec;
import org.redisson.config.Config;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.commands.ProtocolCommand;

/**
 * Bulk load of n items into a server from Java, three ways, the same items ({@link Gen}):
 *
 * <ul>
 *   <li>{@code build_push}: a local non-scaling ferrobloom filter of n items at 1% filled with
 *       {@code putAll} on chunks of 10,000, then {@code JedisTransfer.push} (pipelined
 *       {@code BF.LOADCHUNK}s into a temporary key, then {@code RENAME}); again on {@code
 *       --threads} threads, each filling a filter of its own with every threads-th chunk, merged
 *       before the push ({@code build_push_threads}: the same bits as the one-thread filter,
 *       checked);
 *   <li>{@code madd}: {@code BF.RESERVE key 0.01 n LAYOUT l NONSCALING}, then {@code BF.MADD}
 *       of 1,000 items a command, 50 commands a Jedis pipeline;
 *   <li>{@code redisson}: Redisson's {@code RBloomFilter} (a bitmap of {@code SETBIT}s) over
 *       {@code ByteArrayCodec}, {@code tryInit(n, 0.01)} then {@code add(Collection)} of 1,000
 *       items a call (one {@code EVAL} each). Above {@code --redisson-max} items it loads the
 *       first {@code --redisson-max} items into the filter sized for n, and its time and bytes
 *       are extrapolated linearly to n (reported as such).
 * </ul>
 *
 * Each is timed end to end from the items (made in the loop, as a job reading them would;
 * {@code items_s} is what making them alone takes), with the bytes the server received (INFO
 * stats {@code total_net_input_bytes}), for each of {@code --layouts} (the ferrobloom ways). The
 * pushed filter and the {@code BF.MADD} one must have the same SCANDUMP header (checked), and
 * every filter must hold the first items.
 *
 * <pre>
 * java -cp ... io.ferrobloom.bench.BulkLoad --port 6379 --sizes 100000000 --json out.json
 * </pre>
 */
public final class BulkLoad {
    private static final int CHUNK = 10_000;
    private static final int MADD_ITEMS = 1_000;
    private static final int MADD_PIPELINE = 50;
    private static final int REDISSON_ITEMS = 1_000;

    private BulkLoad() {}

    private static ProtocolCommand cmd(String name) {
        byte[] b = name.getBytes(StandardCharsets.US_ASCII);
        return () -> b;
    }

    private static final ProtocolCommand BF_RESERVE = cmd("BF.RESERVE");
    private static final ProtocolCommand BF_MADD = cmd("BF.MADD");
    private static final ProtocolCommand BF_EXISTS = cmd("BF.EXISTS");
    private static final ProtocolCommand BF_SCANDUMP = cmd("BF.SCANDUMP");

    static long wire(Jedis j) {
        for (String line : j.info("stats").split("\r?\n")) {
            if (line.startsWith("total_net_input_bytes:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        throw new IllegalStateException("no total_net_input_bytes in INFO stats");
    }

    /** Microseconds the server spent in {@code command} since the last CONFIG RESETSTAT. */
    static long commandUsec(Jedis j, String command) {
        String key = "cmdstat_" + command.toLowerCase(Locale.ROOT) + ":";
        for (String line : j.info("commandstats").split("\r?\n")) {
            if (line.startsWith(key)) {
                for (String f : line.substring(key.length()).split(",")) {
                    if (f.startsWith("usec=")) {
                        return Long.parseLong(f.substring(5));
                    }
                }
            }
        }
        return 0;
    }

    static byte[] b(Object o) {
        return String.valueOf(o).getBytes(StandardCharsets.UTF_8);
    }

    /** Seconds to make n items alone, in chunks as the loads make them. */
    static double itemsOnly(long n) {
        long t0 = System.nanoTime();
        byte[][] chunk = new byte[CHUNK][];
        long s = 0;
        for (long i = 0; i < n; i += CHUNK) {
            int c = (int) Math.min(CHUNK, n - i);
            Gen.items(chunk, c, i, 1);
            s += chunk[c - 1].length;
        }
        InProcess.sink += s;
        return (System.nanoTime() - t0) / 1e9;
    }

    /**
     * Fills a local filter with {@code putAll} of chunks, then pushes it. On {@code threads}
     * threads, as a batch job's partitions do: thread t fills a filter of its own with chunks t,
     * t + threads, ..., and the filters are merged ({@code BloomFilter.merge}, {@code BF.MERGE}'s
     * OR of the bits: the same bits as one filter filled with every chunk) before the push.
     */
    static Map<String, Object> buildPush(Jedis j, long n, BloomLayout layout, int threads,
            String key) throws InterruptedException {
        long w0 = wire(j);
        long t0 = System.nanoTime();
        long build;
        long merge;
        long bytes;
        BloomFilter[] parts = new BloomFilter[threads];
        try {
            for (int t = 0; t < threads; t++) {
                parts[t] = BloomFilter.builder().capacity(n).errorRate(0.01).nonScaling()
                        .layout(layout).build();
            }
            Thread[] ts = new Thread[threads];
            Throwable[] failed = new Throwable[1];
            for (int t = 0; t < threads; t++) {
                int me = t;
                ts[t] = new Thread(() -> {
                    try {
                        byte[][] chunk = new byte[CHUNK][];
                        for (long i = (long) me * CHUNK; i < n; i += (long) threads * CHUNK) {
                            int c = (int) Math.min(CHUNK, n - i);
                            byte[][] a = c == CHUNK ? chunk : new byte[c][];
                            Gen.items(a, c, i, 1);
                            parts[me].putAll(a);
                        }
                    } catch (Throwable e) {
                        failed[0] = e;
                    }
                });
            }
            if (threads == 1) {
                ts[0].run();
            } else {
                for (Thread t : ts) {
                    t.start();
                }
                for (Thread t : ts) {
                    t.join();
                }
            }
            if (failed[0] != null) {
                throw new IllegalStateException("build failed", failed[0]);
            }
            build = System.nanoTime() - t0;
            for (int t = 1; t < threads; t++) {
                parts[0].merge(parts[t]);
                parts[t].close();
            }
            merge = System.nanoTime() - t0 - build;
            bytes = parts[0].info().size();
            JedisTransfer.push(j, key, parts[0], true);
        } finally {
            for (BloomFilter f : parts) {
                if (f != null) {
                    f.close();
                }
            }
        }
        long t = System.nanoTime() - t0;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("threads", threads);
        m.put("seconds", t / 1e9);
        m.put("build_seconds", build / 1e9);
        m.put("merge_seconds", merge / 1e9);
        m.put("wire", wire(j) - w0);
        m.put("filter_bytes", bytes);
        return m;
    }

    static Map<String, Object> madd(Jedis j, long n, BloomLayout layout, String key) {
        j.configResetStat(); // before the byte count: it resets that too
        long w0 = wire(j);
        long t0 = System.nanoTime();
        byte[] k = b(key);
        j.sendCommand(BF_RESERVE, k, b("0.01"), b(n), b("LAYOUT"), b(layout.wireName()),
                b("NONSCALING"));
        Pipeline p = j.pipelined();
        List<Response<Object>> rs = new ArrayList<>();
        for (long i = 0; i < n; i += MADD_ITEMS) {
            int c = (int) Math.min(MADD_ITEMS, n - i);
            byte[][] args = new byte[c + 1][];
            args[0] = k;
            for (int x = 0; x < c; x++) {
                args[x + 1] = Gen.item(i + x);
            }
            rs.add(p.sendCommand(BF_MADD, args));
            if (rs.size() == MADD_PIPELINE) {
                p.sync();
                rs.forEach(Response::get); // an error reply throws
                rs.clear();
            }
        }
        p.sync();
        rs.forEach(Response::get);
        p.close();
        long t = System.nanoTime() - t0;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("seconds", t / 1e9);
        m.put("wire", wire(j) - w0);
        // The module's own time in the commands (the same core loop a local build runs).
        m.put("server_command_seconds", commandUsec(j, "BF.MADD") / 1e6);
        return m;
    }

    static Map<String, Object> redisson(Jedis j, RedissonClient r, long n, long max, String key) {
        long loaded = Math.min(n, max);
        long w0 = wire(j);
        long t0 = System.nanoTime();
        RBloomFilter<byte[]> f = r.getBloomFilter(key, ByteArrayCodec.INSTANCE);
        if (!f.tryInit(n, 0.01)) {
            throw new IllegalStateException("Redisson: " + key + " exists");
        }
        List<byte[]> batch = new ArrayList<>(REDISSON_ITEMS);
        for (long i = 0; i < loaded; i += REDISSON_ITEMS) {
            int c = (int) Math.min(REDISSON_ITEMS, loaded - i);
            batch.clear();
            for (int x = 0; x < c; x++) {
                batch.add(Gen.item(i + x));
            }
            f.add(batch);
        }
        long t = System.nanoTime() - t0;
        long w = wire(j) - w0;
        if (!f.contains(Gen.item(0))) {
            throw new IllegalStateException("Redisson: item-0 not found");
        }
        double scale = (double) n / loaded;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("loaded", loaded);
        m.put("measured_seconds", t / 1e9);
        m.put("measured_wire", w);
        m.put("seconds", t / 1e9 * scale);
        m.put("wire", (long) (w * scale));
        m.put("extrapolated", loaded < n);
        m.put("bits", f.getSize());
        m.put("hash_iterations", f.getHashIterations());
        return m;
    }

    private static byte[] header(Jedis j, String key) {
        Object r = j.sendCommand(BF_SCANDUMP, b(key), b(0));
        return (byte[]) ((List<?>) r).get(1);
    }

    /**
     * Whether two filters' SCANDUMP chunks after the header are equal (the merged build's header
     * differs in its item count only: a merge counts its items by an estimate from the bits).
     */
    private static void sameBits(Jedis j, String a, String b) {
        long it = 0;
        while (true) {
            List<?> ra = (List<?>) j.sendCommand(BF_SCANDUMP, b(a), b(it));
            List<?> rb = (List<?>) j.sendCommand(BF_SCANDUMP, b(b), b(it));
            long next = (Long) ra.get(0);
            if (next != (Long) rb.get(0)) {
                throw new IllegalStateException(a + " and " + b + ": different chunk iterators");
            }
            if (next == 0) {
                return;
            }
            if (it != 0 && !Arrays.equals((byte[]) ra.get(1), (byte[]) rb.get(1))) {
                throw new IllegalStateException(a + " and " + b + ": different bits at " + it);
            }
            it = next;
        }
    }

    private static void holds(Jedis j, String key) {
        for (long i : new long[] {0, 1, 12_345}) {
            if (!Long.valueOf(1).equals(j.sendCommand(BF_EXISTS, b(key), Gen.item(i)))) {
                throw new IllegalStateException(key + ": item-" + i + " not found");
            }
        }
    }

    static Map<String, Object> one(Jedis j, RedissonClient r, long n, List<BloomLayout> layouts,
            int threads, long redissonMax) throws InterruptedException {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("n", n);
        j.flushAll();
        row.put("items_s", itemsOnly(n));
        Map<String, Object> byLayout = new LinkedHashMap<>();
        for (BloomLayout layout : layouts) {
            Map<String, Object> l = new LinkedHashMap<>();
            l.put("build_push", buildPush(j, n, layout, 1, "pushed"));
            l.put("madd", madd(j, n, layout, "madd"));
            if (!Arrays.equals(header(j, "pushed"), header(j, "madd"))) {
                throw new IllegalStateException("BF.MADD and build+push made different filters");
            }
            holds(j, "pushed");
            holds(j, "madd");
            j.del("madd");
            if (threads > 1) {
                l.put("build_push_threads", buildPush(j, n, layout, threads, "merged"));
                holds(j, "merged");
                sameBits(j, "pushed", "merged");
            }
            j.flushAll();
            byLayout.put(layout.wireName(), l);
        }
        row.put("layouts", byLayout);
        if (r != null) {
            row.put("redisson", redisson(j, r, n, redissonMax, "redisson"));
            j.flushAll();
        }
        return row;
    }

    public static void main(String[] argv) throws Exception {
        Args a = new Args(argv);
        int port = (int) a.num("port", 6379);
        List<Long> sizes = a.nums("sizes", "100000000");
        long redissonMax = a.num("redisson-max", 1_000_000);
        long warm = a.num("warmup", 200_000);
        boolean withRedisson = !a.str("redisson", "yes").equals("no");
        int threads = (int) a.num("threads", 2);
        List<BloomLayout> layouts = new ArrayList<>();
        for (String l : a.str("layouts", "classic,blocked").split(",")) {
            if (!l.isBlank()) {
                layouts.add(BloomLayout.valueOf(l.trim().toUpperCase(Locale.ROOT)));
            }
        }
        Config c = new Config();
        c.useSingleServer().setAddress("redis://127.0.0.1:" + port)
                .setConnectionMinimumIdleSize(1).setConnectionPoolSize(2)
                .setTimeout(600_000);
        RedissonClient r = withRedisson ? Redisson.create(c) : null;
        List<Map<String, Object>> rows = new ArrayList<>();
        try (Jedis j = new Jedis("127.0.0.1", port, 600_000)) {
            if (warm > 0) {
                long t = System.nanoTime();
                one(j, r, warm, layouts, threads, warm);
                Args.log(String.format("java bulk: warm-up at %,d items: %.1f s", warm,
                        (System.nanoTime() - t) / 1e9));
            }
            for (long n : sizes) {
                Map<String, Object> row = one(j, r, n, layouts, threads, redissonMax);
                rows.add(row);
                Args.log(String.format(Locale.ROOT, "java bulk: n=%,d %s", n, row));
            }
        } finally {
            if (r != null) {
                r.shutdown();
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jvm", Args.jvm());
        out.put("jedis", Args.version("redis.clients", "jedis"));
        out.put("redisson", withRedisson ? Args.version("org.redisson", "redisson") : null);
        out.put("rows", rows);
        String json = Json.of(out);
        String path = a.str("json", "");
        if (path.isEmpty()) {
            System.out.print(json);
        } else {
            Files.writeString(Path.of(path), json);
        }
    }
}
