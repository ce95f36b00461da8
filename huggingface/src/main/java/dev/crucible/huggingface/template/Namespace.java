package dev.crucible.huggingface.template;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Jinja's {@code namespace()}: the one mutable object a template may create. {@code {% set ns.x = ... %}} inside
 * a loop changes it for the code after the loop, which plain {@code {% set %}} cannot do.
 */
final class Namespace {

    private final Map<String, Object> attributes = new LinkedHashMap<>();

    boolean has(String name) {
        return attributes.containsKey(name);
    }

    Object get(String name) {
        return attributes.get(name);
    }

    void set(String name, Object value) {
        attributes.put(name, value);
    }

    Map<String, Object> attributes() {
        return attributes;
    }
}
