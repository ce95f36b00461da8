package dev.crucible.api.io;

import dev.crucible.api.tensor.Shapes;


import dev.crucible.api.tensor.HostTensor;

import dev.crucible.api.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor to write: its name, element type, shape and little-endian bytes. The bytes may be a view of a
 * mapped checkpoint (see {@link #of(HostTensor)}), so re-exporting a large model copies nothing onto the heap.
 */
public record WritableTensor(String name, DType dtype, long[] shape, MemorySegment bytes) {

    public WritableTensor {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(dtype, "dtype is null");
        shape = Objects.requireNonNull(shape, "shape is null").clone();
        Objects.requireNonNull(bytes, "bytes is null");
        if (name.isEmpty() || name.equals(SafetensorsHeader.METADATA_KEY)) {
            throw new IllegalArgumentException("invalid tensor name '" + name + "'");
        }
        long expected = Math.multiplyExact(Shapes.elementCount(shape), dtype.byteSize());
        if (bytes.byteSize() != expected) {
            throw new IllegalArgumentException("tensor " + name + " " + dtype + Arrays.toString(shape)
                    + " needs " + expected + " bytes, got " + bytes.byteSize());
        }
    }

    /** Raw little-endian bytes, used as they are. */
    public static WritableTensor ofBytes(String name, DType dtype, long[] shape, byte[] littleEndianBytes) {
        return new WritableTensor(name, dtype, shape, MemorySegment.ofArray(littleEndianBytes.clone()));
    }

    /**
     * Float values stored as {@code dtype} (F32, F16 or BF16); narrowing rounds to nearest, ties to even.
     */
    public static WritableTensor ofFloats(String name, DType dtype, long[] shape, float[] values) {
        return of(HostTensor.ofFloats(name, dtype, shape, values));
    }

    /** The tensor as read; its bytes stay a view, so write before closing the file it came from. */
    public static WritableTensor of(HostTensor tensor) {
        return new WritableTensor(tensor.name(), tensor.dtype(), tensor.shape(), tensor.data());
    }

    /** A copy: records with arrays must not leak their state. */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long byteSize() {
        return bytes.byteSize();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof WritableTensor that
                && name.equals(that.name)
                && dtype == that.dtype
                && Arrays.equals(shape, that.shape)
                && bytes.byteSize() == that.bytes.byteSize()
                && MemorySegment.mismatch(bytes, 0, bytes.byteSize(), that.bytes, 0, that.bytes.byteSize()) == -1;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), bytes.byteSize());
    }

    @Override
    public String toString() {
        return "WritableTensor[" + name + " " + dtype + Arrays.toString(shape) + "]";
    }
}
