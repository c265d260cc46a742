package io.ferrobloom.bench;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/** {@code --name value} options, and what the harnesses share. */
final class Args {
    private final Map<String, String> m = new HashMap<>();

    Args(String[] argv) {
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (!a.startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value, got " + a);
            }
            m.put(a.substring(2), argv[++i]);
        }
    }

    String str(String name, String dflt) {
        return m.getOrDefault(name, dflt);
    }

    long num(String name, long dflt) {
        String v = m.get(name);
        return v == null ? dflt : (long) Double.parseDouble(v);
    }

    List<Long> nums(String name, String dflt) {
        List<Long> out = new ArrayList<>();
        for (String s : str(name, dflt).split(",")) {
            if (!s.isBlank()) {
                out.add((long) Double.parseDouble(s.trim()));
            }
        }
        return out;
    }

    /** A library's version from its jar's Maven metadata. */
    static String version(String group, String artifact) {
        String path = "/META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (InputStream in = Args.class.getResourceAsStream(path)) {
            if (in == null) {
                return "?";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "?");
        } catch (IOException e) {
            return "?";
        }
    }

    static void log(String s) {
        System.err.println(s);
        System.err.flush();
    }

    /** The JVM and what it runs on. */
    static Map<String, Object> jvm() {
        Map<String, Object> j = new java.util.LinkedHashMap<>();
        j.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        j.put("cpus", Runtime.getRuntime().availableProcessors());
        j.put("max_heap", Runtime.getRuntime().maxMemory());
        List<String> gcs = new ArrayList<>();
        for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs.add(gc.getName());
        }
        j.put("gc", String.join(", ", gcs));
        j.put("args", String.join(" ",
                java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()));
        return j;
    }
}
