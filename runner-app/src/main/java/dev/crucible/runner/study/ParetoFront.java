package dev.crucible.runner.study;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;

/** Non-dominated trials and the ranking of trials into successive fronts. */
public final class ParetoFront {

    private ParetoFront() {
    }

    /**
     * The complete trials that no other complete trial beats in every optimized objective (at least as good in all,
     * better in one). Objectives with direction NONE are ignored; so are trials with a NaN optimized score.
     * In trial-number order.
     */
    public static List<FrozenTrial> of(List<FrozenTrial> trials, List<Objective> objectives) {
        List<FrozenTrial> complete = trials.stream().filter(t -> t.isUsableFor(objectives)).toList();
        double[][] losses = complete.stream().map(t -> losses(t, objectives)).toArray(double[][]::new);
        int[] ranks = nonDominatedRanks(losses);
        return IntStream.range(0, complete.size())
                .filter(i -> ranks[i] == 0)
                .mapToObj(complete::get)
                .sorted(Comparator.comparingInt(FrozenTrial::number))
                .toList();
    }

    /** True when {@code a} is no worse than {@code b} in every loss and strictly better in one. */
    public static boolean dominates(double[] a, double[] b) {
        boolean strictlyBetter = false;
        for (int j = 0; j < a.length; j++) {
            if (a[j] > b[j]) {
                return false;
            }
            if (a[j] < b[j]) {
                strictlyBetter = true;
            }
        }
        return strictlyBetter;
    }

    /** A trial's optimized scores as losses (smaller is better): maximized objectives change sign. */
    static double[] losses(FrozenTrial trial, List<Objective> objectives) {
        return IntStream.range(0, objectives.size())
                .filter(i -> objectives.get(i).isOptimized())
                .mapToDouble(i -> switch (objectives.get(i).direction()) {
                    case MAXIMIZE -> -trial.scores().get(i).value();
                    default -> trial.scores().get(i).value();
                })
                .toArray();
    }

    /**
     * Non-dominated sorting: rank 0 is the Pareto front, rank 1 the front of what remains, and so on.
     * Quadratic per front, which is plenty for a few hundred trials.
     */
    static int[] nonDominatedRanks(double[][] losses) {
        int n = losses.length;
        int[] ranks = new int[n];
        Arrays.fill(ranks, -1);
        int assigned = 0;
        for (int rank = 0; assigned < n; rank++) {
            boolean[] inFront = new boolean[n];
            for (int i = 0; i < n; i++) {
                if (ranks[i] >= 0) {
                    continue;
                }
                boolean dominated = false;
                for (int j = 0; j < n && !dominated; j++) {
                    dominated = j != i && ranks[j] < 0 && dominates(losses[j], losses[i]);
                }
                inFront[i] = !dominated;
            }
            for (int i = 0; i < n; i++) {
                if (inFront[i]) {
                    ranks[i] = rank;
                    assigned++;
                }
            }
        }
        return ranks;
    }
}
