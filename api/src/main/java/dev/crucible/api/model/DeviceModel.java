package dev.crucible.api.model;

import java.util.List;

/**
 * A model placed on a backend's devices by {@link dev.crucible.api.backend.HardwareBackend#shard}. It owns its
 * device memory (weights, adapters, tables) and frees it on {@link #close()}. Not thread-safe: one caller at a
 * time.
 */
public interface DeviceModel extends AutoCloseable {

    ModelConfig config();

    /** The dtype weights and activations are computed in. */
    DType dtype();

    /** Every projection an adapter can attach to, layer by layer, attention before MLP. */
    List<LinearModule> linearModules();

    /**
     * Places {@code factors} beside {@code module}'s base weight (replacing any adapter there), leaving the base
     * weight untouched; later forwards and decodes include it.
     */
    void setAdapter(String module, LoraFactors factors);

    /**
     * Sets every adapter's B to zero, so the model computes exactly its base weights again while the adapters keep
     * their memory (an abliteration trial's reset).
     */
    void zeroAdapters();

    /** Drops every adapter and frees its memory. */
    void removeAdapters();

    /** Frees every device tensor; the model is unusable after. */
    @Override
    void close();
}
