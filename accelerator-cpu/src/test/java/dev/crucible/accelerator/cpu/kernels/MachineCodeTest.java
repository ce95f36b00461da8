package dev.crucible.accelerator.cpu.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.cpu.CpuFeatures;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.torch.TorchOps;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The machine-code kernels: the shipped listing is what the committed source assembles to, and on a CPU that can
 * run it, every product equals an exactly computed one up to the one rounding to bfloat16 (and libtorch's, through
 * the backend's ops).
 */
class MachineCodeTest {
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    @Test
    void theListingIsWhatTheSourceAssemblesTo(@TempDir Path work) throws Exception {
        Path root = Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
        Path source = root.resolve("accelerator-cpu/src/main/asm/x86_64-kernels.s");
        Assumptions.assumeTrue(onPath("as") && onPath("objdump"),
                "GNU binutils (as, objdump) are not installed: the listing cannot be re-assembled here");
        Path object = work.resolve("kernels.o");
        run(work, "as", "--64", "-o", object.toString(), source.toString());
        Path listing = work.resolve("kernels.lst");
        run(work, listing, "objdump", "-d", "-w", "-M", "intel", object.toString());
        MachineCode.Listing fresh = MachineCode.Listing.parse(Files.readAllLines(listing));
        MachineCode.Listing bundled = MachineCode.Listing.bundled();
        assertEquals(fresh.symbols(), bundled.symbols(), "functions: run scripts/assemble-cpu-kernels.sh");
        assertArrayEquals(fresh.code(), bundled.code(), "code: run scripts/assemble-cpu-kernels.sh");
        assertTrue(bundled.symbols().containsKey("bf16_rows"));
    }

    @Test
    void aListingWithAGapOrAMisplacedFunctionIsRefused() {
        List<String> good = List.of("0000000000000000 <f>:", "   0:\t4d 85 c9             \ttest   r9,r9",
                "   3:\tc3                   \tret");
        MachineCode.Listing listing = MachineCode.Listing.parse(good);
        assertArrayEquals(new byte[] {0x4d, (byte) 0x85, (byte) 0xc9, (byte) 0xc3}, listing.code());
        assertEquals(0, listing.symbols().get("f"));
        assertThrows(IllegalArgumentException.class, () -> MachineCode.Listing.parse(List.of("0000000000000000 <f>:",
                "   0:\t4d 85 c9             \ttest   r9,r9", "   4:\tc3                   \tret")));
        assertThrows(IllegalArgumentException.class, () -> MachineCode.Listing.parse(List.of(
                "   0:\tc3                   \tret", "0000000000000002 <g>:")));
    }

    @Test
    void aMachineWithoutTheInstructionsIsToldWhichAreMissing() {
        Assumptions.assumeTrue(isLinuxX86(), "the check of flags follows the check of OS and architecture");
        // An Ice Lake Xeon: AVX-512 and VNNI, no BF16: the code loads, the vdpbf16ps kernels do not run.
        Set<String> iceLake = Set.of("avx512f", "avx512bw", "avx512vl", "bmi2", "avx512_vnni");
        assertNull(MachineCode.unsupported(iceLake));
        MachineCode withoutBf16 = MachineCode.load(iceLake).code();
        assertTrue(withoutBf16 != null && !withoutBf16.bf16());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment any = arena.allocate(1024);
            // Refused in Java: the instruction would end the process.
            assertThrows(IllegalStateException.class, () -> withoutBf16.bf16Rows(any, any, any, null, 64, 1));
            assertThrows(IllegalStateException.class, () -> withoutBf16.bf16Batch(any, any, any, null, 16, 1, 1, 2));
        }
        assertTrue(MachineCode.load(Set.of("avx512f", "avx512bw", "avx512vl", "bmi2", "avx512_vnni", "avx512_bf16"))
                .code().bf16());
        // A Skylake Xeon: AVX-512 without VNNI.
        assertEquals("this CPU lacks avx512_vnni", MachineCode.unsupported(Set.of("avx512f", "avx512bw", "avx512vl",
                "bmi2")));
        MachineCode.Availability none = MachineCode.load(Set.of("avx2"));
        assertTrue(!none.available() && none.reason().contains("avx512f"), none.reason());
    }

    @Test
    void bf16RowsEqualsTheExactSumRoundedOnceForEveryTailAndBias() throws ReflectiveOperationException {
        MachineCode code = counting(loadedWithBf16());
        int longRowCalls = LONG_ROW_CALLS.get();
        assertOneRowBf16Products(code::bf16Rows, 7, 0, 1, 2, 31, 32, 33, 63, 64, 127, 128, 129, 255, 256, 300, 896, 1000);
        assertEquals(longRowCalls, LONG_ROW_CALLS.get(), "rows shorter than LONG_ROW_BYTES go one at a time");
        // Inputs of LONG_INPUT_BYTES and more (16 KiB on a 32 KiB L1: 8,192 columns): their first multiple of eight
        // rows on bf16_rows8, the rest on bf16_rows.
        int longIn = (int) (MachineCode.LONG_INPUT_BYTES / 2);
        assertOneRowBf16Products(code::bf16Rows, 8, longIn - 1, longIn, longIn + 1, longIn + 15, longIn + 2816);
        assertTrue(LONG_ROW_CALLS.get() > 0, "bf16_rows8 ran");
    }

    @Test
    void bf16RowsF32xEqualsTheExactSumRoundedOnceForEveryTailAndBias() throws ReflectiveOperationException {
        // The one-row bf16 product of CPUs without AVX512-BF16; it runs wherever the code loads. Its input is float32,
        // so from LONG_INPUT_BYTES / 4 columns on its first multiple of eight rows go to bf16_rows8_f32x.
        MachineCode code = counting(loaded());
        int longRowCalls = LONG_ROW_CALLS.get();
        int longIn = (int) (MachineCode.LONG_INPUT_BYTES / 4);
        assertOneRowBf16Products((w, x, y, bias, in, rows) -> {
            try (Arena arena = Arena.ofConfined()) {
                // Exactly the input's bytes: a read past its end would fault or be caught by the check.
                MemorySegment wide = arena.allocate(4L * Math.max(1, in)).asSlice(0, 4L * in);
                for (int k = 0; k < in; k++) {
                    wide.setAtIndex(ValueLayout.JAVA_FLOAT, k, MatVec.bf16ToFloat(x.getAtIndex(BF16, k)));
                }
                code.bf16RowsF32x(w, wide, y, bias, in, rows);
            }
        }, 5, 0, 1, 2, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129, 255, 300, 896, 1000, 4864, longIn - 1, longIn,
                longIn + 1, longIn + 15, longIn + 2000);
        assertTrue(LONG_ROW_CALLS.get() > longRowCalls, "bf16_rows8_f32x ran");
    }

    /** A one-row bf16 product as the tests call it: bf16 weights, input, output and bias (may be null). */
    private interface OneRowBf16 {
        void run(MemorySegment w, MemorySegment x, MemorySegment y, MemorySegment bias, int in, int rows);
    }

    /**
     * {@code product} over 5 and 13 rows of random bf16 weights for each input width, with and without a bias: each
     * output the exact sum rounded once (within float32 accumulation), nothing written outside y (a guard each side).
     */
    private static void assertOneRowBf16Products(OneRowBf16 product, long seed, int... widths) {
        Random random = new Random(seed);
        try (Arena arena = Arena.ofConfined()) {
            for (int in : widths) {
                for (int rows : new int[] {5, 13}) {
                    MemorySegment w = bf16(arena, random, Math.max(1, rows * in));
                    MemorySegment x = bf16(arena, random, Math.max(1, in));
                    MemorySegment bias = bf16(arena, random, rows);
                    for (boolean withBias : new boolean[] {false, true}) {
                        MemorySegment guarded = guardedOutput(arena, 2L * rows, 2);
                        MemorySegment y = guarded.asSlice(2, 2L * rows);
                        product.run(w, x, y, withBias ? bias : null, in, rows);
                        String where = "in " + in + ", " + rows + " rows, bias " + withBias;
                        assertGuardsUntouched(guarded, 2, where);
                        for (int n = 0; n < rows; n++) {
                            assertBf16Product(MatVec.bf16ToFloat(y.getAtIndex(BF16, n)), w, (long) n * in, x, 0, in,
                                    withBias ? MatVec.bf16ToFloat(bias.getAtIndex(BF16, n)) : 0, where + ", row " + n);
                        }
                    }
                }
            }
        }
    }

    @Test
    void longInputsStartAtHalfTheL1DataCache(@org.junit.jupiter.api.io.TempDir java.nio.file.Path cpu)
            throws java.io.IOException {
        // sysfs's cache description: index0 the L1 data cache, index1 the L1 instruction cache, index2 the L2.
        String[][] caches = {{"1", "Data", "48K"}, {"1", "Instruction", "32K"}, {"2", "Unified", "2048K"}};
        for (int i = 0; i < caches.length; i++) {
            java.nio.file.Path index = java.nio.file.Files.createDirectories(cpu.resolve("index" + i));
            java.nio.file.Files.writeString(index.resolve("level"), caches[i][0] + "\n");
            java.nio.file.Files.writeString(index.resolve("type"), caches[i][1] + "\n");
            java.nio.file.Files.writeString(index.resolve("size"), caches[i][2] + "\n");
        }
        assertEquals(24 << 10, MachineCode.longInputBytes(cpu));
        // Unknown (no description, or one that does not parse): Zen 4's measured 16 KiB.
        assertEquals(16 << 10, MachineCode.longInputBytes(cpu.resolve("missing")));
        java.nio.file.Files.writeString(cpu.resolve("index0").resolve("size"), "large\n");
        assertEquals(16 << 10, MachineCode.longInputBytes(cpu));
    }

    @Test
    void bf16OutputsAreRoundedToNearestEvenBitForBitWithoutAvx512Bf16() {
        // A product of one weight 1.0 and one float32 input is the input itself: what comes out is the rounding
        // alone, checked against c10's rule (ties to even, NaN to 0x7fc0, denormals kept) bit for bit. (Not -0: a
        // sum starts from +0, and +0 + -0 is +0.)
        MachineCode code = loaded();
        Random random = new Random(13);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(2);
            one.set(BF16, 0, (short) 0x3f80);
            MemorySegment x = arena.allocate(4);
            MemorySegment y = arena.allocate(2);
            List<Float> values = new java.util.ArrayList<>(List.of(0f, 1f, Float.MAX_VALUE, -Float.MAX_VALUE,
                    Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, Float.intBitsToFloat(0xffc00001),
                    Float.intBitsToFloat(0x7fffffff), Float.intBitsToFloat(0x7f800001), Float.MIN_VALUE,
                    Float.intBitsToFloat(0x00018000), Float.intBitsToFloat(0x3f808000), Float.intBitsToFloat(0x3f818000),
                    Float.intBitsToFloat(0x3f807fff), Float.intBitsToFloat(0x3f808001), Float.intBitsToFloat(0x7f7fffff)));
            for (int i = 0; i < 20000; i++) {
                values.add(Float.intBitsToFloat(random.nextInt()));
            }
            values.removeIf(value -> Float.floatToRawIntBits(value) == 0x80000000);
            for (float value : values) {
                x.set(ValueLayout.JAVA_FLOAT, 0, value);
                code.bf16RowsF32x(one, x, y, null, 1, 1);
                assertEquals(MatVec.floatToBf16(value), y.get(BF16, 0),
                        "bits " + Integer.toHexString(Float.floatToRawIntBits(value)));
            }
        }
    }

    @Test
    void f32RowsEqualsTheExactSumForEveryTailAndBias() throws ReflectiveOperationException {
        // Inputs of LONG_INPUT_BYTES and more (16 KiB on a 32 KiB L1: 4,096 floats) go eight rows at a time to
        // f32_rows8, the rest of their rows to f32_rows.
        MachineCode code = counting(loaded());
        Random random = new Random(11);
        int longRowCalls = LONG_ROW_CALLS.get();
        int longIn = (int) (MachineCode.LONG_INPUT_BYTES / 4);
        try (Arena arena = Arena.ofConfined()) {
            for (int in : new int[] {0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 127, 128, 129, 896, 1000, 4864, longIn - 1,
                    longIn, longIn + 7, longIn + 775}) {
                for (int rows : new int[] {5, 13}) {
                    MemorySegment w = f32(arena, random, Math.max(1, rows * in));
                    MemorySegment x = f32(arena, random, Math.max(1, in));
                    MemorySegment bias = f32(arena, random, rows);
                    for (boolean withBias : new boolean[] {false, true}) {
                        MemorySegment guarded = guardedOutput(arena, 4L * rows, 4);
                        MemorySegment y = guarded.asSlice(4, 4L * rows);
                        code.f32Rows(w, x, y, withBias ? bias : null, in, rows);
                        String where = "in " + in + ", " + rows + " rows, bias " + withBias;
                        assertGuardsUntouched(guarded, 4, where);
                        for (int n = 0; n < rows; n++) {
                            double exact = withBias ? bias.getAtIndex(ValueLayout.JAVA_FLOAT, n) : 0;
                            double magnitude = Math.abs(exact);
                            for (int k = 0; k < in; k++) {
                                double product = (double) w.getAtIndex(ValueLayout.JAVA_FLOAT, (long) n * in + k)
                                        * x.getAtIndex(ValueLayout.JAVA_FLOAT, k);
                                exact += product;
                                magnitude += Math.abs(product);
                            }
                            // float32 accumulation in 8 to 32 lanes, then the lanes' sum: a few ulps of the magnitude.
                            float got = y.getAtIndex(ValueLayout.JAVA_FLOAT, n);
                            assertTrue(Math.abs(got - exact) <= magnitude * 1e-6 * Math.max(1, in / 32.0),
                                    where + ", row " + n + ": " + got + " against " + exact);
                        }
                    }
                }
            }
        }
        assertTrue(LONG_ROW_CALLS.get() > longRowCalls, "f32_rows8 ran");
    }

    @Test
    void theBackendsF32ProductsOfOneToEightRowsRunOnItAndAgreeWithLibtorch() throws Exception {
        MachineCode code = counting(loaded());
        VectorKernels kernels = new VectorKernels(2, List.of(DType.F32), code);
        CountingKernels counted = new CountingKernels(kernels);
        Random random = new Random(5);
        try (TorchOps fast = new TorchOps("cpu", true, counted); TorchOps reference = new TorchOps("cpu", true)) {
            // The long rows pass the size at which the product is split into tasks for both threads.
            // Batches of 2 to 8 rows (a small model's trials) on the batch kernels, the widest split into tasks too.
            for (int[] shape : new int[][] {{70, 33, 1}, {896, 128, 1}, {896, 4864, 1}, {4864, 896, 1}, {31, 7, 1},
                    {2053, 64, 1}, {128, 352, 8}, {352, 128, 7}, {128, 2356, 8}, {129, 40, 2}, {896, 4864, 3},
                    {33, 5, 5}, {100, 70, 6}}) {
                int in = shape[0];
                int out = shape[1];
                int rows = shape[2];
                try (TensorScope scope = reference.openScope()) {
                    Tensor x = reference.constant(gaussian(random, rows * in), rows, in);
                    Tensor w = reference.constant(gaussian(random, out * in), out, in);
                    Tensor b = reference.constant(gaussian(random, out), out);
                    int before = F32_CALLS.get();
                    float[] expected = reference.readFloats(reference.linear(x, w, b));
                    float[] got = reference.readFloats(fast.linear(x, w, b));
                    assertTrue(F32_CALLS.get() > before, "the machine code ran");
                    for (int n = 0; n < rows * out; n++) {
                        double scale = Math.max(1, Math.abs(expected[n]));
                        assertTrue(Math.abs(got[n] - expected[n]) <= 1e-4 * scale, rows + " x " + in + " -> " + out
                                + " output " + n + ": " + got[n] + " against libtorch's " + expected[n]);
                    }
                }
            }
        } finally {
            kernels.close();
        }
    }

    @Test
    void theBackendsOneRowBf16ProductsRunOnItAndAgreeWithLibtorch() throws Exception {
        MachineCode code = counting(loaded());
        VectorKernels kernels = new VectorKernels(2, List.of(DType.BF16), code);
        CountingKernels counted = new CountingKernels(kernels);
        Random random = new Random(3);
        try (TorchOps fast = new TorchOps("cpu", true, counted); TorchOps reference = new TorchOps("cpu", true)) {
            // The last shape's weights pass the size at which the product is split into tasks for both threads.
            for (int[] shape : new int[][] {{70, 33, 1}, {896, 128, 1}, {896, 4864, 1}, {4864, 896, 1}, {70, 33, 2},
                    {896, 4864, 2}, {129, 40, 3}, {896, 4864, 3}, {4864, 896, 4}, {31, 7, 4}}) {
                int in = shape[0];
                int out = shape[1];
                int rows = shape[2];
                try (TensorScope scope = reference.openScope()) {
                    Tensor x = reference.cast(reference.constant(gaussian(random, rows * in), rows, in), DType.BF16);
                    Tensor w = reference.cast(reference.constant(gaussian(random, out * in), out, in), DType.BF16);
                    Tensor b = reference.cast(reference.constant(gaussian(random, out), out), DType.BF16);
                    int before = BF16_CALLS.get();
                    float[] expected = reference.readFloats(reference.linear(x, w, b));
                    float[] got = reference.readFloats(fast.linear(x, w, b));
                    // Without AVX512-BF16 only one-row products run in machine code; batches on the Vector API.
                    assertEquals(rows == 1 || code.bf16(), BF16_CALLS.get() > before, "the machine code ran");
                    for (int n = 0; n < rows * out; n++) {
                        double scale = Math.max(1, Math.abs(expected[n]));
                        assertTrue(Math.abs(got[n] - expected[n]) <= 1.6e-2 * scale, rows + " x " + in + " -> " + out
                                + " output " + n + ": " + got[n] + " against libtorch's " + expected[n]);
                    }
                }
            }
        } finally {
            kernels.close();
        }
    }

    @Test
    void bf16BatchEqualsTheExactSumsForEveryRowCountTailAndBias() {
        MachineCode code = loadedWithBf16();
        Random random = new Random(9);
        try (Arena arena = Arena.ofConfined()) {
            for (int batch = 2; batch <= MachineCode.MAX_BATCH; batch++) {
                for (int in : new int[] {1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 300, 896}) {
                    int rows = 5;
                    int out = 7; // y's row length: the kernel writes outputs [0, rows) of each
                    MemorySegment w = bf16(arena, random, rows * in);
                    MemorySegment x = bf16(arena, random, batch * in);
                    MemorySegment bias = bf16(arena, random, rows);
                    MemorySegment xs = arena.allocate(MachineCode.interleavedBytes(batch, in, 2));
                    xs.fill((byte) 0x7f); // what interleave leaves must not matter: it zeroes the tails itself
                    MachineCode.interleave(x, batch, in, 2, xs);
                    for (boolean withBias : new boolean[] {false, true}) {
                        MemorySegment guarded = arena.allocate(2L * (batch * out + 2));
                        guarded.fill((byte) 0x5a);
                        MemorySegment y = guarded.asSlice(2, 2L * batch * out);
                        code.bf16Batch(w, xs, y, withBias ? bias : null, in, rows, out, batch);
                        String where = batch + " x " + in + (withBias ? " + bias" : "");
                        for (int r = 0; r < batch; r++) {
                            for (int n = 0; n < out; n++) {
                                short got = y.getAtIndex(BF16, (long) r * out + n);
                                if (n >= rows) {
                                    assertEquals((short) 0x5a5a, got, "written past the rows, " + where);
                                    continue;
                                }
                                assertBf16Product(MatVec.bf16ToFloat(got), w, (long) n * in, x, (long) r * in, in,
                                        withBias ? MatVec.bf16ToFloat(bias.getAtIndex(BF16, n)) : 0,
                                        where + " row " + r + " output " + n);
                            }
                        }
                        assertEquals((short) 0x5a5a, guarded.getAtIndex(BF16, 0), "written before y, " + where);
                        assertEquals((short) 0x5a5a, guarded.getAtIndex(BF16, batch * out + 1), "written after y, " + where);
                    }
                }
            }
            MemorySegment any = arena.allocate(1 << 16);
            assertThrows(IllegalArgumentException.class, () -> code.bf16Batch(any, any, any, null, 64, 4, 4, 5));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> code.bf16Batch(any, any.asSlice(0, 64 * 2 * 2 - 2), any, null, 64, 4, 4, 2));
        }
    }

    @Test
    void f32BatchEqualsTheExactSumsForEveryRowCountTailAndBias() {
        MachineCode code = loaded();
        Random random = new Random(17);
        try (Arena arena = Arena.ofConfined()) {
            for (int batch = 2; batch <= MachineCode.MAX_F32_BATCH; batch++) {
                for (int in : new int[] {1, 15, 16, 17, 31, 32, 33, 100, 128, 129, 352}) {
                    int rows = 5;
                    int out = 7; // y's row length: the kernel writes outputs [0, rows) of each
                    MemorySegment w = f32(arena, random, rows * in);
                    MemorySegment x = f32(arena, random, batch * in);
                    MemorySegment bias = f32(arena, random, rows);
                    MemorySegment xs = arena.allocate(MachineCode.interleavedBytes(batch, in, 4));
                    xs.fill((byte) 0x7f); // what interleave leaves must not matter: it zeroes the tails itself
                    MachineCode.interleave(x, batch, in, 4, xs);
                    for (boolean withBias : new boolean[] {false, true}) {
                        MemorySegment guarded = arena.allocate(4L * (batch * out + 2));
                        guarded.fill((byte) 0x5a);
                        MemorySegment y = guarded.asSlice(4, 4L * batch * out);
                        code.f32Batch(w.asSlice(0, 4L * rows * in), xs, y, withBias ? bias : null, in, rows, out, batch);
                        String where = batch + " x " + in + (withBias ? " + bias" : "");
                        for (int r = 0; r < batch; r++) {
                            for (int n = 0; n < out; n++) {
                                float got = y.getAtIndex(ValueLayout.JAVA_FLOAT, (long) r * out + n);
                                if (n >= rows) {
                                    assertEquals(0x5a5a5a5a, Float.floatToRawIntBits(got), "written past the rows, " + where);
                                    continue;
                                }
                                double exact = withBias ? bias.getAtIndex(ValueLayout.JAVA_FLOAT, n) : 0;
                                double magnitude = Math.abs(exact);
                                for (int k = 0; k < in; k++) {
                                    double product = (double) w.getAtIndex(ValueLayout.JAVA_FLOAT, (long) n * in + k)
                                            * x.getAtIndex(ValueLayout.JAVA_FLOAT, (long) r * in + k);
                                    exact += product;
                                    magnitude += Math.abs(product);
                                }
                                assertTrue(Math.abs(got - exact) <= magnitude * 1e-6 * Math.max(1, in / 16.0),
                                        where + " row " + r + " output " + n + ": " + got + " against " + exact);
                            }
                        }
                        assertEquals(0x5a5a5a5a, guarded.getAtIndex(ValueLayout.JAVA_INT, 0), "written before y, " + where);
                        assertEquals(0x5a5a5a5a, guarded.getAtIndex(ValueLayout.JAVA_INT, batch * out + 1),
                                "written after y, " + where);
                    }
                }
            }
            MemorySegment any = arena.allocate(1 << 16);
            assertThrows(IllegalArgumentException.class, () -> code.f32Batch(any, any, any, null, 64, 4, 4, 9));
            assertThrows(IllegalArgumentException.class, () -> code.f32Batch(any, any, any, null, 64, 4, 4, 1));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> code.f32Batch(any, any.asSlice(0, 64 * 2 * 4 - 4), any, null, 64, 4, 4, 2));
        }
    }

    @Test
    void int8RowsEqualsTheExactSumPerChannelAndPerBlockInBothOutputTypes() {
        MachineCode code = loaded();
        Random random = new Random(11);
        try (Arena arena = Arena.ofConfined()) {
            for (int[] widths : new int[][] {{16, 16}, {48, 48}, {64, 64}, {80, 80}, {896, 896}, {896, 128},
                    {256, 32}, {4864, 4864}, {160, 16}}) {
                int in = widths[0];
                int block = widths[1];
                int groups = in / block;
                int rows = 3;
                MemorySegment codes = int8Codes(arena, random, (long) in * rows);
                MemorySegment x = arena.allocate(4L * in);
                for (int k = 0; k < in; k++) {
                    x.setAtIndex(ValueLayout.JAVA_FLOAT, k, (float) random.nextGaussian());
                }
                MemorySegment scales = smallScales(arena, random, rows * groups);
                for (boolean bf16 : new boolean[] {false, true}) {
                    for (boolean withBias : new boolean[] {false, true}) {
                        int bytes = bf16 ? 2 : 4;
                        Bias bias = Bias.of(arena, random, rows, bf16, withBias);
                        float[] biasValues = bias.values();
                        MemorySegment guarded = guardedOutput(arena, (long) bytes * rows, bytes);
                        MemorySegment y = guarded.asSlice(bytes, (long) bytes * rows);
                        code.int8Rows(codes, x, y, scales, bias.segment(), bf16, in, block, rows);
                        String where = in + "/" + block + (bf16 ? " bf16" : " f32") + (withBias ? " + bias" : "");
                        assertGuardsUntouched(guarded, bytes, where);
                        for (int n = 0; n < rows; n++) {
                            double exact = biasValues[n];
                            double magnitude = Math.abs(exact);
                            for (int g = 0; g < groups; g++) {
                                double group = 0;
                                for (int k = g * block; k < (g + 1) * block; k++) {
                                    group += (double) codes.get(ValueLayout.JAVA_BYTE, (long) n * in + k)
                                            * x.getAtIndex(ValueLayout.JAVA_FLOAT, k);
                                }
                                double scale = scales.getAtIndex(ValueLayout.JAVA_FLOAT, (long) n * groups + g);
                                exact += scale * group;
                                magnitude += Math.abs(scale) * 127 * block;
                            }
                            float got = bf16 ? MatVec.bf16ToFloat(y.getAtIndex(BF16, n))
                                    : y.getAtIndex(ValueLayout.JAVA_FLOAT, n);
                            double allowed = (bf16 ? Math.abs(exact) / 256 : 0) + magnitude * 1e-6;
                            assertTrue(Math.abs(got - exact) <= allowed, where + " row " + n + ": " + got
                                    + " against " + exact);
                        }
                    }
                }
            }
            MemorySegment any = arena.allocate(4096);
            assertThrows(IllegalArgumentException.class, () -> code.int8Rows(any, any, any, any, null, false, 40, 40, 1));
            assertThrows(IllegalArgumentException.class, () -> code.int8Rows(any, any, any, any, null, false, 96, 64, 1));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> code.int8Rows(any, any.asSlice(0, 4 * 63), any, any, null, false, 64, 64, 1));
        }
    }

    @Test
    void quantizeX16WritesTheNearestCodesAndTheBlockScalesBitForBit() {
        MachineCode code = loaded();
        Random random = new Random(17);
        int in = 640;
        float[] values = new float[in];
        for (int k = 0; k < in; k++) {
            int block = k / MachineCode.X16_BLOCK;
            values[k] = switch (block) {
                case 1 -> 0f;                                          // a block of zeros: scale 0, codes 0
                case 2 -> k == 300 ? -1000f : (float) random.nextGaussian(); // an outlier sets its block's scale
                case 3 -> (float) (random.nextGaussian() * 1e-20);    // tiny values keep their resolution
                default -> (float) random.nextGaussian();
            };
        }
        try (Arena arena = Arena.ofConfined()) {
            for (boolean bf16 : new boolean[] {false, true}) {
                MemorySegment x = arena.allocate(4L * in);
                for (int k = 0; k < in; k++) {
                    if (bf16) {
                        x.setAtIndex(BF16, k, MatVec.floatToBf16(values[k]));
                    } else {
                        x.setAtIndex(ValueLayout.JAVA_FLOAT, k, values[k]);
                    }
                }
                MemorySegment guarded = arena.allocate(MachineCode.x16Bytes(in) + 2);
                guarded.fill((byte) 0x5a);
                MemorySegment xq = guarded.asSlice(1, MachineCode.x16Bytes(in));
                code.quantizeX16(x, xq, bf16, in);
                assertEquals(0x5a, guarded.get(ValueLayout.JAVA_BYTE, 0) & 0xff);
                assertEquals(0x5a, guarded.get(ValueLayout.JAVA_BYTE, guarded.byteSize() - 1) & 0xff);
                for (int b = 0; b < in / MachineCode.X16_BLOCK; b++) {
                    float largest = 0;
                    for (int k = b * MachineCode.X16_BLOCK; k < (b + 1) * MachineCode.X16_BLOCK; k++) {
                        largest = Math.max(largest, Math.abs(input(x, bf16, k)));
                    }
                    float scale = largest / 32767f;
                    float factor = largest == 0 ? 0 : 32767f / largest;
                    assertEquals(Float.floatToRawIntBits(scale), Float.floatToRawIntBits(
                            xq.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 2L * in + 4L * b)), "scale of block " + b);
                    for (int k = b * MachineCode.X16_BLOCK; k < (b + 1) * MachineCode.X16_BLOCK; k++) {
                        float value = input(x, bf16, k);
                        short expected = (short) Math.max(-32768, Math.min(32767, Math.rint(value * factor)));
                        short got = xq.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * k);
                        assertEquals(expected, got, "column " + k + (bf16 ? " bf16" : " f32"));
                        assertTrue(Math.abs(got * scale - value) <= largest / 65534 * 1.0001, "column " + k
                                + ": " + got * scale + " stands for " + value);
                    }
                }
            }
            MemorySegment any = arena.allocate(4096);
            assertThrows(IllegalArgumentException.class, () -> code.quantizeX16(any, any, false, 96));
            assertThrows(IndexOutOfBoundsException.class, () -> code.quantizeX16(any, any.asSlice(0, 255), false, 128));
        }
    }

    /** {@code count} random symmetric int8 codes, -127 to 127. */
    private static MemorySegment int8Codes(Arena arena, Random random, long count) {
        MemorySegment codes = arena.allocate(count);
        for (long i = 0; i < count; i++) {
            codes.set(ValueLayout.JAVA_BYTE, i, (byte) (random.nextInt(255) - 127));
        }
        return codes;
    }

    /** {@code count} float32 scales between 0.001 and 0.021, a trained int8 weight's range. */
    private static MemorySegment smallScales(Arena arena, Random random, int count) {
        MemorySegment scales = arena.allocate(4L * count);
        for (int i = 0; i < count; i++) {
            scales.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (0.001 + random.nextDouble() * 0.02));
        }
        return scales;
    }

    /** A bias of {@code rows} random values in the output type (its values as that type holds them), or none. */
    private record Bias(MemorySegment segment, float[] values) {
        static Bias of(Arena arena, Random random, int rows, boolean bf16, boolean present) {
            float[] values = new float[rows];
            if (!present) {
                return new Bias(null, values);
            }
            MemorySegment segment = arena.allocate((bf16 ? 2L : 4L) * rows);
            for (int n = 0; n < rows; n++) {
                values[n] = (float) random.nextGaussian();
                if (bf16) {
                    segment.setAtIndex(BF16, n, MatVec.floatToBf16(values[n]));
                    values[n] = MatVec.bf16ToFloat(segment.getAtIndex(BF16, n));
                } else {
                    segment.setAtIndex(ValueLayout.JAVA_FLOAT, n, values[n]);
                }
            }
            return new Bias(segment, values);
        }
    }

    /** {@code bytes} for the code to write, with {@code guard} bytes of 0x5a before and after. */
    private static MemorySegment guardedOutput(Arena arena, long bytes, int guard) {
        MemorySegment guarded = arena.allocate(bytes + 2L * guard);
        guarded.fill((byte) 0x5a);
        return guarded;
    }

    /** The {@code guard} bytes at each end of {@link #guardedOutput} are as they were: nothing written outside y. */
    private static void assertGuardsUntouched(MemorySegment guarded, int guard, String where) {
        for (int i = 0; i < guard; i++) {
            assertEquals(0x5a, guarded.get(ValueLayout.JAVA_BYTE, i) & 0xff, "written before y, " + where);
            assertEquals(0x5a, guarded.get(ValueLayout.JAVA_BYTE, guarded.byteSize() - 1 - i) & 0xff,
                    "written after y, " + where);
        }
    }

    private static float input(MemorySegment x, boolean bf16, int k) {
        return bf16 ? MatVec.bf16ToFloat(x.getAtIndex(BF16, k)) : x.getAtIndex(ValueLayout.JAVA_FLOAT, k);
    }

    @Test
    void int8RowsX16EqualsTheExactIntegerSumsAndStaysWithinTheInputsErrorOfTheFloatProduct()
            throws ReflectiveOperationException {
        // 16-bit inputs of LONG_INPUT_BYTES and more (8,192 columns on a 32 KiB L1) with one scale per row: the first
        // eight rows on int8_rows8_x16, the rest on int8_rows_x16; grouped scales stay one row at a time.
        MachineCode code = counting(loaded());
        Random random = new Random(23);
        int longRowCalls = LONG_ROW_CALLS.get();
        int longIn = (int) (MachineCode.LONG_INPUT_BYTES / 2);
        try (Arena arena = Arena.ofConfined()) {
            for (int[] widths : new int[][] {{128, 128, 3}, {896, 896, 3}, {896, 128, 3}, {512, 256, 3},
                    {4864, 4864, 3}, {longIn - 128, longIn - 128, 9}, {longIn, longIn, 11},
                    {longIn + 2816, longIn + 2816, 8}, {longIn, 1024, 9}}) {
                int in = widths[0];
                int block = widths[1];
                int groups = in / block;
                int rows = widths[2];
                MemorySegment codes = int8Codes(arena, random, (long) in * rows);
                MemorySegment x = arena.allocate(4L * in);
                for (int k = 0; k < in; k++) {
                    x.setAtIndex(ValueLayout.JAVA_FLOAT, k, (float) (random.nextGaussian() * (k % 97 == 0 ? 30 : 1)));
                }
                MemorySegment xq = arena.allocate(MachineCode.x16Bytes(in));
                code.quantizeX16(x, xq, false, in);
                MemorySegment scales = smallScales(arena, random, rows * groups);
                for (boolean bf16 : new boolean[] {false, true}) {
                    for (boolean withBias : new boolean[] {false, true}) {
                        int bytes = bf16 ? 2 : 4;
                        Bias bias = Bias.of(arena, random, rows, bf16, withBias);
                        float[] biasValues = bias.values();
                        MemorySegment guarded = guardedOutput(arena, (long) bytes * rows, bytes);
                        MemorySegment y = guarded.asSlice(bytes, (long) bytes * rows);
                        code.int8RowsX16(codes, xq, y, scales, bias.segment(), bf16, in, block, rows);
                        String where = in + "/" + block + (bf16 ? " bf16" : " f32") + (withBias ? " + bias" : "");
                        assertGuardsUntouched(guarded, bytes, where);
                        for (int n = 0; n < rows; n++) {
                            double exact = biasValues[n];      // of the 16-bit input the code multiplies
                            double magnitude = Math.abs(exact);
                            double reference = biasValues[n];  // of the float32 input itself
                            double inputError = 0;             // what the input's rounding can move it by
                            for (int g = 0; g < groups; g++) {
                                double scale = scales.getAtIndex(ValueLayout.JAVA_FLOAT, (long) n * groups + g);
                                for (int k = g * block; k < (g + 1) * block; k++) {
                                    int b = k / MachineCode.X16_BLOCK;
                                    double xScale = xq.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 2L * in + 4L * b);
                                    int q = codes.get(ValueLayout.JAVA_BYTE, (long) n * in + k);
                                    double term = scale * xScale * q * xq.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * k);
                                    exact += term;
                                    magnitude += Math.abs(term);
                                    reference += scale * q * x.getAtIndex(ValueLayout.JAVA_FLOAT, k);
                                    inputError += Math.abs(scale * q) * xScale * 32767 / 65534;
                                }
                            }
                            float got = bf16 ? MatVec.bf16ToFloat(y.getAtIndex(BF16, n))
                                    : y.getAtIndex(ValueLayout.JAVA_FLOAT, n);
                            double rounding = (bf16 ? Math.abs(exact) / 256 : 0) + magnitude * 1e-6;
                            assertTrue(Math.abs(got - exact) <= rounding, where + " row " + n + ": " + got
                                    + " against " + exact);
                            assertTrue(Math.abs(got - reference) <= rounding + inputError * 1.0001, where + " row " + n
                                    + ": " + got + " against the float32 input's " + reference);
                        }
                    }
                }
            }
            assertTrue(LONG_ROW_CALLS.get() > longRowCalls, "int8_rows8_x16 ran");
            MemorySegment any = arena.allocate(8192);
            assertThrows(IllegalArgumentException.class,
                    () -> code.int8RowsX16(any, any, any, any, null, false, 192, 192, 1));
            assertThrows(IllegalArgumentException.class,
                    () -> code.int8RowsX16(any, any, any, any, null, false, 256, 64, 1));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> code.int8RowsX16(any, any.asSlice(0, MachineCode.x16Bytes(256) - 1), any, any, null, false,
                            256, 256, 1));
        }
    }

    @Test
    void theBackendsOneRowInt8ProductsRunOnItAndAgreeWithTheVectorKernels() throws Exception {
        MachineCode code = counting(loaded());
        VectorKernels withCode = new VectorKernels(2, List.of(DType.BF16), code);
        VectorKernels without = new VectorKernels(2, List.of(DType.BF16), null);
        Random random = new Random(5);
        try (Arena arena = Arena.ofShared()) { // the pool's threads read it
            // Per channel, then blocks of 128 (the int8 default), on a size the pool splits into tasks.
            for (int[] shape : new int[][] {{896, 4864, 0}, {896, 4864, 128}, {64, 40, 0}}) {
                int in = shape[0];
                int out = shape[1];
                int block = shape[2] == 0 ? in : shape[2];
                var format = new dev.crucible.api.tensor.WeightFormat.Int(8, shape[2], false);
                MemorySegment codes = int8Codes(arena, random, (long) in * out);
                MemorySegment scales = arena.allocate(4L * out * (in / block));
                for (long i = 0; i < scales.byteSize() / 4; i++) {
                    scales.setAtIndex(ValueLayout.JAVA_FLOAT, i, 0.01f);
                }
                for (DType dtype : new DType[] {DType.BF16, DType.F32}) {
                    boolean bf16 = dtype == DType.BF16;
                    MemorySegment x = bf16 ? bf16(arena, random, in) : f32(arena, random, in);
                    MemorySegment bias = bf16 ? bf16(arena, random, out) : f32(arena, random, out);
                    MemorySegment fast = arena.allocate((bf16 ? 2L : 4L) * out);
                    MemorySegment slow = arena.allocate((bf16 ? 2L : 4L) * out);
                    int before = INT8_CALLS.get();
                    withCode.quantizedLinear(format, dtype, x, codes, scales, null, bias, fast, 1, in, out);
                    assertTrue(INT8_CALLS.get() > before, "the machine code ran");
                    without.quantizedLinear(format, dtype, x, codes, scales, null, bias, slow, 1, in, out);
                    for (int n = 0; n < out; n++) {
                        float a = bf16 ? MatVec.bf16ToFloat(fast.getAtIndex(BF16, n)) : fast.getAtIndex(ValueLayout.JAVA_FLOAT, n);
                        float b = bf16 ? MatVec.bf16ToFloat(slow.getAtIndex(BF16, n)) : slow.getAtIndex(ValueLayout.JAVA_FLOAT, n);
                        assertTrue(Math.abs(a - b) <= Math.max(1, Math.abs(b)) / 128, in + " -> " + out + " block "
                                + block + " " + dtype + " output " + n + ": " + a + " against the vector kernels' " + b);
                    }
                }
            }
        } finally {
            withCode.close();
            without.close();
        }
    }

    /**
     * 4-bit weights made by the codecs the checkpoint loader uses (so the nibble order is theirs), multiplied on the
     * machine code through the backend's kernels, against the codecs' own dequantization summed exactly.
     */
    @Test
    void theBackendsOneRowInt4AndNf4ProductsRunOnItAndMatchTheCodecsDequantization() throws Exception {
        MachineCode code = counting(loaded());
        VectorKernels kernels = new VectorKernels(2, List.of(DType.BF16), code);
        Random random = new Random(13);
        try (Arena arena = Arena.ofShared()) {
            List<dev.crucible.api.tensor.WeightFormat> formats = List.of(
                    new dev.crucible.api.tensor.WeightFormat.Int(4, 32, false),
                    new dev.crucible.api.tensor.WeightFormat.Int(4, 0, false),
                    new dev.crucible.api.tensor.WeightFormat.Int(4, 128, false),
                    dev.crucible.api.tensor.WeightFormat.Nf4.QLORA);
            for (dev.crucible.api.tensor.WeightFormat format : formats) {
                for (int[] shape : new int[][] {{896, 4864}, {128, 40}, {4864, 64}}) {
                    int in = shape[0];
                    int out = shape[1];
                    float[] dense = gaussian(random, in * out);
                    dev.crucible.api.quant.WeightCodec codec = format instanceof dev.crucible.api.tensor.WeightFormat.Int i
                            ? new dev.crucible.api.quant.IntCodec(i) : new dev.crucible.api.quant.Nf4Codec(
                                    (dev.crucible.api.tensor.WeightFormat.Nf4) format);
                    var quantized = codec.encode("w", dense, new long[] {out, in});
                    float[] decoded = codec.decode(quantized);
                    MemorySegment codes = arena.allocate(quantized.data().data().byteSize());
                    codes.copyFrom(quantized.data().data());
                    MemorySegment scales = arena.allocate(4L * quantized.scales().elementCount());
                    for (long i = 0; i < quantized.scales().elementCount(); i++) {
                        scales.setAtIndex(ValueLayout.JAVA_FLOAT, i, quantized.scales().floatAt(i));
                    }
                    for (DType dtype : new DType[] {DType.BF16, DType.F32}) {
                        boolean bf16 = dtype == DType.BF16;
                        MemorySegment x = bf16 ? bf16(arena, random, in) : f32(arena, random, in);
                        MemorySegment y = arena.allocate((bf16 ? 2L : 4L) * out);
                        int before = NIBBLE_CALLS.get();
                        assertTrue(kernels.takesQuantizedLinear(format, dtype, 1, in, out), format + " taken");
                        kernels.quantizedLinear(format, dtype, x, codes, scales, null, null, y, 1, in, out);
                        assertTrue(NIBBLE_CALLS.get() > before, "the machine code ran for " + format);
                        for (int n = 0; n < out; n++) {
                            double exact = 0;
                            double magnitude = 0;
                            for (int k = 0; k < in; k++) {
                                double xk = bf16 ? MatVec.bf16ToFloat(x.getAtIndex(BF16, k))
                                        : x.getAtIndex(ValueLayout.JAVA_FLOAT, k);
                                exact += decoded[n * in + k] * xk;
                                magnitude += Math.abs(decoded[n * in + k] * xk);
                            }
                            float got = bf16 ? MatVec.bf16ToFloat(y.getAtIndex(BF16, n))
                                    : y.getAtIndex(ValueLayout.JAVA_FLOAT, n);
                            double allowed = (bf16 ? Math.abs(exact) / 256 : 0) + magnitude * 1e-5;
                            assertTrue(Math.abs(got - exact) <= allowed, format + " " + dtype + " " + in + " -> " + out
                                    + " output " + n + ": " + got + " against " + exact);
                        }
                    }
                }
            }
            // NF4 in several rows: each row as alone.
            var nf4 = dev.crucible.api.tensor.WeightFormat.Nf4.QLORA;
            int in = 128;
            int out = 40;
            var quantized = new dev.crucible.api.quant.Nf4Codec(nf4).encode("w", gaussian(random, in * out),
                    new long[] {out, in});
            MemorySegment codes = arena.allocate(quantized.data().data().byteSize());
            codes.copyFrom(quantized.data().data());
            MemorySegment scales = arena.allocate(4L * quantized.scales().elementCount());
            for (long i = 0; i < quantized.scales().elementCount(); i++) {
                scales.setAtIndex(ValueLayout.JAVA_FLOAT, i, quantized.scales().floatAt(i));
            }
            int rows = 3;
            DType dtype = DType.BF16;
            long bytes = 2;
            MemorySegment x = bf16(arena, random, rows * in);
            MemorySegment together = arena.allocate(bytes * rows * out);
            assertTrue(kernels.takesQuantizedLinear(nf4, dtype, rows, in, out));
            kernels.quantizedLinear(nf4, dtype, x, codes, scales, null, null, together, rows, in, out);
            for (int r = 0; r < rows; r++) {
                MemorySegment alone = arena.allocate(bytes * out);
                kernels.quantizedLinear(nf4, dtype, x.asSlice(bytes * r * in, bytes * in), codes, scales, null, null,
                        alone, 1, in, out);
                assertEquals(-1, alone.mismatch(together.asSlice(bytes * r * out, bytes * out)), "row " + r);
            }
            // Beyond 8 rows, or in widths the code does not take, NF4 is left to libtorch's ops.
            assertTrue(!kernels.takesQuantizedLinear(nf4, DType.BF16, 9, 896, 64));
            assertTrue(!kernels.takesQuantizedLinear(nf4, DType.BF16, 1, 96, 64));
        } finally {
            kernels.close();
        }
    }

    @Test
    void segmentsShorterThanTheProductNeedsAreRefusedBeforeTheCodeRuns() {
        MachineCode code = loaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate(2L * 4 * 64);
            MemorySegment x = arena.allocate(2L * 64);
            MemorySegment y = arena.allocate(2L * 4);
            if (code.bf16()) {
                assertThrows(IndexOutOfBoundsException.class, () -> code.bf16Rows(w, x, y, null, 64, 5));
                assertThrows(IndexOutOfBoundsException.class, () -> code.bf16Rows(w, x.asSlice(2), y, null, 64, 4));
                assertThrows(IndexOutOfBoundsException.class, () -> code.bf16Rows(w, x, y, y.asSlice(2), 64, 4));
                code.bf16Rows(w, x, y, y, 64, 4); // exactly long enough
            }
            MemorySegment wide = arena.allocate(4L * 64);
            assertThrows(IndexOutOfBoundsException.class, () -> code.bf16RowsF32x(w, wide, y, null, 64, 5));
            assertThrows(IndexOutOfBoundsException.class, () -> code.bf16RowsF32x(w, wide.asSlice(4), y, null, 64, 4));
            assertThrows(IndexOutOfBoundsException.class, () -> code.bf16RowsF32x(w, wide, y, y.asSlice(2), 64, 4));
            code.bf16RowsF32x(w, wide, y, y, 64, 4); // exactly long enough
            assertThrows(IndexOutOfBoundsException.class, () -> code.f32Rows(w, x, y, null, 32, 5));
            assertThrows(IndexOutOfBoundsException.class, () -> code.f32Rows(w, x.asSlice(4), y, null, 32, 4));
            code.f32Rows(w, x, arena.allocate(16), null, 32, 4); // exactly long enough
        }
    }

    private static final java.util.concurrent.atomic.AtomicInteger BF16_CALLS = new java.util.concurrent.atomic.AtomicInteger();
    private static final java.util.concurrent.atomic.AtomicInteger INT8_CALLS = new java.util.concurrent.atomic.AtomicInteger();

    private static final java.util.concurrent.atomic.AtomicInteger F32_CALLS = new java.util.concurrent.atomic.AtomicInteger();
    /** Calls of the eight-row kernels (bf16_rows8, f32_rows8), besides their type's own count. */
    private static final java.util.concurrent.atomic.AtomicInteger LONG_ROW_CALLS = new java.util.concurrent.atomic.AtomicInteger();

    static void countLongRows() {
        LONG_ROW_CALLS.incrementAndGet();
    }

    static void countF32() {
        F32_CALLS.incrementAndGet();
    }

    static void countBf16() {
        BF16_CALLS.incrementAndGet();
    }

    private static final java.util.concurrent.atomic.AtomicInteger NIBBLE_CALLS = new java.util.concurrent.atomic.AtomicInteger();

    static void countNibbles() {
        NIBBLE_CALLS.incrementAndGet();
    }

    static void countInt8() {
        INT8_CALLS.incrementAndGet();
    }

    /** The same code, counting its calls: so that a test knows the backend's product ran on it. */
    private static MachineCode counting(MachineCode code) throws ReflectiveOperationException {
        var lookup = java.lang.invoke.MethodHandles.lookup();
        var none = java.lang.invoke.MethodType.methodType(void.class);
        var bf16 = lookup.findStatic(MachineCodeTest.class, "countBf16", none);
        var f32Counter = lookup.findStatic(MachineCodeTest.class, "countF32", none);
        var longRows = lookup.findStatic(MachineCodeTest.class, "countLongRows", none);
        return new MachineCode(java.lang.invoke.MethodHandles.foldArguments(code.bf16Rows(), bf16),
                java.lang.invoke.MethodHandles.foldArguments(code.bf16RowsF32x(), bf16),
                java.lang.invoke.MethodHandles.foldArguments(code.f32Rows(),
                        lookup.findStatic(MachineCodeTest.class, "countF32", none)),
                java.lang.invoke.MethodHandles.foldArguments(java.lang.invoke.MethodHandles.foldArguments(
                        code.bf16Rows8(), bf16), longRows),
                java.lang.invoke.MethodHandles.foldArguments(java.lang.invoke.MethodHandles.foldArguments(
                        code.bf16Rows8F32x(), bf16), longRows),
                java.lang.invoke.MethodHandles.foldArguments(java.lang.invoke.MethodHandles.foldArguments(
                        code.f32Rows8(), f32Counter), longRows),
                java.lang.invoke.MethodHandles.foldArguments(code.int8Rows(),
                        lookup.findStatic(MachineCodeTest.class, "countInt8", none)),
                code.bf16Batch().stream().map(handle -> java.lang.invoke.MethodHandles.foldArguments(handle, bf16))
                        .toList(),
                code.f32Batch().stream().map(handle -> java.lang.invoke.MethodHandles.foldArguments(handle,
                        f32Counter)).toList(),
                java.lang.invoke.MethodHandles.foldArguments(code.nibbleRows(),
                        lookup.findStatic(MachineCodeTest.class, "countNibbles", none)),
                code.quantizeX16(),
                java.lang.invoke.MethodHandles.foldArguments(code.int8RowsX16(),
                        lookup.findStatic(MachineCodeTest.class, "countInt8", none)),
                java.lang.invoke.MethodHandles.foldArguments(java.lang.invoke.MethodHandles.foldArguments(
                        code.int8Rows8X16(), lookup.findStatic(MachineCodeTest.class, "countInt8", none)), longRows),
                code.bf16());
    }

    /**
     * {@code got} is the bf16 dot product of {@code in} bf16 weights and inputs (from the given element offsets)
     * plus {@code bias}, computed exactly: within one bf16 rounding of the result plus float32 accumulation.
     */
    private static void assertBf16Product(float got, MemorySegment w, long wFrom, MemorySegment x, long xFrom, int in,
                                          float bias, String where) {
        double exact = bias;
        double magnitude = Math.abs(exact);
        for (int k = 0; k < in; k++) {
            double product = (double) MatVec.bf16ToFloat(w.getAtIndex(BF16, wFrom + k))
                    * MatVec.bf16ToFloat(x.getAtIndex(BF16, xFrom + k));
            exact += product;
            magnitude += Math.abs(product);
        }
        double allowed = Math.abs(exact) / 256 + magnitude * 1e-6 * Math.max(1, in / 32.0);
        assertTrue(Math.abs(got - exact) <= allowed, where + ": " + got + " against " + exact);
    }

    private static MachineCode loaded() {
        Set<String> flags = CpuFeatures.probe().flags();
        String unsupported = MachineCode.unsupported(flags);
        Assumptions.assumeTrue(unsupported == null, "the machine code cannot run here: " + unsupported);
        MachineCode.Availability availability = MachineCode.load(flags);
        assertTrue(availability.available(), availability.reason());
        return availability.code();
    }

    /** The machine code with its bf16 kernels, where this CPU runs them (AVX512-BF16). */
    private static MachineCode loadedWithBf16() {
        MachineCode code = loaded();
        Assumptions.assumeTrue(code.bf16(), "this CPU lacks avx512_bf16: the bf16 kernels cannot run here");
        return code;
    }

    private static boolean isLinuxX86() {
        return System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")
                && List.of("amd64", "x86_64").contains(System.getProperty("os.arch", ""));
    }

    private static MemorySegment bf16(Arena arena, Random random, int count) {
        MemorySegment segment = arena.allocate(2L * Math.max(1, count));
        for (int i = 0; i < count; i++) {
            segment.setAtIndex(BF16, i, MatVec.floatToBf16((float) random.nextGaussian()));
        }
        return segment;
    }

    private static MemorySegment f32(Arena arena, Random random, int count) {
        MemorySegment segment = arena.allocate(4L * count);
        for (int i = 0; i < count; i++) {
            segment.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) random.nextGaussian());
        }
        return segment;
    }

    private static float[] gaussian(Random random, int count) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextGaussian();
        }
        return values;
    }

    private static boolean onPath(String tool) {
        for (String folder : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!folder.isEmpty() && Files.isExecutable(Path.of(folder, tool))) {
                return true;
            }
        }
        return false;
    }

    private static void run(Path work, String... command) throws IOException, InterruptedException {
        run(work, null, command);
    }

    private static void run(Path work, Path output, String... command) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(output == null);
        if (output != null) {
            builder.redirectOutput(output.toFile());
        }
        Process process = builder.start();
        if (output == null) {
            process.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
        }
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), String.join(" ", command) + " did not finish");
        assertEquals(0, process.exitValue(), String.join(" ", command) + " failed");
    }
}
