package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Grouped-query self-attention with rotary positions: q, k and v projections, optional RMSNorm of queries and keys,
 * scaled dot-product attention over the KV cache, and the output projection.
 *
 * @param query      null when q, k and v are fused ({@code qkv})
 * @param key        null when fused
 * @param value      null when fused
 * @param queryNorm  null unless queries are normalized
 * @param keyNorm    null unless keys are normalized
 * @param headNorms  the q/k norms act on each head ({@code [headDim]}, Qwen3) rather than on the whole projection
 *                   before it is split into heads (OLMo 2)
 * @param window     0 for attention over every earlier token; else a query sees itself and the {@code window - 1}
 *                   tokens before it (Mistral's {@code sliding_window}, transformers' sliding-window mask)
 * @param scale      the factor of the query-key products: {@code 1/sqrt(headDim)} unless the family says otherwise
 * @param rotaryDims how many leading dimensions of each head rotary embeddings rotate: {@code headDim}, fewer with
 *                   partial rotary (Phi-3), 0 for a layer without positions (SmolLM3's NoPE layers)
 * @param rotaryTable which of the model's rotary tables the layer uses: 0, or 1 for the sliding layers' own base
 *                   (Gemma 3's {@code rope_local_base_freq})
 * @param softcap    0, or the cap of the attention scores ({@code softcap · tanh(scores / softcap)}, Gemma 2)
 * @param qkv        null unless q, k and v are one projection, rows in that order (Phi-3's {@code qkv_proj}); its
 *                   output is split into the three (views, no copies of the weight)
 */
public record Attention(Linear query, Linear key, Linear value, Linear output, Norm queryNorm, Norm keyNorm,
                        boolean headNorms, int heads, int kvHeads, int headDim, int window, double scale,
                        int rotaryDims, int rotaryTable, double softcap, Linear qkv) implements Block {

    public Attention {
        Objects.requireNonNull(output, "output is null");
        boolean separate = query != null && key != null && value != null;
        boolean none = query == null && key == null && value == null;
        if (separate == (qkv != null) || (!separate && !none)) {
            throw new IllegalArgumentException("attention has q, k and v, or qkv, not both");
        }
        if ((queryNorm == null) != (keyNorm == null)) {
            throw new IllegalArgumentException("queries and keys are normalized both or neither");
        }
        if (window < 0) {
            throw new IllegalArgumentException("window " + window + " is negative");
        }
        if (rotaryDims < 0 || rotaryDims > headDim || rotaryDims % 2 != 0) {
            throw new IllegalArgumentException("rotary dimensions " + rotaryDims + " for heads of " + headDim);
        }
    }

    @Override
    public List<Linear> linears() {
        return qkv != null ? List.of(qkv, output) : List.of(query, key, value, output);
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
