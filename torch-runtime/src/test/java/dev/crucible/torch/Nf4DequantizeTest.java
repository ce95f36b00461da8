package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.quant.Nf4Codec;
import dev.crucible.api.quant.QuantizedHostTensor;
import dev.crucible.api.quant.WeightCodec;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * NF4 weights on libtorch through the ops' composed dequantization: the device gives exactly what the host codec
 * decodes, in the compute dtype, and a product with the quantized weight is the product with its dense form.
 */
class Nf4DequantizeTest {

    private static final long[] SHAPE = {3, 100}; // 300 elements: four full blocks of 64 and a partial one

    @Test
    void theDeviceDequantizesExactlyWhatTheHostCodecDecodes() {
        float[] values = gaussian(300, 11);
        java.util.Arrays.fill(values, 128, 192, 0f); // an all-zero block
        WeightCodec codec = new Nf4Codec(WeightFormat.Nf4.QLORA);
        QuantizedHostTensor host = codec.encode("w", values, SHAPE);
        try (TorchOps ops = new TorchOps("cpu", true); TensorScope scope = ops.openScope()) {
            QuantizedTensor weight = place(ops, codec, host, DType.F32);
            Tensor dense = ops.dequantize(weight);
            assertArrayEquals(SHAPE, dense.shape());
            assertArrayEquals(codec.decode(host), ops.readFloats(dense));

            Tensor x = ops.constant(gaussian(200, 3), 2, 100);
            assertArrayEquals(ops.readFloats(ops.linear(x, dense, null)), ops.readFloats(ops.linear(x, weight, null)));
        }
    }

    @Test
    void dequantizesToTheComputeDtype() {
        WeightCodec codec = new Nf4Codec(WeightFormat.Nf4.QLORA);
        QuantizedHostTensor host = codec.encode("w", new float[128], new long[] {2, 64});
        try (TorchOps ops = new TorchOps("cpu", true); TensorScope scope = ops.openScope()) {
            QuantizedTensor weight = place(ops, codec, host, DType.BF16);
            assertEquals(DType.BF16, weight.dtype());
            assertEquals(DType.BF16, ops.dequantize(weight).dtype());
        }
    }

    private static QuantizedTensor place(TorchOps ops, WeightCodec codec, QuantizedHostTensor host, DType dtype) {
        TorchPlacement placement = new TorchPlacement(ops, dtype);
        return new QuantizedTensor(host.format(), host.shape(), dtype,
                placement.toDevice(host.data(), DType.U8), placement.toDevice(host.scales(), DType.F32), null,
                placement.toDevice(codec.codebook().orElseThrow(), DType.F32));
    }

    private static float[] gaussian(int count, long seed) {
        Random random = new Random(seed);
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) (random.nextGaussian() * 0.05);
        }
        return values;
    }
}
