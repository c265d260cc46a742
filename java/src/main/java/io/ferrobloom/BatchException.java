package io.ferrobloom;

import java.util.Collections;
import java.util.List;

/**
 * A batch in which the filter refused an item ({@code BF.MADD} with an error element, {@code
 * CF.INSERT} with {@code -1}). The message is the server's text for the first refused item;
 * {@link #index()} is that item's position, and {@link #reply()} the whole reply the server
 * would have sent: per item {@link Boolean} (added / new) or a {@link FilterException} with the
 * refusal's text. A Bloom filter's reply ends after a {@code non scaling filter is full} error,
 * as the server's does; the items before it (and the other items of a cuckoo batch) were added.
 */
public class BatchException extends FilterException {
    private static final long serialVersionUID = 1L;

    private final int index;
    private final transient List<Object> reply;

    BatchException(String message, int index, List<Object> reply) {
        super(message);
        this.index = index;
        this.reply = Collections.unmodifiableList(reply);
    }

    /** The position in the batch of the first refused item. */
    public int index() {
        return index;
    }

    /** The server's reply to the batch: {@link Boolean} or {@link FilterException} per item. */
    public List<Object> reply() {
        return reply;
    }
}
