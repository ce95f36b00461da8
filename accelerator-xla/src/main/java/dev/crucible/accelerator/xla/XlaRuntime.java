package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.api.backend.Probe;

/**
 * A runtime for the xla backend's programs other than the PJRT plugin it finds by itself, chosen by name with
 * {@code CRUCIBLE_XLA_RUNTIME} (or the {@code crucible.xla.runtime} system property) and found by
 * {@link java.util.ServiceLoader}. The test tree's jaxlib CPU client is one: the whole backend then runs on real XLA
 * numerics without a device.
 */
public interface XlaRuntime {

    /** The name {@code CRUCIBLE_XLA_RUNTIME} selects it by. */
    String name();

    /** Cheap and safe, like {@link dev.crucible.api.backend.HardwareBackend#detect()}. */
    Probe detect();

    /** Starts the runtime; its executor lives as long as the process needs it. */
    XlaExecutor open();
}
