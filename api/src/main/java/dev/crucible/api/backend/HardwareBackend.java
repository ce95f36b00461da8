package dev.crucible.api.backend;

import dev.crucible.api.model.DType;

/**
 * One kind of accelerator. Everything hardware-specific lives behind this interface: detection, environment
 * set-up, placement, execution, merge materialization, cache clearing and dtype policy. The runner and the
 * experiments only ever talk to this interface; they never ask which device they run on.
 *
 * <p>Implementations are found by {@link java.util.ServiceLoader} on the classpath and in PF4J plugin jars;
 * the same jar works both ways. A backend must have a public no-argument constructor that does no work.
 *
 * <p>Compute methods arrive with the model runtime; a backend whose compute is not built yet says so when
 * they are called rather than pretending.
 */
public interface HardwareBackend {

    /** Stable id used by {@code --device} and {@code CRUCIBLE_DEVICE_PRIORITY}: cpu, cuda, xla, mps, xpu. */
    String id();

    /** Rank in {@code --device auto}; higher wins. Defaults: xla 50, cuda 40, xpu 30, mps 20, cpu 10. */
    int priority();

    /**
     * Cheap and safe: never loads a native runtime, never throws (a throw is reported as unavailable), returns
     * within a few seconds (a slow probe is reported as unavailable).
     */
    Probe detect();

    /**
     * Whether {@code name}, which is not this backend's {@link #id()}, selects it. The xla backend answers to
     * {@code tpu} only when its probe found a TPU.
     */
    default boolean answersTo(String name, Probe probe) {
        return false;
    }

    /**
     * Runs once, before any device access and before the native runtime is loaded: choose the native build,
     * thread counts, environment switches that must precede client creation.
     */
    void setupEnvironment(SetupRequest request);

    /**
     * The compute dtype for {@code --dtype auto}, given the checkpoint's dtype: a backend keeps a half-precision
     * checkpoint in half precision only where the hardware computes it natively, and otherwise widens to F32.
     */
    DType chooseDtype(DType checkpointDtype);

    /** Frees cached device memory; returns one line saying what it did (a no-op says so). */
    String emptyCache();
}
