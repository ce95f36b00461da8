package dev.crucible.accelerator.xla.pjrt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.testing.OracleVenv;
import dev.crucible.accelerator.xla.testing.StableHlo;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bridge against the real TPU plugin (libtpu 0.0.42.1 from the oracle venv) on a machine with no TPU: what
 * works without a chip is loading, the version, initialization, attributes, the client's clean refusal, and compiling
 * for the default topology, single core and SPMD over its 8 cores.
 */
class PjrtLibtpuTest {
    private static PjrtPlugin plugin;

    @BeforeAll
    static void load() {
        plugin = PjrtPlugin.load(OracleVenv.libtpu(), Map.of("TPU_SKIP_MDS_QUERY", "1"));
    }

    @Test
    void reportsItsApiVersionAndTableSize() {
        assertEquals("0.112", plugin.apiVersion());
        assertEquals(1144, plugin.apiStructSize(), "138 function slots after the 40-byte header");
    }

    /**
     * libtpu answers a call whose struct_size is too small with "Unexpected PJRT_X_Args size: expected N": that
     * names the function behind each slot (so the slot numbers are right) and the size it needs (which ours must
     * cover). Only the two void functions cannot be asked.
     */
    @Test
    void everySlotIsTheFunctionWeThinkAndOurStructsAreLargeEnough() {
        plugin.initialize();
        Pattern answer = Pattern.compile("Unexpected (\\w+) size: expected (\\d+), got 8");
        PjrtApi api = plugin.api();
        for (Slot slot : Slot.values()) {
            if (slot == Slot.ERROR_DESTROY || slot == Slot.ERROR_MESSAGE) {
                continue;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment args = arena.allocate(Math.max(64, slot.args.stride()), 8);
                args.set(ValueLayout.JAVA_LONG, 0, 8);
                MemorySegment error = api.invoke(slot, args);
                assertTrue(!error.equals(MemorySegment.NULL), slot + " accepted an 8-byte struct");
                PjrtException e = api.takeError(slot.functionName(), error);
                Matcher m = answer.matcher(e.pluginMessage());
                assertTrue(m.find(), slot + ": " + e.pluginMessage());
                String named = m.group(1).replaceFirst("_Args$", "");
                assertTrue(named.equalsIgnoreCase(slot.functionName()), slot + " is " + named + " in libtpu");
                long expected = Long.parseLong(m.group(2));
                assertTrue(expected <= slot.args.size(), slot + ": libtpu needs " + expected + " bytes, we lay out "
                        + slot.args.size());
            }
        }
    }

    @Test
    void initializesAndListsItsAttributes() {
        plugin.initialize();
        plugin.initialize(); // once per process; the second call does nothing
        List<NamedValue> attributes = plugin.attributes();
        System.out.println("libtpu attributes: " + attributes.stream().map(a -> a.name() + "=" + a.valueText()).toList());
        assertTrue(attributes.contains(new NamedValue.Int64("xla_version", 2)), attributes.toString());
        assertTrue(attributes.contains(new NamedValue.Int64List("stablehlo_current_version", List.of(1L, 17L, 0L))),
                attributes.toString());
        assertTrue(attributes.contains(new NamedValue.Int64List("stablehlo_minimum_version", List.of(0L, 9L, 0L))),
                attributes.toString());
    }

    @Test
    void clientCreationWithoutAChipFailsWithTheCodeAndMessage() {
        PjrtException e = assertThrows(PjrtException.class, () -> plugin.createClient(List.of()).close());
        assertEquals("PJRT_Client_Create", e.function());
        assertEquals(PjrtException.NOT_FOUND, e.code());
        assertTrue(e.pluginMessage().contains("No jellyfish device found"), e.pluginMessage());
        assertEquals("PJRT_Client_Create failed: NOT_FOUND: " + e.pluginMessage(), e.getMessage());
    }

