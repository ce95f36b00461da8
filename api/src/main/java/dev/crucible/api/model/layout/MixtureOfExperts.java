package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A sparse mixture of SwiGLU experts (Qwen3-MoE, Mixtral): the router scores every expert for a token, softmax
 * over them, the {@code perToken} best are run and their outputs summed with those probabilities (renormalized over
 * the chosen ones when {@code normalize}). Each expert is stored as its own gate/up/down projections, as the hub's
 * checkpoints carry them, so adapters and abliteration reach every expert.
 */
public record MixtureOfExperts(Linear router, List<GatedMlp> experts, int perToken, boolean normalize)
        implements Block {

    public MixtureOfExperts {
        Objects.requireNonNull(router, "router is null");
        experts = List.copyOf(experts);
        if (perToken < 1 || perToken > experts.size()) {
            throw new IllegalArgumentException(perToken + " experts per token of " + experts.size());
        }
    }

    /** The router, then each expert's gate, up and down. */
    @Override
    public List<Linear> linears() {
        List<Linear> linears = new ArrayList<>(List.of(router));
        experts.forEach(expert -> linears.addAll(expert.linears()));
        return linears;
    }

    @Override
    public boolean stateful() {
        return false;
    }
}
