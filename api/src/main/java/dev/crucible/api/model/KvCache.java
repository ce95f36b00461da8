package dev.crucible.api.model;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;

/**
 * Keys and values of every layer for a batch, preallocated to a fixed number of slots:
 * {@code [batch, kvHeads, capacity, headDim]} per layer. Slot {@code s} of a row holds the token at absolute
 * index {@code s} of that row's left-padded sequence. A step writes its slots with
 * {@link TensorOps#writeSlots}, so the cache never grows or moves.
 */
public final class KvCache implements AutoCloseable {

    private final TensorOps ops;
    private final Tensor[] keys;
    private final Tensor[] values;
    private final long capacity;

    private KvCache(TensorOps ops, Tensor[] keys, Tensor[] values, long capacity) {
        this.ops = ops;
        this.keys = keys;
        this.values = values;
        this.capacity = capacity;
    }

    /** Zeroed slots for {@code batch} rows of {@code capacity} tokens, kept until {@link #close()}. */
    public static KvCache allocate(TensorOps ops, ModelConfig config, long batch, long capacity, DType dtype) {
        int layers = config.numLayers();
        Tensor[] keys = new Tensor[layers];
        Tensor[] values = new Tensor[layers];
        try (var scope = ops.openScope()) {
            for (int layer = 0; layer < layers; layer++) {
                keys[layer] = ops.retain(ops.zeros(dtype, batch, config.numKvHeads(), capacity, config.headDim()));
                values[layer] = ops.retain(ops.zeros(dtype, batch, config.numKvHeads(), capacity, config.headDim()));
            }
        }
        return new KvCache(ops, keys, values, capacity);
    }

    public long capacity() {
        return capacity;
    }

    public Tensor keys(int layer) {
        return keys[layer];
    }

    public Tensor values(int layer) {
        return values[layer];
    }

    /** Takes the cache tensors a step returned; a functional backend returns new ones, an eager one the same. */
    void update(int layer, Tensor newKeys, Tensor newValues) {
        keys[layer] = replace(keys[layer], newKeys);
        values[layer] = replace(values[layer], newValues);
    }

    private Tensor replace(Tensor old, Tensor replacement) {
        if (replacement != old) {
            ops.retain(replacement);
            ops.release(old);
        }
        return replacement;
    }

    @Override
    public void close() {
        for (int layer = 0; layer < keys.length; layer++) {
            if (keys[layer] != null) {
                ops.release(keys[layer]);
                ops.release(values[layer]);
                keys[layer] = null;
                values[layer] = null;
            }
        }
    }
}
