package dev.crucible.runner.bench;

import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ModelCost;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.TokenListener;
import dev.crucible.runner.session.ModelSession;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Prefill and decode speed of a placed model against this machine's ceilings, measured in one run. Ceilings and
 * model runs alternate ({@code ceilings, run, ceilings, run, …, ceilings}) and each run is compared with the mean
 * of the ceilings measured just before and just after it, so a machine whose speed drifts (shared, throttled, or
 * with memory bandwidth that changes from second to second) is seen alike by both sides of every ratio.
 *
 * <p>A run is one greedy decode of {@code batch} prompts of {@code promptLength} tokens for {@code newTokens}
 * tokens with stop tokens off. Its first step is the prefill (the time until the first tokens arrive), the rest
 * are decode steps. One untimed run first compiles and touches everything. The peak resident memory counts the
 * model's loading and runs, not the ceilings' scratch buffers (the peak is reset after each ceiling measurement
 * where the kernel allows it).
 */
public final class DecodeBenchmark {

    /** What to run. */
    public record Settings(int batch, int promptLength, int newTokens, int rounds, Duration ceilingBudget) {
        public Settings {
            if (batch < 1 || promptLength < 1 || newTokens < 2 || rounds < 1) {
                throw new IllegalArgumentException("batch, prompt length and rounds must be at least 1 and new tokens "
                        + "at least 2, got " + batch + ", " + promptLength + ", " + rounds + ", " + newTokens);
            }
        }
    }

    /**
     * One timed run and the ceilings around it.
     *
     * @param peer llama-bench's numbers of the same round, run between the same ceilings, where it was asked for
     */
    public record Round(Ceilings before, Ceilings after, double prefillSeconds, double decodeSeconds, int decodeSteps,
                        java.util.Optional<LlamaBench.Result> peer) {

        public double matmulGflops() {
            return (before.matmulGflops() + after.matmulGflops()) / 2;
        }

        public double bandwidthGbs() {
            return (before.bandwidthGbs() + after.bandwidthGbs()) / 2;
        }
    }

    private final ModelSession session;
    private final DeviceModel model;
    private final Consumer<String> progress;

    public DecodeBenchmark(ModelSession session, Consumer<String> progress) {
        this.session = session;
        this.model = session.model();
        this.progress = progress;
    }

    /**
     * @param promptTokens ids to cut the prompts from (repeated when shorter than the prompts need)
     * @param padToken     the tokenizer's pad id
     */
    public DecodeBenchReport run(Settings settings, int[] promptTokens, int padToken) {
        return run(settings, promptTokens, padToken, java.util.Optional.empty());
    }

    /**
     * As {@link #run(Settings, int[], int)}, with llama.cpp's llama-bench run in every round between the same two
     * ceiling measurements as Crucible's run; the two go in alternating order (Crucible first in odd rounds), so a
     * machine that drifts within a round favours neither.
     */
    public DecodeBenchReport run(Settings settings, int[] promptTokens, int padToken,
                                 java.util.Optional<LlamaBench> peer) {
        List<int[]> prompts = prompts(settings, promptTokens);
        // Resident memory: the peak of loading (everything so far), then the peak of the runs, the mark reset before
        // each so the ceilings' scratch buffers, measured between runs, stay out of it.
        OptionalLong loadPeak = ProcessMemory.peakResidentBytes();
        boolean resets = ProcessMemory.resetPeak();
        progress.accept("warm-up run (untimed)");
        timedRun(settings, prompts, padToken);
        long runPeak = ProcessMemory.peakResidentBytes().orElse(0);

        List<Round> rounds = new ArrayList<>();
        Ceilings before = ceilings(1, settings);
        for (int round = 1; round <= settings.rounds(); round++) {
            java.util.Optional<LlamaBench.Result> peerResult = java.util.Optional.empty();
            if (peer.isPresent() && round % 2 == 0) {
                peerResult = java.util.Optional.of(peerRound(peer.get(), round, settings));
            }
            resets &= ProcessMemory.resetPeak();
            Timing timing = timedRun(settings, prompts, padToken);
            runPeak = Math.max(runPeak, ProcessMemory.peakResidentBytes().orElse(0));
            if (peer.isPresent() && round % 2 == 1) {
                peerResult = java.util.Optional.of(peerRound(peer.get(), round, settings));
            }
            Ceilings after = ceilings(round + 1, settings);
            Round done = new Round(before, after, timing.prefillSeconds, timing.decodeSeconds, timing.decodeSteps,
                    peerResult);
            rounds.add(done);
            progress.accept(String.format(Locale.ROOT, "round %d/%d: prefill %.1f tokens/s, decode %.2f tokens/s",
                    round, settings.rounds(), settings.batch() * settings.promptLength() / done.prefillSeconds(),
                    settings.batch() * done.decodeSteps() / done.decodeSeconds()));
            before = after;
        }
        PeakMemory memory = loadPeak.isPresent()
                ? new PeakMemory(loadPeak.getAsLong(), runPeak, resets) : null;
        ModelCost cost = ModelCost.of(model.config(), model.dtype());
        PlacedModel placed = model.placed();
        if (placed.quantizedProjections() > 0 || placed.quantizedHead()) {
            // Quantized weights stream their parts, not dense rows: the bandwidth bound is theirs.
            cost = cost.withQuantized(placed.projectionBytes(),
                    placed.quantizedHead() ? placed.quantizedHeadBytes() : cost.headBytes());
        }
        return new DecodeBenchReport(settings, model.dtype(), cost, rounds, java.util.Optional.ofNullable(memory));
    }

