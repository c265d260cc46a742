package io.ferrobloom;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.util.SafeEncoder;

/**
 * A real server for the tests, as the Rust and Python suites start them: a throw-away process
 * on a free loopback port in its own temporary directory, with the freshly built module
 * (system property {@code ferrobloom.module}, which {@code make java-test} sets). The servers
 * are {@code ferrobloom.servers}: binaries, comma separated (default {@code redis-server}).
 * The server must answer with its own pid: a port another process took meanwhile means
 * starting again on another one.
 */
final class TestServer implements AutoCloseable {
    private static final int ATTEMPTS = 5;

    final String binary;
    final Path dir;
    final int port;
    private final Process proc;
    final Jedis jedis;

    private TestServer(String binary, Path dir, int port, Process proc, Jedis jedis) {
        this.binary = binary;
        this.dir = dir;
        this.port = port;
        this.proc = proc;
        this.jedis = jedis;
    }

    /**
     * The servers of one test class: each started on its first use, flushed before every
     * use, stopped by {@link #close} (the class's {@code @AfterAll}).
     */
    static final class PerClass {
        private final Map<String, TestServer> started = new LinkedHashMap<>();

        synchronized TestServer get(String binary) throws Exception {
            TestServer s = started.get(binary);
            if (s == null) {
                s = TestServer.start(binary);
                started.put(binary, s);
            }
            s.jedis.flushAll();
            return s;
        }

        synchronized void close() throws Exception {
            for (TestServer s : started.values()) {
                s.close();
            }
            started.clear();
        }
    }

    /** The server binaries to test against. */
    static List<String> servers() {
        String s = System.getProperty("ferrobloom.servers", "");
        List<String> out = new ArrayList<>();
        for (String b : s.split(",")) {
            if (!b.isBlank()) {
                out.add(b.trim());
            }
        }
        if (out.isEmpty()) {
            out.add("redis-server");
        }
        return out;
    }

    /** The module the servers load. */
    static String module() {
        String m = System.getProperty("ferrobloom.module", "");
        if (!m.isEmpty()) {
            if (!new File(m).isFile()) {
                throw new IllegalStateException("ferrobloom.module=" + m + " does not exist");
            }
            return m;
        }
        String target = System.getenv().getOrDefault("CARGO_TARGET_DIR",
                System.getProperty("ferrobloom.root", "..") + "/target");
        for (String c : new String[] {target + "/release/libferrobloom.so",
                target + "/release/deps/libferrobloom.so"}) {
            if (new File(c).isFile()) {
                return c;
            }
        }
        throw new IllegalStateException("no module: build it (cargo build --release -p ferrobloom)"
                + " and pass -Dferrobloom.module=<path to libferrobloom.so>, as make java-test does");
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static TestServer start(String binary, String... extraArgs) throws Exception {
        return startWith(binary, module(), extraArgs);
    }

    /** A server loading {@code module} (RedisBloom's, for the side-by-side tests). */
    static TestServer startWith(String binary, String module, String... extraArgs)
            throws Exception {
        for (int i = 0; i < ATTEMPTS; i++) {
            TestServer s = tryStart(binary, module, extraArgs);
            if (s != null) {
                return s;
            }
        }
        throw new IllegalStateException("server did not start on any of " + ATTEMPTS + " ports");
    }

    private static TestServer tryStart(String binary, String module, String... extraArgs)
            throws Exception {
        int port = freePort();
        Path dir = Files.createTempDirectory("ferrobloom-java-");
        List<String> cmd = new ArrayList<>(List.of(binary, "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--dir", dir.toString(), "--save", "",
                "--appendonly", "no"));
        cmd.addAll(Arrays.asList(extraArgs));
        cmd.add("--loadmodule");
        cmd.add(module);
        File log = dir.resolve("server.log").toFile();
        Process proc = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(log).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            if (!proc.isAlive()) {
                String out = Files.readString(log.toPath());
                if (out.contains("already in use")) {
                    return null;
                }
                throw new IllegalStateException("server did not start: " + cmd + "\n" + out);
            }
            try {
                Jedis j = new Jedis("127.0.0.1", port, 5000);
                String info = j.info("server");
                long pid = -1;
                for (String line : info.split("\r?\n")) {
                    if (line.startsWith("process_id:")) {
                        pid = Long.parseLong(line.substring(11).trim());
                    }
                }
                if (pid != proc.pid()) {
                    j.close();
                    proc.destroy();
                    return null; // another process's server on "our" port
                }
                return new TestServer(binary, dir, port, proc, j);
            } catch (JedisConnectionException e) {
                if (System.nanoTime() > deadline) {
                    proc.destroyForcibly();
                    throw new IllegalStateException("server did not answer: " + cmd, e);
                }
                Thread.sleep(50);
            }
        }
    }

    /** A command by name (module commands have no Jedis method in every version). */
    static ProtocolCommand command(String name) {
        byte[] raw = SafeEncoder.encode(name);
        return () -> raw;
    }

    /** Sends a command; an error reply throws JedisDataException with the server's text. */
    Object call(String name, Object... args) {
        byte[][] a = new byte[args.length][];
        for (int i = 0; i < args.length; i++) {
            Object o = args[i];
            a[i] = o instanceof byte[] b ? b : String.valueOf(o).getBytes(StandardCharsets.UTF_8);
        }
        return jedis.sendCommand(command(name), a);
    }

    /** The server's SCANDUMP walk of {@code key}, header first, without the final (0, ""). */
    List<Chunk> scandump(String prefix, String key) {
        List<Chunk> out = new ArrayList<>();
        long it = 0;
        while (true) {
            List<?> r = (List<?>) call(prefix + ".SCANDUMP", key, it);
            it = (Long) r.get(0);
            if (it == 0) {
                return out;
            }
            out.add(new Chunk(it, (byte[]) r.get(1)));
        }
    }

    /** Loads chunks into {@code key} with LOADCHUNK. */
    void loadChunks(String prefix, String key, List<Chunk> chunks) {
        for (Chunk c : chunks) {
            call(prefix + ".LOADCHUNK", key, c.iterator(), c.data());
        }
    }

    @Override
    public void close() throws IOException {
        jedis.close();
        proc.destroy();
        try {
            if (!proc.waitFor(10, TimeUnit.SECONDS)) {
                proc.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            proc.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try (var walk = Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Override
    public String toString() {
        return binary;
    }
}
