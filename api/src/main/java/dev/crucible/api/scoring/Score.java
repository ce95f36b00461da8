package dev.crucible.api.scoring;

import java.util.Objects;

/**
 * A scorer's value for one model state.
 *
 * @param value   the number the optimizer sees
 * @param display how a person reads it, e.g. "3/100" for a refusal count
 */
public record Score(double value, String display) {
    public Score {
        Objects.requireNonNull(display, "display is null");
    }

    public static Score of(double value) {
        return new Score(value, String.format(java.util.Locale.ROOT, "%.4f", value));
    }
}
