package io.ferrobloom;

/**
 * Bytes, a file, a stream or chunks that are not a valid filter: truncated, corrupted, of the
 * other kind, or describing more than they carry. Nothing is allocated for what the input does
 * not carry.
 */
public class FormatException extends FilterException {
    private static final long serialVersionUID = 1L;

    public FormatException(String message) {
        super(message);
    }
}