    @Test
    void theDefaultTopologyIsEightTpuCores() {
        try (PjrtTopology topology = plugin.createTopology("", List.of())) {
            assertEquals("tpu", topology.platformName());
            List<DeviceDescription> devices = topology.devices();
            System.out.println("libtpu default topology: " + topology.platformVersion() + ", " + devices);
            assertEquals(8, devices.size());
            assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), devices.stream().map(DeviceDescription::id).sorted().toList());
        }
    }

    @Test
    void compilesADotAndAddForOneCore() {
        try (PjrtTopology topology = plugin.createTopology("", List.of())) {
            long start = System.nanoTime();
            try (PjrtExecutable executable = topology.compile(StableHlo.read("dot_add"), CompileOptions.singleDevice())) {
                report("dot_add, 1 core", start, executable);
                assertEquals(1, executable.numPartitions());
                assertEquals(1, executable.numOutputs());
                assertEquals(List.of(DType.F32), executable.outputDtypes());
                assertArrayEquals(new long[] {4, 16}, executable.outputShapes().getFirst());
                CompiledMemoryStats stats = executable.memoryStats().orElseThrow();
                // TPU layouts pad small arrays to whole tiles, so the figures are at least the dense sizes.
                assertTrue(stats.argumentBytes() >= 4 * (4 * 8 + 8 * 16 + 4 * 16), stats.toString());
                assertTrue(stats.outputBytes() >= 4 * 4 * 16, stats.toString());
                assertTrue(stats.generatedCodeBytes() > 0, stats.toString());
                // What --xla-cache keeps: the plugin's serialization, its buffer freed by the deleter it hands out.
                byte[] serialized = executable.serialize();
                System.out.println("libtpu serialized dot_add: " + serialized.length + " bytes");
                assertTrue(serialized.length > stats.generatedCodeBytes() / 2, serialized.length + " bytes");
            }
        }
    }

    @Test
    void compilesAnEightWaySpmdMatmulWithShardyAndWithGspmd() {
        try (PjrtTopology topology = plugin.createTopology("", List.of())) {
            for (var program : List.of(Map.entry("matmul_shardy8", CompileOptions.Partitioner.SHARDY),
                    Map.entry("matmul_gspmd8", CompileOptions.Partitioner.GSPMD))) {
                long start = System.nanoTime();
                try (PjrtExecutable executable = topology.compile(StableHlo.read(program.getKey()),
                        CompileOptions.spmd(8, program.getValue()))) {
                    report(program.getKey() + ", 8 partitions", start, executable);
                    assertEquals(8, executable.numPartitions());
                    assertArrayEquals(new long[] {8, 256}, executable.outputShapes().getFirst(), "one row block per core");
                    CompiledMemoryStats stats = executable.memoryStats().orElseThrow();
                    // Per core: an 8-row slice of x and all of w, and an 8-row slice of the product, all bf16 (these
                    // shapes fill whole TPU tiles, so nothing is padded).
                    assertEquals(2 * (8 * 128 + 128 * 256), stats.argumentBytes(), stats.toString());
                    assertEquals(2 * 8 * 256, stats.outputBytes(), stats.toString());
                }
            }
        }
    }

    @Test
    void shardyAnnotationsCompiledAsGspmdAreTheCompilersError() {
        try (PjrtTopology topology = plugin.createTopology("", List.of())) {
            PjrtException e = assertThrows(PjrtException.class, () -> topology.compile(StableHlo.read("matmul_shardy8"),
                    CompileOptions.spmd(8, CompileOptions.Partitioner.GSPMD)).close());
            assertEquals("PJRT_Compile", e.function());
            assertTrue(e.pluginMessage().contains("sdy"), e.pluginMessage());
        }
    }

    private static void report(String what, long startNanos, PjrtExecutable executable) {
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        System.out.printf("libtpu compile %s: %.2f s, %s, memory %s%n", what, seconds, executable.name(),
                executable.memoryStats().map(Object::toString).orElse("not offered"));
    }
}
