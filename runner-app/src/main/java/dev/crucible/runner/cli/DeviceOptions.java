package dev.crucible.runner.cli;

import dev.crucible.api.backend.DeviceRequest;
import java.util.Optional;
import java.util.OptionalInt;
import picocli.CommandLine.Option;

/** {@code --device} and {@code --threads}, shared by every command that runs a model. */
public final class DeviceOptions {
    @Option(names = "--device", paramLabel = "DEVICE", defaultValue = "${env:CRUCIBLE_DEVICE:-auto}",
            description = "auto, cpu, cuda, cuda:N, xla, tpu, mps or xpu (default: auto, or $CRUCIBLE_DEVICE).")
    String device;

    @Option(names = "--threads", paramLabel = "N",
            description = "Compute threads on the CPU (default: one per core, or $CRUCIBLE_THREADS).")
    Integer threads;

    public DeviceRequest request() {
        return DeviceRequest.parse(device);
    }

    public OptionalInt threads(Optional<String> fromEnvironment) {
        if (threads != null) {
            return OptionalInt.of(threads);
        }
        return fromEnvironment.map(text -> {
            try {
                return OptionalInt.of(Integer.parseInt(text.trim()));
            } catch (NumberFormatException e) {
                throw new dev.crucible.api.UserInputException("CRUCIBLE_THREADS must be a whole number, got '" + text + "'");
            }
        }).orElse(OptionalInt.empty());
    }
}
