package dev.crucible.accelerator.xla.exec;

import dev.crucible.api.tensor.DType;

/**
 * An array on one device of an {@link XlaExecutor}. Its holder closes it; an execution that donates it releases it
 * (after which every use but {@link #close()} fails, saying so).
 */
public interface DeviceArray extends AutoCloseable {
    DType dtype();

    long[] shape();

    /** The index of its device among the executor's devices. */
    int device();

    /** Closed by its holder or consumed by a donation. */
    boolean isReleased();

    @Override
    void close();
}
