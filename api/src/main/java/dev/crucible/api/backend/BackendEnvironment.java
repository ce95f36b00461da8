package dev.crucible.api.backend;

/**
 * What {@link HardwareBackend#setupEnvironment} chose for this process (native build, threads, switches that must
 * precede a client), made once and never changed. The backend's methods that need it take it; nothing is kept in the
 * backend itself, so no method depends on having been called after another.
 */
public interface BackendEnvironment {

    /** The device it was set up for, as the user asked for it. */
    DeviceRequest device();
}
