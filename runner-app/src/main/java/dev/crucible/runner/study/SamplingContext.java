package dev.crucible.runner.study;

import java.util.List;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * What a sampler sees when a trial starts.
 *
 * @param studySeed   the study's seed, for draws shared by several trials (the startup design)
 * @param trialNumber the number of the trial being sampled
 * @param finished    every finished trial (complete and failed), by number
 * @param objectives  the study's objectives, in score order
 * @param random      this trial's random source
 */
public record SamplingContext(long studySeed, int trialNumber, List<FrozenTrial> finished, List<Objective> objectives,
                              RandomGenerator random) {
    public SamplingContext {
        finished = List.copyOf(Objects.requireNonNull(finished, "finished is null"));
        objectives = List.copyOf(Objects.requireNonNull(objectives, "objectives is null"));
        Objects.requireNonNull(random, "random is null");
    }

    /** Finished trials the sampler can learn from (see {@link FrozenTrial#isUsableFor}), by number. */
    public List<FrozenTrial> completeTrials() {
        return finished.stream().filter(t -> t.isUsableFor(objectives)).toList();
    }
}
