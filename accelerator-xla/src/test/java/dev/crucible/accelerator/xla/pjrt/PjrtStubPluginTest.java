package dev.crucible.accelerator.xla.pjrt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.testing.StubPjrtPlugin;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Execution plumbing libtpu cannot show without a chip — buffers, executions, events, donation, failures in the
 * middle of a run, ownership — against the stub plugin of the test resources. Every test ends with the stub holding
 * no object the bridge forgot to destroy.
 */
class PjrtStubPluginTest {
    private static final long[] SHAPE = {2, 3};

    private PjrtPlugin plugin;
    private long liveBefore;
    private Arena arena;

    @BeforeEach
    void load() {
        plugin = PjrtPlugin.load(StubPjrtPlugin.require());
        plugin.initialize();
        liveBefore = StubPjrtPlugin.liveObjects();
        arena = Arena.ofConfined();
    }

    @AfterEach
    void nothingLeaks() {
        arena.close();
        assertEquals(liveBefore, StubPjrtPlugin.liveObjects(), "stub objects the bridge did not destroy");
    }

    private MemorySegment floats(float... values) {
        return arena.allocateFrom(ValueLayout.JAVA_FLOAT, values);
    }

    private static float[] floatsOf(MemorySegment segment) {
        return segment.toArray(ValueLayout.JAVA_FLOAT);
    }

    @Test
    void attributesOfEveryKindAreRead() {
        assertEquals(List.of(new NamedValue.Int64("xla_version", 2),
                new NamedValue.Int64List("stablehlo_current_version", List.of(1L, 17L, 0L)),
                new NamedValue.Text("stub", "yes"), new NamedValue.Float32("fraction", 0.5f),
                new NamedValue.Bool("flag", true)), plugin.attributes());
    }

    @Test
    void clientOptionsReachThePluginWithTheirTypes() {
        List<NamedValue> options = ClientOptions.parse(ClientOptions.ENV,
                "preallocate=false;memory_fraction=0.7;platform_name=stub;visible_devices=[0,1];num_devices=2");
        try (PjrtClient client = plugin.createClient(options)) {
            assertEquals("stub 0.112; options: preallocate=false memory_fraction=0.7 platform_name=\"stub\""
                    + " visible_devices=[0,1] num_devices=2", client.platformVersion());
            assertEquals("stub", client.platformName());
        }
    }

    @Test
    void anOptionThePluginDoesNotKnowIsItsToReject() {
        PjrtException e = assertThrows(PjrtException.class,
                () -> plugin.createClient(List.of(new NamedValue.Int64("no_such_option", 1))).close());
        assertEquals(PjrtException.INVALID_ARGUMENT, e.code());
        assertEquals("Unexpected option name or type passed to PJRT_Client_Create: no_such_option (type 1)",
                e.pluginMessage());
        PjrtException wrongType = assertThrows(PjrtException.class,
                () -> plugin.createClient(List.of(new NamedValue.Text("preallocate", "false"))).close());
        assertTrue(wrongType.pluginMessage().contains("preallocate (type 0)"), wrongType.pluginMessage());
    }

