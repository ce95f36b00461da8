package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A projection {@code y = x·Wᵀ + b}, named as PEFT targets it.
 *
 * @param module e.g. {@code model.layers.3.mlp.down_proj}; its weight is {@code module + ".weight"} {@code [out, in]}
 * @param layer  its decoder layer
 * @param bias   whether it has a bias {@code [out]}
 */
public record Linear(String module, Role role, int layer, long in, long out, boolean bias) {

    public Linear {
        Objects.requireNonNull(module, "module is null");
        if (!role.isProjection()) {
            throw new IllegalArgumentException(module + ": " + role + " is not a projection");
        }
    }

    public Parameter weight() {
        return new Parameter(module + ".weight", role, layer, new long[] {out, in}, false);
    }

    public Optional<Parameter> biasParameter() {
        return bias ? Optional.of(new Parameter(module + ".bias", role, layer, new long[] {out}, true))
                : Optional.empty();
    }

    /** The weight, then the bias when there is one. */
    public List<Parameter> parameters() {
        List<Parameter> parameters = new ArrayList<>(List.of(weight()));
        biasParameter().ifPresent(parameters::add);
        return parameters;
    }
}
