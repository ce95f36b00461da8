package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The small per-token ops of a decode step, each a single pass over a few thousand elements: libtorch spends more
 * on dispatching them (several ops each, a JNI crossing and allocation per op) than on the arithmetic. They run on
 * the calling thread. Rows are copied into Java arrays in bulk and computed there: element-wise access to native
 * memory is fast only once the JIT has compiled a loop fully, array code is fast much earlier.
 */
final class TokenOps {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private TokenOps() {
    }

    /** {@code count} elements from element {@code from} of {@code segment}, widened to float32. */
    static void read(MemorySegment segment, boolean bf16, long from, float[] into, int count) {
        if (bf16) {
            short[] bits = Scratch.shorts(count);
            MemorySegment.copy(segment, BF16, 2 * from, bits, 0, count);
            for (int i = 0; i < count; i++) {
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
            for (int i = 0; i < count; i++) {
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
            double squares = 0;
            for (int i = 0; i < width; i++) {
                squares += row[i] * row[i];
            }
            float variance = (float) (squares / width);
            float factor = (float) (1.0 / Math.sqrt(variance + (float) eps));
            for (int i = 0; i < width; i++) {
                row[i] = round(bf16, row[i] * factor) * scale[i];
            }
            write(row, y, bf16, base, width);
        }
    }

    /**
     * {@code silu(g)·u} in chunks that fit the scratch arrays. The sigmoid is {@code 1 / (1 + e)} for g >= 0 and
     * {@code e / (1 + e)} below, with {@code e = e^-|g|}: the exponent is never positive, so the softmax's
     * exponential ({@link DecodeAttention#exp}, 3e-7 relative error) serves. The JDK's {@code VectorOperators.EXP},
     * used before, has no intrinsic on this JDK build and ran lane by lane: 42 us per call for the 4864 elements of
     * a Qwen2.5-0.5B-shaped MLP, a millisecond of every decode step.
     */
    static void gatedSilu(boolean bf16, MemorySegment gate, MemorySegment up, MemorySegment y, int count) {
        int chunk = 4096;
        float[] g = Scratch.floats(Scratch.ROW, chunk);
        float[] u = Scratch.floats(Scratch.OTHER, chunk);
        VectorSpecies<Float> species = MatVec.WIDENED;
        for (int from = 0; from < count; from += chunk) {
            int n = Math.min(chunk, count - from);
            read(gate, bf16, from, g, n);
            read(up, bf16, from, u, n);
            int i = 0;
            for (; i + species.length() <= n; i += species.length()) {
                FloatVector v = FloatVector.fromArray(species, g, i);
                FloatVector e = DecodeAttention.exp(v.abs().neg());
                FloatVector numerator = e.blend(1f, v.compare(VectorOperators.GE, 0f));
                v.mul(numerator).div(e.add(1f)).intoArray(g, i);
            }
            for (; i < n; i++) {
                g[i] = g[i] / (1f + (float) Math.exp(-g[i]));
            }
            for (int j = 0; j < n; j++) {
                g[j] = round(bf16, g[j]) * u[j];
            }
            write(g, y, bf16, from, n);
        }
    }

    static void rotary(boolean bf16, MemorySegment x, long[] strides, MemorySegment cos, MemorySegment sin,
                       MemorySegment y, int batch, int heads, int tokens, int width) {
        int half = width / 2;
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
                    for (int i = 0; i < width; i++) {
                        float rotated = i < half ? -in[i + half] : in[i - half];
                        out[i] = round(bf16, in[i] * c[i]) + round(bf16, rotated * s[i]);
                    }
                    write(out, y, bf16, (((long) b * heads + h) * tokens + t) * width, width);
                }
            }
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
