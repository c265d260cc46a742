package io.ferrobloom;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;

/**
 * Moving filters to and from a server over a Lettuce connection (an optional dependency: a
 * program that uses this class brings Lettuce), with any codec: the commands carry raw bytes.
 * The chunks are pipelined through the connection's asynchronous API, the rest is synchronous;
 * the final rename is a {@code MULTI}/{@code EXEC} on the connection ({@code WATCH} and
 * {@code TYPE} first when {@code replace} without {@code force}), so, as for any Lettuce
 * transaction, the connection must not be shared with other threads during the push. A pull
 * sends only reads ({@code TYPE}, {@code SCANDUMP}, {@code DUMP}) on the connection. What push
 * and pull promise: docs/clients.md.
 */
public final class LettuceTransfer {
    private LettuceTransfer() {}

    /** The same as {@link JedisTransfer#push(redis.clients.jedis.Jedis, String, Filter, boolean)}. */
    public static <K, V> void push(StatefulRedisConnection<K, V> connection, String key,
            Filter filter, boolean replace) {
        push(connection, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static <K, V> void push(StatefulRedisConnection<K, V> connection, byte[] key,
            Filter filter, boolean replace) {
        push(connection, key, filter, replace, false);
    }

    /**
     * The same as {@link JedisTransfer#push(redis.clients.jedis.Jedis, String, Filter, boolean,
     * boolean)}: with {@code replace} and {@code force}, a key of any type is replaced.
     */
    public static <K, V> void push(StatefulRedisConnection<K, V> connection, String key,
            Filter filter, boolean replace, boolean force) {
        push(connection, key.getBytes(StandardCharsets.UTF_8), filter, replace, force);
    }

    public static <K, V> void push(StatefulRedisConnection<K, V> connection, byte[] key,
            Filter filter, boolean replace, boolean force) {
        Push.push(new Wire<>(connection), key, filter, replace, force);
    }

    /**
     * The push into a Redis Cluster: on the cluster connection's connection to the primary
     * serving the key's slot, which the temporary key shares. That node connection is the
     * cluster connection's own, so the cluster connection must not be used by other threads
     * during the push. A slot that moves during the push fails it, leaving the key as it was.
     */
    public static <K, V> void push(StatefulRedisClusterConnection<K, V> cluster, String key,
            Filter filter, boolean replace) {
        push(cluster, key.getBytes(StandardCharsets.UTF_8), filter, replace);
    }

    public static <K, V> void push(StatefulRedisClusterConnection<K, V> cluster, byte[] key,
            Filter filter, boolean replace) {
        push(cluster, key, filter, replace, false);
    }

    /** The push into a Redis Cluster with {@code force}. */
    public static <K, V> void push(StatefulRedisClusterConnection<K, V> cluster, String key,
            Filter filter, boolean replace, boolean force) {
        push(cluster, key.getBytes(StandardCharsets.UTF_8), filter, replace, force);
    }

    public static <K, V> void push(StatefulRedisClusterConnection<K, V> cluster, byte[] key,
            Filter filter, boolean replace, boolean force) {
        push(primary(cluster, key), key, filter, replace, force);
    }

    /**
     * The same as {@link JedisTransfer#pull(redis.clients.jedis.Jedis, String)}: the filter under
     * {@code key}, exactly a state the key held, or an exception (a missing key: {@code ERR not
     * found}, a key of another type: {@code WRONGTYPE}); the server's refusals propagate as
     * Lettuce throws them.
     */
    public static <K, V> Filter pull(StatefulRedisConnection<K, V> connection, String key) {
        return pull(connection, key.getBytes(StandardCharsets.UTF_8));
    }

    public static <K, V> Filter pull(StatefulRedisConnection<K, V> connection, byte[] key) {
        return Pull.pull(new Wire<>(connection), key, Filter.class);
    }

    /** {@link #pull(StatefulRedisConnection, String)} of a Bloom filter (else WRONGTYPE). */
    public static <K, V> BloomFilter pullBloom(StatefulRedisConnection<K, V> connection,
            String key) {
        return pullBloom(connection, key.getBytes(StandardCharsets.UTF_8));
    }

    public static <K, V> BloomFilter pullBloom(StatefulRedisConnection<K, V> connection,
            byte[] key) {
        return Pull.pull(new Wire<>(connection), key, BloomFilter.class);
    }

    /** {@link #pull(StatefulRedisConnection, String)} of a cuckoo filter (else WRONGTYPE). */
    public static <K, V> CuckooFilter pullCuckoo(StatefulRedisConnection<K, V> connection,
            String key) {
        return pullCuckoo(connection, key.getBytes(StandardCharsets.UTF_8));
    }

    public static <K, V> CuckooFilter pullCuckoo(StatefulRedisConnection<K, V> connection,
            byte[] key) {
        return Pull.pull(new Wire<>(connection), key, CuckooFilter.class);
    }

    /**
     * The pull from a Redis Cluster, on the cluster connection's connection to the primary
     * serving the key's slot.
     */
    public static <K, V> Filter pull(StatefulRedisClusterConnection<K, V> cluster, String key) {
        return pull(cluster, key.getBytes(StandardCharsets.UTF_8));
    }

    public static <K, V> Filter pull(StatefulRedisClusterConnection<K, V> cluster, byte[] key) {
        return pull(primary(cluster, key), key);
    }

    public static <K, V> BloomFilter pullBloom(StatefulRedisClusterConnection<K, V> cluster,
            String key) {
        return pullBloom(cluster, key.getBytes(StandardCharsets.UTF_8));
    }

    public static <K, V> BloomFilter pullBloom(StatefulRedisClusterConnection<K, V> cluster,
            byte[] key) {
        return pullBloom(primary(cluster, key), key);
    }

    public static <K, V> CuckooFilter pullCuckoo(StatefulRedisClusterConnection<K, V> cluster,
            String key) {
        return pullCuckoo(cluster, key.getBytes(StandardCharsets.UTF_8));
    }

    public static <K, V> CuckooFilter pullCuckoo(StatefulRedisClusterConnection<K, V> cluster,
            byte[] key) {
        return pullCuckoo(primary(cluster, key), key);
    }

    /** The cluster connection's connection to the primary serving {@code key}'s slot. */
    private static <K, V> StatefulRedisConnection<K, V> primary(
            StatefulRedisClusterConnection<K, V> cluster, byte[] key) {
        int slot = SlotHash.getSlot(key);
        RedisClusterNode node = cluster.getPartitions().getMasterBySlot(slot);
        if (node == null) {
            throw new FilterException("ERR no primary serves slot " + slot);
        }
        return cluster.getConnection(node.getNodeId());
    }

    /** The wire over a Lettuce connection (tests wrap it). */
    static <K, V> Push.Wire wire(StatefulRedisConnection<K, V> connection) {
        return new Wire<>(connection);
    }

    static ProtocolKeyword keyword(byte[] name) {
        String s = new String(name, StandardCharsets.UTF_8);
        return new ProtocolKeyword() {
            @Override
            public byte[] getBytes() {
                return name;
            }

            @Override
            public String toString() {
                return s;
            }
        };
    }

    /**
     * A reply of the commands push sends: an integer, a status (a String), a bulk string (bytes)
     * or an array of those (flattened).
     */
    static final class Reply<K, V> extends CommandOutput<K, V, Object> {
        private List<Object> list;

        Reply(RedisCodec<K, V> codec) {
            super(codec, null);
        }

        private void put(Object v) {
            if (list != null) {
                list.add(v);
            } else {
                output = v;
            }
        }

        @Override
        public void set(long v) {
            put(v);
        }

        @Override
        public void set(boolean v) {
            put(v);
        }

        @Override
        public void set(double v) {
            put(v);
        }

        @Override
        public void set(ByteBuffer b) {
            if (b == null) {
                put(null);
                return;
            }
            byte[] out = new byte[b.remaining()];
            b.get(out);
            put(out);
        }

        @Override
        public void setSingle(ByteBuffer b) {
            put(b == null ? null : StandardCharsets.UTF_8.decode(b).toString());
        }

        @Override
        public void multi(int count) {
            if (list == null) {
                list = new ArrayList<>();
                output = list;
            }
        }
    }

    private static final class Wire<K, V> implements Push.Wire {
        private final RedisCommands<K, V> sync;
        private final RedisAsyncCommands<K, V> async;
        private final RedisCodec<K, V> codec;

        @SuppressWarnings("unchecked")
        Wire(StatefulRedisConnection<K, V> connection) {
            this.sync = connection.sync();
            this.async = connection.async();
            // Every argument is added as raw bytes and every reply read as bytes, whatever the
            // connection's codec.
            this.codec = (RedisCodec<K, V>) (RedisCodec<?, ?>) ByteArrayCodec.INSTANCE;
        }

        private CommandArgs<K, V> args(byte[][] c) {
            CommandArgs<K, V> a = new CommandArgs<>(codec);
            for (int i = 1; i < c.length; i++) {
                a.add(c[i]);
            }
            return a;
        }

        @Override
        public Object call(byte[]... c) {
            return sync.dispatch(keyword(c[0]), new Reply<>(codec), args(c));
        }

        @Override
        public long config(String name) {
            try {
                return Push.number(sync.configGet(name).get(name));
            } catch (RuntimeException e) {
                return -1;
            }
        }

        @Override
        public void pipeline(List<byte[][]> commands) {
            List<RedisFuture<Object>> fs = new ArrayList<>();
            for (byte[][] c : commands) {
                fs.add(async.dispatch(keyword(c[0]), new Reply<>(codec), args(c)));
            }
            for (RedisFuture<Object> f : fs) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    throw new FilterException("ERR " + e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new FilterException("ERR interrupted while pushing");
                }
            }
        }

        @Override
        public List<Object> transaction(byte[] watch, Runnable check, List<byte[][]> commands) {
            if (watch != null) {
                call(Push.cmd("WATCH", watch));
                try {
                    check.run();
                } catch (RuntimeException e) {
                    try {
                        call(Push.cmd("UNWATCH"));
                    } catch (RuntimeException ignored) {
                        // The refusal is what the caller needs to see.
                    }
                    throw e;
                }
            }
            sync.multi();
            try {
                for (byte[][] c : commands) {
                    sync.dispatch(keyword(c[0]), new Reply<>(codec), args(c));
                }
            } catch (RuntimeException e) {
                sync.discard();
                throw e;
            }
            TransactionResult r = sync.exec();
            if (r == null || r.wasDiscarded()) {
                return null; // the watched key changed
            }
            List<Object> out = new ArrayList<>();
            r.forEach(out::add);
            return JedisTransfer.checked(out);
        }
    }
}
