package dev.crucible.api.quant;

import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * 8-bit and 4-bit integer weights ({@link WeightFormat.Int}) with the arithmetic of compressed-tensors' round-to-
 * nearest "minmax" quantizer, so that the folders {@code runner quantize} writes hold what vLLM and transformers
 * would have written for the same weights. For each group (a row, or a block of a row), with
 * {@code [qmin, qmax] = [-2^(bits-1), 2^(bits-1) - 1]} and the group's range widened to contain zero:
 * <ul>
 *   <li>symmetric: {@code scale = max(|min|, |max|) / ((qmax - qmin) / 2)}, {@code q = clamp(round(w / scale))};</li>
 *   <li>asymmetric: {@code scale = (max - min) / (qmax - qmin)}, {@code zero = round(clamp(qmin - min / scale))},
 *       {@code q = clamp(round(w / scale + zero))};</li>
 * </ul>
 * scales at least float32's epsilon, rounding to nearest even, every step in float32; a weight is
 * {@code (q - zero) · scale}.
 *
 * <p>Parts: {@code data} I8 {@code [rows, columns]} for 8 bits, or U8 {@code [rows, ceil(columns / 2)]} for 4 bits
 * with {@code q + 8} in each nibble, the even column in the low nibble (the byte order of compressed-tensors'
 * int32 packing, so its files load without repacking); {@code scales} F32 {@code [rows, groups]};
 * {@code zeroPoints} I8 {@code [rows, groups]} when asymmetric.
 */
public final class IntCodec implements WeightCodec {

    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** torch.finfo(torch.float32).eps: the smallest scale compressed-tensors allows. */
    private static final float MIN_SCALE = Math.ulp(1.0f);

    private final WeightFormat.Int format;
    private final DType scaleDtype;

    /** Scales kept in float32. */
    public IntCodec(WeightFormat.Int format) {
        this(format, DType.F32);
    }

    /**
     * Scales rounded to {@code scaleDtype} before any weight is quantized with them, for a file that stores its scales
     * in the model's dtype: the stored scale then dequantizes exactly what was quantized.
     */
    public IntCodec(WeightFormat.Int format, DType scaleDtype) {
        this.format = Objects.requireNonNull(format, "format is null");
        this.scaleDtype = Objects.requireNonNull(scaleDtype, "scaleDtype is null");
        if (!scaleDtype.isFloatingPoint()) {
            throw new IllegalArgumentException("scales are floating point, not " + scaleDtype);
        }
    }

    @Override
    public WeightFormat.Int format() {
        return format;
    }

    private int qmin() {
        return -(1 << (format.bits() - 1));
    }

    private int qmax() {
        return (1 << (format.bits() - 1)) - 1;
    }

    @Override
    public QuantizedHostTensor encode(String name, float[] values, long[] shape) {
        int columns = Math.toIntExact(shape.length == 0 ? 1 : shape[shape.length - 1]);
        if (columns == 0 || values.length % columns != 0 || values.length != elements(shape)) {
            throw new IllegalArgumentException(name + ": " + values.length + " values for shape " + Arrays.toString(shape));
        }
        return encode(name, shape, (row, into) -> System.arraycopy(values, row * into.length, into, 0, into.length));
    }

    /**
     * Reads the tensor one row at a time: a checkpoint quantized while it loads never has a float32 copy of a whole
     * weight on the Java heap. (Copies of a few MiB each are allocated straight into the old generation, which then
     * grows by gigabytes before its first collection: measured, a Qwen2.5-0.5B-shaped model quantized to int8 while
     * loading peaked at 2.9 GB resident for 0.6 GB of weights.)
     */
    @Override
    public QuantizedHostTensor encode(HostTensor host) {
        long[] shape = host.shape();
        int columns = Math.toIntExact(shape.length == 0 ? 1 : shape[shape.length - 1]);
        if (columns == 0 || !host.dtype().isFloatingPoint()) {
            return WeightCodec.super.encode(host);
        }
        return encode(host.name(), shape, (row, into) -> host.readFloats((long) row * into.length, into, into.length));
    }

    /** Fills {@code into} with row {@code row}'s values. */
    private interface Rows {
        void read(int row, float[] into);
    }

