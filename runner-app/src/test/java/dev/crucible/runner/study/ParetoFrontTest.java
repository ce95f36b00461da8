package dev.crucible.runner.study;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.scoring.Optimization;
import dev.crucible.api.scoring.Score;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ParetoFrontTest {

    static FrozenTrial trial(int number, double... values) {
        return new FrozenTrial(number, TrialState.COMPLETE, Map.of(), Map.of(),
                Arrays.stream(values).mapToObj(Score::of).toList(), Instant.EPOCH, Instant.EPOCH, null);
    }

    @Test
    void dominanceNeedsOneStrictImprovement() {
        assertTrue(ParetoFront.dominates(new double[] {1, 2}, new double[] {1, 3}));
        assertFalse(ParetoFront.dominates(new double[] {1, 2}, new double[] {1, 2}));
        assertFalse(ParetoFront.dominates(new double[] {0, 3}, new double[] {1, 2}));
    }

    @Test
    void frontRespectsDirectionsAndIgnoresShownOnlyObjectives() {
        List<Objective> objectives = List.of(new Objective("refusals", Optimization.MINIMIZE),
                new Objective("quality", Optimization.MAXIMIZE), new Objective("tokens", Optimization.NONE));
        List<FrozenTrial> trials = List.of(
                trial(0, 0.5, 0.9, 1),   // front: best quality
                trial(1, 0.1, 0.2, 2),   // front: fewest refusals
                trial(2, 0.5, 0.8, 0),   // dominated by 0 (tokens do not count)
                trial(3, 0.3, 0.5, 9),   // front: a trade-off
                trial(4, Double.NaN, 1.0, 0),
                new FrozenTrial(5, TrialState.FAIL, Map.of(), Map.of(), List.of(), Instant.EPOCH, Instant.EPOCH, "boom"));
        assertEquals(List.of(0, 1, 3), ParetoFront.of(trials, objectives).stream().map(FrozenTrial::number).toList());
    }

    @Test
    void ranksPeelSuccessiveFronts() {
        double[][] losses = {{1, 1}, {2, 2}, {0, 3}, {3, 3}, {2, 2}};
        assertArrayEquals(new int[] {0, 1, 0, 2, 1}, ParetoFront.nonDominatedRanks(losses));
    }
}
