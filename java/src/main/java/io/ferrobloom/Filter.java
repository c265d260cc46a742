package io.ferrobloom;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * What Bloom and cuckoo filters share: the native memory ({@link #close()}), the project's one
 * file format ({@link #toBytes()}, {@link #writeTo(OutputStream)}, {@link #save(Path)}, and the
 * readers below, which take a file of either kind) and {@code SCANDUMP}'s chunks.
 *
 * <p>The file format is the Python package's and the command-line tool's: a file one writes,
 * the others read (docs/clients.md, "File format").
 */
public sealed interface Filter extends AutoCloseable permits BloomFilter, CuckooFilter {

    /** {@code "BF"} or {@code "CF"}: the command family the filter belongs to. */
    String kind();

    /** The filter in the file format (at most 2 GiB: a Java array; else {@link #writeTo}). */
    byte[] toBytes();

    /**
     * Writes the filter in the file format to {@code out} (which is not closed), as the file is
     * made, 1 MiB at a time: a filter of any size is written without a copy of its file. The
     * file is the filter as it was when the write began, even while other threads add to it.
     */
    void writeTo(OutputStream out) throws IOException;

    /**
     * Saves the filter in the file format at {@code path}, atomically: written to a temporary
     * file beside it, then renamed over it.
     */
    void save(Path path) throws IOException;

    /**
     * {@code SCANDUMP key iterator}'s reply for this filter: {@code (1, header)} for 0, then each
     * data chunk with the iterator to ask for next; {@code (0, empty)} past the end.
     */
    Chunk scandump(long iterator);

    /** The whole {@code SCANDUMP} walk, header first, without the final {@code (0, empty)}. */
    List<Chunk> chunks();

    /** Items in the filter ({@code BF.CARD}; a cuckoo filter: inserted minus deleted). */
    long cardinality();

    /** Frees the filter's native memory now; every later call throws IllegalStateException. */
    @Override
    void close();

    /** Whether {@link #close()} was called. */
    boolean isClosed();

    /** Reads a file of either kind from bytes. */
    static Filter fromBytes(byte[] data) {
        return NativeFilter.fromBytes(0, data);
    }

    /**
     * Reads a file of either kind from a stream, chunk by chunk (the stream is read to the
     * file's end and not closed). The chunks are held as they arrive until the checksum matched.
     */
    static Filter readFrom(InputStream in) throws IOException {
        return NativeFilter.readFrom(0, in, -1);
    }

    /**
     * Reads a filter file of either kind. Its length is known, so the header is checked against
     * it before the filter is allocated and the data is read straight into the filter.
     */
    static Filter load(Path path) throws IOException {
        return NativeFilter.load(0, path);
    }

    /** The kind of a file's bytes ({@code "BF"} or {@code "CF"}), after checking its framing. */
    static String kindOf(byte[] data) {
        int k = Native.fileKind(Objects.requireNonNull(data, "data"));
        return k == Native.BLOOM ? "BF" : "CF";
    }
}
