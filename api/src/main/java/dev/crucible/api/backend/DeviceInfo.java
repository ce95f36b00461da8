package dev.crucible.api.backend;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * One device a backend found: its index within the backend, a human name, and its memory where known.
 *
 * @param index        index as used in {@code --device id:N}
 * @param name         e.g. "Intel Xeon (2 cores)", "NVIDIA H200", "TPU v5e"
 * @param memoryBytes  total device memory, empty when the probe cannot know it without loading a runtime
 */
public record DeviceInfo(int index, String name, OptionalLong memoryBytes) {
    public DeviceInfo {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(memoryBytes, "memoryBytes is null");
    }

    public static DeviceInfo of(int index, String name, long memoryBytes) {
        return new DeviceInfo(index, name, memoryBytes > 0 ? OptionalLong.of(memoryBytes) : OptionalLong.empty());
    }
}
