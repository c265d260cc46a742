package io.ferrobloom;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Pull, written once over {@link Push.Wire} (each client adapter implements it): the Python
 * package's ({@code python/ferrobloom/_server.py}, {@code pull}), with its texts. The result is
 * exactly a state the key held, or an exception; never a mix of two states.
 *
 * <ol>
 *   <li>{@code TYPE key} tells the kind: a missing key throws {@code ERR not found}, a key of
 *       another type the server's {@code WRONGTYPE} text;
 *   <li>on a server whose SCANDUMP takes {@code STAMP} (ferrobloom), a walk of {@code
 *       SCANDUMP key iterator STAMP}: every reply carries the stamp of the state its chunk was
 *       read from, and a walk whose stamps all equal the header's read one state of the key. A
 *       reply with another stamp (a write, another value put under the key), a walk that goes
 *       past what its header describes, or a cuckoo filter's refusal of a walk during which it
 *       moved items starts the walk again, {@value #ATTEMPTS} walks at most;
 *   <li>on a server whose SCANDUMP answers {@code STAMP} with its wrong-arity error
 *       (RedisBloom), {@code DUMP key}, one atomic read, decoded by the core ({@code
 *       ferrobloom_core::restore::read_dump}).
 * </ol>
 */
final class Pull {
    private Pull() {}

    /** How often pull walks when the key changed during the walk. */
    static final int ATTEMPTS = 3;

    /** The server's texts for a missing key and a key of another type. */
    static final String NOT_FOUND = Native.keyErrorText(0);
    static final String WRONG_TYPE = Native.keyErrorText(1);

    /** A walk that returned more than its header describes. */
    static final String PAST_HEADER = "went past what its header describes";
    /** ferrobloom's refusal of a SCANDUMP walk once a cuckoo filter moved items. */
    static final String MOVED = "the filter moved items";

    /** The key's state changed during a walk (a stamp differs from the header's). */
    private static final class Changed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Changed() {
            super(null, null, false, false);
        }
    }

    /** The server's SCANDUMP takes no STAMP. */
    private static final class NoStamps extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoStamps(RuntimeException cause) {
            super(null, cause, false, false);
        }
    }

    /**
     * Pulls {@code key}; {@code want} is {@link Filter}, {@link BloomFilter} or {@link
     * CuckooFilter} (a key of the other kind throws {@code WRONGTYPE}, saying which it holds).
     */
    static <T extends Filter> T pull(Push.Wire w, byte[] key, Class<T> want) {
        Objects.requireNonNull(key, "key");
        String kind = kindOfKey(w, key);
        check(kind, want);
        Filter f;
        try {
            f = walk(w, kind, key);
        } catch (NoStamps e) {
            f = dump(w, key);
            try {
                // The key may hold a filter of the other kind since TYPE.
                check(f.kind(), want);
            } catch (FilterException refused) {
                f.close();
                throw refused;
            }
        }
        return want.cast(f);
    }

    /** Refuses a kind of key the caller did not ask for. */
    private static void check(String kind, Class<? extends Filter> want) {
        String wanted = want == BloomFilter.class ? "BF" : want == CuckooFilter.class ? "CF" : null;
        if (wanted != null && !wanted.equals(kind)) {
            throw new FilterException(WRONG_TYPE + " (the key holds a "
                    + (kind.equals("BF") ? "Bloom" : "cuckoo") + " filter, not a "
                    + (wanted.equals("BF") ? "Bloom" : "cuckoo") + " filter)");
        }
    }

    /** A reply as text: a status (bytes or a String). */
    static String text(Object r) {
        return r instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(r);
    }

    /** {@code "BF"} or {@code "CF"}; FilterException for a missing key or another type. */
    static String kindOfKey(Push.Wire w, byte[] key) {
        String t = text(w.call(Push.cmd("TYPE", key)));
        switch (t) {
            case "none":
                throw new FilterException(NOT_FOUND);
            case "MBbloom--":
                return "BF";
            case "MBbloomCF":
                return "CF";
            default:
                throw new FilterException(WRONG_TYPE);
        }
    }

    static boolean wrongArity(RuntimeException e) {
        String m = e.getMessage();
        return m != null && m.toLowerCase(Locale.ROOT).contains("wrong number of arguments");
    }

    private static boolean retried(RuntimeException e) {
        String m = e.getMessage();
        return m != null && (m.contains(MOVED) || m.contains(PAST_HEADER));
    }

    /** The walks on a server with stamps; NoStamps when its SCANDUMP takes none. */
    private static Filter walk(Push.Wire w, String kind, byte[] key) {
        String why = "";
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            List<Chunk> chunks;
            try {
                chunks = walkOnce(w, kind, key);
            } catch (Changed e) {
                why = " (the last: the key's stamp changed during the walk)";
                continue;
            } catch (NoStamps e) {
                throw e;
            } catch (RuntimeException e) {
                // A cuckoo filter that moved items during the walk refuses the rest of it, and
                // a walk past its header read a key that changed: walk again.
                if (retried(e)) {
                    why = " (the last: " + e.getMessage() + ")";
                    continue;
                }
                throw e;
            }
            return kind.equals("BF") ? BloomFilter.fromChunks(chunks)
                    : CuckooFilter.fromChunks(chunks);
        }
        throw new FilterException("the key changed during every one of " + ATTEMPTS
                + " SCANDUMP walks" + why);
    }

    /**
     * One walk, the header first, bounded by what the header describes (the core's {@code
     * WalkBudget}: the data bytes, and the chunks a server cutting them at 64 KiB or more
     * sends), so a server whose iterators cycle or whose data never ends cannot make it run or
     * grow without end.
     */
    static List<Chunk> walkOnce(Push.Wire w, String kind, byte[] key) {
        byte[] scandump = (kind + ".SCANDUMP").getBytes(StandardCharsets.US_ASCII);
        List<Chunk> chunks = new ArrayList<>();
        Object stamp = null;
        long chunksLeft = 0;
        long bytesLeft = 0;
        long it = 0;
        while (true) {
            List<?> r;
            try {
                r = list(w.call(Push.cmd(scandump, key, it, "STAMP")), kind);
            } catch (RuntimeException e) {
                if (it == 0 && wrongArity(e)) {
                    throw new NoStamps(e);
                }
                throw e;
            }
            if (r.size() != 3) {
                throw new FilterException(kind + ".SCANDUMP answered " + r.size()
                        + " elements with STAMP, not 3");
            }
            if (chunks.isEmpty()) {
                stamp = r.get(2);
            } else if (!Objects.equals(stamp, r.get(2))) {
                throw new Changed();
            }
            long next = integer(r.get(0), kind);
            if (next == 0) {
                return chunks;
            }
            byte[] data = r.get(1) == null ? new byte[0] : bytes(r.get(1), kind);
            if (chunks.isEmpty()) {
                long[] budget = Native.walkBudget(kind.equals("BF") ? Native.BLOOM
                        : Native.CUCKOO, data);
                chunksLeft = budget[0];
                bytesLeft = budget[1];
            } else if (chunksLeft == 0 || data.length > bytesLeft) {
                throw new FilterException("the SCANDUMP walk " + PAST_HEADER + " (a "
                        + data.length + "-byte chunk with " + chunksLeft + " chunks and "
                        + bytesLeft + " bytes left): the key changed during the walk, or the"
                        + " server does not follow SCANDUMP");
            } else {
                chunksLeft--;
                bytesLeft -= data.length;
            }
            chunks.add(new Chunk(next, data));
            it = next;
        }
    }

    private static List<?> list(Object r, String kind) {
        if (r instanceof List<?> l) {
            return l;
        }
        throw new FilterException(kind + ".SCANDUMP answered " + r + ", not an array");
    }

    private static long integer(Object o, String kind) {
        if (o instanceof Long l) {
            return l;
        }
        throw new FilterException(kind + ".SCANDUMP answered the iterator " + o
                + ", not an integer");
    }

    private static byte[] bytes(Object o, String kind) {
        if (o instanceof byte[] b) {
            return b;
        }
        throw new FilterException(kind + ".SCANDUMP answered data that is not a bulk string");
    }

    /**
     * Pull on a server whose SCANDUMP cannot show a walk consistent (RedisBloom): the key's
     * {@code DUMP}, one atomic read, decoded by the core.
     */
    static Filter dump(Push.Wire w, byte[] key) {
        Object payload;
        try {
            payload = w.call(Push.cmd("DUMP", key));
        } catch (RuntimeException e) {
            String m = e.getMessage();
            if (m != null && m.startsWith("NOPERM")) {
                FilterException f = new FilterException("this server's SCANDUMP cannot show that"
                        + " a walk read one state of the key (it takes no STAMP: RedisBloom, or a"
                        + " ferrobloom before it), so pull reads the key with DUMP, which this"
                        + " user may not run (" + m + ")");
                f.initCause(e);
                throw f;
            }
            throw e;
        }
        if (payload == null) {
            throw new FilterException(NOT_FOUND);
        }
        if (!(payload instanceof byte[] b)) {
            throw new FilterException("DUMP answered " + payload + ", not a bulk string");
        }
        return NativeFilter.fromDump(b);
    }
}
