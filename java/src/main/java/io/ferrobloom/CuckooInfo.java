package io.ferrobloom;

import java.util.Collections;
import java.util.LinkedHashMap;
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
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("Size", size);
        m.put("Number of buckets", numberOfBuckets);
        m.put("Number of filters", numberOfFilters);
        m.put("Number of items inserted", numberOfItemsInserted);
        m.put("Number of items deleted", numberOfItemsDeleted);
        m.put("Bucket size", bucketSize);
        m.put("Expansion rate", expansionRate);
        m.put("Max iterations", maxIterations);
        return Collections.unmodifiableMap(m);
    }
}
