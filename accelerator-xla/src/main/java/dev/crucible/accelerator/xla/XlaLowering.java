package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.exec.CompileOnlyExecutor;
import dev.crucible.accelerator.xla.exec.TopologyCompiler;
import dev.crucible.accelerator.xla.lower.LoweredProgram;
import dev.crucible.accelerator.xla.lower.ManifestJson;
import dev.crucible.accelerator.xla.lower.ModelLowering;
import dev.crucible.accelerator.xla.lower.Sharding;
import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats;
import dev.crucible.accelerator.xla.pjrt.PjrtException;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.LoweringReport;
import dev.crucible.api.backend.LoweringRequest;
import dev.crucible.api.backend.Probe;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code runner lower} for the xla backend: the programs a run of the model at the requested shape compiles, found
 * by tracing the backend's own code on an executor that only compiles, written as StableHLO with a manifest each,
 * and compiled for a TPU topology where the plugin can do that without a chip (libtpu can).
 */
final class XlaLowering {
    private XlaLowering() {
    }

    static LoweringReport lower(LoweringRequest request, Probe probe) {
        if (!request.strategy().equals("fsdp")) {
            throw new UserInputException("--strategy '" + request.strategy() + "' is not one of: fsdp");
        }
        Sharding sharding = Sharding.fsdp(request.devices(), Partitioner.SHARDY);
        ModelLowering.Shape shape = new ModelLowering.Shape(request.batch(), request.promptLength(), request.newTokens());
        Optional<TopologyCompiler> compiler = Optional.empty();
        String notCompiled = null;
        try {
            compiler = Optional.of(openCompiler(probe, request.topology()));
        } catch (UserInputException e) {
            if (!request.topology().isEmpty()) {
                throw e;
            }
            notCompiled = e.getMessage();
        }
        try {
            Map<String, TopologyCompiler.Report> compiles = new HashMap<>();
            int devices = request.devices();
            String target;
            CompileOnlyExecutor executor;
            if (compiler.isPresent()) {
                TopologyCompiler topology = compiler.get();
                if (devices > topology.deviceCount()) {
                    throw new UserInputException("--devices " + devices + " is more than the " + topology.deviceCount()
                            + " devices of the " + topology.platform() + " topology"
                            + (request.topology().isEmpty() ? "" : " '" + request.topology() + "'"));
                }
                target = topology.platform() + " (" + topology.deviceKind() + "), " + devices + " of "
                        + topology.deviceCount() + " devices";
                executor = new CompileOnlyExecutor(topology.platform(), topology.deviceCount(), program -> {
                    TopologyCompiler.Report report = topology.compile(program);
                    compiles.put(program.stablehlo(), report);
                    return report.memory();
                });
            } else {
                target = devices + (devices == 1 ? " device" : " devices");
                executor = new CompileOnlyExecutor("none", devices, program -> Optional.empty());
            }
            List<LoweredProgram> programs = ModelLowering.lower(request.config(), request.checkpoint(),
                    request.dtype(), request.quantization(), sharding, shape, executor);
            List<LoweringReport.Program> entries = new ArrayList<>();
            for (LoweredProgram program : programs) {
                String file = program.name() + ".mlir";
                String manifest = program.name() + ".manifest.json";
                write(request.folder().resolve(file), program.program().stablehlo());
                write(request.folder().resolve(manifest), ManifestJson.write(program, file));
                TopologyCompiler.Report compiled = compiles.get(program.program().stablehlo());
                entries.add(new LoweringReport.Program(program.name(), file, manifest, program.arguments().size(),
                        program.sharding().partitions(),
                        compiled == null ? Optional.empty() : Optional.of(compiled.compileTime()),
                        compiled == null ? Optional.empty() : compiled.memory().map(XlaLowering::memory)));
            }
            return new LoweringReport(target, Optional.ofNullable(notCompiled), entries);
        } finally {
            compiler.ifPresent(TopologyCompiler::close);
        }
    }

    /** A topology of the found plugin, or why there is none: a one-line reason the report shows. */
    private static TopologyCompiler openCompiler(Probe probe, String topology) {
        if (!probe.details().containsKey("plugin")) {
            throw new UserInputException("not compiled: " + probe.reason()
                    + " (libtpu compiles for a TPU topology without a chip: pip install libtpu)");
        }
        PjrtPlugin plugin = XlaBackend.loadPlugin(probe);
        try {
            return TopologyCompiler.open(plugin, topology);
        } catch (PjrtException e) {
            String name = topology.isEmpty() ? "its default topology" : "the topology '" + topology + "'";
            throw new UserInputException("not compiled: the PJRT plugin " + plugin.library().getFileName()
                    + " cannot describe " + name + " without a device: " + e.pluginMessageLine(), e);
        }
    }

    private static LoweringReport.DeviceMemory memory(CompiledMemoryStats stats) {
        return new LoweringReport.DeviceMemory(stats.generatedCodeBytes(), stats.argumentBytes(), stats.outputBytes(),
                stats.aliasBytes(), stats.temporaryBytes());
    }

    /** The caller stages the whole folder, so a plain write is enough; its failure reaches the caller as it is. */
    private static void write(Path file, String text) {
        try {
            Files.writeString(file, text, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
