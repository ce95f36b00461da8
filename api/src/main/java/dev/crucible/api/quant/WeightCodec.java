package dev.crucible.api.quant;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Optional;

/**
 * Quantizes float weights into one {@link WeightFormat}'s parts and back, on the host. One codec per format serves
 * the loader (quantize while a checkpoint loads), the tests (the reference every kernel is checked against) and the
 * file writers; a backend's kernels only ever read the parts.
 */
public interface WeightCodec {

    WeightFormat format();

    /** {@code values}, row-major of {@code shape}, in this format; the parts are heap tensors. */
    QuantizedHostTensor encode(String name, float[] values, long[] shape);

    /** A floating-point host tensor in this format; codecs that can read it in pieces override this. */
    default QuantizedHostTensor encode(HostTensor host) {
        return encode(host.name(), host.toFloatArray(), host.shape());
    }

    /** The values {@code tensor} stands for, row-major, in float32. */
    float[] decode(QuantizedHostTensor tensor);

    /** A lookup table the format's dequantization reads on the device (see {@link dev.crucible.api.tensor.QuantizedTensor}), if any. */
    default Optional<HostTensor> codebook() {
        return Optional.empty();
    }

    /** The codec for a quantized {@code format}. */
    static WeightCodec of(WeightFormat format) {
        return switch (format) {
            case WeightFormat.Nf4 nf4 -> new Nf4Codec(nf4);
            case WeightFormat.Int integers -> new IntCodec(integers);
            case WeightFormat.Gguf gguf -> new GgufCodec(gguf);
            case WeightFormat.Dense dense -> throw new IllegalArgumentException("a dense weight needs no codec: " + dense);
        };
    }
}
