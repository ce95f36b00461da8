package dev.crucible.runner.abliterate.config;

/** Which refusal directions an edit uses; the optimizer chooses among the scopes a run allows. */
public enum DirectionScope {
    /** One interpolated direction for every layer. */
    GLOBAL,
    /** Layer {@code l} uses its own direction {@code R_{l+1}}. */
    PER_LAYER
}
