package dev.crucible.api.model;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.DType;
import java.util.Objects;

/**
 * What {@link dev.crucible.api.backend.HardwareBackend#shard} places: a parsed config, its open checkpoint, and
 * the compute dtype already chosen ({@link dev.crucible.api.backend.HardwareBackend#chooseDtype}). The checkpoint
 * must stay open until {@code shard} returns; the device model owns copies, never views of it.
 */
public record ShardRequest(ModelConfig config, Checkpoint checkpoint, DType dtype) {
    public ShardRequest {
        Objects.requireNonNull(config, "config is null");
        Objects.requireNonNull(checkpoint, "checkpoint is null");
        Objects.requireNonNull(dtype, "dtype is null");
        if (!dtype.isFloatingPoint()) {
            throw new IllegalArgumentException("compute dtype must be floating point, got " + dtype);
        }
    }
}
