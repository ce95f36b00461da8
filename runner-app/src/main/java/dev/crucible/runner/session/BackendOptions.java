package dev.crucible.runner.session;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.runner.RunnerEnvironment;
import java.util.LinkedHashMap;
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
    /** Each option's environment variable, as the flags' help names them. */
    private static final Map<String, String> ENVIRONMENT = Map.of(XLA_DEVICES, "CRUCIBLE_XLA_DEVICES", STRATEGY,
            "CRUCIBLE_XLA_STRATEGY", XLA_CACHE, "CRUCIBLE_XLA_CACHE");

    private BackendOptions() {
    }

    /** {@code request} with the environment's value of every option it does not carry already. */
    static DeviceRequest withEnvironment(DeviceRequest request, RunnerEnvironment environment) {
        Map<String, String> options = new LinkedHashMap<>(request.options());
        for (Map.Entry<String, String> option : ENVIRONMENT.entrySet()) {
            String name = option.getKey();
            Optional<String> value = environment.get(option.getValue());
            if (!options.containsKey(name) && value.isPresent()) {
                options.put(name, value.get());
            }
        }
        return request.withOptions(options);
    }
}
