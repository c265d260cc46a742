package io.ferrobloom;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * Items as a Redis client sends them, so that a local filter and the server agree on every item
 * a Java client sends: {@code byte[]} as it is, a {@link CharSequence} as UTF-8 (what Jedis'
 * {@code SafeEncoder} and Lettuce's {@code StringCodec.UTF8} send), an integer ({@link Long},
 * {@link Integer}, {@link Short}, {@link Byte}) as its decimal text (Jedis' {@code
 * Protocol.toByteArray(long)}). Other types are refused: a client sends them only after a
 * conversion the library cannot guess.
 *
 * <p>{@link Batch} packs many items into one array for one native call.
 */
final class Items {
    private Items() {}

    static byte[] of(byte[] item) {
        return Objects.requireNonNull(item, "item");
    }

    static byte[] of(CharSequence item) {
        return Objects.requireNonNull(item, "item").toString().getBytes(StandardCharsets.UTF_8);
    }

    static byte[] of(long item) {
        return Long.toString(item).getBytes(StandardCharsets.US_ASCII);
    }

    /** Throws what {@link #of(Object)} would throw for {@code item}, without encoding it. */
    static void check(Object item) {
        if (item instanceof byte[] || item instanceof CharSequence || item instanceof Long
                || item instanceof Integer || item instanceof Short || item instanceof Byte) {
            return;
        }
        of(item);
    }

    static byte[] of(Object item) {
        if (item instanceof byte[] b) {
            return b;
        }
        if (item instanceof CharSequence s) {
            return of(s);
        }
        if (item instanceof Long || item instanceof Integer || item instanceof Short
                || item instanceof Byte) {
            return of(((Number) item).longValue());
        }
        if (item == null) {
            throw new NullPointerException("item");
        }
        throw new IllegalArgumentException("unsupported item type " + item.getClass().getName()
                + ": items are byte[], CharSequence (UTF-8) or integers (decimal text)");
    }

    /**
     * Items back to back in one array, and where each ends: at most {@link #MAX_ITEMS} items, and
     * about {@link #MAX_BYTES} bytes unless one item is larger.
     */
    static final class Batch {
        static final int MAX_ITEMS = 1 << 14;
        static final int MAX_BYTES = 1 << 22;

        byte[] buf = new byte[4096];
        int[] ends = new int[64];
        int count;
        int len;

        boolean full() {
            return count == MAX_ITEMS || len >= MAX_BYTES;
        }

        void clear() {
            count = 0;
            len = 0;
        }

        private void room(int n) {
            if (count == ends.length) {
                ends = Arrays.copyOf(ends, Math.min(MAX_ITEMS, ends.length * 2));
            }
            if (buf.length - len < n) {
                long want = Math.max((long) buf.length * 2, (long) len + n);
                if (want > Integer.MAX_VALUE - 8) {
                    throw new IllegalArgumentException("item too large");
                }
                buf = Arrays.copyOf(buf, (int) want);
            }
        }

        private void end() {
            ends[count++] = len;
        }

        void add(byte[] item) {
            Objects.requireNonNull(item, "item");
            room(item.length);
            System.arraycopy(item, 0, buf, len, item.length);
            len += item.length;
            end();
        }

        void add(CharSequence item) {
            Objects.requireNonNull(item, "item");
            int n = item.length();
            room(n);
            // ASCII straight into the buffer; anything else through the JDK's encoder.
            int at = len;
            for (int i = 0; i < n; i++) {
                char c = item.charAt(i);
                if (c >= 0x80) {
                    add(of(item));
                    return;
                }
                buf[at++] = (byte) c;
            }
            len = at;
            end();
        }

        void add(long item) {
            add(of(item));
        }

        void addObject(Object item) {
            if (item instanceof byte[] b) {
                add(b);
            } else if (item instanceof CharSequence s) {
                add(s);
            } else {
                add(of(item));
            }
        }

        /**
         * Adds {@code items[from..]} while the batch has room (as {@link #addObject} one by one
         * until {@link #full}), the arrays grown once for all of them; returns the index of the
         * first item not added.
         */
        int addAll(Object[] items, int from) {
            int end = from;
            long bytes = 0;
            // Until full(): an item goes in while fewer than MAX_ITEMS are in and fewer than
            // MAX_BYTES are used (CharSequence: its length, its UTF-8 size when ASCII).
            while (end < items.length && count + (end - from) < MAX_ITEMS
                    && len + bytes < MAX_BYTES) {
                Object o = items[end++];
                bytes += o instanceof byte[] b ? b.length
                        : o instanceof CharSequence s ? s.length() : 20;
            }
            reserve(end - from, bytes);
            for (int i = from; i < end; i++) {
                addObject(items[i]);
            }
            return end;
        }

        /** Makes room for {@code items} more items of {@code bytes} bytes in all. */
        private void reserve(int items, long bytes) {
            if (ends.length - count < items) {
                ends = Arrays.copyOf(ends, Math.min(MAX_ITEMS, count + items));
            }
            if (buf.length - len < bytes && (long) len + bytes <= Integer.MAX_VALUE - 8) {
                buf = Arrays.copyOf(buf, (int) (len + bytes));
            }
        }
    }
}
