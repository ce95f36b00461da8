package dev.crucible.api.tensor;

/**
 * Owns the temporaries an op creates while it is open: closing it frees every tensor created since it opened,
 * except those already owned elsewhere (weights, a KV cache written in place). Scopes nest per thread.
 */
public interface TensorScope extends AutoCloseable {
    @Override
    void close();
}
