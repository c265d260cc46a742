package io.ferrobloom;

import java.util.Map;

/**
 * {@code CF.INFO}'s eight fields.
 *
 * @param size {@code Size}: bytes of memory
 * @param numberOfBuckets {@code Number of buckets} (of the first sub-filter)
 * @param numberOfFilters {@code Number of filters}
 * @param numberOfItemsInserted {@code Number of items inserted} (minus those deleted)
 * @param numberOfItemsDeleted {@code Number of items deleted}
 * @param bucketSize {@code Bucket size}
 * @param expansionRate {@code Expansion rate}
 * @param maxIterations {@code Max iterations}
 */
public record CuckooInfo(
        long size,
        long numberOfBuckets,
        long numberOfFilters,
        long numberOfItemsInserted,
        long numberOfItemsDeleted,
        long bucketSize,
        long expansionRate,
        long maxIterations) {

    /** The fields under the server's names, in its order. */
    public Map<String, Object> asMap() {
        return NativeFilter.fields(
                "Size", size,
                "Number of buckets", numberOfBuckets,
                "Number of filters", numberOfFilters,
                "Number of items inserted", numberOfItemsInserted,
                "Number of items deleted", numberOfItemsDeleted,
                "Bucket size", bucketSize,
                "Expansion rate", expansionRate,
                "Max iterations", maxIterations);
    }
}
