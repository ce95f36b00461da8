package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The {@code tojson} filter exactly as transformers defines it: Python's {@code json.dumps(value,
 * ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)}, not Jinja's HTML-safe variant.
 * Without indent the separators are {@code ", "} and {@code ": "}; with indent they are {@code ","} (then a newline
 * and the indentation) and {@code ": "}. Only {@code "}, {@code \} and control characters are escaped.
 */
final class Json {

    private final boolean ensureAscii;
    private final String indent;
    private final String itemSeparator;
    private final String keySeparator;
    private final boolean sortKeys;
    private final StringBuilder out = new StringBuilder();

    private Json(boolean ensureAscii, String indent, String itemSeparator, String keySeparator, boolean sortKeys) {
        this.ensureAscii = ensureAscii;
        this.indent = indent;
        this.itemSeparator = itemSeparator;
        this.keySeparator = keySeparator;
        this.sortKeys = sortKeys;
    }

    /**
     * @param indent null, an int (that many spaces; negative means none) or a string
     * @param separators null or an (item separator, key separator) pair
     */
    static String dumps(Object value, boolean ensureAscii, Object indent, Object separators, boolean sortKeys) {
        String indentText = null;
        if (indent instanceof String s) {
            indentText = s;
        } else if (indent != null && !(indent instanceof Undefined)) {
            if (!Py.isInt(indent) && !(indent instanceof Boolean)) {
                throw ChatTemplateException.typeError("indent must be an int or a str, not " + Py.typeName(indent));
            }
            indentText = " ".repeat((int) Math.max(0, Py.asLong(indent)));
        }
        String itemSeparator = indentText == null ? ", " : ",";
        String keySeparator = ": ";
        if (separators != null && !(separators instanceof Undefined)) {
            if (!(separators instanceof List<?> pair) || pair.size() != 2 || !(pair.get(0) instanceof String)
                    || !(pair.get(1) instanceof String)) {
                throw ChatTemplateException.valueError("separators must be a pair of strings");
            }
            itemSeparator = (String) pair.get(0);
            keySeparator = (String) pair.get(1);
        }
        Json json = new Json(ensureAscii, indentText, itemSeparator, keySeparator, sortKeys);
        json.write(value, 0);
        return json.out.toString();
    }

    private void write(Object value, int level) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String s) {
            writeString(s);
        } else if (value instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (Py.isInt(value)) {
            out.append(value);
        } else if (Py.isFloat(value)) {
            out.append(floatText(Py.asDouble(value)));
        } else if (value instanceof List<?> list) {
            writeList(list, level);
        } else if (value instanceof Map<?, ?> map) {
            writeMap(map, level);
        } else {
            throw ChatTemplateException.typeError("Object of type " + Py.typeName(value) + " is not JSON serializable");
        }
    }

    private static String floatText(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        return Py.floatRepr(d);
    }

    private void newline(int level) {
        out.append('\n');
        for (int i = 0; i < level; i++) {
            out.append(indent);
        }
    }

    private void writeList(List<?> list, int level) {
        if (list.isEmpty()) {
            out.append("[]");
            return;
        }
        out.append('[');
        for (int i = 0; i < list.size(); i++) {
            if (i > 0) {
                out.append(itemSeparator);
            }
            if (indent != null) {
                newline(level + 1);
            }
            write(list.get(i), level + 1);
        }
        if (indent != null) {
            newline(level);
        }
        out.append(']');
    }

    private void writeMap(Map<?, ?> map, int level) {
        if (map.isEmpty()) {
            out.append("{}");
            return;
        }
        List<Map.Entry<?, ?>> entries = new ArrayList<>(map.entrySet());
        if (sortKeys) {
            entries.sort((a, b) -> Py.order("<", a.getKey(), b.getKey()));
        }
        out.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> entry : entries) {
            if (!first) {
                out.append(itemSeparator);
            }
            first = false;
            if (indent != null) {
                newline(level + 1);
            }
            writeString(keyText(entry.getKey()));
            out.append(keySeparator);
            write(entry.getValue(), level + 1);
        }
        if (indent != null) {
            newline(level);
        }
        out.append('}');
    }

    /** json.dumps turns str, int, float, bool and None keys into strings and rejects every other key. */
    private static String keyText(Object key) {
        if (key instanceof String s) {
            return s;
        }
        if (key == null) {
            return "null";
        }
        if (key instanceof Boolean b) {
            return b ? "true" : "false";
        }
        if (Py.isInt(key)) {
            return key.toString();
        }
        if (Py.isFloat(key)) {
            return floatText(Py.asDouble(key));
        }
        throw ChatTemplateException.typeError("keys must be str, int, float, bool or None, not " + Py.typeName(key));
    }

    private void writeString(String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || (ensureAscii && c > 0x7E)) {
                        out.append("\\u");
                        String hex = Integer.toHexString(c);
                        out.append("0".repeat(4 - hex.length())).append(hex);
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
