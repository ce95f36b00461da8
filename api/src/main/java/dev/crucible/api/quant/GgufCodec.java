package dev.crucible.api.quant;

import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * The block formats of GGUF files ({@link WeightFormat.Gguf}), byte for byte as llama.cpp's reference quantizers
 * ({@code quantize_row_*_ref} in ggml-quants.c, which {@code llama-quantize} runs when no importance matrix is
 * given) write them, so a file converted here and one quantized by llama.cpp from the same float32 weights hold the
 * same blocks. Each block stores its own scales, so the parts are the blocks alone: {@code data} is U8
 * {@code [rows, bytes per row]} and there are no separate scales. Rows must be whole blocks.
 *
 * <p>Every step is float32 arithmetic in the reference's order: ggml-quants.c is compiled for the baseline x86-64
 * instruction set (no FMA, so nothing is contracted) and Java's float arithmetic is IEEE's, so the same operations
 * in the same order round the same way. Two roundings matter: {@code roundf} (half away from zero, Q8_0) and ggml's
 * {@code nearest_int} (half to even, through the float addition of 1.5·2²³).
 */
public final class GgufCodec implements WeightCodec {

    private static final int QK_K = 256;

    private final WeightFormat.Gguf format;

    public GgufCodec(WeightFormat.Gguf format) {
        this.format = Objects.requireNonNull(format, "format is null");
    }

    public GgufCodec(WeightFormat.GgufType type) {
        this(new WeightFormat.Gguf(type));
    }

    @Override
    public WeightFormat.Gguf format() {
        return format;
    }

    /** Whether rows of {@code columns} weights are whole blocks of this type. */
    public boolean takes(long columns) {
        return columns > 0 && columns % format.type().blockSize() == 0;
    }

    @Override
    public QuantizedHostTensor encode(String name, float[] values, long[] shape) {
        long columns = shape.length == 0 ? 1 : shape[shape.length - 1];
        if (!takes(columns) || values.length != elements(shape)) {
            throw new IllegalArgumentException(name + Arrays.toString(shape) + ": rows of " + columns
                    + " weights are not whole " + format.type() + " blocks of " + format.type().blockSize());
        }
        byte[] blocks = encode(values);
        long rows = values.length / columns;
        return new QuantizedHostTensor(name, format, shape, new HostTensor(name + ".blocks", DType.U8,
                new long[] {rows, blocks.length / rows}, MemorySegment.ofArray(blocks)), null, null);
    }

    /** {@code values}, a whole number of blocks, as the type's blocks. */
    public byte[] encode(float[] values) {
        WeightFormat.GgufType type = format.type();
        int blocks = values.length / type.blockSize();
        byte[] out = new byte[blocks * type.blockBytes()];
        for (int b = 0; b < blocks; b++) {
            int from = b * type.blockSize();
            int at = b * type.blockBytes();
            switch (type) {
                case Q8_0 -> q8_0(values, from, out, at);
                case Q4_0 -> q4_0(values, from, out, at);
                case Q5_0 -> q5_0(values, from, out, at);
                case Q4_K -> q4_K(values, from, out, at);
                case Q6_K -> q6_K(values, from, out, at);
            }
        }
        return out;
    }

    @Override
    public float[] decode(QuantizedHostTensor tensor) {
        return decode(tensor.data().toByteArray(), Math.toIntExact(elements(tensor.shape())));
    }

