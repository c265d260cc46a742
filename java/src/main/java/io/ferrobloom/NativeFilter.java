package io.ferrobloom;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * A native filter's handle and lifetime, and the batch machinery both kinds use.
 *
 * <p>{@link #close()} frees the filter's memory at once; any later call is refused with
 * IllegalStateException, by the native side under the filter's lock, so a close racing with
 * calls on other threads is safe. The small native box that holds the (now empty) filter is
 * freed by a {@link Cleaner} once the object is unreachable, which also frees the whole filter
 * of an object that was never closed. Every method keeps {@code this} reachable until its native
 * call returned ({@link Reference#reachabilityFence}).
 *
 * <p>Thread-safety: every method may be called from any thread. Lookups ({@code mightContain},
 * {@code count}, dumps, files) run concurrently with each other; writes ({@code put}, {@code
 * add}, {@code delete}, merges) run alone, one at a time. A batch is split into native calls of
 * at most {@value Items.Batch#MAX_ITEMS} items: other threads' calls may run between them.
 */
abstract class NativeFilter {
    final int nativeKind;
    final long handle;
    private volatile boolean closed;

    NativeFilter(int nativeKind, long handle) {
        if (handle == 0) {
            throw new IllegalStateException("no native filter");
        }
        this.nativeKind = nativeKind;
        this.handle = handle;
        Native.CLEANER.register(this, new Free(nativeKind, handle));
    }

    /** Frees the native box; holds no reference to the filter object. */
    private record Free(int kind, long handle) implements Runnable {
        @Override
        public void run() {
            Native.free(kind, handle);
        }
    }

    static Filter wrap(int kind, long h) {
        return kind == Native.BLOOM ? new BloomFilter(h) : new CuckooFilter(h);
    }

    public String kind() {
        return nativeKind == Native.BLOOM ? "BF" : "CF";
    }

    public void close() {
        closed = true;
        try {
            Native.close(nativeKind, handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public boolean isClosed() {
        return closed;
    }

    public byte[] toBytes() {
        try {
            return Native.toBytes(nativeKind, handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public void writeTo(OutputStream out) throws IOException {
        Objects.requireNonNull(out, "out");
        try {
            Native.writeTo(nativeKind, handle, out);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public void save(Path path) throws IOException {
        Path abs = path.toAbsolutePath();
        Path dir = abs.getParent();
        Path tmp = Files.createTempFile(dir, "." + abs.getFileName(), ".tmp");
        try {
            try (OutputStream out = Files.newOutputStream(tmp)) {
                writeTo(out);
            }
            Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    public Chunk scandump(long iterator) {
        long[] next = new long[1];
        try {
            byte[] data = Native.scandump(nativeKind, handle, iterator, next);
            return new Chunk(next[0], data);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public List<Chunk> chunks() {
        List<Chunk> out = new ArrayList<>();
        Chunk c = scandump(0);
        while (!c.isEnd()) {
            out.add(c);
            c = scandump(c.iterator());
        }
        return out;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + (closed ? "(closed)" : "");
    }

    // Reading files and chunks (kind 0: either).

    static Filter fromBytes(int kind, byte[] data) {
        Objects.requireNonNull(data, "data");
        int[] k = new int[1];
        long h = Native.fromBytes(kind, data, k);
        return wrap(k[0], h);
    }

    static Filter readFrom(int kind, InputStream in, long length) throws IOException {
        Objects.requireNonNull(in, "in");
        int[] k = new int[1];
        long h = readNative(kind, in, length, k);
        return wrap(k[0], h);
    }

    /** The native reader, which may throw the stream's IOException. */
    private static long readNative(int kind, InputStream in, long length, int[] k)
            throws IOException {
        return Native.readFrom(kind, in, length, k);
    }

    static Filter load(int kind, Path path) throws IOException {
        try (InputStream in = Files.newInputStream(path)) {
            return readFrom(kind, in, Files.size(path));
        }
    }

    /** A filter of either kind from a server's {@code DUMP} reply of a filter key. */
    static Filter fromDump(byte[] payload) {
        Objects.requireNonNull(payload, "payload");
        int[] k = new int[1];
        long h = Native.fromDump(payload, k);
        return wrap(k[0], h);
    }

    static long fromChunks(int kind, List<Chunk> chunks) {
        Objects.requireNonNull(chunks, "chunks");
        long[] iters = new long[chunks.size()];
        byte[][] datas = new byte[chunks.size()][];
        for (int i = 0; i < iters.length; i++) {
            Chunk c = Objects.requireNonNull(chunks.get(i), "chunk");
            iters[i] = c.iterator();
            datas[i] = Objects.requireNonNull(c.data(), "chunk data");
        }
        return Native.fromChunks(kind, iters, datas);
    }

    // Batches.

    /** Fills a batch from a source of items; false when the source is exhausted. */
    interface Source {
        boolean fill(Items.Batch b);
    }

    /** Takes one native call's batch; false to stop. */
    interface Sink {
        boolean accept(Items.Batch b);
    }

    static Source source(byte[][] items) {
        check(Objects.requireNonNull(items, "items"));
        int[] i = {0};
        return b -> {
            while (i[0] < items.length && !b.full()) {
                b.add(items[i[0]++]);
            }
            return i[0] < items.length;
        };
    }

    static Source source(CharSequence[] items) {
        check(Objects.requireNonNull(items, "items"));
        int[] i = {0};
        return b -> {
            while (i[0] < items.length && !b.full()) {
                b.add(items[i[0]++]);
            }
            return i[0] < items.length;
        };
    }

    static Source source(long[] items) {
        Objects.requireNonNull(items, "items");
        int[] i = {0};
        return b -> {
            while (i[0] < items.length && !b.full()) {
                b.add(items[i[0]++]);
            }
            return i[0] < items.length;
        };
    }

    /**
     * A collection's elements are checked first (see {@link #check}); a mere Iterable is read
     * once, so an element it yields late that cannot be encoded throws after the batches before
     * it (of at most {@value Items.Batch#MAX_ITEMS} items each) were sent.
     */
    static Source source(Iterable<?> items) {
        Objects.requireNonNull(items, "items");
        if (items instanceof java.util.Collection<?> c) {
            for (Object o : c) {
                Items.check(o);
            }
        }
        Iterator<?> it = items.iterator();
        return b -> {
            while (it.hasNext() && !b.full()) {
                b.addObject(it.next());
            }
            return it.hasNext();
        };
    }

    /**
     * Feeds the source's items to {@code sink} one batch at a time, encoding each batch just
     * before its native call (memory bounded by one batch, whatever the number of items).
     */
    static void run(Source src, Sink sink) {
        Items.Batch b = new Items.Batch();
        boolean more = true;
        while (more) {
            b.clear();
            more = src.fill(b);
            if (b.count > 0 && !sink.accept(b)) {
                return;
            }
        }
    }

    /**
     * Checks every element before anything is sent (arrays and collections): a null or an item
     * of an unsupported type refuses the whole batch and the filter is unchanged, as the server
     * refuses a malformed command before running it.
     */
    static void check(Object[] items) {
        for (Object o : items) {
            Items.check(o);
        }
    }

    /** A growable byte list (a batch's per-item codes). */
    static final class Codes {
        byte[] v = new byte[64];
        int n;

        void add(byte[] r) {
            if (v.length - n < r.length) {
                v = Arrays.copyOf(v, Math.max(v.length * 2, n + r.length));
            }
            System.arraycopy(r, 0, v, n, r.length);
            n += r.length;
        }
    }

    /** A growable boolean list. */
    static final class Booleans {
        boolean[] v = new boolean[64];
        int n;

        void add(boolean[] r) {
            if (v.length - n < r.length) {
                v = Arrays.copyOf(v, Math.max(v.length * 2, n + r.length));
            }
            System.arraycopy(r, 0, v, n, r.length);
            n += r.length;
        }

        boolean[] get() {
            return Arrays.copyOf(v, n);
        }
    }
}
