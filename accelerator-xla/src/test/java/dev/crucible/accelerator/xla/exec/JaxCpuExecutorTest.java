package dev.crucible.accelerator.xla.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.accelerator.xla.pjrt.CompileOptions;
import dev.crucible.accelerator.xla.testing.StableHlo;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Hand-written StableHLO programs run through the {@link XlaExecutor} interface on jaxlib's CPU client (real XLA
 * numerics), compared with the same arithmetic done here; and jaxlib's parser reading our CompileOptionsProto.
 */
class JaxCpuExecutorTest {
    private static JaxCpuExecutor xla;
    private Arena arena;

    @BeforeAll
    static void start() {
        xla = JaxCpuExecutor.start(8);
    }

    @AfterAll
    static void stop() {
        if (xla != null) {
            xla.close();
        }
    }

    @BeforeEach
    void openArena() {
        arena = Arena.ofConfined();
    }

    @AfterEach
    void closeArena() {
        arena.close();
    }

    private HostTensor f32(String name, long[] shape, float[] values) {
        return new HostTensor(name, DType.F32, shape, arena.allocateFrom(ValueLayout.JAVA_FLOAT, values));
    }

    private HostTensor bf16(String name, long[] shape, float[] values) {
        MemorySegment data = arena.allocate(2L * values.length, 2);
        for (int i = 0; i < values.length; i++) {
            data.setAtIndex(ValueLayout.JAVA_SHORT, i, HalfFloats.floatToBf16(values[i]));
        }
        return new HostTensor(name, DType.BF16, shape, data);
    }

