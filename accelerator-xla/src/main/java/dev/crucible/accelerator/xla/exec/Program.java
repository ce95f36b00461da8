package dev.crucible.accelerator.xla.exec;

import dev.crucible.accelerator.xla.pjrt.CompileOptions;
import java.util.Objects;

/**
 * A StableHLO program (MLIR text, static shapes), its manifest and how it is partitioned: everything an
 * {@link XlaExecutor} or a topology compile needs, and what {@code runner lower} writes out.
 */
public record Program(String name, String stablehlo, ProgramManifest manifest, CompileOptions compileOptions) {
    public Program {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(stablehlo, "stablehlo is null");
        Objects.requireNonNull(manifest, "manifest is null");
        Objects.requireNonNull(compileOptions, "compileOptions is null");
    }

    /** How many devices one execution runs on. */
    public int partitions() {
        return compileOptions.partitions();
    }
}
