package io.ferrobloom;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalDouble;

/**
 * A cuckoo filter in-process, bit for bit the server's {@code CF.*} filter (ferrobloom's layout
 * or RedisBloom's): items can be deleted and counted.
 *
 * <p>Created from {@code CF.RESERVE}'s arguments by the server's own code (its defaults, limits
 * and error texts). Items are encoded as in {@link BloomFilter}. Thread-safety: lookups run
 * concurrently, writes one at a time.
 */
public final class CuckooFilter extends NativeFilter implements Filter {

    CuckooFilter(long handle) {
        super(Native.CUCKOO, handle);
    }

    /** {@code CF.RESERVE key capacity}: bucket size 2, 20 iterations, expansion 1. */
    public static CuckooFilter create(long capacity) {
        return builder().capacity(capacity).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * {@code CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e] [ERROR
     * rate] [LAYOUT l]}: an option left unset is not sent, so the server's default applies.
     */
    public static final class Builder {
        private Long capacity;
        private Long bucketSize;
        private Long maxIterations;
        private Long expansion;
        private Double errorRate;
        private CuckooLayout layout;

        private Builder() {}

        /** Items the filter holds (required; at least twice the bucket size). */
        public Builder capacity(long capacity) {
            this.capacity = capacity;
            return this;
        }

        /** Fingerprints per bucket, 1 to 255 (default 2). */
        public Builder bucketSize(long bucketSize) {
            this.bucketSize = bucketSize;
            return this;
        }

        /** Relocations tried before growing or refusing (default 20). */
        public Builder maxIterations(long maxIterations) {
            this.maxIterations = maxIterations;
            return this;
        }

        /** The growth factor of each new sub-filter (default 1; 0: never grows). */
        public Builder expansion(long expansion) {
            this.expansion = expansion;
            return this;
        }

        /** The false-positive rate the fingerprint width is chosen for (ferrobloom's layout). */
        public Builder errorRate(double errorRate) {
            this.errorRate = errorRate;
            return this;
        }

        public Builder layout(CuckooLayout layout) {
            this.layout = Objects.requireNonNull(layout, "layout");
            return this;
        }

        byte[][] args() {
            if (capacity == null) {
                throw new IllegalStateException("capacity is required");
            }
            List<String> a = new ArrayList<>();
            a.add(Long.toString(capacity));
            if (bucketSize != null) {
                a.add("BUCKETSIZE");
                a.add(Long.toString(bucketSize));
            }
            if (maxIterations != null) {
                a.add("MAXITERATIONS");
                a.add(Long.toString(maxIterations));
            }
            if (expansion != null) {
                a.add("EXPANSION");
                a.add(Long.toString(expansion));
            }
            if (errorRate != null) {
                a.add("ERROR");
                a.add(Double.toString(errorRate));
            }
            if (layout != null) {
                a.add("LAYOUT");
                a.add(layout.wireName());
            }
            byte[][] out = new byte[a.size()][];
            for (int i = 0; i < out.length; i++) {
                out[i] = a.get(i).getBytes(StandardCharsets.UTF_8);
            }
            return out;
        }

        public CuckooFilter build() {
            return new CuckooFilter(Native.reserve(Native.CUCKOO, args()));
        }
    }

    // Adding and deleting.

