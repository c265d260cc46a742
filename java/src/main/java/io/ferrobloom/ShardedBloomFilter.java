package io.ferrobloom;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.ClusterCommandArguments;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * One logical Bloom filter over many keys of a Redis Cluster, through Jedis (a {@link
 * JedisCluster}, or any {@link UnifiedJedis}: on a standalone server the keys simply live
 * together). The Python package's {@code ShardedBloomFilter}, with its routing: the keys are
 * {@code name:{tag}} with tags chosen so that their slots spread evenly over the 16384 slots, and
 * item {@code x} (its bytes as a client sends them) goes to shard {@code BLAKE2b-64(x) mod
 * shards}, a hash independent of the filters' own. So a Java writer and a Python reader agree on
 * which shard holds an item (tests/vectors/routing.tsv, read by both test suites).
 */
public final class ShardedBloomFilter {
    private final UnifiedJedis client;
    private final String name;
    private final List<String> keys;

    /** A filter of {@code shards} keys named after {@code name}. */
    public ShardedBloomFilter(UnifiedJedis client, String name, int shards) {
        if (shards < 1) {
            throw new FilterException("shards must be at least 1");
        }
        this.client = Objects.requireNonNull(client, "client");
        this.name = Objects.requireNonNull(name, "name");
        this.keys = shardKeys(name, shards);
    }

    /** The shards' keys, shard 0 first. */
    public List<String> keys() {
        return keys;
    }

    public String name() {
        return name;
    }

    public int shards() {
        return keys.size();
    }

    /** The routing hash: BLAKE2b-64 of the item's bytes modulo the shard count. */
    public static int shardOf(byte[] item, int shards) {
        return (int) Long.remainderUnsigned(Blake2b.hash64(item), shards);
    }

    /** {@code name:{tag}} keys whose slots are spread evenly over the 16384 slots. */
    public static List<String> shardKeys(String name, int shards) {
        List<String> out = new ArrayList<>(shards);
        for (int i = 0; i < shards; i++) {
            long target = (long) i * 16384 / shards;
            String best = null;
            long bestD = Long.MAX_VALUE;
            for (int j = 0; j < 4096; j++) {
                String tag = i + "-" + j;
                long d = Math.abs(Push.slot(tag.getBytes(StandardCharsets.UTF_8)) - target);
                if (d < bestD) {
                    best = tag;
                    bestD = d;
                    if (d == 0) {
                        break;
                    }
                }
            }
            out.add(name + ":{" + best + "}");
        }
        return out;
    }

    /** A command's arguments as the client's pipeline routes them (by the key's slot). */
    private CommandArguments arguments(String command) {
        var c = JedisTransfer.command(command.getBytes(StandardCharsets.US_ASCII));
        return client instanceof JedisCluster ? new ClusterCommandArguments(c)
                : new CommandArguments(c);
    }

    /** The items' bytes, and the indexes of the items of each shard. */
    private List<List<Integer>> grouped(List<byte[]> enc) {
        List<List<Integer>> groups = new ArrayList<>();
        for (int s = 0; s < keys.size(); s++) {
            groups.add(new ArrayList<>());
        }
        for (int i = 0; i < enc.size(); i++) {
            groups.get(shardOf(enc.get(i), keys.size())).add(i);
        }
        return groups;
    }

    private static List<byte[]> encode(Iterable<?> items) {
        List<byte[]> out = new ArrayList<>();
        for (Object o : Objects.requireNonNull(items, "items")) {
            out.add(Items.of(o));
        }
        return out;
    }

    /**
     * {@code BF.RESERVE} of every shard with {@code builder}'s options and a capacity of {@code
     * capacity / shards} (rounded up) each, checked locally first (the server's texts, before
     * any key is written). Not all-or-nothing: a failure leaves the shards created before it
     * ({@link #delete()} removes them).
     */
    public void create(long capacity, BloomFilter.Builder builder) {
        long per = Math.max(1, -Math.floorDiv(-capacity, keys.size()));
        byte[][] args = builder.capacity(per).args();
        try (BloomFilter check = new BloomFilter(Native.reserve(Native.BLOOM, args))) {
            Objects.requireNonNull(check);
        }
        try (AbstractPipeline p = client.pipelined()) {
            List<Response<Object>> rs = new ArrayList<>();
            for (String k : keys) {
                CommandArguments a = arguments("BF.RESERVE").key(k);
                for (byte[] x : args) {
                    a.add(x);
                }
                rs.add(p.sendCommand(a));
            }
            p.sync();
            rs.forEach(Response::get);
        }
    }

