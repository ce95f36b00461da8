package dev.crucible.api.scoring;

import java.util.List;
import java.util.function.Predicate;

/**
 * What a scorer may look at. It gives generated responses and first-token log-probabilities, computed once
 * per model state and cached, never the model itself: scorers stay independent of the hardware.
 */
public interface ScoringContext {

    /** The evaluation prompts of a set, as the user wrote them (before chat templating). */
    List<String> prompts(PromptSet set);

    /** Greedy responses of the current model state to {@code prompts(set)}, in order. */
    List<String> responses(PromptSet set);

    /**
     * The same responses, except that each may end as soon as {@code settled} holds for its text so far: for a
     * scorer whose verdict on a response cannot change once the predicate holds for a beginning of it (a refusal
     * marker, once generated, is in every continuation), so the rest need not be generated. A response that ended
     * this way is a beginning of the whole one; the others are whole. The default (and the base model's outputs,
     * which a study keeps) generates every response whole.
     */
    default List<String> responses(PromptSet set, Predicate<String> settled) {
        return responses(set);
    }

    /** Log-softmax of the raw logits of the first generated token, one row per prompt of {@code set}. */
    float[][] firstTokenLogProbs(PromptSet set);

    /** The same for the unedited base model; a scorer comparing against the base reads this. */
    float[][] baseFirstTokenLogProbs(PromptSet set);
}
