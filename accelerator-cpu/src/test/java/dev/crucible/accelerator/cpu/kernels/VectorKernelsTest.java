package dev.crucible.accelerator.cpu.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.torch.TorchOps;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Each kernel against libtorch on the same inputs: the same op through {@link TorchOps} with and without the
 * kernels. Sizes are odd on purpose (vector tails), views are strided as in a decode step, and float32 must agree
 * to float32 rounding (of sums over up to 896 terms) while bfloat16 may differ by the one rounding of a differently ordered sum.
 */
class VectorKernelsTest {
    private static VectorKernels kernels;
    private static CountingKernels counted;
    private static TorchOps fast;
    private static TorchOps reference;

    @BeforeAll
    static void ops() {
        kernels = new VectorKernels(2);
        counted = new CountingKernels(kernels);
        fast = new TorchOps("cpu", true, counted);
        reference = new TorchOps("cpu", true);
    }

    @AfterAll
    static void close() {
        fast.close();
        reference.close();
        kernels.close();
    }

    enum Precision {
        F32(DType.F32, 1e-4), BF16(DType.BF16, 1.6e-2);

        final DType dtype;
        final double tolerance;

        Precision(DType dtype, double tolerance) {
            this.dtype = dtype;
            this.tolerance = tolerance;
        }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void linearMatchesLibtorchForEveryRowCountAndOddWidths(Precision precision) {
        Random random = new Random(1);
        for (int[] shape : new int[][] {{1, 70, 33}, {3, 64, 40}, {5, 96, 2048}, {8, 33, 7}, {1, 896, 4864},
                // rows of MatVec.LONG_ROW floats and more, read four at a time: whole fours, a remainder, a tail
                {1, 4864, 64}, {1, 2053, 7}}) {
            int rows = shape[0];
            int in = shape[1];
            int out = shape[2];
            try (TensorScope scope = reference.openScope()) {
                Tensor x = reference.cast(reference.constant(gaussian(random, rows * in), 1, rows, in), precision.dtype);
                Tensor w = reference.cast(reference.constant(gaussian(random, out * in), out, in), precision.dtype);
                Tensor b = reference.cast(reference.constant(gaussian(random, out), out), precision.dtype);
                String where = precision + " " + rows + "x" + in + " -> " + out;
                assertClose(reference.linear(x, w, null), fast.linear(x, w, null), precision.tolerance, where);
                int before = counted.calls("linear");
                assertClose(reference.linear(x, w, b), fast.linear(x, w, b), precision.tolerance, where + " + bias");
                boolean taken = rows <= (precision.dtype == DType.BF16 ? VectorKernels.MAX_BF16_LINEAR_ROWS
                        : VectorKernels.MAX_LINEAR_ROWS);
                assertEquals(before + (taken ? 1 : 0), counted.calls("linear"),
                        taken ? "the kernel ran" : "libtorch's GEMM took the rows");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void rmsNormRoundsAsTransformersDoes(Precision precision) {
        Random random = new Random(2);
        // A decode step's few rows; more rows than one task holds, but too few elements to split; a prefill's many.
        for (int rows : new int[] {3, 600, 1801}) {
            try (TensorScope scope = reference.openScope()) {
                Tensor x = reference.cast(reference.constant(gaussian(random, rows * 37), rows, 1, 37), precision.dtype);
                Tensor w = reference.cast(reference.constant(gaussian(random, 37), 37), precision.dtype);
                int before = counted.calls("rmsNorm");
                assertClose(reference.rmsNorm(x, w, 1e-6), fast.rmsNorm(x, w, 1e-6), precision.tolerance, "rmsNorm " + rows);
                assertEquals(before + 1, counted.calls("rmsNorm"), "the kernel ran");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void gatedSiluMatchesSiluTimesUp(Precision precision) {
        Random random = new Random(6);
        int width = 4103; // more than one chunk, and a vector tail
        for (int rows : new int[] {2, 21}) { // one task; several, the last one short
            int count = rows * width;
            try (TensorScope scope = reference.openScope()) {
                Tensor gate = reference.cast(reference.constant(gaussian(random, count), rows, 1, width), precision.dtype);
                Tensor up = reference.cast(reference.constant(gaussian(random, count), rows, 1, width), precision.dtype);
                int before = counted.calls("gatedSilu");
                assertClose(reference.gatedSilu(gate, up), fast.gatedSilu(gate, up), precision.tolerance, "gatedSilu " + rows);
                assertEquals(before + 1, counted.calls("gatedSilu"), "the kernel ran");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void rotaryOfATransposedViewMatchesTheComposition(Precision precision) {
        Random random = new Random(3);
        // A decode-sized call (one task) and a prefill-sized one (a task per batch row and head); heads of 16 and 64,
        // whose halves are whole vectors (the vector path), and of 24, whose halves are not.
        for (long[] size : new long[][] {{2, 3, 4, 10}, {3, 61, 5, 72}, {1, 1, 3, 16}, {2, 2, 4, 64}, {1, 2, 3, 24}}) {
            rotaryMatches(precision, random, size[0], size[1], size[2], size[3]);
        }
    }

    private void rotaryMatches(Precision precision, Random random, long batch, long tokens, long heads, long width) {
        try (TensorScope scope = reference.openScope()) {
            // [B, T, H, D] transposed to [B, H, T, D], as the model's heads are.
            Tensor projected = reference.cast(reference.constant(gaussian(random, (int) (batch * tokens * heads * width)),
                    batch, tokens, heads, width), precision.dtype);
            Tensor x = reference.transpose(projected, 1, 2);
            Tensor cos = reference.cast(reference.constant(gaussian(random, (int) (batch * tokens * width)),
                    batch, 1, tokens, width), precision.dtype);
            Tensor sin = reference.cast(reference.constant(gaussian(random, (int) (batch * tokens * width)),
                    batch, 1, tokens, width), precision.dtype);
            int before = counted.calls("rotary");
            assertClose(reference.rotary(x, cos, sin), fast.rotary(x, cos, sin), precision.tolerance, "rotary");
            assertEquals(before + 1, counted.calls("rotary"), "the kernel ran");
        }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void attentionOverACacheSliceWithGroupedHeadsAndPadding(Precision precision) {
        // {width, capacity, keys, row 1's padding, query magnitude}: an odd width (vector tails); a small model's
        // narrow heads over many keys; sharp scores whose softmax weights underflow to zero; a width of three 256-bit
        // vectors; the common 64.
        for (int[] shape : new int[][] {{20, 9, 7, 2, 1}, {16, 70, 61, 13, 1}, {32, 40, 33, 5, 40}, {24, 12, 11, 3, 1},
            {64, 40, 37, 4, 1}}) {
            attentionMatches(precision, new Random(4), shape[0], shape[1], shape[2], shape[3], shape[4]);
        }
    }

    private void attentionMatches(Precision precision, Random random, long width, long capacity, int keys, long pad,
                                  float magnitude) {
        long batch = 2;
        long queryHeads = 6;
        long kvHeads = 2;
        for (long queries : new long[] {1, 3}) {
            try (TensorScope scope = reference.openScope()) {
                float[] queryValues = gaussian(random, (int) (batch * queries * queryHeads * width));
                for (int i = 0; i < queryValues.length; i++) {
                    queryValues[i] *= magnitude;
                }
                Tensor projected = reference.cast(reference.constant(queryValues, batch, queries, queryHeads, width),
                        precision.dtype);
                Tensor q = reference.transpose(projected, 1, 2);
                Tensor cacheK = reference.cast(reference.constant(gaussian(random, (int) (batch * kvHeads * capacity * width)),
                        batch, kvHeads, capacity, width), precision.dtype);
                Tensor cacheV = reference.cast(reference.constant(gaussian(random, (int) (batch * kvHeads * capacity * width)),
                        batch, kvHeads, capacity, width), precision.dtype);
                // The slots written so far: a strided view of the cache, as a decode step attends over.
                Tensor k = reference.slice(cacheK, 2, 0, keys);
                Tensor v = reference.slice(cacheV, 2, 0, keys);
                // Causal over the last `queries` slots, row 1 left-padded.
                long[] slots = new long[keys];
                for (int s = 0; s < keys; s++) {
                    slots[s] = s;
                }
                Tensor keySlots = reference.constant(slots, 1, 1, 1, keys);
                long[] querySlots = new long[(int) queries];
                for (int t = 0; t < queries; t++) {
                    querySlots[t] = keys - queries + t;
                }
                Tensor querySlot = reference.constant(querySlots, 1, 1, queries, 1);
                Tensor padding = reference.constant(new long[] {0, pad}, batch, 1, 1, 1);
                Tensor allowed = reference.and(reference.compare(keySlots, querySlot, Comparison.LESS_OR_EQUAL),
                        reference.compare(keySlots, padding, Comparison.GREATER_OR_EQUAL));
                double scale = 1 / Math.sqrt(width);
                int before = counted.calls("attention");
                assertClose(reference.attention(q, k, v, allowed, scale), fast.attention(q, k, v, allowed, scale),
                        precision.tolerance, precision + " attention of " + queries + " queries, width " + width
                                + ", " + keys + " keys");
                assertEquals(before + 1, counted.calls("attention"), "the kernel ran");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Precision.class)
    void argmaxTakesTheFirstLargest(Precision precision) {
        float[] values = new float[2 * 45];
        Random random = new Random(5);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian();
        }
        values[17] = 9;
        values[30] = 9; // a tie: the first one wins
        values[45 + 44] = 7; // in the vector tail of row 1
        try (TensorScope scope = reference.openScope()) {
            Tensor x = reference.cast(reference.constant(values, 2, 45), precision.dtype);
            long[] expected = reference.readLongs(reference.argmax(x, -1));
            assertArrayEquals(new long[] {17, 44}, expected, "libtorch itself");
            int before = counted.calls("argmax");
            assertArrayEquals(expected, fast.readLongs(fast.argmax(x, -1)));
            assertEquals(before + 1, counted.calls("argmax"), "the kernel ran");
        }
    }

    @org.junit.jupiter.api.Test
    void bf16ProductsTheKernelsLeaveRunInFloat32WhereLibtorchsBf16ProductIsSlow() {
        // A CPU without bf16 dot products: a prefill's bf16 product (more rows than the kernels take) is computed in
        // float32 from widened operands and rounded back once, i.e. the exact sum rounded to bf16, up to the float32
        // summation order.
        VectorKernels widening = new VectorKernels(1, java.util.List.of(DType.BF16), null, false);
        assertEquals(DType.F32, widening.gemmDtype(DType.BF16));
        assertEquals(DType.F32, widening.gemmDtype(DType.F32));
        assertEquals(DType.BF16, kernels.gemmDtype(DType.BF16));
        int rows = 40;
        int in = 96;
        int out = 72;
        assertTrue(!widening.takesLinear(dev.crucible.api.tensor.WeightFormat.Dense.of(DType.BF16), DType.BF16, rows,
                in, out));
        Random random = new Random(4);
        try (TorchOps ops = new TorchOps("cpu", true, widening); TensorScope scope = reference.openScope()) {
            Tensor x = reference.cast(reference.constant(gaussian(random, rows * in), rows, in), DType.BF16);
            Tensor w = reference.cast(reference.constant(gaussian(random, out * in), out, in), DType.BF16);
            Tensor b = reference.cast(reference.constant(gaussian(random, out), out), DType.BF16);
            float[] xs = reference.readFloats(x);
            float[] ws = reference.readFloats(w);
            float[] bs = reference.readFloats(b);
            Tensor y = ops.linear(x, w, b);
            assertEquals(DType.BF16, y.dtype());
            float[] got = reference.readFloats(y);
            // Bit for bit what libtorch's float32 product of the widened operands, rounded once, gives.
            Tensor wide = reference.cast(reference.linear(reference.cast(x, DType.F32), reference.cast(w, DType.F32),
                    reference.cast(b, DType.F32)), DType.BF16);
            assertArrayEquals(reference.readFloats(wide), got);
            for (int r = 0; r < rows; r++) {
                for (int n = 0; n < out; n++) {
                    double exact = bs[n];
                    double magnitude = Math.abs(exact);
                    for (int k = 0; k < in; k++) {
                        exact += (double) xs[r * in + k] * ws[n * in + k];
                        magnitude += Math.abs((double) xs[r * in + k] * ws[n * in + k]);
                    }
                    double allowed = Math.abs(exact) / 256 + magnitude * 1e-6;
                    assertTrue(Math.abs(got[r * out + n] - exact) <= allowed,
                            "row " + r + " output " + n + ": " + got[r * out + n] + " against " + exact);
                }
            }
        } finally {
            widening.close();
        }
    }

    /**
     * The key/value cache write of a decode step runs as host copies: the written cache equals libtorch's index_copy_
     * of the same rows, from a transposed view (the step's keys) into two slots that are not the first, at batch 2.
     */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void cacheWritesMatchIndexCopy(Precision precision) {
        Random random = new Random(5);
        try (TensorScope scope = reference.openScope()) {
            Tensor projected = reference.cast(reference.constant(gaussian(random, 2 * 2 * 3 * 16), 2, 2, 3, 16),
                    precision.dtype);
            Tensor rows = reference.transpose(projected, 1, 2); // [B, H, T, D], strided like a step's keys
            Tensor slots = reference.constant(new long[] {6, 3}, 2);
            float[] start = gaussian(random, 2 * 3 * 10 * 16);
            Tensor expected = reference.writeSlots(reference.cast(reference.constant(start, 2, 3, 10, 16),
                    precision.dtype), 2, slots, rows);
            Tensor cache = fast.cast(fast.constant(start, 2, 3, 10, 16), precision.dtype);
            Tensor written = fast.writeSlots(cache, 2, slots, rows);
            assertEquals(cache, written, "written in place");
            assertArrayEquals(reference.readFloats(expected), reference.readFloats(written), "the cache");
            Tensor outside = reference.constant(new long[] {10, 0}, 2);
            org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class,
                    () -> fast.writeSlots(cache, 2, outside, rows), "a slot past the cache");
        }
    }

    /**
     * Kernels reading views of a kernel's output (whose layout the ops record instead of asking libtorch): heads
     * split and transposed, a slice that starts past the first element, and a reshape, each as libtorch reads them.
     */
    @ParameterizedTest
    @EnumSource(Precision.class)
    void kernelsReadViewsOfKernelOutputs(Precision precision) {
        Random random = new Random(6);
        try (TensorScope scope = reference.openScope()) {
            Tensor gate = reference.cast(reference.constant(gaussian(random, 3 * 4 * 32), 3, 4, 32), precision.dtype);
            Tensor up = reference.cast(reference.constant(gaussian(random, 3 * 4 * 32), 3, 4, 32), precision.dtype);
            Tensor cos = reference.cast(reference.constant(gaussian(random, 3 * 4 * 16), 3, 1, 4, 16), precision.dtype);
            Tensor sin = reference.cast(reference.constant(gaussian(random, 3 * 4 * 16), 3, 1, 4, 16), precision.dtype);
            Tensor weight = reference.cast(reference.constant(gaussian(random, 32), 32), precision.dtype);
            Tensor slow = reference.gatedSilu(gate, up);
            Tensor quick = fast.gatedSilu(gate, up);
            Tensor slowHeads = reference.transpose(reference.reshape(slow, 3, 4, 2, 16), 1, 2);
            Tensor quickHeads = fast.transpose(fast.reshape(quick, 3, 4, 2, 16), 1, 2);
            int rotaries = counted.calls("rotary");
            assertClose(reference.rotary(slowHeads, cos, sin), fast.rotary(quickHeads, cos, sin), precision.tolerance,
                    "rotary of split heads");
            assertEquals(rotaries + 1, counted.calls("rotary"), "the kernel read the view");
            int norms = counted.calls("rmsNorm");
            assertClose(reference.rmsNorm(reference.slice(slow, 0, 1, 3), weight, 1e-6),
                    fast.rmsNorm(fast.slice(quick, 0, 1, 3), weight, 1e-6), precision.tolerance, "norm of a slice");
            assertClose(reference.rmsNorm(reference.slice(reference.reshape(slow, 12, 32), 0, 5, 9), weight, 1e-6),
                    fast.rmsNorm(fast.slice(fast.reshape(quick, 12, 32), 0, 5, 9), weight, 1e-6), precision.tolerance,
                    "norm of a slice of a reshape");
            assertEquals(norms + 2, counted.calls("rmsNorm"), "the kernel read the slices");
        }
    }

    /**
     * Views of a kernel's output wait for libtorch until something needs them, and still behave as libtorch's views:
     * they keep the storage once their base is released, one asked for after its scope closed is an error rather
     * than freed memory, one retained outlives its scope, and one first used inside a nested scope stays valid when
     * that scope closes.
     */
    @org.junit.jupiter.api.Test
    void viewsOfKernelOutputsLiveAsLibtorchViewsDo() {
        Random random = new Random(7);
        try (TensorScope outer = fast.openScope()) {
            Tensor gate = fast.constant(gaussian(random, 64), 2, 32);
            Tensor up = fast.constant(gaussian(random, 64), 2, 32);
            Tensor product;
            try (TensorScope inner = fast.openScope()) {
                product = fast.retain(fast.gatedSilu(gate, up));
            }
            float[] values = fast.readFloats(product);
            float[] second = java.util.Arrays.copyOfRange(values, 32, 64);
            Tensor row = fast.slice(product, 0, 1, 2);
            Tensor columns = fast.transpose(product, 0, 1);
            fast.release(product);
            for (int i = 0; i < 4; i++) {
                fast.constant(new float[64], 2, 32); // takes the freed storage, were it freed
            }
            assertArrayEquals(second, fast.readFloats(row), "a slice after its base was released");
            float[] transposed = fast.readFloats(columns);
            for (int i = 0; i < 32; i++) {
                assertEquals(values[i], transposed[2 * i], "column " + i);
                assertEquals(values[32 + i], transposed[2 * i + 1], "column " + i);
            }
            Tensor escaped;
            try (TensorScope inner = fast.openScope()) {
                escaped = fast.slice(row, 1, 0, 4);
            }
            org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, () -> fast.readFloats(escaped),
                    "a view asked for after its scope closed");
            Tensor kept;
            try (TensorScope inner = fast.openScope()) {
                kept = fast.retain(fast.slice(row, 1, 2, 6));
            }
            assertArrayEquals(java.util.Arrays.copyOfRange(second, 2, 6), fast.readFloats(kept), "a retained view");
            fast.release(kept);
            Tensor late = fast.reshape(row, 4, 8);
            try (TensorScope inner = fast.openScope()) {
                assertArrayEquals(second, fast.readFloats(late), "made inside a nested scope");
            }
            assertArrayEquals(second, fast.readFloats(late), "after the nested scope closed");
        }
    }

    private static float[] gaussian(Random random, int count) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextGaussian();
        }
        return values;
    }

    /** Elementwise within {@code tolerance} relative to the larger magnitude (at least 1). */
    private static void assertClose(Tensor expected, Tensor actual, double tolerance, String where) {
        assertArrayEquals(expected.shape(), actual.shape(), where + " shape");
        assertEquals(expected.dtype(), actual.dtype(), where + " dtype");
        float[] want = reference.readFloats(expected);
        float[] got = reference.readFloats(actual);
        double worst = 0;
        for (int i = 0; i < want.length; i++) {
            double error = Math.abs(want[i] - got[i]) / Math.max(1, Math.abs(want[i]));
            worst = Math.max(worst, error);
        }
        assertTrue(worst <= tolerance, where + ": largest relative error " + worst);
    }
}
