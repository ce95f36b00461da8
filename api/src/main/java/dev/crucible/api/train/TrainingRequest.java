package dev.crucible.api.train;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.quant.QuantizationConfig;
import java.util.Objects;

/**
 * What {@link dev.crucible.api.backend.HardwareBackend#startTraining} places and trains. The backend places its own
 * copy of the checkpoint, shaped for the method: frozen base in {@code dtype} with float32 adapters (LoRA), a
 * quantized base (NF4 blocks unless {@code quantization} says otherwise) with float32 adapters (QLoRA, the norms and
 * embeddings in {@code dtype}), or every weight in float32 (full). The checkpoint stays open while the session lives.
 *
 * @param dtype        the frozen base's compute dtype; full training ignores it and trains in float32
 * @param lora         the adapters; null for {@link TrainingMethod#FULL}
 * @param seed         everything random in the session (adapter initialization, dropout) follows from it
 * @param quantization how the frozen projection weights are kept: quantized for {@link TrainingMethod#QLORA} (NF4
 *                     unless asked otherwise), dense otherwise
 */
public record TrainingRequest(ModelConfig config, Checkpoint checkpoint, TrainingMethod method, DType dtype,
                              LoraSettings lora, OptimizerSettings optimizer, long seed,
                              QuantizationConfig quantization) {

    /** QLoRA's NF4 blocks of 64 on every projection but the head (whose weight is the embedding's, or excluded). */
    public static final QuantizationConfig QLORA_NF4 = QuantizationConfig.parse("nf4", null, null, null, false);

    /** The method's own base: NF4 for QLoRA, dense otherwise. */
    public TrainingRequest(ModelConfig config, Checkpoint checkpoint, TrainingMethod method, DType dtype,
                           LoraSettings lora, OptimizerSettings optimizer, long seed) {
        this(config, checkpoint, method, dtype, lora, optimizer, seed,
                method == TrainingMethod.QLORA ? QLORA_NF4 : QuantizationConfig.NONE);
    }

    public TrainingRequest {
        Objects.requireNonNull(quantization, "quantization is null");
        if (quantization.enabled() != (method == TrainingMethod.QLORA)) {
            throw new IllegalArgumentException(method.userName() + " with quantization " + quantization.describe()
                    + ": a quantized base is what QLoRA trains on, and only QLoRA");
        }
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
