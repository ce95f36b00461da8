package dev.crucible.torch.train;

import dev.crucible.api.model.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.torch.TorchOps;
import dev.crucible.torch.TorchTensor;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A weight stored as NF4 blocks ({@link Nf4}). To the model definition it is a tensor of the weight's shape in the
 * compute dtype; {@link TrainingOps#linear} dequantizes it for each matmul, so the dense weight exists only for the
 * duration of one op.
 *
 * @param packed two 4-bit level indices per byte, U8 {@code [ceil(n / 64) * 32]}
 * @param absmax each block's largest magnitude, F32 {@code [ceil(n / 64)]}
 * @param table  the 16 levels, F32, on the weight's device; shared by every weight of a model and owned by it
 */
public record Nf4Weight(long[] shape, DType dtype, TorchTensor packed, TorchTensor absmax, TorchTensor table)
        implements Tensor {

    public Nf4Weight {
        shape = shape.clone();
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(packed, "packed is null");
        Objects.requireNonNull(absmax, "absmax is null");
        Objects.requireNonNull(table, "table is null");
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long elementCount() {
        return Arrays.stream(shape).reduce(1, Math::multiplyExact);
    }

    /** The device tensors this weight owns (not the shared table), for its owner to release. */
    public List<Tensor> parts() {
        return List.of(packed, absmax);
    }

    /** Frees the quantized blocks. */
    public void release(TorchOps ops) {
        parts().forEach(ops::release);
    }

    static ScalarType scalarType(DType dtype) {
        return switch (dtype) {
            case F32 -> ScalarType.Float;
            case F16 -> ScalarType.Half;
            case BF16 -> ScalarType.BFloat16;
            default -> throw new IllegalArgumentException("NF4 dequantizes to a floating dtype, not " + dtype);
        };
    }

    @Override
    public String toString() {
        return "Nf4Weight" + Arrays.toString(shape) + " -> " + dtype;
    }
}