    private boolean add(byte[] item, boolean nx) {
        try {
            return Native.cfAdd(handle, Items.of(item), nx);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@code CF.ADD}: adds the item (again, if present); no room throws FilterException. */
    public boolean add(byte[] item) {
        return add(item, false);
    }

    public boolean add(CharSequence item) {
        return add(Items.of(item), false);
    }

    public boolean add(long item) {
        return add(Items.of(item), false);
    }

    /** {@code CF.ADDNX}: true if added, false if the item may be present already. */
    public boolean addIfAbsent(byte[] item) {
        return add(item, true);
    }

    public boolean addIfAbsent(CharSequence item) {
        return add(Items.of(item), true);
    }

    public boolean addIfAbsent(long item) {
        return add(Items.of(item), true);
    }

    /**
     * {@code CF.INSERT}'s reply (RESP2): per item 1 added, -1 no room (the other items are still
     * inserted).
     */
    public int[] insert(Iterable<?> items) {
        return reply(insertCodes(source(items), false));
    }

    public int[] insert(byte[][] items) {
        return reply(insertCodes(source(items), false));
    }

    /** {@code CF.INSERTNX}'s reply: per item 1 added, 0 may be present already, -1 no room. */
    public int[] insertNx(Iterable<?> items) {
        return reply(insertCodes(source(items), true));
    }

    public int[] insertNx(byte[][] items) {
        return reply(insertCodes(source(items), true));
    }

    /**
     * {@code CF.INSERT} of every item; if any found no room, throws {@link BatchException} with
     * the server's text and the whole reply (the other items were inserted).
     */
    public void addAll(Iterable<?> items) {
        checked(insertCodes(source(items), false));
    }

    public void addAll(byte[][] items) {
        checked(insertCodes(source(items), false));
    }

    public void addAll(CharSequence[] items) {
        checked(insertCodes(source(items), false));
    }

    public void addAll(long[] items) {
        checked(insertCodes(source(items), false));
    }

    private Codes insertCodes(Source src, boolean nx) {
        Codes codes = new Codes(src);
        try {
            run(src, b -> {
                codes.add(Native.cfInsert(handle, b.buf, b.ends, b.count, nx));
                return true;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
        return codes;
    }

    private static int[] reply(Codes codes) {
        int[] out = new int[codes.n];
        for (int i = 0; i < codes.n; i++) {
            byte c = codes.v[i];
            out[i] = c >= 2 ? -1 : c;
        }
        return out;
    }

    private void checked(Codes codes) {
        codes.throwIfRefused(nativeKind);
    }

    /** {@code CF.DEL}: removes one copy of the item; false if it is not found. */
    public boolean delete(byte[] item) {
        try {
            return Native.cfDelete(handle, Items.of(item));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public boolean delete(CharSequence item) {
        return delete(Items.of(item));
    }

    public boolean delete(long item) {
        return delete(Items.of(item));
    }

    // Looking up.

    /** {@code CF.EXISTS}. */
    @Override
    public boolean mightContain(byte[] item) {
        try {
            return Native.cfContains(handle, Items.of(item));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    boolean[] containsAll(Source src) {
        Booleans out = new Booleans(src);
        try {
            run(src, b -> {
                out.add(Native.cfContainsAll(handle, b.buf, b.ends, b.count));
                return true;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
        return out.get();
    }

    /** {@code CF.COUNT}: how many times the item's fingerprint is stored (an upper bound). */
    public long count(byte[] item) {
        try {
            return Native.cfCount(handle, Items.of(item));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public long count(CharSequence item) {
        return count(Items.of(item));
    }

    public long count(long item) {
        return count(Items.of(item));
    }

    // What the filter is.

    /** {@code CF.INFO}'s eight fields. */
    public CuckooInfo info() {
        long[] v = infoFields();
        return new CuckooInfo(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    }

    /** Items inserted minus items deleted. */
    @Override
    public long cardinality() {
        return infoFields()[3];
    }

    public CuckooLayout layout() {
        return infoFields()[9] == 1 ? CuckooLayout.REDISBLOOM : CuckooLayout.FERROBLOOM;
    }

    /** Fingerprint width in bits. */
    public int fingerprintBits() {
        return (int) infoFields()[8];
    }

    /** The error rate given at creation; empty when none was (8-bit fingerprints). */
    public OptionalDouble errorRate() {
        double r = nativeErrorRate();
        return Double.isNaN(r) ? OptionalDouble.empty() : OptionalDouble.of(r);
    }

    /** A deep copy. */
    public CuckooFilter copy() {
        return new CuckooFilter(copyHandle());
    }

    /**
     * Throws FilterException, with the server's text, when a server with these limits ({@code
     * bf.max-filter-memory} bytes, {@code bf.cf-max-expansions}; negative: the default) would
     * refuse this filter.
     */
    public void checkLimits(long maxBytes, int maxFilters) {
        checkNativeLimits(maxBytes, maxFilters);
    }

    // Files and chunks.

    /** Reads a cuckoo filter's file (a Bloom filter's is refused with FormatException). */
    public static CuckooFilter fromBytes(byte[] data) {
        return (CuckooFilter) NativeFilter.fromBytes(Native.CUCKOO, data);
    }

    public static CuckooFilter readFrom(InputStream in) throws IOException {
        return (CuckooFilter) NativeFilter.readFrom(Native.CUCKOO, in, -1);
    }

    public static CuckooFilter load(Path path) throws IOException {
        return (CuckooFilter) NativeFilter.load(Native.CUCKOO, path);
    }

    /** Rebuilds a filter from its SCANDUMP replies in order ({@code CF.LOADCHUNK}). */
    public static CuckooFilter fromChunks(List<Chunk> chunks) {
        return new CuckooFilter(NativeFilter.fromChunks(Native.CUCKOO, chunks));
    }

    @Override
    String describe() {
        CuckooInfo i = info();
        return "buckets=" + i.numberOfBuckets() + ", bucketSize=" + i.bucketSize()
                + ", filters=" + i.numberOfFilters() + ", layout=" + layout().wireName()
                + ", items=" + i.numberOfItemsInserted();
    }
}
