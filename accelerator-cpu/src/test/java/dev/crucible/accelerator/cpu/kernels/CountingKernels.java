package dev.crucible.accelerator.cpu.kernels;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import dev.crucible.torch.HostKernels;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;

/** Kernels that count their calls, so a test knows the kernel ran rather than libtorch's fallback. */
final class CountingKernels implements HostKernels {
    private final HostKernels delegate;
    final Map<String, Integer> calls = new TreeMap<>();

    CountingKernels(HostKernels delegate) {
        this.delegate = delegate;
    }

    int calls(String kernel) {
        return calls.getOrDefault(kernel, 0);
    }

    private void count(String kernel) {
        calls.merge(kernel, 1, Integer::sum);
    }

    @Override
    public boolean takesLinear(WeightFormat weight, DType dtype, long rows, long in, long out) {
        return delegate.takesLinear(weight, dtype, rows, in, out);
    }

    @Override
    public void linear(DType dtype, MemorySegment x, MemorySegment weight, MemorySegment bias, MemorySegment y,
                       int rows, int in, int out) {
        count("linear");
        delegate.linear(dtype, x, weight, bias, y, rows, in, out);
    }

    @Override
    public void rmsNorm(DType dtype, MemorySegment x, MemorySegment weight, MemorySegment y, int rows, int width,
                        double eps) {
        count("rmsNorm");
        delegate.rmsNorm(dtype, x, weight, y, rows, width, eps);
    }

    @Override
    public void gatedSilu(DType dtype, MemorySegment gate, MemorySegment up, MemorySegment y, int count) {
        count("gatedSilu");
        delegate.gatedSilu(dtype, gate, up, y, count);
    }

    @Override
    public void rotary(DType dtype, MemorySegment x, long[] xStrides, MemorySegment cos, MemorySegment sin,
                       MemorySegment y, int batch, int heads, int tokens, int width) {
        count("rotary");
        delegate.rotary(dtype, x, xStrides, cos, sin, y, batch, heads, tokens, width);
    }

    @Override
    public boolean takesAttention(DType dtype, long batch, long queryHeads, long queries, long keys, long width) {
        return delegate.takesAttention(dtype, batch, queryHeads, queries, keys, width);
    }

    @Override
    public void attention(DType dtype, MemorySegment q, long[] qStrides, MemorySegment k, long[] kStrides,
                          MemorySegment v, long[] vStrides, MemorySegment allowed, long[] maskStrides,
                          MemorySegment y, int batch, int queryHeads, int kvHeads, int queries, int keys, int width,
                          double scale) {
        count("attention");
        delegate.attention(dtype, q, qStrides, k, kStrides, v, vStrides, allowed, maskStrides, y, batch, queryHeads,
                kvHeads, queries, keys, width, scale);
    }

    @Override
    public void argmax(DType dtype, MemorySegment x, MemorySegment y, int rows, int width) {
        count("argmax");
        delegate.argmax(dtype, x, y, rows, width);
    }

    @Override
    public boolean takesQuantizedLinear(WeightFormat weight, DType dtype, long rows, long in, long out) {
        return delegate.takesQuantizedLinear(weight, dtype, rows, in, out);
    }

    @Override
    public void quantizedLinear(WeightFormat weight, DType dtype, MemorySegment x, MemorySegment codes,
                                MemorySegment scales, MemorySegment zeroPoints, MemorySegment bias, MemorySegment y,
                                int rows, int in, int out) {
        count("quantizedLinear");
        delegate.quantizedLinear(weight, dtype, x, codes, scales, zeroPoints, bias, y, rows, in, out);
    }

    @Override
    public boolean takesDequantize(WeightFormat weight, DType dtype) {
        return delegate.takesDequantize(weight, dtype);
    }

    @Override
    public void dequantize(WeightFormat weight, DType dtype, MemorySegment codes, MemorySegment scales,
                           MemorySegment zeroPoints, MemorySegment y, int rows, int in) {
        count("dequantize");
        delegate.dequantize(weight, dtype, codes, scales, zeroPoints, y, rows, in);
    }

    @Override
    public String describe(WeightFormat weight, DType dtype) {
        return delegate.describe(weight, dtype);
    }
}
