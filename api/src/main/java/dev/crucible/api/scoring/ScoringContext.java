package dev.crucible.api.scoring;

import java.util.List;

/**
 * What a scorer may look at. It gives generated responses and first-token log-probabilities, computed once
 * per model state and cached, never the model itself: scorers stay independent of the hardware.
 */
public interface ScoringContext {

    /** The evaluation prompts of a set, as the user wrote them (before chat templating). */
    List<String> prompts(PromptSet set);

    /** Greedy responses of the current model state to {@code prompts(set)}, in order. */
    List<String> responses(PromptSet set);

    /** Log-softmax of the raw logits of the first generated token, one row per prompt of {@code set}. */
    float[][] firstTokenLogProbs(PromptSet set);

    /** The same for the unedited base model; a scorer comparing against the base reads this. */
    float[][] baseFirstTokenLogProbs(PromptSet set);
}
