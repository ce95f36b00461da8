package dev.crucible.api.model;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.quant.QuantizationConfig;
import java.util.Objects;

/**
 * What {@link dev.crucible.api.backend.HardwareBackend#shard} places: a parsed config, its open checkpoint, and
 * the compute dtype already chosen ({@link dev.crucible.api.backend.HardwareBackend#chooseDtype}), and which
 * projection weights are kept quantized (each is quantized as it is read, so the full-precision model never sits in
 * memory whole). The checkpoint must stay open until {@code shard} returns; the device model owns copies, never
 * views of it.
 *
 * @param autoDtype whether {@code dtype} is the backend's own choice for {@code --dtype auto}: a backend may then
 *                  place the model in another dtype when it finds this one does not work on its device (a GPU backend
 *                  falls back from half precision when a one-token check gives inf or nan); a dtype the user named is
 *                  used as it is
 */
public record ShardRequest(ModelConfig config, Checkpoint checkpoint, DType dtype, QuantizationConfig quantization,
                           boolean autoDtype) {
    public ShardRequest {
        Objects.requireNonNull(config, "config is null");
        Objects.requireNonNull(checkpoint, "checkpoint is null");
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(quantization, "quantization is null");
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("compute dtype must be floating point, got " + dtype);
        }
    }

    /** Every weight dense in exactly {@code dtype}. */
    public ShardRequest(ModelConfig config, Checkpoint checkpoint, DType dtype) {
        this(config, checkpoint, dtype, QuantizationConfig.NONE, false);
    }

    /** The same request for exactly {@code other}. */
    public ShardRequest withDtype(DType other) {
        return new ShardRequest(config, checkpoint, other, quantization, false);
    }
}
