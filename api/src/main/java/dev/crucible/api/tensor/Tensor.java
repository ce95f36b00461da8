package dev.crucible.api.tensor;

/**
 * A handle to a value owned by a {@link TensorOps} implementation: device memory for an eager backend, a node of a
 * program for a tracing one. Handles say what they are (shape, dtype) but never what they hold; reading values
 * goes through {@link TensorOps#readFloats} and friends, outside a traced step.
 */
public interface Tensor {

    /** The extent of every dimension, outermost first; a fresh copy. */
    long[] shape();

    DType dtype();

    default int rank() {
        return shape().length;
    }

    /** The extent of {@code dim}; a negative {@code dim} counts from the end. */
    default long size(int dim) {
        long[] shape = shape();
        return shape[dim < 0 ? shape.length + dim : dim];
    }
}
