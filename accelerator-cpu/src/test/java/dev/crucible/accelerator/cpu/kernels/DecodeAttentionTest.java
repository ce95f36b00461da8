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
            Lanes.exp(FloatVector.fromArray(MatVec.WIDENED, xs, 0)).intoArray(ys, 0);
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
        Lanes.exp(FloatVector.fromArray(MatVec.WIDENED, xs, 0)).intoArray(ys, 0);
        assertEquals(1f, ys[0]);
        for (int lane = 1; lane < LANES; lane++) {
            assertEquals(0f, ys[lane], "e^" + xs[lane]);
        }
    }

    /** The gated SiLU built on it, against {@code g / (1 + e^-g) · u} in double, from -120 to 120 (past both ends of exp). */
    @Test
    void gatedSiluIsWithinFloatRoundingOfTheExactOneOverItsWholeRange() {
        int count = 24_001;
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.lang.foreign.MemorySegment gate = arena.allocate(4L * count);
            java.lang.foreign.MemorySegment up = arena.allocate(4L * count);
            java.lang.foreign.MemorySegment y = arena.allocate(4L * count);
            for (int i = 0; i < count; i++) {
                gate.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, (i - 12_000) * 0.01f);
                up.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 1f + (i % 7) * 0.25f);
            }
            TokenOps.gatedSilu(false, gate, up, y, count);
            for (int i = 0; i < count; i++) {
                double g = gate.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i);
                double u = up.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i);
                double exact = g / (1 + Math.exp(-g)) * u;
                float got = y.getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i);
                // Below g = -87 the exponential counts as 0, so silu is 0 where the exact one is under 1e-35.
                assertTrue(Math.abs(got - exact) <= 1e-6 * Math.abs(exact) + 1e-35, "silu(" + g + ") * " + u + ": "
                        + got + " against " + exact);
            }
        }
    }
}