    private QuantizedHostTensor encode(String name, long[] shape, Rows source) {
        int columns = Math.toIntExact(shape.length == 0 ? 1 : shape[shape.length - 1]);
        int rows = Math.toIntExact(elements(shape) / columns);
        int groups = Math.toIntExact(format.groupsPerRow(columns));
        int block = format.blockSize() == 0 ? columns : format.blockSize();
        int rowBytes = Math.toIntExact(format.rowBytes(columns));
        byte[] data = new byte[Math.multiplyExact(rows, rowBytes)];
        float[] scales = new float[rows * groups];
        byte[] zeros = format.zeroPoints() ? new byte[rows * groups] : null;
        int qmin = qmin();
        int qmax = qmax();
        float[] values = new float[columns];
        for (int row = 0; row < rows; row++) {
            source.read(row, values);
            for (int group = 0; group < groups; group++) {
                int from = group * block;
                int to = Math.min(columns, from + block);
                float min = 0f;
                float max = 0f;
                for (int i = from; i < to; i++) {
                    min = Math.min(min, values[i]);
                    max = Math.max(max, values[i]);
                }
                float scale;
                float zero = 0f;
                if (format.zeroPoints()) {
                    scale = rounded(Math.max((max - min) / (float) (qmax - qmin), MIN_SCALE));
                    zero = (float) Math.rint(Math.min(Math.max(qmin - min / scale, qmin), qmax));
                    zeros[row * groups + group] = (byte) zero;
                } else {
                    float absmax = Math.max(-min, max);
                    scale = rounded(Math.max(absmax / ((qmax - qmin) / 2f), MIN_SCALE));
                }
                scales[row * groups + group] = scale;
                for (int column = from; column < to; column++) {
                    float scaled = values[column] / scale + zero;
                    int q = (int) Math.rint(Math.min(Math.max(scaled, qmin), qmax));
                    if (format.bits() == 8) {
                        data[row * rowBytes + column] = (byte) q;
                    } else {
                        int at = row * rowBytes + column / 2;
                        int nibble = (q + 8) << (column % 2 == 0 ? 0 : 4);
                        data[at] = (byte) (data[at] | nibble);
                    }
                }
            }
        }
        DType dataType = format.bits() == 8 ? DType.I8 : DType.U8;
        HostTensor dataTensor = new HostTensor(name + ".qdata", dataType, new long[] {rows, rowBytes},
                MemorySegment.ofArray(data));
        HostTensor scaleTensor = new HostTensor(name + ".scales", DType.F32, new long[] {rows, groups}, floats(scales));
        HostTensor zeroTensor = zeros == null ? null
                : new HostTensor(name + ".zero_points", DType.I8, new long[] {rows, groups}, MemorySegment.ofArray(zeros));
        return new QuantizedHostTensor(name, format, shape, dataTensor, scaleTensor, zeroTensor);
    }

    private float rounded(float scale) {
        return switch (scaleDtype) {
            case BF16 -> HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(scale));
            case F16 -> HalfFloats.f16ToFloat(HalfFloats.floatToF16(scale));
            default -> scale;
        };
    }

    @Override
    public float[] decode(QuantizedHostTensor tensor) {
        long[] shape = tensor.shape();
        int columns = Math.toIntExact(shape.length == 0 ? 1 : shape[shape.length - 1]);
        int count = Math.toIntExact(elements(shape));
        int rows = count / columns;
        int groups = Math.toIntExact(format.groupsPerRow(columns));
        int block = format.blockSize() == 0 ? columns : format.blockSize();
        int rowBytes = Math.toIntExact(format.rowBytes(columns));
        byte[] data = tensor.data().toByteArray();
        float[] scales = tensor.scales().toFloatArray();
        byte[] zeros = tensor.zeroPoints() == null ? null : tensor.zeroPoints().toByteArray();
        float[] out = new float[count];
        for (int row = 0; row < rows; row++) {
            for (int column = 0; column < columns; column++) {
                int group = row * groups + column / block;
                int q;
                if (format.bits() == 8) {
                    q = data[row * rowBytes + column];
                } else {
                    int pair = data[row * rowBytes + column / 2] & 0xff;
                    q = (column % 2 == 0 ? pair & 15 : pair >>> 4) - 8;
                }
                int zero = zeros == null ? 0 : zeros[group];
                out[row * columns + column] = (q - zero) * scales[group];
            }
        }
        return out;
    }

    /**
     * 4 bits: row {@code b} holds the signed values of byte value b's low and high nibble, so one lookup unpacks two
     * weights in column order. 8 bits need none (the codes are the values).
     */
    @Override
    public Optional<HostTensor> codebook() {
        if (format.bits() == 8) {
            return Optional.empty();
        }
        float[] table = new float[256 * 2];
        for (int b = 0; b < 256; b++) {
            table[2 * b] = (b & 15) - 8;
            table[2 * b + 1] = (b >>> 4) - 8;
        }
        return Optional.of(new HostTensor("int4_codebook", DType.F32, new long[] {256, 2}, floats(table)));
    }

    private static MemorySegment floats(float[] values) {
        MemorySegment bytes = MemorySegment.ofArray(new byte[4 * values.length]);
        MemorySegment.copy(values, 0, bytes, F32_LE, 0, values.length);
        return bytes;
    }

    private static long elements(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }
}
