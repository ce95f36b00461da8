package dev.crucible.runner.abliterate;

import dev.crucible.runner.abliterate.config.RowNormalization;
import java.util.SplittableRandom;

/**
 * The LoRA factors (PEFT layout: A {@code [r, in]}, B {@code [out, r]}, scale 1) that ablate direction {@code v}
 * (unit, length {@code out}) from the outputs of a weight W {@code [out, in]} with strength {@code w}. All in
 * float32 from the float32 view of the base weight; the base weight itself is never changed.
 *
 * <p>{@code full} computes Δ = W' − W densely and keeps its best rank-r approximation by a seeded randomized SVD
 * (Halko, Martinsson and Tropp: Gaussian test matrix with oversampling, power iterations with
 * re-orthonormalization, exact SVD of the small projected matrix), B = U√S and A = √S Vᵀ.
 */
public final class AblationAdapter {
    /** The method's defaults for {@code full}: rank 3, oversampling 2r + 4, 6 power iterations. */
    public static final int RANK = 3;
    public static final int POWER_ITERATIONS = 6;

    /** A = {@code a} ({@code rank × in}, row-major), B = {@code b} ({@code out × rank}, row-major). */
    public record Factors(int rank, int out, int in, float[] a, float[] b) { }

    private AblationAdapter() {
    }

    /**
     * @param weight  W row-major {@code [out, in]}
     * @param rowNorm ‖W_i‖ for each row (precomputed once per run)
     */
    public static Factors compute(RowNormalization mode, float[] weight, float[] rowNorm, int out, int in,
                                  float[] v, double w, long seed) {
        return compute(mode, weight, rowNorm, out, in, v, w, RANK, seed);
    }

    /** As above with the rank of {@code full}'s approximation (oversampling 2r + 4). */
    public static Factors compute(RowNormalization mode, float[] weight, float[] rowNorm, int out, int in,
                                  float[] v, double w, int rank, long seed) {
        return switch (mode) {
            case NONE -> rankOne(weight, null, out, in, v, w);
            case PRE -> rankOne(weight, rowNorm, out, in, v, w);
            case FULL -> full(weight, rowNorm, out, in, v, w, rank, seed);
        };
    }

    /** none: A = vᵀW, B = −w v.  pre: A = vᵀŴ, B = −w (‖W_i‖ ⊙ v). */
    private static Factors rankOne(float[] weight, float[] rowNorm, int out, int in, float[] v, double w) {
        double[] a = new double[in];
        for (int i = 0; i < out; i++) {
            double coefficient = rowNorm == null ? v[i] : v[i] / safe(rowNorm[i]);
            axpy(a, coefficient, weight, i * in, in);
        }
        float[] b = new float[out];
        for (int i = 0; i < out; i++) {
            b[i] = (float) (-w * v[i] * (rowNorm == null ? 1 : rowNorm[i]));
        }
        return new Factors(1, out, in, toFloats(a), b);
    }

    /**
     * W' = Ŵ − w v vᵀ Ŵ with each row rescaled to the original row norm; Δ = W' − W. Row i of Δ works out to
     * {@code (c_i/n_i − 1) W_i − c_i w v_i u} with u = vᵀŴ, n_i = ‖W_i‖ and c_i = n_i / ‖W'_i‖.
     */
    private static Factors full(float[] weight, float[] rowNorm, int out, int in, float[] v, double w, int rank, long seed) {
        double[] u = new double[in];
        for (int i = 0; i < out; i++) {
            axpy(u, v[i] / safe(rowNorm[i]), weight, i * in, in);
        }
        double uu = 0;
        for (double x : u) {
            uu += x * x;
        }
        float[] delta = deltaBuffer(out * in);
        for (int i = 0; i < out; i++) {
            double n = safe(rowNorm[i]);
            int row = i * in;
            // ‖Ŵ_i − w v_i u‖² = 1 − 2 w v_i (Ŵ_i·u) + w² v_i² ‖u‖²
            double rowDotU = 0;
            for (int k = 0; k < in; k++) {
                rowDotU += weight[row + k] * u[k];
            }
            rowDotU /= n;
            double norm2 = 1 - 2 * w * v[i] * rowDotU + w * w * v[i] * v[i] * uu;
            double c = n / Math.sqrt(Math.max(norm2, 1e-30));
            double scaleW = c / n - 1;
            double scaleU = -c * w * v[i];
            for (int k = 0; k < in; k++) {
                delta[row + k] = (float) (scaleW * weight[row + k] + scaleU * u[k]);
            }
        }
        return RandomizedSvd.lowRank(delta, out, in, rank, 2 * rank + 4, POWER_ITERATIONS, new SplittableRandom(seed));
    }

    /**
     * Δ's storage, one per thread, grown to the largest weight and reused: every trial computes Δ for every edited
     * weight (48 of them, ~490 MB, on a 0.5 B model), and fresh arrays that large go straight to the old generation,
     * so the heap grew trial after trial until a full collection.
     */
    private static final ThreadLocal<float[]> DELTA = ThreadLocal.withInitial(() -> new float[0]);

    private static float[] deltaBuffer(int size) {
        float[] buffer = DELTA.get();
        if (buffer.length < size) {
            buffer = new float[size];
            DELTA.set(buffer);
        }
        return buffer;
    }

    private static double safe(float norm) {
        return norm > 0 ? norm : 1;
    }

    static void axpy(double[] y, double alpha, float[] x, int offset, int length) {
        if (alpha == 0) {
            return;
        }
        for (int k = 0; k < length; k++) {
            y[k] += alpha * x[offset + k];
        }
    }

    static float[] toFloats(double[] v) {
        float[] out = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = (float) v[i];
        }
        return out;
    }

    /** ‖W_i‖ for every row. */
    public static float[] rowNorms(float[] weight, int out, int in) {
        float[] norms = new float[out];
        for (int i = 0; i < out; i++) {
            double s = 0;
            for (int k = 0; k < in; k++) {
                double x = weight[i * in + k];
                s += x * x;
            }
            norms[i] = (float) Math.sqrt(s);
        }
        return norms;
    }
}
