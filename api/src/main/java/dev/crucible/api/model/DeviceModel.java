package dev.crucible.api.model;

import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.tensor.DType;
import java.util.List;

/**
 * A model placed on a backend's devices by {@link dev.crucible.api.backend.HardwareBackend#shard}. Its weights,
 * adapters and tables are a {@link PlacedModel}, the same on every backend; the backend's own type adds what it
 * runs them with. It owns its device memory and frees it on {@link #close()}. Not thread-safe: one caller at a
 * time.
 */
public interface DeviceModel extends AutoCloseable {

    /** The backend-neutral weights, adapters and tables. */
    PlacedModel placed();

    default ModelConfig config() {
        return placed().config();
    }

    /** The model as its family lays it out: parameters, roles, blocks. */
    default ModelLayout layout() {
        return placed().layout();
    }

    /** The dtype weights and activations are computed in. */
    default DType dtype() {
        return placed().dtype();
    }

    /** Every projection an adapter can attach to, layer by layer, attention before MLP. */
    default List<LinearModule> linearModules() {
        return placed().linearModules();
    }

    /**
     * Places {@code factors} beside {@code module}'s base weight (replacing any adapter there), leaving the base
     * weight untouched; later forwards and decodes include it.
     */
    default void setAdapter(String module, LoraFactors factors) {
        placed().setAdapter(module, factors);
    }

    /**
     * Sets every adapter's B to zero, so the model computes exactly its base weights again while the adapters keep
     * their place (an abliteration trial's reset).
     */
    default void zeroAdapters() {
        placed().zeroAdapters();
    }

    /** Drops every adapter and frees its memory. */
    default void removeAdapters() {
        placed().removeAdapters();
    }

    /**
     * For each quantized format among the weights, one line saying which kernel products with it run on (e.g.
     * {@code int8 per-channel: products of up to 8 rows on ...}); empty when every weight is dense.
     */
    default List<String> quantizedKernels() {
        return placed().quantizedFormats().stream()
                .map(format -> format.describe() + ": dequantized by the backend's composed ops for each product")
                .toList();
    }

    /** Frees every device tensor; the model is unusable after. */
    @Override
    void close();
}
