package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.Score;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StudyTest {

    private static final TpeSampler.Settings TPE = TpeSampler.Settings.defaults().withStartupTrials(20);

    private static List<Map<String, Object>> params(Study study) {
        return study.trials().stream().map(FrozenTrial::params).toList();
    }

    /** A space with every parameter kind and a dependent parameter, like the abliteration search. */
    private static double[] mixedSpace(Trial trial) {
        String scope = trial.suggestCategorical("scope", List.of("global", "per_layer"));
        double max = trial.suggestFloat("max_weight", 0.8, 1.5);
        double min = trial.suggestFloat("min_weight_fraction", 0, 1) * max;
        double rate = trial.suggestFloat("rate", 1e-4, 1e-1, true);
        long layer = trial.suggestInt("layer", 0, 31);
        return new double[] {(scope.equals("global") ? 1 : 0) + max - min + Math.abs(Math.log10(rate) + 2)
                + Math.abs(layer - 20) / 10.0, rate};
    }

    @Test
    void sameSeedGivesIdenticalParametersAndAnotherSeedDoesNot() {
        Study first = StudyRuns.run(StudyRuns.minimize("f", "g"), new TpeSampler(TPE), 42, 60, StudyTest::mixedSpace);
        Study second = StudyRuns.run(StudyRuns.minimize("f", "g"), new TpeSampler(TPE), 42, 60, StudyTest::mixedSpace);
        Study other = StudyRuns.run(StudyRuns.minimize("f", "g"), new TpeSampler(TPE), 43, 60, StudyTest::mixedSpace);
        assertEquals(params(first), params(second));
        assertNotEquals(params(first), params(other));
    }

    @Test
    void startupTrialsAreALatinHypercubeWhateverTheObjective() {
        Study tpe = StudyRuns.run(StudyRuns.minimize("f", "g"), new TpeSampler(TPE), 5, 40, StudyTest::mixedSpace);
        Study tpeOtherObjective = StudyRuns.run(StudyRuns.minimize("f", "g"), new TpeSampler(TPE), 5, 40, trial -> {
            double[] v = mixedSpace(trial);
            return new double[] {-v[0], v[1]};
        });
        assertEquals(params(tpe).subList(0, 20), params(tpeOtherObjective).subList(0, 20));
        // Once the model takes over, the objective steers the draws.
        assertNotEquals(params(tpe).subList(20, 40), params(tpeOtherObjective).subList(20, 40));
        // The 20 startup trials put exactly one value in each twentieth of every float's range (log floats in log
        // space), half of them in each scope and no layer more than twice.
        List<FrozenTrial> startup = tpe.trials().subList(0, 20);
        for (String name : List.of("max_weight", "min_weight_fraction", "rate")) {
            boolean[] hit = new boolean[20];
            for (FrozenTrial t : startup) {
                double v = (Double) t.params().get(name);
                double u = switch (name) {
                    case "max_weight" -> (v - 0.8) / 0.7;
                    case "rate" -> (Math.log10(v) + 4) / 3;
                    default -> v;
                };
                int stratum = (int) Math.min(19, Math.floor(u * 20));
                assertFalse(hit[stratum], name + ": two startup trials in stratum " + stratum);
                hit[stratum] = true;
            }
        }
        assertEquals(10, startup.stream().filter(t -> t.params().get("scope").equals("global")).count());
        // Each trial has its own 1.6-layer stratum; neighbouring strata share at most one layer.
        Map<Object, Long> perLayer = startup.stream().collect(java.util.stream.Collectors.groupingBy(t -> t.params().get("layer"),
                java.util.stream.Collectors.counting()));
        assertTrue(perLayer.values().stream().allMatch(c -> c <= 2), "no layer drawn more than twice: " + perLayer);
    }

    @Test
    void startupDrawsAreUniformInsideTheBounds() {
        int n = 1000;
        Study study = StudyRuns.run(StudyRuns.minimize("f", "g"),
                new TpeSampler(TpeSampler.Settings.defaults().withStartupTrials(n)), 9, n, StudyTest::mixedSpace);
        int[] maxBins = new int[10];
        int[] rateBins = new int[10];
        int[] layerBins = new int[32];
        int global = 0;
        for (FrozenTrial t : study.trials()) {
            double max = (Double) t.params().get("max_weight");
            double rate = (Double) t.params().get("rate");
            long layer = (Long) t.params().get("layer");
            assertTrue(max >= 0.8 && max <= 1.5, "max_weight inside bounds: " + max);
            assertTrue(rate >= 1e-4 && rate <= 1e-1, "rate inside bounds: " + rate);
            assertTrue(layer >= 0 && layer <= 31, "layer inside bounds: " + layer);
            maxBins[(int) Math.min(9, (max - 0.8) / 0.07)]++;
            rateBins[(int) Math.min(9, (Math.log10(rate) + 4) / 0.3)]++;   // uniform in log space
            layerBins[(int) layer]++;
            global += t.params().get("scope").equals("global") ? 1 : 0;
        }
        // Chi-square with 9 degrees of freedom: 27.9 is the 0.1% critical value. The draws are seeded, so this
        // is deterministic; the bound says how far from uniform a correct implementation could plausibly be.
        assertTrue(chiSquare(maxBins) < 27.9, "max_weight uniform");
        assertTrue(chiSquare(rateBins) < 27.9, "rate log-uniform");
        assertTrue(chiSquare(layerBins) < 61.1, "layer uniform (31 degrees of freedom)");
        assertTrue(Math.abs(global - n / 2) < 70, "scope choices equally likely: " + global);
    }

    private static double chiSquare(int[] counts) {
        double total = 0;
        for (int c : counts) {
            total += c;
        }
        double expected = total / counts.length;
        double chi = 0;
        for (int c : counts) {
            chi += (c - expected) * (c - expected) / expected;
        }
        return chi;
    }

    @Test
    void conditionalParametersFallBackToIndependentSampling() {
        Study study = StudyRuns.run(StudyRuns.minimize("f"), new TpeSampler(TPE), 1, 50, trial -> {
            double x = trial.suggestFloat("x", 0, 1);
            if (trial.suggestCategorical("mode", List.of("plain", "tuned")).equals("tuned")) {
                double extra = trial.suggestFloat("extra", 0, 1);
                return new double[] {x + (extra - 0.3) * (extra - 0.3)};
            }
            return new double[] {x + 0.5};
        });
        assertEquals(List.of("x", "mode"), List.copyOf(TpeSampler.sharedSpace(study.trials()).keySet()));
        long withExtra = study.trials().stream().filter(t -> t.params().containsKey("extra")).count();
        assertTrue(withExtra > 0 && withExtra < 50);
        study.trials().stream().filter(t -> t.params().containsKey("extra"))
                .forEach(t -> assertTrue((Double) t.params().get("extra") >= 0 && (Double) t.params().get("extra") <= 1));
    }

    @Test
    void askingAgainReturnsTheSameValueAndConflictingRangesAreRejected() {
        Study study = new Study(StudyRuns.minimize("f"), new TpeSampler(TPE), 1);
        Trial trial = study.ask();
        double x = trial.suggestFloat("x", 0, 1);
        assertEquals(x, trial.suggestFloat("x", 0, 1));
        assertThrows(IllegalArgumentException.class, () -> trial.suggestFloat("x", 0, 2));
        assertEquals(1.0, trial.suggestFloat("fixed", 1.0, 1.0));
        assertEquals(3L, trial.suggestInt("n", 3, 3));
        assertThrows(IllegalArgumentException.class, () -> study.tell(trial, List.of()));
        study.tell(trial, List.of(Score.of(x)));
        assertThrows(IllegalStateException.class, () -> trial.suggestFloat("y", 0, 1));
        assertThrows(IllegalStateException.class, () -> study.tell(trial, List.of(Score.of(x))));
    }

    @Test
    void failedTrialsKeepTheirNumberButDoNotTeachTheSampler() {
        Study study = new Study(StudyRuns.minimize("f"), new TpeSampler(TPE), 1);
        List<Integer> numbers = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Trial trial = study.ask();
            double x = trial.suggestFloat("x", 0, 1);
            numbers.add(trial.number());
            if (i % 2 == 0) {
                study.fail(trial, "out of memory");
            } else {
                study.tell(trial, List.of(Score.of(x)));
            }
        }
        assertEquals(List.of(0, 1, 2, 3, 4, 5), numbers);
        assertEquals(TrialState.FAIL, study.trials().get(2).state());
        assertEquals("out of memory", study.trials().get(2).failure());
        assertEquals(3, new SamplingContext(1, 6, study.trials(), study.objectives(), Study.trialRandom(1, 6))
                .completeTrials().size());
        assertEquals(6, study.nextTrialNumber());
    }
}
