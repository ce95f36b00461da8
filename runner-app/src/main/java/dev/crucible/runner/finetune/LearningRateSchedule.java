package dev.crucible.runner.finetune;

/**
 * Linear warm-up, then cosine decay to zero: transformers' {@code get_cosine_schedule_with_warmup}, step for step
 * (optimizer step s, counted from 0, uses {@code lr · s / warmup} while {@code s < warmup}, then
 * {@code lr · ½(1 + cos(π · (s − warmup) / (total − warmup)))}).
 *
 * @param warmupSteps {@code ceil(warmup_ratio · total)}, as transformers rounds it
 */
public record LearningRateSchedule(double peak, int warmupSteps, int totalSteps) {
    public LearningRateSchedule {
        if (!(peak > 0) || Double.isInfinite(peak)) {
            throw new dev.crucible.api.UserInputException("--lr must be positive, got " + peak);
        }
        if (totalSteps < 1 || warmupSteps < 0 || warmupSteps > totalSteps) {
            throw new IllegalArgumentException("warm-up " + warmupSteps + " of " + totalSteps + " steps");
        }
    }

    public static LearningRateSchedule of(double peak, double warmupRatio, int totalSteps) {
        if (!(warmupRatio >= 0 && warmupRatio <= 1)) {
            throw new dev.crucible.api.UserInputException("--warmup-ratio must be between 0 and 1, got " + warmupRatio);
        }
        return new LearningRateSchedule(peak, (int) Math.ceil(warmupRatio * totalSteps), totalSteps);
    }

    /** The learning rate of optimizer step {@code step} (0-based). */
    public double at(int step) {
        if (step < warmupSteps) {
            return peak * step / Math.max(1, warmupSteps);
        }
        double progress = (double) (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps);
        return peak * Math.max(0.0, 0.5 * (1.0 + Math.cos(Math.PI * progress)));
    }
}
