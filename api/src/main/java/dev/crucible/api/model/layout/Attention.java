package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Grouped-query self-attention with rotary positions: q, k and v projections, optional per-head RMSNorm of queries
 * and keys (Qwen3), scaled dot-product attention over the KV cache, and the output projection.
 *
 * @param queryNorm null unless queries are normalized per head
 * @param keyNorm   null unless keys are normalized per head
 * @param window    0 for attention over every earlier token; else a query sees itself and the {@code window - 1}
 *                  tokens before it (Mistral's {@code sliding_window}, transformers' sliding-window mask)
 */
public record Attention(Linear query, Linear key, Linear value, Linear output, Norm queryNorm, Norm keyNorm,
                        int heads, int kvHeads, int headDim, int window) implements Block {

    public Attention {
        Objects.requireNonNull(query, "query is null");
        Objects.requireNonNull(key, "key is null");
        Objects.requireNonNull(value, "value is null");
        Objects.requireNonNull(output, "output is null");
        if ((queryNorm == null) != (keyNorm == null)) {
            throw new IllegalArgumentException("queries and keys are normalized both or neither");
        }
        if (window < 0) {
            throw new IllegalArgumentException("window " + window + " is negative");
        }
    }

    @Override
    public List<Linear> linears() {
        return List.of(query, key, value, output);
    }

    @Override
    public List<Parameter> parameters() {
        List<Parameter> parameters = new ArrayList<>();
        linears().forEach(linear -> parameters.addAll(linear.parameters()));
        if (queryNorm != null) {
            parameters.add(queryNorm.parameter());
            parameters.add(keyNorm.parameter());
        }
        return parameters;
    }

    @Override
    public boolean stateful() {
        return true;
    }
}
