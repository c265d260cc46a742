package io.ferrobloom;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.ref.Cleaner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The native library ({@code libferrobloom_jni.so}, built from {@code java/native}) and its
 * entry points. The jar carries the library under {@code /native/<os>-<arch>/}; the first use
 * of a filter copies it to a temporary file and loads it. The system property
 * {@code ferrobloom.native.lib} names another copy to load instead.
 *
 * <p>Handles are addresses of native filters; each public class passes only handles of its own
 * kind. Every call here may throw {@link FilterException}, {@link FormatException},
 * {@link OutOfMemoryError}, {@link IllegalStateException} (a closed filter) or an exception a
 * stream threw.
 */
final class Native {
    static final int BLOOM = 1;
    static final int CUCKOO = 2;

    /** Frees the native boxes of filters that became unreachable. */
    static final Cleaner CLEANER = Cleaner.create();

    private Native() {}

    static {
        load();
    }

    /** The platform directory in the jar: {@code linux-x86_64}, or null when unsupported. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
            return "linux-x86_64";
        }
        return null;
    }

    private static void load() {
        String explicit = System.getProperty("ferrobloom.native.lib");
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Path.of(explicit).toAbsolutePath().toString());
            return;
        }
        String platform = platform();
        String resource = "/native/" + platform + "/libferrobloom_jni.so";
        if (platform == null) {
            throw new UnsatisfiedLinkError("ferrobloom: no native library for "
                    + System.getProperty("os.name") + " " + System.getProperty("os.arch")
                    + " in this jar (it carries linux-x86_64)");
        }
        try (InputStream in = Native.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("ferrobloom: " + resource
                        + " is missing from the jar (build it with `make java`)");
            }
            Path tmp = Files.createTempFile("libferrobloom_jni", ".so");
            try {
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                System.load(tmp.toAbsolutePath().toString());
            } finally {
                // Once loaded, the mapping outlives the file's name.
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError(
                    "ferrobloom: cannot extract " + resource + ": " + e);
            err.initCause(e);
            throw err;
        }
    }

    // Both kinds (kind: BLOOM or CUCKOO; 0 where it says either).
    static native void close(int kind, long h);
    static native void free(int kind, long h);
    static native long reserve(int kind, byte[][] args);
    static native long copy(int kind, long h);
    /** The text of a batch add's refusal code (2 and up). */
    static native String insertErrorText(int kind, int code);
    /** The server's text for a missing key (0) and a key of another type (1). */
    static native String keyErrorText(int which);
    /** INFO's fields, then the kind's own (BloomFilter.info, CuckooFilter.info). */
    static native long[] info(int kind, long h);
    /** The error rate the filter was created with (NaN: none). */
    static native double errorRate(int kind, long h);
    static native void checkLimits(int kind, long h, long maxBytes, int maxParts);
    static native byte[] toBytes(int kind, long h);
    static native void writeTo(int kind, long h, OutputStream out);
    static native long fromBytes(int kind, byte[] data, int[] kindOut);
    static native long readFrom(int kind, InputStream in, long length, int[] kindOut);
    static native int fileKind(byte[] data);
    static native byte[] scandump(int kind, long h, long iter, long[] next);
    static native long fromChunks(int kind, long[] iters, byte[][] datas);
    static native long fromDump(byte[] payload, int[] kindOut);
    static native long[] walkBudget(int kind, byte[] header);

    // Bloom filters. The batch calls (one per Items.Batch) return a code per item (0 not new,
    // 1 new, 2 and up a refusal) or an answer per item.
    static native double bfDefaultErrorRate();
    static native boolean bfAdd(long h, byte[] item);
    static native byte[] bfAddAll(long h, byte[] buf, int[] ends, int count);
    static native boolean bfContains(long h, byte[] item, long atMs);
    static native boolean[] bfContainsAll(long h, byte[] buf, int[] ends, int count, long atMs);
    static native String bfLayout(long h);
    static native long bfUnion(long[] handles);
    static native void bfMergeInto(long dst, long src);

    /** Test builds only (the fault-injection feature): a panic inside a filter's lock. */
    static native void faultPanic(long h);

    // Cuckoo filters.
    static native boolean cfAdd(long h, byte[] item, boolean nx);
    static native byte[] cfInsert(long h, byte[] buf, int[] ends, int count, boolean nx);
    static native boolean cfContains(long h, byte[] item);
    static native boolean[] cfContainsAll(long h, byte[] buf, int[] ends, int count);
    static native long cfCount(long h, byte[] item);
    static native boolean cfDelete(long h, byte[] item);
}
