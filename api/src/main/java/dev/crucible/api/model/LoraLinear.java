package dev.crucible.api.model;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import java.util.Arrays;
import java.util.Objects;

/**
 * A linear layer with an optional low-rank adapter beside it:
 * {@code y = x·Wᵀ + b + scale · (x·Aᵀ)·Bᵀ}, with {@code W [out, in]}, {@code A [r, in]}, {@code B [out, r]} as PEFT
 * stores them. The base weight is never touched: abliteration trials swap or zero the adapter, fine-tuning trains
 * it, and a merge materializes {@code W + scale·B·A} elsewhere. Where its owner {@linkplain #setFolded folds} an
 * adapter, the projection computes with that sum instead: one product where the adapter takes three ops.
 *
 * <p>The base weight is either a dense tensor or a {@link QuantizedTensor} (QLoRA's frozen 4-bit base), which the
 * ops multiply by as their format allows. This class holds handles only; whoever placed the tensors owns them.
 */
public final class LoraLinear {

    private final String module;
    private final Tensor weight;
    private final QuantizedTensor quantized;
    private final long[] shape;
    private final Tensor bias;
    private Adapter adapter;
    private Tensor folded;

    /** The adapter factors beside a base weight. */
    public record Adapter(Tensor a, Tensor b, double scale) {
        public Adapter {
            Objects.requireNonNull(a, "a is null");
            Objects.requireNonNull(b, "b is null");
        }
    }

    /** A projection with a dense base weight. */
    public LoraLinear(String module, Tensor weight, Tensor bias) {
        this.module = Objects.requireNonNull(module, "module is null");
        this.weight = Objects.requireNonNull(weight, "weight is null");
        this.quantized = null;
        this.shape = weight.shape();
        this.bias = bias;
    }

    /** A projection with a quantized base weight. */
    public LoraLinear(String module, QuantizedTensor weight, Tensor bias) {
        this.module = Objects.requireNonNull(module, "module is null");
        this.weight = null;
        this.quantized = Objects.requireNonNull(weight, "weight is null");
        this.shape = weight.shape();
        this.bias = bias;
    }

    /** The module name as PEFT targets it, e.g. {@code model.layers.0.self_attn.q_proj}. */
    public String module() {
        return module;
    }

    /** The dense base weight, or null when it is {@link #quantized()}. */
    public Tensor weight() {
        return weight;
    }

    /** The quantized base weight, or null when it is dense. */
    public QuantizedTensor quantized() {
        return quantized;
    }

    /** The bias, or null. */
    public Tensor bias() {
        return bias;
    }

    public long inFeatures() {
        return shape[1];
    }

    public long outFeatures() {
        return shape[0];
    }

    /** The adapter in use, or null. */
    public Adapter adapter() {
        return adapter;
    }

    /** Installs (or replaces) the adapter; returns the one it replaced, or null, so its owner can free it. */
    public Adapter setAdapter(Tensor a, Tensor b, double scale) {
        long[] aShape = a.shape();
        long[] bShape = b.shape();
        if (aShape.length != 2 || bShape.length != 2 || aShape[1] != inFeatures() || bShape[0] != outFeatures()
                || aShape[0] != bShape[1]) {
            throw new IllegalArgumentException(module + ": adapter A " + Arrays.toString(aShape) + " and B "
                    + Arrays.toString(bShape) + " do not fit a [" + outFeatures() + ", " + inFeatures()
                    + "] weight (A is [r, in], B is [out, r])");
        }
        Adapter previous = adapter;
        adapter = new Adapter(a, b, scale);
        return previous;
    }

    /** Removes the adapter; returns it, or null, so its owner can free it. */
    public Adapter removeAdapter() {
        Adapter previous = adapter;
        adapter = null;
        return previous;
    }

    /**
     * The weight this projection computes with in place of its base weight and adapter, or null: the base weight
     * with the adapter folded in ({@code W + scale·B·A}), or the base weight itself for an adapter that is zero.
     */
    public Tensor folded() {
        return folded;
    }

    /**
     * Sets (or with null clears) the {@link #folded()} weight; returns the one it replaced, so its owner can free
     * it. Its owner keeps it in step with the adapter: the adapter's factors are kept, for merges, but not read.
     */
    public Tensor setFolded(Tensor weight) {
        if (weight != null && !Arrays.equals(weight.shape(), shape)) {
            throw new IllegalArgumentException(module + ": a folded weight " + Arrays.toString(weight.shape())
                    + " for a " + Arrays.toString(shape) + " projection");
        }
        Tensor previous = folded;
        folded = weight;
        return previous;
    }

    public Tensor apply(TensorOps ops, Tensor x) {
        if (folded != null) {
            return ops.linear(x, folded, bias);
        }
        Tensor y = weight != null ? ops.linear(x, weight, bias) : ops.linear(x, quantized, bias);
        if (adapter == null) {
            return y;
        }
        // As PEFT does: the adapter computes in its own dtype, so float32 factors trained beside a bf16 base keep
        // updates far below bf16's resolution; only the finished low-rank term is rounded to the base's dtype.
        DType adapterDtype = adapter.a().dtype();
        Tensor input = x.dtype() == adapterDtype ? x : ops.cast(x, adapterDtype);
        Tensor low = ops.linear(ops.linear(input, adapter.a(), null), adapter.b(), null);
        if (adapter.scale() != 1.0) {
            // Skipped at 1.0 (abliteration's adapters): the product is exact, and the op is one of ~140 per decode step.
            low = ops.scale(low, adapter.scale());
        }
        return ops.add(y, low.dtype() == y.dtype() ? low : ops.cast(low, y.dtype()));
    }
}
