package io.ferrobloom.examples;

import io.ferrobloom.BloomFilter;
import io.ferrobloom.JedisTransfer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;

/**
 * A service that answers "seen before?" in-process, without a round trip per question, from the
 * day's filter: pulled from the key the batch job pushed ({@link #fromRedis}), or loaded from the
 * snapshot file it saved and shipped to each instance ({@link #fromSnapshot}). {@link #refresh}
 * swaps in the newer filter. Lookups may run on any number of threads at once.
 */
public final class SeenService implements AutoCloseable {
    private final UnifiedJedis redis;
    private final String key;
    private final Path snapshot;
    private volatile BloomFilter filter;
    private FileTime loaded;

    private SeenService(UnifiedJedis redis, String key, Path snapshot) throws IOException {
        this.redis = redis;
        this.key = key;
        this.snapshot = snapshot;
        refresh();
    }

    /** The filter under {@code key}, pulled: exactly a state the key held. */
    public static SeenService fromRedis(UnifiedJedis redis, String key) throws IOException {
        return new SeenService(redis, key, null);
    }

    /** The filter in the snapshot file. */
    public static SeenService fromSnapshot(Path snapshot) throws IOException {
        return new SeenService(null, null, snapshot);
    }

    /**
     * Pulls the key again, or loads the snapshot again if the file changed since; true if the
     * filter was replaced.
     */
    public synchronized boolean refresh() throws IOException {
        BloomFilter next;
        if (redis != null) {
            next = JedisTransfer.pullBloom(redis, key);
        } else {
            FileTime t = Files.getLastModifiedTime(snapshot);
            if (t.equals(loaded)) {
                return false;
            }
            next = BloomFilter.load(snapshot);
            loaded = t;
        }
        BloomFilter old = filter;
        filter = next;
        if (old != null) {
            old.close(); // a lookup racing with this gets IllegalStateException: retry
        }
        return true;
    }

    public boolean seen(String item) {
        return filter.mightContain(item);
    }

    public boolean[] seen(List<String> items) {
        return filter.mightContainAll(items);
    }

    @Override
    public synchronized void close() {
        filter.close();
    }
}
