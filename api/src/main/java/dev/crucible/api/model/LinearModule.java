package dev.crucible.api.model;

import java.util.Objects;

/**
 * One adaptable projection of a placed model, named as PEFT targets it.
 *
 * @param name        e.g. {@code model.layers.3.mlp.down_proj}; its base weight is {@code name + ".weight"}
 * @param inFeatures  columns of the base weight (A is {@code [r, inFeatures]})
 * @param outFeatures rows of the base weight (B is {@code [outFeatures, r]})
 */
public record LinearModule(String name, long inFeatures, long outFeatures) {
    public LinearModule {
        Objects.requireNonNull(name, "name is null");
    }
}
