package dev.crucible.accelerator.xla.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.XlaBackends;
import dev.crucible.accelerator.xla.pjrt.CompileOptions;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.accelerator.xla.testing.OracleVenv;
import dev.crucible.accelerator.xla.testing.StableHlo;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.tensor.DType;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The path {@code runner lower} takes: detection finds libtpu by path, set-up loads it, programs compile chipless. */
class TopologyCompilerTest {
    @Test
    void theFoundLibtpuCompilesAProgramForItsDefaultTopology() {
        Probe probe = XlaBackends.probeWithSitePackages(OracleVenv.libtpu().getParent().getParent());
        assertEquals("libtpu found, no TPU chip: compile-only", probe.reason());
        PjrtPlugin plugin = dev.crucible.accelerator.xla.XlaBackend.loadPlugin(probe);
        assertEquals("0.112", plugin.apiVersion());
        Program program = new Program("dot_add", StableHlo.read("dot_add"), new ProgramManifest(
                List.of(new TensorSpec("x", DType.F32, new long[] {4, 8}), new TensorSpec("w", DType.F32, new long[] {8, 16}),
                        new TensorSpec("b", DType.F32, new long[] {4, 16})),
                List.of(new TensorSpec("y", DType.F32, new long[] {4, 16}))), CompileOptions.singleDevice());
        try (TopologyCompiler compiler = TopologyCompiler.open(plugin, "")) {
            assertEquals("tpu", compiler.platform());
            assertEquals(8, compiler.deviceCount());
            TopologyCompiler.Report report = compiler.compile(program);
            System.out.println("topology compile: " + report);
            assertEquals(1, report.partitions());
            assertTrue(report.compileTime().toNanos() > 0);
            assertTrue(report.memory().orElseThrow().outputBytes() >= 4 * 4 * 16);
        }
    }
}
