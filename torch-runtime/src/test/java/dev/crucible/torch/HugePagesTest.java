package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Weights placed on the CPU start on a 2 MiB boundary when they are at least that large, so every whole huge page
 * of them can be advised (a decode step streams them; see {@link HugePages}), and the placement still holds exactly
 * the checkpoint's values, in the compute dtype, whatever the conversion.
 */
class HugePagesTest {

    @Test
    void largeWeightsStartOnAHugePageBoundaryAndHoldTheirValues() {
        int rows = 1200;
        int columns = 1024; // 4.7 MiB in float32, 2.3 MiB in bfloat16: over one huge page either way
        float[] values = new float[rows * columns];
        for (int i = 0; i < values.length; i++) {
            values[i] = (i % 251) - 125; // integers of 8 significant bits: exact in bfloat16
        }
        HostTensor host = HostTensor.ofFloats("w", DType.F32, new long[] {rows, columns}, values);
        try (TorchOps ops = new TorchOps("cpu", true); TensorScope scope = ops.openScope()) {
            TorchPlacement placement = new TorchPlacement(ops, DType.F32);
            TorchTensor f32 = (TorchTensor) placement.toDevice(host, DType.F32);
            assertEquals(0, address(f32) % HugePages.SIZE, "starts on a 2 MiB boundary");
            assertArrayEquals(new long[] {rows, columns}, f32.shape());
            assertArrayEquals(values, ops.readFloats(f32));

            TorchTensor bf16 = (TorchTensor) placement.toDevice(host, DType.BF16); // converted while copied
            assertEquals(DType.BF16, bf16.dtype());
            assertEquals(0, address(bf16) % HugePages.SIZE);
            assertArrayEquals(values, ops.readFloats(bf16), "these values are exact in bfloat16");

            Tensor sum = ops.linear(ops.constant(new float[columns], 1, columns), f32, null);
            assertArrayEquals(new float[rows], ops.readFloats(sum), "an ordinary tensor to every op");

            HostTensor small = HostTensor.ofFloats("b", DType.F32, new long[] {columns}, new float[columns]);
            assertArrayEquals(new float[columns], ops.readFloats(placement.toDevice(small, DType.F32)),
                    "small tensors are placed as libtorch allocates them");
        }
    }

    @Test
    void onlyTheWholeHugePagesInsideARangeAreAdvised() {
        assumeTrue(System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux"),
                "madvise(MADV_HUGEPAGE) is Linux's");
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            long size = 5 * HugePages.SIZE;
            long base = arena.allocate(size, HugePages.SIZE).address();
            assertEquals(3 * HugePages.SIZE, HugePages.advise(base + 4096, 4 * HugePages.SIZE),
                    "from the first boundary after the start to the last before the end");
            assertEquals(0, HugePages.advise(base + 4096, HugePages.SIZE), "no whole huge page inside");
        }
    }

    private static long address(TorchTensor tensor) {
        return tensor.hostBytes().address();
    }
}