    /** {@code create} with the error rate and the server's other defaults. */
    public void create(long capacity, double errorRate) {
        create(capacity, BloomFilter.builder().errorRate(errorRate));
    }

    /** Deletes every shard. */
    public void delete() {
        for (String k : keys) {
            client.del(k);
        }
    }

    private List<Object> batch(String command, Iterable<?> items) {
        List<byte[]> enc = encode(items);
        List<List<Integer>> groups = grouped(enc);
        List<Object> out = new ArrayList<>(enc.size());
        for (int i = 0; i < enc.size(); i++) {
            out.add(null);
        }
        List<Integer> used = new ArrayList<>();
        List<Response<Object>> rs = new ArrayList<>();
        try (AbstractPipeline p = client.pipelined()) {
            for (int s = 0; s < keys.size(); s++) {
                if (groups.get(s).isEmpty()) {
                    continue;
                }
                CommandArguments a = arguments(command).key(keys.get(s));
                for (int i : groups.get(s)) {
                    a.add(enc.get(i));
                }
                used.add(s);
                rs.add(p.sendCommand(a));
            }
            p.sync();
        }
        for (int u = 0; u < used.size(); u++) {
            List<?> reply = (List<?>) rs.get(u).get();
            List<Integer> idx = groups.get(used.get(u));
            for (int j = 0; j < reply.size(); j++) {
                Object r = reply.get(j);
                out.set(idx.get(j), r instanceof JedisDataException e
                        ? new FilterException(e.getMessage()) : (Object) ((Long) r == 1));
            }
        }
        return out;
    }

    /**
     * {@code BF.MADD} per shard, in one pipeline: per item {@link Boolean} (new or not), a
     * {@link FilterException} with the server's text for a refused item, or null for an item
     * after a {@code non scaling filter is full} in its shard (whose reply ends there).
     */
    public List<Object> addAll(Iterable<?> items) {
        return batch("BF.MADD", items);
    }

    /** {@code BF.MEXISTS} per shard, in one pipeline, answers in the items' order. */
    public boolean[] mightContainAll(Iterable<?> items) {
        List<Object> r = batch("BF.MEXISTS", items);
        boolean[] out = new boolean[r.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Boolean.TRUE.equals(r.get(i));
        }
        return out;
    }

    /** The sum of the shards' {@code BF.CARD}. */
    public long cardinality() {
        long n = 0;
        for (String k : keys) {
            n += (Long) client.sendCommand(k.getBytes(StandardCharsets.UTF_8),
                    JedisTransfer.command("BF.CARD".getBytes(StandardCharsets.US_ASCII)),
                    k.getBytes(StandardCharsets.UTF_8));
        }
        return n;
    }

    /** Empty local filters, one per shard, for building offline (close them after use). */
    public List<BloomFilter> localShards(long capacity, BloomFilter.Builder builder) {
        long per = Math.max(1, -Math.floorDiv(-capacity, keys.size()));
        List<BloomFilter> out = new ArrayList<>();
        for (int s = 0; s < keys.size(); s++) {
            out.add(builder.capacity(per).build());
        }
        return out;
    }

    /** The items of each shard, in order (to fill {@link #localShards}). */
    public List<List<byte[]>> route(Iterable<?> items) {
        List<byte[]> enc = encode(items);
        List<List<byte[]>> out = new ArrayList<>();
        for (List<Integer> g : grouped(enc)) {
            List<byte[]> shard = new ArrayList<>(g.size());
            for (int i : g) {
                shard.add(enc.get(i));
            }
            out.add(shard);
        }
        return out;
    }

    /**
     * Every shard as a local filter, shard 0 first ({@link JedisTransfer#pullBloom} of each
     * key: each exactly a state its key held; close them after use). A shard that cannot be
     * pulled throws, and the shards pulled before it are closed.
     */
    public List<BloomFilter> pull() {
        List<BloomFilter> out = new ArrayList<>(keys.size());
        boolean done = false;
        try {
            for (String k : keys) {
                out.add(JedisTransfer.pullBloom(client, k));
            }
            done = true;
            return out;
        } finally {
            if (!done) {
                out.forEach(BloomFilter::close);
            }
        }
    }

    /** Stores local shard filters (built with {@link #localShards}) with push. */
    public void push(List<BloomFilter> filters, boolean replace) {
        if (filters.size() != keys.size()) {
            throw new FilterException("expected " + keys.size() + " shard filters, got "
                    + filters.size());
        }
        for (int s = 0; s < keys.size(); s++) {
            JedisTransfer.push(client, keys.get(s), filters.get(s), replace);
        }
    }
}
