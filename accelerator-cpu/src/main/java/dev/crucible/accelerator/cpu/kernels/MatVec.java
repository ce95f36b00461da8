package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Matrix-vector products against a row-major weight {@code [out, in]} as checkpoints store it: every output is the
 * dot product of one contiguous weight row with the input, so the weights stream from memory once, front to back,
 * which is what bounds a decode step. A few input rows share each pass over a weight row (it stays in the L1
 * cache while they use it).
 *
 * <p>bfloat16 weights widen to float32 in registers (a bfloat16 is the upper half of a float32), products accumulate
 * in float32. The widest vectors the CPU has are used ({@link FloatVector#SPECIES_PREFERRED}).
 */
final class MatVec {
    static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;
    /** As many shorts as {@link #FLOATS} has floats: one load of bfloat16 widens to one float vector. */
    static final VectorSpecies<Short> SHORTS = VectorSpecies.of(short.class,
            VectorShape.forBitSize(FLOATS.vectorBitSize() / 2));
    private static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, FLOATS.vectorShape());
    private static final int LANES = FLOATS.length();
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private MatVec() {
    }

    /**
     * Outputs {@code [from, to)} of every row: {@code y[r·out + n] = Σ w[n, k]·x[r·in + k] + bias[n]}.
     *
     * @param bf16 whether the weights are bfloat16 (else float32)
     * @param bias float32 bias or null
     */
    static void rows(boolean bf16, MemorySegment weight, float[] x, float[] bias, float[] y, int rows, int in,
                     int out, int from, int to) {
        int bytes = bf16 ? 2 : 4;
        for (int n = from; n < to; n++) {
            long offset = (long) n * in * bytes;
            float add = bias == null ? 0f : bias[n];
            int row = 0;
            for (; row + 4 <= rows; row += 4) {
                if (bf16) {
                    dot4Bf16(weight, offset, x, row * in, in, y, row * out + n, out, add);
                } else {
                    dot4F32(weight, offset, x, row * in, in, y, row * out + n, out, add);
                }
            }
            for (; row < rows; row++) {
                y[row * out + n] = add + (bf16 ? dotBf16(weight, offset, x, row * in, in)
                        : dotF32(weight, offset, x, row * in, in));
            }
        }
    }

    /** Sixteen (or the vector width of) bfloat16 at {@code byteOffset}, widened to float32. */
    static FloatVector widen(MemorySegment weight, long byteOffset) {
        return ShortVector.fromMemorySegment(SHORTS, weight, byteOffset, ORDER)
                .convertShape(VectorOperators.S2I, INTS, 0).reinterpretAsInts()
                .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    private static float dotBf16(MemorySegment w, long offset, float[] x, int xFrom, int in) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int k = 0;
        for (; k + 4 * LANES <= in; k += 4 * LANES) {
            long at = offset + 2L * k;
            a0 = widen(w, at).fma(FloatVector.fromArray(FLOATS, x, xFrom + k), a0);
            a1 = widen(w, at + 2L * LANES).fma(FloatVector.fromArray(FLOATS, x, xFrom + k + LANES), a1);
            a2 = widen(w, at + 4L * LANES).fma(FloatVector.fromArray(FLOATS, x, xFrom + k + 2 * LANES), a2);
            a3 = widen(w, at + 6L * LANES).fma(FloatVector.fromArray(FLOATS, x, xFrom + k + 3 * LANES), a3);
        }
        for (; k + LANES <= in; k += LANES) {
            a0 = widen(w, offset + 2L * k).fma(FloatVector.fromArray(FLOATS, x, xFrom + k), a0);
        }
        float sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            sum += bf16ToFloat(w.get(BF16, offset + 2L * k)) * x[xFrom + k];
        }
        return sum;
    }

    private static float dotF32(MemorySegment w, long offset, float[] x, int xFrom, int in) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int k = 0;
        for (; k + 4 * LANES <= in; k += 4 * LANES) {
            long at = offset + 4L * k;
            a0 = FloatVector.fromMemorySegment(FLOATS, w, at, ORDER).fma(FloatVector.fromArray(FLOATS, x, xFrom + k), a0);
            a1 = FloatVector.fromMemorySegment(FLOATS, w, at + 4L * LANES, ORDER)
                    .fma(FloatVector.fromArray(FLOATS, x, xFrom + k + LANES), a1);
            a2 = FloatVector.fromMemorySegment(FLOATS, w, at + 8L * LANES, ORDER)
                    .fma(FloatVector.fromArray(FLOATS, x, xFrom + k + 2 * LANES), a2);
            a3 = FloatVector.fromMemorySegment(FLOATS, w, at + 12L * LANES, ORDER)
                    .fma(FloatVector.fromArray(FLOATS, x, xFrom + k + 3 * LANES), a3);
        }
        for (; k + LANES <= in; k += LANES) {
            a0 = FloatVector.fromMemorySegment(FLOATS, w, offset + 4L * k, ORDER)
                    .fma(FloatVector.fromArray(FLOATS, x, xFrom + k), a0);
        }
        float sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            sum += w.get(F32, offset + 4L * k) * x[xFrom + k];
        }
        return sum;
    }

    /** Four input rows against one weight row, widening each weight vector once. */
    private static void dot4Bf16(MemorySegment w, long offset, float[] x, int xFrom, int in, float[] y, int yAt,
                                 int yStride, float add) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int k = 0;
        for (; k + LANES <= in; k += LANES) {
            FloatVector wv = widen(w, offset + 2L * k);
            a0 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + k), a0);
            a1 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + in + k), a1);
            a2 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + 2 * in + k), a2);
            a3 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + 3 * in + k), a3);
        }
        float s0 = a0.reduceLanes(VectorOperators.ADD);
        float s1 = a1.reduceLanes(VectorOperators.ADD);
        float s2 = a2.reduceLanes(VectorOperators.ADD);
        float s3 = a3.reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            float wk = bf16ToFloat(w.get(BF16, offset + 2L * k));
            s0 += wk * x[xFrom + k];
            s1 += wk * x[xFrom + in + k];
            s2 += wk * x[xFrom + 2 * in + k];
            s3 += wk * x[xFrom + 3 * in + k];
        }
        y[yAt] = s0 + add;
        y[yAt + yStride] = s1 + add;
        y[yAt + 2 * yStride] = s2 + add;
        y[yAt + 3 * yStride] = s3 + add;
    }

    private static void dot4F32(MemorySegment w, long offset, float[] x, int xFrom, int in, float[] y, int yAt,
                                int yStride, float add) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int k = 0;
        for (; k + LANES <= in; k += LANES) {
            FloatVector wv = FloatVector.fromMemorySegment(FLOATS, w, offset + 4L * k, ORDER);
            a0 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + k), a0);
            a1 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + in + k), a1);
            a2 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + 2 * in + k), a2);
            a3 = wv.fma(FloatVector.fromArray(FLOATS, x, xFrom + 3 * in + k), a3);
        }
        float s0 = a0.reduceLanes(VectorOperators.ADD);
        float s1 = a1.reduceLanes(VectorOperators.ADD);
        float s2 = a2.reduceLanes(VectorOperators.ADD);
        float s3 = a3.reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            float wk = w.get(F32, offset + 4L * k);
            s0 += wk * x[xFrom + k];
            s1 += wk * x[xFrom + in + k];
            s2 += wk * x[xFrom + 2 * in + k];
            s3 += wk * x[xFrom + 3 * in + k];
        }
        y[yAt] = s0 + add;
        y[yAt + yStride] = s1 + add;
        y[yAt + 2 * yStride] = s2 + add;
        y[yAt + 3 * yStride] = s3 + add;
    }

    static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat(bits << 16);
    }

    /** Round to nearest even, NaN to the canonical quiet NaN, as c10::BFloat16 does. */
    static short floatToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) 0x7fc0;
        }
        return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
    }
}
