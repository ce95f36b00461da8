package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.Optimization;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * TPE against random search on known functions, at equal trial counts and seeds. The seeds are fixed, so the
 * numbers are reproducible; the margins asserted are a fraction of the measured gaps (printed by each test).
 */
class TpeOptimizationTest {

    private static final int SEEDS = 5;
    private static final TpeSampler.Settings TPE = TpeSampler.Settings.defaults().withStartupTrials(20);

    @Test
    void beatsRandomSearchOnAQuadraticBowl() {
        double[] tpe = new double[SEEDS];
        double[] random = new double[SEEDS];
        for (int seed = 0; seed < SEEDS; seed++) {
            tpe[seed] = StudyRuns.bestValue(StudyRuns.run(StudyRuns.minimize("f"), new TpeSampler(TPE), seed, 100,
                    StudyRuns::quadratic));
            random[seed] = StudyRuns.bestValue(StudyRuns.run(StudyRuns.minimize("f"), new RandomSampler(), seed, 100,
                    StudyRuns::quadratic));
        }
        double randomMedian = StudyRuns.median(random);
        System.out.printf("quadratic, best of 100 trials: TPE %s (median %.4g), random %s (median %.4g)%n",
                Arrays.toString(tpe), StudyRuns.median(tpe), Arrays.toString(random), randomMedian);
        for (double best : tpe) {
            assertTrue(best < randomMedian, "every TPE run beats the median random run: " + best + " vs " + randomMedian);
        }
        assertTrue(StudyRuns.median(tpe) < randomMedian / 3, "TPE's median best is several times smaller");
    }

    @Test
    void beatsRandomSearchOnZdt1ByHypervolume() {
        // ZDT1 with 5 variables; reference (1.1, 11) covers what random search reaches (f2 up to ~10), and the true
        // front's hypervolume is 1.1 * 11 - 1/3 = 11.77.
        double[] reference = {1.1, 11};
        double[] tpe = new double[SEEDS];
        double[] random = new double[SEEDS];
        for (int seed = 0; seed < SEEDS; seed++) {
            Study a = StudyRuns.run(StudyRuns.minimize("f1", "f2"), new TpeSampler(TPE), seed, 100,
                    t -> StudyRuns.zdt1(t, 5));
            Study b = StudyRuns.run(StudyRuns.minimize("f1", "f2"), new RandomSampler(), seed, 100,
                    t -> StudyRuns.zdt1(t, 5));
            tpe[seed] = Hypervolume.of(StudyRuns.values(a.trials()), reference);
            random[seed] = Hypervolume.of(StudyRuns.values(b.trials()), reference);
        }
        System.out.printf("ZDT1 (5 variables, 100 trials) hypervolume: TPE %s (mean %.4f), random %s (mean %.4f)%n",
                Arrays.toString(tpe), StudyRuns.mean(tpe), Arrays.toString(random), StudyRuns.mean(random));
        for (int seed = 0; seed < SEEDS; seed++) {
            assertTrue(tpe[seed] > random[seed], "seed " + seed + ": TPE " + tpe[seed] + " vs random " + random[seed]);
        }
        assertTrue(StudyRuns.mean(tpe) - StudyRuns.mean(random) > 0.5, "TPE wins by a wide margin on average");
    }

    @Test
    void learnsWhichCategoricalChoiceIsBetter() {
        Study study = StudyRuns.run(StudyRuns.minimize("f"), new TpeSampler(TPE), 7, 80, trial -> {
            String scope = trial.suggestCategorical("scope", List.of("global", "per_layer"));
            double x = trial.suggestFloat("x", -1, 1);
            return new double[] {(scope.equals("per_layer") ? 0 : 1) + x * x};
        });
        long perLayer = study.trials().subList(40, 80).stream()
                .filter(t -> t.params().get("scope").equals("per_layer")).count();
        assertTrue(perLayer >= 32, "late trials mostly choose the better category: " + perLayer + "/40");
    }

    @Test
    void maximizeDirectionIsHonoured() {
        Study study = StudyRuns.run(List.of(new Objective("f", Optimization.MAXIMIZE)), new TpeSampler(TPE), 3, 80,
                trial -> new double[] {-Math.abs(trial.suggestFloat("x", 0, 10) - 7)});
        double lateMeanDistance = study.trials().subList(60, 80).stream()
                .mapToDouble(t -> Math.abs((Double) t.params().get("x") - 7)).average().orElseThrow();
        assertTrue(lateMeanDistance < 1.0, "late trials cluster near the maximum at 7: " + lateMeanDistance);
    }
}
