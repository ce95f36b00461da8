package dev.crucible.api.model;

import dev.crucible.api.UserInputException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The decoder families the one model definition covers, with the facts of each that {@code config.json} does not
 * spell out (transformers hard-codes them in its modeling code).
 */
public enum Architecture {
    /** LlamaForCausalLM: biases only when {@code attention_bias}/{@code mlp_bias} say so. */
    LLAMA("llama", "LlamaForCausalLM"),
    /** MistralForCausalLM: Llama's layout without biases; may declare a sliding window. */
    MISTRAL("mistral", "MistralForCausalLM"),
    /** Qwen2ForCausalLM: q/k/v always carry a bias, o_proj never does. */
    QWEN2("qwen2", "Qwen2ForCausalLM"),
    /** Qwen3ForCausalLM: per-head RMSNorm of q and k before RoPE; head_dim defaults to 128. */
    QWEN3("qwen3", "Qwen3ForCausalLM");

    private final String modelType;
    private final String className;

    Architecture(String modelType, String className) {
        this.modelType = modelType;
        this.className = className;
    }

    /** The {@code model_type} of config.json. */
    public String modelType() {
        return modelType;
    }

    /** The transformers class named in {@code architectures}. */
    public String className() {
        return className;
    }

    /** Architectures named by {@code model_type}; an unknown one is the user's to fix. */
    public static Architecture fromModelType(String modelType) {
        String wanted = modelType == null ? "" : modelType.trim().toLowerCase(Locale.ROOT);
        for (Architecture architecture : values()) {
            if (architecture.modelType.equals(wanted)) {
                return architecture;
            }
        }
        throw new UserInputException("model_type '" + modelType + "' is not supported; supported: " + supported());
    }

    /** Checks the {@code architectures} list of config.json, when present, names a causal-LM class we run. */
    static void checkClassName(String className) {
        for (Architecture architecture : values()) {
            if (architecture.className.equals(className)) {
                return;
            }
        }
        throw new UserInputException("architecture '" + className + "' is not supported; supported: "
                + Arrays.stream(values()).map(Architecture::className).collect(Collectors.joining(", ")));
    }

    static String supported() {
        return Arrays.stream(values()).map(Architecture::modelType).collect(Collectors.joining(", "));
    }
}
