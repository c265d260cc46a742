package io.ferrobloom;

/**
 * A refused operation, with the server's error text as its message (for example {@code ERR
 * non scaling filter is full}, or {@code ERR (0 < error rate range < 1) } for a bad creation
 * parameter): what the server would answer to the same command.
 */
public class FilterException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public FilterException(String message) {
        super(message);
    }
}
