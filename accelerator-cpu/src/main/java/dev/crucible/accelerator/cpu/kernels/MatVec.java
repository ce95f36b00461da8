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
    /** Float32 weights: the widest vectors the CPU has. */
    static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED;
    /**
     * bfloat16 weights widen to float vectors of at most 256 bits: on a Zen 4 core, which splits 512-bit operations
     * in two, the 512-bit widening ran at 68% of a streaming read and the 256-bit one at 85% (measured, one thread).
     */
    static final VectorSpecies<Float> WIDENED = FLOATS.vectorBitSize() > 256 ? FloatVector.SPECIES_256 : FLOATS;
    /** As many shorts as {@link #WIDENED} has floats: one load of bfloat16 widens to one float vector. */
    static final VectorSpecies<Short> SHORTS = VectorSpecies.of(short.class,
            VectorShape.forBitSize(WIDENED.vectorBitSize() / 2));
    private static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, WIDENED.vectorShape());
    private static final int LANES = FLOATS.length();
    private static final int WIDE_LANES = WIDENED.length();
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private MatVec() {
    }

    /**
     * Outputs {@code [from, to)} of every row: {@code y[r·out + n] = Σ w[n, k]·x[r·in + k] + bias[n]}, each rounded
     * once to the dtype and stored straight into {@code y}.
     *
     * @param bf16 whether the weights, bias and output are bfloat16 (else float32)
     * @param x    the input rows in float32, in native memory: vector loads from a Java array cost a third of the
     *             bandwidth here (measured), loads from native memory none
     * @param bias the bias in the dtype, or null
     */
    static void rows(boolean bf16, MemorySegment weight, MemorySegment x, MemorySegment bias, MemorySegment y,
                     int rows, int in, int out, int from, int to) {
        int bytes = bf16 ? 2 : 4;
        if (bf16 && rows == 1 && in % (4 * WIDE_LANES) == 0) {
            // One row in a counted loop: its bounds checks are hoisted (the general loop's were not; measured in a
            // decode step). Float32 keeps the general loop: the same treatment ran it at 0.45-0.67 of the bound
            // against 0.78.
            oneRowBf16(weight, x, bias, y, in, from, to);
            return;
        }
        if (!bf16 && rows == 1 && in >= LONG_ROW) {
            oneLongRowF32(weight, x, bias, y, in, from, to);
            return;
        }
        for (int n = from; n < to; n++) {
            long offset = (long) n * in * bytes;
            float add = bias == null ? 0f : load(bias, bf16, n);
            int row = 0;
            for (; row + 4 <= rows; row += 4) {
                if (bf16) {
                    dot4Bf16(weight, offset, x, row * in, in, y, (long) row * out + n, out, add);
                } else {
                    dot4F32(weight, offset, x, row * in, in, y, (long) row * out + n, out, add);
                }
            }
            for (; row < rows; row++) {
                float dot = bf16 ? dotBf16(weight, offset, x, row * in, in) : dotF32(weight, offset, x, row * in, in);
                store(y, bf16, (long) row * out + n, dot + add);
            }
        }
    }

    /**
     * Float32 weight rows at least this long are read four at a time against one input row. One row's dot product
     * loads an input vector beside every weight vector, and an input this long (the MLP down projection's 4,864
     * floats, 19 KB) no longer stays in the L1 cache beside the weights streaming through it: the one-row loop read a
     * 896 x 4864 weight at 11-15 GB/s against 20-29 for 896-float rows; four rows sharing each input load read it at
     * 14.5-18.5 (one thread, this machine, runs interleaved; docs/performance.md). Shorter rows keep the one-row
     * loop, which four rows at a time slowed by half (measured on 896-float rows).
     */
    static final int LONG_ROW = 2048;

    /**
     * Outputs {@code [from, to)} of one input row against float32 weight rows of {@code in >= LONG_ROW} floats, four
     * weight rows per pass. Written as the loop that measured fast: the same loop with its bound precomputed and its
     * four sums gathered in an array, or with each row as its own slice, measured no faster than one row at a time
     * (10.7 and 9.4 GB/s on the down projection).
     */
    private static void oneLongRowF32(MemorySegment w, MemorySegment x, MemorySegment bias, MemorySegment y, int in,
                                      int from, int to) {
        long rowBytes = 4L * in;
        int n = from;
        for (; n + 4 <= to; n += 4) {
            long offset = n * rowBytes;
            FloatVector a0 = FloatVector.zero(FLOATS);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            for (int k = 0; k + LANES <= in; k += LANES) {
                FloatVector input = FloatVector.fromMemorySegment(FLOATS, x, 4L * k, ORDER);
                long at = offset + 4L * k;
                a0 = FloatVector.fromMemorySegment(FLOATS, w, at, ORDER).fma(input, a0);
                a1 = FloatVector.fromMemorySegment(FLOATS, w, at + rowBytes, ORDER).fma(input, a1);
                a2 = FloatVector.fromMemorySegment(FLOATS, w, at + 2 * rowBytes, ORDER).fma(input, a2);
                a3 = FloatVector.fromMemorySegment(FLOATS, w, at + 3 * rowBytes, ORDER).fma(input, a3);
            }
            y.setAtIndex(F32, n, a0.reduceLanes(VectorOperators.ADD));
            y.setAtIndex(F32, n + 1, a1.reduceLanes(VectorOperators.ADD));
            y.setAtIndex(F32, n + 2, a2.reduceLanes(VectorOperators.ADD));
            y.setAtIndex(F32, n + 3, a3.reduceLanes(VectorOperators.ADD));
        }
        for (; n < to; n++) {
            y.setAtIndex(F32, n, dotF32(w, n * rowBytes, x, 0, in));
        }
        // The columns past the last whole vector, and the bias, for the rows of the four-row passes (the rows after
        // them took both in dotF32 above, apart from the bias).
        int vectorEnd = in - in % LANES;
        int fours = from + (to - from) / 4 * 4;
        for (int row = from; row < to; row++) {
            float dot = y.getAtIndex(F32, row);
            if (row < fours) {
                for (int k = vectorEnd; k < in; k++) {
                    dot += w.get(F32, row * rowBytes + 4L * k) * x.getAtIndex(F32, k);
                }
            }
            y.setAtIndex(F32, row, bias == null ? dot : dot + bias.getAtIndex(F32, row));
        }
    }

    private static void oneRowBf16(MemorySegment w, MemorySegment x, MemorySegment bias, MemorySegment y, int in,
                                   int from, int to) {
        for (int n = from; n < to; n++) {
            long offset = (long) n * in * 2;
            FloatVector a0 = FloatVector.zero(WIDENED);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            for (int k = 0; k < in; k += 4 * WIDE_LANES) {
                long at = offset + 2L * k;
                long xa = 4L * k;
                a0 = widen(w, at).fma(FloatVector.fromMemorySegment(WIDENED, x, xa, ORDER), a0);
                a1 = widen(w, at + 2L * WIDE_LANES).fma(FloatVector.fromMemorySegment(WIDENED, x, xa + 4L * WIDE_LANES, ORDER), a1);
                a2 = widen(w, at + 4L * WIDE_LANES).fma(FloatVector.fromMemorySegment(WIDENED, x, xa + 8L * WIDE_LANES, ORDER), a2);
                a3 = widen(w, at + 6L * WIDE_LANES).fma(FloatVector.fromMemorySegment(WIDENED, x, xa + 12L * WIDE_LANES, ORDER), a3);
            }
            float dot = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
            y.setAtIndex(BF16, n, floatToBf16(bias == null ? dot : dot + bf16ToFloat(bias.getAtIndex(BF16, n))));
        }
    }

    static float load(MemorySegment segment, boolean bf16, long index) {
        return bf16 ? bf16ToFloat(segment.getAtIndex(BF16, index)) : segment.getAtIndex(F32, index);
    }

    static void store(MemorySegment segment, boolean bf16, long index, float value) {
        if (bf16) {
            segment.setAtIndex(BF16, index, floatToBf16(value));
        } else {
            segment.setAtIndex(F32, index, value);
        }
    }

    /** {@link #WIDENED}'s length of bfloat16 at {@code byteOffset}, widened to float32. */
    static FloatVector widen(MemorySegment weight, long byteOffset) {
        return ShortVector.fromMemorySegment(SHORTS, weight, byteOffset, ORDER)
                .convertShape(VectorOperators.S2I, INTS, 0).reinterpretAsInts()
                .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /**
     * {@link #WIDENED}'s length of floats from element {@code element}, stored as bfloat16 or float32. For loops that
     * serve both dtypes: both loads are written out here, not by calling {@link #widen}. In a float32 run the
     * bfloat16 branch is cold, and the JIT does not inline a cold call over its size limit (widen is, by one byte);
     * a call left out of line returns its vector boxed, and the branches' merge then boxes the float32 load too, so
     * every load allocated: measured in a decode step, 2 GB/s of garbage and attention 15x slower than the same
     * kernel compiled without the cold branch.
     */
    static FloatVector load(boolean bf16, MemorySegment segment, long element) {
        if (bf16) {
            return ShortVector.fromMemorySegment(SHORTS, segment, 2 * element, ORDER)
                    .convertShape(VectorOperators.S2I, INTS, 0).reinterpretAsInts()
                    .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
        }
        return FloatVector.fromMemorySegment(WIDENED, segment, 4 * element, ORDER);
    }

    private static float dotBf16(MemorySegment w, long offset, MemorySegment x, int xFrom, int in) {
        FloatVector a0 = FloatVector.zero(WIDENED);
        FloatVector a1 = FloatVector.zero(WIDENED);
        FloatVector a2 = FloatVector.zero(WIDENED);
        FloatVector a3 = FloatVector.zero(WIDENED);
        int k = 0;
        int blocked = in - in % (4 * WIDE_LANES);
        long xBase = 4L * xFrom;
        for (; k < blocked; k += 4 * WIDE_LANES) {
            long at = offset + 2L * k;
            long xa = xBase + 4L * k;
            a0 = widen(w, at).fma(FloatVector.fromMemorySegment(WIDENED, x, xa, ORDER), a0);
            a1 = widen(w, at + 2L * WIDE_LANES).fma(FloatVector.fromMemorySegment(WIDENED, x, xa + 4L * WIDE_LANES, ORDER), a1);
            a2 = widen(w, at + 4L * WIDE_LANES).fma(FloatVector.fromMemorySegment(WIDENED, x, xa + 8L * WIDE_LANES, ORDER), a2);
            a3 = widen(w, at + 6L * WIDE_LANES).fma(FloatVector.fromMemorySegment(WIDENED, x, xa + 12L * WIDE_LANES, ORDER), a3);
        }
        for (; k + WIDE_LANES <= in; k += WIDE_LANES) {
            a0 = widen(w, offset + 2L * k).fma(wideInput(x, xFrom + k), a0);
        }
        float sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            sum += bf16ToFloat(w.get(BF16, offset + 2L * k)) * x.getAtIndex(F32, xFrom + k);
        }
        return sum;
    }

    private static float dotF32(MemorySegment w, long offset, MemorySegment x, int xFrom, int in) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int k = 0;
        for (; k + 4 * LANES <= in; k += 4 * LANES) {
            long at = offset + 4L * k;
            a0 = FloatVector.fromMemorySegment(FLOATS, w, at, ORDER).fma(input(x, xFrom + k), a0);
            a1 = FloatVector.fromMemorySegment(FLOATS, w, at + 4L * LANES, ORDER)
                    .fma(input(x, xFrom + k + LANES), a1);
            a2 = FloatVector.fromMemorySegment(FLOATS, w, at + 8L * LANES, ORDER)
                    .fma(input(x, xFrom + k + 2 * LANES), a2);
            a3 = FloatVector.fromMemorySegment(FLOATS, w, at + 12L * LANES, ORDER)
                    .fma(input(x, xFrom + k + 3 * LANES), a3);
        }
        for (; k + LANES <= in; k += LANES) {
            a0 = FloatVector.fromMemorySegment(FLOATS, w, offset + 4L * k, ORDER)
                    .fma(input(x, xFrom + k), a0);
        }
        float sum = a0.add(a1).add(a2.add(a3)).reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            sum += w.get(F32, offset + 4L * k) * x.getAtIndex(F32, xFrom + k);
        }
        return sum;
    }

    /** Four input rows against one weight row, widening each weight vector once. */
    private static void dot4Bf16(MemorySegment w, long offset, MemorySegment x, int xFrom, int in, MemorySegment y,
                                 long yAt, int yStride, float add) {
        FloatVector a0 = FloatVector.zero(WIDENED);
        FloatVector a1 = FloatVector.zero(WIDENED);
        FloatVector a2 = FloatVector.zero(WIDENED);
        FloatVector a3 = FloatVector.zero(WIDENED);
        int k = 0;
        for (; k + WIDE_LANES <= in; k += WIDE_LANES) {
            FloatVector wv = widen(w, offset + 2L * k);
            a0 = wv.fma(wideInput(x, xFrom + k), a0);
            a1 = wv.fma(wideInput(x, xFrom + in + k), a1);
            a2 = wv.fma(wideInput(x, xFrom + 2 * in + k), a2);
            a3 = wv.fma(wideInput(x, xFrom + 3 * in + k), a3);
        }
        float s0 = a0.reduceLanes(VectorOperators.ADD);
        float s1 = a1.reduceLanes(VectorOperators.ADD);
        float s2 = a2.reduceLanes(VectorOperators.ADD);
        float s3 = a3.reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            float wk = bf16ToFloat(w.get(BF16, offset + 2L * k));
            s0 += wk * x.getAtIndex(F32, xFrom + k);
            s1 += wk * x.getAtIndex(F32, xFrom + in + k);
            s2 += wk * x.getAtIndex(F32, xFrom + 2 * in + k);
            s3 += wk * x.getAtIndex(F32, xFrom + 3 * in + k);
        }
        store(y, true, yAt, s0 + add);
        store(y, true, yAt + yStride, s1 + add);
        store(y, true, yAt + 2L * yStride, s2 + add);
        store(y, true, yAt + 3L * yStride, s3 + add);
    }

    private static void dot4F32(MemorySegment w, long offset, MemorySegment x, int xFrom, int in, MemorySegment y,
                                long yAt, int yStride, float add) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int k = 0;
        for (; k + LANES <= in; k += LANES) {
            FloatVector wv = FloatVector.fromMemorySegment(FLOATS, w, offset + 4L * k, ORDER);
            a0 = wv.fma(input(x, xFrom + k), a0);
            a1 = wv.fma(input(x, xFrom + in + k), a1);
            a2 = wv.fma(input(x, xFrom + 2 * in + k), a2);
            a3 = wv.fma(input(x, xFrom + 3 * in + k), a3);
        }
        float s0 = a0.reduceLanes(VectorOperators.ADD);
        float s1 = a1.reduceLanes(VectorOperators.ADD);
        float s2 = a2.reduceLanes(VectorOperators.ADD);
        float s3 = a3.reduceLanes(VectorOperators.ADD);
        for (; k < in; k++) {
            float wk = w.get(F32, offset + 4L * k);
            s0 += wk * x.getAtIndex(F32, xFrom + k);
            s1 += wk * x.getAtIndex(F32, xFrom + in + k);
            s2 += wk * x.getAtIndex(F32, xFrom + 2 * in + k);
            s3 += wk * x.getAtIndex(F32, xFrom + 3 * in + k);
        }
        store(y, false, yAt, s0 + add);
        store(y, false, yAt + yStride, s1 + add);
        store(y, false, yAt + 2L * yStride, s2 + add);
        store(y, false, yAt + 3L * yStride, s3 + add);
    }

    private static FloatVector input(MemorySegment x, int element) {
        return FloatVector.fromMemorySegment(FLOATS, x, 4L * element, ORDER);
    }

    private static FloatVector wideInput(MemorySegment x, int element) {
        return FloatVector.fromMemorySegment(WIDENED, x, 4L * element, ORDER);
    }

    static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat(bits << 16);
    }

    /**
     * {@link #floatToBf16} of every lane: the bfloat16 bits in the low half of each int. For the dequantization's
     * 512-bit vectors; the 256-bit token ops have their own copy, {@link Lanes#bf16Bits}, which says why.
     */
    static IntVector bf16Bits(FloatVector value) {
        IntVector bits = value.reinterpretAsInts();
        IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7fff)
                .lanewise(VectorOperators.LSHR, 16);
        return rounded.blend(0x7fc0, bits.and(0x7fffffff).compare(VectorOperators.GT, 0x7f800000));
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
