package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Attention for a few query tokens over a key/value cache: per (row, token, query head) one pass of dot products
 * over the keys, a softmax, and one weighted sum of the values, in float32. With one query token this is tiny work
 * spread over many heads, which libtorch hands to its thread pool at a cost larger than the work.
 */
final class DecodeAttention {
    private static final int LANES = MatVec.WIDENED.length();
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;

    private final boolean bf16;
    private final MemorySegment q;
    private final long[] qStrides;
    private final MemorySegment k;
    private final long[] kStrides;
    private final MemorySegment v;
    private final long[] vStrides;
    private final MemorySegment allowed;
    private final long[] maskStrides;
    private final MemorySegment y;
    private final int queryHeads;
    private final int group;
    private final int queries;
    private final int keys;
    private final int width;
    private final float scale;

    DecodeAttention(boolean bf16, MemorySegment q, long[] qStrides, MemorySegment k, long[] kStrides,
                    MemorySegment v, long[] vStrides, MemorySegment allowed, long[] maskStrides, MemorySegment y,
                    int queryHeads, int kvHeads, int queries, int keys, int width, double scale) {
        this.bf16 = bf16;
        this.q = q;
        this.qStrides = qStrides;
        this.k = k;
        this.kStrides = kStrides;
        this.v = v;
        this.vStrides = vStrides;
        this.allowed = allowed;
        this.maskStrides = maskStrides;
        this.y = y;
        this.queryHeads = queryHeads;
        this.group = queryHeads / kvHeads;
        this.queries = queries;
        this.keys = keys;
        this.width = width;
        this.scale = (float) scale;
    }

    /** Unit {@code index} = ((b · queries) + t) · queryHeads + h. */
    void unit(int index) {
        int h = index % queryHeads;
        int t = (index / queryHeads) % queries;
        int b = index / queryHeads / queries;
        int g = h / group;
        float[] query = Scratch.floats(Scratch.ROW, width);
        TokenOps.read(q, bf16, b * qStrides[0] + h * qStrides[1] + t * qStrides[2], query, width);
        float[] scores = Scratch.floats(Scratch.SCORES, keys);
        long maskAt = b * maskStrides[0] + t * maskStrides[1];
        long kBase = b * kStrides[0] + g * kStrides[1];
        float max = Float.NEGATIVE_INFINITY;
        int s = 0;
        // Four keys at a time: four independent dot products keep the FMA units busy.
        for (; s + 4 <= keys && width % LANES == 0; s += 4) {
            dot4(query, kBase + s * kStrides[2], kStrides[2], scores, s);
            for (int j = s; j < s + 4; j++) {
                scores[j] = allowed.get(ValueLayout.JAVA_BYTE, maskAt + j) == 0 ? Float.NEGATIVE_INFINITY
                        : scores[j] * scale;
                max = Math.max(max, scores[j]);
            }
        }
        for (; s < keys; s++) {
            scores[s] = allowed.get(ValueLayout.JAVA_BYTE, maskAt + s) == 0 ? Float.NEGATIVE_INFINITY
                    : dot(query, kBase + s * kStrides[2]) * scale;
            max = Math.max(max, scores[s]);
        }
        float sum = 0;
        for (int j = 0; j < keys; j++) {
            float weight = scores[j] == Float.NEGATIVE_INFINITY ? 0f : (float) Math.exp(scores[j] - max);
            scores[j] = weight;
            sum += weight;
        }
        float[] out = Scratch.floats(Scratch.OUT, width);
        java.util.Arrays.fill(out, 0, width, 0f);
        for (int j = 0; j < keys; j++) {
            if (scores[j] != 0f) {
                accumulate(out, scores[j] / sum, b * vStrides[0] + g * vStrides[1] + j * vStrides[2]);
            }
        }
        TokenOps.write(out, y, bf16, (((long) b * queries + t) * queryHeads + h) * width, width);
    }

    /** Scores of keys {@code at, at + stride, …} (four) into {@code scores[into …]}; width is a multiple of LANES. */
    private void dot4(float[] query, long at, long stride, float[] scores, int into) {
        FloatVector a0 = FloatVector.zero(MatVec.WIDENED);
        FloatVector a1 = FloatVector.zero(MatVec.WIDENED);
        FloatVector a2 = FloatVector.zero(MatVec.WIDENED);
        FloatVector a3 = FloatVector.zero(MatVec.WIDENED);
        for (int i = 0; i < width; i += LANES) {
            FloatVector q = FloatVector.fromArray(MatVec.WIDENED, query, i);
            a0 = load(k, at + i).fma(q, a0);
            a1 = load(k, at + stride + i).fma(q, a1);
            a2 = load(k, at + 2 * stride + i).fma(q, a2);
            a3 = load(k, at + 3 * stride + i).fma(q, a3);
        }
        scores[into] = a0.reduceLanes(VectorOperators.ADD);
        scores[into + 1] = a1.reduceLanes(VectorOperators.ADD);
        scores[into + 2] = a2.reduceLanes(VectorOperators.ADD);
        scores[into + 3] = a3.reduceLanes(VectorOperators.ADD);
    }

    private float dot(float[] query, long at) {
        FloatVector acc = FloatVector.zero(MatVec.WIDENED);
        int i = 0;
        for (; i + LANES <= width; i += LANES) {
            acc = load(k, at + i).fma(FloatVector.fromArray(MatVec.WIDENED, query, i), acc);
        }
        float sum = acc.reduceLanes(VectorOperators.ADD);
        for (; i < width; i++) {
            sum += element(k, at + i) * query[i];
        }
        return sum;
    }

    private void accumulate(float[] out, float weight, long at) {
        int i = 0;
        for (; i + LANES <= width; i += LANES) {
            load(v, at + i).fma(FloatVector.broadcast(MatVec.WIDENED, weight), FloatVector.fromArray(MatVec.WIDENED, out, i))
                    .intoArray(out, i);
        }
        for (; i < width; i++) {
            out[i] += weight * element(v, at + i);
        }
    }

    private float element(MemorySegment segment, long index) {
        return bf16 ? MatVec.bf16ToFloat(segment.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, index))
                : segment.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, index);
    }

    private FloatVector load(MemorySegment segment, long element) {
        return bf16 ? MatVec.widen(segment, 2 * element)
                : FloatVector.fromMemorySegment(MatVec.WIDENED, segment, 4 * element, ORDER);
    }
}
