package dev.crucible.runner.abliterate;

import java.util.SplittableRandom;

/**
 * Seeded randomized truncated SVD of a dense float32 matrix M {@code [m, n]} (row-major), returned as LoRA
 * factors: B = U_r √S_r {@code [m, r]}, A = √S_r V_rᵀ {@code [r, n]}, so B·A is the best rank-r approximation
 * the sketch finds. Small matrices are kept in float64; the passes over M run in float32 × float64.
 */
final class RandomizedSvd {
    private RandomizedSvd() {
    }

    static AblationAdapter.Factors lowRank(float[] matrix, int m, int n, int rank, int sketch, int powerIterations,
                                           SplittableRandom random) {
        int q = Math.min(sketch, Math.min(m, n));
        int r = Math.min(rank, q);
        // Ω: n × q Gaussian, stored as q columns of length n.
        double[][] omega = new double[q][n];
        for (double[] column : omega) {
            for (int k = 0; k < n; k++) {
                column[k] = random.nextGaussian();
            }
        }
        double[][] y = times(matrix, m, n, omega);          // M Ω: q columns of length m
        orthonormalize(y);
        for (int it = 0; it < powerIterations; it++) {
            double[][] z = transposeTimes(matrix, m, n, y);  // Mᵀ Y: q columns of length n
            orthonormalize(z);
            y = times(matrix, m, n, z);
            orthonormalize(y);
        }
        // Small matrix Bs = Qᵀ M (q × n), rows = columns of Mᵀ Q.
        double[][] small = transposeTimes(matrix, m, n, y);
        // Eigen-decomposition of Bs Bsᵀ (q × q) gives Bs = Ub S Vᵀ.
        double[][] gram = new double[q][q];
        for (int i = 0; i < q; i++) {
            for (int j = i; j < q; j++) {
                double s = 0;
                for (int k = 0; k < n; k++) {
                    s += small[i][k] * small[j][k];
                }
                gram[i][j] = s;
                gram[j][i] = s;
            }
        }
        double[][] eigenvectors = new double[q][q];
        double[] eigenvalues = Jacobi.eigen(gram, eigenvectors);
        Integer[] order = new Integer[q];
        for (int i = 0; i < q; i++) {
            order[i] = i;
        }
        java.util.Arrays.sort(order, (a, b) -> Double.compare(eigenvalues[b], eigenvalues[a]));

        float[] bOut = new float[m * r];
        float[] aOut = new float[r * n];
        for (int c = 0; c < r; c++) {
            int e = order[c];
            double sigma = Math.sqrt(Math.max(eigenvalues[e], 0));
            // Deterministic sign: the largest-magnitude entry of the left vector is positive.
            double[] ub = new double[q];
            for (int i = 0; i < q; i++) {
                ub[i] = eigenvectors[i][e];
            }
            double[] left = new double[m];
            for (int i = 0; i < q; i++) {
                for (int k = 0; k < m; k++) {
                    left[k] += y[i][k] * ub[i];
                }
            }
            int argmax = 0;
            for (int k = 1; k < m; k++) {
                if (Math.abs(left[k]) > Math.abs(left[argmax])) {
                    argmax = k;
                }
            }
            double sign = left[argmax] < 0 ? -1 : 1;
            double root = Math.sqrt(sigma);
            for (int k = 0; k < m; k++) {
                bOut[k * r + c] = (float) (sign * left[k] * root);
            }
            if (sigma > 0) {
                // v = Bsᵀ ub / σ; A row c = √σ vᵀ = Bsᵀ ub / √σ.
                for (int k = 0; k < n; k++) {
                    double s = 0;
                    for (int i = 0; i < q; i++) {
                        s += small[i][k] * ub[i];
                    }
                    aOut[c * n + k] = (float) (sign * s / root);
                }
            }
        }
        return new AblationAdapter.Factors(r, m, n, aOut, bOut);
    }

