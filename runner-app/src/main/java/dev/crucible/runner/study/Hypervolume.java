package dev.crucible.runner.study;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The hypervolume indicator for minimization: the volume of the region dominated by a set of points and bounded by
 * a reference point. It grows with every improvement of the set's Pareto front, which makes it both the quality
 * measure of a multi-objective run and the tie-break the TPE split uses.
 */
public final class Hypervolume {

    /** What a reference coordinate of exactly 0 becomes, so that the box keeps a positive size. */
    private static final double EPS = 1e-12;

    private Hypervolume() {
    }

    /**
     * The volume dominated by {@code points} (rows of losses) inside the box up to {@code reference}. Points that
     * are not strictly better than the reference in every coordinate, or have a non-finite coordinate, add nothing.
     */
    public static double of(double[][] points, double[] reference) {
        List<double[]> inside = new ArrayList<>();
        for (double[] p : points) {
            if (p.length != reference.length) {
                throw new IllegalArgumentException("point has " + p.length + " coordinates, reference " + reference.length);
            }
            if (strictlyInside(p, reference)) {
                inside.add(p);
            }
        }
        return volume(inside, reference, reference.length);
    }

    private static boolean strictlyInside(double[] p, double[] reference) {
        for (int j = 0; j < p.length; j++) {
            if (!Double.isFinite(p[j]) || !(p[j] < reference[j])) {
                return false;
            }
        }
        return true;
    }

    /** Volume in the first {@code d} coordinates of points already known to lie inside the box. */
    private static double volume(List<double[]> points, double[] reference, int d) {
        if (points.isEmpty()) {
            return 0.0;
        }
        if (d == 1) {
            double best = Double.POSITIVE_INFINITY;
            for (double[] p : points) {
                best = Math.min(best, p[0]);
            }
            return reference[0] - best;
        }
        if (d == 2) {
            // Staircase: sweep by the first coordinate, each point adds the strip below the best second coordinate.
            List<double[]> sorted = new ArrayList<>(points);
            sorted.sort(Comparator.<double[]>comparingDouble(p -> p[0]).thenComparingDouble(p -> p[1]));
            double area = 0;
            double bestY = reference[1];
            for (double[] p : sorted) {
                if (p[1] < bestY) {
                    area += (reference[0] - p[0]) * (bestY - p[1]);
                    bestY = p[1];
                }
            }
            return area;
        }
        // Slice along the last coordinate: between consecutive levels the cross-section is the (d-1)-volume of
        // every point at or below the level.
        List<double[]> sorted = new ArrayList<>(points);
        sorted.sort(Comparator.comparingDouble(p -> p[d - 1]));
        double total = 0;
        for (int i = 0; i < sorted.size(); i++) {
            double next = i + 1 < sorted.size() ? sorted.get(i + 1)[d - 1] : reference[d - 1];
            double height = next - sorted.get(i)[d - 1];
            if (height > 0) {
                total += height * volume(sorted.subList(0, i + 1), reference, d - 1);
            }
        }
        return total;
    }

    /**
     * A reference point just beyond the worst finite value of each coordinate: {@code max(1.1 w, 0.9 w)}, so it
     * lies beyond w for either sign; 0 becomes a tiny positive number.
     */
    static double[] referencePoint(double[][] losses) {
        int d = losses.length == 0 ? 0 : losses[0].length;
        double[] reference = new double[d];
        for (int j = 0; j < d; j++) {
            double worst = Double.NEGATIVE_INFINITY;
            for (double[] p : losses) {
                if (Double.isFinite(p[j])) {
                    worst = Math.max(worst, p[j]);
                }
            }
            double r = worst == Double.NEGATIVE_INFINITY ? 0.0 : Math.max(1.1 * worst, 0.9 * worst);
            reference[j] = r == 0.0 ? EPS : r;
        }
        return reference;
    }

    /**
     * Greedy hypervolume subset selection: picks {@code size} of the points one at a time, each time the one that
     * adds the most hypervolume to those already picked (the earliest on ties). Returns indices in pick order.
     */
    static int[] greedySubset(double[][] points, int size, double[] reference) {
        if (size < 0 || size > points.length) {
            throw new IllegalArgumentException("cannot pick " + size + " of " + points.length + " points");
        }
        boolean[] taken = new boolean[points.length];
        List<double[]> chosen = new ArrayList<>();
        int[] picks = new int[size];
        for (int s = 0; s < size; s++) {
            int best = -1;
            double bestVolume = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < points.length; i++) {
                if (taken[i]) {
                    continue;
                }
                chosen.add(points[i]);
                double v = of(chosen.toArray(double[][]::new), reference);
                chosen.removeLast();
                if (v > bestVolume) {
                    bestVolume = v;
                    best = i;
                }
            }
            taken[best] = true;
            chosen.add(points[best]);
            picks[s] = best;
        }
        return picks;
    }

    /** Each point's exclusive contribution: the hypervolume lost when only that point is removed. */
    static double[] contributions(double[][] points, double[] reference) {
        double all = of(points, reference);
        double[] result = new double[points.length];
        for (int i = 0; i < points.length; i++) {
            double[][] others = new double[points.length - 1][];
            for (int j = 0, k = 0; j < points.length; j++) {
                if (j != i) {
                    others[k++] = points[j];
                }
            }
            result[i] = Math.max(0.0, all - of(others, reference));
        }
        return result;
    }
}
