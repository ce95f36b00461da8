package dev.crucible.api.io;

import dev.crucible.api.tensor.Shapes;

import dev.crucible.api.tensor.DType;
import java.util.Arrays;
import java.util.Objects;

/**
 * One tensor's entry in a safetensors header: its element type, shape and byte range.
 * {@code dataStart} and {@code dataEnd} are relative to the start of the data section (the byte after the header),
 * as in the file; {@code dataEnd} is exclusive.
 */
public record TensorInfo(String name, DType dtype, long[] shape, long dataStart, long dataEnd) {

    public TensorInfo {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(dtype, "dtype is null");
        shape = Objects.requireNonNull(shape, "shape is null").clone();
    }

    /** A copy: records with arrays must not leak their state. */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** The product of the dimensions (1 for a scalar, 0 when any dimension is 0). */
    public long elementCount() {
        return Shapes.elementCount(shape);
    }

    public long byteLength() {
        return dataEnd - dataStart;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof TensorInfo that
                && name.equals(that.name)
                && dtype == that.dtype
                && Arrays.equals(shape, that.shape)
                && dataStart == that.dataStart
                && dataEnd == that.dataEnd;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), dataStart, dataEnd);
    }

    @Override
    public String toString() {
        return name + " " + dtype + Arrays.toString(shape) + " [" + dataStart + ", " + dataEnd + ")";
    }
}
