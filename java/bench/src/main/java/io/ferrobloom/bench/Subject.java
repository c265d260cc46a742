package io.ferrobloom.bench;

import com.google.common.hash.Funnels;
import io.ferrobloom.BloomFilter;
import io.ferrobloom.BloomLayout;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/**
 * One library's filter of {@code n} items at 1% and its calls. Each call method takes
 * {@code count} items of a chunk and returns how many answered true (the harness sums them, so
 * no call can be optimized away).
 */
abstract class Subject implements AutoCloseable {
    abstract long put(byte[][] chunk, int count);

    abstract long contains(byte[][] chunk, int count);

    /** The filter's bits, in bytes, as the library holds them. */
    abstract long bytes();

    @Override
    public abstract void close();

    /** A library under test: its name, and whether it has calls on many items at once. */
    interface Kind {
        String name();

        boolean hasBatch();

        Subject create(long n, boolean batch);
    }

    /** ferrobloom's {@code BloomFilter}, non-scaling, of a layout. */
    static final class Ferro extends Subject {
        private final BloomFilter f;
        private final boolean batch;

        Ferro(long n, BloomLayout layout, boolean batch) {
            this.f = BloomFilter.builder().capacity(n).errorRate(0.01).nonScaling()
                    .layout(layout).build();
            this.batch = batch;
        }

        static Kind kind(BloomLayout layout) {
            return new Kind() {
                @Override
                public String name() {
                    return "ferrobloom " + layout.wireName();
                }

                @Override
                public boolean hasBatch() {
                    return true;
                }

                @Override
                public Subject create(long n, boolean batch) {
                    return new Ferro(n, layout, batch);
                }
            };
        }

        @Override
        long put(byte[][] chunk, int count) {
            long t = 0;
            if (batch) {
                // The chunk arrays are exactly `count` long (Harness sizes the last one).
                for (boolean b : f.putAll(chunk)) {
                    t += b ? 1 : 0;
                }
            } else {
                for (int j = 0; j < count; j++) {
                    t += f.put(chunk[j]) ? 1 : 0;
                }
            }
            return t;
        }

        @Override
        long contains(byte[][] chunk, int count) {
            long t = 0;
            if (batch) {
                for (boolean b : f.mightContainAll(chunk)) {
                    t += b ? 1 : 0;
                }
            } else {
                for (int j = 0; j < count; j++) {
                    t += f.mightContain(chunk[j]) ? 1 : 0;
                }
            }
            return t;
        }

        @Override
        long bytes() {
            return f.info().size();
        }

        @Override
        public void close() {
            f.close();
        }
    }

    /**
     * Guava's {@code com.google.common.hash.BloomFilter} over {@code Funnels.byteArrayFunnel()}
     * (no call on many items: its batches are a loop of one-item calls).
     */
    static final class Guava extends Subject {
        private com.google.common.hash.BloomFilter<byte[]> f;

        Guava(long n) {
            f = com.google.common.hash.BloomFilter.create(Funnels.byteArrayFunnel(), n, 0.01);
        }

        static final Kind KIND = new Kind() {
            @Override
            public String name() {
                return "Guava " + guavaVersion();
            }

            @Override
            public boolean hasBatch() {
                return false;
            }

            @Override
            public Subject create(long n, boolean batch) {
                return new Guava(n);
            }
        };

        static String guavaVersion() {
            return Args.version("com.google.guava", "guava");
        }

        @Override
        long put(byte[][] chunk, int count) {
            long t = 0;
            for (int j = 0; j < count; j++) {
                t += f.put(chunk[j]) ? 1 : 0;
            }
            return t;
        }

        @Override
        long contains(byte[][] chunk, int count) {
            long t = 0;
            for (int j = 0; j < count; j++) {
                t += f.mightContain(chunk[j]) ? 1 : 0;
            }
            return t;
        }

        /**
         * The bit array's bytes: the length of {@code writeTo}'s output less its 6-byte header
         * (strategy, hash count, word count), i.e. 8 bytes per word of the array.
         */
        @Override
        long bytes() {
            long[] n = {0};
            try {
                f.writeTo(new OutputStream() {
                    @Override
                    public void write(int b) {
                        n[0]++;
                    }

                    @Override
                    public void write(byte[] b, int off, int len) {
                        n[0] += len;
                    }
                });
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return n[0] - 6;
        }

        @Override
        public void close() {
            f = null;
        }
    }
}
