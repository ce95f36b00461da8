package dev.crucible.api.model;

/**
 * The shapes a backend wants its steps in. An eager backend takes every batch as it comes ({@link #EXACT}): the
 * prompt as long as its longest row, a KV cache just large enough, and each decode step attending over the slots
 * written so far. A backend that compiles one program per shape wants few shapes: prompts padded to a multiple of
 * {@code promptBucket} slots (more left padding, which no real token attends to), the cache rounded up to a multiple
 * of {@code cacheBucket} slots, and every decode step attending over the whole cache, masked, so that all decode
 * steps of a request are one program. Results are the same either way.
 *
 * @param promptBucket     prompts take a multiple of this many slots (1: exactly the longest prompt)
 * @param cacheBucket      the KV cache takes a multiple of this many slots (1: exactly what the request needs)
 * @param attendWholeCache every decode step attends over the whole cache instead of the slots written so far
 */
public record ShapePolicy(int promptBucket, int cacheBucket, boolean attendWholeCache) {

    /** What an eager backend wants: exact lengths, and decode steps that attend over what is written. */
    public static final ShapePolicy EXACT = new ShapePolicy(1, 1, false);

    public ShapePolicy {
        if (promptBucket < 1 || cacheBucket < 1) {
            throw new IllegalArgumentException("buckets must be at least 1 slot, got " + promptBucket + " and "
                    + cacheBucket);
        }
    }

    /**
     * Whether decoding drops the rows that stopped from the steps after them. An eager backend computes a step's rows
     * and nothing else, so a finished row is pure waste; a compiling one keeps every row to the end, since each row
     * count would be a program of its own.
     */
    public boolean dropsFinishedRows() {
        return !attendWholeCache;
    }

    /**
     * Whether a batch whose prompts all begin alike computes those tokens once and gives every row their keys and
     * values (a chat template's system turn, in every prompt of an abliteration). An eager backend gains the work;
     * a compiling one would compile a program per prefix length.
     */
    public boolean sharesPromptPrefixes() {
        return !attendWholeCache;
    }

    /** Slots a batch whose longest prompt has {@code longest} tokens is padded to. */
    public int promptSlots(int longest) {
        return roundUp(longest, promptBucket);
    }

    /**
     * Slots of the KV cache for a prompt of {@code promptSlots} and up to {@code maxNewTokens} generated tokens: the
     * last generated token is never fed back, so it needs none.
     */
    public int cacheSlots(int promptSlots, int maxNewTokens) {
        return roundUp(promptSlots + maxNewTokens - 1, cacheBucket);
    }

    private static int roundUp(int value, int multiple) {
        return Math.toIntExact((value + (long) multiple - 1) / multiple * multiple);
    }
}
