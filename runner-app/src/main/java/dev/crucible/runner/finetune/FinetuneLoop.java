package dev.crucible.runner.finetune;

import dev.crucible.api.train.TrainingBatch;
import dev.crucible.api.train.TrainingSession;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * Runs a {@link TrainingPlan} on a {@link TrainingSession}: the same loop on every backend, since all device work
 * is behind the session. Each step accumulates its micro-batches with the loss scaled by
 * {@code 1 / labelled tokens of the whole step} (so the gradient is that of the mean token loss however the step is
 * cut into micro-batches), then takes one optimizer step at the schedule's rate.
 *
 * <p>The stop flag is checked between optimizer steps, never inside one, so a stop always leaves a consistent
 * state to save. Steps a restored session has already taken are skipped without computing anything.
 */
public final class FinetuneLoop {

    /** Told about every step as it finishes. */
    public interface Listener {
        void stepped(StepReport report);
    }

    /** How the run ended. */
    public record Outcome(boolean stopped, int completedSteps, List<StepReport> reports) {
        public Outcome {
            reports = List.copyOf(reports);
        }
    }

    private final TrainingPlan plan;
    private final LearningRateSchedule schedule;
    private final AtomicBoolean stop;
    private final LongSupplier clock;

    public FinetuneLoop(TrainingPlan plan, LearningRateSchedule schedule, AtomicBoolean stop, LongSupplier clock) {
        this.plan = plan;
        this.schedule = schedule;
        this.stop = stop;
        this.clock = clock;
    }

    public Outcome run(TrainingSession session, Listener listener) {
        List<StepReport> reports = new ArrayList<>();
        int total = plan.steps().size();
        long started = clock.getAsLong();
        long tokensDone = 0;
        for (TrainingPlan.Step step : plan.steps()) {
            if (step.index() < session.completedSteps()) {
                continue;
            }
            if (stop.get()) {
                return new Outcome(true, (int) session.completedSteps(), reports);
            }
            double scale = step.labelledTokens() == 0 ? 0 : 1.0 / step.labelledTokens();
            double lossSum = 0;
            for (TrainingBatch batch : plan.batches(step)) {
                lossSum += session.accumulate(batch, scale);
            }
            double rate = schedule.at(step.index());
            double norm = session.step(rate);
            tokensDone += step.tokens();
            StepReport report = new StepReport(step.index() + 1, total, step.epoch(),
                    step.labelledTokens() == 0 ? 0 : lossSum / step.labelledTokens(), rate, norm, step.tokens(),
                    tokensDone, clock.getAsLong() - started);
            reports.add(report);
            listener.stepped(report);
        }
        return new Outcome(false, (int) session.completedSteps(), reports);
    }
}
