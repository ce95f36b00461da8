package dev.crucible.api.train;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import java.util.Objects;

/**
 * What {@link dev.crucible.api.backend.HardwareBackend#startTraining} places and trains. The backend places its own
 * copy of the checkpoint, shaped for the method: frozen base in {@code dtype} with float32 adapters (LoRA), NF4
 * base blocks with float32 adapters (QLoRA, the norms and embeddings in {@code dtype}), or every weight in float32
 * (full). The checkpoint stays open while the session lives.
 *
 * @param dtype the frozen base's compute dtype; full training ignores it and trains in float32
 * @param lora  the adapters; null for {@link TrainingMethod#FULL}
 * @param seed  everything random in the session (adapter initialization, dropout) follows from it
 */
public record TrainingRequest(ModelConfig config, Checkpoint checkpoint, TrainingMethod method, DType dtype,
                              LoraSettings lora, OptimizerSettings optimizer, long seed) {
    public TrainingRequest {
        Objects.requireNonNull(config, "config is null");
        Objects.requireNonNull(checkpoint, "checkpoint is null");
        Objects.requireNonNull(method, "method is null");
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(optimizer, "optimizer is null");
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("compute dtype must be floating point, got " + dtype);
        }
        if (method.trainsAdapters() && lora == null) {
            throw new IllegalArgumentException(method.userName() + " needs LoRA settings");
        }
        if (!method.trainsAdapters() && lora != null) {
            throw new IllegalArgumentException("full training takes no LoRA settings");
        }
    }
}
