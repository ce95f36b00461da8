package dev.crucible.runner.finetune;

/**
 * What one optimizer step did.
 *
 * @param step           1-based count of steps done
 * @param loss           mean cross-entropy per labelled token over the step's micro-batches, in nats
 * @param gradNorm       global gradient norm before clipping
 * @param tokens         tokens (padding excluded) the step processed
 * @param tokensDone     tokens processed so far in this process (resumed steps excluded)
 * @param elapsedNanos   time since this process started training
 */
public record StepReport(int step, int totalSteps, int epoch, double loss, double learningRate, double gradNorm,
                         long tokens, long tokensDone, long elapsedNanos) {

    public double tokensPerSecond() {
        return elapsedNanos == 0 ? 0 : tokensDone * 1e9 / elapsedNanos;
    }
}
