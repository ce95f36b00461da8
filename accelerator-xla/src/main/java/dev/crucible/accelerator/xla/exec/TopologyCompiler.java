package dev.crucible.accelerator.xla.exec;

import dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats;
import dev.crucible.accelerator.xla.pjrt.PjrtExecutable;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.accelerator.xla.pjrt.PjrtTopology;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Compiles programs for a device topology with no device present (libtpu can, through
 * {@code PJRT_TopologyDescription_Create} and {@code PJRT_Compile}): whether a program compiles for a TPU slice, how
 * long that takes and what it needs of each device's memory, known before renting one.
 */
public final class TopologyCompiler implements AutoCloseable {
    /** One program's compile: its wall time and the compiler's per-device memory figures (where offered). */
    public record Report(String program, int partitions, Duration compileTime, Optional<CompiledMemoryStats> memory) { }

    private final PjrtTopology topology;

    private TopologyCompiler(PjrtTopology topology) {
        this.topology = topology;
    }

    /** The plugin's topology {@code name}; an empty name is its default (libtpu: 8 cores). */
    public static TopologyCompiler open(PjrtPlugin plugin, String name) {
        return new TopologyCompiler(plugin.createTopology(name, List.of()));
    }

    public String platform() {
        return topology.platformName();
    }

    /** The kind of its devices, e.g. {@code TPU v4}. */
    public String deviceKind() {
        return topology.devices().getFirst().kind();
    }

    public int deviceCount() {
        return topology.devices().size();
    }

    /** Compiles {@code program} and forgets the executable; a program the compiler rejects throws its error. */
    public Report compile(Program program) {
        long start = System.nanoTime();
        try (PjrtExecutable executable = topology.compile(program.stablehlo(), program.compileOptions())) {
            Duration time = Duration.ofNanos(System.nanoTime() - start);
            return new Report(program.name(), executable.numPartitions(), time, executable.memoryStats());
        }
    }

    @Override
    public void close() {
        topology.close();
    }
}
