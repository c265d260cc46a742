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
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A native filter's handle and lifetime, and what both kinds share: their native calls on the
 * kind code ({@link Native}'s kind-generic calls), files and chunks, lookups of every item type,
 * and the batch machinery.
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

    /** The filter's parameters and items, for {@link #toString()}. */
    abstract String describe();

    @Override
    public final String toString() {
        return getClass().getSimpleName() + "(" + (closed ? "closed" : describe()) + ")";
    }

    // Calls both kinds make on their kind code.

    /** A deep copy's handle. */
    final long copyHandle() {
        try {
            return Native.copy(nativeKind, handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@code INFO}'s fields, then the kind's own ({@link Native#info}). */
    final long[] infoFields() {
        try {
            return Native.info(nativeKind, handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The error rate the filter was created with (NaN: none). */
    final double nativeErrorRate() {
        try {
            return Native.errorRate(nativeKind, handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Refused with the server's text when a server with these limits would refuse it. */
    final void checkNativeLimits(long maxBytes, int maxParts) {
        try {
            Native.checkLimits(nativeKind, handle, maxBytes, maxParts);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    // Looking up: every item type, on the kind's byte[] lookup and batch call.

    /** {@code BF.EXISTS} / {@code CF.EXISTS}: whether the item may have been added. */
    public abstract boolean mightContain(byte[] item);

    /** {@link #mightContain(byte[])} of the item's UTF-8 bytes. */
    public boolean mightContain(CharSequence item) {
        return mightContain(Items.of(item));
    }

    /** {@link #mightContain(byte[])} of the item's decimal text. */
    public boolean mightContain(long item) {
        return mightContain(Items.of(item));
    }

    /** The answers of one lookup per item, one native call per batch. */
    abstract boolean[] containsAll(Source src);

    /** {@code BF.MEXISTS} / {@code CF.MEXISTS}: per item whether it may have been added. */
    public boolean[] mightContainAll(byte[][] items) {
        return containsAll(source(items));
    }

    public boolean[] mightContainAll(CharSequence[] items) {
        return containsAll(source(items));
    }

    public boolean[] mightContainAll(long[] items) {
        return containsAll(source(items));
    }

    /** Of any items ({@code byte[]}, CharSequence, integers, mixed). */
    public boolean[] mightContainAll(Iterable<?> items) {
        return containsAll(source(items));
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

    /** An INFO reply's fields as an unmodifiable map in the server's order: name, value, ... */
    static Map<String, Object> fields(Object... namesAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < namesAndValues.length; i += 2) {
            m.put((String) namesAndValues[i], namesAndValues[i + 1]);
        }
        return Collections.unmodifiableMap(m);
    }

    // Batches.

    /** Fills a batch from a source of items; false when the source is exhausted. */
    interface Source {
        boolean fill(Items.Batch b);

        /** How many items the source holds, or -1 when it cannot tell (sizes the reply once). */
        default int size() {
            return -1;
        }
    }

    /** Takes one native call's batch; false to stop. */
    interface Sink {
        boolean accept(Items.Batch b);
    }

    /**
     * An array of {@code byte[]} or CharSequence items, checked first as a collection's (see
     * {@link #source(Iterable)}), packed a batch at a time into arrays sized once per batch.
     */
    static Source source(Object[] items) {
        Objects.requireNonNull(items, "items");
        for (Object o : items) {
            Items.check(o);
        }
        return new Source() {
            private int next;

            @Override
            public boolean fill(Items.Batch b) {
                next = b.addAll(items, next);
                return next < items.length;
            }

            @Override
            public int size() {
                return items.length;
            }
        };
    }

    static Source source(long[] items) {
        Objects.requireNonNull(items, "items");
        return new Source() {
            private int next;

            @Override
            public boolean fill(Items.Batch b) {
                while (next < items.length && !b.full()) {
                    b.add(items[next++]);
                }
                return next < items.length;
            }

            @Override
            public int size() {
                return items.length;
            }
        };
    }

    /**
     * A collection's (or array's) elements are checked first: a null or an item of an
     * unsupported type refuses the whole batch and the filter is unchanged, as the server refuses
     * a malformed command before running it. A mere Iterable is read once, so an element it yields late that cannot be encoded throws after the batches before
     * it (of at most {@value Items.Batch#MAX_ITEMS} items each) were sent.
     */
    static Source source(Iterable<?> items) {
        Objects.requireNonNull(items, "items");
        if (items instanceof java.util.Collection<?> c) {
            for (Object o : c) {
                Items.check(o);
            }
        }
        int size = items instanceof java.util.Collection<?> c ? c.size() : -1;
        Iterator<?> it = items.iterator();
        return new Source() {
            @Override
            public boolean fill(Items.Batch b) {
                while (it.hasNext() && !b.full()) {
                    b.addObject(it.next());
                }
                return it.hasNext();
            }

            @Override
            public int size() {
                return size;
            }
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

    /** A growable byte list (a batch's per-item codes). */
    static final class Codes {
        byte[] v;
        int n;

        /** For the replies of {@code src}'s items: one array when it knows how many. */
        Codes(Source src) {
            v = new byte[Math.max(src.size(), 64)];
        }

        void add(byte[] r) {
            if (v.length - n < r.length) {
                v = Arrays.copyOf(v, Math.max(v.length * 2, n + r.length));
            }
            System.arraycopy(r, 0, v, n, r.length);
            n += r.length;
        }

        /**
         * Throws what the server's reply says when an item was refused (a code of 2 and up):
         * {@link BatchException} with the first refusal's text and the whole reply, or {@link
         * OutOfMemoryError} when that refusal is the allocator's (code 5).
         */
        void throwIfRefused(int kind) {
            int first = 0;
            while (first < n && v[first] < 2) {
                first++;
            }
            if (first == n) {
                return;
            }
            String[] texts = new String[8];
            List<Object> reply = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                byte c = v[i];
                if (c < 2) {
                    reply.add(c == 1);
                } else {
                    if (texts[c] == null) {
                        texts[c] = Native.insertErrorText(kind, c);
                    }
                    reply.add(new FilterException(texts[c]));
                }
            }
            String text = texts[v[first]];
            if (v[first] == 5) {
                throw new OutOfMemoryError(text);
            }
            throw new BatchException(text, first, reply);
        }
    }

    /** A growable boolean list. */
    static final class Booleans {
        boolean[] v;
        int n;

        /** For the answers of {@code src}'s items: one array when it knows how many. */
        Booleans(Source src) {
            v = new boolean[Math.max(src.size(), 64)];
        }

        void add(boolean[] r) {
            if (v.length - n < r.length) {
                v = Arrays.copyOf(v, Math.max(v.length * 2, n + r.length));
            }
            System.arraycopy(r, 0, v, n, r.length);
            n += r.length;
        }

        boolean[] get() {
            return n == v.length ? v : Arrays.copyOf(v, n);
        }
    }
}
