package dev.crucible.runner.abliterate.config;

/** How the edit treats the rows of a weight matrix (see the method document, "The edit"). */
public enum RowNormalization {
    /** {@code ΔW = −w v vᵀ W}: a rank-one adapter on the raw weight. */
    NONE,
    /** The direction is removed from unit-length rows; the adapter rescales by the row norms. */
    PRE,
    /** Rows are normalized, edited, restored to their norms; the difference is fitted by a low-rank SVD. */
    FULL
}
