package dev.crucible.runner.study;

import java.util.Map;
import java.util.random.RandomGenerator;

/** Uniform random search: every parameter independently, uniform over its range (log-uniform for log floats). */
public final class RandomSampler implements Sampler {

    @Override
    public Map<String, Draw> sampleJoint(SamplingContext context) {
        return Map.of();
    }

    @Override
    public double sampleIndependent(SamplingContext context, String name, ParameterDistribution distribution) {
        return uniform(distribution, context.random());
    }

    /** One uniform draw in internal form. */
    static double uniform(ParameterDistribution distribution, RandomGenerator random) {
        return switch (distribution) {
            case ParameterDistribution.FloatRange f when f.log() -> Math.clamp(
                    Math.exp(Math.log(f.low()) + random.nextDouble() * (Math.log(f.high()) - Math.log(f.low()))),
                    f.low(), f.high());
            case ParameterDistribution.FloatRange f -> Math.clamp(
                    f.low() + random.nextDouble() * (f.high() - f.low()), f.low(), f.high());
            case ParameterDistribution.IntRange r -> random.nextLong(r.low(), r.high() + 1);
            case ParameterDistribution.Categorical c -> random.nextInt(c.choices().size());
        };
    }
}