    /** The {@code count} weights {@code blocks} stand for. */
    public float[] decode(byte[] blocks, int count) {
        WeightFormat.GgufType type = format.type();
        float[] out = new float[count];
        for (int b = 0; b < count / type.blockSize(); b++) {
            int to = b * type.blockSize();
            int at = b * type.blockBytes();
            switch (type) {
                case Q8_0 -> {
                    float d = half(blocks, at);
                    for (int j = 0; j < 32; j++) {
                        out[to + j] = blocks[at + 2 + j] * d;
                    }
                }
                case Q4_0 -> {
                    float d = half(blocks, at);
                    for (int j = 0; j < 16; j++) {
                        int q = blocks[at + 2 + j] & 0xff;
                        out[to + j] = ((q & 15) - 8) * d;
                        out[to + j + 16] = ((q >>> 4) - 8) * d;
                    }
                }
                case Q5_0 -> {
                    float d = half(blocks, at);
                    int high = (blocks[at + 2] & 0xff) | (blocks[at + 3] & 0xff) << 8 | (blocks[at + 4] & 0xff) << 16
                            | (blocks[at + 5] & 0xff) << 24;
                    for (int j = 0; j < 16; j++) {
                        int q = blocks[at + 6 + j] & 0xff;
                        out[to + j] = (((q & 15) | ((high >>> j) & 1) << 4) - 16) * d;
                        out[to + j + 16] = (((q >>> 4) | ((high >>> (j + 16)) & 1) << 4) - 16) * d;
                    }
                }
                case Q4_K -> {
                    float d = half(blocks, at);
                    float dmin = half(blocks, at + 2);
                    for (int chunk = 0; chunk < 4; chunk++) {
                        float d1 = d * scale4K(blocks, at + 4, 2 * chunk);
                        float m1 = dmin * min4K(blocks, at + 4, 2 * chunk);
                        float d2 = d * scale4K(blocks, at + 4, 2 * chunk + 1);
                        float m2 = dmin * min4K(blocks, at + 4, 2 * chunk + 1);
                        for (int l = 0; l < 32; l++) {
                            int q = blocks[at + 16 + 32 * chunk + l] & 0xff;
                            out[to + 64 * chunk + l] = d1 * (q & 15) - m1;
                            out[to + 64 * chunk + 32 + l] = d2 * (q >>> 4) - m2;
                        }
                    }
                }
                case Q6_K -> {
                    float d = half(blocks, at + 208);
                    for (int half = 0; half < 2; half++) {
                        int ql = at + 64 * half;
                        int qh = at + 128 + 32 * half;
                        int sc = at + 192 + 8 * half;
                        for (int l = 0; l < 32; l++) {
                            int is = l / 16;
                            int low0 = blocks[ql + l] & 0xff;
                            int low1 = blocks[ql + l + 32] & 0xff;
                            int high = blocks[qh + l] & 0xff;
                            int base = to + 128 * half + l;
                            out[base] = d * blocks[sc + is] * (((low0 & 15) | (high & 3) << 4) - 32);
                            out[base + 32] = d * blocks[sc + is + 2] * (((low1 & 15) | ((high >>> 2) & 3) << 4) - 32);
                            out[base + 64] = d * blocks[sc + is + 4] * (((low0 >>> 4) | ((high >>> 4) & 3) << 4) - 32);
                            out[base + 96] = d * blocks[sc + is + 6] * (((low1 >>> 4) | ((high >>> 6) & 3) << 4) - 32);
                        }
                    }
                }
            }
        }
        return out;
    }

    // ---- the reference quantizers, one block each ------------------------------------------------------------------

    private static void q8_0(float[] x, int from, byte[] out, int at) {
        float amax = 0f;
        for (int j = 0; j < 32; j++) {
            amax = Math.max(amax, Math.abs(x[from + j]));
        }
        float d = amax / 127;
        float id = d != 0f ? 1.0f / d : 0.0f;
        putHalf(out, at, d);
        for (int j = 0; j < 32; j++) {
            out[at + 2 + j] = (byte) roundf(x[from + j] * id);
        }
    }

