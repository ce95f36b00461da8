package dev.crucible.accelerator.xla.exec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.pjrt.ClientOptions;
import dev.crucible.accelerator.xla.pjrt.CompileOptions;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.accelerator.xla.testing.OracleVenv;
import dev.crucible.accelerator.xla.testing.StubPjrtPlugin;
import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import java.nio.file.Files;
import java.nio.file.Path;
import dev.crucible.accelerator.xla.lower.ProgramCache;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The product executor through its interface, on the stub plugin (execution) and on libtpu (what a user sees when
 * there is no chip). Every failure a user can act on is one line.
 */
class PjrtExecutorTest {
    private static final long[] SHAPE = {2, 3};

    private static PjrtPlugin stub() {
        return PjrtPlugin.load(StubPjrtPlugin.require());
    }

    private static HostTensor f32(Arena arena, String name, float... values) {
        return new HostTensor(name, DType.F32, SHAPE, arena.allocateFrom(ValueLayout.JAVA_FLOAT, values));
    }

    private static Program stubProgram(String op, Map<Integer, Integer> donations, CompileOptions options) {
        TensorSpec spec = new TensorSpec("a", DType.F32, SHAPE);
        return new Program(op, "stub.op=" + op + " stub.shape=2x3", new ProgramManifest(List.of(spec, spec), List.of(spec),
                donations), options);
    }

    @Test
    void uploadExecuteDonateDownload() {
        long live = -1;
        try (Arena arena = Arena.ofConfined(); PjrtExecutor xla = PjrtExecutor.open(stub(), List.of())) {
            live = StubPjrtPlugin.liveObjects();
            assertEquals("stub", xla.platform());
            assertEquals(2, xla.deviceCount());
            CompiledProgram accumulate = xla.compile(stubProgram("accumulate", Map.of(0, 0), CompileOptions.spmd(2,
                    CompileOptions.Partitioner.GSPMD)));
            assertTrue(accumulate.memoryStats().isEmpty());
            DeviceArray cache0 = xla.upload(f32(arena, "c", 1, 1, 1, 1, 1, 1), 0);
            DeviceArray cache1 = xla.upload(f32(arena, "c", 2, 2, 2, 2, 2, 2), 1);
            DeviceArray x0 = xla.upload(f32(arena, "x", 1, 2, 3, 4, 5, 6), 0);
            DeviceArray x1 = xla.upload(f32(arena, "x", 1, 2, 3, 4, 5, 6), 1);
            List<List<DeviceArray>> out = xla.execute(accumulate, List.of(List.of(cache0, x0), List.of(cache1, x1)));
            assertTrue(cache0.isReleased() && cache1.isReleased(), "the manifest donates argument 0");
            assertFalse(x0.isReleased());
            assertArrayEquals(new float[] {2, 3, 4, 5, 6, 7}, xla.download(out.get(0).getFirst(), "c", arena).toFloatArray());
            assertArrayEquals(new float[] {3, 4, 5, 6, 7, 8}, xla.download(out.get(1).getFirst(), "c", arena).toFloatArray());
            IllegalArgumentException swapped = assertThrows(IllegalArgumentException.class,
                    () -> xla.execute(accumulate, List.of(List.of(x1, x1), List.of(x0, x0))));
            assertEquals("accumulate: argument list 0 holds an array on device 1", swapped.getMessage());
            // Left open on purpose: closing the executor destroys what its holders forgot.
        }
        assertTrue(live >= 0);
        assertEquals(live - 1, StubPjrtPlugin.liveObjects(), "the client and all it made are gone");
    }

