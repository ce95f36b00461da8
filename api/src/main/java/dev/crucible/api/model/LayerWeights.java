package dev.crucible.api.model;

import dev.crucible.api.tensor.Tensor;
import java.util.List;
import java.util.Objects;

/**
 * One decoder layer's parameters. {@code queryNorm}/{@code keyNorm} are null unless the architecture normalizes
 * queries and keys per head (Qwen3).
 */
public record LayerWeights(
        Tensor inputNorm,
        LoraLinear query,
        LoraLinear key,
        LoraLinear value,
        LoraLinear output,
        Tensor queryNorm,
        Tensor keyNorm,
        Tensor postAttentionNorm,
        LoraLinear gate,
        LoraLinear up,
        LoraLinear down) {

    public LayerWeights {
        Objects.requireNonNull(inputNorm, "inputNorm is null");
        Objects.requireNonNull(query, "query is null");
        Objects.requireNonNull(key, "key is null");
        Objects.requireNonNull(value, "value is null");
        Objects.requireNonNull(output, "output is null");
        Objects.requireNonNull(postAttentionNorm, "postAttentionNorm is null");
        Objects.requireNonNull(gate, "gate is null");
        Objects.requireNonNull(up, "up is null");
        Objects.requireNonNull(down, "down is null");
    }

    /** The seven adaptable projections, attention first. */
    public List<LoraLinear> linears() {
        return List.of(query, key, value, output, gate, up, down);
    }
}
