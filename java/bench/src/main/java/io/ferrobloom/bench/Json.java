package io.ferrobloom.bench;

import java.util.List;
import java.util.Map;

/** Just enough JSON for the results (maps, lists, strings, numbers, booleans, null). */
final class Json {
    private Json() {}

    static String of(Object o) {
        StringBuilder b = new StringBuilder();
        write(b, o, 0);
        return b.append('\n').toString();
    }

    private static void write(StringBuilder b, Object o, int depth) {
        if (o == null) {
            b.append("null");
        } else if (o instanceof String s) {
            b.append('"');
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    default -> {
                        if (c < 0x20) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                    }
                }
            }
            b.append('"');
        } else if (o instanceof Double d) {
            b.append(d.isNaN() || d.isInfinite() ? "null" : d.toString());
        } else if (o instanceof Number || o instanceof Boolean) {
            b.append(o);
        } else if (o instanceof Map<?, ?> m) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                if (depth == 0) {
                    b.append("\n ");
                }
                write(b, String.valueOf(e.getKey()), depth + 1);
                b.append(": ");
                write(b, e.getValue(), depth + 1);
            }
            b.append(depth == 0 ? "\n}" : "}");
        } else if (o instanceof List<?> l) {
            b.append('[');
            boolean first = true;
            for (Object x : l) {
                if (!first) {
                    b.append(", ");
                }
                first = false;
                if (depth <= 1 && x instanceof Map) {
                    b.append("\n  ");
                }
                write(b, x, depth + 1);
            }
            b.append(']');
        } else if (o instanceof double[] a) {
            b.append('[');
            for (int i = 0; i < a.length; i++) {
                if (i > 0) {
                    b.append(", ");
                }
                write(b, a[i], depth + 1);
            }
            b.append(']');
        } else {
            write(b, o.toString(), depth);
        }
    }
}
