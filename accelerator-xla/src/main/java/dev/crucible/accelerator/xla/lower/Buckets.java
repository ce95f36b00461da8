package dev.crucible.accelerator.xla.lower;

import dev.crucible.api.model.ShapePolicy;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The shapes the xla backend runs requests at. A runtime that compiles one program per shape must see few shapes: a
 * 100-trial abliteration has to compile a handful of programs, once. So prompts are padded to a multiple of
 * {@link #SLOTS} slots and the KV cache to a multiple of {@link #SLOTS} (left padding no real token attends to), every
 * decode step attends over the whole cache, masked (one program for all steps of a request), and every batch of a
 * request has the same number of rows, a power of two: the last batch is filled with copies of the shortest prompt,
 * whose results nobody sees (a row's result never depends on what it is batched with). Results are the same as at
 * exact shapes.
 */
public final class Buckets {
    /**
     * Prompt and cache slots come in multiples of this: a 100-token prompt pads to 128, a TPU vector unit's lane
     * count, while a short prompt pads by at most 31 slots, a small cost next to a program's compile.
     */
    public static final int SLOTS = 32;

    /** What {@link dev.crucible.api.model.ModelRunner} is told: bucketed prompts and caches, whole-cache steps. */
    public static final ShapePolicy SHAPES = new ShapePolicy(SLOTS, SLOTS, true);

    private Buckets() {
    }

    /**
     * Rows of every batch of a request of {@code prompts} prompts in batches of at most {@code largest}: the prompts
     * spread evenly over the fewest batches, rounded up to a power of two (so requests of different sizes share
     * programs), never above {@code largest}.
     */
    public static int rows(int prompts, int largest) {
        if (prompts < 1 || largest < 1) {
            throw new IllegalArgumentException("prompts and largest must be at least 1, got " + prompts + " and "
                    + largest);
        }
        int batches = ceilDiv(prompts, largest);
        int even = ceilDiv(prompts, batches);
        int powerOfTwo = Integer.bitCount(even) == 1 ? even : Integer.highestOneBit(even) << 1;
        return Math.min(largest, powerOfTwo);
    }

    /**
     * {@code prompts} and after them copies of the shortest, enough to fill whole batches of {@code rows}: the
     * runner batches the longest first, so the copies join the batch of the shortest prompts and lengthen none.
     */
    public static List<int[]> filled(List<int[]> prompts, int rows) {
        int fill = ceilDiv(prompts.size(), rows) * rows - prompts.size();
        if (fill == 0) {
            return prompts;
        }
        int[] shortest = prompts.stream().min(Comparator.comparingInt(p -> p.length)).orElseThrow();
        List<int[]> out = new ArrayList<>(prompts);
        for (int i = 0; i < fill; i++) {
            out.add(shortest);
        }
        return out;
    }

    private static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }
}
