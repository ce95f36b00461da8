package dev.crucible.api.model.layout;

import java.util.Objects;

/**
 * An RMSNorm's weight.
 *
 * @param name  the checkpoint name, e.g. {@code model.layers.0.input_layernorm.weight}
 * @param layer its decoder layer, -1 for the final norm
 * @param width the normalized dimension: the hidden size, or a head's width for per-head norms
 */
public record Norm(String name, Role role, int layer, long width) {

    public Norm {
        Objects.requireNonNull(name, "name is null");
        if (role != Role.NORM && role != Role.QUERY_NORM && role != Role.KEY_NORM) {
            throw new IllegalArgumentException(name + ": " + role + " is not a norm");
        }
    }

    public Parameter parameter() {
        return new Parameter(name, role, layer, new long[] {width}, false);
    }
}
