package dev.crucible.api.model;

import java.util.Arrays;
import java.util.Objects;

/**
 * One prompt's forward pass at its last token, in float32.
 *
 * @param residuals {@code numLayers + 1} vectors of {@code hiddenSize}: after the embeddings, then after each
 *                  decoder layer (before the final norm); Hugging Face's {@code hidden_states[0..L-1]} plus the
 *                  un-normed last layer
 * @param finalNorm the final RMSNorm's output (what Hugging Face reports as the last hidden state)
 * @param logits    the raw logits that choose the first generated token, {@code vocabSize} values
 */
public record Activations(float[][] residuals, float[] finalNorm, float[] logits) {
    public Activations {
        residuals = deepCopy(Objects.requireNonNull(residuals, "residuals is null"));
        finalNorm = Objects.requireNonNull(finalNorm, "finalNorm is null").clone();
        logits = Objects.requireNonNull(logits, "logits is null").clone();
    }

    @Override
    public float[][] residuals() {
        return deepCopy(residuals);
    }

    /** The residual after boundary {@code index}: 0 = embeddings, i = after layer i-1. */
    public float[] residual(int index) {
        return residuals[index].clone();
    }

    public int residualCount() {
        return residuals.length;
    }

    @Override
    public float[] finalNorm() {
        return finalNorm.clone();
    }

    @Override
    public float[] logits() {
        return logits.clone();
    }

    private static float[][] deepCopy(float[][] rows) {
        float[][] copy = new float[rows.length][];
        for (int i = 0; i < rows.length; i++) {
            copy[i] = rows[i].clone();
        }
        return copy;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Activations that && Arrays.deepEquals(residuals, that.residuals)
                && Arrays.equals(finalNorm, that.finalNorm) && Arrays.equals(logits, that.logits);
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.deepHashCode(residuals), Arrays.hashCode(finalNorm), Arrays.hashCode(logits));
    }

    @Override
    public String toString() {
        return "Activations[" + residuals.length + " residuals of " + finalNorm.length + ", " + logits.length
                + " logits]";
    }
}
