package io.ferrobloom;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.Response;
import redis.clients.jedis.Transaction;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Moving filters to and from a server over Jedis (an optional dependency: a program that uses
 * this class brings Jedis): a {@link Jedis} connection, a {@link UnifiedJedis} such as {@code
 * JedisPooled}, or a {@link JedisCluster}. What push and pull promise: {@code Push}'s and
 * {@code Pull}'s documentation, docs/clients.md.
 *
 * <pre>{@code
 * try (BloomFilter f = BloomFilter.create(100_000_000, 0.01)) {
 *     f.putAll(items);
 *     JedisTransfer.push(jedis, "seen", f, true);
 * }
 * try (BloomFilter g = JedisTransfer.pullBloom(jedis, "seen")) {
 *     g.mightContain("alice");
 * }
 * }</pre>
 */
public final class JedisTransfer {
    private JedisTransfer() {}

    /**
     * Stores {@code filter} under {@code key} with {@code LOADCHUNK} into a temporary key and
     * {@code RENAME}: no reader sees a half-loaded filter, a failed push leaves the key as it
     * was. Without {@code replace}, an existing key throws {@link FilterException} {@code ERR
     * item exists}; with it, a filter of the same kind (Bloom or cuckoo) or a missing key is
     * replaced and a key of another type throws {@link FilterException} with the server's
     * {@code WRONGTYPE} text (checked with {@code TYPE} before anything is sent and again under
     * {@code WATCH} in the rename's transaction, so a key written meanwhile is never replaced
     * unchecked: the check runs again, and after three writes in a row {@link FilterException}
     * {@code ERR the key changed during each of 3 attempts to replace it; nothing was replaced};
     * {@link #push(Jedis, String, Filter, boolean, boolean) force} replaces any key). A
     * filter the server's limits refuse throws the server's text before anything is sent; a
     * server that refuses the header of a filter of ferrobloom's layouts and is not
     * ferrobloom (RedisBloom) throws {@link FilterException} saying to build it with {@link
     * BloomLayout#REDISBLOOM} or {@link CuckooLayout#REDISBLOOM}, the server's refusal as its
     * cause; the server's other refusals propagate as Jedis throws them.
     */
    public static void push(Jedis client, String key, Filter filter, boolean replace) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static void push(Jedis client, byte[] key, Filter filter, boolean replace) {
        push(client, key, filter, replace, false);
    }

