package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** The SiLU-gated MLP: {@code down(silu(gate(x)) · up(x))}. */
public record GatedMlp(Linear gate, Linear up, Linear down) implements Block {

    public GatedMlp {
        Objects.requireNonNull(gate, "gate is null");
        Objects.requireNonNull(up, "up is null");
        Objects.requireNonNull(down, "down is null");
    }

    @Override
    public List<Linear> linears() {
        return List.of(gate, up, down);
    }

    @Override
    public List<Parameter> parameters() {
        List<Parameter> parameters = new ArrayList<>();
        linears().forEach(linear -> parameters.addAll(linear.parameters()));
        return parameters;
    }

    @Override
    public boolean stateful() {
        return false;
    }
}
