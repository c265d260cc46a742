package io.ferrobloom;

import java.util.Locale;

/** A Bloom filter's bit layout ({@code BF.RESERVE ... LAYOUT name}). */
public enum BloomLayout {
    /** RedisBloom's sizing with k bits anywhere in each sub-filter: the default. */
    CLASSIC,
    /** k bits in one 512-bit block per item: one cache line read per lookup. */
    BLOCKED,
    /** k bits in two blocks per item. */
    PAIRED,
    /** RedisBloom's own layout and hashing: loads into RedisBloom. */
    REDISBLOOM;

    /** The name the server takes and reports ({@code classic}, ...). */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    static BloomLayout ofWire(String name) {
        return valueOf(name.toUpperCase(Locale.ROOT));
    }
}
