package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The small per-token ops of a decode step, each a single pass over a few thousand elements: libtorch spends more
 * on dispatching them (several ops each, a JNI crossing and allocation per op) than on the arithmetic. They run on
 * the calling thread. Rows are copied into Java arrays in bulk and computed there: element-wise access to native
 * memory is fast only once the JIT has compiled a loop fully, array code is fast much earlier.
 *
 * <p>Every pass over a row is in vectors, the widening from and rounding to bfloat16 included: element by element,
 * with the rounding a call per element, these ops took 0.8 ms of a Qwen2.5-0.5B-shaped decode step (measured with
 * the products and attention skipped), the gated SiLU alone 15 us per call.
 *
 * <p>The runner's JVM options keep every method here and in {@link DecodeAttention} from being inlined into its
 * callers ({@code -XX:CompileCommand=dontinline}, scripts/runner-jvm.args), so each loop is compiled on its own; none
 * takes or returns a vector, and the vector-valued helpers they call ({@link Lanes}, {@link MatVec#load}) are small
 * enough to be inlined into them. Left to its heuristics, the JIT inlined whole kernels into the model code above
 * them until one compilation passed C2's node budget; the vector operations left over then ran as calls that box
 * every vector: the step's small ops took 1.7 ms instead of 1.2 (same measurement), and attention, once its loops
 * were inlined into one another, twice its time. Without those options everything computes the same, only slower.
 */
final class TokenOps {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final VectorSpecies<Float> SPECIES = MatVec.WIDENED;
    private static final VectorSpecies<Short> SHORTS = MatVec.SHORTS;
    private static final VectorSpecies<Integer> INTS = VectorSpecies.of(int.class, SPECIES.vectorShape());
    private static final int LANES = SPECIES.length();

    private TokenOps() {
    }

    /** {@code count} elements from element {@code from} of {@code segment}, widened to float32. */
    static void read(MemorySegment segment, boolean bf16, long from, float[] into, int count) {
        if (bf16) {
            short[] bits = Scratch.shorts(count);
            MemorySegment.copy(segment, BF16, 2 * from, bits, 0, count);
            int i = 0;
            for (; i + LANES <= count; i += LANES) {
                ShortVector.fromArray(SHORTS, bits, i).convertShape(VectorOperators.S2I, INTS, 0).reinterpretAsInts()
                        .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(into, i);
            }
            for (; i < count; i++) {
                into[i] = MatVec.bf16ToFloat(bits[i]);
            }
        } else {
            MemorySegment.copy(segment, F32, 4 * from, into, 0, count);
        }
    }

    /** {@code count} values into {@code segment} from element {@code from}, rounded to bfloat16 when asked. */
    static void write(float[] values, MemorySegment segment, boolean bf16, long from, int count) {
        if (bf16) {
            short[] bits = Scratch.shorts(count);
            int i = 0;
            for (; i + LANES <= count; i += LANES) {
                Lanes.bf16Bits(FloatVector.fromArray(SPECIES, values, i)).convertShape(VectorOperators.I2S, SHORTS, 0)
                        .reinterpretAsShorts().intoArray(bits, i);
            }
            for (; i < count; i++) {
                bits[i] = MatVec.floatToBf16(values[i]);
            }
            MemorySegment.copy(bits, 0, segment, BF16, 2 * from, count);
        } else {
            MemorySegment.copy(values, 0, segment, F32, 4 * from, count);
        }
    }

    /** The value the dtype holds for {@code value}: bfloat16 rounding, or none. */
    static float round(boolean bf16, float value) {
        return bf16 ? MatVec.bf16ToFloat(MatVec.floatToBf16(value)) : value;
    }

    static void rmsNorm(boolean bf16, MemorySegment x, MemorySegment weight, MemorySegment y, int rows, int width,
                        double eps) {
        float[] row = Scratch.floats(Scratch.ROW, width);
        float[] scale = Scratch.floats(Scratch.OTHER, width);
        read(weight, bf16, 0, scale, width);
        for (int r = 0; r < rows; r++) {
            long base = (long) r * width;
            read(x, bf16, base, row, width);
            // Four partial sums break the chain of dependent additions; in double, their order changes nothing a
            // float32 variance can show.
            double s0 = 0;
            double s1 = 0;
            double s2 = 0;
            double s3 = 0;
            int i = 0;
            for (; i + 4 <= width; i += 4) {
                s0 += row[i] * row[i];
                s1 += row[i + 1] * row[i + 1];
                s2 += row[i + 2] * row[i + 2];
                s3 += row[i + 3] * row[i + 3];
            }
            for (; i < width; i++) {
                s0 += row[i] * row[i];
            }
            float variance = (float) ((s0 + s1 + s2 + s3) / width);
            scaleRow(bf16, row, (float) (1.0 / Math.sqrt(variance + (float) eps)), scale, width);
            write(row, y, bf16, base, width);
        }
    }

    /** {@code row = round(row·factor)·scale}. */
    static void scaleRow(boolean bf16, float[] row, float factor, float[] scale, int width) {
        int j = 0;
        for (; j + LANES <= width; j += LANES) {
            Lanes.round(bf16, FloatVector.fromArray(SPECIES, row, j).mul(factor))
                    .mul(FloatVector.fromArray(SPECIES, scale, j)).intoArray(row, j);
        }
        for (; j < width; j++) {
            row[j] = round(bf16, row[j] * factor) * scale[j];
        }
    }

    /**
     * {@code silu(g)·u} in chunks that fit the scratch arrays. The sigmoid is {@code 1 / (1 + e)} for g >= 0 and
     * {@code e / (1 + e)} below, with {@code e = e^-|g|}: the exponent is never positive, so the softmax's
     * exponential ({@link Lanes#exp}, 3e-7 relative error) serves. The JDK's {@code VectorOperators.EXP},
     * used before, has no intrinsic on this JDK build and ran lane by lane: 42 us per call for the 4864 elements of
     * a Qwen2.5-0.5B-shaped MLP, a millisecond of every decode step.
     */
    static void gatedSilu(boolean bf16, MemorySegment gate, MemorySegment up, MemorySegment y, int count) {
        int chunk = 4096;
        float[] g = Scratch.floats(Scratch.ROW, chunk);
        float[] u = Scratch.floats(Scratch.OTHER, chunk);
        for (int from = 0; from < count; from += chunk) {
            int n = Math.min(chunk, count - from);
            read(gate, bf16, from, g, n);
            read(up, bf16, from, u, n);
            siluTimes(bf16, g, u, n);
            write(g, y, bf16, from, n);
        }
    }

    /** {@code g = round(silu(g))·u} over {@code n} elements. */
    static void siluTimes(boolean bf16, float[] g, float[] u, int n) {
        int i = 0;
        for (; i + LANES <= n; i += LANES) {
            FloatVector v = FloatVector.fromArray(SPECIES, g, i);
            FloatVector e = Lanes.exp(v.abs().neg());
            FloatVector numerator = e.blend(1f, v.compare(VectorOperators.GE, 0f));
            Lanes.round(bf16, v.mul(numerator).div(e.add(1f))).mul(FloatVector.fromArray(SPECIES, u, i))
                    .intoArray(g, i);
        }
        for (; i < n; i++) {
            g[i] = round(bf16, g[i] / (1f + (float) Math.exp(-g[i]))) * u[i];
        }
    }

    static void rotary(boolean bf16, MemorySegment x, long[] strides, MemorySegment cos, MemorySegment sin,
                       MemorySegment y, int batch, int heads, int tokens, int width) {
        float[] in = Scratch.floats(Scratch.ROW, width);
        float[] out = Scratch.floats(Scratch.OUT, width);
        float[] c = Scratch.floats(Scratch.OTHER, width);
        float[] s = Scratch.floats(Scratch.SIN, width);
        for (int b = 0; b < batch; b++) {
            for (int t = 0; t < tokens; t++) {
                long table = ((long) b * tokens + t) * width;
                read(cos, bf16, table, c, width);
                read(sin, bf16, table, s, width);
                for (int h = 0; h < heads; h++) {
                    read(x, bf16, b * strides[0] + h * strides[1] + t * strides[2], in, width);
                    rotate(bf16, in, c, s, out, width);
                    write(out, y, bf16, (((long) b * heads + h) * tokens + t) * width, width);
                }
            }
        }
    }

    /** {@code out = round(in·c) + round(rotate_half(in)·s)} for one head. */
    static void rotate(boolean bf16, float[] in, float[] c, float[] s, float[] out, int width) {
        int half = width / 2;
        int i = 0;
        if (half % LANES == 0) {
            // Lanes i of the first half and i + half of the second: each half's rotation is the other.
            for (; i < half; i += LANES) {
                FloatVector first = FloatVector.fromArray(SPECIES, in, i);
                FloatVector second = FloatVector.fromArray(SPECIES, in, i + half);
                Lanes.round(bf16, first.mul(FloatVector.fromArray(SPECIES, c, i)))
                        .add(Lanes.round(bf16, second.neg().mul(FloatVector.fromArray(SPECIES, s, i))))
                        .intoArray(out, i);
                Lanes.round(bf16, second.mul(FloatVector.fromArray(SPECIES, c, i + half)))
                        .add(Lanes.round(bf16, first.mul(FloatVector.fromArray(SPECIES, s, i + half))))
                        .intoArray(out, i + half);
            }
            i = width;
        }
        for (; i < width; i++) {
            float rotated = i < half ? -in[i + half] : in[i - half];
            out[i] = round(bf16, in[i] * c[i]) + round(bf16, rotated * s[i]);
        }
    }

    /** Like torch.argmax: the first largest element, NaN counting as largest. */
    static void argmax(boolean bf16, MemorySegment x, MemorySegment y, int rows, int width) {
        int lanes = MatVec.WIDENED.length();
        for (int r = 0; r < rows; r++) {
            long base = (long) r * width;
            // One vector pass for the largest value (and whether there is a NaN), then the first index holding it.
            FloatVector best = FloatVector.broadcast(MatVec.WIDENED, Float.NEGATIVE_INFINITY);
            VectorMask<Float> nan = MatVec.WIDENED.maskAll(false);
            int i = 0;
            for (; i + lanes <= width; i += lanes) {
                FloatVector v = MatVec.load(bf16, x, base + i);
                nan = nan.or(v.test(VectorOperators.IS_NAN));
                best = best.max(v);
            }
            float max = best.reduceLanes(VectorOperators.MAX);
            boolean anyNan = nan.anyTrue();
            for (; i < width; i++) {
                float value = element(x, bf16, base + i);
                anyNan |= Float.isNaN(value);
                max = Math.max(max, value);
            }
            long index = -1;
            int j = 0;
            for (; j + lanes <= width && index < 0; j += lanes) {
                FloatVector v = MatVec.load(bf16, x, base + j);
                VectorMask<Float> hit = anyNan ? v.test(VectorOperators.IS_NAN) : v.eq(max);
                if (hit.anyTrue()) {
                    index = j + hit.firstTrue();
                }
            }
            for (; j < width && index < 0; j++) {
                float value = element(x, bf16, base + j);
                if (anyNan ? Float.isNaN(value) : value == max) {
                    index = j;
                }
            }
            y.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r, index);
        }
    }

    private static float element(MemorySegment segment, boolean bf16, long index) {
        return bf16 ? MatVec.bf16ToFloat(segment.getAtIndex(BF16, index)) : segment.getAtIndex(F32, index);
    }
}
