package io.ferrobloom.examples;

import io.ferrobloom.BloomFilter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;

/**
 * A service that answers "seen before?" in-process from the day's snapshot (the file the batch
 * job saved, shipped to each instance), without a round trip per question; it swaps in a new
 * snapshot when the file changes. Lookups may run on any number of threads at once.
 */
public final class SeenService implements AutoCloseable {
    private final Path snapshot;
    private volatile BloomFilter filter;
    private FileTime loaded;

    public SeenService(Path snapshot) throws IOException {
        this.snapshot = snapshot;
        reloadIfChanged();
    }

    /** Loads the snapshot again if the file changed since; true if it did. */
    public synchronized boolean reloadIfChanged() throws IOException {
        FileTime t = Files.getLastModifiedTime(snapshot);
        if (t.equals(loaded)) {
            return false;
        }
        BloomFilter old = filter;
        filter = BloomFilter.load(snapshot);
        loaded = t;
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
