package dev.crucible.api.tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A weight kept on the device in a quantized {@link WeightFormat}, as its parts. It is not a {@link Tensor}: the
 * model definition multiplies by it through {@link TensorOps#linear(Tensor, QuantizedTensor, Tensor)}, which a
 * backend implements with a kernel for the format or, by default, by {@link TensorOps#dequantize dequantizing} it
 * for that one product.
 *
 * @param format     how {@code data} encodes the weights
 * @param shape      the dense weight's shape ({@code [out, in]} for a projection)
 * @param dtype      the dtype it dequantizes to: the model's compute dtype
 * @param data       the packed codes
 * @param scales     the scales (NF4: each block's absmax), float32
 * @param zeroPoints the zero points of an asymmetric format, else null
 * @param codebook   a lookup table the format's dequantization reads, shared by every weight of a model and owned
 *                   by it (NF4: the levels of both nibbles of each byte value, {@code [256, 2]}), else null
 */
public record QuantizedTensor(WeightFormat format, long[] shape, DType dtype, Tensor data, Tensor scales,
                              Tensor zeroPoints, Tensor codebook) {

    public QuantizedTensor {
        Objects.requireNonNull(format, "format is null");
        shape = Objects.requireNonNull(shape, "shape is null").clone();
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(data, "data is null");
        Objects.requireNonNull(scales, "scales is null");
        if (format instanceof WeightFormat.Dense) {
            throw new IllegalArgumentException("a dense weight is a Tensor, not a QuantizedTensor");
        }
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public long size(int dim) {
        return shape[dim < 0 ? shape.length + dim : dim];
    }

    /** The parts this weight owns (not the shared codebook), for its owner to release. */
    public List<Tensor> parts() {
        List<Tensor> parts = new ArrayList<>(List.of(data, scales));
        if (zeroPoints != null) {
            parts.add(zeroPoints);
        }
        return parts;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof QuantizedTensor that && format.equals(that.format) && Arrays.equals(shape, that.shape)
                && dtype == that.dtype && data.equals(that.data) && scales.equals(that.scales)
                && Objects.equals(zeroPoints, that.zeroPoints) && Objects.equals(codebook, that.codebook);
    }

    @Override
    public int hashCode() {
        return Objects.hash(format, Arrays.hashCode(shape), dtype, data, scales);
    }

    @Override
    public String toString() {
        return "QuantizedTensor[" + format + " " + Arrays.toString(shape) + " -> " + dtype + "]";
    }
}
