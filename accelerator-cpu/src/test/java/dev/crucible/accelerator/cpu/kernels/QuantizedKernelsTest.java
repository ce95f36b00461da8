package dev.crucible.accelerator.cpu.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.quant.IntCodec;
import dev.crucible.api.quant.QuantizedHostTensor;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.tensor.WeightFormat;
import dev.crucible.torch.TorchOps;
import dev.crucible.torch.TorchPlacement;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The integer-weight kernels against the dequantized reference: the same weight dequantized by the ops' composed
 * default (libtorch ops, no kernel) and multiplied by libtorch. Every scheme, odd widths (vector tails, a 4-bit row
 * ending in half a byte, a partial last block), 1 to 8 rows. The kernels widen the codes to float32 and round only
 * their output to the dtype, so the reference is the float32 product of the float32 weight, rounded once.
 * Tolerance per output: 1e-5 of {@code Σ|w·x|} (the same terms summed in float32 in another order, up to 4864 of
 * them) plus, for bfloat16, one unit in the last place of the output (2⁻⁷ of |y|: two sums a hair apart can round to neighbours). Dequantization itself is exact: the same
 * float32 operations, rounded once to the dtype.
 */
class QuantizedKernelsTest {
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

    static final List<WeightFormat.Int> FORMATS = List.of(
            new WeightFormat.Int(8, 0, false), new WeightFormat.Int(8, 128, false), new WeightFormat.Int(8, 32, true),
            new WeightFormat.Int(8, 0, true), new WeightFormat.Int(4, 32, false), new WeightFormat.Int(4, 0, false),
            new WeightFormat.Int(4, 32, true), new WeightFormat.Int(4, 64, true));

    static final int[][] SHAPES = {{1, 70, 33}, {3, 64, 40}, {1, 33, 9}, {5, 200, 130}, {8, 96, 257}, {1, 896, 4864},
        {2, 4864, 896}};

    @Test
    void productsMatchTheDequantizedReference() {
        Random random = new Random(3);
        for (DType dtype : List.of(DType.F32, DType.BF16)) {
            double rounding = dtype == DType.F32 ? 0 : 1.0 / 128;
            for (WeightFormat.Int format : FORMATS) {
                for (int[] shape : SHAPES) {
                    int rows = shape[0];
                    int in = shape[1];
                    int out = shape[2];
                    String where = format + " " + dtype + " " + rows + "x" + in + " -> " + out;
                    try (TensorScope scope = reference.openScope()) {
                        float[] values = gaussian(random, out * in);
                        QuantizedTensor weight = place(format, values, out, in, dtype);
                        Tensor dense = reference.dequantize(place(format, values, out, in, DType.F32));
                        Tensor x = reference.cast(reference.constant(gaussian(random, rows * in), rows, in), dtype);
                        Tensor bias = reference.cast(reference.constant(gaussian(random, out), out), dtype);
                        Tensor wide = reference.cast(x, DType.F32);
                        Tensor expected = reference.cast(reference.linear(wide, dense, reference.cast(bias, DType.F32)),
                                dtype);
                        Tensor magnitudes = reference.linear(abs(wide), abs(dense), null);
                        int before = counted.calls("quantizedLinear");
                        assertClose(expected, fast.linear(x, weight, bias), magnitudes, rounding, where);
                        assertEquals(before + 1, counted.calls("quantizedLinear"), where + ": the kernel ran");
                        assertClose(reference.cast(reference.linear(wide, dense, null), dtype),
                                fast.linear(x, weight, null), magnitudes, rounding, where + " without bias");
                    }
                }
            }
        }
    }

    @Test
    void dequantizationIsExactlyTheComposedOnes() {
        Random random = new Random(4);
        for (DType dtype : List.of(DType.F32, DType.BF16)) {
            for (WeightFormat.Int format : FORMATS) {
                for (int[] shape : SHAPES) {
                    try (TensorScope scope = reference.openScope()) {
                        QuantizedTensor weight = place(format, gaussian(random, shape[2] * shape[1]), shape[2],
                                shape[1], dtype);
                        int before = counted.calls("dequantize");
                        Tensor ours = fast.dequantize(weight);
                        assertEquals(before + 1, counted.calls("dequantize"));
                        assertEquals(dtype, ours.dtype());
                        assertArrayEquals(reference.readFloats(reference.dequantize(weight)), reference.readFloats(ours),
                                format + " " + dtype + " " + shape[2] + "x" + shape[1]);
                    }
                }
            }
        }
    }

    /** A prefill's rows are more than the kernel takes: the weight is dequantized once and libtorch multiplies. */
    @Test
    void manyRowsGoThroughDequantizationAndLibtorch() {
        Random random = new Random(5);
        try (TensorScope scope = reference.openScope()) {
            QuantizedTensor weight = place(new WeightFormat.Int(4, 32, false), gaussian(random, 64 * 96), 64, 96,
                    DType.F32);
            Tensor x = reference.constant(gaussian(random, 20 * 96), 20, 96);
            int products = counted.calls("quantizedLinear");
            int dequantized = counted.calls("dequantize");
            Tensor dense = reference.dequantize(weight);
            assertClose(reference.linear(x, dense, null), fast.linear(x, weight, null),
                    reference.linear(abs(x), abs(dense), null), 0, "20 rows");
            assertEquals(products, counted.calls("quantizedLinear"));
            assertEquals(dequantized + 1, counted.calls("dequantize"));
        }
    }

    private static QuantizedTensor place(WeightFormat.Int format, float[] values, int out, int in, DType dtype) {
        IntCodec codec = new IntCodec(format);
        QuantizedHostTensor host = codec.encode("w", values, new long[] {out, in});
        TorchPlacement placement = new TorchPlacement(reference, dtype);
        HostTensor zeros = host.zeroPoints();
        return new QuantizedTensor(format, host.shape(), dtype, placement.toDevice(host.data(), host.data().dtype()),
                placement.toDevice(host.scales(), DType.F32),
                zeros == null ? null : placement.toDevice(zeros, DType.I8),
                codec.codebook().map(table -> placement.toDevice(table, DType.F32)).orElse(null));
    }

    private static float[] gaussian(Random random, int count) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextGaussian();
        }
        return values;
    }

    /** |x| in float32, through the host. */
    private static Tensor abs(Tensor x) {
        float[] values = reference.readFloats(x);
        for (int i = 0; i < values.length; i++) {
            values[i] = Math.abs(values[i]);
        }
        return reference.constant(values, x.shape());
    }

    /** |expected - actual| within 1e-5 of the magnitudes (Σ|w·x| per output) plus {@code rounding} of |expected|. */
    private static void assertClose(Tensor expected, Tensor actual, Tensor magnitudes, double rounding, String where) {
        assertArrayEquals(expected.shape(), actual.shape(), where + " shape");
        assertEquals(expected.dtype(), actual.dtype(), where + " dtype");
        float[] want = reference.readFloats(expected);
        float[] got = reference.readFloats(actual);
        float[] size = reference.readFloats(magnitudes);
        for (int i = 0; i < want.length; i++) {
            double tolerance = 1e-5 * size[i] + rounding * Math.abs(want[i]) + 1e-6;
            assertTrue(Math.abs(want[i] - got[i]) <= tolerance, where + " output " + i + ": " + got[i] + " for "
                    + want[i] + " (tolerance " + tolerance + ")");
        }
    }
}
