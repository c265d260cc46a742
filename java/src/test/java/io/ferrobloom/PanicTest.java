package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * No panic crosses into the JVM: a deliberate panic inside a filter's write lock (the native
 * library's fault-injection feature, which make java-test builds) becomes a FilterException,
 * the JVM goes on, and the filter (whose lock the panic poisoned) still answers and takes writes.
 */
class PanicTest {

    @Test
    void aPanicIsAnExceptionAndTheFilterStaysUsable() {
        try (BloomFilter f = BloomFilter.create(1000)) {
            f.put("before");
            for (int i = 0; i < 3; i++) {
                FilterException e = assertThrows(FilterException.class,
                        () -> Native.faultPanic(f.handle));
                assertEquals("ERR internal error in ferrobloom: a deliberate panic (fault"
                        + " injection)", e.getMessage());
            }
            assertTrue(f.mightContain("before"));
            assertTrue(f.put("after"));
            assertEquals(2, f.cardinality());
        }
    }
}
