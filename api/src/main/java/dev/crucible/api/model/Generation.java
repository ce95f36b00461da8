package dev.crucible.api.model;

import java.util.Arrays;
import java.util.Objects;

/**
 * One prompt's greedy continuation.
 *
 * @param tokens          generated ids, the stop token included when {@code stopped}
 * @param stopped         whether a stop token ended it before {@code maxNewTokens}
 * @param firstStepLogits float32 logits that chose {@code tokens[0]}
 */
public record Generation(int[] tokens, boolean stopped, float[] firstStepLogits) {
    public Generation {
        tokens = Objects.requireNonNull(tokens, "tokens is null").clone();
        firstStepLogits = Objects.requireNonNull(firstStepLogits, "firstStepLogits is null").clone();
    }

    @Override
    public int[] tokens() {
        return tokens.clone();
    }

    @Override
    public float[] firstStepLogits() {
        return firstStepLogits.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Generation that && stopped == that.stopped && Arrays.equals(tokens, that.tokens)
                && Arrays.equals(firstStepLogits, that.firstStepLogits);
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(tokens), stopped, Arrays.hashCode(firstStepLogits));
    }

    @Override
    public String toString() {
        return "Generation[" + Arrays.toString(tokens) + (stopped ? ", stopped" : "") + "]";
    }
}
