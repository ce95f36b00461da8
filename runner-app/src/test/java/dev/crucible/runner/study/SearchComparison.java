package dev.crucible.runner.study;

import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Crucible's TPE against Optuna's on the same problems: each sampler runs one study per seed, and the hypervolume of
 * the first n trials is taken at every checkpoint n (so "at 50 trials" is the same study seen earlier, as a user
 * watching a run sees it).
 */
final class SearchComparison {

    /** Hypervolumes of one sampler on one problem: {@code values[seed][checkpoint]}. */
    record Measurement(String sampler, int[] checkpoints, double[][] values) {
        double[] atCheckpoint(int c) {
            return Arrays.stream(values).mapToDouble(v -> v[c]).toArray();
        }
    }

    private SearchComparison() {
    }

    /** One study with a Crucible sampler; every trial's losses in trial order. */
    static List<double[]> crucible(SearchProblem problem, Sampler sampler, long seed, int trials) {
        List<Objective> objectives = new ArrayList<>();
        for (int i = 0; i < problem.reference().length; i++) {
            objectives.add(new Objective("f" + (i + 1), Optimization.MINIMIZE));
        }
        Study study = new Study(objectives, sampler, seed);
        List<double[]> losses = new ArrayList<>();
        for (int t = 0; t < trials; t++) {
            Trial trial = study.ask();
            problem.space().forEach((name, distribution) -> {
                switch (distribution) {
                    case ParameterDistribution.FloatRange f -> trial.suggestFloat(name, f.low(), f.high(), f.log());
                    case ParameterDistribution.IntRange r -> trial.suggestInt(name, r.low(), r.high());
                    case ParameterDistribution.Categorical c -> trial.suggestCategorical(name, c.choices());
                }
            });
            double[] loss = problem.evaluate(trial.params());
            losses.add(loss);
            study.tell(trial, Arrays.stream(problem.shaping().apply(loss)).mapToObj(Score::of).toList());
        }
        return losses;
    }

    /** The hypervolume of the first {@code n} trials, for each checkpoint n. */
    static double[] hypervolumes(List<double[]> losses, int[] checkpoints, double[] reference) {
        double[] hv = new double[checkpoints.length];
        for (int c = 0; c < checkpoints.length; c++) {
            hv[c] = Hypervolume.of(losses.subList(0, checkpoints[c]).toArray(double[][]::new), reference);
        }
        return hv;
    }

    /** Runs Crucible's sampler (a new one per study, from {@code sampler}) on every seed. */
    static Measurement measureCrucible(String name, SearchProblem problem, Supplier<Sampler> sampler, long[] seeds,
                                       int[] checkpoints) {
        int trials = Arrays.stream(checkpoints).max().orElseThrow();
        double[][] values = new double[seeds.length][];
        for (int s = 0; s < seeds.length; s++) {
            values[s] = hypervolumes(crucible(problem, sampler.get(), seeds[s], trials), checkpoints, problem.reference());
        }
        return new Measurement(name, checkpoints, values);
    }

    /** Runs Optuna's multivariate TPE on every seed. */
    static Measurement measureOptuna(String name, OptunaTpe optuna, SearchProblem problem, int startupTrials, int candidates,
                                     long[] seeds, int[] checkpoints) {
        int trials = Arrays.stream(checkpoints).max().orElseThrow();
        double[][] values = new double[seeds.length][];
        for (int s = 0; s < seeds.length; s++) {
            values[s] = hypervolumes(optuna.run(problem, seeds[s], trials, startupTrials, candidates), checkpoints,
                    problem.reference());
        }
        return new Measurement(name, checkpoints, values);
    }

    static double mean(double[] xs) {
        return Arrays.stream(xs).average().orElseThrow();
    }

    /** Sample standard deviation (n − 1). */
    static double sd(double[] xs) {
        double m = mean(xs);
        return Math.sqrt(Arrays.stream(xs).map(x -> (x - m) * (x - m)).sum() / (xs.length - 1));
    }

    /** Standard error of the difference of two independent means (Welch). */
    static double standardError(double[] a, double[] b) {
        return Math.sqrt(sd(a) * sd(a) / a.length + sd(b) * sd(b) / b.length);
    }

    /**
     * A Markdown table: per problem and checkpoint, each sampler's mean ± standard deviation over the seeds, and the
     * difference of the first sampler (Crucible) to the second (Optuna) with its standard error. Every problem must
     * have been measured with the same samplers.
     */
    static String table(Map<SearchProblem, List<Measurement>> results) {
        StringBuilder sb = new StringBuilder();
        List<Measurement> first = results.values().iterator().next();
        sb.append("| problem | trials |");
        first.forEach(m -> sb.append(' ').append(m.sampler()).append(" |"));
        sb.append(" ").append(first.get(0).sampler()).append(" − ").append(first.get(1).sampler()).append(" |\n");
        sb.append("| --- | ---: |").append(" ---: |".repeat(first.size() + 1)).append('\n');
        results.forEach((problem, measurements) -> {
            Measurement ours = measurements.get(0);
            Measurement reference = measurements.get(1);
            for (int c = 0; c < ours.checkpoints().length; c++) {
                sb.append("| ").append(problem.name()).append(" | ").append(ours.checkpoints()[c]).append(" |");
                for (Measurement m : measurements) {
                    double[] v = m.atCheckpoint(c);
                    sb.append(String.format(Locale.ROOT, " %s ± %s |", digits(mean(v)), digits(sd(v))));
                }
                double[] a = ours.atCheckpoint(c);
                double[] b = reference.atCheckpoint(c);
                sb.append(String.format(Locale.ROOT, " %+.4g ± %.2g |%n", mean(a) - mean(b), standardError(a, b)));
            }
        });
        return sb.toString();
    }

    private static String digits(double x) {
        return String.format(Locale.ROOT, "%.4g", x);
    }
}
