package dev.crucible.runner.finetune;

/**
 * One conversation as training ids: {@code labels[i]} is {@code ids[i]} where the loss applies (the assistant's
 * tokens) and {@link dev.crucible.api.train.TrainingBatch#IGNORE} elsewhere.
 */
public record EncodedExample(int[] ids, int[] labels) {
    public EncodedExample {
        if (ids.length != labels.length) {
            throw new IllegalArgumentException(ids.length + " ids but " + labels.length + " labels");
        }
        ids = ids.clone();
        labels = labels.clone();
    }

    @Override
    public int[] ids() {
        return ids.clone();
    }

    @Override
    public int[] labels() {
        return labels.clone();
    }

    public int length() {
        return ids.length;
    }

    /** Positions whose label counts (the first position never does: nothing precedes it). */
    public int labelledTokens() {
        int count = 0;
        for (int i = 1; i < labels.length; i++) {
            if (labels[i] != dev.crucible.api.train.TrainingBatch.IGNORE) {
                count++;
            }
        }
        return count;
    }
}
