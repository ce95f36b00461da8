package dev.crucible.api.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor on the host: a read-only, little-endian view of its bytes (usually straight into a memory-mapped
 * checkpoint, so nothing is copied until asked). The view lives as long as the arena of the file it came
 * from; do not use it after closing the {@code SafetensorsFile} or {@code Checkpoint}.
 */
public record HostTensor(String name, DType dtype, long[] shape, MemorySegment data) {

    static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public HostTensor {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(dtype, "dtype is null");
        shape = Objects.requireNonNull(shape, "shape is null").clone();
        Objects.requireNonNull(data, "data is null");
        long expected = Math.multiplyExact(Shapes.elementCount(shape), dtype.byteSize());
        if (data.byteSize() != expected) {
            throw new IllegalArgumentException("tensor " + name + " " + dtype + Arrays.toString(shape)
                    + " needs " + expected + " bytes, got " + data.byteSize());
        }
        data = data.asReadOnly();
    }

    /** A copy: records with arrays must not leak their state. */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long elementCount() {
        return Shapes.elementCount(shape);
    }

    /** The element at flat (row-major) {@code index} as a float; exact for F32, F16 and BF16. */
    public float floatAt(long index) {
        Objects.checkIndex(index, elementCount());
        return switch (dtype) {
            case F32 -> data.get(F32_LE, index * 4);
            case F16 -> HalfFloats.f16ToFloat(data.get(I16_LE, index * 2));
            case BF16 -> HalfFloats.bf16ToFloat(data.get(I16_LE, index * 2));
            default -> throw notFloatingPoint();
        };
    }

    /** All elements as floats (exact for F32, F16 and BF16), copied onto the Java heap. */
    public float[] toFloatArray() {
        if (!dtype.isFloatingPoint()) {
            throw notFloatingPoint();
        }
        int count = heapArrayLength();
        float[] out = new float[count];
        readFloats(0, out, count);
        return out;
    }

    /**
     * Elements {@code [from, from + count)} as floats into the start of {@code into} (exact for F32, F16 and BF16):
     * for readers that go through a large tensor a piece at a time instead of copying it whole.
     */
    public void readFloats(long from, float[] into, int count) {
        if (!dtype.isFloatingPoint()) {
            throw notFloatingPoint();
        }
        java.util.Objects.checkFromIndexSize(from, count, elementCount());
        if (dtype == DType.F32) {
            MemorySegment.copy(data, F32_LE, 4 * from, into, 0, count);
            return;
        }
        short[] halves = new short[count];
        MemorySegment.copy(data, I16_LE, 2 * from, halves, 0, count);
        if (dtype == DType.F16) {
            for (int i = 0; i < count; i++) {
                into[i] = HalfFloats.f16ToFloat(halves[i]);
            }
        } else {
            for (int i = 0; i < count; i++) {
                into[i] = HalfFloats.bf16ToFloat(halves[i]);
            }
        }
    }

    /**
     * {@code values} stored as {@code dtype} (F32, F16 or BF16, narrowing to nearest, ties to even) in memory of
     * {@code arena}, which owns it.
     */
    public static HostTensor fromFloats(String name, DType dtype, long[] shape, float[] values, Arena arena) {
        checkCount(name, shape, values);
        return new HostTensor(name, dtype, shape, store(dtype, values, arena.allocate((long) values.length * dtype.byteSize(), 64)));
    }

    private static void checkCount(String name, long[] shape, float[] values) {
        if (Shapes.elementCount(shape) != values.length) {
            throw new IllegalArgumentException("tensor " + name + " has shape " + Arrays.toString(shape) + " but "
                    + values.length + " values");
        }
    }

    /** {@code values} narrowed to {@code dtype} (nearest, ties to even) into {@code out}, which it returns. */
    private static MemorySegment store(DType dtype, float[] values, MemorySegment out) {
        switch (dtype) {
            case F32 -> MemorySegment.copy(values, 0, out, F32_LE, 0, values.length);
            case F16 -> {
                for (int i = 0; i < values.length; i++) {
                    out.set(I16_LE, 2L * i, HalfFloats.floatToF16(values[i]));
                }
            }
            case BF16 -> {
                for (int i = 0; i < values.length; i++) {
                    out.set(I16_LE, 2L * i, HalfFloats.floatToBf16(values[i]));
                }
            }
            default -> throw new IllegalArgumentException("cannot store floats as " + dtype);
        }
        return out;
    }

    /** {@code values} stored as {@code dtype} (F32, F16 or BF16, narrowing to nearest, ties to even) on the Java heap. */
    public static HostTensor ofFloats(String name, DType dtype, long[] shape, float[] values) {
        checkCount(name, shape, values);
        return new HostTensor(name, dtype, shape,
                store(dtype, values, MemorySegment.ofArray(new byte[Math.multiplyExact(values.length, dtype.byteSize())])));
    }

    /** The raw little-endian bytes, copied onto the Java heap. */
    public byte[] toByteArray() {
        if (data.byteSize() > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("tensor " + name + " has " + data.byteSize()
                    + " bytes, too many for a Java array; read it through data()");
        }
        return data.toArray(ValueLayout.JAVA_BYTE);
    }

    private int heapArrayLength() {
        long count = elementCount();
        if (count > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("tensor " + name + " has " + count
                    + " elements, too many for a Java array; read it through data()");
        }
        return (int) count;
    }

    private IllegalStateException notFloatingPoint() {
        return new IllegalStateException("tensor " + name + " is " + dtype + ", not a floating-point type");
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof HostTensor that
                && name.equals(that.name)
                && dtype == that.dtype
                && Arrays.equals(shape, that.shape)
                && data.equals(that.data);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), data);
    }

    @Override
    public String toString() {
        return "HostTensor[" + name + " " + dtype + Arrays.toString(shape) + "]";
    }
}
