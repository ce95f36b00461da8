package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.Program;
import dev.crucible.accelerator.xla.exec.TensorSpec;
import java.util.List;
import java.util.Objects;

/**
 * A program as the tracer lowered it: the {@link Program} an executor compiles (its manifest in per-device shapes)
 * and, for the manifest file, every argument's and result's whole shape and how it lies over the devices.
 */
public record LoweredProgram(Program program, List<TensorSpec> arguments, List<Layout> argumentLayouts,
                             List<TensorSpec> results, List<Layout> resultLayouts, Sharding sharding) {
    public LoweredProgram {
        Objects.requireNonNull(program, "program is null");
        arguments = List.copyOf(arguments);
        argumentLayouts = List.copyOf(argumentLayouts);
        results = List.copyOf(results);
        resultLayouts = List.copyOf(resultLayouts);
        Objects.requireNonNull(sharding, "sharding is null");
        if (arguments.size() != argumentLayouts.size() || results.size() != resultLayouts.size()) {
            throw new IllegalArgumentException("one layout per argument and per result");
        }
    }

    public String name() {
        return program.name();
    }
}
