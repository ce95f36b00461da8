package dev.crucible.api.train;

import java.util.List;
import java.util.Objects;

/**
 * The adapters a LoRA or QLoRA fine-tune attaches, with PEFT's meaning for every field.
 *
 * @param rank          r, the inner width of {@code B·A}
 * @param alpha         lora_alpha; the update is scaled by {@code alpha / r} ({@code alpha / sqrt(r)} with rsLoRA)
 * @param dropout       lora_dropout: dropout on the adapter's input while training, 0 for none
 * @param rslora        rank-stabilized scaling
 * @param modules       full module names to adapt, e.g. {@code model.layers.0.self_attn.q_proj}, in layer order
 */
public record LoraSettings(int rank, double alpha, double dropout, boolean rslora, List<String> modules) {
    public LoraSettings {
        if (rank < 1) {
            throw new IllegalArgumentException("rank must be at least 1, got " + rank);
        }
        if (!(alpha > 0) || Double.isInfinite(alpha)) {
            throw new IllegalArgumentException("alpha must be positive, got " + alpha);
        }
        if (!(dropout >= 0 && dropout < 1)) {
            throw new IllegalArgumentException("dropout must be in [0, 1), got " + dropout);
        }
        modules = List.copyOf(Objects.requireNonNull(modules, "modules is null"));
        if (modules.isEmpty()) {
            throw new IllegalArgumentException("no modules to adapt");
        }
    }

    /** The factor on {@code B·A}: PEFT's {@code scaling}. */
    public double scale() {
        return rslora ? alpha / Math.sqrt(rank) : alpha / rank;
    }
}
