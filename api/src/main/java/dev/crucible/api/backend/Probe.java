package dev.crucible.api.backend;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What {@link HardwareBackend#detect()} found, without loading any native runtime.
 *
 * @param available whether the backend can run here
 * @param reason    one line: why not, or what was found ("2 cores, AVX-512 BF16")
 * @param devices   the devices found (empty when unavailable)
 * @param details   extra facts for {@code runner doctor} and {@code --json} (ISA features, plugin path, ...)
 */
public record Probe(boolean available, String reason, List<DeviceInfo> devices, Map<String, String> details) {
    public Probe {
        Objects.requireNonNull(reason, "reason is null");
        if (reason.contains("\n")) {
            throw new IllegalArgumentException("a probe reason is one line: " + reason);
        }
        devices = List.copyOf(devices);
        details = Collections.unmodifiableMap(new LinkedHashMap<>(details)); // keeps the backend's order for display
    }

    public static Probe available(String reason, List<DeviceInfo> devices, Map<String, String> details) {
        return new Probe(true, reason, devices, details);
    }

    public static Probe unavailable(String reason) {
        return new Probe(false, reason, List.of(), Map.of());
    }

    public static Probe unavailable(String reason, Map<String, String> details) {
        return new Probe(false, reason, List.of(), details);
    }
}
