package dev.crucible.accelerator.xla.lower;

import java.util.Arrays;

/**
 * How one tensor lies over the partitions of an SPMD program (a one-dimensional device mesh): whole on every device,
 * or split into equal parts along one dimension. A single-device program has every tensor whole.
 *
 * @param splitDim the dimension split across the devices, or -1 for a copy on each
 */
public record Layout(int splitDim) {
    public static final Layout REPLICATED = new Layout(-1);

    public static Layout split(int dim) {
        if (dim < 0) {
            throw new IllegalArgumentException("a split dimension is >= 0, got " + dim);
        }
        return new Layout(dim);
    }

    public boolean replicated() {
        return splitDim < 0;
    }

    /** What one of {@code parts} devices holds of a tensor of {@code global} shape. */
    public long[] deviceShape(long[] global, int parts) {
        long[] shape = global.clone();
        if (!replicated()) {
            if (splitDim >= shape.length || shape[splitDim] % parts != 0) {
                throw new IllegalArgumentException(Arrays.toString(global) + " cannot be split " + parts
                        + " ways along dimension " + splitDim);
            }
            shape[splitDim] /= parts;
        }
        return shape;
    }

    /** The layout a tensor of {@code shape} can take split along {@code dim}, or whole where it does not divide. */
    public static Layout splitIfDivisible(long[] shape, int dim, int parts) {
        return parts > 1 && dim < shape.length && shape[dim] >= parts && shape[dim] % parts == 0
                ? split(dim) : REPLICATED;
    }

    @Override
    public String toString() {
        return replicated() ? "replicated" : "split(" + splitDim + ")";
    }
}
