package dev.crucible.api.model;

/**
 * How a checkpoint rescales its rotary frequencies ({@code rope_scaling} in config.json). Only kinds whose
 * frequencies do not depend on the sequence length are here: the model definition computes them once.
 */
public sealed interface RopeScaling {

    /** No scaling: {@code rope_scaling} absent, null or of type "default". */
    record None() implements RopeScaling {
    }

    /** Position interpolation: every frequency divided by {@code factor}. */
    record Linear(double factor) implements RopeScaling {
        public Linear {
            if (!(factor > 0)) {
                throw new IllegalArgumentException("linear rope factor must be positive: " + factor);
            }
        }
    }

    /**
     * Llama 3.1's scaling: frequencies whose wavelength exceeds {@code originalMaxPositions / lowFreqFactor} are
     * divided by {@code factor}, those shorter than {@code originalMaxPositions / highFreqFactor} are kept, and
     * the band between is interpolated smoothly. It applies at every sequence length.
     */
    record Llama3(double factor, double lowFreqFactor, double highFreqFactor, long originalMaxPositions)
            implements RopeScaling {
        public Llama3 {
            if (!(factor > 0) || !(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor) || originalMaxPositions <= 0) {
                throw new IllegalArgumentException("inconsistent llama3 rope scaling: factor " + factor
                        + ", low_freq_factor " + lowFreqFactor + ", high_freq_factor " + highFreqFactor
                        + ", original_max_position_embeddings " + originalMaxPositions);
            }
        }
    }
}
