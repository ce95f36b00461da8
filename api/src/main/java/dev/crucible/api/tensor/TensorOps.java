package dev.crucible.api.tensor;

import java.util.List;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * The narrow set of operations the model definition is written against. An eager backend runs each call; a
 * tracing backend records it into a static-shape program. So that both work:
 * <ul>
 *   <li>output shapes depend only on input shapes and on the {@code long}/{@code int} arguments, never on tensor
 *       values;</li>
 *   <li>nothing inside a step reads values back to the host ({@link #readFloats}/{@link #readLongs} are for the
 *       caller, between steps);</li>
 *   <li>every op is functional: it returns its result. {@link #writeSlots} may update its target in place and
 *       return it, so a caller always continues with the returned tensor.</li>
 * </ul>
 * Element-wise ops broadcast like NumPy. Dimensions given as {@code int} may be negative (counted from the end).
 *
 * <p>The caller marks what one compiled program would be with {@link #step}: prefill, one decode step, a forward
 * pass. Host work (reading ids back, stop tokens, listeners) happens between steps.
 */
public interface TensorOps {

    /**
     * Runs {@code body} as one program over {@code inputs} and returns its outputs. An eager backend simply runs it
     * (the default); a tracing backend records the body once per {@code key} and input shapes and dtypes, compiles
     * it, and runs the compiled program on every later call with the same key and shapes.
     *
     * <p>{@code inputs} are everything the body reads that changes from one call to the next (tokens, positions,
     * slots, padding, rotary tables, per-layer state); the body may also read the model's weights and adapters,
     * which a tracing backend makes arguments of the program too. The body must compute with these ops only, and
     * never read values to the host. An output the body {@link #retain retained} outlives the caller's scope; every
     * other output is a temporary of it.
     *
     * @param key the program's name, e.g. {@code prefill} or {@code decode}; Java values the body bakes in (a scale)
     *            belong in it
     */
    default List<Tensor> step(String key, List<Tensor> inputs, Function<List<Tensor>, List<Tensor>> body) {
        return body.apply(inputs);
    }

    // ---- where the parts of a model compute -------------------------------------------------------------------

    /**
     * The ops decoder layer {@code layer} computes with: they hold its weights, adapters and state and make its
     * temporaries. These ops themselves (the default) unless a model is split by layers over several devices; then
     * these ops are the embedding's device and each layer's are the device its plan gives it. The model definition
     * asks this at every layer and moves the residual stream with {@link #transfer} where the answer changes, so
     * the split lives in the ops, not in the model.
     */
    default TensorOps forLayer(int layer) {
        return this;
    }

    /** The ops the final norm and output head compute with; these ops themselves unless the model is split. */
    default TensorOps forHead() {
        return this;
    }

    /**
     * {@code x} where these ops compute: {@code x} itself when it is there already (always, on one device), else a
     * copy, a temporary of the current scope. Only a model split over devices needs it, once per tensor and device
     * boundary.
     */
    default Tensor transfer(Tensor x) {
        return x;
    }

    /** Frees the temporaries created until it closes; see {@link TensorScope}. */
    TensorScope openScope();

    /**
     * Makes {@code tensor} outlive the scope it was made in (weights, caches, tables); its owner frees it with
     * {@link #release}. Returns {@code tensor}.
     */
    Tensor retain(Tensor tensor);

    /** Frees a tensor kept by {@link #retain}. */
    void release(Tensor tensor);

    // ---- values from and to the host -------------------------------------------------------------------------

    /** An F32 tensor holding {@code values} (row-major), placed where this backend computes. */
    Tensor constant(float[] values, long... shape);

    /** An I64 tensor holding {@code values} (row-major). */
    Tensor constant(long[] values, long... shape);

    /** A tensor of zeros. */
    Tensor zeros(DType dtype, long... shape);

    /** All elements widened to float, row-major. A host read: never inside a traced step. */
    float[] readFloats(Tensor tensor);

    /** All elements of an integer tensor, row-major. A host read: never inside a traced step. */
    long[] readLongs(Tensor tensor);

    // ---- element types and layout -----------------------------------------------------------------------------

    Tensor cast(Tensor x, DType dtype);

    /** Same elements, new shape; one extent may be -1. */
    Tensor reshape(Tensor x, long... shape);

    Tensor transpose(Tensor x, int dim0, int dim1);

    /** Elements {@code [start, end)} of {@code dim}. */
    Tensor slice(Tensor x, int dim, long start, long end);

    Tensor concat(List<Tensor> parts, int dim);

    // ---- arithmetic -------------------------------------------------------------------------------------------

    Tensor add(Tensor a, Tensor b);

    Tensor mul(Tensor a, Tensor b);

    Tensor scale(Tensor x, double factor);

    Tensor neg(Tensor x);

    /** {@code x * sigmoid(x)}. */
    Tensor silu(Tensor x);

    /** The hyperbolic tangent, elementwise (soft-capping, the tanh-approximated GELU). */
    Tensor tanh(Tensor x);

    /**
     * GELU in its tanh approximation, {@code 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³)))} (transformers'
     * {@code gelu_pytorch_tanh}). The default composes the other ops; a backend may have it as one kernel.
     */
    default Tensor geluTanh(Tensor x) {
        Tensor cube = mul(mul(x, x), x);
        Tensor inner = scale(add(x, scale(cube, 0.044715)), Math.sqrt(2.0 / Math.PI));
        Tensor one = cast(constant(new float[] {1f}, 1), x.dtype());
        return mul(scale(x, 0.5), add(tanh(inner), one));
    }

    /** {@code geluTanh(gate) · up}: the GeGLU MLP's activation (Gemma). */
    default Tensor gatedGeluTanh(Tensor gate, Tensor up) {
        return mul(geluTanh(gate), up);
    }

    /**
     * {@code silu(gate) · up}, the gated MLP's activation, each result in the compute dtype as the two separate ops
     * give it. The default composes them; a backend may fuse it.
     */
    default Tensor gatedSilu(Tensor gate, Tensor up) {
        return mul(silu(gate), up);
    }

    /** {@code x · weightᵀ + bias}: {@code weight} is {@code [out, in]} as checkpoints store it; bias may be null. */
    Tensor linear(Tensor x, Tensor weight, Tensor bias);

    /**
     * The matrix product {@code a · b} of {@code a [m, k]} and {@code b [k, n]}. The default is {@link #linear} with
     * {@code b}'s transpose; a backend with a plain matrix product uses it (results may differ in the last bit).
     */
    default Tensor matmul(Tensor a, Tensor b) {
        return linear(a, transpose(b, 0, 1), null);
    }

    /**
     * {@code x · weightᵀ + bias} for a quantized weight. The default dequantizes it for this product only (QLoRA's
     * "dequantize on the fly"); a backend with a kernel for the weight's format multiplies the parts directly.
     */
    default Tensor linear(Tensor x, QuantizedTensor weight, Tensor bias) {
        return linear(x, dequantize(weight), bias);
    }

    /**
     * The dense weight {@code weight} stands for, in its dtype. The default composes the other ops (so a tracing
     * backend records it like any op), computing in float32 and rounding once to the dtype: NF4 looks each byte's
     * two levels up in the codebook and scales them by their block's absmax; 8-bit integers are cast, 4-bit ones
     * looked up like NF4's, and both shifted by their zero points and scaled per row or block.
     */
    default Tensor dequantize(QuantizedTensor weight) {
        return switch (weight.format()) {
            case WeightFormat.Nf4 nf4 -> ComposedDequantization.nf4(this, weight, nf4);
            case WeightFormat.Int integers -> ComposedDequantization.integers(this, weight, integers);
            default -> throw new UnsupportedOperationException("no dequantization of " + weight.format());
        };
    }

    /**
     * A mixture of experts over rows {@code x [N, H]}: {@code Σₑ routing[:, e] · experts[e](x)}, with
     * {@code routing [N, E]} in {@code x}'s dtype and 0 where a row is not routed to expert e. The default runs every
     * expert on every row (static shapes, what a tracer lowers); an eager backend overrides it to run each expert on
     * the rows routed to it only, adding the experts' weighted outputs per row in expert order. Each expert maps
     * {@code [M, H]} rows to {@code [M, H]}.
     */
    default Tensor mixture(Tensor x, Tensor routing, List<UnaryOperator<Tensor>> experts) {
        Tensor sum = null;
        for (int expert = 0; expert < experts.size(); expert++) {
            Tensor term = mul(experts.get(expert).apply(x), slice(routing, 1, expert, expert + 1));
            sum = sum == null ? term : add(sum, term);
        }
        return sum;
    }

    /** Rows {@code table[ids]}: {@code ids} of shape S (integers) gives {@code S + [table.size(1)]}. */
    Tensor embedding(Tensor table, Tensor ids);

    /**
     * Root-mean-square norm over the last dimension, Hugging Face semantics: computed in float32,
     * {@code x / sqrt(mean(x²) + eps)}, cast back to {@code x}'s dtype, then multiplied by {@code weight}.
     */
    Tensor rmsNorm(Tensor x, Tensor weight, double eps);

    /**
     * Rotary position embedding as transformers applies it: {@code x·cos + rotate_half(x)·sin}, where
     * rotate_half(x) = {@code [-x₂, x₁]} for the two halves of the last dimension. {@code x} is
     * {@code [B, H, T, D]}, {@code cos} and {@code sin} {@code [B, 1, T, D]}. The default composes the other ops; a
     * backend may fuse it.
     */
    default Tensor rotary(Tensor x, Tensor cos, Tensor sin) {
        long width = x.size(-1);
        long half = width / 2;
        Tensor rotated = concat(List.of(neg(slice(x, -1, half, width)), slice(x, -1, 0, half)), -1);
        return add(mul(x, cos), mul(rotated, sin));
    }

    Tensor softmax(Tensor x, int dim);

    Tensor logSoftmax(Tensor x, int dim);

    /** Index of the largest element along {@code dim} (the lowest index on ties), as I64; {@code dim} is removed. */
    Tensor argmax(Tensor x, int dim);

    // ---- masks ------------------------------------------------------------------------------------------------

    Tensor compare(Tensor a, Tensor b, Comparison comparison);

    Tensor and(Tensor a, Tensor b);

    Tensor or(Tensor a, Tensor b);

    // ---- attention and caches ---------------------------------------------------------------------------------

    /**
     * Scaled dot-product attention with grouped queries: {@code q [B, Hq, T, D]}, {@code k, v [B, Hkv, S, D]},
     * {@code Hq} a multiple of {@code Hkv} and query head h reading key/value head {@code h / (Hq / Hkv)}.
     * {@code allowed [B, 1, T, S]} (BOOL, broadcastable) says which keys each query may see; every query row must
     * allow at least one key. Returns {@code softmax(q·kᵀ·scale, masked) · v}, shape {@code [B, Hq, T, D]}.
     */
    Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale);

    /**
     * {@link #attention} with the scores soft-capped before the mask, {@code softcap · tanh(q·kᵀ·scale / softcap)}
     * (Gemma 2's {@code attn_logit_softcapping}); {@code softcap} 0 is plain attention. The default has no capped
     * form: a backend that computes it overrides this, one that does not refuses such a model by name here.
     */
    default Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale, double softcap) {
        if (softcap == 0) {
            return attention(q, k, v, allowed, scale);
        }
        throw new UnsupportedOperationException(getClass().getSimpleName()
                + " has no soft-capped attention (attn_logit_softcapping)");
    }

    /**
     * {@code target} with the entries at {@code index} (I64, one per slice) along {@code dim} replaced by
     * {@code source}: the KV cache write. Eager backends write in place and return {@code target} itself.
     */
    Tensor writeSlots(Tensor target, int dim, Tensor index, Tensor source);
}
