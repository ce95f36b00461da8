package dev.crucible.huggingface.template;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What {@code dict.keys()}, {@code dict.values()} and {@code dict.items()} return: a live view of the dict that can
 * be iterated any number of times and measured, but not indexed, and that prints as {@code dict_items([...])}.
 */
final class PyView {

    enum Kind { KEYS, VALUES, ITEMS }

    private final Map<?, ?> map;
    private final Kind kind;

    PyView(Map<?, ?> map, Kind kind) {
        this.map = map;
        this.kind = kind;
    }

    Kind kind() {
        return kind;
    }

    int size() {
        return map.size();
    }

    String typeName() {
        return switch (kind) {
            case KEYS -> "dict_keys";
            case VALUES -> "dict_values";
            case ITEMS -> "dict_items";
        };
    }

    List<Object> items() {
        return switch (kind) {
            case KEYS -> new ArrayList<>(map.keySet());
            case VALUES -> new ArrayList<>(map.values());
            case ITEMS -> Py.items(map);
        };
    }

    boolean contains(Object item) {
        return switch (kind) {
            case KEYS -> Py.contains(map, item);
            case VALUES -> Py.contains(items(), item);
            case ITEMS -> {
                if (!(item instanceof PyTuple pair) || pair.size() != 2 || !Py.contains(map, pair.get(0))) {
                    yield false;
                }
                yield Py.eq(Py.getitem(map, pair.get(0)), pair.get(1));
            }
        };
    }

    /** Keys and items views compare like sets; values views only equal themselves. */
    boolean sameAs(PyView other) {
        if (this == other) {
            return true;
        }
        if (kind == Kind.VALUES || other.kind != kind || other.size() != size()) {
            return false;
        }
        for (Object item : items()) {
            if (!other.contains(item)) {
                return false;
            }
        }
        return true;
    }
}
