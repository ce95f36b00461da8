package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class HypervolumeTest {

    @Test
    void twoDimensionalStaircase() {
        double[][] points = {{1, 3}, {2, 2}, {3, 1}};
        assertEquals(3 + 2 + 1, Hypervolume.of(points, new double[] {4, 4}), 1e-12);
    }

    @Test
    void dominatedOutsideAndNonFinitePointsAddNothing() {
        double[][] base = {{1, 3}, {2, 2}, {3, 1}};
        double[][] more = {{1, 3}, {2, 2}, {3, 1}, {2.5, 2.5}, {5, 0}, {0, Double.POSITIVE_INFINITY}, {Double.NaN, 0}};
        assertEquals(Hypervolume.of(base, new double[] {4, 4}), Hypervolume.of(more, new double[] {4, 4}), 1e-12);
        assertEquals(0.0, Hypervolume.of(new double[0][], new double[] {1, 1}));
    }

    @Test
    void threeDimensionalUnionOfBoxes() {
        assertEquals(1.0, Hypervolume.of(new double[][] {{1, 1, 1}}, new double[] {2, 2, 2}), 1e-12);
        // Boxes 2x2x1 and 1x1x2 overlapping in a unit cube.
        assertEquals(5.0, Hypervolume.of(new double[][] {{0, 0, 1}, {1, 1, 0}}, new double[] {2, 2, 2}), 1e-12);
    }

    @Test
    void agreesWithInclusionExclusionInThreeAndFourDimensions() {
        SplittableRandom random = new SplittableRandom(42);
        for (int d = 3; d <= 4; d++) {
            for (int round = 0; round < 20; round++) {
                int n = 1 + random.nextInt(6);
                double[][] points = new double[n][d];
                for (double[] p : points) {
                    for (int j = 0; j < d; j++) {
                        p[j] = random.nextDouble();
                    }
                }
                double[] reference = new double[d];
                java.util.Arrays.fill(reference, 1.0);
                assertEquals(inclusionExclusion(points, reference), Hypervolume.of(points, reference), 1e-12);
            }
        }
    }

    /** Volume of a union of boxes [p, reference] by summing over all subsets with alternating signs. */
    private static double inclusionExclusion(double[][] points, double[] reference) {
        double total = 0;
        for (int mask = 1; mask < (1 << points.length); mask++) {
            double volume = 1;
            for (int j = 0; j < reference.length; j++) {
                double corner = Double.NEGATIVE_INFINITY;
                for (int i = 0; i < points.length; i++) {
                    if ((mask & (1 << i)) != 0) {
                        corner = Math.max(corner, points[i][j]);
                    }
                }
                volume *= reference[j] - corner;
            }
            total += (Integer.bitCount(mask) % 2 == 1 ? 1 : -1) * volume;
        }
        return total;
    }

    @Test
    void referencePointLiesBeyondTheWorstValueForEitherSign() {
        double[][] losses = {{-2, 0, 3}, {-1, 0, 5}, {-4, 0, Double.POSITIVE_INFINITY}};
        // worst -1 -> max(-1.1, -0.9) = -0.9; worst 0 -> tiny positive; worst finite 5 -> 5.5.
        assertArrayEquals(new double[] {-0.9, 1e-12, 5.5}, Hypervolume.referencePoint(losses), 1e-15);
    }

    @Test
    void greedySubsetPicksLargestGainFirst() {
        // Reference (4, 4): alone, (2, 2) covers 4, the ends cover 3 each; after (2, 2), each end adds 1.
        double[][] front = {{1, 3}, {2, 2}, {3, 1}};
        assertArrayEquals(new int[] {1, 0}, Hypervolume.greedySubset(front, 2, new double[] {4, 4}));
    }

    @Test
    void contributionsAreWhatEachPointAloneAdds() {
        double[][] front = {{1, 3}, {2, 2}, {3, 1}};
        assertArrayEquals(new double[] {1, 1, 1}, Hypervolume.contributions(front, new double[] {4, 4}), 1e-12);
        double[][] withDuplicate = {{1, 3}, {1, 3}};
        assertArrayEquals(new double[] {0, 0}, Hypervolume.contributions(withDuplicate, new double[] {4, 4}), 1e-12);
    }
}
