package dev.crucible.api.quant;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Arrays;
import java.util.Objects;

/**
 * A quantized weight on the host, as its parts: what a {@link WeightCodec} writes and reads, what a loader places
 * and what a file writer stores.
 *
 * @param name       the dense weight's name
 * @param format     the format of the parts
 * @param shape      the dense weight's shape
 * @param data       the packed codes
 * @param scales     the scales, float32; null for a GGUF block format, whose blocks carry their own
 * @param zeroPoints the zero points of an asymmetric format, else null
 */
public record QuantizedHostTensor(String name, WeightFormat format, long[] shape, HostTensor data, HostTensor scales,
                                  HostTensor zeroPoints) {
    public QuantizedHostTensor {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(format, "format is null");
        shape = Objects.requireNonNull(shape, "shape is null").clone();
        Objects.requireNonNull(data, "data is null");
        if (scales == null && !(format instanceof WeightFormat.Gguf)) {
            throw new NullPointerException("scales is null");
        }
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof QuantizedHostTensor that && name.equals(that.name) && format.equals(that.format)
                && Arrays.equals(shape, that.shape) && data.equals(that.data) && Objects.equals(scales, that.scales)
                && Objects.equals(zeroPoints, that.zeroPoints);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, format, Arrays.hashCode(shape));
    }

    @Override
    public String toString() {
        return "QuantizedHostTensor[" + name + " " + format + Arrays.toString(shape) + "]";
    }
}
