package dev.crucible.api.quant;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.Optional;

/**
 * 4-bit NormalFloat (NF4) as QLoRA defines it ({@link WeightFormat.Nf4}): each block of consecutive weights
 * (row-major) is divided by its largest magnitude, and each result in [-1, 1] is stored as the index of the nearest
 * of 16 fixed levels, two indices per byte (first element in the high nibble). The levels are quantiles of a
 * standard normal, normalized to [-1, 1], with an exact zero: weights are roughly normal, so each level is about
 * equally likely, which is what makes 4 bits go far. The absmax values stay float32 (no double quantization: it
 * saves another 0.4 bits per weight, which matters only for very large models).
 *
 * <p>Every step is float32 arithmetic as bitsandbytes and the earlier libtorch implementation do it (the division
 * by the absmax, the nearest level by the midpoints between levels, a value on a midpoint taking the lower level),
 * so the codes are the same bytes whichever computes them.
 */
public final class Nf4Codec implements WeightCodec {

    /** The 16 NF4 levels, ascending (QLoRA, appendix E; bitsandbytes' table). */
    static final float[] LEVELS = {
        -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
        -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
        0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
        0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

    private static final float[] MIDPOINTS = midpoints();
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final WeightFormat.Nf4 format;

    public Nf4Codec(WeightFormat.Nf4 format) {
        this.format = Objects.requireNonNull(format, "format is null");
    }

    /** The levels, a copy. */
    public static float[] levels() {
        return LEVELS.clone();
    }

    @Override
    public WeightFormat.Nf4 format() {
        return format;
    }

    @Override
    public QuantizedHostTensor encode(String name, float[] values, long[] shape) {
        if (values.length != elements(shape)) {
            throw new IllegalArgumentException(name + ": " + values.length + " values for shape "
                    + java.util.Arrays.toString(shape));
        }
        return encode(name, shape, values.length, (from, into, count) -> System.arraycopy(values, from, into, 0, count));
    }

    /**
     * Reads the tensor one block at a time, as {@link IntCodec#encode(HostTensor)} reads rows: a checkpoint quantized
     * while it loads never has a float32 copy of a whole weight on the Java heap.
     */
    @Override
    public QuantizedHostTensor encode(HostTensor host) {
        if (!host.dtype().isFloatingPoint()) {
            return WeightCodec.super.encode(host);
        }
        return encode(host.name(), host.shape(), Math.toIntExact(host.elementCount()), host::readFloats);
    }

    /** Copies {@code count} values from flat index {@code from} into the start of {@code into}. */
    private interface Values {
        void read(int from, float[] into, int count);
    }

    private QuantizedHostTensor encode(String name, long[] shape, int count, Values source) {
        int block = format.blockSize();
        int blocks = Math.toIntExact(format.blocks(shape));
        byte[] packed = new byte[blocks * block / 2];
        float[] absmax = new float[blocks];
        float[] values = new float[block];
        for (int b = 0; b < blocks; b++) {
            int from = b * block;
            int length = Math.min(count, from + block) - from;
            source.read(from, values, length);
            float max = 0f;
            for (int i = 0; i < length; i++) {
                max = Math.max(max, Math.abs(values[i]));
            }
            absmax[b] = max;
            // An all-zero block divides by 1 instead of 0: every element then maps to the zero level. The last block
            // is completed with zeros, which quantize exactly to the zero level and are cut off again.
            float divisor = max == 0f ? 1f : max;
            for (int i = 0; i < block; i += 2) {
                int high = code(i < length ? values[i] / divisor : 0f);
                int low = code(i + 1 < length ? values[i + 1] / divisor : 0f);
                packed[(from + i) / 2] = (byte) (high << 4 | low);
            }
        }
        return new QuantizedHostTensor(name, format, shape,
                new HostTensor(name + ".nf4_data", DType.U8, new long[] {packed.length}, MemorySegment.ofArray(packed)),
                new HostTensor(name + ".nf4_absmax", DType.F32, new long[] {blocks}, floats(absmax)), null);
    }

    @Override
    public float[] decode(QuantizedHostTensor tensor) {
        int block = format.blockSize();
        float[] absmax = tensor.scales().toFloatArray();
        byte[] packed = tensor.data().toByteArray();
        int count = Math.toIntExact(elements(tensor.shape()));
        float[] out = new float[count];
        for (int i = 0; i < count; i++) {
            int pair = packed[i / 2] & 0xff;
            int code = i % 2 == 0 ? pair >>> 4 : pair & 15;
            out[i] = LEVELS[code] * absmax[i / block];
        }
        return out;
    }

    /** Row {@code b}: the levels of byte value b's high and low nibble, so one lookup dequantizes two weights. */
    @Override
    public Optional<HostTensor> codebook() {
        float[] table = new float[256 * 2];
        for (int b = 0; b < 256; b++) {
            table[2 * b] = LEVELS[b >>> 4];
            table[2 * b + 1] = LEVELS[b & 15];
        }
        return Optional.of(new HostTensor("nf4_codebook", DType.F32, new long[] {256, 2}, floats(table)));
    }

    /** Nearest level: the number of midpoints below the value (a value on a midpoint takes the lower level). */
    static int code(float normalized) {
        int code = 0;
        while (code < MIDPOINTS.length && MIDPOINTS[code] < normalized) {
            code++;
        }
        return code;
    }

    static float[] midpoints() {
        float[] mids = new float[LEVELS.length - 1];
        for (int i = 0; i < mids.length; i++) {
            mids[i] = (LEVELS[i] + LEVELS[i + 1]) / 2;
        }
        return mids;
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
