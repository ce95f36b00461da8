package dev.crucible.api.tensor;

/** Element-wise comparisons of {@link TensorOps#compare}; the result is {@link DType#BOOL}. */
public enum Comparison {
    LESS, LESS_OR_EQUAL, EQUAL, GREATER_OR_EQUAL, GREATER
}