    /** M X for X given as columns of length n; result as columns of length m. */
    static double[][] times(float[] matrix, int m, int n, double[][] columns) {
        int q = columns.length;
        double[][] out = new double[q][m];
        float[][] xs = new float[q][];
        for (int j = 0; j < q; j++) {
            xs[j] = AblationAdapter.toFloats(columns[j]);
        }
        for (int i = 0; i < m; i++) {
            int row = i * n;
            for (int j = 0; j < q; j++) {
                float[] x = xs[j];
                // four accumulators keep the FP pipeline busy (the JIT will not reassociate one sum)
                float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                int k = 0;
                for (; k + 3 < n; k += 4) {
                    s0 += matrix[row + k] * x[k];
                    s1 += matrix[row + k + 1] * x[k + 1];
                    s2 += matrix[row + k + 2] * x[k + 2];
                    s3 += matrix[row + k + 3] * x[k + 3];
                }
                double s = (double) s0 + s1 + s2 + s3;
                for (; k < n; k++) {
                    s += matrix[row + k] * x[k];
                }
                out[j][i] = s;
            }
        }
        return out;
    }

    /** Mᵀ Y for Y given as columns of length m; result as columns of length n. */
    static double[][] transposeTimes(float[] matrix, int m, int n, double[][] columns) {
        int q = columns.length;
        float[][] out = new float[q][n];
        for (int i = 0; i < m; i++) {
            int row = i * n;
            for (int j = 0; j < q; j++) {
                float alpha = (float) columns[j][i];
                if (alpha == 0) {
                    continue;
                }
                float[] z = out[j];
                for (int k = 0; k < n; k++) {
                    z[k] += alpha * matrix[row + k];
                }
            }
        }
        double[][] result = new double[q][n];
        for (int j = 0; j < q; j++) {
            for (int k = 0; k < n; k++) {
                result[j][k] = out[j][k];
            }
        }
        return result;
    }

    /** Modified Gram–Schmidt in place; a column that vanishes is left at zero. */
    static void orthonormalize(double[][] columns) {
        for (int j = 0; j < columns.length; j++) {
            double[] c = columns[j];
            for (int p = 0; p < j; p++) {
                double dot = RefusalDirections.dot(c, columns[p]);
                for (int k = 0; k < c.length; k++) {
                    c[k] -= dot * columns[p][k];
                }
            }
            double norm = Math.sqrt(RefusalDirections.dot(c, c));
            for (int k = 0; k < c.length; k++) {
                c[k] = norm > 1e-300 ? c[k] / norm : 0;
            }
        }
    }

    /** Cyclic Jacobi eigen-decomposition of a small symmetric matrix. */
    static final class Jacobi {
        private Jacobi() {
        }

        /** Returns the eigenvalues; {@code vectors[i][e]} is component i of eigenvector e. {@code a} is destroyed. */
        static double[] eigen(double[][] a, double[][] vectors) {
            int n = a.length;
            for (int i = 0; i < n; i++) {
                java.util.Arrays.fill(vectors[i], 0);
                vectors[i][i] = 1;
            }
            for (int sweep = 0; sweep < 100; sweep++) {
                double off = 0;
                for (int i = 0; i < n; i++) {
                    for (int j = i + 1; j < n; j++) {
                        off += a[i][j] * a[i][j];
                    }
                }
                if (off < 1e-30) {
                    break;
                }
                for (int p = 0; p < n; p++) {
                    for (int q = p + 1; q < n; q++) {
                        if (Math.abs(a[p][q]) < 1e-300) {
                            continue;
                        }
                        double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
                        double t = Math.signum(theta) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
                        if (theta == 0) {
                            t = 1;
                        }
                        double c = 1 / Math.sqrt(t * t + 1);
                        double s = t * c;
                        for (int k = 0; k < n; k++) {
                            double akp = a[k][p];
                            double akq = a[k][q];
                            a[k][p] = c * akp - s * akq;
                            a[k][q] = s * akp + c * akq;
                        }
                        for (int k = 0; k < n; k++) {
                            double apk = a[p][k];
                            double aqk = a[q][k];
                            a[p][k] = c * apk - s * aqk;
                            a[q][k] = s * apk + c * aqk;
                        }
                        for (int k = 0; k < n; k++) {
                            double vkp = vectors[k][p];
                            double vkq = vectors[k][q];
                            vectors[k][p] = c * vkp - s * vkq;
                            vectors[k][q] = s * vkp + c * vkq;
                        }
                    }
                }
            }
            double[] values = new double[n];
            for (int i = 0; i < n; i++) {
                values[i] = a[i][i];
            }
            return values;
        }
    }
}
