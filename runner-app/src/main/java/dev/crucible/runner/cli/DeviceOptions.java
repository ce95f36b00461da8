package dev.crucible.runner.cli;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.runner.Host;
import dev.crucible.runner.session.BackendOptions;
import dev.crucible.runner.session.ModelSession;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalInt;
import picocli.CommandLine.Option;

/**
 * {@code --device}, {@code --threads} and the xla backend's options, shared by every command that runs a model. The
 * backend options travel with the device request; each backend reads its own.
 */
public final class DeviceOptions {
    @Option(names = "--device", paramLabel = "DEVICE", defaultValue = "${env:CRUCIBLE_DEVICE:-auto}",
            description = "auto, cpu, cuda, cuda:N, xla, tpu, mps or xpu (default: auto, or $CRUCIBLE_DEVICE).")
    String device;

    @Option(names = "--threads", paramLabel = "N",
            description = "Compute threads on the CPU (default: $CRUCIBLE_THREADS, else one per core; a model under 20 M parameters runs batches side by side, one thread each).")
    Integer threads;

    @Option(names = "--xla-devices", paramLabel = "N|auto",
            description = "xla: devices one model is split over; auto takes the fewest (a power of two) whose memory holds it (default: $CRUCIBLE_XLA_DEVICES, else auto).")
    String xlaDevices;

    @Option(names = "--strategy", paramLabel = "S",
            description = "xla: how a split model lies over its devices: fsdp (default: $CRUCIBLE_XLA_STRATEGY, else fsdp).")
    String strategy;

    @Option(names = "--xla-cache", paramLabel = "DIR",
            description = "xla: keep compiled programs in DIR across runs, where the PJRT plugin can serialize them (default: $CRUCIBLE_XLA_CACHE).")
    String xlaCache;

    /**
     * Loads {@code model} on the chosen device, for inference, in {@code dtype} ("auto" = the backend's policy), its
     * projections kept as {@code quantization} says.
     */
    public ModelSession open(Host host, String model, String dtype, QuantizationConfig quantization) {
        return ModelSession.open(host, request(), threads(host), model, dtype, quantization);
    }

    /** The same for a model located (and checked) already. */
    public ModelSession open(Host host, ModelLocator.Located model, String dtype, QuantizationConfig quantization) {
        return ModelSession.open(host, request(), threads(host), model, dtype, quantization);
    }

    public DeviceRequest request() {
        Map<String, String> options = new HashMap<>();
        options.put(BackendOptions.XLA_DEVICES, xlaDevices);
        options.put(BackendOptions.STRATEGY, strategy);
        options.put(BackendOptions.XLA_CACHE, xlaCache);
        return DeviceRequest.parse(device).withOptions(options);
    }

    /** {@code --threads}, else {@code $CRUCIBLE_THREADS}, else empty (the model's and backend's default). */
    public OptionalInt threads(Host host) {
        if (threads != null) {
            return OptionalInt.of(threads);
        }
        return host.environment().get("CRUCIBLE_THREADS").map(text -> {
            try {
                return OptionalInt.of(Integer.parseInt(text.trim()));
            } catch (NumberFormatException e) {
                throw new UserInputException("CRUCIBLE_THREADS must be a whole number, got '" + text + "'");
            }
        }).orElse(OptionalInt.empty());
    }
}
