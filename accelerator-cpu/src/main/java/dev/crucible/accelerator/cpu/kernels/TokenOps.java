package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The small per-token ops of a decode step, each a single pass over a few thousand elements: libtorch spends more
 * on dispatching them (several ops each, a JNI crossing and allocation per op) than on the arithmetic. They run on
 * the calling thread.
 */
final class TokenOps {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private TokenOps() {
    }

    static float get(MemorySegment segment, boolean bf16, long index) {
        return bf16 ? MatVec.bf16ToFloat(segment.getAtIndex(BF16, index)) : segment.getAtIndex(F32, index);
    }

    static void set(MemorySegment segment, boolean bf16, long index, float value) {
        if (bf16) {
            segment.setAtIndex(BF16, index, MatVec.floatToBf16(value));
        } else {
            segment.setAtIndex(F32, index, value);
        }
    }

    /** The value the dtype holds for {@code value}: bfloat16 rounding, or none. */
    static float round(boolean bf16, float value) {
        return bf16 ? MatVec.bf16ToFloat(MatVec.floatToBf16(value)) : value;
    }

    static void rmsNorm(boolean bf16, MemorySegment x, MemorySegment weight, MemorySegment y, int rows, int width,
                        double eps) {
        float[] row = new float[width];
        for (int r = 0; r < rows; r++) {
            long base = (long) r * width;
            double squares = 0;
            for (int i = 0; i < width; i++) {
                float value = get(x, bf16, base + i);
                row[i] = value;
                squares += value * value;
            }
            float variance = (float) (squares / width);
            float scale = (float) (1.0 / Math.sqrt(variance + (float) eps));
            for (int i = 0; i < width; i++) {
                float normed = round(bf16, row[i] * scale);
                set(y, bf16, base + i, normed * get(weight, bf16, i));
            }
        }
    }

    static void rotary(boolean bf16, MemorySegment x, long[] strides, MemorySegment cos, MemorySegment sin,
                       MemorySegment y, int batch, int heads, int tokens, int width) {
        int half = width / 2;
        for (int b = 0; b < batch; b++) {
            for (int h = 0; h < heads; h++) {
                for (int t = 0; t < tokens; t++) {
                    long in = b * strides[0] + h * strides[1] + t * strides[2];
                    long table = ((long) b * tokens + t) * width;
                    long out = (((long) b * heads + h) * tokens + t) * width;
                    for (int i = 0; i < width; i++) {
                        float value = get(x, bf16, in + i);
                        float rotated = i < half ? -get(x, bf16, in + i + half) : get(x, bf16, in + i - half);
                        float first = round(bf16, value * get(cos, bf16, table + i));
                        float second = round(bf16, rotated * get(sin, bf16, table + i));
                        set(y, bf16, out + i, first + second);
                    }
                }
            }
        }
    }

    /** Like torch.argmax: the first largest element, NaN counting as largest. */
    static void argmax(boolean bf16, MemorySegment x, MemorySegment y, int rows, int width) {
        int lanes = MatVec.FLOATS.length();
        for (int r = 0; r < rows; r++) {
            long base = (long) r * width;
            FloatVector best = FloatVector.broadcast(MatVec.FLOATS, Float.NEGATIVE_INFINITY);
            boolean nan = false;
            int i = 0;
            for (; i + lanes <= width; i += lanes) {
                FloatVector v = bf16 ? MatVec.widen(x, 2 * (base + i))
                        : FloatVector.fromMemorySegment(MatVec.FLOATS, x, 4 * (base + i), java.nio.ByteOrder.LITTLE_ENDIAN);
                nan |= v.test(VectorOperators.IS_NAN).anyTrue();
                best = best.max(v);
            }
            float max = best.reduceLanes(VectorOperators.MAX);
            for (; i < width; i++) {
                float value = get(x, bf16, base + i);
                nan |= Float.isNaN(value);
                max = Math.max(max, value);
            }
            long index = 0;
            for (int j = 0; j < width; j++) {
                float value = get(x, bf16, base + j);
                if (nan ? Float.isNaN(value) : value == max) {
                    index = j;
                    break;
                }
            }
            y.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, r, index);
        }
    }
}
