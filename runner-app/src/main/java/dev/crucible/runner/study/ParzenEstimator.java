package dev.crucible.runner.study;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.random.RandomGenerator;

/**
 * A weighted mixture of product kernels over some parameters: one kernel per observation (a trial's values of all
 * the parameters at once) plus one prior kernel. Each kernel is a product of one-dimensional parts: a Gaussian
 * truncated to the parameter's range for numbers (a Gaussian's mass over the integer's unit bin for integers), a
 * smoothed point mass for categorical choices. Values go in and come out in internal form; log floats are modelled
 * in log space. See the package documentation for the bandwidth rules.
 */
final class ParzenEstimator {

    /** Lower bound of a kernel width: the range divided by at most this many. */
    private static final double MAX_KERNELS_FOR_MIN_WIDTH = 100.0;
    /** Multivariate width: this fraction of the range for one observation, shrinking as n^(-1/(d+4)). */
    private static final double MULTIVARIATE_WIDTH = 0.2;

    private final List<Dimension> dimensions;
    private final double[] logWeights;
    private final double[] cumulativeWeights;

    /**
     * @param distributions      the parameters, in column order of {@code observations}
     * @param observations       one row per observation, internal values
     * @param observationWeights one non-negative weight per observation (not all zero when there are observations)
     * @param multivariate       the joint bandwidth rule (true) or the one-dimensional neighbour rule (false)
     * @param priorWeight        the prior kernel's weight relative to the observation weights
     */
    ParzenEstimator(List<ParameterDistribution> distributions, double[][] observations, double[] observationWeights,
                    boolean multivariate, double priorWeight) {
        if (observations.length != observationWeights.length) {
            throw new IllegalArgumentException("one weight per observation");
        }
        int n = observations.length;
        double[] weights = new double[n + 1];
        System.arraycopy(observationWeights, 0, weights, 0, n);
        // With no observations the prior is all there is; its weight then does not matter.
        weights[n] = n == 0 ? 1.0 : priorWeight;
        double total = 0;
        for (double w : weights) {
            if (!(w >= 0) || !Double.isFinite(w)) {
                throw new IllegalArgumentException("kernel weights must be finite and non-negative");
            }
            total += w;
        }
        this.logWeights = new double[n + 1];
        this.cumulativeWeights = new double[n + 1];
        double running = 0;
        for (int k = 0; k <= n; k++) {
            logWeights[k] = Math.log(weights[k] / total);
            running += weights[k] / total;
            cumulativeWeights[k] = running;
        }
        int d = distributions.size();
        this.dimensions = new ArrayList<>(d);
        for (int j = 0; j < d; j++) {
            double[] column = new double[n];
            for (int i = 0; i < n; i++) {
                column[i] = observations[i][j];
            }
            ParameterDistribution distribution = distributions.get(j);
            dimensions.add(switch (distribution) {
                case ParameterDistribution.Categorical c -> new CategoricalDimension(c.choices().size(), column, priorWeight);
                case ParameterDistribution.FloatRange f ->
                        NumericDimension.of(column, f.log() ? Math.log(f.low()) : f.low(),
                                f.log() ? Math.log(f.high()) : f.high(), f.log(), false, multivariate, d);
                case ParameterDistribution.IntRange r ->
                        NumericDimension.of(column, r.low() - 0.5, r.high() + 0.5, false, true, multivariate, d);
            });
        }
    }

    int kernelCount() {
        return logWeights.length;
    }

    /** Draws {@code count} points: pick a kernel by weight, then every coordinate from that kernel. */
    double[][] sample(RandomGenerator random, int count) {
        double[][] samples = new double[count][dimensions.size()];
        for (int s = 0; s < count; s++) {
            int kernel = pickKernel(random.nextDouble());
            for (int j = 0; j < dimensions.size(); j++) {
                samples[s][j] = dimensions.get(j).sample(kernel, random);
            }
        }
        return samples;
    }

