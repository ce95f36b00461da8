package dev.crucible.accelerator.xla.exec;

import dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats;
import java.util.Optional;

/** A program compiled by an {@link XlaExecutor} and ready to run; its holder closes it. */
public interface CompiledProgram extends AutoCloseable {
    Program program();

    /** The compiler's per-device memory figures, where the backend offers them. */
    Optional<CompiledMemoryStats> memoryStats();

    @Override
    void close();
}
