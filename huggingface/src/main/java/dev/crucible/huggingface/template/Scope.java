package dev.crucible.huggingface.template;

import java.util.HashMap;
import java.util.Map;

/**
 * Where names are looked up and {@code {% set %}} writes, following Jinja's scoping: the template body, each
 * for-loop iteration, each macro call and each with/set/filter/call block get their own scope; if-blocks do not.
 * An assignment lands in the innermost scope, so a {@code set} inside a loop is gone after the iteration, and only
 * a {@link Namespace} attribute carries a value out.
 */
final class Scope {

    /** Bound by {@link FrameEntry} for names a frame owns but has not assigned yet: they read as undefined. */
    static final Object MISSING = new Object();

    final RenderState state;
    private final Scope parent;
    private Map<String, Object> variables;

    private Scope(RenderState state, Scope parent, Map<String, Object> variables) {
        this.state = state;
        this.parent = parent;
        this.variables = variables;
    }

    static Scope root(RenderState state, Map<String, ?> variables) {
        return new Scope(state, null, new HashMap<>(variables));
    }

    Scope child() {
        return new Scope(state, this, null);
    }

    /** The template's top-level scope. */
    Scope root() {
        Scope scope = this;
        while (scope.parent != null) {
            scope = scope.parent;
        }
        return scope;
    }

    /** The value of {@code name}: the innermost scope that has it, then the globals, else undefined. */
    Object resolve(String name) {
        for (Scope scope = this; scope != null; scope = scope.parent) {
            Map<String, Object> vars = scope.variables;
            if (vars != null) {
                Object value = vars.get(name);
                if (value == MISSING) {
                    return Undefined.variable(name);
                }
                if (value != null || vars.containsKey(name)) {
                    return value;
                }
            }
        }
        Object global = Globals.get(name);
        return global != null ? global : Undefined.variable(name);
    }

    void set(String name, Object value) {
        if (variables == null) {
            variables = new HashMap<>(8);
        }
        variables.put(name, value);
    }
}
