package dev.crucible.runner.finetune;

import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.UserInputException;
import dev.crucible.api.train.TrainingMethod;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * {@code --method auto}: LoRA while the frozen weights fit the device in bf16, else QLoRA where the backend can
 * train on a 4-bit base. "Fit" leaves a fifth of the device for everything else (activations, adapters and their
 * optimizer state, the runtime's own workspace): frozen bf16 bytes at most 80% of the device's memory.
 *
 * @param method the method that runs
 * @param reason one line saying why, printed before training starts
 */
public record MethodChoice(TrainingMethod method, String reason) {

    /** Share of device memory the frozen weights may take. */
    static final double WEIGHT_SHARE = 0.8;

    /**
     * @param requested      {@code --method}, empty for auto
     * @param bf16Bytes      the frozen weights' size in bf16 (two bytes per parameter)
     * @param deviceMemory   total memory of the training device, from its probe (or {@code CRUCIBLE_DEVICE_MEMORY});
     *                       empty when unknown
     * @param unsupported    the backend's {@code trainingUnsupported}
     */
    public static MethodChoice choose(Optional<TrainingMethod> requested, long bf16Bytes, OptionalLong deviceMemory,
                                      String device, Function<TrainingMethod, Optional<String>> unsupported) {
        if (requested.isPresent()) {
            TrainingMethod method = requested.get();
            unsupported.apply(method).ifPresent(why -> {
                throw new UserInputException("--method " + method.userName() + " cannot run on " + device + ": " + why);
            });
            return new MethodChoice(method, "--method " + method.userName() + " was asked for");
        }
        if (deviceMemory.isEmpty()) {
            return supported(TrainingMethod.LORA, unsupported, device,
                    "the memory of " + device + " is unknown, so the frozen weights (" + size(bf16Bytes)
                            + " in bf16) are assumed to fit");
        }
        long memory = deviceMemory.getAsLong();
        if (bf16Bytes <= WEIGHT_SHARE * memory) {
            return supported(TrainingMethod.LORA, unsupported, device, "the frozen weights (" + size(bf16Bytes)
                    + " in bf16) fit in " + size(memory) + " of " + device);
        }
        String tooBig = "the frozen weights (" + size(bf16Bytes) + " in bf16) do not fit in " + size(memory) + " of "
                + device;
        Optional<String> noQuantized = unsupported.apply(TrainingMethod.QLORA);
        if (noQuantized.isPresent()) {
            throw new UserInputException(tooBig + ", and QLoRA cannot run there: " + noQuantized.get()
                    + "; use a larger device or a smaller model");
        }
        return new MethodChoice(TrainingMethod.QLORA, tooBig + "; a 4-bit NF4 base needs about "
                + size(bf16Bytes / 4 + bf16Bytes / 64));
    }

    /**
     * {@code --quantization} given: adapters on that quantized base (QLoRA's method, whatever the format), with
     * {@code --method} auto, lora or qlora (the settings refuse full).
     */
    public static MethodChoice quantizedBase(QuantizationConfig quantization, String device,
                                             Function<TrainingMethod, Optional<String>> unsupported) {
        return supported(TrainingMethod.QLORA, unsupported, device, "--quantization "
                + quantization.method().userName() + " was asked for: float32 adapters on a quantized base");
    }

    private static MethodChoice supported(TrainingMethod method, Function<TrainingMethod, Optional<String>> unsupported,
                                          String device, String reason) {
        unsupported.apply(method).ifPresent(why -> {
            throw new UserInputException("cannot fine-tune on " + device + ": " + why);
        });
        return new MethodChoice(method, reason);
    }

    /** Bytes for people: 1.5 GiB, 800 MiB. */
    public static String size(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }
}
