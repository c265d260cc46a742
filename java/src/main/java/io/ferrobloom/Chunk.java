package io.ferrobloom;

/**
 * One reply of a {@code SCANDUMP} walk: the iterator to ask for next (and to send with the data
 * to {@code LOADCHUNK}) and the bytes. The walk starts at iterator 0, whose reply is {@code (1,
 * header)}, and ends with {@code (0, empty)}.
 *
 * @param iterator the iterator returned with the data (0 past the end)
 * @param data the chunk's bytes (empty past the end)
 */
public record Chunk(long iterator, byte[] data) {
    /** Whether this is the reply past the end of the walk. */
    public boolean isEnd() {
        return iterator == 0;
    }
}
