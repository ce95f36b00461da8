package dev.crucible.torch;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;

/**
 * Kernels a backend runs on host memory in place of libtorch's, for the shapes where libtorch is slow: above all
 * the matrix-vector products of a decode step, which libtorch's CPU build runs far below memory bandwidth (its
 * bfloat16 GEMV worst), and the small per-token ops whose dispatch costs more than their work, or which libtorch
 * splits over threads that then wait on each other. {@link TorchOps} calls them only in inference scopes (nothing
 * needs a gradient) on CPU tensors, after asking whether a kernel takes the shape; every other call goes to
 * libtorch as before.
 *
 * <p>Tensors arrive as their bytes plus, where views are common, strides in elements; rows of the last dimension
 * are always contiguous. Floating-point arguments share one dtype ({@link DType#F32} or {@link DType#BF16});
 * kernels compute in float32 and round each result once to the dtype (to nearest even), as libtorch does.
 */
public interface HostKernels extends AutoCloseable {

    /**
     * Whether {@link #linear} takes {@code rows} rows of {@code in} features in {@code dtype} onto {@code out} by a
     * weight stored as {@code weight}. Kernels are chosen by the weight's format: today's take dense weights of the
     * activations' dtype, and a kernel for a quantized format answers for that format here.
     */
    boolean takesLinear(WeightFormat weight, DType dtype, long rows, long in, long out);

    /**
     * {@code y = x·wᵀ + bias}: {@code x [rows, in]}, {@code weight [out, in]} (as checkpoints store it),
     * {@code bias [out]} or null, {@code y [rows, out]}, all contiguous.
     */
    void linear(DType dtype, MemorySegment x, MemorySegment weight, MemorySegment bias, MemorySegment y, int rows,
                int in, int out);

    /**
     * The dtype libtorch's matrix products of {@code dtype} tensors should compute in where {@link #linear} does not
     * take them (a prefill's many rows): {@code dtype} itself, unless libtorch's product in it is slow on this
     * machine (bfloat16 on a CPU without bf16 dot products ran at a third of float32), in which case the operands are
     * widened for each product and the result rounded back.
     */
    default DType gemmDtype(DType dtype) {
        return dtype;
    }

    /**
     * Root-mean-square norm of each contiguous row of {@code width}, Hugging Face semantics: computed in float32,
     * {@code x / sqrt(mean(x²) + eps)} rounded to the dtype, then multiplied by {@code weight} (and rounded again).
     */
    void rmsNorm(DType dtype, MemorySegment x, MemorySegment weight, MemorySegment y, int rows, int width, double eps);

    /** {@code y = silu(gate)·up} over {@code count} contiguous elements, silu rounded to the dtype before the product. */
    void gatedSilu(DType dtype, MemorySegment gate, MemorySegment up, MemorySegment y, int count);

    /**
     * Rotary embedding {@code y = x·cos + rotate_half(x)·sin} (rotate_half(x) = {@code [-x₂, x₁]} for the halves of
     * the head) on {@code x [batch, heads, tokens, width]} with strides {@code xStrides} (batch, head, token);
     * {@code cos} and {@code sin} are contiguous {@code [batch, tokens, width]} (one rotation per token, shared by
     * every head); {@code y} is contiguous {@code [batch, heads, tokens, width]}. Each product is rounded to the dtype
     * before the sum, as the unfused ops do.
     */
    void rotary(DType dtype, MemorySegment x, long[] xStrides, MemorySegment cos, MemorySegment sin, MemorySegment y,
                int batch, int heads, int tokens, int width);

    /** Whether {@link #attention} takes {@code queries} query tokens over {@code keys} keys. */
    boolean takesAttention(DType dtype, long batch, long queryHeads, long queries, long keys, long width);

    /**
     * Grouped-query attention {@code softmax(q·kᵀ·scale, masked)·v}: {@code q [batch, queryHeads, queries, width]},
     * {@code k, v [batch, kvHeads, keys, width]} (query head h reads key/value head {@code h / (queryHeads / kvHeads)}),
     * each with its strides (batch, head, token); {@code allowed} is BOOL {@code [batch?, queries, keys]} with strides
     * (batch, query), batch stride 0 when broadcast; {@code y} is contiguous {@code [batch, queries, queryHeads,
     * width]}: the layout the output projection reads.
     */
    void attention(DType dtype, MemorySegment q, long[] qStrides, MemorySegment k, long[] kStrides, MemorySegment v,
                   long[] vStrides, MemorySegment allowed, long[] maskStrides, MemorySegment y, int batch,
                   int queryHeads, int kvHeads, int queries, int keys, int width, double scale);

    /** Index of the largest element of each contiguous row (the lowest index on ties), as I64 into {@code y}. */
    void argmax(DType dtype, MemorySegment x, MemorySegment y, int rows, int width);

    /**
     * Whether {@link #quantizedLinear} takes {@code rows} rows of {@code in} features in {@code dtype} onto
     * {@code out} by a weight kept in the quantized {@code weight} format. None by default.
     */
    default boolean takesQuantizedLinear(WeightFormat weight, DType dtype, long rows, long in, long out) {
        return false;
    }

    /**
     * {@code y = x·wᵀ + bias} for a quantized weight given by its parts as {@code QuantizedTensor} holds them
     * ({@code codes}, float32 {@code scales}, {@code zeroPoints} or null): {@code x [rows, in]}, {@code y [rows, out]}
     * and {@code bias [out]} (or null) in {@code dtype}, all contiguous.
     */
    default void quantizedLinear(WeightFormat weight, DType dtype, MemorySegment x, MemorySegment codes,
                                 MemorySegment scales, MemorySegment zeroPoints, MemorySegment bias, MemorySegment y,
                                 int rows, int in, int out) {
        throw new UnsupportedOperationException("no quantized product for " + weight);
    }

    /** Whether {@link #dequantize} takes weights of {@code weight}'s format to {@code dtype}. None by default. */
    default boolean takesDequantize(WeightFormat weight, DType dtype) {
        return false;
    }

    /**
     * The dense {@code [rows, in]} weight in {@code dtype} into {@code y}, from its parts (as for
     * {@link #quantizedLinear}), each element rounded once: what a product of many rows (a prefill) starts from.
     */
    default void dequantize(WeightFormat weight, DType dtype, MemorySegment codes, MemorySegment scales,
                            MemorySegment zeroPoints, MemorySegment y, int rows, int in) {
        throw new UnsupportedOperationException("no dequantization of " + weight);
    }

    /** One line naming the kernels products with weights of {@code weight}'s format run on, for reports. */
    default String describe(WeightFormat weight, DType dtype) {
        return "dequantized by libtorch ops for each product, then libtorch's matrix product";
    }

    /** Frees what the kernels hold (worker threads, scratch memory); the model that uses them closes them. */
    @Override
    default void close() {
    }
}
