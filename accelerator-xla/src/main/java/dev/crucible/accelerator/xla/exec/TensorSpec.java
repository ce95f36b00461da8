package dev.crucible.accelerator.xla.exec;

import dev.crucible.api.tensor.DType;
import java.util.Arrays;
import java.util.Objects;

/**
 * One argument or result of a program: a name (the safetensors tensor name, or e.g. {@code input:tokens}), an
 * element type and a static shape.
 */
public record TensorSpec(String name, DType dtype, long[] shape) {
    public TensorSpec {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(dtype, "dtype is null");
        shape = shape.clone();
        for (long dim : shape) {
            if (dim < 0) {
                throw new IllegalArgumentException(name + ": shapes are static, got " + Arrays.toString(shape));
            }
        }
    }

    /** A copy: records with arrays must not leak their state. */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    public boolean matches(DType otherDtype, long[] otherShape) {
        return dtype == otherDtype && Arrays.equals(shape, otherShape);
    }

    /** As StableHLO spells the type: {@code tensor<4x16xf32>}. */
    public String mlirType() {
        return mlirType(dtype, shape);
    }

    /** StableHLO's spelling of a tensor type: {@code tensor<4x16xf32>}, {@code tensor<i64>} for a scalar. */
    public static String mlirType(DType dtype, long[] shape) {
        StringBuilder type = new StringBuilder("tensor<");
        for (long dim : shape) {
            type.append(dim).append('x');
        }
        return type.append(mlirElementType(dtype)).append('>').toString();
    }

    /** StableHLO's element type: {@code f32}, {@code bf16}, {@code i64}, {@code ui8}, {@code i1} (bool). */
    public static String mlirElementType(DType dtype) {
        return switch (dtype) {
            case F32 -> "f32";
            case F16 -> "f16";
            case BF16 -> "bf16";
            case I64 -> "i64";
            case I32 -> "i32";
            case I8 -> "i8";
            case U8 -> "ui8";
            case BOOL -> "i1";
        };
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof TensorSpec that && name.equals(that.name) && dtype == that.dtype
                && Arrays.equals(shape, that.shape);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape));
    }

    @Override
    public String toString() {
        return name + ":" + mlirType();
    }
}
