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
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Moving filters to a server over Jedis (an optional dependency: a program that uses this class
 * brings Jedis): a {@link Jedis} connection, a {@link UnifiedJedis} such as {@code
 * JedisPooled}, or a {@link JedisCluster}. What push promises: {@code Push}'s documentation, docs/clients.md.
 *
 * <pre>{@code
 * try (BloomFilter f = BloomFilter.create(100_000_000, 0.01)) {
 *     f.putAll(items);
 *     JedisTransfer.push(jedis, "seen", f, true);
 * }
 * }</pre>
 */
public final class JedisTransfer {
    private JedisTransfer() {}

    /**
     * Stores {@code filter} under {@code key} with {@code LOADCHUNK} into a temporary key and
     * {@code RENAME}: no reader sees a half-loaded filter, a failed push leaves the key as it
     * was. Without {@code replace}, an existing key throws {@link FilterException} {@code ERR
     * item exists}; a filter the server's limits refuse throws the server's text before
     * anything is sent; the server's other refusals propagate as Jedis throws them.
     */
    public static void push(Jedis client, String key, Filter filter, boolean replace) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static void push(Jedis client, byte[] key, Filter filter, boolean replace) {
        Push.push(new JedisWire(client), key, filter, replace);
    }

    /** {@link #push(Jedis, String, Filter, boolean)} over a pooled client ({@code JedisPooled}). */
    public static void push(UnifiedJedis client, String key, Filter filter, boolean replace) {
        push(client, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static void push(UnifiedJedis client, byte[] key, Filter filter, boolean replace) {
        Push.push(new JedisWire(client), key, filter, replace);
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
        try (Connection c = client.getConnectionFromSlot(JedisClusterCRC16.getSlot(key))) {
            push(new Jedis(c), key, filter, replace);
        }
    }

    static ProtocolCommand command(byte[] name) {
        return () -> name;
    }

    static byte[][] rest(byte[][] c) {
        byte[][] out = new byte[c.length - 1][];
        System.arraycopy(c, 1, out, 0, out.length);
        return out;
    }

    /** Throws an error element of a transaction's reply. */
    static List<Object> checked(List<Object> replies) {
        if (replies == null) {
            throw new FilterException("ERR the transaction was aborted");
        }
        for (Object o : replies) {
            if (o instanceof RuntimeException e) {
                throw e;
            }
        }
        return replies;
    }

    /** A Jedis client's three ways of sending: one command, a pipeline, a transaction. */
    private record JedisWire(
            Function<byte[][], Object> send,
            Supplier<AbstractPipeline> pipelined,
            Supplier<AbstractTransaction> multi) implements Push.Wire {

        JedisWire(Jedis j) {
            this(c -> j.sendCommand(command(c[0]), rest(c)), j::pipelined, j::multi);
        }

        JedisWire(UnifiedJedis j) {
            this(c -> j.sendCommand(command(c[0]), rest(c)), j::pipelined, j::multi);
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
        public List<Object> transaction(List<byte[][]> commands) {
            try (AbstractTransaction t = multi.get()) {
                for (byte[][] c : commands) {
                    t.sendCommand(command(c[0]), rest(c));
                }
                return checked(t.exec());
            }
        }
    }
}
