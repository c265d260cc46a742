package io.ferrobloom;

/** TestServer for the examples' package (TestServer is package-private). */
public final class ExampleServers {
    private ExampleServers() {}

    public static AutoCloseable start() throws Exception {
        return TestServer.start(TestServer.servers().get(0));
    }

    public static int port(AutoCloseable server) {
        return ((TestServer) server).port;
    }
}