    private LlamaBench.Result peerRound(LlamaBench peer, int round, Settings settings) {
        LlamaBench.Result result = peer.run();
        progress.accept(String.format(Locale.ROOT, "round %d/%d: llama-bench prefill %.1f tokens/s, decode %.2f tokens/s%s",
                round, settings.rounds(), result.prefillTokensPerSecond(), result.decodeTokensPerSecond(),
                result.decodeDepth() == 0 ? " (from an empty context: this llama-bench has no -d)" : ""));
        return result;
    }

    /**
     * Peak resident bytes while loading (start of the process included) and while running.
     *
     * @param runsOnly false where the mark could not be reset, so the run peak includes the loading and the
     *                 ceilings' buffers
     */
    public record PeakMemory(long loadBytes, long runBytes, boolean runsOnly) {
        public long peakBytes() {
            return Math.max(loadBytes, runBytes);
        }
    }

    private Ceilings ceilings(int index, Settings settings) {
        Ceilings ceilings = session.measureCeilings(settings.ceilingBudget());
        progress.accept(String.format(Locale.ROOT, "ceilings %d/%d: matmul %.1f GFLOP/s, memory read %.1f GB/s (%s)",
                index, settings.rounds() + 1, ceilings.matmulGflops(), ceilings.bandwidthGbs(), ceilings.method()));
        return ceilings;
    }

    private Timing timedRun(Settings settings, List<int[]> prompts, int padToken) {
        StepClock clock = new StepClock();
        DecodeRequest request = new DecodeRequest(prompts, settings.newTokens(), Set.of(), padToken, settings.batch(),
                clock);
        clock.start = System.nanoTime();
        session.decode(request);
        if (clock.steps != settings.newTokens()) {
            throw new IllegalStateException("the backend reported " + clock.steps + " decode steps for "
                    + settings.newTokens() + " new tokens; cannot time prefill and decode apart");
        }
        return new Timing((clock.first - clock.start) / 1e9, (clock.last - clock.first) / 1e9, clock.steps - 1);
    }

    /** {@code batch} different prompts of {@code promptLength} ids, cut from {@code source} at different offsets. */
    static List<int[]> prompts(Settings settings, int[] source) {
        if (source.length == 0) {
            throw new IllegalArgumentException("no prompt tokens to cut prompts from");
        }
        List<int[]> prompts = new ArrayList<>();
        for (int row = 0; row < settings.batch(); row++) {
            int[] ids = new int[settings.promptLength()];
            int offset = (int) ((long) row * 7919 % source.length);
            for (int i = 0; i < ids.length; i++) {
                ids[i] = source[(offset + i) % source.length];
            }
            prompts.add(ids);
        }
        return prompts;
    }

    private record Timing(double prefillSeconds, double decodeSeconds, int decodeSteps) {
    }

    /** Time of the first and the last step's tokens. */
    private static final class StepClock implements TokenListener {
        long start;
        long first;
        long last;
        int steps;

        @Override
        public void onTokens(int[] prompts, int[] tokens) {
            long now = System.nanoTime();
            if (steps++ == 0) {
                first = now;
            }
            last = now;
        }
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }
}
