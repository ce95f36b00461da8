package dev.crucible.api.model;

import dev.crucible.api.model.layout.GatedMlp;
import java.util.List;
import java.util.Objects;
import java.util.OptionalDouble;

/**
 * What a family's config.json says beyond the keys every family shares, read by its {@link Architecture}; the
 * neutral value of each for the families that have no such key ({@link #NONE}).
 *
 * @param embeddingMultiplier  what the embedded tokens are multiplied by: Granite's {@code embedding_multiplier},
 *                             Gemma's {@code sqrt(hidden_size)}
 * @param residualMultiplier   Granite's {@code residual_multiplier}: each block's output is multiplied by it
 * @param attentionMultiplier  the attention scale instead of {@code 1/sqrt(head_dim)}: Granite's
 *                             {@code attention_multiplier}, Gemma's {@code query_pre_attn_scalar^-0.5}
 * @param logitsScaling        Granite's {@code logits_scaling}: the logits are divided by it
 * @param positionlessLayers   the layers that apply no rotary embedding (SmolLM3's {@code no_rope_layers} zeros)
 * @param partialRotaryFactor  the share of each head rotary embeddings rotate (Phi-3's {@code partial_rotary_factor})
 * @param slidingLayers        per layer, whether it attends through the sliding window ({@code layer_types});
 *                             empty when every layer does (Mistral) or the model has no window
 * @param activation           the gated MLP's activation ({@code hidden_act}, Gemma's {@code hidden_activation})
 * @param attentionSoftcap     0, or Gemma 2's {@code attn_logit_softcapping}
 * @param logitSoftcap         0, or Gemma 2's {@code final_logit_softcapping}
 * @param localRopeTheta       the RoPE base of the sliding layers when they have their own (Gemma 3's
 *                             {@code rope_local_base_freq}), empty when every layer shares {@code rope_theta}
 */
public record FamilyOptions(double embeddingMultiplier, double residualMultiplier, OptionalDouble attentionMultiplier,
                            double logitsScaling, List<Integer> positionlessLayers, double partialRotaryFactor,
                            List<Boolean> slidingLayers, GatedMlp.Activation activation, double attentionSoftcap,
                            double logitSoftcap, OptionalDouble localRopeTheta) {

    public static final FamilyOptions NONE = new FamilyOptions(1.0, 1.0, OptionalDouble.empty(), 1.0, List.of(), 1.0,
            List.of(), GatedMlp.Activation.SILU, 0, 0, OptionalDouble.empty());

    public FamilyOptions {
        Objects.requireNonNull(attentionMultiplier, "attentionMultiplier is null");
        Objects.requireNonNull(activation, "activation is null");
        Objects.requireNonNull(localRopeTheta, "localRopeTheta is null");
        positionlessLayers = List.copyOf(positionlessLayers);
        slidingLayers = List.copyOf(slidingLayers);
    }

    public FamilyOptions withPartialRotaryFactor(double factor) {
        return new FamilyOptions(embeddingMultiplier, residualMultiplier, attentionMultiplier, logitsScaling,
                positionlessLayers, factor, slidingLayers, activation, attentionSoftcap, logitSoftcap, localRopeTheta);
    }
}
