package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ParzenEstimatorTest {

    private static final ParameterDistribution.FloatRange UNIT = new ParameterDistribution.FloatRange(0, 1, false);

    /** Trapezoid rule over [low, high] of exp(logPdf). */
    private static double integrate(ParzenEstimator estimator, double low, double high) {
        int steps = 20000;
        double h = (high - low) / steps;
        double sum = 0;
        for (int i = 0; i <= steps; i++) {
            double w = (i == 0 || i == steps) ? 0.5 : 1.0;
            sum += w * Math.exp(estimator.logPdf(new double[] {low + i * h}));
        }
        return sum * h;
    }

    @Test
    void truncatedKernelsIntegrateToOneOverTheRange() {
        ParzenEstimator univariate = new ParzenEstimator(List.of(UNIT),
                new double[][] {{0.02}, {0.5}, {0.97}}, new double[] {1, 2, 1}, false, 1.0);
        assertEquals(1.0, integrate(univariate, 0, 1), 1e-6);
        ParzenEstimator multivariate = new ParzenEstimator(List.of(UNIT),
                new double[][] {{0.02}, {0.5}, {0.97}}, new double[] {1, 2, 1}, true, 1.0);
        assertEquals(1.0, integrate(multivariate, 0, 1), 1e-6);
    }

    @Test
    void singleObservationMatchesHandComputedMixture() {
        // One observation at 0.3: neighbour rule with the prior mean 0.5 as the only neighbour gives width 0.2;
        // clip to [1/3, 1] (range / (1 + 1 observation + prior)) makes it 1/3. Prior: mean 0.5, width 1.
        // Equal weights 1/2 each.
        ParzenEstimator estimator = new ParzenEstimator(List.of(UNIT), new double[][] {{0.3}}, new double[] {1},
                false, 1.0);
        double x = 0.8;
        double expected = 0.5 * truncatedNormalPdf(x, 0.3, 1.0 / 3, 0, 1) + 0.5 * truncatedNormalPdf(x, 0.5, 1, 0, 1);
        assertEquals(Math.log(expected), estimator.logPdf(new double[] {x}), 1e-12);
    }

    private static double truncatedNormalPdf(double x, double mu, double sigma, double low, double high) {
        double phi = Math.exp(-0.5 * Math.pow((x - mu) / sigma, 2)) / (sigma * Math.sqrt(2 * Math.PI));
        double mass = NormalMath.cdf((high - mu) / sigma) - NormalMath.cdf((low - mu) / sigma);
        return phi / mass;
    }

    @Test
    void multivariateKernelsKeepCoordinatesTogether() {
        // Two observations on the diagonal corners: the joint model must prefer (0.1, 0.1) over (0.1, 0.9), which
        // a product of independent one-dimensional models could not tell apart.
        ParzenEstimator joint = new ParzenEstimator(List.of(UNIT, UNIT),
                new double[][] {{0.1, 0.1}, {0.9, 0.9}}, new double[] {1, 1}, true, 1.0);
        assertTrue(joint.logPdf(new double[] {0.1, 0.1}) > joint.logPdf(new double[] {0.1, 0.9}) + 1.0);
    }

    @Test
    void integerKernelsGiveProbabilitiesThatSumToOne() {
        ParzenEstimator estimator = new ParzenEstimator(List.of(new ParameterDistribution.IntRange(1, 6)),
                new double[][] {{2}, {2}, {5}}, new double[] {1, 1, 1}, true, 1.0);
        double total = 0;
        for (int v = 1; v <= 6; v++) {
            total += Math.exp(estimator.logPdf(new double[] {v}));
        }
        assertEquals(1.0, total, 1e-12);
        assertTrue(estimator.logPdf(new double[] {2}) > estimator.logPdf(new double[] {6}));
        SplittableRandom random = new SplittableRandom(3);
        for (double[] s : estimator.sample(random, 500)) {
            assertTrue(s[0] >= 1 && s[0] <= 6 && s[0] == Math.rint(s[0]), "integer in range: " + s[0]);
        }
    }

    @Test
    void categoricalKernelsSmoothObservedChoicesWithThePrior() {
        // Observations: choice 0 twice. Each observation kernel: 1/3 on every choice plus 1 on choice 0, i.e.
        // (4/3, 1/3) / (5/3) = (0.8, 0.2); the prior kernel is (0.5, 0.5). Weights 1/3 each.
        ParzenEstimator estimator = new ParzenEstimator(
                List.of(new ParameterDistribution.Categorical(List.of("global", "per_layer"))),
                new double[][] {{0}, {0}}, new double[] {1, 1}, true, 1.0);
        assertEquals(Math.log((0.8 + 0.8 + 0.5) / 3), estimator.logPdf(new double[] {0}), 1e-12);
        assertEquals(Math.log((0.2 + 0.2 + 0.5) / 3), estimator.logPdf(new double[] {1}), 1e-12);
    }

    @Test
    void logFloatsAreModelledInLogSpaceAndSampledInsideTheRange() {
        ParameterDistribution.FloatRange logRange = new ParameterDistribution.FloatRange(1e-4, 1.0, true);
        ParzenEstimator estimator = new ParzenEstimator(List.of(logRange),
                new double[][] {{1e-3}}, new double[] {1}, false, 1.0);
        int small = 0;
        for (double[] s : estimator.sample(new SplittableRandom(11), 2000)) {
            assertTrue(s[0] >= 1e-4 && s[0] <= 1.0, "inside the range: " + s[0]);
            if (s[0] < 1e-2) {
                small++;
            }
        }
        // Half the mass sits on the kernel at log(1e-3), so well over half the draws fall below 1e-2, far more than
        // the 10% a linear-space model centred in [1e-4, 1] would give.
        assertTrue(small > 1000, "draws below 1e-2: " + small);
    }

    @Test
    void drawsFollowTheKernelWeights() {
        // Kernels at 5 (weight 3) and 95 (weight 1) plus the prior (weight 1) on [0, 100]. The multivariate width
        // 0.2 * 2^(-1/5) * 100 = 17.4 is below the clip floor 100 / (2 + 2) = 25, so both kernels have sigma 25;
        // the prior has mean 50, sigma 100. The share of draws below 20 must match the mass there.
        ParzenEstimator estimator = new ParzenEstimator(List.of(new ParameterDistribution.FloatRange(0, 100, false)),
                new double[][] {{5}, {95}}, new double[] {3, 1}, true, 1.0);
        double expected = 0.6 * truncatedMass(0, 20, 5, 25) + 0.2 * truncatedMass(0, 20, 95, 25)
                + 0.2 * truncatedMass(0, 20, 50, 100);
        assertEquals(expected, integrate(estimator, 0, 20), 1e-6);
        int nearLow = 0;
        int n = 20000;
        for (double[] s : estimator.sample(new SplittableRandom(5), n)) {
            if (s[0] < 20) {
                nearLow++;
            }
        }
        assertEquals(expected, nearLow / (double) n, 0.012);
    }

    /** Mass in [0, x] of a normal(mu, sigma) truncated to [0, 100]. */
    private static double truncatedMass(double low, double x, double mu, double sigma) {
        double z0 = NormalMath.cdf((low - mu) / sigma);
        return (NormalMath.cdf((x - mu) / sigma) - z0) / (NormalMath.cdf((100 - mu) / sigma) - z0);
    }
}
