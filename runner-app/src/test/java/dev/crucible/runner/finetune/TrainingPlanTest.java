package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.train.TrainingBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TrainingPlanTest {

    private static List<EncodedExample> examples(int count) {
        List<EncodedExample> examples = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int[] ids = new int[3 + i % 7];
            Arrays.fill(ids, i);
            examples.add(new EncodedExample(ids, ids));
        }
        return examples;
    }

    @Test
    void stepsGroupMicroBatchesAndTheLastStepOfAnEpochMayBeShort() {
        TrainingPlan plan = TrainingPlan.of(examples(10), 2, 3, 2, 7, false);
        // 10 rows -> micro-batches of 3,3,3,1 -> steps of 2,2 micro-batches per epoch.
        assertEquals(4, plan.steps().size());
        assertEquals(List.of(0, 0, 1, 1), plan.steps().stream().map(TrainingPlan.Step::epoch).toList());
        assertEquals(2, plan.steps().get(1).microBatches().size());
        assertEquals(1, plan.batches(plan.steps().get(1)).get(1).tokens().size(), "the last micro-batch has 1 row");
        for (TrainingPlan.Step step : plan.steps()) {
            assertEquals(plan.batches(step).stream().mapToLong(TrainingBatch::labelledTokens).sum(), step.labelledTokens());
            assertEquals(plan.batches(step).stream().mapToLong(TrainingBatch::tokenCount).sum(), step.tokens());
        }
        Set<Integer> firstEpoch = new HashSet<>();
        plan.steps().subList(0, 2).forEach(step -> plan.batches(step).forEach(batch ->
                batch.tokens().forEach(row -> firstEpoch.add(row[0]))));
        assertEquals(10, firstEpoch.size(), "every row once per epoch");
    }

    @Test
    void theOrderIsSeededAndDiffersBetweenEpochs() {
        List<Integer> a = order(TrainingPlan.of(examples(20), 2, 1, 1, 5, false));
        List<Integer> b = order(TrainingPlan.of(examples(20), 2, 1, 1, 5, false));
        assertEquals(a, b);
        assertNotEquals(a.subList(0, 20), a.subList(20, 40));
        assertNotEquals(a, order(TrainingPlan.of(examples(20), 2, 1, 1, 6, false)));
    }

    @Test
    void groupingByLengthPutsSimilarLengthsTogether() {
        TrainingPlan grouped = TrainingPlan.of(examples(40), 1, 4, 1, 5, true);
        long padded = 0;
        long ungroupedPadded = 0;
        for (TrainingPlan.Step step : grouped.steps()) {
            padded += padding(grouped.batches(step).getFirst());
        }
        TrainingPlan ungrouped = TrainingPlan.of(examples(40), 1, 4, 1, 5, false);
        for (TrainingPlan.Step step : ungrouped.steps()) {
            ungroupedPadded += padding(ungrouped.batches(step).getFirst());
        }
        assertTrue(padded < ungroupedPadded / 3, padded + " vs " + ungroupedPadded);
        List<Integer> lengths = new ArrayList<>();
        grouped.steps().forEach(step -> grouped.batches(step).forEach(batch -> batch.tokens().forEach(row -> lengths.add(row.length))));
        List<Integer> sorted = new ArrayList<>(lengths);
        sorted.sort(java.util.Comparator.reverseOrder());
        assertEquals(sorted, lengths, "40 rows are one group (50 micro-batches of 4), sorted longest first");
    }

    private static long padding(TrainingBatch batch) {
        int longest = batch.tokens().stream().mapToInt(row -> row.length).max().orElseThrow();
        return batch.tokens().stream().mapToLong(row -> longest - row.length).sum();
    }

    private static List<Integer> order(TrainingPlan plan) {
        List<Integer> order = new ArrayList<>();
        plan.steps().forEach(step -> plan.batches(step).forEach(batch -> batch.tokens().forEach(row -> order.add(row[0]))));
        return order;
    }
}
