package dev.crucible.runner.study;

import dev.crucible.api.scoring.Optimization;
import java.util.Objects;

/**
 * One score a study records for every trial, and what the optimizer does with it.
 * {@link Optimization#NONE} objectives are recorded and shown but never steer the search.
 */
public record Objective(String name, Optimization direction) {
    public Objective {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(direction, "direction is null");
        if (name.isBlank()) {
            throw new IllegalArgumentException("objective name is blank");
        }
    }

    /** True when the optimizer uses this objective. */
    public boolean isOptimized() {
        return direction != Optimization.NONE;
    }
}
