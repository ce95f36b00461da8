package dev.crucible.runner.study;

import java.util.Map;
import java.util.Objects;

/**
 * Chooses parameter values for a new trial from the trials finished so far. Values are exchanged in their
 * internal form (see {@link ParameterDistribution#toInternal}). All randomness comes from
 * {@link SamplingContext#random()}, which the study derives from (seed, trial number): a sampler keeps no random
 * state of its own, so a resumed study draws exactly what an uninterrupted one would have drawn.
 */
public interface Sampler {

    /**
     * Draws, before the objective runs, values for the parameters the sampler can model jointly (for TPE: those
     * every finished trial used with the same distribution). May be empty.
     */
    Map<String, Draw> sampleJoint(SamplingContext context);

    /** Draws one parameter that the joint draw did not cover (startup phase, conditional or new parameters). */
    double sampleIndependent(SamplingContext context, String name, ParameterDistribution distribution);

    /** A jointly drawn value and the distribution it was drawn from. */
    record Draw(ParameterDistribution distribution, double internalValue) {
        public Draw {
            Objects.requireNonNull(distribution, "distribution is null");
        }
    }
}
