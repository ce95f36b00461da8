package dev.crucible.runner.study;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Multi-objective, multivariate tree-structured Parzen estimator. The algorithm is described in the package
 * documentation ({@code package-info.java}); in short: a Latin hypercube for the first trials, then split the finished
 * trials into good and bad, model each group with a Parzen estimator, draw candidates from the good model and
 * keep the one where good is most likely relative to bad.
 */
public final class TpeSampler implements Sampler {

    /** Floor for the weight of a good trial that adds no hypervolume, so that every weight stays positive. */
    private static final double EPS = 1e-12;
    /** At most this many trials count as good, however long the study runs. */
    private static final int MAX_GOOD = 25;
    /** Bad trials older than the newest this many get linearly smaller weights. */
    private static final int FLAT_WEIGHT_WINDOW = 25;

    /**
     * @param nStartupTrials trials drawn from a Latin hypercube before the model takes over
     * @param nCandidates    draws from the good model per parameter group; the best by l(x)/g(x) is kept
     * @param priorWeight    weight of the prior kernel relative to one observation
     */
    public record Settings(int nStartupTrials, int nCandidates, double priorWeight) {
        public static final int DEFAULT_STARTUP_TRIALS = 60;
        public static final int DEFAULT_CANDIDATES = 128;
        public static final double DEFAULT_PRIOR_WEIGHT = 1.0;

        public Settings {
            if (nStartupTrials < 0) {
                throw new IllegalArgumentException("nStartupTrials must be >= 0, got " + nStartupTrials);
            }
            if (nCandidates < 1) {
                throw new IllegalArgumentException("nCandidates must be >= 1, got " + nCandidates);
            }
            if (!(priorWeight > 0) || !Double.isFinite(priorWeight)) {
                throw new IllegalArgumentException("priorWeight must be positive, got " + priorWeight);
            }
        }

        public static Settings defaults() {
            return new Settings(DEFAULT_STARTUP_TRIALS, DEFAULT_CANDIDATES, DEFAULT_PRIOR_WEIGHT);
        }

        public Settings withStartupTrials(int n) {
            return new Settings(n, nCandidates, priorWeight);
        }
    }

    private final Settings settings;

    public TpeSampler(Settings settings) {
        this.settings = Objects.requireNonNull(settings, "settings is null");
    }

    public Settings settings() {
        return settings;
    }

    @Override
    public Map<String, Draw> sampleJoint(SamplingContext context) {
        List<FrozenTrial> complete = context.completeTrials();
        if (!modelReady(context, complete) || complete.isEmpty()) {
            return Map.of();
        }
        LinkedHashMap<String, ParameterDistribution> space = sharedSpace(complete);
        if (space.isEmpty()) {
            return Map.of();
        }
        double[] best = bestCandidate(context, complete, space, true);
        Map<String, Draw> draws = new LinkedHashMap<>();
        int j = 0;
        for (Map.Entry<String, ParameterDistribution> e : space.entrySet()) {
            draws.put(e.getKey(), new Draw(e.getValue(), best[j++]));
        }
        return draws;
    }

    @Override
    public double sampleIndependent(SamplingContext context, String name, ParameterDistribution distribution) {
        List<FrozenTrial> complete = context.completeTrials();
        if (!modelReady(context, complete)) {
            return LatinHypercube.sample(context.studySeed(), context.trialNumber(), settings.nStartupTrials(), name,
                    distribution, context.random());
        }
        LinkedHashMap<String, ParameterDistribution> space = new LinkedHashMap<>();
        space.put(name, distribution);
        return bestCandidate(context, complete, space, false)[0];
    }

    /** The model needs its startup trials and at least one objective to optimize. */
    private boolean modelReady(SamplingContext context, List<FrozenTrial> complete) {
        return complete.size() >= settings.nStartupTrials()
                && context.objectives().stream().anyMatch(Objective::isOptimized);
    }

    /** Parameters every complete trial drew from the same distribution, in first-suggested order. */
    static LinkedHashMap<String, ParameterDistribution> sharedSpace(List<FrozenTrial> complete) {
        LinkedHashMap<String, ParameterDistribution> space = new LinkedHashMap<>(complete.getFirst().distributions());
        for (FrozenTrial t : complete) {
            space.entrySet().removeIf(e -> !e.getValue().equals(t.distributions().get(e.getKey())));
        }
        space.values().removeIf(ParameterDistribution::isSingleValue);
        return space;
    }

    private double[] bestCandidate(SamplingContext context, List<FrozenTrial> complete,
                                   LinkedHashMap<String, ParameterDistribution> space, boolean multivariate) {
        Split split = split(complete, context.objectives());
        List<ParameterDistribution> distributions = List.copyOf(space.values());

        // Only trials that used every parameter of the space, with the same distribution, can be observations.
        List<double[]> good = new ArrayList<>();
        List<Double> goodWeights = new ArrayList<>();
        for (int i = 0; i < split.good().size(); i++) {
            double[] row = observation(split.good().get(i), space);
            if (row != null) {
                good.add(row);
                goodWeights.add(split.goodWeights()[i]);
            }
        }
        List<double[]> bad = new ArrayList<>();
        for (FrozenTrial t : split.bad()) {
            double[] row = observation(t, space);
            if (row != null) {
                bad.add(row);
            }
        }
        ParzenEstimator goodModel = new ParzenEstimator(distributions, good.toArray(double[][]::new),
                goodWeights.stream().mapToDouble(Double::doubleValue).toArray(), multivariate, settings.priorWeight());
        ParzenEstimator badModel = new ParzenEstimator(distributions, bad.toArray(double[][]::new),
                recencyWeights(bad.size()), multivariate, settings.priorWeight());

        double[][] candidates = goodModel.sample(context.random(), settings.nCandidates());
        int best = 0;
        double bestScore = Double.NEGATIVE_INFINITY;
        for (int c = 0; c < candidates.length; c++) {
            double score = goodModel.logPdf(candidates[c]) - badModel.logPdf(candidates[c]);
            if (score > bestScore) {
                bestScore = score;
                best = c;
            }
        }
        return candidates[best];
    }

