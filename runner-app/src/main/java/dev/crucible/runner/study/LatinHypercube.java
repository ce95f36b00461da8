package dev.crucible.runner.study;

import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/**
 * The startup design: a Latin hypercube over the first {@code size} trial numbers. Each parameter's range is cut into
 * {@code size} equal strata and every stratum goes to exactly one of those trials, in an order shuffled per
 * parameter (from the study seed and the parameter's name); within its stratum the value is uniform. So the first
 * trials cover every parameter's range evenly instead of clumping as independent draws do, while each trial still
 * depends only on (seed, trial number, name), which keeps a resumed study identical to an uninterrupted one.
 */
final class LatinHypercube {

    /** Keeps the shuffles' seeds apart from the trials' own random streams, which mix (seed, trial number). */
    private static final long SHUFFLE_SALT = 0x4C48535F53414C54L;

    private LatinHypercube() {
    }

    /**
     * Trial {@code trialNumber}'s value of one parameter, in internal form: its stratum of the design when the number
     * is below {@code size}, a uniform draw otherwise.
     */
    static double sample(long studySeed, int trialNumber, int size, String name, ParameterDistribution distribution,
                         RandomGenerator random) {
        if (trialNumber >= size) {
            return RandomSampler.uniform(distribution, random);
        }
        double u = (stratum(studySeed, trialNumber, size, name) + random.nextDouble()) / size;
        return switch (distribution) {
            case ParameterDistribution.FloatRange f when f.log() -> Math.clamp(
                    Math.exp(Math.log(f.low()) + u * (Math.log(f.high()) - Math.log(f.low()))), f.low(), f.high());
            case ParameterDistribution.FloatRange f -> Math.clamp(f.low() + u * (f.high() - f.low()), f.low(), f.high());
            case ParameterDistribution.IntRange r -> Math.min(r.high(), r.low() + (long) Math.floor(u * (r.high() - r.low() + 1.0)));
            case ParameterDistribution.Categorical c -> Math.min(c.choices().size() - 1, (int) Math.floor(u * c.choices().size()));
        };
    }

    /** The stratum the shuffled order of {@code name} gives trial {@code trialNumber}: a Fisher-Yates shuffle, seeded. */
    static int stratum(long studySeed, int trialNumber, int size, String name) {
        SplittableRandom shuffle = new SplittableRandom(Study.mix64(studySeed ^ Study.mix64(SHUFFLE_SALT ^ name.hashCode()) ^ size));
        int[] order = new int[size];
        for (int i = 0; i < size; i++) {
            order[i] = i;
        }
        for (int i = size - 1; i > 0; i--) {
            int j = shuffle.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order[trialNumber];
    }
}