    /**
     * {@link #push(Jedis, String, Filter, boolean)}; with {@code replace} and {@code force}, a
     * key of any type is replaced (a string, a filter of the other kind). {@code force}
     * without {@code replace} changes nothing.
     */
    public static void push(Jedis client, String key, Filter filter, boolean replace,
            boolean force) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace, force);
    }

    public static void push(Jedis client, byte[] key, Filter filter, boolean replace,
            boolean force) {
        Push.push(new JedisWire(client), key, filter, replace, force);
    }

    /**
     * {@link #push(Jedis, String, Filter, boolean)} over a pooled client: a {@code JedisPooled}
     * lends one connection for the whole push; another {@link UnifiedJedis} runs the final
     * {@code WATCH}/{@code MULTI}/{@code EXEC} on one connection of its own.
     */
    public static void push(UnifiedJedis client, String key, Filter filter, boolean replace) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static void push(UnifiedJedis client, byte[] key, Filter filter, boolean replace) {
        push(client, key, filter, replace, false);
    }

    /** {@link #push(Jedis, String, Filter, boolean, boolean)} over a pooled client. */
    public static void push(UnifiedJedis client, String key, Filter filter, boolean replace,
            boolean force) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace, force);
    }

    public static void push(UnifiedJedis client, byte[] key, Filter filter, boolean replace,
            boolean force) {
        if (client instanceof JedisCluster jc) {
            push(jc, key, filter, replace, force);
            return;
        }
        if (client instanceof JedisPooled p) {
            try (Connection c = p.getPool().getResource()) {
                push(new Jedis(c), key, filter, replace, force);
            }
            return;
        }
        Push.push(new JedisWire(client), key, filter, replace, force);
    }

    /**
     * {@link #push(Jedis, String, Filter, boolean)} into a Redis Cluster: the key and the
     * temporary key share a slot, so the whole push runs on one connection to the primary that
     * serves it (JedisCluster has no transactions of its own). A slot that moves during the push
     * fails it, leaving the key as it was.
     */
    public static void push(JedisCluster client, String key, Filter filter, boolean replace) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static void push(JedisCluster client, byte[] key, Filter filter, boolean replace) {
        push(client, key, filter, replace, false);
    }

    /** {@link #push(Jedis, String, Filter, boolean, boolean)} into a Redis Cluster. */
    public static void push(JedisCluster client, String key, Filter filter, boolean replace,
            boolean force) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace, force);
    }

    public static void push(JedisCluster client, byte[] key, Filter filter, boolean replace,
            boolean force) {
        try (Connection c = client.getConnectionFromSlot(JedisClusterCRC16.getSlot(key))) {
            push(new Jedis(c), key, filter, replace, force);
        }
    }

    /**
     * Reads the filter under {@code key} into a local filter ({@link BloomFilter} or {@link
     * CuckooFilter}, by the key's type) that answers every probe as the server's: exactly a
     * state the key held, or an exception, never a mix of two states. On ferrobloom, a {@code
     * SCANDUMP key iterator STAMP} walk whose every reply carries the stamp of the header's
     * state, walked again when the key changed during it (three walks at most, then {@link
     * FilterException} {@code the key changed during every one of 3 SCANDUMP walks}); on a
     * server whose SCANDUMP takes no {@code STAMP} (RedisBloom), the key's {@code DUMP}, one
     * atomic read, decoded locally. A missing key throws {@code ERR not found}, a key of another
     * type the server's {@code WRONGTYPE} text (both {@link FilterException}); the server's
     * other refusals propagate as Jedis throws them. See docs/clients.md, "push and pull".
     */
    public static Filter pull(Jedis client, String key) {
        return pull(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static Filter pull(Jedis client, byte[] key) {
        return Pull.pull(new JedisWire(client), key, Filter.class);
    }

    /** {@link #pull(Jedis, String)} of a Bloom filter: a cuckoo filter's key throws WRONGTYPE. */
    public static BloomFilter pullBloom(Jedis client, String key) {
        return pullBloom(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static BloomFilter pullBloom(Jedis client, byte[] key) {
        return Pull.pull(new JedisWire(client), key, BloomFilter.class);
    }

    /** {@link #pull(Jedis, String)} of a cuckoo filter: a Bloom filter's key throws WRONGTYPE. */
    public static CuckooFilter pullCuckoo(Jedis client, String key) {
        return pullCuckoo(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static CuckooFilter pullCuckoo(Jedis client, byte[] key) {
        return Pull.pull(new JedisWire(client), key, CuckooFilter.class);
    }

    /**
     * {@link #pull(Jedis, String)} over a pooled client: a {@code JedisPooled} lends one
     * connection for the whole pull, a {@link JedisCluster} is pulled as {@link
     * #pull(JedisCluster, String)}.
     */
    public static Filter pull(UnifiedJedis client, String key) {
        return pull(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static Filter pull(UnifiedJedis client, byte[] key) {
        return pull(client, key, Filter.class);
    }

    public static BloomFilter pullBloom(UnifiedJedis client, String key) {
        return pullBloom(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static BloomFilter pullBloom(UnifiedJedis client, byte[] key) {
        return pull(client, key, BloomFilter.class);
    }

    public static CuckooFilter pullCuckoo(UnifiedJedis client, String key) {
        return pullCuckoo(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static CuckooFilter pullCuckoo(UnifiedJedis client, byte[] key) {
        return pull(client, key, CuckooFilter.class);
    }

    private static <T extends Filter> T pull(UnifiedJedis client, byte[] key, Class<T> want) {
        if (client instanceof JedisCluster jc) {
            return pull(jc, key, want);
        }
        if (client instanceof JedisPooled p) {
            // One connection for the whole pull: a cuckoo filter of RedisBloom's layout knows a
            // walk by the connection that began it.
            try (Connection c = p.getPool().getResource()) {
                return Pull.pull(new JedisWire(new Jedis(c)), key, want);
            }
        }
        return Pull.pull(new JedisWire(client), key, want);
    }

    /**
     * {@link #pull(Jedis, String)} from a Redis Cluster, on one connection to the primary that
     * serves the key's slot.
     */
    public static Filter pull(JedisCluster client, String key) {
        return pull(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static Filter pull(JedisCluster client, byte[] key) {
        return pull(client, key, Filter.class);
    }

    public static BloomFilter pullBloom(JedisCluster client, String key) {
        return pullBloom(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static BloomFilter pullBloom(JedisCluster client, byte[] key) {
        return pull(client, key, BloomFilter.class);
    }

    public static CuckooFilter pullCuckoo(JedisCluster client, String key) {
        return pullCuckoo(client, key.getBytes(StandardCharsets.UTF_8));
    }

    public static CuckooFilter pullCuckoo(JedisCluster client, byte[] key) {
        return pull(client, key, CuckooFilter.class);
    }

    private static <T extends Filter> T pull(JedisCluster client, byte[] key, Class<T> want) {
        try (Connection c = client.getConnectionFromSlot(JedisClusterCRC16.getSlot(key))) {
            return Pull.pull(new JedisWire(new Jedis(c)), key, want);
        }
    }

    /** The wire over a Jedis connection (tests wrap it). */
    static Push.Wire wire(Jedis j) {
        return new JedisWire(j);
    }

    static ProtocolCommand command(byte[] name) {
        return () -> name;
    }

    static byte[][] rest(byte[][] c) {
        byte[][] out = new byte[c.length - 1][];
        System.arraycopy(c, 1, out, 0, out.length);
        return out;
    }

    /** Throws an error element of a transaction's reply; null (an aborted EXEC) stays null. */
    static List<Object> checked(List<Object> replies) {
        if (replies == null) {
            return null;
        }
        for (Object o : replies) {
            if (o instanceof RuntimeException e) {
                throw e;
            }
        }
        return replies;
    }

    /**
     * A Jedis client's three ways of sending: one command, a pipeline, a transaction (begun
     * without MULTI, so that WATCH comes first, on the transaction's one connection).
     */
    private record JedisWire(
            Function<byte[][], Object> send,
            Supplier<AbstractPipeline> pipelined,
            Supplier<AbstractTransaction> unwatched) implements Push.Wire {

        JedisWire(Jedis j) {
            // The check's TYPE goes through j, on the watching connection.
            this(c -> j.sendCommand(command(c[0]), rest(c)), j::pipelined,
                    () -> new Transaction(j.getConnection(), false, false));
        }

        JedisWire(UnifiedJedis j) {
            // The check's TYPE may go through another connection of j's: sent after the WATCH
            // is in place, what it sees is what the EXEC finds unless the key changed, which
            // aborts the EXEC.
            this(c -> j.sendCommand(command(c[0]), rest(c)), j::pipelined,
                    () -> j.transaction(false));
        }

        @Override
        public Object call(byte[]... c) {
            return send.apply(c);
        }

        @Override
        public void pipeline(List<byte[][]> commands) {
            List<Response<Object>> rs = new ArrayList<>();
            try (AbstractPipeline p = pipelined.get()) {
                for (byte[][] c : commands) {
                    rs.add(p.sendCommand(command(c[0]), rest(c)));
                }
                p.sync();
            }
            for (Response<Object> r : rs) {
                r.get(); // the first error reply throws
            }
        }

        @Override
        public List<Object> transaction(byte[] watch, Runnable check, List<byte[][]> commands) {
            // close() unwatches or discards what is left open (a check that threw).
            try (AbstractTransaction t = unwatched.get()) {
                if (watch != null) {
                    t.watch(watch);
                    check.run();
                }
                t.multi();
                for (byte[][] c : commands) {
                    t.sendCommand(command(c[0]), rest(c));
                }
                return checked(t.exec());
            }
        }
    }
}
