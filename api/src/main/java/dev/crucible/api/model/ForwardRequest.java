package dev.crucible.api.model;

import java.util.List;

/**
 * Prompts to run through the model once, for their hidden states and first-token logits.
 *
 * @param prompts   token ids per prompt, each non-empty (BOS included where the model expects it)
 * @param batchSize prompts per device batch; 0 lets the backend choose
 */
public record ForwardRequest(List<int[]> prompts, int batchSize) {
    public ForwardRequest {
        prompts = Prompts.copyOf(prompts);
        if (batchSize < 0) {
            throw new IllegalArgumentException("batchSize must be >= 0, got " + batchSize);
        }
    }

    public static ForwardRequest of(List<int[]> prompts) {
        return new ForwardRequest(prompts, 0);
    }

    /** Copies: records must not leak their state. */
    @Override
    public List<int[]> prompts() {
        return Prompts.copyOf(prompts);
    }
}
