package dev.crucible.api.model.layout;

import java.util.Objects;

/**
 * A block on the residual stream: {@code hidden = hidden + block(norm(hidden))}, the pre-norm arrangement every
 * supported family uses.
 */
public record Residual(Norm preNorm, Block block) {
    public Residual {
        Objects.requireNonNull(preNorm, "preNorm is null");
        Objects.requireNonNull(block, "block is null");
    }
}
