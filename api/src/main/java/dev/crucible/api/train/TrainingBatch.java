package dev.crucible.api.train;

import java.util.ArrayList;
import java.util.List;

/**
 * Sequences for one forward and backward pass, with Hugging Face's label convention: {@code labels[i]} is the id
 * the model should predict at position {@code i} (the loss compares the logits at {@code i - 1} with it), and
 * {@link #IGNORE} marks a position that takes no part in the loss. Rows may differ in length; the backend pads.
 */
public record TrainingBatch(List<int[]> tokens, List<int[]> labels) {

    /** transformers' {@code -100}: no loss at this position. */
    public static final int IGNORE = -100;

    public TrainingBatch {
        if (tokens.isEmpty() || tokens.size() != labels.size()) {
            throw new IllegalArgumentException("a batch needs one label row per token row, got " + tokens.size()
                    + " and " + labels.size());
        }
        List<int[]> tokenCopies = new ArrayList<>();
        List<int[]> labelCopies = new ArrayList<>();
        for (int row = 0; row < tokens.size(); row++) {
            int[] ids = tokens.get(row);
            int[] targets = labels.get(row);
            if (ids.length == 0 || ids.length != targets.length) {
                throw new IllegalArgumentException("row " + row + " has " + ids.length + " tokens and "
                        + targets.length + " labels");
            }
            tokenCopies.add(ids.clone());
            labelCopies.add(targets.clone());
        }
        tokens = List.copyOf(tokenCopies);
        labels = List.copyOf(labelCopies);
    }

    /** Positions whose label takes part in the loss (the first position of a row never does: nothing precedes it). */
    public long labelledTokens() {
        long count = 0;
        for (int[] row : labels) {
            for (int i = 1; i < row.length; i++) {
                if (row[i] != IGNORE) {
                    count++;
                }
            }
        }
        return count;
    }

    /** Every token of every row, padding excluded. */
    public long tokenCount() {
        return tokens.stream().mapToLong(row -> row.length).sum();
    }

    @Override
    public List<int[]> tokens() {
        return tokens.stream().map(int[]::clone).toList();
    }

    @Override
    public List<int[]> labels() {
        return labels.stream().map(int[]::clone).toList();
    }
}
