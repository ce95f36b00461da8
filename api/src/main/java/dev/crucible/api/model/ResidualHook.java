package dev.crucible.api.model;

import dev.crucible.api.tensor.Tensor;

/**
 * Sees the residual stream as a forward step computes it, to capture hidden states (abliteration directions,
 * the golden checks). Implementations must not read values to the host: they run inside the step.
 */
public interface ResidualHook {

    /** No observation. */
    ResidualHook NONE = new ResidualHook() {
    };

    /**
     * The residual stream {@code [batch, tokens, hidden]} at {@code boundary}: 0 after the embeddings, {@code i}
     * after decoder layer {@code i - 1} (before the final norm).
     */
    default void residual(int boundary, Tensor hidden) {
    }

    /** The final RMSNorm's output on the positions the step computes logits for. */
    default void finalNorm(Tensor normed) {
    }
}