    private int pickKernel(double u) {
        for (int k = 0; k < cumulativeWeights.length - 1; k++) {
            if (u < cumulativeWeights[k]) {
                return k;
            }
        }
        return cumulativeWeights.length - 1;
    }

    /** log of the mixture density at an internal point. */
    double logPdf(double[] point) {
        double[] terms = new double[logWeights.length];
        double max = Double.NEGATIVE_INFINITY;
        for (int k = 0; k < logWeights.length; k++) {
            double t = logWeights[k];
            for (int j = 0; j < dimensions.size() && t > Double.NEGATIVE_INFINITY; j++) {
                t += dimensions.get(j).logPdf(k, point[j]);
            }
            terms[k] = t;
            max = Math.max(max, t);
        }
        if (max == Double.NEGATIVE_INFINITY) {
            return max;
        }
        double sum = 0;
        for (double t : terms) {
            sum += Math.exp(t - max);
        }
        return max + Math.log(sum);
    }

    private sealed interface Dimension permits NumericDimension, CategoricalDimension {
        double sample(int kernel, RandomGenerator random);

        double logPdf(int kernel, double internalValue);
    }

    /**
     * Truncated Gaussians on {@code [low, high]} (in log space for log floats; widened by half a unit on each side
     * for integers, whose value is the unit bin around it).
     */
    private record NumericDimension(double low, double high, boolean log, boolean discrete, double[] means,
                                    double[] sigmas, double[] logNormalizers) implements Dimension {

        static NumericDimension of(double[] internal, double low, double high, boolean log, boolean discrete,
                                   boolean multivariate, int dimensionCount) {
            int n = internal.length;
            double[] mus = new double[n];
            for (int i = 0; i < n; i++) {
                mus[i] = log ? Math.log(internal[i]) : internal[i];
            }
            double range = high - low;
            double priorMean = 0.5 * (low + high);
            double[] widths = multivariate
                    ? multivariateWidths(n, dimensionCount, range)
                    : neighbourWidths(mus, low, high, priorMean);
            // Clip: never wider than the range, never narrower than range / (number of kernels, at most 100).
            double minWidth = range / Math.min(MAX_KERNELS_FOR_MIN_WIDTH, n + 2.0);
            double[] means = new double[n + 1];
            double[] sigmas = new double[n + 1];
            for (int i = 0; i < n; i++) {
                means[i] = mus[i];
                sigmas[i] = Math.clamp(widths[i], minWidth, range);
            }
            means[n] = priorMean;
            sigmas[n] = range;
            double[] logNormalizers = new double[n + 1];
            for (int k = 0; k <= n; k++) {
                logNormalizers[k] = NormalMath.logMass((low - means[k]) / sigmas[k], (high - means[k]) / sigmas[k]);
            }
            return new NumericDimension(low, high, log, discrete, means, sigmas, logNormalizers);
        }

        /** Scott-like rule for a d-dimensional product kernel: the same width for every observation. */
        private static double[] multivariateWidths(int n, int dimensionCount, double range) {
            double width = MULTIVARIATE_WIDTH * Math.pow(Math.max(n, 1), -1.0 / (dimensionCount + 4)) * range;
            double[] widths = new double[n];
            Arrays.fill(widths, width);
            return widths;
        }

        /**
         * One-dimensional rule: each kernel is as wide as the larger gap to its sorted neighbours (the prior mean
         * counts as a neighbour; the range ends count only for points that have a neighbour on the other side).
         */
        private static double[] neighbourWidths(double[] mus, double low, double high, double priorMean) {
            int n = mus.length;
            double[] withPrior = Arrays.copyOf(mus, n + 1);
            withPrior[n] = priorMean;
            Integer[] order = new Integer[n + 1];
            for (int i = 0; i <= n; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> Double.compare(withPrior[a], withPrior[b]));
            double[] sorted = new double[n + 3];
            sorted[0] = low;
            for (int i = 0; i <= n; i++) {
                sorted[i + 1] = withPrior[order[i]];
            }
            sorted[n + 2] = high;
            double[] sortedWidths = new double[n + 1];
            for (int i = 1; i <= n + 1; i++) {
                sortedWidths[i - 1] = Math.max(sorted[i] - sorted[i - 1], sorted[i + 1] - sorted[i]);
            }
            if (n + 1 >= 2) {
                // The outermost kernels ignore the range ends, which would otherwise make them needlessly wide.
                sortedWidths[0] = sorted[2] - sorted[1];
                sortedWidths[n] = sorted[n + 1] - sorted[n];
            }
            double[] widths = new double[n];
            for (int i = 0; i <= n; i++) {
                if (order[i] < n) {
                    widths[order[i]] = sortedWidths[i];
                }
            }
            return widths;
        }

        @Override
        public double sample(int kernel, RandomGenerator random) {
            double mu = means[kernel];
            double sigma = sigmas[kernel];
            double z = sampleStandardTruncated((low - mu) / sigma, (high - mu) / sigma, random.nextDouble());
            double x = Math.clamp(mu + sigma * z, low, high);
            if (discrete) {
                return Math.clamp(Math.round(x), Math.round(low + 0.5), Math.round(high - 0.5));
            }
            return log ? Math.exp(x) : x;
        }

        @Override
        public double logPdf(int kernel, double internalValue) {
            double x = log ? Math.log(internalValue) : internalValue;
            double mu = means[kernel];
            double sigma = sigmas[kernel];
            if (discrete) {
                return NormalMath.logMass((x - 0.5 - mu) / sigma, (x + 0.5 - mu) / sigma) - logNormalizers[kernel];
            }
            if (x < low || x > high) {
                return Double.NEGATIVE_INFINITY;
            }
            return NormalMath.logPdf((x - mu) / sigma) - Math.log(sigma) - logNormalizers[kernel];
        }

        /**
         * Inverse-CDF draw from a standard normal truncated to [a, b], working in the lower tail (mirroring when
         * the interval lies above 0) so that no probability close to 1 loses its digits.
         */
        static double sampleStandardTruncated(double a, double b, double u) {
            if (a >= 0) {
                return -sampleStandardTruncated(-b, -a, 1.0 - u);
            }
            double pa = NormalMath.cdf(a);
            double mass = Math.exp(NormalMath.logMass(a, b));
            double p = pa + u * mass;
            double z = p < 0.5
                    ? NormalMath.inverseCdf(p)
                    : -NormalMath.inverseCdf(NormalMath.cdf(-b) + (1.0 - u) * mass);
            return Math.clamp(z, a, b);
        }
    }

