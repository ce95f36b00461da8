package dev.crucible.api.model.layout;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A block on the residual stream: {@code hidden = hidden + scale · postNorm(block(preNorm(hidden)))}. Llama's
 * families norm before the block only; OLMo 2 norms the block's output only; Gemma does both; Granite scales what
 * the block adds ({@code residual_multiplier}).
 *
 * @param preNorm  the RMSNorm of the residual stream the block reads, or null when it reads the stream as it is
 * @param postNorm the RMSNorm of the block's output before it is added, or null
 * @param scale    what the block's (normed) output is multiplied by before it is added; 1 for most families
 */
public record Residual(Norm preNorm, Block block, Norm postNorm, double scale) {

    public Residual {
        Objects.requireNonNull(block, "block is null");
    }

    /** The pre-norm arrangement of Llama and the families like it. */
    public Residual(Norm preNorm, Block block) {
        this(Objects.requireNonNull(preNorm, "preNorm is null"), block, null, 1.0);
    }

    /** Its norms' weights and the block's tensors, in the order they are bound: pre-norm, block, post-norm. */
    public List<Parameter> parameters() {
        List<Parameter> parameters = new ArrayList<>();
        if (preNorm != null) {
            parameters.add(preNorm.parameter());
        }
        parameters.addAll(block.parameters());
        if (postNorm != null) {
            parameters.add(postNorm.parameter());
        }
        return parameters;
    }
}
