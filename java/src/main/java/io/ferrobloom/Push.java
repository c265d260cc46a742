package io.ferrobloom;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Push, written once over a {@link Wire} that each client adapter ({@link JedisTransfer}, ...)
 * implements. The protocol is the Python package's ({@code python/ferrobloom/_server.py}):
 *
 * <ol>
 *   <li>the server's limits ({@code CONFIG GET bf.max-filter-memory}, {@code bf.bf-max-links}
 *       or {@code bf.cf-max-expansions}, where the user may read them) are checked locally, so
 *       a filter the server would refuse is refused before anything is sent, with its text;
 *   <li>without {@code replace}, an existing key is refused ({@code ERR item exists}); with
 *       it, a key of another type than the filter's kind (a string, a filter of the other
 *       kind) is refused with the server's {@code WRONGTYPE} text, checked with {@code TYPE}
 *       before anything is sent and again under {@code WATCH} in the rename's transaction
 *       (step 4), unless {@code force};
 *   <li>the chunks load with {@code LOADCHUNK} into a temporary key in the same Cluster slot
 *       ({@code {<hash tag or key>}:ferrobloom-push:<random>}), which expires after an hour
 *       (set with the header) if the client dies, pipelined up to 64 MiB a round trip;
 *   <li>one transaction removes the TTL and renames the temporary key over the key ({@code
 *       RENAME}, or {@code RENAMENX} without {@code replace}: a key that appeared meanwhile
 *       is refused with {@code ERR item exists}). With {@code replace} and not {@code force}
 *       it is {@code WATCH key}, {@code TYPE key}, {@code MULTI}, ..., {@code EXEC}, so the
 *       type checked is the type replaced: a write to the key after the {@code WATCH} aborts
 *       the {@code EXEC}, and the check runs again, {@value #RENAME_ATTEMPTS} times at most
 *       (then {@link #KEY_CHANGED}).
 * </ol>
 *
 * No reader ever sees a half-loaded filter; a push that fails leaves the key as it was and
 * deletes the temporary key. A server that refuses the header of a filter of ferrobloom's
 * layouts and whose SCANDUMP takes no {@code STAMP} (RedisBloom) gets {@link FilterException}
 * saying to build the filter with RedisBloom's layout, its own refusal in the text and as the
 * cause; when the probe cannot tell, the refusal propagates as it came.
 */
final class Push {
    private Push() {}

    /** A pushed filter's temporary key expires after this long if the client dies. */
    static final int TEMP_TTL_SECONDS = 3600;
    /** LOADCHUNK data per pipeline (four SCANDUMP chunks). */
    static final long PIPELINE_BYTES = 64L << 20;

    private static final SecureRandom RANDOM = new SecureRandom();

    /** What push needs of a client. Server errors propagate as the client throws them. */
    interface Wire {
        /** One command's reply. */
        Object call(byte[]... command);

        /** Sends the commands in one pipeline; throws the first error reply. */
        void pipeline(List<byte[][]> commands);

        /**
         * The commands between MULTI and EXEC, on one connection; their replies (an error
         * reply throws). With {@code watch} not null: {@code WATCH watch} first, then {@code
         * check} (which may throw, and then the key is unwatched and nothing else is sent),
         * then MULTI; null when the EXEC was aborted because the watched key changed.
         * {@code check}'s commands go through {@link #call}, after the WATCH is in place.
         */
        List<Object> transaction(byte[] watch, Runnable check, List<byte[][]> commands);

        /** {@code CONFIG GET name}'s value, or -1 when the server has none or refuses. */
        default long config(String name) {
            return Push.config(this, name);
        }
    }

    static byte[][] cmd(Object... parts) {
        byte[][] out = new byte[parts.length][];
        for (int i = 0; i < parts.length; i++) {
            Object p = parts[i];
            out[i] = p instanceof byte[] b ? b
                    : String.valueOf(p).getBytes(StandardCharsets.UTF_8);
        }
        return out;
    }

    /** The part of {@code key} Redis Cluster hashes (its hash tag), or null. */
    static byte[] hashTag(byte[] key) {
        int s = indexOf(key, (byte) '{', 0);
        if (s < 0) {
            return null;
        }
        int e = indexOf(key, (byte) '}', s + 1);
        if (e <= s + 1) {
            return null;
        }
        return java.util.Arrays.copyOfRange(key, s + 1, e);
    }

    private static int indexOf(byte[] b, byte c, int from) {
        for (int i = from; i < b.length; i++) {
            if (b[i] == c) {
                return i;
            }
        }
        return -1;
    }

    /** CRC16 (XMODEM) of the key's hashed part modulo 16384: Redis Cluster's slot. */
    static int slot(byte[] key) {
        byte[] tag = hashTag(key);
        byte[] k = tag != null ? tag : key;
        int crc = 0;
        for (byte b : k) {
            crc ^= (b & 0xff) << 8;
            for (int i = 0; i < 8; i++) {
                crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
            }
            crc &= 0xffff;
        }
        return crc % 16384;
    }

    /** A fresh key in the same Cluster slot as {@code key} (RENAME needs one). */
    static byte[] tempKey(byte[] key) {
        byte[] nonce = new byte[8];
        RANDOM.nextBytes(nonce);
        String n = HexFormat.of().formatHex(nonce);
        byte[] tag = hashTag(key);
        if (tag != null) {
            return concat("{".getBytes(), tag, ("}:ferrobloom-push:" + n).getBytes());
        }
        if (indexOf(key, (byte) '}', 0) < 0) {
            return concat("{".getBytes(), key, ("}:ferrobloom-push:" + n).getBytes());
        }
        // A key whose braces form no tag: a name of the same slot.
        int want = slot(key);
        for (int i = 0; i < 1 << 20; i++) {
            byte[] c = ("ferrobloom-push:" + n + ":" + i).getBytes(StandardCharsets.US_ASCII);
            if (slot(c) == want) {
                return c;
            }
        }
        throw new FilterException("cannot find a temporary key in the slot of the key");
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /** A module config's value, or -1 when the server has none or refuses to tell. */
    static long config(Wire w, String name) {
        Object r;
        try {
            r = w.call(cmd("CONFIG", "GET", name));
        } catch (RuntimeException e) {
            return -1;
        }
        Object v = null;
        if (r instanceof List<?> l && l.size() >= 2) {
            v = l.get(1);
        } else if (r instanceof Map<?, ?> m && !m.isEmpty()) {
            v = m.values().iterator().next();
        }
        return number(v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : v);
    }

    /** A config value as a number, or -1. */
    static long number(Object v) {
        try {
            return v != null ? Long.parseLong(v.toString()) : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static boolean truthy(Object o) {
        return o instanceof Long l ? l != 0 : o instanceof Boolean b && b;
    }

    /** push with {@code replace} (not {@code force}) onto a key of another type. */
    static final String NOT_REPLACEABLE = Pull.WRONG_TYPE
            + " (push replaces a filter of the same kind only; force=true replaces any key)";

    /** How often push(replace) watches, checks and renames before giving up. */
    static final int RENAME_ATTEMPTS = 3;

    /** push(replace) whose key was written after each of its checks: nothing was replaced. */
    static final String KEY_CHANGED = "ERR the key changed during each of " + RENAME_ATTEMPTS
            + " attempts to replace it; nothing was replaced";

    /**
     * Tests only: runs with the key after the final check (WATCH and TYPE), before MULTI, so a
     * test can write the key from another connection right there.
     */
    static volatile Consumer<byte[]> beforeRename;

    /** RedisBloom's LOADCHUNK texts for a header it cannot read (Bloom, cuckoo). */
    private static final List<String> HEADER_REFUSALS =
            List.of("received bad data", "Invalid header");

    static void push(Wire w, byte[] key, Filter filter, boolean replace) {
        push(w, key, filter, replace, false);
    }

    static void push(Wire w, byte[] key, Filter filter, boolean replace, boolean force) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(filter, "filter");
        String kind = filter.kind();
        long maxBytes = w.config("bf.max-filter-memory");
        if (filter instanceof BloomFilter b) {
            b.checkLimits(maxBytes, (int) Math.min(Integer.MAX_VALUE,
                    w.config("bf.bf-max-links")));
        } else {
            ((CuckooFilter) filter).checkLimits(maxBytes, (int) Math.min(Integer.MAX_VALUE,
                    w.config("bf.cf-max-expansions")));
        }
        if (!replace && truthy(w.call(cmd("EXISTS", key)))) {
            throw new FilterException("ERR item exists");
        }
        if (replace && !force) {
            checkReplaceable(w, key, kind);
        }
        byte[] tmp = tempKey(key);
        byte[] loadchunk = (kind + ".LOADCHUNK").getBytes(StandardCharsets.US_ASCII);
        boolean done = false;
        try {
            w.call(cmd("DEL", tmp));
            List<byte[][]> batch = new ArrayList<>();
            long queued = 0;
            long it = 0;
            boolean first = true;
            while (true) {
                Chunk c = filter.scandump(it);
                if (c.isEnd()) {
                    break;
                }
                batch.add(cmd(loadchunk, tmp, c.iterator(), c.data()));
                if (first) {
                    batch.add(cmd("EXPIRE", tmp, TEMP_TTL_SECONDS));
                    first = false;
                } else {
                    queued += c.data().length;
                }
                if (queued >= PIPELINE_BYTES) {
                    w.pipeline(batch);
                    batch.clear();
                    queued = 0;
                }
                it = c.iterator();
            }
            if (!batch.isEmpty()) {
                w.pipeline(batch);
            }
            rename(w, key, tmp, kind, replace, force);
            done = true;
        } catch (RuntimeException e) {
            throw redisBloomHint(w, tmp, filter, e);
        } finally {
            if (!done) {
                try {
                    w.call(cmd("DEL", tmp));
                } catch (RuntimeException ignored) {
                    // The key expires within the hour.
                }
            }
        }
    }

    /**
     * The last step: the temporary key's TTL removed and the key renamed over {@code key} in
     * one transaction; with {@code replace} and not {@code force}, the key watched and its
     * type checked first, again when the key changed before the EXEC.
     */
    private static void rename(Wire w, byte[] key, byte[] tmp, String kind, boolean replace,
            boolean force) {
        List<byte[][]> commands = List.of(cmd("PERSIST", tmp),
                cmd(replace ? "RENAME" : "RENAMENX", tmp, key));
        if (!replace || force) {
            List<Object> r = w.transaction(null, null, commands);
            if (r == null) {
                throw new FilterException("ERR the transaction was aborted");
            }
            if (!replace && !truthy(r.get(r.size() - 1))) {
                throw new FilterException("ERR item exists");
            }
            return;
        }
        Runnable check = () -> {
            checkReplaceable(w, key, kind);
            Consumer<byte[]> hook = beforeRename;
            if (hook != null) {
                hook.accept(key);
            }
        };
        for (int i = 0; i < RENAME_ATTEMPTS; i++) {
            if (w.transaction(key, check, commands) != null) {
                return;
            }
        }
        throw new FilterException(KEY_CHANGED);
    }

    /** push(replace=true) replaces a missing key or a filter of {@code kind} only. */
    private static void checkReplaceable(Wire w, byte[] key, String kind) {
        String t = Pull.text(w.call(cmd("TYPE", key)));
        String k = switch (t) {
            case "MBbloom--" -> "BF";
            case "MBbloomCF" -> "CF";
            default -> null;
        };
        if (!t.equals("none") && !kind.equals(k)) {
            throw new FilterException(NOT_REPLACEABLE);
        }
    }

    /**
     * A server that is not ferrobloom (RedisBloom) refuses the header of a filter of
     * ferrobloom's layouts: {@code e} as a FilterException saying so, and what it takes;
     * otherwise {@code e} itself. The probe is {@code BF.SCANDUMP tmp 0 STAMP}: only its
     * wrong-arity error tells a server without stamps; any other answer, or a probe that
     * fails, leaves {@code e} as it came.
     */
    static RuntimeException redisBloomHint(Wire w, byte[] tmp, Filter filter,
            RuntimeException e) {
        if (e instanceof FilterException || !refusedHeader(e) || redisBloomLayout(filter)) {
            return e;
        }
        try {
            w.call(cmd("BF.SCANDUMP", tmp, 0, "STAMP"));
            return e;
        } catch (RuntimeException probe) {
            if (!Pull.wrongArity(probe)) {
                return e;
            }
        }
        String layout = filter instanceof BloomFilter ? "BloomLayout.REDISBLOOM"
                : "CuckooLayout.REDISBLOOM";
        FilterException hint = new FilterException("the server refused the filter's header ("
                + e.getMessage() + "): it is not ferrobloom (RedisBloom?), which loads only"
                + " filters of RedisBloom's layout: build the filter with " + layout
                + " (a windowed filter has no such layout)");
        hint.initCause(e);
        return hint;
    }

    private static boolean refusedHeader(RuntimeException e) {
        String m = e.getMessage();
        if (m == null) {
            return false;
        }
        for (String r : HEADER_REFUSALS) {
            if (m.contains(r)) {
                return true;
            }
        }
        return false;
    }

    private static boolean redisBloomLayout(Filter f) {
        return f instanceof BloomFilter b ? b.layout() == BloomLayout.REDISBLOOM
                : f instanceof CuckooFilter c && c.layout() == CuckooLayout.REDISBLOOM;
    }
}