    /**
     * Categorical kernels: an observation's kernel puts weight 1 on its choice plus prior/(n+1) on every choice,
     * normalized; the prior kernel is uniform.
     */
    private record CategoricalDimension(double[][] probabilities) implements Dimension {

        CategoricalDimension(int choiceCount, double[] observed, double priorWeight) {
            this(build(choiceCount, observed, priorWeight));
        }

        private static double[][] build(int choiceCount, double[] observed, double priorWeight) {
            int n = observed.length;
            double[][] rows = new double[n + 1][choiceCount];
            double smoothing = priorWeight / (n + 1);
            for (int k = 0; k <= n; k++) {
                Arrays.fill(rows[k], smoothing);
                if (k < n) {
                    rows[k][(int) observed[k]] += 1.0;
                }
                double sum = 0;
                for (double p : rows[k]) {
                    sum += p;
                }
                for (int c = 0; c < choiceCount; c++) {
                    rows[k][c] /= sum;
                }
            }
            return rows;
        }

        @Override
        public double sample(int kernel, RandomGenerator random) {
            double u = random.nextDouble();
            double[] row = probabilities[kernel];
            double running = 0;
            for (int c = 0; c < row.length - 1; c++) {
                running += row[c];
                if (u < running) {
                    return c;
                }
            }
            return row.length - 1;
        }

        @Override
        public double logPdf(int kernel, double internalValue) {
            return Math.log(probabilities[kernel][(int) internalValue]);
        }
    }
}
