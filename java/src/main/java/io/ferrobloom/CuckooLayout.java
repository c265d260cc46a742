package io.ferrobloom;

import java.util.Locale;

/** A cuckoo filter's layout ({@code CF.RESERVE ... LAYOUT name}). */
public enum CuckooLayout {
    /** ferrobloom's: bit-packed fingerprints of any width (the default). */
    FERROBLOOM,
    /** RedisBloom's: 8-bit fingerprints and its hashing; loads into RedisBloom. */
    REDISBLOOM;

    /** The name the server takes ({@code ferrobloom}, {@code redisbloom}). */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
