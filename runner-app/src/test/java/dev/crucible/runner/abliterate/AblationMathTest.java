package dev.crucible.runner.abliterate;

import dev.crucible.runner.abliterate.config.RowNormalization;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.model.Activations;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class AblationMathTest {

    private static float[] randomMatrix(int rows, int cols, long seed) {
        Random random = new Random(seed);
        float[] m = new float[rows * cols];
        for (int i = 0; i < m.length; i++) {
            m[i] = (float) random.nextGaussian();
        }
        return m;
    }

    private static float[] unit(int n, long seed) {
        Random random = new Random(seed);
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextGaussian();
        }
        RefusalDirections.normalize(v);
        return AblationAdapter.toFloats(v);
    }

    /** B·A as a dense [out, in] matrix. */
    private static double[] product(AblationAdapter.Factors f) {
        double[] m = new double[f.out() * f.in()];
        for (int i = 0; i < f.out(); i++) {
            for (int c = 0; c < f.rank(); c++) {
                double b = f.b()[i * f.rank() + c];
                for (int k = 0; k < f.in(); k++) {
                    m[i * f.in() + k] += b * f.a()[c * f.in() + k];
                }
            }
        }
        return m;
    }

    @Test
    void noneRemovesTheOutputComponentAlongV() {
        int out = 12;
        int in = 9;
        float[] w = randomMatrix(out, in, 1);
        float[] v = unit(out, 2);
        AblationAdapter.Factors f = AblationAdapter.compute(RowNormalization.NONE, w, AblationAdapter.rowNorms(w, out, in), out, in, v, 1.0, 0);
        double[] delta = product(f);
        // With w = 1, vᵀ(W + ΔW) = 0: the edited weight writes nothing along v.
        for (int k = 0; k < in; k++) {
            double s = 0;
            for (int i = 0; i < out; i++) {
                s += v[i] * (w[i * in + k] + delta[i * in + k]);
            }
            assertEquals(0, s, 1e-5);
        }
    }

    @Test
    void preAblatesUnitRowsThenRestoresTheirScale() {
        int out = 10;
        int in = 7;
        float[] w = randomMatrix(out, in, 3);
        float[] norms = AblationAdapter.rowNorms(w, out, in);
        float[] v = unit(out, 4);
        double strength = 0.7;
        double[] delta = product(AblationAdapter.compute(RowNormalization.PRE, w, norms, out, in, v, strength, 0));
        for (int i = 0; i < out; i++) {
            for (int k = 0; k < in; k++) {
                double u = 0;
                for (int j = 0; j < out; j++) {
                    u += v[j] * w[j * in + k] / norms[j];
                }
                assertEquals(-strength * norms[i] * v[i] * u, delta[i * in + k], 1e-5);
            }
        }
    }

    @Test
    void randomizedSvdRecoversAnExactlyLowRankMatrix() {
        int m = 40;
        int n = 30;
        float[] left = randomMatrix(m, 3, 5);
        float[] right = randomMatrix(3, n, 6);
        float[] matrix = new float[m * n];
        for (int i = 0; i < m; i++) {
            for (int k = 0; k < n; k++) {
                for (int c = 0; c < 3; c++) {
                    matrix[i * n + k] += left[i * 3 + c] * right[c * n + k];
                }
            }
        }
        AblationAdapter.Factors f = RandomizedSvd.lowRank(matrix, m, n, 3, 10, 6, new SplittableRandom(7));
        double[] approx = product(f);
        double err = 0;
        double norm = 0;
        for (int i = 0; i < matrix.length; i++) {
            err += (matrix[i] - approx[i]) * (matrix[i] - approx[i]);
            norm += matrix[i] * matrix[i];
        }
        assertTrue(Math.sqrt(err / norm) < 1e-5, "relative error " + Math.sqrt(err / norm));
    }

    @Test
    void fullKeepsNearlyTheBestRankThreeApproximationAndIsSeeded() {
        int out = 24;
        int in = 16;
        float[] w = randomMatrix(out, in, 8);
        float[] norms = AblationAdapter.rowNorms(w, out, in);
        float[] v = unit(out, 9);
        AblationAdapter.Factors f = AblationAdapter.compute(RowNormalization.FULL, w, norms, out, in, v, 1.2, 42);
        assertEquals(3, f.rank());
        // Exact Δ from the definition: W' = Ŵ − w v vᵀŴ, rows rescaled to ‖W_i‖, Δ = W' − W.
        double[] u = new double[in];
        for (int j = 0; j < out; j++) {
            for (int k = 0; k < in; k++) {
                u[k] += v[j] * w[j * in + k] / norms[j];
            }
        }
        double[] exact = new double[out * in];
        for (int i = 0; i < out; i++) {
            double[] row = new double[in];
            double rowNorm = 0;
            for (int k = 0; k < in; k++) {
                row[k] = w[i * in + k] / norms[i] - 1.2 * v[i] * u[k];
                rowNorm += row[k] * row[k];
            }
            rowNorm = Math.sqrt(rowNorm);
            for (int k = 0; k < in; k++) {
                exact[i * in + k] = row[k] / rowNorm * norms[i] - w[i * in + k];
            }
        }
        // Best possible rank-3 error from the exact singular values of Δ (eigenvalues of ΔᵀΔ).
        double[][] gram = new double[in][in];
        for (int a = 0; a < in; a++) {
            for (int b = 0; b < in; b++) {
                for (int i = 0; i < out; i++) {
                    gram[a][b] += exact[i * in + a] * exact[i * in + b];
                }
            }
        }
        double[] eig = RandomizedSvd.Jacobi.eigen(gram, new double[in][in]);
        java.util.Arrays.sort(eig);
        double tail = 0;
        for (int i = 0; i < in - 3; i++) {
            tail += Math.max(eig[i], 0);
        }
        double[] approx = product(f);
        double err = 0;
        for (int i = 0; i < exact.length; i++) {
            err += (exact[i] - approx[i]) * (exact[i] - approx[i]);
        }
        assertTrue(err <= tail * 1.05 + 1e-9, "rank-3 error " + err + " vs optimal " + tail);
        // Seeded, and independent of what was computed before (Δ's storage is reused from weight to weight).
        float[] larger = randomMatrix(40, 30, 10);
        AblationAdapter.compute(RowNormalization.FULL, larger, AblationAdapter.rowNorms(larger, 40, 30), 40, 30,
                unit(40, 11), 0.7, 5);
        AblationAdapter.Factors again = AblationAdapter.compute(RowNormalization.FULL, w, norms, out, in, v, 1.2, 42);
        assertArrayEquals(f.a(), again.a());
        assertArrayEquals(f.b(), again.b());
    }

    @Test
    void directionsAreUnitOrthogonalToTheHarmlessMeanAndInterpolate() {
        List<Activations> bad = new ArrayList<>();
        List<Activations> good = new ArrayList<>();
        Random random = new Random(11);
        for (int p = 0; p < 20; p++) {
            bad.add(activations(random, 3, 6, 2.0));
            good.add(activations(random, 3, 6, 0.0));
        }
        RefusalDirections directions = RefusalDirections.compute(bad, good, 1.0, true);
        double[][] goodMean = RefusalDirections.means(good, 1.0);
        for (int l = 0; l < 3; l++) {
            float[] r = directions.at(l);
            double norm = 0;
            double dot = 0;
            for (int i = 0; i < r.length; i++) {
                norm += r[i] * r[i];
                dot += r[i] * goodMean[l][i];
            }
            assertEquals(1, norm, 1e-5);
            assertEquals(0, dot, 1e-5);
        }
        assertArrayEquals(directions.at(1), directions.interpolated(0.0), 1e-6f, "index 0 is boundary 1 (after layer 0)");
        assertArrayEquals(directions.at(2), directions.interpolated(1.0), 1e-6f);
        float[] half = directions.interpolated(0.5);
        double norm = 0;
        for (float x : half) {
            norm += x * x;
        }
        assertEquals(1, norm, 1e-5);
    }

    @Test
    void winsorizationClampsEachVectorAtItsQuantile() {
        float[] v = {1, -2, 3, -100};
        assertEquals(2.5, RefusalDirections.absQuantile(v, 0.5), 1e-12);
        Activations a = new Activations(new float[][] {v}, new float[0], new float[0]);
        double[][] mean = RefusalDirections.means(List.of(a), 0.5);
        assertArrayEquals(new double[] {1, -2, 2.5, -2.5}, mean[0], 1e-12);
    }

    @Test
    void weightProfileFollowsTheMethod() {
        AblationParameters.WeightProfile p = new AblationParameters.WeightProfile(1.2, 10, 0.4, 4);
        assertEquals(1.2, p.weightAt(10).getAsDouble(), 1e-12);
        assertEquals(1.2 + 0.5 * (0.4 - 1.2), p.weightAt(12).getAsDouble(), 1e-12);
        assertEquals(0.4, p.weightAt(14).getAsDouble(), 1e-12);
        assertTrue(p.weightAt(15).isEmpty(), "beyond min_weight_distance");
        assertTrue(new AblationParameters.WeightProfile(0, 10, 0, 4).weightAt(10).isEmpty(), "zero weight is skipped");
    }

    private static Activations activations(Random random, int boundaries, int hidden, double shift) {
        float[][] residuals = new float[boundaries][hidden];
        for (float[] r : residuals) {
            for (int i = 0; i < hidden; i++) {
                r[i] = (float) (random.nextGaussian() + 1 + (i == 0 ? shift : 0));
            }
        }
        return new Activations(residuals, new float[hidden], new float[4]);
    }
}
