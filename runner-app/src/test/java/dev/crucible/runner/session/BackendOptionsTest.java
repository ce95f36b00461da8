package dev.crucible.runner.session;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.runner.RunnerEnvironment;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The xla options from the variables the flags' help names, for commands whose settings come from a config file. */
class BackendOptionsTest {

    @Test
    void theEnvironmentFillsWhatTheFlagsLeftOpen() {
        RunnerEnvironment environment = new RunnerEnvironment(Map.of("CRUCIBLE_XLA_DEVICES", "4",
                "CRUCIBLE_XLA_STRATEGY", "fsdp", "CRUCIBLE_XLA_CACHE", "/tmp/programs"), Optional.empty());
        DeviceRequest request = BackendOptions.withEnvironment(DeviceRequest.parse("xla")
                .withOptions(Map.of(BackendOptions.XLA_DEVICES, "2")), environment);
        assertEquals(Optional.of("2"), request.option(BackendOptions.XLA_DEVICES), "a flag wins");
        assertEquals(Optional.of("fsdp"), request.option(BackendOptions.STRATEGY));
        assertEquals(Optional.of("/tmp/programs"), request.option(BackendOptions.XLA_CACHE));
    }
}
