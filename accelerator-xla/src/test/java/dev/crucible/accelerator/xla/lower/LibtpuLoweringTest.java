package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.XlaBackend;
import dev.crucible.accelerator.xla.XlaBackends;
import dev.crucible.accelerator.xla.exec.CompileOnlyExecutor;
import dev.crucible.accelerator.xla.exec.TopologyCompiler;
import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.accelerator.xla.testing.OracleVenv;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A real TPU compiler accepts the programs the backend runs: libtpu compiles the prefill, first-token and decode-step
 * programs (and the forward pass) of stories260k and tiny-qwen3 for one core, and split with FSDP over all eight
 * cores of its default topology, written for Shardy and for GSPMD.
 */
class LibtpuLoweringTest {

    @ParameterizedTest
    @CsvSource({"stories260k, 1, NONE", "stories260k, 8, SHARDY", "stories260k, 8, GSPMD",
            "tiny-qwen3, 1, NONE", "tiny-qwen3, 8, SHARDY", "tiny-qwen3, 8, GSPMD"})
    void libtpuCompilesEveryProgram(String name, int devices, Partitioner partitioner) {
        PjrtPlugin plugin = XlaBackend.loadPlugin(XlaBackends.probeWithSitePackages(OracleVenv.libtpu().getParent().getParent()));
        GoldenFixture fixture = GoldenFixture.load(name);
        Sharding sharding = devices == 1 ? Sharding.SINGLE : Sharding.fsdp(devices, partitioner);
        List<TopologyCompiler.Report> reports = new ArrayList<>();
        try (TopologyCompiler compiler = TopologyCompiler.open(plugin, "");
             Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            CompileOnlyExecutor executor = new CompileOnlyExecutor(compiler.platform(), compiler.deviceCount(), program -> {
                TopologyCompiler.Report report = compiler.compile(program);
                reports.add(report);
                return report.memory();
            });
            List<LoweredProgram> programs = ModelLowering.lower(fixture.config(), checkpoint, DType.BF16, sharding,
                    new ModelLowering.Shape(4, 16, 8), executor);
            List<String> names = programs.stream().map(LoweredProgram::name).toList();
            assertTrue(names.containsAll(List.of("forward", "prefill", "decode_step")), names.toString());
            assertEquals(reports.size(), programs.size(), "each distinct program compiled once");
            for (TopologyCompiler.Report report : reports) {
                assertEquals(devices, report.partitions(), report.toString());
                CompiledMemoryStats memory = report.memory().orElseThrow();
                assertTrue(memory.argumentBytes() > 0, report.toString());
            }
            for (int i = 0; i < programs.size(); i++) {
                TopologyCompiler.Report report = reports.get(i);
                System.out.printf("libtpu %s %s %d core(s) %s: %s compiled in %.2f s; per core: arguments %d B, "
                        + "outputs %d B, temporaries %d B, aliased %d B%n", name, sharding.strategy(), devices,
                        partitioner, programs.get(i).name(), report.compileTime().toNanos() / 1e9,
                        report.memory().map(CompiledMemoryStats::argumentBytes).orElse(-1L),
                        report.memory().map(CompiledMemoryStats::outputBytes).orElse(-1L),
                        report.memory().map(CompiledMemoryStats::temporaryBytes).orElse(-1L),
                        report.memory().map(CompiledMemoryStats::aliasBytes).orElse(-1L));
            }
        }
    }

    /**
     * libtpu compiles the quantized programs too (s8 and u8 parameters, converts, gathers from the codebook), and
     * their compiled argument memory is the quantized weights': smaller than the dense model's by about the
     * projections' share, on one core and split over eight.
     */
    @ParameterizedTest
    @CsvSource({"int8, 1, NONE", "int4, 1, NONE", "int8, 8, SHARDY"})
    void libtpuCompilesQuantizedProgramsWithSmallerArguments(String method, int devices, Partitioner partitioner) {
        PjrtPlugin plugin = XlaBackend.loadPlugin(XlaBackends.probeWithSitePackages(OracleVenv.libtpu().getParent().getParent()));
        GoldenFixture fixture = GoldenFixture.load("tiny-qwen3");
        Sharding sharding = devices == 1 ? Sharding.SINGLE : Sharding.fsdp(devices, partitioner);
        try (TopologyCompiler compiler = TopologyCompiler.open(plugin, "");
             Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            Map<String, CompiledMemoryStats> dense = compile(compiler, fixture, checkpoint, QuantizationConfig.NONE,
                    sharding);
            Map<String, CompiledMemoryStats> quantized = compile(compiler, fixture, checkpoint,
                    QuantizationConfig.parse(method, null, null, null, false), sharding);
            assertEquals(dense.keySet(), quantized.keySet());
            for (String program : dense.keySet()) {
                long denseBytes = dense.get(program).argumentBytes();
                long quantizedBytes = quantized.get(program).argumentBytes();
                System.out.printf("libtpu tiny-qwen3 %s %d core(s): %s arguments %d B per core (dense bf16 %d B, "
                        + "%.2f of it)%n", method, devices, program, quantizedBytes, denseBytes,
                        (double) quantizedBytes / denseBytes);
                assertTrue(quantizedBytes < denseBytes, program + ": " + quantizedBytes + " >= " + denseBytes);
            }
        }
    }

    private static Map<String, CompiledMemoryStats> compile(TopologyCompiler compiler, GoldenFixture fixture,
                                                            Checkpoint checkpoint, QuantizationConfig quantization,
                                                            Sharding sharding) {
        List<TopologyCompiler.Report> reports = new ArrayList<>();
        CompileOnlyExecutor executor = new CompileOnlyExecutor(compiler.platform(), compiler.deviceCount(), program -> {
            TopologyCompiler.Report report = compiler.compile(program);
            reports.add(report);
            return report.memory();
        });
        List<LoweredProgram> programs = ModelLowering.lower(fixture.config(), checkpoint, DType.BF16, quantization,
                sharding, new ModelLowering.Shape(4, 16, 8), executor);
        assertEquals(reports.size(), programs.size(), "each distinct program compiled once");
        Map<String, CompiledMemoryStats> memory = new LinkedHashMap<>();
        for (int i = 0; i < programs.size(); i++) {
            memory.put(programs.get(i).name(), reports.get(i).memory().orElseThrow());
        }
        return memory;
    }
}
