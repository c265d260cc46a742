package io.ferrobloom.bench;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * The items of every measurement, the same for every library: {@code item-<i>} (UTF-8 bytes) for
 * the items added and looked up as hits, {@code miss-<x>} with {@code x} drawn from a
 * {@link SplittableRandom} of a fixed seed for the never-added items (misses; their share of
 * positives is the measured false-positive rate).
 */
final class Gen {
    static final long MISS_SEED = 0x5eed_f00dL;

    private Gen() {}

    private static final byte[] PREFIX = "item-".getBytes(StandardCharsets.US_ASCII);

    /** {@code item-<i>} for {@code i >= 0}, written digit by digit (no String on the way). */
    static byte[] item(long i) {
        int d = 1;
        for (long v = i; v >= 10; v /= 10) {
            d++;
        }
        byte[] b = new byte[PREFIX.length + d];
        System.arraycopy(PREFIX, 0, b, 0, PREFIX.length);
        long v = i;
        for (int p = b.length - 1; p >= PREFIX.length; p--) {
            b[p] = (byte) ('0' + v % 10);
            v /= 10;
        }
        return b;
    }

    /** Fills {@code out[0..count)} with items {@code first, first+stride, ...}. */
    static void items(byte[][] out, int count, long first, long stride) {
        for (int j = 0; j < count; j++) {
            out[j] = item(first + j * stride);
        }
    }

    /** A source of never-added items, the same sequence for every library. */
    static final class Misses {
        private final SplittableRandom r = new SplittableRandom(MISS_SEED);

        void fill(byte[][] out, int count) {
            for (int j = 0; j < count; j++) {
                out[j] = ("miss-" + Long.toHexString(r.nextLong())).getBytes(StandardCharsets.UTF_8);
            }
        }
    }
}
