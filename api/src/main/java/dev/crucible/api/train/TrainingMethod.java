package dev.crucible.api.train;

import dev.crucible.api.UserInputException;
import java.util.Locale;

/** How a fine-tune changes the model. */
public enum TrainingMethod {
    /** Low-rank adapters beside frozen base weights kept in the compute dtype. */
    LORA,
    /** Low-rank adapters beside frozen base weights stored as 4-bit NF4 blocks and dequantized per matmul. */
    QLORA,
    /** Every parameter trained, in float32. */
    FULL;

    /** The spelling of {@code --method}: lora, qlora, full. */
    public String userName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Whether the method trains adapters (and writes a PEFT adapter) rather than the weights themselves. */
    public boolean trainsAdapters() {
        return this != FULL;
    }

    public static TrainingMethod parse(String text) {
        for (TrainingMethod method : values()) {
            if (method.userName().equalsIgnoreCase(text.strip())) {
                return method;
            }
        }
        throw new UserInputException("--method '" + text + "' is not one of auto, lora, qlora, full");
    }
}
