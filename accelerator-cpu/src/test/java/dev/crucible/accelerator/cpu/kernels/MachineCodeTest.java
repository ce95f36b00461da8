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
        String reason = MachineCode.unsupported(Set.of("avx512f", "avx512bw", "avx512vl", "bmi2"));
        assertEquals("this CPU lacks avx512_bf16", reason);
        assertNull(MachineCode.unsupported(Set.copyOf(MachineCode.REQUIRED_FLAGS)));
        MachineCode.Availability none = MachineCode.load(Set.of("avx2"));
        assertTrue(!none.available() && none.reason().contains("avx512f"), none.reason());
    }

    @Test
    void bf16RowsEqualsTheExactSumRoundedOnceForEveryTailAndBias() {
        MachineCode code = loaded();
        Random random = new Random(7);
        try (Arena arena = Arena.ofConfined()) {
            for (int in : new int[] {0, 1, 2, 31, 32, 33, 63, 64, 127, 128, 129, 255, 256, 300, 896, 1000}) {
                int rows = 5;
                MemorySegment w = bf16(arena, random, rows * in);
                MemorySegment x = bf16(arena, random, in);
                MemorySegment bias = bf16(arena, random, rows);
                for (boolean withBias : new boolean[] {false, true}) {
                    // One guard element on each side: nothing outside y may be written.
                    MemorySegment guarded = arena.allocate(2L * (rows + 2));
                    guarded.fill((byte) 0x5a);
                    MemorySegment y = guarded.asSlice(2, 2L * rows);
                    code.bf16Rows(w, x, y, withBias ? bias : null, in, rows);
                    assertEquals((short) 0x5a5a, guarded.getAtIndex(BF16, 0), "written before y, in " + in);
                    assertEquals((short) 0x5a5a, guarded.getAtIndex(BF16, rows + 1), "written after y, in " + in);
                    for (int n = 0; n < rows; n++) {
                        double exact = withBias ? MatVec.bf16ToFloat(bias.getAtIndex(BF16, n)) : 0;
                        double magnitude = Math.abs(exact);
                        for (int k = 0; k < in; k++) {
                            double product = (double) MatVec.bf16ToFloat(w.getAtIndex(BF16, (long) n * in + k))
                                    * MatVec.bf16ToFloat(x.getAtIndex(BF16, k));
                            exact += product;
                            magnitude += Math.abs(product);
                        }
                        float got = MatVec.bf16ToFloat(y.getAtIndex(BF16, n));
                        // One bfloat16 rounding of the result, plus float32 accumulation over in terms.
                        double allowed = Math.abs(exact) / 256 + magnitude * 1e-6 * Math.max(1, in / 32.0);
                        assertTrue(Math.abs(got - exact) <= allowed, "in " + in + " row " + n + " bias " + withBias
                                + ": " + got + " against " + exact);
                    }
                }
            }
        }
    }

    @Test
    void theBackendsOneRowBf16ProductsRunOnItAndAgreeWithLibtorch() {
        MachineCode code = loaded();
        VectorKernels kernels = new VectorKernels(2, List.of(DType.BF16), code);
        CountingKernels counted = new CountingKernels(kernels);
        Random random = new Random(3);
        try (TorchOps fast = new TorchOps("cpu", true, counted); TorchOps reference = new TorchOps("cpu", true)) {
            // The last shape's weights pass the size at which the product is split into tasks for both threads.
            for (int[] shape : new int[][] {{70, 33}, {896, 128}, {896, 4864}, {4864, 896}}) {
                int in = shape[0];
                int out = shape[1];
                try (TensorScope scope = reference.openScope()) {
                    Tensor x = reference.cast(reference.constant(gaussian(random, in), 1, in), DType.BF16);
                    Tensor w = reference.cast(reference.constant(gaussian(random, out * in), out, in), DType.BF16);
                    Tensor b = reference.cast(reference.constant(gaussian(random, out), out), DType.BF16);
                    int before = counted.calls("linear");
                    float[] expected = reference.readFloats(reference.linear(x, w, b));
                    float[] got = reference.readFloats(fast.linear(x, w, b));
                    assertEquals(before + 1, counted.calls("linear"), "the kernel ran");
                    for (int n = 0; n < out; n++) {
                        double scale = Math.max(1, Math.abs(expected[n]));
                        assertTrue(Math.abs(got[n] - expected[n]) <= 1.6e-2 * scale, in + " -> " + out + " output "
                                + n + ": " + got[n] + " against libtorch's " + expected[n]);
                    }
                }
            }
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
            assertThrows(IndexOutOfBoundsException.class, () -> code.bf16Rows(w, x, y, null, 64, 5));
            assertThrows(IndexOutOfBoundsException.class, () -> code.bf16Rows(w, x.asSlice(2), y, null, 64, 4));
            assertThrows(IndexOutOfBoundsException.class, () -> code.bf16Rows(w, x, y, y.asSlice(2), 64, 4));
            code.bf16Rows(w, x, y, y, 64, 4); // exactly long enough
        }
    }

    private static MachineCode loaded() {
        Set<String> flags = CpuFeatures.probe().flags();
        String unsupported = MachineCode.unsupported(flags);
        Assumptions.assumeTrue(unsupported == null, "the machine code cannot run here: " + unsupported);
        MachineCode.Availability availability = MachineCode.load(flags);
        assertTrue(availability.available(), availability.reason());
        return availability.code();
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
