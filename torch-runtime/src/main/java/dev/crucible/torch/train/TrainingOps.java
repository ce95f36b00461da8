package dev.crucible.torch.train;

import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.torch.TorchOps;
import dev.crucible.torch.TorchTensor;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.bytedeco.pytorch.global.torch;

/**
 * The libtorch ops with what training adds beneath the one model definition, which stays unaware of it: with LoRA
 * dropout, the input of an adapter's A projection is dropped out, as PEFT's {@code lora_dropout} does (only the
 * adapter path sees it; the base projection gets the input unchanged). A quantized base weight (QLoRA) goes through
 * the ops' own {@link TensorOps#linear(Tensor, dev.crucible.api.tensor.QuantizedTensor, Tensor)}.
 */
final class TrainingOps implements TensorOps {

    private final TorchOps delegate;
    private final double dropout;
    private final Set<Tensor> adapterInputs = Collections.newSetFromMap(new IdentityHashMap<>());

    /**
     * @param dropout probability of zeroing an adapter input element; 0 for evaluation and decoding
     */
    TrainingOps(TorchOps delegate, double dropout) {
        this.delegate = Objects.requireNonNull(delegate, "delegate is null");
        this.dropout = dropout;
    }

    /** Marks {@code a} as an adapter's A factor, whose input dropout applies to. */
    void addAdapterInput(Tensor a) {
        adapterInputs.add(a);
    }

    TorchOps torch() {
        return delegate;
    }

    @Override
    public Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        if (dropout > 0 && adapterInputs.contains(weight)) {
            x = new TorchTensor(torch.dropout(((TorchTensor) x).handle(), dropout, true));
        }
        return delegate.linear(x, weight, bias);
    }

    /** Routed as the libtorch ops route it; each expert still runs through these ops (adapter dropout). */
    @Override
    public Tensor mixture(Tensor x, Tensor routing, List<java.util.function.UnaryOperator<Tensor>> experts) {
        return delegate.mixture(x, routing, experts);
    }

    @Override
    public TensorScope openScope() {
        return delegate.openScope();
    }

    @Override
    public Tensor retain(Tensor tensor) {
        return delegate.retain(tensor);
    }

    @Override
    public void release(Tensor tensor) {
        delegate.release(tensor);
    }

    @Override
    public Tensor constant(float[] values, long... shape) {
        return delegate.constant(values, shape);
    }

    @Override
    public Tensor constant(long[] values, long... shape) {
        return delegate.constant(values, shape);
    }

    @Override
    public Tensor zeros(DType dtype, long... shape) {
        return delegate.zeros(dtype, shape);
    }

    @Override
    public float[] readFloats(Tensor tensor) {
        return delegate.readFloats(tensor);
    }

    @Override
    public long[] readLongs(Tensor tensor) {
        return delegate.readLongs(tensor);
    }

    @Override
    public Tensor cast(Tensor x, DType dtype) {
        return delegate.cast(x, dtype);
    }

    @Override
    public Tensor reshape(Tensor x, long... shape) {
        return delegate.reshape(x, shape);
    }

    @Override
    public Tensor transpose(Tensor x, int dim0, int dim1) {
        return delegate.transpose(x, dim0, dim1);
    }

    @Override
    public Tensor slice(Tensor x, int dim, long start, long end) {
        return delegate.slice(x, dim, start, end);
    }

    @Override
    public Tensor concat(List<Tensor> parts, int dim) {
        return delegate.concat(parts, dim);
    }

    @Override
    public Tensor add(Tensor a, Tensor b) {
        return delegate.add(a, b);
    }

    @Override
    public Tensor mul(Tensor a, Tensor b) {
        return delegate.mul(a, b);
    }

    @Override
    public Tensor scale(Tensor x, double factor) {
        return delegate.scale(x, factor);
    }

    @Override
    public Tensor neg(Tensor x) {
        return delegate.neg(x);
    }

    @Override
    public Tensor silu(Tensor x) {
        return delegate.silu(x);
    }

    @Override
    public Tensor tanh(Tensor x) {
        return delegate.tanh(x);
    }

    @Override
    public Tensor geluTanh(Tensor x) {
        return delegate.geluTanh(x);
    }

    @Override
    public Tensor embedding(Tensor table, Tensor ids) {
        return delegate.embedding(table, ids);
    }

    @Override
    public Tensor rmsNorm(Tensor x, Tensor weight, double eps) {
        return delegate.rmsNorm(x, weight, eps);
    }

    @Override
    public Tensor softmax(Tensor x, int dim) {
        return delegate.softmax(x, dim);
    }

    @Override
    public Tensor logSoftmax(Tensor x, int dim) {
        return delegate.logSoftmax(x, dim);
    }

    @Override
    public Tensor argmax(Tensor x, int dim) {
        return delegate.argmax(x, dim);
    }

    @Override
    public Tensor compare(Tensor a, Tensor b, Comparison comparison) {
        return delegate.compare(a, b, comparison);
    }

    @Override
    public Tensor and(Tensor a, Tensor b) {
        return delegate.and(a, b);
    }

    @Override
    public Tensor or(Tensor a, Tensor b) {
        return delegate.or(a, b);
    }

    @Override
    public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale) {
        return delegate.attention(q, k, v, allowed, scale);
    }

    @Override
    public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale, double softcap) {
        return delegate.attention(q, k, v, allowed, scale, softcap);
    }

    @Override
    public Tensor writeSlots(Tensor target, int dim, Tensor index, Tensor source) {
        return delegate.writeSlots(target, dim, index, source);
    }
}
