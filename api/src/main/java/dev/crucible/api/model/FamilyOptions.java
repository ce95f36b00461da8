package dev.crucible.api.model;

import java.util.List;
import java.util.Objects;
import java.util.OptionalDouble;

/**
 * What a family's config.json says beyond the keys every family shares, read by its {@link Architecture}; the
 * neutral value of each for the families that have no such key ({@link #NONE}).
 *
 * @param embeddingMultiplier  Granite's {@code embedding_multiplier}: the embedded tokens are multiplied by it
 * @param residualMultiplier   Granite's {@code residual_multiplier}: each block's output is multiplied by it
 * @param attentionMultiplier  Granite's {@code attention_multiplier}: the attention scale instead of
 *                             {@code 1/sqrt(head_dim)}
 * @param logitsScaling        Granite's {@code logits_scaling}: the logits are divided by it
 * @param positionlessLayers   the layers that apply no rotary embedding (SmolLM3's {@code no_rope_layers} zeros)
 * @param partialRotaryFactor  the share of each head rotary embeddings rotate (Phi-3's {@code partial_rotary_factor})
 * @param slidingLayers        per layer, whether it attends through the sliding window ({@code layer_types});
 *                             empty when every layer does (Mistral) or the model has no window
 */
public record FamilyOptions(double embeddingMultiplier, double residualMultiplier, OptionalDouble attentionMultiplier,
                            double logitsScaling, List<Integer> positionlessLayers, double partialRotaryFactor,
                            List<Boolean> slidingLayers) {

    public static final FamilyOptions NONE = new FamilyOptions(1.0, 1.0, OptionalDouble.empty(), 1.0, List.of(), 1.0,
            List.of());

    public FamilyOptions {
        Objects.requireNonNull(attentionMultiplier, "attentionMultiplier is null");
        positionlessLayers = List.copyOf(positionlessLayers);
        slidingLayers = List.copyOf(slidingLayers);
    }

    public FamilyOptions withPartialRotaryFactor(double factor) {
        return new FamilyOptions(embeddingMultiplier, residualMultiplier, attentionMultiplier, logitsScaling,
                positionlessLayers, factor, slidingLayers);
    }
}
