package dev.crucible.api.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The host NF4 codec: QLoRA's levels, its blocks and packing, and what a weight dequantizes to. */
public class Nf4CodecTest {

    /**
     * QLoRA's construction: 8 positive quantiles of N(0, 1) at probabilities from 0.9677 down to 0.5 (exclusive),
     * 7 negative ones likewise, an exact zero, everything divided by the largest. The table must be exactly that.
     */
    @Test
    void levelsAreNormalQuantilesWithAnExactZero() {
        double offset = 0.9677083;
        double[] levels = new double[16];
        int next = 0;
        for (int i = 0; i < 8; i++) {
            levels[next++] = quantile(offset + (0.5 - offset) * i / 8);
        }
        for (int i = 0; i < 7; i++) {
            levels[next++] = -quantile(offset + (0.5 - offset) * i / 7);
        }
        levels[next] = 0;
        Arrays.sort(levels);
        double max = levels[15];
        for (int i = 0; i < 16; i++) {
            assertEquals(levels[i] / max, Nf4Codec.LEVELS[i], 1e-6, "level " + i);
        }
    }

    @Test
    void dequantizedValuesAreTheNearestLevelTimesTheBlockAbsmax() {
        float[] values = sample();
        QuantizedHostTensor weight = new Nf4Codec(WeightFormat.Nf4.QLORA).encode("w", values, new long[] {3, 100});
        assertArrayEquals(new long[] {3, 100}, weight.shape());
        assertArrayEquals(new long[] {5 * 32}, weight.data().shape(), "two 4-bit codes per byte");
        assertEquals(DType.U8, weight.data().dtype());
        assertEquals(5 * 32 + 5 * 4, WeightFormat.Nf4.QLORA.storedBytes(new long[] {300}));
        assertDequantized(values, new Nf4Codec(WeightFormat.Nf4.QLORA).decode(weight));
    }

    /**
     * 300 elements of N(0, 0.05²) as a [3, 100] weight: four full blocks and a partial one; the third block is all
     * zero.
     */
    public static float[] sample() {
        Random random = new Random(11);
        float[] values = new float[300];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * 0.05);
        }
        Arrays.fill(values, 128, 192, 0f);
        return values;
    }

    /** Each restored value is its block's absmax times the level nearest to value / absmax. */
    public static void assertDequantized(float[] values, float[] restored) {
        for (int block = 0; block < 5; block++) {
            int from = block * 64;
            int to = Math.min(values.length, from + 64);
            float absmax = 0;
            for (int i = from; i < to; i++) {
                absmax = Math.max(absmax, Math.abs(values[i]));
            }
            for (int i = from; i < to; i++) {
                float expected = absmax == 0 ? 0 : nearestLevel(values[i] / absmax) * absmax;
                assertEquals(expected, restored[i], 1e-7, "element " + i);
            }
        }
        double error = 0;
        double scale = 0;
        for (int i = 0; i < values.length; i++) {
            error += Math.abs(restored[i] - values[i]);
            scale += Math.abs(values[i]);
        }
        assertTrue(error / scale < 0.12, "mean relative error " + error / scale);
    }

    private static float nearestLevel(float x) {
        float best = Nf4Codec.LEVELS[0];
        for (float level : Nf4Codec.LEVELS) {
            if (Math.abs(level - x) < Math.abs(best - x)) {
                best = level;
            }
        }
        return best;
    }

    /** The standard normal quantile by bisection on the CDF (Simpson's rule on the density). */
    private static double quantile(double p) {
        double low = -10;
        double high = 10;
        for (int i = 0; i < 100; i++) {
            double mid = (low + high) / 2;
            if (cdf(mid) < p) {
                low = mid;
            } else {
                high = mid;
            }
        }
        return (low + high) / 2;
    }

    private static double cdf(double x) {
        int steps = 4000;
        double h = x / steps;
        double sum = density(0) + density(x);
        for (int i = 1; i < steps; i++) {
            sum += density(i * h) * (i % 2 == 0 ? 2 : 4);
        }
        return 0.5 + sum * h / 3;
    }

    private static double density(double t) {
        return Math.exp(-t * t / 2) / Math.sqrt(2 * Math.PI);
    }

    @Test
    void aHostTensorReadBlockByBlockEncodesExactlyAsItsFloats() {
        java.util.Random random = new java.util.Random(7);
        float[] values = new float[3 * 100]; // 300 values: four full blocks of 64 and a partial one
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * 0.05);
        }
        java.util.Arrays.fill(values, 64, 128, 0f);
        long[] shape = {3, 100};
        Nf4Codec codec = new Nf4Codec(dev.crucible.api.tensor.WeightFormat.Nf4.QLORA);
        for (dev.crucible.api.tensor.DType dtype : new dev.crucible.api.tensor.DType[] {
                dev.crucible.api.tensor.DType.F32, dev.crucible.api.tensor.DType.BF16}) {
            dev.crucible.api.tensor.HostTensor host = dev.crucible.api.tensor.HostTensor.ofFloats("w", dtype, shape,
                    values);
            QuantizedHostTensor expected = codec.encode("w", host.toFloatArray(), shape);
            QuantizedHostTensor blocks = codec.encode(host);
            org.junit.jupiter.api.Assertions.assertArrayEquals(expected.data().toByteArray(),
                    blocks.data().toByteArray(), dtype.toString());
            org.junit.jupiter.api.Assertions.assertArrayEquals(expected.scales().toByteArray(),
                    blocks.scales().toByteArray(), dtype.toString());
        }
    }
}