    @Test
    void devicesAndTheirMemory() {
        try (PjrtClient client = plugin.createClient(List.of())) {
            List<PjrtDevice> devices = client.addressableDevices();
            assertEquals(List.of(0, 1), devices.stream().map(PjrtDevice::id).toList());
            PjrtDevice first = devices.getFirst();
            assertEquals("stub device", first.kind());
            assertTrue(first.addressable());
            assertEquals(List.of(new PjrtDevice.Memory(0, "device")), first.memories());
            DeviceMemoryStats empty = first.memoryStats().orElseThrow();
            assertEquals(0, empty.bytesInUse());
            assertEquals(1 << 20, empty.bytesLimit().orElseThrow());
            try (PjrtBuffer buffer = client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, first)) {
                assertEquals(24, first.memoryStats().orElseThrow().bytesInUse());
                assertEquals(24, buffer.onDeviceSizeInBytes());
            }
            assertEquals(0, first.memoryStats().orElseThrow().bytesInUse());
        }
    }

    @Test
    void anArrayGoesUpAndComesBackUnchanged() {
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtBuffer buffer = client.upload(floats(1, -2, 3.5f, 4, 5, 6), DType.F32, SHAPE, client.addressableDevices().get(1))) {
            assertEquals(DType.F32, buffer.dtype());
            assertArrayEquals(SHAPE, buffer.shape());
            assertEquals(1, buffer.device().id());
            assertArrayEquals(new float[] {1, -2, 3.5f, 4, 5, 6}, floatsOf(buffer.toHost(arena)));
        }
    }

    /** What {@code --xla-cache} keeps: serialized by one client, loaded by another, run to the same result. */
    @Test
    void aSerializedExecutableLoadsOnAnotherClientAndRuns() {
        byte[] serialized;
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtLoadedExecutable add = client.compile("// stub.op=add stub.shape=2x3", CompileOptions.singleDevice());
             PjrtExecutable compiled = add.executable()) {
            long beforeSerialize = StubPjrtPlugin.liveObjects();
            serialized = compiled.serialize();
            assertEquals(beforeSerialize, StubPjrtPlugin.liveObjects(), "the plugin's copy freed by its deleter");
        }
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtLoadedExecutable add = client.deserialize(serialized)) {
            PjrtDevice device = client.addressableDevices().getFirst();
            try (PjrtBuffer a = client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, device);
                 PjrtBuffer b = client.upload(floats(10, 20, 30, 40, 50, 60), DType.F32, SHAPE, device);
                 PjrtBuffer sum = add.execute(List.of(List.of(a, b)), Set.of()).getFirst().getFirst()) {
                assertArrayEquals(new float[] {11, 22, 33, 44, 55, 66}, floatsOf(sum.toHost(arena)));
            }
            PjrtException torn = assertThrows(PjrtException.class,
                    () -> client.deserialize(new byte[] {1, 2, 3}).close());
            assertEquals(PjrtException.INVALID_ARGUMENT, torn.code());
            assertEquals("stub: 3 bytes are not a serialized stub executable", torn.pluginMessage());
        }
    }

    @Test
    void executesAndAnswersWhatItCompiled() {
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtLoadedExecutable add = client.compile("// stub.op=add stub.shape=2x3", CompileOptions.singleDevice())) {
            PjrtDevice device = client.addressableDevices().getFirst();
            try (PjrtExecutable compiled = add.executable()) {
                assertEquals("add", compiled.name());
                assertEquals(1, compiled.numPartitions());
                assertEquals(1, compiled.numOutputs());
                assertEquals(List.of(DType.F32), compiled.outputDtypes());
                assertArrayEquals(SHAPE, compiled.outputShapes().getFirst());
                assertTrue(compiled.memoryStats().isEmpty(), "the stub answers UNIMPLEMENTED: not offered");
            }
            try (PjrtBuffer a = client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, device);
                 PjrtBuffer b = client.upload(floats(10, 20, 30, 40, 50, 60), DType.F32, SHAPE, device)) {
                List<List<PjrtBuffer>> out = add.execute(List.of(List.of(a, b)), Set.of());
                try (PjrtBuffer sum = out.getFirst().getFirst()) {
                    assertArrayEquals(new float[] {11, 22, 33, 44, 55, 66}, floatsOf(sum.toHost(arena)));
                }
                assertFalse(a.isClosed());
            }
        }
    }

    @Test
    void aDonatedArgumentIsConsumedAndOneKeptIsNot() {
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtLoadedExecutable accumulate = client.compile("stub.op=accumulate stub.shape=2x3", CompileOptions.singleDevice())) {
            PjrtDevice device = client.addressableDevices().getFirst();
            PjrtBuffer cache = client.upload(floats(1, 1, 1, 1, 1, 1), DType.F32, SHAPE, device);
            try (PjrtBuffer step = client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, device)) {
                // Donated: the output takes over the cache's memory (the device never holds a third array) and the
                // cache is released.
                assertEquals(48, device.memoryStats().orElseThrow().peakBytesInUse().orElseThrow());
                try (PjrtBuffer next = accumulate.execute(List.of(List.of(cache, step)), Set.of(0)).getFirst().getFirst()) {
                    assertEquals(48, device.memoryStats().orElseThrow().peakBytesInUse().orElseThrow(), "no copy made");
                    assertTrue(cache.isClosed());
                    IllegalStateException used = assertThrows(IllegalStateException.class, cache::isDeleted);
                    assertTrue(used.getMessage().contains("donated"), used.getMessage());
                    assertArrayEquals(new float[] {2, 3, 4, 5, 6, 7}, floatsOf(next.toHost(arena)));

                    // Kept: the plugin is told not to donate, so the argument survives with its values.
                    try (PjrtBuffer copy = accumulate.execute(List.of(List.of(next, step)), Set.of()).getFirst().getFirst()) {
                        assertFalse(next.isClosed());
                        assertFalse(next.isDeleted());
                        assertEquals(72, device.memoryStats().orElseThrow().peakBytesInUse().orElseThrow());
                        assertArrayEquals(new float[] {2, 3, 4, 5, 6, 7}, floatsOf(next.toHost(arena)));
                        assertArrayEquals(new float[] {3, 5, 7, 9, 11, 13}, floatsOf(copy.toHost(arena)));
                    }
                }
            }
            cache.close(); // closing a donated buffer again is harmless
        }
    }

    @Test
    void anExecutionThatFailsThrowsThePluginsCodeAndMessage() {
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtLoadedExecutable failing = client.compile("stub.op=fail_execute", CompileOptions.singleDevice())) {
            PjrtDevice device = client.addressableDevices().getFirst();
            try (PjrtBuffer a = client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, device)) {
                PjrtException e = assertThrows(PjrtException.class, () -> failing.execute(List.of(List.of(a, a)), Set.of()));
                assertEquals("PJRT_LoadedExecutable_Execute", e.function());
                assertEquals(PjrtException.RESOURCE_EXHAUSTED, e.code());
                assertEquals("Out of memory while trying to allocate 4096 bytes for the stub's temporaries", e.pluginMessage());
            }
        }
    }

    @Test
    void aDeviceFailingInTheMiddleOfAnSpmdRunLeavesNothingBehind() {
        try (PjrtClient client = plugin.createClient(List.of());
             PjrtLoadedExecutable failing = client.compile("stub.op=fail_on_device stub.shape=2x3",
                     CompileOptions.spmd(2, CompileOptions.Partitioner.SHARDY))) {
            assertEquals(2, failing.devices().size());
            List<List<PjrtBuffer>> arguments = client.addressableDevices().stream()
                    .map(d -> List.of(client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, d),
                            client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, d)))
                    .toList();
            long live = StubPjrtPlugin.liveObjects();
            PjrtException e = assertThrows(PjrtException.class, () -> failing.execute(arguments, Set.of()));
            assertEquals(PjrtException.INTERNAL, e.code());
            assertEquals("stub device 1 halted in the middle of the run", e.pluginMessage());
            assertEquals(live, StubPjrtPlugin.liveObjects(), "outputs, events and errors of the failed run destroyed");
            arguments.forEach(list -> list.forEach(PjrtBuffer::close));
        }
    }

    @Test
    void closingTheClientDestroysWhatItsHoldersLeftOpenFirst() {
        PjrtClient client = plugin.createClient(List.of());
        PjrtDevice device = client.addressableDevices().getFirst();
        PjrtBuffer left = client.upload(floats(1, 2, 3, 4, 5, 6), DType.F32, SHAPE, device);
        PjrtLoadedExecutable alsoLeft = client.compile("stub.op=add", CompileOptions.singleDevice());
        // The stub refuses to destroy a client whose buffers or executables live, so this passes only if the
        // children go first.
        client.close();
        assertTrue(left.isClosed());
        assertTrue(alsoLeft.isClosed());
        assertThrows(IllegalStateException.class, device::memoryStats, "a device does not outlive its client");
        client.close();
    }

    @Test
    void argumentStructsAreAsLargeAsTheHeaderSays() {
        // The sizes PJRT_STRUCT_SIZE gives for API 0.112, from compiling the header with gcc (offsetof the last field
        // plus its size); the libtpu test checks the same structs against the real plugin.
        assertEquals(88, Slot.CLIENT_CREATE.args.size());
        assertEquals(120, Slot.CLIENT_BUFFER_FROM_HOST_BUFFER.args.size());
        assertEquals(80, Slot.LOADED_EXECUTABLE_EXECUTE.args.size());
        assertEquals(144, Slot.EXECUTE_OPTIONS.size());
        assertEquals(56, Slot.BUFFER_TO_HOST_BUFFER.args.size());
        assertEquals(185, Slot.DEVICE_MEMORY_STATS.args.size());
        assertEquals(144, Slot.EXECUTABLE_GET_COMPILED_MEMORY_STATS.args.size());
        assertEquals(64, Slot.COMPILE.args.size());
        assertEquals(56, Slot.NAMED_VALUE.size());
        assertEquals(48, Slot.PROGRAM.size());
        assertEquals(25, Slot.BUFFER_IS_DELETED.args.size());
        assertEquals(28, Slot.ERROR_GET_CODE.args.size());
    }
}
