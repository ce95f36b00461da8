package dev.crucible.runner.study;

import static dev.crucible.runner.study.ParetoFrontTest.trial;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.Optimization;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TpeSplitTest {

    private static List<Integer> numbers(List<FrozenTrial> trials) {
        return trials.stream().map(FrozenTrial::number).toList();
    }

    @Test
    void goodCountIsATenthRoundedUpCappedAt25() {
        assertEquals(0, TpeSampler.goodCount(0));
        assertEquals(1, TpeSampler.goodCount(1));
        assertEquals(1, TpeSampler.goodCount(10));
        assertEquals(3, TpeSampler.goodCount(30));
        assertEquals(4, TpeSampler.goodCount(31));
        assertEquals(25, TpeSampler.goodCount(1000));
    }

    @Test
    void singleObjectiveTakesTheBestByDirection() {
        List<FrozenTrial> trials = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            trials.add(trial(i, (i * 7) % 20));   // a permutation of 0..19: trial 3 has 1, trial 14 has 18, 17 has 19
        }
        var minimize = TpeSampler.split(trials, List.of(new Objective("f", Optimization.MINIMIZE)));
        assertEquals(List.of(0, 3), numbers(minimize.good()));
        assertEquals(18, minimize.bad().size());
        var maximize = TpeSampler.split(trials, List.of(new Objective("f", Optimization.MAXIMIZE)));
        assertEquals(List.of(14, 17), numbers(maximize.good()));
        assertArrayEquals(new double[] {1, 1}, maximize.goodWeights());
    }

    @Test
    void shownOnlyObjectivesDoNotInfluenceTheSplit() {
        List<FrozenTrial> trials = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            trials.add(trial(i, 10 - i, i));
        }
        var split = TpeSampler.split(trials, List.of(new Objective("f", Optimization.MINIMIZE),
                new Objective("shown", Optimization.NONE)));
        assertEquals(List.of(9), numbers(split.good()));
    }

    /** 20 trials, so 2 are good; 17 clearly dominated ones fill the rest. */
    private static List<FrozenTrial> withDominatedFiller(double[]... leaders) {
        List<FrozenTrial> trials = new ArrayList<>();
        for (double[] leader : leaders) {
            trials.add(trial(trials.size(), leader));
        }
        while (trials.size() < 20) {
            double v = 5 + trials.size();
            trials.add(trial(trials.size(), v, v));
        }
        return trials;
    }

    @Test
    void overflowingFrontIsCutByHypervolumeSubsetSelection() {
        // Front of three; reference (1.1, 0.99). (0.5, 0.5) covers the most alone; after it, (1, 0) adds 0.05 and
        // (0, 0.9) only 0.045.
        var split = TpeSampler.split(withDominatedFiller(new double[] {0, 0.9}, new double[] {0.5, 0.5},
                new double[] {1, 0}), StudyRuns.minimize("a", "b"));
        assertEquals(List.of(1, 2), numbers(split.good()));
        // Contributions within the good pair, reference (1.1, 0.55): 0.025 and 0.05, relative to the largest.
        assertArrayEquals(new double[] {0.5, 1.0}, split.goodWeights(), 1e-9);
    }

    @Test
    void wholeFrontsFirstThenTieBreakInTheNext() {
        // (0, 0) alone is front 0; front 1 is (1, 2) and (2, 1.5); with reference (2.2, 2.2) the first covers 0.24,
        // the second 0.14.
        var split = TpeSampler.split(withDominatedFiller(new double[] {2, 1.5}, new double[] {0, 0},
                new double[] {1, 2}), StudyRuns.minimize("a", "b"));
        assertEquals(List.of(1, 2), numbers(split.good()));
        // Only (0, 0) is Pareto-optimal among the good: the dominated one keeps a tiny positive weight.
        assertEquals(1e-12, split.goodWeights()[1], 0.0);
        assertEquals(1.0, split.goodWeights()[0], 0.0);
    }

    @Test
    void recencyWeightsRampUpForOldTrials() {
        assertArrayEquals(new double[] {1, 1, 1}, TpeSampler.recencyWeights(3));
        double[] w = TpeSampler.recencyWeights(30);
        assertEquals(30, w.length);
        assertEquals(1.0 / 30, w[0], 1e-15);
        assertEquals(1.0 / 30 + (29.0 / 30) / 4, w[1], 1e-15);
        for (int i = 4; i < 30; i++) {
            assertEquals(1.0, w[i], 1e-15);
        }
        assertTrue(w[0] < w[1] && w[1] < w[2] && w[2] < w[3]);
    }
}
