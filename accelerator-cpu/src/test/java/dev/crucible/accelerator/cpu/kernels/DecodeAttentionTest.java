package dev.crucible.accelerator.cpu.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/** The softmax's vector exponential against {@link Math#exp}, over the whole range a softmax feeds it (x in [-87, 0]). */
class DecodeAttentionTest {
    private static final int LANES = MatVec.WIDENED.length();

    @Test
    void exponentialIsWithinFloatRoundingOfMathExp() {
        double worst = 0;
        float[] xs = new float[LANES];
        float[] ys = new float[LANES];
        for (int step = 0; step <= 870_000; step += LANES) {
            for (int lane = 0; lane < LANES; lane++) {
                xs[lane] = Math.max(-87f, -(step + lane) * 1e-4f);
            }
            DecodeAttention.exp(FloatVector.fromArray(MatVec.WIDENED, xs, 0)).intoArray(ys, 0);
            for (int lane = 0; lane < LANES; lane++) {
                double exact = Math.exp(xs[lane]);
                worst = Math.max(worst, Math.abs(ys[lane] - exact) / exact);
            }
        }
        assertTrue(worst < 3e-7, "largest relative error " + worst);
    }

    @Test
    void exponentialIsOneAtZeroAndZeroFarBelow() {
        float[] xs = new float[LANES];
        float[] ys = new float[LANES];
        xs[0] = 0f;
        for (int lane = 1; lane < LANES; lane++) {
            xs[lane] = lane % 2 == 0 ? Float.NEGATIVE_INFINITY : -88f - lane;
        }
        DecodeAttention.exp(FloatVector.fromArray(MatVec.WIDENED, xs, 0)).intoArray(ys, 0);
        assertEquals(1f, ys[0]);
        for (int lane = 1; lane < LANES; lane++) {
            assertEquals(0f, ys[lane], "e^" + xs[lane]);
        }
    }
}
