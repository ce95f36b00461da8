package dev.crucible.api.model;

import java.util.List;

/**
 * Prompts left-padded to a common length, so that every row's last prompt token sits in the same slot and each
 * generated token lands in one shared slot per step.
 *
 * @param tokens  row-major {@code [rows, length]}, padding first
 * @param padding leading padding slots per row
 */
record PaddedBatch(int rows, int length, long[] tokens, long[] padding) {

    static PaddedBatch leftPad(List<int[]> prompts, int padToken) {
        int rows = prompts.size();
        int length = prompts.stream().mapToInt(prompt -> prompt.length).max().orElseThrow();
        long[] tokens = new long[rows * length];
        long[] padding = new long[rows];
        for (int row = 0; row < rows; row++) {
            int[] prompt = prompts.get(row);
            int pad = length - prompt.length;
            padding[row] = pad;
            for (int slot = 0; slot < length; slot++) {
                tokens[row * length + slot] = slot < pad ? padToken : prompt[slot - pad];
            }
        }
        return new PaddedBatch(rows, length, tokens, padding);
    }

    /**
     * Rotary positions of slots {@code [firstSlot, firstSlot + count)}: the slot minus the row's padding, so each
     * row's first real token is at position 0; padding slots get 0 (their values are never attended to).
     */
    long[] positions(long firstSlot, int count) {
        long[] positions = new long[rows * count];
        for (int row = 0; row < rows; row++) {
            for (int i = 0; i < count; i++) {
                positions[row * count + i] = Math.max(0, firstSlot + i - padding[row]);
            }
        }
        return positions;
    }
}
