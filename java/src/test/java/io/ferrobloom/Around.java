package io.ferrobloom;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A real client's {@link Push.Wire} with something done around its calls: another client
 * writing between two SCANDUMP calls of a pull, as the Python tests wrap redis-py clients
 * (python/tests/test_server.py, test_pull_states.py). Every command still goes to the server.
 */
abstract class Around implements Push.Wire {
    final Push.Wire w;
    /** SCANDUMP calls at iterator 0: the walks begun. */
    int walks;

    Around(Push.Wire w) {
        this.w = w;
    }

    static String name(byte[][] c) {
        return new String(c[0], StandardCharsets.UTF_8).toUpperCase(java.util.Locale.ROOT);
    }

    /** A SCANDUMP call's iterator, or -1 for another command. */
    static long scandumpAt(byte[][] c) {
        if (!name(c).endsWith(".SCANDUMP")) {
            return -1;
        }
        return Long.parseLong(new String(c[2], StandardCharsets.US_ASCII));
    }

    /** Runs after each call, with the call and its reply. */
    abstract void after(byte[][] c, long scandumpAt);

    @Override
    public Object call(byte[]... c) {
        long at = scandumpAt(c);
        if (at == 0) {
            walks++;
        }
        Object r = w.call(c);
        after(c, at);
        return r;
    }

    @Override
    public void pipeline(List<byte[][]> commands) {
        w.pipeline(commands);
    }

    @Override
    public List<Object> transaction(byte[] watch, Runnable check, List<byte[][]> commands) {
        return w.transaction(watch, check, commands);
    }

    /** Counts the walks and does nothing else. */
    static Around counting(Push.Wire w) {
        return new Around(w) {
            @Override
            void after(byte[][] c, long at) {}
        };
    }
}
