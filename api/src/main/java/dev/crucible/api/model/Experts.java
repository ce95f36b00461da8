package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import java.util.Set;

/**
 * What config.json says about a mixture-of-experts MLP, as transformers reads it ({@code num_experts} or
 * {@code num_local_experts}, {@code num_experts_per_tok}, {@code moe_intermediate_size}, {@code norm_topk_prob},
 * {@code mlp_only_layers}, {@code decoder_sparse_step}); {@link #NONE} for a dense model.
 *
 * @param count       experts per sparse layer, 0 for none
 * @param perToken    experts each token is routed to
 * @param width       each expert's intermediate width
 * @param normalize   the chosen experts' probabilities are renormalized to sum to one
 * @param denseLayers layers that keep the dense MLP ({@code mlp_only_layers})
 * @param sparseStep  every {@code sparseStep}-th layer is sparse ({@code decoder_sparse_step})
 */
public record Experts(int count, int perToken, int width, boolean normalize, Set<Integer> denseLayers,
                      int sparseStep) {

    public static final Experts NONE = new Experts(0, 0, 0, false, Set.of(), 1);

    public Experts {
        denseLayers = Set.copyOf(denseLayers);
        if (count < 0 || (count > 0 && (perToken < 1 || perToken > count || width < 1 || sparseStep < 1))) {
            throw new UserInputException("config.json: a mixture of " + count + " experts needs num_experts_per_tok "
                    + "between 1 and " + count + ", a positive expert width and decoder_sparse_step (got "
                    + perToken + ", " + width + ", " + sparseStep + ")");
        }
    }

    /** Whether {@code layer}'s MLP is the mixture (transformers' rule in Qwen3MoeDecoderLayer). */
    public boolean sparse(int layer) {
        return count > 0 && !denseLayers.contains(layer) && (layer + 1) % sparseStep == 0;
    }
}