    /** The value of largest magnitude, the first one on ties, with its sign. */
    private static float signedMax(float[] x, int from, int count) {
        float amax = 0f;
        float max = 0f;
        for (int j = 0; j < count; j++) {
            float v = x[from + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        return max;
    }

    private static void q4_0(float[] x, int from, byte[] out, int at) {
        float d = signedMax(x, from, 32) / -8;
        float id = d != 0f ? 1.0f / d : 0.0f;
        putHalf(out, at, d);
        for (int j = 0; j < 16; j++) {
            int xi0 = Math.min(15, (int) (x[from + j] * id + 8.5f));
            int xi1 = Math.min(15, (int) (x[from + 16 + j] * id + 8.5f));
            out[at + 2 + j] = (byte) (xi0 | xi1 << 4);
        }
    }

    private static void q5_0(float[] x, int from, byte[] out, int at) {
        float d = signedMax(x, from, 32) / -16;
        float id = d != 0f ? 1.0f / d : 0.0f;
        putHalf(out, at, d);
        int high = 0;
        for (int j = 0; j < 16; j++) {
            int xi0 = Math.min(31, (int) (x[from + j] * id + 16.5f));
            int xi1 = Math.min(31, (int) (x[from + 16 + j] * id + 16.5f));
            out[at + 6 + j] = (byte) ((xi0 & 15) | (xi1 & 15) << 4);
            high |= ((xi0 & 0x10) >>> 4) << j;
            high |= ((xi1 & 0x10) >>> 4) << (j + 16);
        }
        out[at + 2] = (byte) high;
        out[at + 3] = (byte) (high >>> 8);
        out[at + 4] = (byte) (high >>> 16);
        out[at + 5] = (byte) (high >>> 24);
    }

    /**
     * Q4_K: eight sub-blocks of 32 with a 4-bit code, a 6-bit scale and a 6-bit min each (scale and min found by
     * ggml's weighted least-squares search, {@link #scaleAndMin}), the scales and mins themselves scaled by two fp16
     * super-block factors.
     */
    private static void q4_K(float[] x, int from, byte[] out, int at) {
        int[] levels = new int[QK_K];
        int[] trial = new int[32];
        float[] weights = new float[32];
        float[] mins = new float[8];
        float[] scales = new float[8];
        float maxScale = 0f;
        float maxMin = 0f;
        for (int j = 0; j < 8; j++) {
            int base = from + 32 * j;
            float sumSquares = 0f;
            for (int l = 0; l < 32; l++) {
                sumSquares += x[base + l] * x[base + l];
            }
            float average = (float) Math.sqrt(sumSquares / 32);
            for (int l = 0; l < 32; l++) {
                weights[l] = average + Math.abs(x[base + l]);
            }
            float[] minOut = new float[1];
            scales[j] = scaleAndMin(x, base, weights, levels, 32 * j, minOut, trial);
            mins[j] = minOut[0];
            if (scales[j] > maxScale) {
                maxScale = scales[j];
            }
            if (mins[j] > maxMin) {
                maxMin = mins[j];
            }
        }
        float inverseScale = maxScale > 0 ? 63.f / maxScale : 0.f;
        float inverseMin = maxMin > 0 ? 63.f / maxMin : 0.f;
        int packed = at + 4;
        for (int j = 0; j < 8; j++) {
            int ls = Math.min(63, nearestInt(inverseScale * scales[j]) & 0xff);
            int lm = Math.min(63, nearestInt(inverseMin * mins[j]) & 0xff);
            if (j < 4) {
                out[packed + j] = (byte) ls;
                out[packed + j + 4] = (byte) lm;
            } else {
                out[packed + j + 4] = (byte) ((ls & 15) | (lm & 15) << 4);
                out[packed + j - 4] |= (byte) ((ls >>> 4) << 6);
                out[packed + j] |= (byte) ((lm >>> 4) << 6);
            }
        }
        putHalf(out, at, maxScale / 63.f);
        putHalf(out, at + 2, maxMin / 63.f);
        float d = half(out, at);
        float dmin = half(out, at + 2);
        for (int j = 0; j < 8; j++) {
            float subScale = d * scale4K(out, packed, j);
            if (subScale == 0f) {
                continue;
            }
            float subMin = dmin * min4K(out, packed, j);
            for (int l = 0; l < 32; l++) {
                int level = nearestInt((x[from + 32 * j + l] + subMin) / subScale);
                levels[32 * j + l] = Math.max(0, Math.min(15, level));
            }
        }
        for (int chunk = 0; chunk < 4; chunk++) {
            for (int l = 0; l < 32; l++) {
                out[at + 16 + 32 * chunk + l] = (byte) (levels[64 * chunk + l] | levels[64 * chunk + l + 32] << 4);
            }
        }
    }

    /** ggml's {@code get_scale_min_k4}: sub-block j's 6-bit scale. */
    private static int scale4K(byte[] q, int at, int j) {
        return j < 4 ? q[at + j] & 63 : (q[at + j + 4] & 0xF) | ((q[at + j - 4] & 0xff) >>> 6) << 4;
    }

    /** ggml's {@code get_scale_min_k4}: sub-block j's 6-bit min. */
    private static int min4K(byte[] q, int at, int j) {
        return j < 4 ? q[at + j + 4] & 63 : ((q[at + j + 4] & 0xff) >>> 4) | ((q[at + j] & 0xff) >>> 6) << 4;
    }

    /**
     * ggml's {@code make_qkx2_quants} for 32 weights, 4 bits: levels {@code L = round((x - min) / scale)} in [0, 15]
     * with {@code min <= 0}, starting from the range's endpoints and then trying 21 slightly different scales, each
     * refitted by weighted least squares, keeping the one of least weighted squared error. Writes the levels at
     * {@code levels[offset..]}, {@code -min} into {@code minOut[0]} and returns the scale.
     */
    private static float scaleAndMin(float[] x, int from, float[] weights, int[] levels, int offset, float[] minOut,
                                     int[] trial) {
        int n = 32;
        int nmax = 15;
        float rmin = -1.f;
        float rdelta = 0.1f;
        int nstep = 20;
        float min = x[from];
        float max = x[from];
        float sumW = weights[0];
        float sumX = sumW * x[from];
        for (int i = 1; i < n; i++) {
            if (x[from + i] < min) {
                min = x[from + i];
            }
            if (x[from + i] > max) {
                max = x[from + i];
            }
            float w = weights[i];
            sumW += w;
            sumX += w * x[from + i];
        }
        if (min > 0) {
            min = 0;
        }
        if (max == min) {
            Arrays.fill(levels, offset, offset + n, 0);
            minOut[0] = -min;
            return 0.f;
        }
        float iscale = nmax / (max - min);
        float scale = 1 / iscale;
        float bestError = 0;
        for (int i = 0; i < n; i++) {
            int l = nearestInt(iscale * (x[from + i] - min));
            levels[offset + i] = Math.max(0, Math.min(nmax, l));
            float diff = scale * levels[offset + i] + min - x[from + i];
            diff = diff * diff;
            bestError += weights[i] * diff;
        }
        for (int is = 0; is <= nstep; is++) {
            iscale = (rmin + rdelta * is + nmax) / (max - min);
            float sumL = 0;
            float sumL2 = 0;
            float sumXL = 0;
            for (int i = 0; i < n; i++) {
                int l = nearestInt(iscale * (x[from + i] - min));
                l = Math.max(0, Math.min(nmax, l));
                trial[i] = l;
                float w = weights[i];
                sumL += w * l;
                sumL2 += w * l * l;
                sumXL += w * l * x[from + i];
            }
            float determinant = sumW * sumL2 - sumL * sumL;
            if (determinant > 0) {
                float thisScale = (sumW * sumXL - sumX * sumL) / determinant;
                float thisMin = (sumL2 * sumX - sumL * sumXL) / determinant;
                if (thisMin > 0) {
                    thisMin = 0;
                    thisScale = sumXL / sumL2;
                }
                float error = 0;
                for (int i = 0; i < n; i++) {
                    float diff = thisScale * trial[i] + thisMin - x[from + i];
                    diff = diff * diff;
                    error += weights[i] * diff;
                }
                if (error < bestError) {
                    System.arraycopy(trial, 0, levels, offset, n);
                    bestError = error;
                    scale = thisScale;
                    min = thisMin;
                }
            }
        }
        minOut[0] = -min;
        return scale;
    }

    /**
     * Q6_K: sixteen sub-blocks of 16 with a 6-bit code and an 8-bit signed scale each (found by {@link #symmetricScale}),
     * the scales scaled by one fp16 factor.
     */
    private static void q6_K(float[] x, int from, byte[] out, int at) {
        int[] levels = new int[QK_K];
        float[] scales = new float[16];
        float maxScale = 0;
        float maxAbsScale = 0;
        for (int ib = 0; ib < 16; ib++) {
            float scale = symmetricScale(x, from + 16 * ib, levels, 16 * ib);
            scales[ib] = scale;
            float absScale = Math.abs(scale);
            if (absScale > maxAbsScale) {
                maxAbsScale = absScale;
                maxScale = scale;
            }
        }
        if (maxAbsScale < 1e-15f) {
            Arrays.fill(out, at, at + 210, (byte) 0);
            putHalf(out, at + 208, 0.f);
            return;
        }
        float iscale = -128.f / maxScale;
        putHalf(out, at + 208, 1 / iscale);
        for (int ib = 0; ib < 16; ib++) {
            out[at + 192 + ib] = (byte) Math.min(127, nearestInt(iscale * scales[ib]));
        }
        float d = half(out, at + 208);
        for (int j = 0; j < 16; j++) {
            float subScale = d * out[at + 192 + j];
            if (subScale == 0f) {
                continue;
            }
            for (int ii = 0; ii < 16; ii++) {
                int l = nearestInt(x[from + 16 * j + ii] / subScale);
                l = Math.max(-32, Math.min(31, l));
                levels[16 * j + ii] = l + 32;
            }
        }
        for (int half = 0; half < 2; half++) {
            int ql = at + 64 * half;
            int qh = at + 128 + 32 * half;
            int j = 128 * half;
            for (int l = 0; l < 32; l++) {
                int q1 = levels[j + l] & 15;
                int q2 = levels[j + l + 32] & 15;
                int q3 = levels[j + l + 64] & 15;
                int q4 = levels[j + l + 96] & 15;
                out[ql + l] = (byte) (q1 | q3 << 4);
                out[ql + l + 32] = (byte) (q2 | q4 << 4);
                out[qh + l] = (byte) ((levels[j + l] >>> 4) | (levels[j + l + 32] >>> 4) << 2
                        | (levels[j + l + 64] >>> 4) << 4 | (levels[j + l + 96] >>> 4) << 6);
            }
        }
    }

    /**
     * ggml's {@code make_qx_quants} for 16 weights, 6 bits, weighted by {@code x²} (rmse type 1): levels
     * {@code L = round(x / scale)} in [-32, 31] stored as {@code L + 32}, from the scale that maps the largest
     * magnitude to -32 and then 18 nearby ones, each refitted by weighted least squares, keeping the best fit.
     */
    private static float symmetricScale(float[] x, int from, int[] levels, int offset) {
        int n = 16;
        int nmax = 32;
        float max = 0;
        float amax = 0;
        for (int i = 0; i < n; i++) {
            float ax = Math.abs(x[from + i]);
            if (ax > amax) {
                amax = ax;
                max = x[from + i];
            }
        }
        if (amax < 1e-15f) {
            Arrays.fill(levels, offset, offset + n, 0);
            return 0.f;
        }
        float iscale = -nmax / max;
        float sumLX = 0;
        float sumL2 = 0;
        for (int i = 0; i < n; i++) {
            int l = nearestInt(iscale * x[from + i]);
            l = Math.max(-nmax, Math.min(nmax - 1, l));
            levels[offset + i] = l + nmax;
            float w = x[from + i] * x[from + i];
            sumLX += w * x[from + i] * l;
            sumL2 += w * l * l;
        }
        float scale = sumL2 != 0 ? sumLX / sumL2 : 0.0f;
        float best = scale * sumLX;
        for (int is = -9; is <= 9; is++) {
            if (is == 0) {
                continue;
            }
            iscale = -(nmax + 0.1f * is) / max;
            sumLX = 0;
            sumL2 = 0;
            for (int i = 0; i < n; i++) {
                int l = nearestInt(iscale * x[from + i]);
                l = Math.max(-nmax, Math.min(nmax - 1, l));
                float w = x[from + i] * x[from + i];
                sumLX += w * x[from + i] * l;
                sumL2 += w * l * l;
            }
            if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
                for (int i = 0; i < n; i++) {
                    int l = nearestInt(iscale * x[from + i]);
                    levels[offset + i] = nmax + Math.max(-nmax, Math.min(nmax - 1, l));
                }
                scale = sumLX / sumL2;
                best = scale * sumLX;
            }
        }
        return scale;
    }

    // ---- rounding and fp16 ------------------------------------------------------------------------------------------

    /** ggml's {@code nearest_int}: round half to even through the float addition of 1.5·2²³ (for |x| < 2²²). */
    static int nearestInt(float value) {
        float shifted = value + 12582912.f;
        return (Float.floatToRawIntBits(shifted) & 0x007fffff) - 0x00400000;
    }

    /** C's {@code roundf}: half away from zero. */
    static float roundf(float value) {
        double magnitude = Math.floor(Math.abs((double) value) + 0.5);
        return (float) Math.copySign(magnitude, value);
    }

    private static void putHalf(byte[] out, int at, float value) {
        short bits = HalfFloats.floatToF16(value);
        out[at] = (byte) bits;
        out[at + 1] = (byte) (bits >>> 8);
    }

    private static float half(byte[] blocks, int at) {
        return HalfFloats.f16ToFloat((short) ((blocks[at] & 0xff) | (blocks[at + 1] & 0xff) << 8));
    }

    private static long elements(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }
}
