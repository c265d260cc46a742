package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * push over Lettuce connections (a String codec and a byte-array codec) on every server:
 * every kind pushed walks and answers as the Java filter; an existing key is refused without
 * replace and replaced with it; a refusal leaves nothing behind.
 */
class LettuceTransferTest {

    static Stream<String> servers() {
        return TestServer.servers().stream();
    }

    @ParameterizedTest
    @MethodSource("servers")
    void pushOverLettuce(String binary) throws Exception {
        TestServer s = JedisTransferTest.server(binary);
        RedisClient client = RedisClient.create("redis://127.0.0.1:" + s.port);
        try (StatefulRedisConnection<String, String> text = client.connect();
                StatefulRedisConnection<byte[], byte[]> bytes = client.connect(
                        ByteArrayCodec.INSTANCE)) {
            for (Object c : List.of(ServerIdentityTest.bloomCases().get(2),
                    ServerIdentityTest.bloomCases().get(4), ServerIdentityTest.cuckooCases().get(1),
                    ServerIdentityTest.cuckooCases().get(2), "window")) {
                try (Filter f = JedisTransferTest.build(c)) {
                    // The kinds alternate on one key: force replaces the other kind.
                    LettuceTransfer.push(text, "text", f, true, true);
                    JedisTransferTest.assertServerHas(s, "text", f);
                    LettuceTransfer.push(bytes, "bytes".getBytes(), f, true, true);
                    JedisTransferTest.assertServerHas(s, "bytes", f);
                }
            }
            try (BloomFilter a = BloomFilter.create(1000); BloomFilter b = BloomFilter.create(1000)) {
                a.put("a");
                b.put("b");
                LettuceTransfer.push(text, "k", a, false);
                FilterException e = assertThrows(FilterException.class,
                        () -> LettuceTransfer.push(text, "k", b, false));
                assertEquals("ERR item exists", e.getMessage());
                JedisTransferTest.assertServerHas(s, "k", a);
                LettuceTransfer.push(text, "k", b, true);
                JedisTransferTest.assertServerHas(s, "k", b);
                assertTrue(text.sync().keys("*ferrobloom-push*").isEmpty());
                // The connection is usable afterwards (no transaction left open).
                assertEquals("PONG", text.sync().ping());
            }
        } finally {
            client.shutdown();
        }
    }
}
