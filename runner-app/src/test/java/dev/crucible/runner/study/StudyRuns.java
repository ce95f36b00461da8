package dev.crucible.runner.study;

import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/** Runs small studies on test functions. */
final class StudyRuns {

    private StudyRuns() {
    }

    static List<Objective> minimize(String... names) {
        return Arrays.stream(names).map(n -> new Objective(n, Optimization.MINIMIZE)).toList();
    }

    static Study run(List<Objective> objectives, Sampler sampler, long seed, int trials,
                     Function<Trial, double[]> objective) {
        Study study = new Study(objectives, sampler, seed);
        runMore(study, trials, objective);
        return study;
    }

    static void runMore(Study study, int trials, Function<Trial, double[]> objective) {
        for (int i = 0; i < trials; i++) {
            Trial trial = study.ask();
            double[] values = objective.apply(trial);
            study.tell(trial, Arrays.stream(values).mapToObj(Score::of).toList());
        }
    }

    static double[][] values(List<FrozenTrial> trials) {
        return trials.stream()
                .map(t -> t.scores().stream().mapToDouble(Score::value).toArray())
                .toArray(double[][]::new);
    }

    static double bestValue(Study study) {
        return study.trials().stream().mapToDouble(t -> t.scores().getFirst().value()).min().orElseThrow();
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : 0.5 * (s[s.length / 2 - 1] + s[s.length / 2]);
    }

    static double mean(double[] xs) {
        return Arrays.stream(xs).average().orElseThrow();
    }

    /** ZDT1 on {@code variables} floats in [0, 1] (see {@link SearchProblem#zdt}); the Pareto front is g = 1. */
    static double[] zdt1(Trial trial, int variables) {
        double[] x = new double[variables];
        for (int i = 0; i < variables; i++) {
            x[i] = trial.suggestFloat("x" + i, 0.0, 1.0);
        }
        return SearchProblem.zdt(1, x);
    }

    /** A shifted 2-D quadratic bowl with its minimum 0 at (1.5, -2.5). */
    static double[] quadratic(Trial trial) {
        double x = trial.suggestFloat("x", -10, 10);
        double y = trial.suggestFloat("y", -10, 10);
        return new double[] {(x - 1.5) * (x - 1.5) + (y + 2.5) * (y + 2.5)};
    }
}
