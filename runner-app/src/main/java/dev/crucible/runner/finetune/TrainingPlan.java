package dev.crucible.runner.finetune;

import dev.crucible.api.UserInputException;
import dev.crucible.api.train.TrainingBatch;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * The whole run laid out in advance: per epoch the examples in a seeded order, cut into micro-batches, grouped
 * into optimizer steps of {@code gradAccum} micro-batches (the last step of an epoch may have fewer, as in
 * transformers). Knowing every step up front gives the schedule its length, the progress bar its total, each
 * step its exact labelled-token count (the loss is the mean over all of them), and a resumed run the same batches
 * the stopped run would have seen. Steps hold example indices; batches are built when a step runs.
 */
public final class TrainingPlan {

    /** Rows per length-sorted group with {@code groupByLength}, in micro-batches (transformers uses 50). */
    static final int LENGTH_GROUP = 50;

    /**
     * One optimizer step: the example indices of each of its micro-batches, and how many tokens and labelled
     * tokens they hold together.
     */
    public record Step(int index, int epoch, List<int[]> microBatches, long labelledTokens, long tokens) {
        public Step {
            microBatches = microBatches.stream().map(int[]::clone).toList();
        }
    }

    private final List<EncodedExample> examples;
    private final List<Step> steps;
    private final int epochs;

    private TrainingPlan(List<EncodedExample> examples, List<Step> steps, int epochs) {
        this.examples = examples;
        this.steps = List.copyOf(steps);
        this.epochs = epochs;
    }

    /**
     * @param groupByLength sort each run of {@value #LENGTH_GROUP} micro-batches' worth of shuffled rows by length
     *                      (longest first) before cutting it into micro-batches, as transformers'
     *                      {@code group_by_length} does: rows of a micro-batch then have similar lengths and little
     *                      padding, while the order stays random at the scale of groups
     */
    public static TrainingPlan of(List<EncodedExample> examples, int epochs, int microBatch, int gradAccum, long seed,
                                  boolean groupByLength) {
        if (epochs < 1) {
            throw new UserInputException("--epochs must be at least 1, got " + epochs);
        }
        if (microBatch < 1) {
            throw new UserInputException("--micro-batch must be at least 1, got " + microBatch);
        }
        if (gradAccum < 1) {
            throw new UserInputException("--grad-accum must be at least 1, got " + gradAccum);
        }
        List<EncodedExample> rows = List.copyOf(examples);
        List<Step> steps = new ArrayList<>();
        for (int epoch = 0; epoch < epochs; epoch++) {
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < rows.size(); i++) {
                order.add(i);
            }
            shuffle(order, new Random(seed * 1_000_003L + epoch));
            if (groupByLength) {
                int group = LENGTH_GROUP * microBatch;
                for (int from = 0; from < order.size(); from += group) {
                    order.subList(from, Math.min(order.size(), from + group))
                            .sort(Comparator.comparingInt((Integer i) -> rows.get(i).length()).reversed());
                }
            }
            List<int[]> batches = new ArrayList<>();
            for (int from = 0; from < order.size(); from += microBatch) {
                batches.add(order.subList(from, Math.min(order.size(), from + microBatch)).stream()
                        .mapToInt(Integer::intValue).toArray());
            }
            for (int from = 0; from < batches.size(); from += gradAccum) {
                List<int[]> group = batches.subList(from, Math.min(batches.size(), from + gradAccum));
                long labelled = 0;
                long tokens = 0;
                for (int[] batch : group) {
                    for (int row : batch) {
                        labelled += rows.get(row).labelledTokens();
                        tokens += rows.get(row).length();
                    }
                }
                steps.add(new Step(steps.size(), epoch, group, labelled, tokens));
            }
        }
        return new TrainingPlan(rows, steps, epochs);
    }

    /** Fisher-Yates with {@code java.util.Random}, whose sequence the JDK specifies: the same order everywhere. */
    private static <T> void shuffle(List<T> list, Random random) {
        for (int i = list.size() - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            T swap = list.get(i);
            list.set(i, list.get(j));
            list.set(j, swap);
        }
    }

    public List<Step> steps() {
        return steps;
    }

    /** The micro-batches of {@code step}, ready for the session. */
    public List<TrainingBatch> batches(Step step) {
        List<TrainingBatch> batches = new ArrayList<>();
        for (int[] rows : step.microBatches()) {
            List<int[]> tokens = new ArrayList<>();
            List<int[]> labels = new ArrayList<>();
            for (int row : rows) {
                tokens.add(examples.get(row).ids());
                labels.add(examples.get(row).labels());
            }
            batches.add(new TrainingBatch(tokens, labels));
        }
        return batches;
    }

    public int epochs() {
        return epochs;
    }

    public long totalTokens() {
        return steps.stream().mapToLong(Step::tokens).sum();
    }
}