    private static double[] observation(FrozenTrial trial, Map<String, ParameterDistribution> space) {
        double[] row = new double[space.size()];
        int j = 0;
        for (Map.Entry<String, ParameterDistribution> e : space.entrySet()) {
            if (!e.getValue().equals(trial.distributions().get(e.getKey()))) {
                return null;
            }
            row[j++] = trial.internalValue(e.getKey());
        }
        return row;
    }

    /** The good trials (with their kernel weights) and the bad ones, each in trial-number order. */
    record Split(List<FrozenTrial> good, double[] goodWeights, List<FrozenTrial> bad) {
    }

    /** How many of n complete trials count as good: ceil(n / 10), at most 25. */
    static int goodCount(int n) {
        return Math.min((n + 9) / 10, MAX_GOOD);
    }

    /**
     * Splits complete trials into good and bad. One optimized objective: the best {@link #goodCount} by loss.
     * Several: whole non-dominated fronts while they fit, then the front that overflows is cut down by greedy
     * hypervolume subset selection. Good trials are weighted by their hypervolume contribution in the
     * multi-objective case, equally otherwise.
     */
    static Split split(List<FrozenTrial> complete, List<Objective> objectives) {
        int n = complete.size();
        int nGood = goodCount(n);
        double[][] losses = complete.stream().map(t -> ParetoFront.losses(t, objectives)).toArray(double[][]::new);
        boolean[] isGood = new boolean[n];
        boolean multiObjective = n > 0 && losses[0].length > 1;
        if (!multiObjective) {
            Integer[] order = new Integer[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            // Stable sort: equal losses keep trial order, so the split never depends on anything but the data.
            Arrays.sort(order, Comparator.comparingDouble(i -> losses[i][0]));
            for (int i = 0; i < nGood; i++) {
                isGood[order[i]] = true;
            }
        } else {
            markGoodByFronts(losses, nGood, isGood);
        }
        List<FrozenTrial> good = new ArrayList<>();
        List<double[]> goodLosses = new ArrayList<>();
        List<FrozenTrial> bad = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (isGood[i]) {
                good.add(complete.get(i));
                goodLosses.add(losses[i]);
            } else {
                bad.add(complete.get(i));
            }
        }
        double[] weights = multiObjective
                ? contributionWeights(goodLosses.toArray(double[][]::new))
                : filled(good.size(), 1.0);
        return new Split(good, weights, bad);
    }

    private static void markGoodByFronts(double[][] losses, int nGood, boolean[] isGood) {
        int[] ranks = ParetoFront.nonDominatedRanks(losses);
        int taken = 0;
        for (int rank = 0; taken < nGood; rank++) {
            List<Integer> front = new ArrayList<>();
            for (int i = 0; i < ranks.length; i++) {
                if (ranks[i] == rank) {
                    front.add(i);
                }
            }
            if (taken + front.size() <= nGood) {
                front.forEach(i -> isGood[i] = true);
                taken += front.size();
                continue;
            }
            double[][] frontLosses = front.stream().map(i -> losses[i]).toArray(double[][]::new);
            int[] picks = Hypervolume.greedySubset(frontLosses, nGood - taken, Hypervolume.referencePoint(frontLosses));
            for (int p : picks) {
                isGood[front.get(p)] = true;
            }
            taken = nGood;
        }
    }

    /**
     * Weights of good trials in the multi-objective case: each Pareto-optimal good trial's exclusive hypervolume
     * contribution relative to the largest; dominated good trials (and those adding nothing) get a tiny weight.
     */
    static double[] contributionWeights(double[][] goodLosses) {
        int n = goodLosses.length;
        if (n <= 1) {
            return filled(n, 1.0);
        }
        int[] ranks = ParetoFront.nonDominatedRanks(goodLosses);
        List<Integer> frontIndices = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (ranks[i] == 0) {
                frontIndices.add(i);
            }
        }
        double[][] front = frontIndices.stream().map(i -> goodLosses[i]).toArray(double[][]::new);
        double[] contributions = Hypervolume.contributions(front, Hypervolume.referencePoint(goodLosses));
        double max = Arrays.stream(contributions).max().orElse(0.0);
        double[] weights = filled(n, EPS);
        for (int f = 0; f < frontIndices.size(); f++) {
            weights[frontIndices.get(f)] = Math.max(contributions[f] / Math.max(max, EPS), EPS);
        }
        return weights;
    }

    /**
     * Weights of the bad trials, oldest first: the newest 25 weigh 1, older ones ramp linearly from 1/n up to 1,
     * because early (mostly random) trials describe the bad region less sharply than recent ones.
     */
    static double[] recencyWeights(int n) {
        if (n < FLAT_WEIGHT_WINDOW) {
            return filled(n, 1.0);
        }
        double[] weights = filled(n, 1.0);
        int ramp = n - FLAT_WEIGHT_WINDOW;
        for (int i = 0; i < ramp; i++) {
            weights[i] = ramp == 1 ? 1.0 / n : 1.0 / n + i * (1.0 - 1.0 / n) / (ramp - 1);
        }
        return weights;
    }

    private static double[] filled(int n, double value) {
        double[] a = new double[n];
        Arrays.fill(a, value);
        return a;
    }
}
