package dev.crucible.api.backend;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * Handed to {@link HardwareBackend#setupEnvironment} once, before any device access.
 *
 * @param device  what the user asked for (after resolution it names this backend or an alias of it)
 * @param probe   this backend's own probe result
 * @param threads the user's thread count, empty for the backend's policy
 */
public record SetupRequest(DeviceRequest device, Probe probe, OptionalInt threads) {
    public SetupRequest {
        Objects.requireNonNull(device, "device is null");
        Objects.requireNonNull(probe, "probe is null");
        Objects.requireNonNull(threads, "threads is null");
    }
}
