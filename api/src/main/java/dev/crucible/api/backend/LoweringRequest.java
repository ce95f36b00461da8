package dev.crucible.api.backend;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.DType;
import java.nio.file.Path;
import java.util.Objects;

/**
 * One model at one shape, to be lowered by a {@link ProgramLowering} backend.
 *
 * @param config       the model's config
 * @param checkpoint   its open checkpoint (names and shapes are read; values need not be)
 * @param dtype        the compute dtype
 * @param batch        prompts per batch
 * @param promptLength tokens per prompt
 * @param newTokens    tokens generated per prompt
 * @param devices      devices one program is split over (1: no split)
 * @param strategy     how a split lays the model out ({@code fsdp})
 * @param topology     the device topology to compile for, in the compiler's own naming; empty for its default
 * @param folder       where the programs and manifests go (exists, empty)
 * @param quantization which projection weights the programs take quantized, and how (as a run keeps them)
 */
public record LoweringRequest(ModelConfig config, Checkpoint checkpoint, DType dtype, int batch, int promptLength,
                              int newTokens, int devices, String strategy, String topology, Path folder,
                              QuantizationConfig quantization) {
    public LoweringRequest {
        Objects.requireNonNull(quantization, "quantization is null");
        Objects.requireNonNull(config, "config is null");
        Objects.requireNonNull(checkpoint, "checkpoint is null");
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(strategy, "strategy is null");
        Objects.requireNonNull(topology, "topology is null");
        Objects.requireNonNull(folder, "folder is null");
        if (batch < 1 || promptLength < 1 || newTokens < 1 || devices < 1) {
            throw new IllegalArgumentException("batch, prompt length, new tokens and devices must be at least 1");
        }
    }

    /** Every weight dense in the compute dtype. */
    public LoweringRequest(ModelConfig config, Checkpoint checkpoint, DType dtype, int batch, int promptLength,
                           int newTokens, int devices, String strategy, String topology, Path folder) {
        this(config, checkpoint, dtype, batch, promptLength, newTokens, devices, strategy, topology, folder,
                QuantizationConfig.NONE);
    }
}
