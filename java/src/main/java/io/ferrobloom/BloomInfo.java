package io.ferrobloom;

import java.util.Map;

/**
 * {@code BF.INFO}'s fields.
 *
 * @param capacity {@code Capacity}: items the filter holds at its error rate before it grows
 * @param size {@code Size}: bytes of memory
 * @param numberOfFilters {@code Number of filters}: sub-filters (links)
 * @param numberOfItemsInserted {@code Number of items inserted} (a windowed filter: within the
 *     live window)
 * @param expansionRate {@code Expansion rate}; null for a non-scaling filter (the server's nil)
 */
public record BloomInfo(
        long capacity,
        long size,
        long numberOfFilters,
        long numberOfItemsInserted,
        Long expansionRate) {

    /** The fields under the server's names, in its order. */
    public Map<String, Object> asMap() {
        return NativeFilter.fields(
                "Capacity", capacity,
                "Size", size,
                "Number of filters", numberOfFilters,
                "Number of items inserted", numberOfItemsInserted,
                "Expansion rate", expansionRate);
    }
}
