package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Op semantics the model definition relies on, checked against arithmetic done by hand. */
class TorchOpsTest {

    private static TorchOps ops;

    @BeforeAll
    static void open() {
        TorchRuntime.setThreads(1);
        ops = new TorchOps("cpu", true);
    }

    @AfterAll
    static void close() {
        ops.close();
    }

    /** Half-precision attention on the CPU computes in float32 and rounds once: it equals float32 attention rounded. */
    @Test
    void bfloat16AttentionOnTheCpuIsFloat32AttentionRounded() {
        try (TensorScope scope = ops.openScope()) {
            java.util.Random random = new java.util.Random(7);
            int batch = 2, heads = 4, kvHeads = 2, tokens = 9, width = 16;
            Tensor q = randomBf16(random, batch, heads, tokens, width);
            Tensor k = randomBf16(random, batch, kvHeads, tokens, width);
            Tensor v = randomBf16(random, batch, kvHeads, tokens, width);
            long[] positions = new long[tokens];
            for (int i = 0; i < tokens; i++) {
                positions[i] = i;
            }
            Tensor allowed = ops.compare(ops.constant(positions, 1, 1, 1, tokens), ops.constant(positions, 1, 1, tokens, 1),
                    Comparison.LESS_OR_EQUAL);
            Tensor half = ops.attention(q, k, v, allowed, 0.25);
            Tensor wide = ops.attention(ops.cast(q, DType.F32), ops.cast(k, DType.F32), ops.cast(v, DType.F32), allowed, 0.25);
            assertEquals(DType.BF16, half.dtype());
            assertArrayEquals(ops.readFloats(ops.cast(wide, DType.BF16)), ops.readFloats(half));
        }
    }

    private static Tensor randomBf16(java.util.Random random, long... shape) {
        int n = 1;
        for (long extent : shape) {
            n *= (int) extent;
        }
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) random.nextGaussian();
        }
        return ops.cast(ops.constant(values, shape), DType.BF16);
    }

    /** View ops state their output's shape without asking libtorch; it must be the shape libtorch computed. */
    @Test
    void statedShapesOfViewsEqualLibtorchs() {
        try (TensorScope scope = ops.openScope()) {
            Tensor x = ops.constant(new float[2 * 3 * 4], 2, 3, 4);
            for (Tensor view : new Tensor[] {ops.reshape(x, 6, -1), ops.reshape(x, -1), ops.reshape(x, 2, 3, 4),
                    ops.reshape(ops.slice(x, 0, 2, 2), -1, 4), ops.transpose(x, 0, -1), ops.transpose(x, -2, -1),
                    ops.slice(x, 1, 1, 3), ops.slice(x, -1, -3, -1), ops.slice(x, 2, 1, 100), ops.slice(x, 1, 2, 1),
                    ops.slice(x, 0, -100, 1)}) {
                assertArrayEquals(libtorchShape(view), view.shape(), view.toString());
            }
        }
    }

    private static long[] libtorchShape(Tensor t) {
        org.bytedeco.pytorch.Tensor handle = ((TorchTensor) t).handle();
        long[] sizes = new long[(int) handle.dim()];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = handle.size(i);
        }
        return sizes;
    }

    @Test
    void argmaxTakesTheLowestIndexOnTies() {
        try (TensorScope scope = ops.openScope()) {
            Tensor x = ops.constant(new float[] {1, 3, 3, 0, 5, 5, 5, 2}, 2, 4);
            assertArrayEquals(new long[] {1, 0}, ops.readLongs(ops.argmax(x, -1)));
        }
    }

    @Test
    void groupedAttentionMatchesHandArithmetic() {
        try (TensorScope scope = ops.openScope()) {
            // Two query heads on one key/value head, two keys; the second query may see only the first key.
            Tensor q = ops.constant(new float[] {1, 0, 0, 1, 2, 0, 0, 0}, 1, 2, 2, 2);
            Tensor k = ops.constant(new float[] {1, 0, 0, 1}, 1, 1, 2, 2);
            Tensor v = ops.constant(new float[] {10, 0, 0, 20}, 1, 1, 2, 2);
            Tensor allowed = ops.compare(ops.constant(new long[] {0, 1}, 1, 1, 1, 2),
                    ops.constant(new long[] {1, 0}, 1, 1, 2, 1), Comparison.LESS_OR_EQUAL);
            float[] out = ops.readFloats(ops.attention(q, k, v, allowed, 1.0));
            // head 0, query 0 = [1, 0] sees both keys: scores (1, 0) -> weights (e/(e+1), 1/(e+1)).
            double w = Math.E / (Math.E + 1);
            assertEquals(10 * w, out[0], 1e-5);
            assertEquals(20 * (1 - w), out[1], 1e-5);
            // head 0, query 1 sees key 0 only.
            assertEquals(10, out[2], 1e-5);
            assertEquals(0, out[3], 1e-5);
            // head 1, query 0 = [2, 0]: scores (2, 0).
            double w2 = Math.exp(2) / (Math.exp(2) + 1);
            assertEquals(10 * w2, out[4], 1e-5);
            assertEquals(20 * (1 - w2), out[5], 1e-5);
        }
    }

    @Test
    void writeSlotsUpdatesTheCacheInPlace() {
        Tensor cache = ops.retain(ops.zeros(DType.F32, 1, 1, 4, 2));
        try (TensorScope scope = ops.openScope()) {
            Tensor written = ops.writeSlots(cache, 2, ops.constant(new long[] {1, 3}, 2),
                    ops.constant(new float[] {1, 2, 3, 4}, 1, 1, 2, 2));
            assertSame(cache, written);
        }
        try (TensorScope scope = ops.openScope()) {
            assertArrayEquals(new float[] {0, 0, 1, 2, 0, 0, 3, 4}, ops.readFloats(cache));
        } finally {
            ops.release(cache);
        }
    }

    @Test
    void halfPrecisionRmsNormNormalizesInFloat32ThenScales() {
        try (TensorScope scope = ops.openScope()) {
            Tensor x = ops.cast(ops.constant(new float[] {3, 4}, 1, 2), DType.BF16);
            Tensor weight = ops.cast(ops.constant(new float[] {2, 0.5f}, 2), DType.BF16);
            Tensor normed = ops.rmsNorm(x, weight, 0);
            assertEquals(DType.BF16, normed.dtype());
            double rms = Math.sqrt((9 + 16) / 2.0);
            float[] out = ops.readFloats(normed);
            assertEquals(2 * 3 / rms, out[0], 2e-2);
            assertEquals(0.5 * 4 / rms, out[1], 1e-2);
        }
    }
}
