package dev.crucible.api.model;

import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import java.util.List;
import java.util.stream.LongStream;

/**
 * Prompts left-padded to a common length, so that every row's last prompt token sits in the same slot and each
 * generated token lands in one shared slot per step. Generation and training batch the same way, so a row's
 * result never depends on what it is batched with.
 *
 * @param tokens  row-major {@code [rows, length]}, padding first
 * @param padding leading padding slots per row
 */
public record PaddedBatch(int rows, int length, long[] tokens, long[] padding) {

    public PaddedBatch {
        tokens = tokens.clone();
        padding = padding.clone();
    }

    /** {@code prompts} left-padded with {@code padToken} to the longest one. */
    public static PaddedBatch leftPad(List<int[]> prompts, int padToken) {
        return leftPad(prompts, padToken, prompts.stream().mapToInt(prompt -> prompt.length).max().orElseThrow());
    }

    /** {@code prompts} left-padded with {@code padToken} to {@code length}, at least the longest one. */
    public static PaddedBatch leftPad(List<int[]> prompts, int padToken, int length) {
        int rows = prompts.size();
        long[] tokens = new long[rows * length];
        long[] padding = new long[rows];
        for (int row = 0; row < rows; row++) {
            int[] prompt = prompts.get(row);
            int pad = length - prompt.length;
            if (pad < 0) {
                throw new IllegalArgumentException("a prompt of " + prompt.length + " tokens does not fit " + length);
            }
            padding[row] = pad;
            for (int slot = 0; slot < length; slot++) {
                tokens[row * length + slot] = slot < pad ? padToken : prompt[slot - pad];
            }
        }
        return new PaddedBatch(rows, length, tokens, padding);
    }

    @Override
    public long[] tokens() {
        return tokens.clone();
    }

    @Override
    public long[] padding() {
        return padding.clone();
    }

    /**
     * Rotary positions of slots {@code [firstSlot, firstSlot + count)}: the slot minus the row's padding, so each
     * row's first real token is at position 0; padding slots get 0 (their values are never attended to).
     */
    public long[] positions(long firstSlot, int count) {
        long[] positions = new long[rows * count];
        for (int row = 0; row < rows; row++) {
            for (int i = 0; i < count; i++) {
                positions[row * count + i] = Math.max(0, firstSlot + i - padding[row]);
            }
        }
        return positions;
    }

    /** Rotary positions of slot {@code slot} for the rows {@code rows} (batch row indexes), in that order. */
    public long[] positions(long slot, int[] rows) {
        long[] positions = new long[rows.length];
        for (int i = 0; i < rows.length; i++) {
            positions[i] = Math.max(0, slot - padding[rows[i]]);
        }
        return positions;
    }

    /** The tokens of slots {@code [from, length)}, row-major {@code [rows, length - from]}. */
    public long[] tokens(int from) {
        int count = length - from;
        long[] out = new long[rows * count];
        for (int row = 0; row < rows; row++) {
            System.arraycopy(tokens, row * length + from, out, row * count, count);
        }
        return out;
    }

    /**
     * The step that feeds the whole batch at once, attending over its own slots {@code 0..length-1} (no cache),
     * with rotary tables {@code cos} and {@code sin} covering {@code length} positions.
     *
     * @param allPositions logits for every token (training) rather than the last one
     */
    public Step wholeBatch(TensorOps ops, Tensor cos, Tensor sin, boolean allPositions) {
        Tensor slots = ops.constant(LongStream.range(0, length).toArray(), length);
        Tensor paddingTensor = ops.constant(padding, rows);
        return new Step(ops.constant(tokens, rows, length), ops.constant(positions(0, length), rows, length), slots,
                slots, paddingTensor, cos, sin, allPositions);
    }
}
