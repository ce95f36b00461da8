package dev.crucible.runner.study;

import dev.crucible.api.scoring.Score;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/**
 * An optimization run: objectives, a sampler, a seed and the finished trials. Use it sequentially:
 * {@link #ask()} a trial, let the experiment draw its parameters and score it, then {@link #tell} or
 * {@link #fail} it. Each trial's random source is derived from (seed, trial number) alone, so a study that
 * {@linkplain #replay replays} its journal continues exactly as an uninterrupted run would have.
 */
public final class Study {

    private final List<Objective> objectives;
    private final Sampler sampler;
    private final long seed;
    private final Clock clock;
    private final List<FrozenTrial> finished = new ArrayList<>();
    private int nextNumber;

    public Study(List<Objective> objectives, Sampler sampler, long seed) {
        this(objectives, sampler, seed, Clock.systemUTC());
    }

    public Study(List<Objective> objectives, Sampler sampler, long seed, Clock clock) {
        this.objectives = List.copyOf(Objects.requireNonNull(objectives, "objectives is null"));
        this.sampler = Objects.requireNonNull(sampler, "sampler is null");
        this.seed = seed;
        this.clock = Objects.requireNonNull(clock, "clock is null");
        if (this.objectives.isEmpty()) {
            throw new IllegalArgumentException("a study needs at least one objective");
        }
        if (this.objectives.stream().map(Objective::name).distinct().count() != this.objectives.size()) {
            throw new IllegalArgumentException("objective names must be distinct: " + this.objectives);
        }
    }

    public List<Objective> objectives() {
        return objectives;
    }

    public long seed() {
        return seed;
    }

    Sampler sampler() {
        return sampler;
    }

    /** Finished trials (complete and failed), by number. */
    public List<FrozenTrial> trials() {
        return List.copyOf(finished);
    }

    /** The number the next {@link #ask()} will give: one past the highest finished or asked number. */
    public int nextTrialNumber() {
        return nextNumber;
    }

    /** The non-dominated complete trials (see {@link ParetoFront#of}). */
    public List<FrozenTrial> paretoFront() {
        return ParetoFront.of(finished, objectives);
    }

    /** Adds a trial finished in an earlier run (read from the journal), as if this study had run it. */
    public void replay(FrozenTrial trial) {
        Objects.requireNonNull(trial, "trial is null");
        if (trial.state() == TrialState.COMPLETE && trial.scores().size() != objectives.size()) {
            throw new IllegalArgumentException("trial " + trial.number() + " has " + trial.scores().size()
                    + " scores, the study has " + objectives.size() + " objectives");
        }
        if (finished.stream().anyMatch(t -> t.number() == trial.number())) {
            throw new IllegalArgumentException("trial " + trial.number() + " is already in the study");
        }
        record(trial);
    }

    /** Starts the next trial: the sampler draws its joint parameters now, the rest when the experiment asks. */
    public Trial ask() {
        int number = nextNumber++;
        SamplingContext context = new SamplingContext(seed, number, finished, objectives, trialRandom(seed, number));
        Map<String, Sampler.Draw> joint = sampler.sampleJoint(context);
        return new Trial(this, context, joint, clock.instant());
    }

    /** Finishes a trial with one score per objective, in objective order. */
    public FrozenTrial tell(Trial trial, List<Score> scores) {
        Objects.requireNonNull(scores, "scores is null");
        if (scores.size() != objectives.size()) {
            throw new IllegalArgumentException("expected " + objectives.size() + " scores (" + objectives
                    + "), got " + scores.size());
        }
        return finish(trial, TrialState.COMPLETE, scores, null);
    }

    /** Finishes a trial that produced no scores; it keeps its number, and the sampler ignores it. */
    public FrozenTrial fail(Trial trial, String reason) {
        return finish(trial, TrialState.FAIL, List.of(), Objects.requireNonNull(reason, "reason is null"));
    }

    private FrozenTrial finish(Trial trial, TrialState state, List<Score> scores, String failure) {
        if (trial.study() != this) {
            throw new IllegalArgumentException("trial " + trial.number() + " belongs to another study");
        }
        trial.markFinished();
        FrozenTrial frozen = new FrozenTrial(trial.number(), state, trial.params(), trial.distributions(), scores,
                trial.start(), clock.instant(), failure);
        record(frozen);
        return frozen;
    }

    private void record(FrozenTrial trial) {
        finished.add(trial);
        finished.sort(Comparator.comparingInt(FrozenTrial::number));
        nextNumber = Math.max(nextNumber, trial.number() + 1);
    }

    /**
     * The random source of one trial. SplitMix64's finalizer decorrelates neighbouring (seed, number) pairs before
     * they seed the generator, so trial n's stream has nothing to do with trial n+1's.
     */
    static RandomGenerator trialRandom(long seed, int number) {
        return new SplittableRandom(mix64(seed ^ mix64(number + 0x9E3779B97F4A7C15L)));
    }

    /** SplitMix64's finalizer: a bijection that scatters nearby inputs. */
    static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
