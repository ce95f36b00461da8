package dev.crucible.api.model;

import dev.crucible.api.tensor.HostTensor;
import java.util.Objects;

/**
 * A low-rank update for one projection, in PEFT's layout: {@code W' = W + scale · B · A}.
 *
 * @param a     {@code [r, in]} (PEFT {@code lora_A.weight})
 * @param b     {@code [out, r]} (PEFT {@code lora_B.weight})
 * @param scale {@code lora_alpha / r} for plain LoRA
 */
public record LoraFactors(HostTensor a, HostTensor b, double scale) {
    public LoraFactors {
        Objects.requireNonNull(a, "a is null");
        Objects.requireNonNull(b, "b is null");
        if (!a.dtype().isFloatingPoint() || !b.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException("LoRA factors must be floating point: " + a + ", " + b);
        }
        if (!Double.isFinite(scale)) {
            throw new IllegalArgumentException("LoRA scale must be finite: " + scale);
        }
    }
}
