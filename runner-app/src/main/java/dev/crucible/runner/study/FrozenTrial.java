package dev.crucible.runner.study;

import dev.crucible.api.scoring.Score;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A finished trial, as the journal records it and the sampler reads it.
 *
 * @param number        0-based, unique within a study, in the order trials were started
 * @param params        external values ({@code Double}, {@code Long}, {@code String}) in the order they were suggested
 * @param distributions the distribution each parameter was drawn from (same keys as {@code params})
 * @param scores        one per study objective, in the study's objective order; empty for a failed trial
 * @param failure       why a failed trial failed; null for a complete one
 */
public record FrozenTrial(
        int number,
        TrialState state,
        Map<String, Object> params,
        Map<String, ParameterDistribution> distributions,
        List<Score> scores,
        Instant start,
        Instant end,
        String failure) {

    public FrozenTrial {
        if (number < 0) {
            throw new IllegalArgumentException("trial number is negative: " + number);
        }
        Objects.requireNonNull(state, "state is null");
        Objects.requireNonNull(start, "start is null");
        Objects.requireNonNull(end, "end is null");
        params = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(params, "params is null")));
        distributions = Collections.unmodifiableMap(
                new LinkedHashMap<>(Objects.requireNonNull(distributions, "distributions is null")));
        scores = List.copyOf(Objects.requireNonNull(scores, "scores is null"));
        if (!params.keySet().equals(distributions.keySet())) {
            throw new IllegalArgumentException("trial " + number + ": params " + params.keySet()
                    + " and distributions " + distributions.keySet() + " differ");
        }
        for (Map.Entry<String, ParameterDistribution> e : distributions.entrySet()) {
            e.getValue().toInternal(params.get(e.getKey()));
        }
        if (state == TrialState.COMPLETE && failure != null) {
            throw new IllegalArgumentException("a complete trial has no failure reason");
        }
        if (state == TrialState.FAIL && failure == null) {
            throw new IllegalArgumentException("a failed trial needs a failure reason");
        }
    }

    public Duration duration() {
        return Duration.between(start, end);
    }

    /**
     * True when the optimizer can learn from this trial: it completed with one score per objective and no
     * optimized score is NaN.
     */
    boolean isUsableFor(List<Objective> objectives) {
        if (state != TrialState.COMPLETE || scores.size() != objectives.size()) {
            return false;
        }
        for (int i = 0; i < objectives.size(); i++) {
            if (objectives.get(i).isOptimized() && Double.isNaN(scores.get(i).value())) {
                return false;
            }
        }
        return true;
    }

    /** The internal (sampler) form of one parameter. */
    double internalValue(String name) {
        return distributions.get(name).toInternal(params.get(name));
    }
}
