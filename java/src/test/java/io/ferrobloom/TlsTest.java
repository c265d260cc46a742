package io.ferrobloom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.ClientOptions;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * push and pull over TLS, with the server's default of requiring client certificates: a throw-away CA
 * (openssl) signs the server's and the client's certificates; Jedis and Lettuce push every kind
 * through it, and a client that does not trust the server's certificate is refused. Runs on the
 * first server of {@code ferrobloom.servers} (Redis 7.0 with make java-test; skipped where
 * openssl is missing or the server was built without TLS).
 */
class TlsTest {
    static final String PASS = "ferrobloom";

    static void openssl(Path dir, String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("openssl.log").toFile()).start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException("openssl " + args[0] + " failed: "
                    + Files.readString(dir.resolve("openssl.log")));
        }
    }

    /** ca.crt, server.crt/.key, client.crt/.key and client.p12 (the client's key and certificate). */
    static void certificates(Path d) throws Exception {
        openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                "/CN=ferrobloom-test-ca", "-keyout", "ca.key", "-out", "ca.crt");
        Files.writeString(d.resolve("san.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
        for (String who : List.of("server", "client")) {
            openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + who, "-keyout",
                    who + ".key", "-out", who + ".csr");
            openssl(d, "x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                    "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", who + ".crt");
        }
        openssl(d, "pkcs12", "-export", "-inkey", "client.key", "-in", "client.crt", "-out",
                "client.p12", "-passout", "pass:" + PASS);
    }

    static SSLContext context(Path d, boolean trustCa) throws Exception {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (FileInputStream in = new FileInputStream(d.resolve("client.p12").toFile())) {
            keys.load(in, PASS.toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(
                KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, PASS.toCharArray());
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        if (trustCa) {
            try (FileInputStream in = new FileInputStream(d.resolve("ca.crt").toFile())) {
                trust.setCertificateEntry("ca", java.security.cert.CertificateFactory
                        .getInstance("X.509").generateCertificate(in));
            }
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(
                TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return ctx;
    }

    @Test
    void pushAndPullOverTls(@TempDir Path d) throws Exception {
        try {
            certificates(d);
        } catch (java.io.IOException e) {
            Assumptions.abort("openssl not runnable: " + e.getMessage());
        }
        String binary = TestServer.servers().get(0);
        int tlsPort = TestServer.freePort();
        TestServer s;
        try {
            s = TestServer.start(binary, "--tls-port", Integer.toString(tlsPort),
                    "--tls-cert-file", d.resolve("server.crt").toString(),
                    "--tls-key-file", d.resolve("server.key").toString(),
                    "--tls-ca-cert-file", d.resolve("ca.crt").toString());
        } catch (IllegalStateException e) {
            Assumptions.abort("this server has no TLS: " + e.getMessage());
            return;
        }
        try (s; BloomFilter b = BloomFilter.create(1000); CuckooFilter c = CuckooFilter.create(1000)) {
            b.putAll(BloomFilterTest.items("tls", 500));
            c.addAll(BloomFilterTest.items("tls", 500));
            HostAndPort at = new HostAndPort("127.0.0.1", tlsPort);
            try (Jedis j = new Jedis(at, DefaultJedisClientConfig.builder().ssl(true)
                    .sslSocketFactory(context(d, true).getSocketFactory()).build())) {
                JedisTransfer.push(j, "jb", b, false);
                JedisTransfer.push(j, "jc", c, false);
                try (Filter pb = JedisTransfer.pull(j, "jb"); Filter pc = JedisTransfer.pull(j,
                        "jc")) {
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), pb.chunks());
                    ServerIdentityTest.assertSameWalk("CF", c.chunks(), pc.chunks());
                }
            }
            ServerIdentityTest.assertSameWalk("BF", b.chunks(), s.scandump("BF", "jb"));
            ServerIdentityTest.assertSameWalk("CF", c.chunks(), s.scandump("CF", "jc"));
            RedisClient lettuce = RedisClient.create();
            lettuce.setOptions(ClientOptions.builder().sslOptions(SslOptions.builder()
                    .keystore(d.resolve("client.p12").toFile(), PASS.toCharArray())
                    .trustManager(d.resolve("ca.crt").toFile())
                    .build()).build());
            RedisURI uri = RedisURI.builder().withHost("127.0.0.1").withPort(tlsPort)
                    .withSsl(true).build();
            try (var conn = lettuce.connect(uri)) {
                LettuceTransfer.push(conn, "lb", b, false);
                try (BloomFilter p = LettuceTransfer.pullBloom(conn, "lb")) {
                    ServerIdentityTest.assertSameWalk("BF", b.chunks(), p.chunks());
                }
            } finally {
                lettuce.shutdown();
            }
            ServerIdentityTest.assertSameWalk("BF", b.chunks(), s.scandump("BF", "lb"));
            assertArrayEquals(b.mightContainAll(ServerIdentityTest.PROBES),
                    ServerIdentityTest.serverMexists(s, "BF", "lb"));
            // A client that does not trust the server's certificate is refused.
            assertThrows(JedisConnectionException.class, () -> {
                try (Jedis j = new Jedis(at, DefaultJedisClientConfig.builder().ssl(true)
                        .sslSocketFactory(context(d, false).getSocketFactory()).build())) {
                    JedisTransfer.push(j, "never", b, false);
                }
            });
        }
    }
}
