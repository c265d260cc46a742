package io.ferrobloom;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Reference;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A Bloom filter in-process, bit for bit the server's {@code BF.*} filter: scalable or not, any
 * layout (ferrobloom's classic, blocked or paired, or RedisBloom's), or windowed.
 *
 * <p>Created from {@code BF.RESERVE}'s arguments by the server's own code, so it has the
 * server's defaults, limits and error texts (a refused parameter throws {@link FilterException}
 * with the server's text). For the same parameters and items in the same order, its dump ({@link
 * #scandump}, {@link #toBytes}) is the server's {@code BF.SCANDUMP} byte for byte.
 *
 * <pre>{@code
 * try (BloomFilter f = BloomFilter.create(1_000_000, 0.01)) {
 *     f.put("alice");
 *     f.mightContain("alice");   // true
 *     boolean[] added = f.putAll(List.of("bob", "carol"));
 * }
 * }</pre>
 *
 * <p>Items are {@code byte[]}, {@link CharSequence} (UTF-8) and integers (their decimal text),
 * as Jedis and Lettuce send them: {@code f.put(7)} and {@code jedis.bfAdd(key, "7")} add the
 * same item. Thread-safety: lookups run concurrently, writes one at a time (see {@link
 * #close()} for closing while other threads call).
 */
public final class BloomFilter extends NativeFilter implements Filter {

    BloomFilter(long handle) {
        super(Native.BLOOM, handle);
    }

    /**
     * {@code BF.RESERVE key errorRate capacity}: a scaling filter (expansion 2, classic layout).
     */
    public static BloomFilter create(long capacity, double errorRate) {
        return builder().capacity(capacity).errorRate(errorRate).build();
    }

    /** {@code BF.RESERVE} with the server's default error rate (0.01). */
    public static BloomFilter create(long capacity) {
        return builder().capacity(capacity).build();
    }

    /** A builder for every {@code BF.RESERVE} option. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * {@code BF.RESERVE key error_rate capacity [EXPANSION e] [NONSCALING] [LAYOUT l]
     * [TIGHTENING t] [SEED s] [VALIDATESCALETO n] [WINDOW seconds]}: an option left unset is not
     * sent, so the server's default applies; the server validates what is set (and refuses
     * combinations it refuses, e.g. {@code NONSCALING} with {@code EXPANSION}: {@code Nonscaling
     * filters cannot expand}).
     */
    public static final class Builder {
        private Long capacity;
        private Double errorRate;
        private Long expansion;
        private boolean nonScaling;
        private BloomLayout layout;
        private Double tightening;
        private byte[] seed;
        private Long validateScaleTo;
        private Duration window;

        private Builder() {}

        /** Items the first sub-filter holds at the error rate (required). */
        public Builder capacity(long capacity) {
            this.capacity = capacity;
            return this;
        }

        /** The false-positive rate, between 0 and 1 exclusive (default 0.01). */
        public Builder errorRate(double errorRate) {
            this.errorRate = errorRate;
            return this;
        }

        /** The growth factor of each new sub-filter (default 2; 0: non-scaling). */
        public Builder expansion(long expansion) {
            this.expansion = expansion;
            return this;
        }

        /** A filter that never grows: adding to a full one is refused. */
        public Builder nonScaling() {
            return nonScaling(true);
        }

        public Builder nonScaling(boolean nonScaling) {
            this.nonScaling = nonScaling;
            return this;
        }

        public Builder layout(BloomLayout layout) {
            this.layout = Objects.requireNonNull(layout, "layout");
            return this;
        }

        /** valkey-bloom's tightening ratio of each new sub-filter's error rate (default 0.5). */
        public Builder tightening(double ratio) {
            this.tightening = ratio;
            return this;
        }

        /** valkey-bloom's 32-byte hash seed. */
        public Builder seed(byte[] seed) {
            this.seed = Objects.requireNonNull(seed, "seed").clone();
            return this;
        }

        /** Refuse a filter that could not grow to {@code items} within the server's limits. */
        public Builder validateScaleTo(long items) {
            this.validateScaleTo = items;
            return this;
        }

        /**
         * A windowed filter: items are forgotten after {@code window} (millisecond precision),
         * docs/windowed.md.
         */
        public Builder window(Duration window) {
            this.window = Objects.requireNonNull(window, "window");
            return this;
        }

        /** The arguments after the key, as a client sends them. */
        byte[][] args() {
            if (capacity == null) {
                throw new IllegalStateException("capacity is required");
            }
            List<String> a = new ArrayList<>();
            double rate = errorRate != null ? errorRate : Native.bfDefaultErrorRate();
            a.add(Double.toString(rate));
            a.add(Long.toString(capacity));
            if (expansion != null) {
                a.add("EXPANSION");
                a.add(Long.toString(expansion));
            }
            if (layout != null) {
                a.add("LAYOUT");
                a.add(layout.wireName());
            }
            if (tightening != null) {
                a.add("TIGHTENING");
                a.add(Double.toString(tightening));
            }
            int seedAt = -1;
            if (seed != null) {
                a.add("SEED");
                seedAt = a.size();
                a.add("");
            }
            if (validateScaleTo != null) {
                a.add("VALIDATESCALETO");
                a.add(Long.toString(validateScaleTo));
            }
            if (window != null) {
                a.add("WINDOW");
                a.add(seconds(window));
            }
            if (nonScaling) {
                a.add("NONSCALING");
            }
            byte[][] out = new byte[a.size()][];
            for (int i = 0; i < out.length; i++) {
                out[i] = i == seedAt ? seed : a.get(i).getBytes(StandardCharsets.UTF_8);
            }
            return out;
        }

        public BloomFilter build() {
            return new BloomFilter(Native.reserve(Native.BLOOM, args()));
        }
    }

    /** A duration as the seconds text {@code WINDOW} takes (exact; the server rounds to ms). */
    static String seconds(Duration d) {
        return new BigDecimal(d.getSeconds())
                .add(BigDecimal.valueOf(d.getNano(), 9))
                .stripTrailingZeros()
                .toPlainString();
    }

    // Adding.

    /** {@code BF.ADD}: true if the item is new; refusals throw FilterException. */
    public boolean put(byte[] item) {
        try {
            return Native.bfAdd(handle, Items.of(item));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@code BF.ADD} of the item's UTF-8 bytes. */
    public boolean put(CharSequence item) {
        return put(Items.of(item));
    }

    /** {@code BF.ADD} of the item's decimal text. */
    public boolean put(long item) {
        return put(Items.of(item));
    }

    /** The same as {@link #put(byte[])}. */
    public boolean add(byte[] item) {
        return put(item);
    }

    public boolean add(CharSequence item) {
        return put(item);
    }

    public boolean add(long item) {
        return put(item);
    }

    /**
     * {@code BF.MADD}: per item whether it is new. If the filter refuses an item, throws {@link
     * BatchException} with the server's text and its whole reply (the items before a {@code non
     * scaling filter is full} were added, and none after it).
     */
    public boolean[] putAll(byte[][] items) {
        return putAll(source(items));
    }

    public boolean[] putAll(CharSequence[] items) {
        return putAll(source(items));
    }

    public boolean[] putAll(long[] items) {
        return putAll(source(items));
    }

    /** {@code BF.MADD} of any items ({@code byte[]}, CharSequence, integers, mixed). */
    public boolean[] putAll(Iterable<?> items) {
        return putAll(source(items));
    }

    public boolean[] addAll(byte[][] items) {
        return putAll(items);
    }

    public boolean[] addAll(CharSequence[] items) {
        return putAll(items);
    }

    public boolean[] addAll(long[] items) {
        return putAll(items);
    }

    public boolean[] addAll(Iterable<?> items) {
        return putAll(items);
    }

    private boolean[] putAll(Source src) {
        Codes codes = new Codes(src);
        try {
            run(src, b -> {
                byte[] r = Native.bfAddAll(handle, b.buf, b.ends, b.count);
                codes.add(r);
                // A reply ends after "full" (code 2), as the server's does.
                return r.length == b.count && (r.length == 0 || r[r.length - 1] != 2);
            });
        } finally {
            Reference.reachabilityFence(this);
        }
        codes.throwIfRefused(nativeKind);
        boolean[] out = new boolean[codes.n];
        for (int i = 0; i < codes.n; i++) {
            out[i] = codes.v[i] == 1;
        }
        return out;
    }

    // Looking up.

    /** {@code BF.EXISTS}: whether the item may have been added (never false for an item added). */
    @Override
    public boolean mightContain(byte[] item) {
        return mightContain(item, -1);
    }

    /** {@code BF.EXISTS} of a windowed filter as of another time than now. */
    public boolean mightContain(byte[] item, Instant asOf) {
        return mightContain(item, millis(asOf));
    }

    public boolean mightContain(CharSequence item, Instant asOf) {
        return mightContain(Items.of(item), millis(asOf));
    }

    public boolean mightContain(long item, Instant asOf) {
        return mightContain(Items.of(item), millis(asOf));
    }

    private boolean mightContain(byte[] item, long atMs) {
        try {
            return Native.bfContains(handle, Items.of(item), atMs);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private static long millis(Instant t) {
        long ms = Objects.requireNonNull(t, "asOf").toEpochMilli();
        return Math.max(ms, 0);
    }

    /** {@code BF.MEXISTS} of a windowed filter as of another time than now. */
    public boolean[] mightContainAll(Iterable<?> items, Instant asOf) {
        return containsAll(source(items), millis(asOf));
    }

    @Override
    boolean[] containsAll(Source src) {
        return containsAll(src, -1);
    }

    private boolean[] containsAll(Source src, long atMs) {
        Booleans out = new Booleans(src);
        try {
            run(src, b -> {
                out.add(Native.bfContainsAll(handle, b.buf, b.ends, b.count, atMs));
                return true;
            });
        } finally {
            Reference.reachabilityFence(this);
        }
        return out.get();
    }

    // What the filter is.

    /** {@code BF.INFO}'s five fields. */
    public BloomInfo info() {
        long[] v = infoFields();
        return new BloomInfo(v[0], v[1], v[2], v[3], v[4] < 0 ? null : v[4]);
    }

    /** {@code BF.CARD}: items added (a windowed filter: within the live window). */
    @Override
    public long cardinality() {
        return infoFields()[3];
    }

    /** {@code BF.INFO key CAPACITY}. */
    public long capacity() {
        return infoFields()[0];
    }

    /** The error rate the filter was created with. */
    public double errorRate() {
        return nativeErrorRate();
    }

    /** The growth factor; empty for a non-scaling filter. */
    public OptionalInt expansion() {
        long e = infoFields()[4];
        return e < 0 ? OptionalInt.empty() : OptionalInt.of((int) e);
    }

    public BloomLayout layout() {
        try {
            return BloomLayout.ofWire(Native.bfLayout(handle));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** A windowed filter's window; empty for other filters. */
    public Optional<Duration> window() {
        long ms = infoFields()[5];
        return ms < 0 ? Optional.empty() : Optional.of(Duration.ofMillis(ms));
    }

    // Combining and copying.

    /**
     * {@code BF.MERGE new n this others...}: a new filter, the union, with {@code BF.MERGE}'s
     * rules (same parameters and hashing) and texts ({@code ERR incompatible filters: source 2
     * differs in ...}).
     */
    public BloomFilter union(BloomFilter... others) {
        long[] hs = new long[others.length + 1];
        hs[0] = handle;
        for (int i = 0; i < others.length; i++) {
            hs[i + 1] = Objects.requireNonNull(others[i], "filter").handle;
        }
        try {
            return new BloomFilter(Native.bfUnion(hs));
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(others);
        }
    }

    /** {@code BF.MERGE this 1 other}: ORs {@code other} into this filter. */
    public void merge(BloomFilter other) {
        Objects.requireNonNull(other, "other");
        try {
            Native.bfMergeInto(handle, other.handle);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(other);
        }
    }

    /** A deep copy. */
    public BloomFilter copy() {
        return new BloomFilter(copyHandle());
    }

    /**
     * Throws FilterException, with the server's text, when a server with these limits ({@code
     * bf.max-filter-memory} bytes, {@code bf.bf-max-links}; negative: the default) would refuse
     * this filter.
     */
    public void checkLimits(long maxBytes, int maxLinks) {
        checkNativeLimits(maxBytes, maxLinks);
    }

    // Files and chunks.

    /** Reads a Bloom filter's file (a cuckoo filter's is refused with FormatException). */
    public static BloomFilter fromBytes(byte[] data) {
        return (BloomFilter) NativeFilter.fromBytes(Native.BLOOM, data);
    }

    /** Reads a Bloom filter's file from a stream (see {@link Filter#readFrom}). */
    public static BloomFilter readFrom(InputStream in) throws IOException {
        return (BloomFilter) NativeFilter.readFrom(Native.BLOOM, in, -1);
    }

    /** Reads a Bloom filter's file (see {@link Filter#load}). */
    public static BloomFilter load(Path path) throws IOException {
        return (BloomFilter) NativeFilter.load(Native.BLOOM, path);
    }

    /**
     * Rebuilds a filter from its SCANDUMP replies in order (what {@code BF.LOADCHUNK} of each
     * into a missing key makes), checking every chunk against the header before allocating.
     */
    public static BloomFilter fromChunks(List<Chunk> chunks) {
        return new BloomFilter(NativeFilter.fromChunks(Native.BLOOM, chunks));
    }

    @Override
    String describe() {
        BloomInfo i = info();
        return "capacity=" + i.capacity() + ", errorRate=" + errorRate()
                + ", expansion=" + i.expansionRate() + ", layout=" + layout().wireName()
                + window().map(w -> ", window=" + w).orElse("")
                + ", items=" + i.numberOfItemsInserted();
    }
}
