package dev.crucible.api.backend;

import dev.crucible.api.tensor.DType;
import java.util.Objects;

/**
 * What this machine can do at best, measured now: the yardsticks a benchmark divides its speeds by. Measured,
 * not taken from a data sheet, because what counts is what the same runtime reaches on this machine at this
 * moment (a shared or throttled machine changes it from one second to the next).
 *
 * @param dtype         the element type the matmul ran in
 * @param matmulGflops  sustained rate of a large square matrix product, in 10⁹ floating-point operations per second
 * @param bandwidthGbs  sustained rate of a streaming read of memory much larger than any cache, in 10⁹ bytes per
 *                      second
 * @param method        one line saying what was run, e.g. {@code matmul 2048² bf16 ×12; sum over 1 GiB ×9}
 */
public record Ceilings(DType dtype, double matmulGflops, double bandwidthGbs, String method) {
    public Ceilings {
        Objects.requireNonNull(dtype, "dtype is null");
        Objects.requireNonNull(method, "method is null");
        if (!(matmulGflops > 0) || !(bandwidthGbs > 0)) {
            throw new IllegalArgumentException("ceilings must be positive, got " + matmulGflops + " GFLOP/s and "
                    + bandwidthGbs + " GB/s");
        }
    }
}
