package dev.crucible.api.tensor;

/** Element counts of shapes, with the overflow checks a hostile header needs. */
public final class Shapes {
    private Shapes() {
    }

    /**
     * The number of elements of {@code shape}.
     *
     * @throws ArithmeticException when the product does not fit in a long
     * @throws IllegalArgumentException when a dimension is negative
     */
    public static long elementCount(long[] shape) {
        long count = 1;
        for (long dim : shape) {
            if (dim < 0) {
                throw new IllegalArgumentException("negative dimension " + dim);
            }
            count = Math.multiplyExact(count, dim);
        }
        return count;
    }
}
