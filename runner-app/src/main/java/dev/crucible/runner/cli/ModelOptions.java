package dev.crucible.runner.cli;

import dev.crucible.runner.Host;
import dev.crucible.runner.session.ModelSession;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code --model}, {@code --dtype}, the device and the quantization options: what every command that runs one model
 * for inference takes.
 */
public final class ModelOptions {
    @Mixin
    DeviceOptions device;

    @Mixin
    QuantizationOptions quantization;

    @Option(names = "--model", required = true, paramLabel = "M",
            description = "A model folder, or org/name[@revision] from the Hugging Face cache or hub.")
    String model;

    @Option(names = "--dtype", defaultValue = "auto",
            description = "auto, float32, bfloat16 or float16 (default: auto = the backend's policy for the checkpoint).")
    String dtype;

    /** Loads the model on the chosen device, for inference, its projections quantized as the flags say. */
    public ModelSession open(Host host) {
        return device.open(host, model, dtype, quantization.config());
    }
}
