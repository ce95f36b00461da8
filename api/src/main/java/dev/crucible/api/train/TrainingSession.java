package dev.crucible.api.train;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.LoraFactors;
import java.util.Map;

/**
 * A model placed for training on one backend, with its optimizer state on the device. The caller owns the loop
 * (data order, schedule, accumulation, when to stop and save); the session does the device work, the same way on
 * every backend:
 *
 * <pre>{@code
 * for each optimizer step:
 *     for each micro-batch: session.accumulate(batch, 1.0 / labelledTokensInThisStep)
 *     session.step(learningRate)
 * }</pre>
 *
 * Not thread-safe; {@link #close()} frees everything it placed.
 */
public interface TrainingSession extends AutoCloseable {

    TrainingMethod method();

    /** Parameters the optimizer updates (adapter factors, or every weight for full training). */
    long trainableParameters();

    /**
     * Forward and backward over {@code batch}: the summed token cross-entropy of its labelled positions, times
     * {@code lossScale}, is back-propagated and its gradients added to those already accumulated.
     *
     * @return the unscaled sum of the labelled positions' cross-entropy, in nats
     */
    double accumulate(TrainingBatch batch, double lossScale);

    /** The summed cross-entropy of {@code batch}'s labelled positions, without gradients or dropout. */
    double evaluate(TrainingBatch batch);

    /**
     * Clips the accumulated gradients to the optimizer's global norm, applies one AdamW update at
     * {@code learningRate}, and clears the gradients.
     *
     * @return the global gradient norm before clipping
     */
    double step(double learningRate);

    /** Optimizer steps taken so far, restored ones included. */
    long completedSteps();

    /** Greedy generation by the model as trained so far (no dropout, no gradients). */
    DecodeResult decode(DecodeRequest request);

    /**
     * Host float32 copies of the trained adapters by module name, {@code A [r, in]} and {@code B [out, r]} with
     * the scale of the request's {@link LoraSettings} (LoRA and QLoRA only).
     */
    Map<String, LoraFactors> adapters();

    /**
     * Host float32 copies of every trained weight under its checkpoint name, tied weights once under the
     * embedding's name (full training only).
     */
    Map<String, HostTensor> weights();

    /**
     * Everything needed to continue exactly where training stopped: the step count, the parameters and AdamW's
     * moments, as host float32 tensors.
     */
    TrainerState state();

    /** Continues from a {@link #state()} of a session with the same request. */
    void restore(TrainerState state);

    @Override
    void close();
}