    /** {@code --xla-cache} on the product path: a second client loads what the first compiled, and it runs. */
    @Test
    void aProgramCacheFolderServesALaterClient(@TempDir Path folder) throws Exception {
        Program add = stubProgram("add", Map.of(), CompileOptions.singleDevice());
        List<String> notes = new java.util.ArrayList<>();
        try (PjrtExecutor xla = PjrtExecutor.open(stub(), List.of());
             ProgramCache programs = new ProgramCache(xla, Optional.of(folder), notes::add)) {
            programs.get(add);
            assertFalse(programs.compiles().getFirst().fromDisk());
        }
        try (Stream<Path> files = Files.list(folder)) {
            assertEquals(1, files.count(), "one serialized program");
        }
        try (Arena arena = Arena.ofConfined(); PjrtExecutor xla = PjrtExecutor.open(stub(), List.of());
             ProgramCache programs = new ProgramCache(xla, Optional.of(folder), notes::add)) {
            CompiledProgram loaded = programs.get(add);
            assertTrue(programs.compiles().getFirst().fromDisk(), programs.compiles().toString());
            DeviceArray a = xla.upload(f32(arena, "a", 1, 2, 3, 4, 5, 6), 0);
            DeviceArray b = xla.upload(f32(arena, "b", 1, 1, 1, 1, 1, 1), 0);
            DeviceArray sum = xla.execute(loaded, List.of(List.of(a, b))).getFirst().getFirst();
            assertArrayEquals(new float[] {2, 3, 4, 5, 6, 7}, xla.download(sum, "s", arena).toFloatArray());
        }
        assertEquals(List.of(), notes);
    }

    @Test
    void runningOutOfDeviceMemoryIsOneLine() {
        try (Arena arena = Arena.ofConfined();
             PjrtExecutor xla = PjrtExecutor.open(stub(), ClientOptions.parse(ClientOptions.ENV, "memory_limit=16"))) {
            UserInputException e = assertThrows(UserInputException.class, () -> xla.upload(f32(arena, "x", 1, 2, 3, 4, 5, 6), 0));
            assertEquals("out of device memory: Out of memory while trying to allocate 24 bytes on stub device 0 "
                    + "(0 of 16 bytes in use)", e.getMessage());
        }
        try (Arena arena = Arena.ofConfined(); PjrtExecutor xla = PjrtExecutor.open(stub(), List.of());
             CompiledProgram failing = xla.compile(stubProgram("fail_execute", Map.of(), CompileOptions.singleDevice()));
             DeviceArray a = xla.upload(f32(arena, "a", 1, 2, 3, 4, 5, 6), 0)) {
            UserInputException e = assertThrows(UserInputException.class, () -> xla.execute(failing, List.of(List.of(a, a))));
            assertEquals("out of device memory: Out of memory while trying to allocate 4096 bytes for the stub's temporaries",
                    e.getMessage());
        }
    }

    @Test
    void optionsThePluginRejectsAndNoDeviceAreOneLine() {
        UserInputException rejected = assertThrows(UserInputException.class, () -> PjrtExecutor.open(stub(),
                ClientOptions.parse(ClientOptions.ENV, "preallocate=false;no_such_option=1")));
        assertEquals("the PJRT plugin libstub_pjrt_plugin.so rejected the client options preallocate=false;no_such_option=1"
                + " (CRUCIBLE_PJRT_OPTIONS): Unexpected option name or type passed to PJRT_Client_Create: no_such_option"
                + " (type 1)", rejected.getMessage());
        UserInputException none = assertThrows(UserInputException.class,
                () -> PjrtExecutor.open(stub(), ClientOptions.parse(ClientOptions.ENV, "num_devices=0")));
        assertEquals("no device: the PJRT plugin libstub_pjrt_plugin.so found none (stub plugin: no devices "
                + "(num_devices must be 1 to 8))", none.getMessage());
    }

    @Test
    void libtpuWithoutAChipSaysNoTpuInOneLine() {
        PjrtPlugin libtpu = PjrtPlugin.load(OracleVenv.libtpu(), Map.of("TPU_SKIP_MDS_QUERY", "1"));
        UserInputException e = assertThrows(UserInputException.class, () -> PjrtExecutor.open(libtpu, List.of()));
        assertEquals("no TPU: libtpu found no TPU chip on this machine (TPU initialization failed: No jellyfish device "
                + "found.)", e.getMessage());
    }
}
