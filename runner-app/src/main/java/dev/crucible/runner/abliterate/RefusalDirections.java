package dev.crucible.runner.abliterate;

import dev.crucible.api.model.Activations;
import java.util.Arrays;
import java.util.List;

/**
 * The per-layer refusal directions of the method: for every residual boundary (0 = embeddings, l = after layer
 * l-1), the normalized difference of the mean residual of harmful and harmless prompts at their last prompt
 * position, optionally orthogonalized against the harmless mean. Means are accumulated in float64; each vector
 * may first be winsorized (clamped to ± the q-quantile of its absolute values).
 *
 * @param directions {@code numLayers + 1} unit vectors of the hidden size, float32
 */
public record RefusalDirections(float[][] directions) {

    public static RefusalDirections compute(List<Activations> harmful, List<Activations> harmless,
                                            double winsorizationQuantile, boolean orthogonalize) {
        if (harmful.isEmpty() || harmless.isEmpty()) {
            throw new IllegalArgumentException("both prompt sets need at least one prompt");
        }
        double[][] bad = means(harmful, winsorizationQuantile);
        double[][] good = means(harmless, winsorizationQuantile);
        float[][] out = new float[bad.length][];
        for (int l = 0; l < bad.length; l++) {
            double[] r = new double[bad[l].length];
            for (int i = 0; i < r.length; i++) {
                r[i] = bad[l][i] - good[l][i];
            }
            normalize(r);
            if (orthogonalize) {
                double[] g = good[l].clone();
                normalize(g);
                double dot = dot(r, g);
                for (int i = 0; i < r.length; i++) {
                    r[i] -= dot * g[i];
                }
                normalize(r);
            }
            out[l] = toFloats(r);
        }
        return new RefusalDirections(out);
    }

    public int count() {
        return directions.length;
    }

    /** The direction at boundary {@code index} (a copy). */
    public float[] at(int index) {
        return directions[index].clone();
    }

    /**
     * The method's float {@code direction_index}: {@code i = floor(d + 1)}, {@code f = frac(d + 1)},
     * {@code normalize(lerp(R_i, R_{i+1}, f))}; an index past the last boundary takes the last direction.
     */
    public float[] interpolated(double directionIndex) {
        double shifted = directionIndex + 1;
        int i = (int) Math.floor(shifted);
        double f = shifted - i;
        i = Math.max(0, Math.min(i, directions.length - 1));
        int j = Math.min(i + 1, directions.length - 1);
        double[] r = new double[directions[i].length];
        for (int k = 0; k < r.length; k++) {
            r[k] = directions[i][k] + f * (directions[j][k] - directions[i][k]);
        }
        normalize(r);
        return toFloats(r);
    }

    /** Mean of every boundary's residual over prompts, in float64, after optional winsorization of each vector. */
    static double[][] means(List<Activations> prompts, double quantile) {
        int boundaries = prompts.getFirst().residualCount();
        double[][] sum = null;
        for (Activations prompt : prompts) {
            float[][] residuals = prompt.residuals();
            if (sum == null) {
                sum = new double[boundaries][residuals[0].length];
            }
            for (int l = 0; l < boundaries; l++) {
                float[] v = residuals[l];
                double clamp = quantile < 1 ? absQuantile(v, quantile) : Double.POSITIVE_INFINITY;
                for (int i = 0; i < v.length; i++) {
                    sum[l][i] += Math.max(-clamp, Math.min(clamp, v[i]));
                }
            }
        }
        for (double[] row : sum) {
            for (int i = 0; i < row.length; i++) {
                row[i] /= prompts.size();
            }
        }
        return sum;
    }

    /** The q-quantile of |v| with linear interpolation between order statistics (numpy's default). */
    static double absQuantile(float[] v, double q) {
        double[] abs = new double[v.length];
        for (int i = 0; i < v.length; i++) {
            abs[i] = Math.abs(v[i]);
        }
        Arrays.sort(abs);
        double position = q * (abs.length - 1);
        int lower = (int) Math.floor(position);
        int upper = Math.min(lower + 1, abs.length - 1);
        return abs[lower] + (position - lower) * (abs[upper] - abs[lower]);
    }

    static double dot(double[] a, double[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i] * b[i];
        }
        return s;
    }

    /**
     * Divides by max(‖v‖, 1e-12), as torch's {@code F.normalize} does: a zero vector stays zero. That happens for
     * real: at the embeddings, every chat-rendered prompt ends in the same token, so both means coincide there.
     */
    static void normalize(double[] v) {
        double norm = Math.max(Math.sqrt(dot(v, v)), 1e-12);
        for (int i = 0; i < v.length; i++) {
            v[i] /= norm;
        }
    }

    private static float[] toFloats(double[] v) {
        float[] out = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = (float) v[i];
        }
        return out;
    }
}