    private static float[] pattern(int count, int seed) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = ((i * 37 + seed * 11) % 23 - 11) / 8f;
        }
        return values;
    }

    /** Row-major {@code [m,k] x [k,n]}, accumulated in double. */
    private static float[] matmul(float[] a, float[] b, int m, int k, int n) {
        float[] out = new float[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                for (int p = 0; p < k; p++) {
                    sum += (double) a[i * k + p] * b[p * n + j];
                }
                out[i * n + j] = (float) sum;
            }
        }
        return out;
    }

    @Test
    void aDotAndAddGivesTheNumbersComputedHere() {
        float[] x = pattern(4 * 8, 1);
        float[] w = pattern(8 * 16, 2);
        float[] b = pattern(4 * 16, 3);
        Program program = new Program("dot_add", StableHlo.read("dot_add"), new ProgramManifest(
                List.of(new TensorSpec("x", DType.F32, new long[] {4, 8}), new TensorSpec("w", DType.F32, new long[] {8, 16}),
                        new TensorSpec("b", DType.F32, new long[] {4, 16})),
                List.of(new TensorSpec("y", DType.F32, new long[] {4, 16}))), CompileOptions.singleDevice());
        float[] expected = matmul(x, w, 4, 8, 16);
        for (int i = 0; i < expected.length; i++) {
            expected[i] += b[i];
        }
        try (CompiledProgram compiled = xla.compile(program);
             DeviceArray dx = xla.upload(f32("x", new long[] {4, 8}, x), 0);
             DeviceArray dw = xla.upload(f32("w", new long[] {8, 16}, w), 0);
             DeviceArray db = xla.upload(f32("b", new long[] {4, 16}, b), 0)) {
            List<DeviceArray> out = xla.execute(compiled, List.of(List.of(dx, dw, db))).getFirst();
            assertEquals(1, out.size());
            try (DeviceArray y = out.getFirst()) {
                HostTensor host = xla.download(y, "y", arena);
                assertArrayEquals(new long[] {4, 16}, host.shape());
                // Small integers over 8: every product and sum is exact in f32, whatever order XLA adds in.
                assertArrayEquals(expected, host.toFloatArray());
            }
            assertFalse(dx.isReleased(), "nothing is donated in this program");
        }
    }

    @Test
    void theManifestsDonationConsumesTheArgument() {
        long[] shape = {2, 3};
        Program program = new Program("accumulate_donated", StableHlo.read("accumulate_donated"), new ProgramManifest(
                List.of(new TensorSpec("acc", DType.F32, shape), new TensorSpec("x", DType.F32, shape)),
                List.of(new TensorSpec("acc", DType.F32, shape), new TensorSpec("sum", DType.F32, new long[0])),
                Map.of(0, 0)), CompileOptions.singleDevice());
        try (CompiledProgram compiled = xla.compile(program);
             DeviceArray x = xla.upload(f32("x", shape, new float[] {1, 2, 3, 4, 5, 6}), 0)) {
            DeviceArray acc = xla.upload(f32("acc", shape, new float[] {10, 10, 10, 10, 10, 10}), 0);
            for (int step = 1; step <= 3; step++) {
                List<DeviceArray> out = xla.execute(compiled, List.of(List.of(acc, x))).getFirst();
                assertTrue(acc.isReleased(), "the donated cache is consumed");
                DeviceArray consumed = acc;
                assertThrows(IllegalStateException.class, () -> xla.download(consumed, "acc", arena));
                acc = out.get(0);
                try (DeviceArray sum = out.get(1)) {
                    assertEquals(60 + 21 * step, xla.download(sum, "sum", arena).floatAt(0));
                }
            }
            assertArrayEquals(new float[] {13, 16, 19, 22, 25, 28}, xla.download(acc, "acc", arena).toFloatArray());
            acc.close();
        }
    }

    @Test
    void anEightWaySpmdMatmulRunsOnEightCpuDevicesWithShardyAndWithGspmd() {
        int m = 64;
        int k = 128;
        int n = 256;
        float[] x = pattern(m * k, 4);
        float[] w = pattern(k * n, 5);
        float[] expected = matmul(x, w, m, k, n); // the inputs are exact in bf16; the output is rounded to it
        ProgramManifest manifest = new ProgramManifest(
                List.of(new TensorSpec("x", DType.BF16, new long[] {8, k}), new TensorSpec("w", DType.BF16, new long[] {k, n})),
                List.of(new TensorSpec("y", DType.BF16, new long[] {8, n})));
        for (var variant : List.of(Map.entry("matmul_shardy8", CompileOptions.Partitioner.SHARDY),
                Map.entry("matmul_gspmd8", CompileOptions.Partitioner.GSPMD))) {
            Program program = new Program(variant.getKey(), StableHlo.read(variant.getKey()), manifest,
                    CompileOptions.spmd(8, variant.getValue()));
            List<DeviceArray> uploaded = new ArrayList<>();
            try (CompiledProgram compiled = xla.compile(program)) {
                List<List<DeviceArray>> arguments = new ArrayList<>();
                for (int d = 0; d < 8; d++) {
                    float[] rows = java.util.Arrays.copyOfRange(x, d * 8 * k, (d + 1) * 8 * k);
                    DeviceArray xs = xla.upload(bf16("x", new long[] {8, k}, rows), d);
                    DeviceArray ws = xla.upload(bf16("w", new long[] {k, n}, w), d);
                    uploaded.add(xs);
                    uploaded.add(ws);
                    arguments.add(List.of(xs, ws));
                }
                List<List<DeviceArray>> outputs = xla.execute(compiled, arguments);
                for (int d = 0; d < 8; d++) {
                    try (DeviceArray y = outputs.get(d).getFirst()) {
                        float[] got = xla.download(y, "y", arena).toFloatArray();
                        for (int i = 0; i < got.length; i++) {
                            float want = expected[d * 8 * n + i];
                            float bf16Rounded = HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(want));
                            assertEquals(bf16Rounded, got[i], Math.ulp(bf16Rounded) * 65536,
                                    variant.getKey() + " device " + d + " element " + i);
                        }
                    }
                }
            } finally {
                uploaded.forEach(DeviceArray::close);
            }
        }
    }

    @Test
    void whatTheCompilerRejectsAndWhatTheManifestRejects() {
        Program bad = new Program("bad", "module { garbage }", new ProgramManifest(List.of(), List.of()),
                CompileOptions.singleDevice());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> xla.compile(bad));
        assertTrue(e.getMessage().startsWith("jaxlib: JaxRuntimeError: "), e.getMessage());
        assertTrue(e.getMessage().contains("garbage"), e.getMessage());

        Program program = new Program("dot_add", StableHlo.read("dot_add"), new ProgramManifest(
                List.of(new TensorSpec("x", DType.F32, new long[] {4, 8}), new TensorSpec("w", DType.F32, new long[] {8, 16}),
                        new TensorSpec("b", DType.F32, new long[] {4, 16})),
                List.of(new TensorSpec("y", DType.F32, new long[] {4, 16}))), CompileOptions.singleDevice());
        try (CompiledProgram compiled = xla.compile(program);
             DeviceArray wrong = xla.upload(f32("x", new long[] {8, 4}, new float[32]), 0)) {
            IllegalArgumentException mismatch = assertThrows(IllegalArgumentException.class,
                    () -> xla.execute(compiled, List.of(List.of(wrong, wrong, wrong))));
            assertEquals("dot_add argument 0 is x:tensor<4x8xf32>, got F32[8, 4]", mismatch.getMessage());
        }
    }

    @Test
    void jaxlibReadsOurCompileOptionsAsWritten() {
        JsonNode single = xla.parseCompileOptions(CompileOptions.singleDevice().toProto());
        assertEquals(1, single.get("num_replicas").asInt());
        assertEquals(1, single.get("num_partitions").asInt());
        assertFalse(single.get("use_spmd_partitioning").asBoolean());

        JsonNode shardy = xla.parseCompileOptions(CompileOptions.spmd(8, CompileOptions.Partitioner.SHARDY)
                .withDeviceAssignment(List.of(0, 1, 2, 3, 4, 5, 6, 7)).toProto());
        assertEquals(8, shardy.get("num_partitions").asInt());
        assertTrue(shardy.get("use_spmd_partitioning").asBoolean());
        assertTrue(shardy.get("use_shardy_partitioner").asBoolean());
        assertEquals("DeviceAssignment{replica_count=1, computation_count=8, Computation0{0} Computation1{1} "
                + "Computation2{2} Computation3{3} Computation4{4} Computation5{5} Computation6{6} Computation7{7}}",
                shardy.get("device_assignment").asText());

        JsonNode gspmd = xla.parseCompileOptions(CompileOptions.spmd(2, CompileOptions.Partitioner.GSPMD).toProto());
        assertTrue(gspmd.get("use_spmd_partitioning").asBoolean());
        assertFalse(gspmd.get("use_shardy_partitioner").asBoolean());
    }
}
