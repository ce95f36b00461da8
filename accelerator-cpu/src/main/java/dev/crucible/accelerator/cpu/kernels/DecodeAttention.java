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
    private static final int LANES = MatVec.FLOATS.length();
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
        float[] query = new float[width];
        long qAt = b * qStrides[0] + h * qStrides[1] + t * qStrides[2];
        for (int i = 0; i < width; i++) {
            query[i] = TokenOps.get(q, bf16, qAt + i);
        }
        float[] scores = new float[keys];
        long maskAt = b * maskStrides[0] + t * maskStrides[1];
        float max = Float.NEGATIVE_INFINITY;
        for (int s = 0; s < keys; s++) {
            if (allowed.get(ValueLayout.JAVA_BYTE, maskAt + s) == 0) {
                scores[s] = Float.NEGATIVE_INFINITY;
                continue;
            }
            float score = dot(query, b * kStrides[0] + g * kStrides[1] + s * kStrides[2]) * scale;
            scores[s] = score;
            max = Math.max(max, score);
        }
        float sum = 0;
        for (int s = 0; s < keys; s++) {
            float weight = scores[s] == Float.NEGATIVE_INFINITY ? 0f : (float) Math.exp(scores[s] - max);
            scores[s] = weight;
            sum += weight;
        }
        float[] out = new float[width];
        for (int s = 0; s < keys; s++) {
            if (scores[s] != 0f) {
                accumulate(out, scores[s] / sum, b * vStrides[0] + g * vStrides[1] + s * vStrides[2]);
            }
        }
        long yAt = (((long) b * queries + t) * queryHeads + h) * width;
        for (int i = 0; i < width; i++) {
            TokenOps.set(y, bf16, yAt + i, out[i]);
        }
    }

    private float dot(float[] query, long at) {
        FloatVector acc = FloatVector.zero(MatVec.FLOATS);
        int i = 0;
        for (; i + LANES <= width; i += LANES) {
            acc = load(k, at + i).fma(FloatVector.fromArray(MatVec.FLOATS, query, i), acc);
        }
        float sum = acc.reduceLanes(VectorOperators.ADD);
        for (; i < width; i++) {
            sum += TokenOps.get(k, bf16, at + i) * query[i];
        }
        return sum;
    }

    private void accumulate(float[] out, float weight, long at) {
        int i = 0;
        for (; i + LANES <= width; i += LANES) {
            load(v, at + i).fma(FloatVector.broadcast(MatVec.FLOATS, weight), FloatVector.fromArray(MatVec.FLOATS, out, i))
                    .intoArray(out, i);
        }
        for (; i < width; i++) {
            out[i] += weight * TokenOps.get(v, bf16, at + i);
        }
    }

    private FloatVector load(MemorySegment segment, long element) {
        return bf16 ? MatVec.widen(segment, 2 * element)
                : FloatVector.fromMemorySegment(MatVec.FLOATS, segment, 4 * element, ORDER);
    }
}
