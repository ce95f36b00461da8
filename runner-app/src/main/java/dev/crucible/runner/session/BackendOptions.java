package dev.crucible.runner.session;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.runner.RunnerEnvironment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The backend options a device request carries ({@code --xla-devices}, {@code --strategy}, {@code --xla-cache}),
 * each also settable as an environment variable ({@code CRUCIBLE_XLA_DEVICES}, ...) for commands whose settings come
 * from a config file. The runner passes them on; the backend that knows one reads it.
 */
public final class BackendOptions {
    public static final String XLA_DEVICES = "xla-devices";
    public static final String STRATEGY = "strategy";
    public static final String XLA_CACHE = "xla-cache";
    private static final List<String> ALL = List.of(XLA_DEVICES, STRATEGY, XLA_CACHE);

    private BackendOptions() {
    }

    /** {@code request} with the environment's value of every option it does not carry already. */
    static DeviceRequest withEnvironment(DeviceRequest request, RunnerEnvironment environment) {
        Map<String, String> options = new LinkedHashMap<>(request.options());
        for (String name : ALL) {
            Optional<String> value = environment.get("CRUCIBLE_" + name.toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
            if (!options.containsKey(name) && value.isPresent()) {
                options.put(name, value.get());
            }
        }
        return request.withOptions(options);
    }
}
