package dev.crucible.runner.study;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A running trial. The experiment asks it for parameters in the order it needs them (define-by-run), so a
 * parameter may depend on earlier ones ({@code min_weight = suggestFloat("min_weight_fraction", 0, 1) * max}) or
 * be asked only in some trials. Asking again for a name returns the value already drawn. Not thread-safe: one
 * trial belongs to one experiment thread.
 */
public final class Trial {

    private final Study study;
    private final SamplingContext context;
    private final Map<String, Sampler.Draw> jointDraws;
    private final Instant start;
    private final Map<String, Object> params = new LinkedHashMap<>();
    private final Map<String, ParameterDistribution> distributions = new LinkedHashMap<>();
    private boolean finished;

    Trial(Study study, SamplingContext context, Map<String, Sampler.Draw> jointDraws, Instant start) {
        this.study = study;
        this.context = context;
        this.jointDraws = Map.copyOf(jointDraws);
        this.start = start;
    }

    public int number() {
        return context.trialNumber();
    }

    /** A real number, uniform prior on {@code [low, high]}. */
    public double suggestFloat(String name, double low, double high) {
        return suggestFloat(name, low, high, false);
    }

    /** A real number on {@code [low, high]}; {@code log} puts the uniform prior on log values (needs low > 0). */
    public double suggestFloat(String name, double low, double high, boolean log) {
        return (Double) suggest(name, new ParameterDistribution.FloatRange(low, high, log));
    }

    /** An integer in {@code [low, high]}, both inclusive. */
    public long suggestInt(String name, long low, long high) {
        return (Long) suggest(name, new ParameterDistribution.IntRange(low, high));
    }

    /** One of {@code choices}. */
    public String suggestCategorical(String name, List<String> choices) {
        return (String) suggest(name, new ParameterDistribution.Categorical(choices));
    }

    /** The parameters drawn so far, in the order they were asked for. */
    public Map<String, Object> params() {
        return Collections.unmodifiableMap(params);
    }

    Map<String, ParameterDistribution> distributions() {
        return Collections.unmodifiableMap(distributions);
    }

    Instant start() {
        return start;
    }

    Study study() {
        return study;
    }

    void markFinished() {
        if (finished) {
            throw new IllegalStateException("trial " + number() + " is already finished");
        }
        finished = true;
    }

    private Object suggest(String name, ParameterDistribution distribution) {
        if (finished) {
            throw new IllegalStateException("trial " + number() + " is finished; it cannot draw '" + name + "'");
        }
        ParameterDistribution earlier = distributions.get(name);
        if (earlier != null) {
            if (!earlier.equals(distribution)) {
                throw new IllegalArgumentException("parameter '" + name + "' was drawn from " + earlier
                        + " in this trial and cannot be drawn again from " + distribution);
            }
            return params.get(name);
        }
        double internal;
        Sampler.Draw joint = jointDraws.get(name);
        if (distribution.isSingleValue()) {
            internal = switch (distribution) {
                case ParameterDistribution.FloatRange f -> f.low();
                case ParameterDistribution.IntRange r -> r.low();
                case ParameterDistribution.Categorical c -> 0;
            };
        } else if (joint != null && joint.distribution().equals(distribution)) {
            internal = joint.internalValue();
        } else {
            internal = study.sampler().sampleIndependent(context, name, distribution);
        }
        Object value = distribution.toExternal(internal);
        params.put(name, value);
        distributions.put(name, distribution);
        return value;
    }
}
